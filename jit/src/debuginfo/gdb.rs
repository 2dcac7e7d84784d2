//! The GDB JIT interface: per compiled module an in-memory ELF image with a
//! symbol per function at its absolute address, DWARF (`.debug_info`: a
//! compile unit for the `.glir` file and a subprogram per function;
//! `.debug_line`: PC → `.glir` line) and Cranelift's unwind info as
//! `.debug_frame`, linked into `__jit_debug_descriptor`'s list and
//! announced by calling `__jit_debug_register_code`, the function gdb (and
//! lldb) put a breakpoint on. So `bt` shows `@enter () at demo.glir:21`,
//! unwinds through JIT frames into the host's, and `break demo.glir:21`
//! stops there. The entry is unlinked the same way when the module goes,
//! before its code is freed ([`Registration`]'s drop).
//!
//! The image is an ELF object turned loadable as wasmtime does it: type
//! `ET_DYN`, each function's `.text.N` section (no bytes: `SHT_NOBITS`) at
//! the function's address with a `PT_LOAD` program header, and every
//! address in the symbols and DWARF absolute, so that gdb relocates nothing.

use super::CodeUnit;
use crate::error::JitError;
use cranelift_codegen::isa::unwind::UnwindInfo;
use cranelift_codegen::isa::TargetIsa;
use gimli::write::{
    Address, AttributeValue, DwarfUnit, EndianVec, FrameTable, LineProgram, LineString, Range,
    RangeList, Sections,
};
use gimli::LittleEndian;
use std::sync::Mutex;

/// `jit_actions_t` of gdb's `jit.h`.
const JIT_REGISTER_FN: u32 = 1;
const JIT_UNREGISTER_FN: u32 = 2;

/// `struct jit_code_entry` of gdb's JIT interface.
#[repr(C)]
struct JitCodeEntry {
    next: *mut JitCodeEntry,
    prev: *mut JitCodeEntry,
    symfile_addr: *const u8,
    symfile_size: u64,
}

/// `struct jit_descriptor` of gdb's JIT interface.
#[repr(C)]
pub struct JitDescriptor {
    version: u32,
    action_flag: u32,
    relevant_entry: *mut JitCodeEntry,
    first_entry: *mut JitCodeEntry,
}

/// The descriptor gdb reads (by this name) when
/// [`__jit_debug_register_code`] is called. Only touched under `LOCK`.
#[no_mangle]
#[used]
#[allow(non_upper_case_globals)] // the name gdb looks for
pub static mut __jit_debug_descriptor: JitDescriptor = JitDescriptor {
    version: 1,
    action_flag: 0,
    relevant_entry: std::ptr::null_mut(),
    first_entry: std::ptr::null_mut(),
};

/// The function gdb breaks on to read [`__jit_debug_descriptor`]; it does
/// nothing itself (the empty asm keeps it from being folded or elided).
#[no_mangle]
#[inline(never)]
pub extern "C" fn __jit_debug_register_code() {
    // SAFETY: an empty asm statement: no effect.
    unsafe { std::arch::asm!("", options(nostack, preserves_flags)) };
}

/// Serializes every change of the descriptor's list.
static LOCK: Mutex<()> = Mutex::new(());

/// A module's image in gdb's list; unlinked (and gdb told) on drop.
pub struct Registration {
    entry: *mut JitCodeEntry,
    /// The ELF image the entry points into.
    _image: Box<[u8]>,
}

// SAFETY: the entry and image are owned by the registration; the list they
// are linked into is only changed under `LOCK`.
unsafe impl Send for Registration {}
// SAFETY: as above; `&Registration` gives access to nothing.
unsafe impl Sync for Registration {}

fn notify(action: u32, entry: *mut JitCodeEntry) {
    // SAFETY: called under `LOCK`; a plain write of the descriptor gdb reads
    // when the next call stops it.
    unsafe {
        let d = std::ptr::addr_of_mut!(__jit_debug_descriptor);
        (*d).action_flag = action;
        (*d).relevant_entry = entry;
    }
    __jit_debug_register_code();
}

fn link(image: Box<[u8]>) -> Registration {
    let entry = Box::into_raw(Box::new(JitCodeEntry {
        next: std::ptr::null_mut(),
        prev: std::ptr::null_mut(),
        symfile_addr: image.as_ptr(),
        symfile_size: image.len() as u64,
    }));
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: under `LOCK`; `entry` is a fresh allocation and the list's
    // entries are live registrations.
    unsafe {
        let d = std::ptr::addr_of_mut!(__jit_debug_descriptor);
        let first = (*d).first_entry;
        (*entry).next = first;
        if !first.is_null() {
            (*first).prev = entry;
        }
        (*d).first_entry = entry;
    }
    notify(JIT_REGISTER_FN, entry);
    Registration {
        entry,
        _image: image,
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let e = self.entry;
        // SAFETY: under `LOCK`; `e` is linked (by `link`) and its
        // neighbours are live registrations.
        unsafe {
            let d = std::ptr::addr_of_mut!(__jit_debug_descriptor);
            let (prev, next) = ((*e).prev, (*e).next);
            if prev.is_null() {
                (*d).first_entry = next;
            } else {
                (*prev).next = next;
            }
            if !next.is_null() {
                (*next).prev = prev;
            }
        }
        // gdb reads the entry (still allocated) while stopped in the call.
        notify(JIT_UNREGISTER_FN, e);
        // SAFETY: allocated by `link` with `Box::into_raw`, now unlinked.
        drop(unsafe { Box::from_raw(e) });
    }
}

/// The number of live registrations (for tests).
pub fn registered_count() -> usize {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut n = 0;
    // SAFETY: under `LOCK`; every entry in the list is live.
    unsafe {
        let mut e = (*std::ptr::addr_of!(__jit_debug_descriptor)).first_entry;
        while !e.is_null() {
            n += 1;
            e = (*e).next;
        }
    }
    n
}

fn dwarf_err(e: gimli::write::Error) -> JitError {
    JitError::Internal(format!("gdb: writing DWARF: {e}"))
}

/// The DWARF sections of `units` (name, bytes).
fn dwarf(
    units: &[CodeUnit<'_>],
    source: &std::path::Path,
    isa: &dyn TargetIsa,
) -> Result<Vec<(&'static str, Vec<u8>)>, JitError> {
    let encoding = gimli::Encoding {
        format: gimli::Format::Dwarf32,
        version: 4,
        address_size: 8,
    };
    let (dir, name) = super::split_source(source);
    let mut dw = DwarfUnit::new(encoding);
    let dir_s = if dir.is_empty() { ".".to_string() } else { dir };
    let comp_dir = LineString::new(dir_s.as_bytes(), encoding, &mut dw.line_strings);
    let file_s = LineString::new(name.as_bytes(), encoding, &mut dw.line_strings);
    let mut lp = LineProgram::new(
        encoding,
        gimli::LineEncoding::default(),
        comp_dir,
        None,
        file_s,
        None,
    );
    let file_s = LineString::new(name.as_bytes(), encoding, &mut dw.line_strings);
    let file = lp.add_file(file_s, lp.default_directory(), None);
    for u in units {
        lp.begin_sequence(Some(Address::Constant(u.start as u64)));
        let mut at = 0u64;
        for l in u.locs {
            if u64::from(l.start) > at {
                // A gap: no IR line.
                lp.row().address_offset = at;
                lp.row().line = 0;
                lp.row().file = file;
                lp.generate_row();
            }
            let row = lp.row();
            row.address_offset = u64::from(l.start);
            row.line = u64::from(l.line);
            row.column = u64::from(l.col);
            row.file = file;
            row.is_statement = l.line != 0;
            lp.generate_row();
            at = u64::from(l.end);
        }
        lp.end_sequence(u.len as u64);
    }
    dw.unit.line_program = lp;
    let ranges = dw.unit.ranges.add(RangeList(
        units
            .iter()
            .map(|u| Range::StartLength {
                begin: Address::Constant(u.start as u64),
                length: u.len as u64,
            })
            .collect(),
    ));
    let root = dw.unit.root();
    let cu = dw.unit.get_mut(root);
    cu.set(
        gimli::DW_AT_producer,
        AttributeValue::String(b"guardlift".to_vec()),
    );
    cu.set(gimli::DW_AT_name, AttributeValue::String(name.into_bytes()));
    cu.set(
        gimli::DW_AT_comp_dir,
        AttributeValue::String(dir_s.into_bytes()),
    );
    cu.set(
        gimli::DW_AT_language,
        AttributeValue::Language(gimli::DW_LANG_C),
    );
    cu.set(
        gimli::DW_AT_low_pc,
        AttributeValue::Address(Address::Constant(0)),
    );
    cu.set(gimli::DW_AT_ranges, AttributeValue::RangeListRef(ranges));
    for u in units {
        let sp = dw.unit.add(root, gimli::DW_TAG_subprogram);
        let e = dw.unit.get_mut(sp);
        e.set(
            gimli::DW_AT_name,
            AttributeValue::String(u.name.clone().into_bytes()),
        );
        e.set(gimli::DW_AT_external, AttributeValue::FlagPresent);
        e.set(
            gimli::DW_AT_low_pc,
            AttributeValue::Address(Address::Constant(u.start as u64)),
        );
        e.set(gimli::DW_AT_high_pc, AttributeValue::Udata(u.len as u64));
        e.set(
            gimli::DW_AT_decl_file,
            AttributeValue::FileIndex(Some(file)),
        );
        e.set(
            gimli::DW_AT_decl_line,
            AttributeValue::Udata(u64::from(u.line)),
        );
    }
    let mut sections = Sections::new(EndianVec::new(LittleEndian));
    dw.write(&mut sections).map_err(dwarf_err)?;
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    sections
        .for_each(|id, data| {
            if !data.slice().is_empty() {
                out.push((id.name(), data.slice().to_vec()));
            }
            Ok::<(), gimli::write::Error>(())
        })
        .map_err(dwarf_err)?;
    // Unwind info: `.debug_frame` (absolute addresses, unlike `.eh_frame`).
    if let Some(cie) = isa.create_systemv_cie() {
        let mut table = FrameTable::default();
        let cie = table.add_cie(cie);
        let mut any = false;
        for u in units {
            if let Some(UnwindInfo::SystemV(info)) = u.unwind {
                table.add_fde(cie, info.to_fde(Address::Constant(u.start as u64)));
                any = true;
            }
        }
        if any {
            let mut frame = gimli::write::DebugFrame(EndianVec::new(LittleEndian));
            table.write_debug_frame(&mut frame).map_err(dwarf_err)?;
            out.push((".debug_frame", frame.0.into_vec()));
        }
    }
    Ok(out)
}

/// The ELF image of `units`.
fn image(
    units: &[CodeUnit<'_>],
    source: &std::path::Path,
    isa: &dyn TargetIsa,
) -> Result<Vec<u8>, JitError> {
    use ::object::write::{Object, Symbol, SymbolSection};
    use ::object::{BinaryFormat, Endianness, SectionKind, SymbolFlags, SymbolKind, SymbolScope};
    // The JIT compiles for the host.
    let arch = if cfg!(target_arch = "x86_64") {
        ::object::Architecture::X86_64
    } else if cfg!(target_arch = "aarch64") {
        ::object::Architecture::Aarch64
    } else {
        return Err(JitError::Internal(
            "gdb: no debug image for this architecture".into(),
        ));
    };
    let mut obj = Object::new(BinaryFormat::Elf, arch, Endianness::Little);
    for (i, u) in units.iter().enumerate() {
        let text = obj.add_section(
            Vec::new(),
            format!(".text.{i}").into_bytes(),
            SectionKind::Text,
        );
        obj.add_symbol(Symbol {
            name: u.name.clone().into_bytes(),
            value: u.start as u64,
            size: u.len as u64,
            kind: SymbolKind::Text,
            scope: SymbolScope::Linkage,
            weak: false,
            section: SymbolSection::Section(text),
            flags: SymbolFlags::None,
        });
    }
    for (name, data) in dwarf(units, source, isa)? {
        let s = obj.add_section(Vec::new(), name.as_bytes().to_vec(), SectionKind::Debug);
        obj.set_section_data(s, data, 1);
    }
    let mut bytes = obj
        .write()
        .map_err(|e| JitError::Internal(format!("gdb: writing the ELF image: {e}")))?;
    make_loadable(&mut bytes, units)?;
    Ok(bytes)
}

fn rd<const N: usize>(b: &[u8], at: usize) -> Result<[u8; N], JitError> {
    b.get(at..at + N)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| JitError::Internal("gdb: truncated ELF image".into()))
}
fn rd16(b: &[u8], at: usize) -> Result<usize, JitError> {
    Ok(u16::from_le_bytes(rd(b, at)?) as usize)
}
fn rd32(b: &[u8], at: usize) -> Result<usize, JitError> {
    Ok(u32::from_le_bytes(rd(b, at)?) as usize)
}
fn rd64(b: &[u8], at: usize) -> Result<u64, JitError> {
    Ok(u64::from_le_bytes(rd(b, at)?))
}

/// Turns the relocatable ELF64 (little-endian) `b` into a loadable one at
/// the units' addresses: `ET_DYN`, `.text.N` at unit N's address and size
/// as `SHT_NOBITS`, one `PT_LOAD` per unit appended.
fn make_loadable(b: &mut Vec<u8>, units: &[CodeUnit<'_>]) -> Result<(), JitError> {
    const ET_DYN: u16 = 3;
    const SHT_NOBITS: u32 = 8;
    const SHF_ALLOC_EXEC: u64 = 0x2 | 0x4;
    const PT_LOAD: u32 = 1;
    const PF_R_X: u32 = 0x4 | 0x1;
    let shoff = rd64(b, 0x28)? as usize;
    let (shentsize, shnum, shstrndx) = (rd16(b, 0x3A)?, rd16(b, 0x3C)?, rd16(b, 0x3E)?);
    let sh = |i: usize| shoff + i * shentsize;
    let strtab_off = rd64(b, sh(shstrndx) + 24)? as usize;
    let mut found = 0;
    for i in 0..shnum {
        let name_at = strtab_off + rd32(b, sh(i))?;
        let name: Vec<u8> = b
            .get(name_at..)
            .unwrap_or_default()
            .iter()
            .take_while(|&&c| c != 0)
            .copied()
            .collect();
        let Some(n) = name
            .strip_prefix(b".text.")
            .and_then(|n| std::str::from_utf8(n).ok()?.parse::<usize>().ok())
        else {
            continue;
        };
        let u = units
            .get(n)
            .ok_or_else(|| JitError::Internal(format!("gdb: stray section .text.{n}")))?;
        let h = sh(i);
        b[h + 4..h + 8].copy_from_slice(&SHT_NOBITS.to_le_bytes());
        b[h + 8..h + 16].copy_from_slice(&SHF_ALLOC_EXEC.to_le_bytes());
        b[h + 16..h + 24].copy_from_slice(&(u.start as u64).to_le_bytes());
        b[h + 32..h + 40].copy_from_slice(&(u.len as u64).to_le_bytes());
        found += 1;
    }
    if found != units.len() {
        return Err(JitError::Internal(format!(
            "gdb: {found} of {} text sections in the ELF image",
            units.len()
        )));
    }
    // Program headers, 8-aligned at the end.
    while !b.len().is_multiple_of(8) {
        b.push(0);
    }
    let phoff = b.len();
    for u in units {
        let mut ph = Vec::with_capacity(56);
        ph.extend_from_slice(&PT_LOAD.to_le_bytes());
        ph.extend_from_slice(&PF_R_X.to_le_bytes());
        ph.extend_from_slice(&0u64.to_le_bytes()); // p_offset
        ph.extend_from_slice(&(u.start as u64).to_le_bytes()); // p_vaddr
        ph.extend_from_slice(&(u.start as u64).to_le_bytes()); // p_paddr
        ph.extend_from_slice(&0u64.to_le_bytes()); // p_filesz
        ph.extend_from_slice(&(u.len as u64).to_le_bytes()); // p_memsz
        ph.extend_from_slice(&1u64.to_le_bytes()); // p_align
        b.extend_from_slice(&ph);
    }
    b[0x10..0x12].copy_from_slice(&ET_DYN.to_le_bytes());
    b[0x20..0x28].copy_from_slice(&(phoff as u64).to_le_bytes());
    b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
    let phnum = u16::try_from(units.len())
        .map_err(|_| JitError::Internal("gdb: too many functions for one image".into()))?;
    b[0x38..0x3A].copy_from_slice(&phnum.to_le_bytes());
    Ok(())
}

/// Builds `units`' image and registers it with gdb.
///
/// # Safety
/// The units' code must stay mapped until the registration is dropped.
pub unsafe fn register(
    units: &[CodeUnit<'_>],
    source: &std::path::Path,
    isa: &dyn TargetIsa,
) -> Result<Registration, JitError> {
    if cfg!(target_endian = "big") {
        return Err(JitError::Internal(
            "gdb: the JIT interface image is little-endian only".into(),
        ));
    }
    let img = image(units, source, isa)?;
    Ok(link(img.into_boxed_slice()))
}
