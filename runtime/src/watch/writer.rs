//! After the handler: turning a recorded write into a [`Writer`] — the
//! writing instruction's symbol (ELF symbol table through the `object`
//! crate) or IR site (the code registry), its width (capstone), and a
//! symbolized backtrace with IR frames — and the interned writers that
//! `foreign_write` reports refer to.

use super::ring::{take, RawHit};
use super::{lock, IrSite, Writer};
use crate::layout;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

/// A handle to a [`Writer`] kept for the life of the process (reports are
/// `Copy` values; the writer's strings live here). Equal writers share one
/// id: the same PC, object, IR site and backtrace (issue 29: keyed by PC
/// and object id alone, a write reached through another call path — or
/// another runtime's object with the same id — was shown with the first
/// writer's backtrace).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct WriterId(pub u32);

static WRITERS: Mutex<Vec<Arc<Writer>>> = Mutex::new(Vec::new());

impl WriterId {
    /// No writer known.
    pub const NONE: WriterId = WriterId(u32::MAX);

    /// The writer this id stands for.
    pub fn get(self) -> Option<Arc<Writer>> {
        lock(&WRITERS).get(self.0 as usize).cloned()
    }

    /// The id of `w`, or of an equal writer interned before.
    pub(crate) fn intern(w: Writer) -> WriterId {
        let mut t = lock(&WRITERS);
        if let Some(i) = t.iter().position(|x| **x == w) {
            return WriterId(i as u32);
        }
        t.push(Arc::new(w));
        WriterId(t.len() as u32 - 1)
    }
}

/// The human lines of a `foreign_write` report (after its first line).
pub fn write_human(
    s: &mut fmt::Formatter<'_>,
    object: u64,
    old: u64,
    new: u64,
    width: u32,
    writer: WriterId,
) -> fmt::Result {
    let w = writer.get();
    let id = w.as_ref().map_or(0, |w| w.object_id);
    let verdict = if layout::tag_ok(new) {
        "well-formed, but written by code outside guardlift's runtime and JIT code"
    } else {
        "malformed (valid: 0b111 values-tagged, 0b000 dict pointer or 0)"
    };
    writeln!(
        s,
        "    object {object:#x} (object_id {id}): managed-dict word {old:#x} -> {new:#x}, low bits 0b{:03b}: {verdict}",
        new & layout::TAG_MASK
    )?;
    let Some(w) = w else { return Ok(()) };
    write!(s, "    writer: {} (pc {:#x}), ", w.symbol, w.pc)?;
    match width {
        0 => write!(s, "a store of unknown width")?,
        n => write!(s, "a {n}-byte store")?,
    }
    match &w.site {
        Some(site) => writeln!(s, ", IR code {site} ({})", site.op)?,
        None => writeln!(s)?,
    }
    writeln!(s, "    backtrace (innermost first):")?;
    for (i, f) in w.backtrace.iter().enumerate() {
        writeln!(s, "      #{i} {f}")?;
    }
    Ok(())
}

/// A foreign write, ready to be recorded as a report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignWrite {
    /// The watched object.
    pub object: u64,
    /// Its dict word before the write.
    pub old: u64,
    /// Its dict word after the write.
    pub new: u64,
    /// Who wrote.
    pub writer: Writer,
}

/// Takes every recorded foreign write, oldest first, symbolized.
/// Cheap when nothing was recorded; never call it from a signal handler.
pub fn drain() -> Vec<ForeignWrite> {
    take().iter().map(describe).collect()
}

fn describe(h: &RawHit) -> ForeignWrite {
    let ir: Vec<IrSite> = h.ir[..h.nir]
        .iter()
        .map(|f| IrSite {
            function: String::from_utf8_lossy(&f.function[..f.flen as usize]).into_owned(),
            line: f.line,
            col: f.col,
            op: String::from_utf8_lossy(&f.op[..f.oplen as usize]).into_owned(),
            offset: 0,
        })
        .collect();
    let frames: Vec<Frame> = h.ips[..h.nips]
        .iter()
        // Return addresses point after the call, and the writer's PC after
        // the store (a watchpoint traps after the write): look up the
        // instruction before each.
        .map(|&ip| symbolize(ip.saturating_sub(1), ip))
        .collect();
    let writer_frame = frames.first();
    // The interpreter executing a store is IR code writing; a host call is not.
    let interp_store = ir
        .first()
        .filter(|f| matches!(f.op.as_str(), "store" | "dict_slot.store"));
    let site = writer_frame
        .and_then(|f| f.ir.clone())
        .or_else(|| interp_store.cloned());
    let ir_caller = ir
        .first()
        .cloned()
        .or_else(|| frames.iter().skip(1).find_map(|f| f.ir.clone()));
    ForeignWrite {
        object: h.object,
        old: h.old,
        new: h.new,
        writer: Writer {
            object_id: h.id,
            symbol: writer_frame.map_or_else(|| "?".into(), |f| f.symbol.clone()),
            pc: h.pc,
            site,
            ir_caller,
            width: writer_frame
                .and_then(|f| f.start)
                .and_then(|start| width_from_start(start, h.pc))
                .or_else(|| decode_width(&h.code[..h.ncode]))
                .unwrap_or(0),
            backtrace: backtrace_lines(&frames, &ir),
        },
    }
}

/// One frame of a writer's backtrace, symbolized.
struct Frame {
    ip: u64,
    /// Start of the function (ELF symbol or JIT code range), when known.
    start: Option<u64>,
    /// `symbol+0xOFF` of the real (outermost) function.
    symbol: String,
    /// Inlined function names (innermost first) then the real one, with file:line.
    names: Vec<String>,
    ir: Option<IrSite>,
}

/// The frame of `ip`, looked up at `lookup` (the instruction before it):
/// an IR frame when it is registered JIT code, else a native one.
fn symbolize(lookup: u64, ip: u64) -> Frame {
    if let Some(site) = IrSite::of_pc(lookup) {
        return Frame {
            ip,
            start: Some(lookup - site.offset),
            symbol: site.to_string(),
            names: vec![format!("{site} ({})", site.op)],
            ir: Some(site),
        };
    }
    let mut names = Vec::new();
    backtrace::resolve(lookup as *mut std::ffi::c_void, |s| {
        let name = s
            .name()
            .map_or_else(|| "?".to_string(), |n| format!("{n:#}"));
        let at = match (s.filename(), s.lineno()) {
            (Some(f), Some(l)) => format!(" at {}:{l}", f.display()),
            _ => String::new(),
        };
        names.push(format!("{name}{at}"));
    });
    let elf = elf_symbol(lookup);
    let symbol = match &elf {
        Some((name, start)) => format!("{name}+{:#x}", ip - start),
        None => names.last().map_or_else(
            || "?".into(),
            |n| n.split(" at ").next().unwrap_or("?").to_string(),
        ),
    };
    Frame {
        ip,
        start: elf.map(|(_, s)| s),
        symbol,
        names,
        ir: None,
    }
}

/// Symbols of one mapped ELF file: (start, size, name), sorted by start.
type SymTab = Vec<(u64, u64, String)>;

static SYMTABS: Mutex<BTreeMap<String, std::sync::Arc<SymTab>>> = Mutex::new(BTreeMap::new());

/// The ELF function symbol containing `pc` (demangled) and its address:
/// `dladdr` finds the mapped file and its base, the `object` crate reads
/// the file's symbol table (Rust executables export almost nothing to
/// `dladdr` itself).
fn elf_symbol(pc: u64) -> Option<(String, u64)> {
    // SAFETY: `Dl_info` is plain data (pointers and integers): all-zero is valid.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables and fills `info`.
    if unsafe { libc::dladdr(pc as *const libc::c_void, &mut info) } == 0
        || info.dli_fname.is_null()
    {
        return None;
    }
    // SAFETY: dladdr returned a NUL-terminated file name.
    let fname = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned();
    let base = info.dli_fbase as u64;
    let file = elf_file(&fname);
    let tab = {
        let mut cache = lock(&SYMTABS);
        match cache.get(&fname) {
            Some(t) => t.clone(),
            None => {
                let t = std::sync::Arc::new(read_symtab(&file).unwrap_or_default());
                cache.insert(fname.clone(), t.clone());
                t
            }
        }
    };
    let (rel, bias) = match tab.first() {
        // A position-dependent executable has absolute addresses.
        Some(&(first, _, _)) if first >= base && base != 0 && is_exec(&file) => (pc, 0),
        _ => (pc.wrapping_sub(base), base),
    };
    let i = tab.partition_point(|s| s.0 <= rel).checked_sub(1)?;
    let (start, size, name) = &tab[i];
    (rel < start + size.max(&1)).then(|| {
        let name = format!("{:#}", backtrace::SymbolName::new(name.as_bytes()));
        (name, start + bias)
    })
}

/// The file to read for `dladdr`'s file name `fname`. The loader names the
/// main program by its `argv[0]`, which is not a path from here when the
/// program was found through `PATH` (`guardlift run ...`): the main program
/// is read through `/proc/self/exe` (issue 29: its writers lost their
/// `+0xOFF` when guardlift was run through `PATH`).
fn elf_file(fname: &str) -> String {
    let main = std::env::args_os()
        .next()
        .is_some_and(|a| a.to_string_lossy() == fname);
    if main {
        "/proc/self/exe".to_string()
    } else {
        fname.to_string()
    }
}

fn is_exec(path: &str) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|d| d.get(16..18).map(|t| u16::from_le_bytes([t[0], t[1]]) == 2))
        .unwrap_or(false)
}

fn read_symtab(path: &str) -> Option<SymTab> {
    use object::read::elf::ElfFile64;
    use object::{Object, ObjectSymbol, SymbolKind};
    let data = std::fs::read(path).ok()?;
    let file = ElfFile64::<object::Endianness>::parse(&*data).ok()?;
    let mut t: SymTab = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
        .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
        .collect();
    t.sort();
    t.dedup_by_key(|s| s.0);
    Some(t)
}

/// The width of the instruction that ends at `pc`, decoding forward from
/// the start of its function (exact on x86_64, unlike a backward guess).
fn width_from_start(start: u64, pc: u64) -> Option<u32> {
    let len = pc.checked_sub(start)?;
    if len == 0 || len > 1 << 16 {
        return None;
    }
    // SAFETY: `[start, pc)` is code of a live function (the symbol or JIT
    // range that contains the writer, which just executed it).
    let code = unsafe { std::slice::from_raw_parts(start as *const u8, len as usize) };
    super::imp::width_of_last(code)
}

/// Frames innermost first; the interpreter's IR frames go right after its
/// innermost Rust frame (they are what that Rust code was executing).
fn backtrace_lines(frames: &[Frame], ir: &[IrSite]) -> Vec<String> {
    let mut out = Vec::new();
    let mut ir_done = ir.is_empty();
    for f in frames {
        // Below the thread's or program's entry: the runtime of Rust itself.
        if f.names
            .iter()
            .any(|n| n.contains("__rust_begin_short_backtrace"))
        {
            break;
        }
        let names = if f.names.is_empty() {
            vec!["?".to_string()]
        } else {
            f.names.clone()
        };
        for n in names {
            out.push(format!("{:#x} {n}", f.ip));
        }
        if !ir_done && f.names.iter().any(|n| n.contains("guardlift_interp")) {
            out.extend(ir.iter().map(|s| format!("{s} ({})", s.op)));
            ir_done = true;
        }
    }
    if !ir_done {
        out.extend(ir.iter().map(|s| format!("{s} ({})", s.op)));
    }
    out
}

/// Bytes stored by the instruction that ends where `code` ends (x86_64:
/// the breakpoint traps after the write, so the writer is the instruction
/// just before the PC; the candidate that decodes to exactly the window's
/// tail and writes memory wins, shortest first).
pub fn decode_width(code: &[u8]) -> Option<u32> {
    super::imp::decode_width(code)
}
