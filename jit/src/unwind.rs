//! Unwind info of JIT code registered with the process's unwinder (issue
//! 35), so that libgcc- and libunwind-based unwinders — C++ exceptions'
//! search phase, `std::backtrace`, the `backtrace` crate,
//! `_Unwind_Backtrace` — walk through JIT frames into the host's.
//!
//! Cranelift gives each compiled function its unwind info
//! (`create_unwind_info`: `UnwindInfo::SystemV` on Linux); here each one
//! becomes an `.eh_frame` table of its own — the ISA's CIE
//! (`create_systemv_cie`), the function's FDE with absolute addresses, a
//! zero terminator — registered with `__register_frame` and withdrawn with
//! `__deregister_frame` when the [`Registration`] drops, which the module's
//! owner does before it frees the code (`engine::Inner`'s drop).
//!
//! **One table per function**, not one per module as wasmtime does: libgcc
//! takes a table (it walks FDEs up to the terminator) and looks a PC up in
//! the first registered table whose lowest address is below it, expecting
//! tables not to overlap; cranelift-jit places a module's functions in
//! separate allocations, between which another module's code (or this
//! module's later trampolines) can land. A table per function never
//! overlaps another. LLVM's libunwind takes one FDE per call (detected as
//! wasmtime does, by `__unw_add_dynamic_fde`): it gets the table's FDE.
//!
//! Always on for the host JIT (`CompileOptions::unwind` turns it off): it
//! costs the generated code nothing (Cranelift's unwind info describes the
//! frames it builds anyway; the `unwind_info` setting stays at its default)
//! and compiling a few hundred bytes per function (docs/PERFORMANCE.md).
//! Each registration is looked up once right away (`_Unwind_Find_FDE`):
//! that checks it took, and makes libgcc sort its table now, not at the
//! first lookup — which may come from a signal handler (watchpoints walk
//! the writer's stack), where its allocation must not happen.
//!
//! Failures are not errors: a function whose table cannot be built or
//! registered is left out ([`Registration::missing`]), and unwinders stop at
//! its frames as they did before. Nothing here panics.

use cranelift_codegen::isa::unwind::UnwindInfo;
use cranelift_codegen::isa::TargetIsa;
use gimli::write::{Address, EhFrame, EndianVec, FrameTable};
use gimli::LittleEndian;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Registered tables alive in the process (for tests and leak checks).
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The number of function tables currently registered by all modules.
pub fn registered_count() -> usize {
    LIVE.load(Ordering::SeqCst)
}

/// One function's code as [`register`] takes it.
#[derive(Copy, Clone, Debug)]
pub struct UnwindUnit<'a> {
    /// Absolute address of its first instruction.
    pub start: usize,
    /// Code size in bytes.
    pub len: usize,
    /// Cranelift's unwind info (`None`: the function has none).
    pub info: Option<&'a UnwindInfo>,
}

/// One registered table: its bytes (8-aligned, never moved while
/// registered) and the pointer handed to `__register_frame`.
struct Table {
    _bytes: Box<[u64]>,
    registered: *const u8,
}

/// The tables a module (or a trampoline) registered; deregistered on drop.
#[derive(Default)]
pub struct Registration {
    tables: Vec<Table>,
    missing: usize,
}

// SAFETY: the tables are owned here and only read by the unwinder, which
// synchronizes registration itself; nothing is reachable through `&Self`.
unsafe impl Send for Registration {}
// SAFETY: as above.
unsafe impl Sync for Registration {}

impl Registration {
    /// How many functions got a table.
    pub fn registered(&self) -> usize {
        self.tables.len()
    }

    /// How many functions could not be registered (no unwind info, no CIE
    /// for the ISA, an encoding error, or an unwinder that ignored them).
    pub fn missing(&self) -> usize {
        self.missing
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // libgcc keeps registered objects in a list sorted by descending
        // address: withdrawing in reverse order of registration keeps the
        // search short.
        for t in self.tables.drain(..).rev() {
            // SAFETY: `t.registered` was passed to `__register_frame` by
            // `register` and not deregistered since; its bytes are alive.
            unsafe { sys::deregister(t.registered) };
            LIVE.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// The `.eh_frame` table of one function at `start`: CIE, FDE, terminator,
/// and the FDE's byte offset in it.
fn table(isa: &dyn TargetIsa, u: &UnwindUnit<'_>) -> Option<(Box<[u64]>, usize)> {
    let Some(UnwindInfo::SystemV(info)) = u.info else {
        return None;
    };
    let mut ft = FrameTable::default();
    let cie = ft.add_cie(isa.create_systemv_cie()?);
    ft.add_fde(cie, info.to_fde(Address::Constant(u.start as u64)));
    let mut eh = EhFrame(EndianVec::new(LittleEndian));
    ft.write_eh_frame(&mut eh).ok()?;
    let mut bytes = eh.0.into_vec();
    // The CIE is the first entry: its length word (not counting itself).
    let cie_len = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    let fde_at = cie_len + 4;
    if fde_at >= bytes.len() {
        return None;
    }
    bytes.extend_from_slice(&[0; 4]);
    let mut words = vec![0u64; bytes.len().div_ceil(8)].into_boxed_slice();
    for (w, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        *w = u64::from_le_bytes(b);
    }
    Some((words, fde_at))
}

/// Registers the unwind info of `units` with the process's unwinder, one
/// table per function; a function without info, or whose table cannot be
/// built or found again after registering, counts as missing.
///
/// # Safety
/// Every unit's range must be finalized code that stays mapped until the
/// returned [`Registration`] is dropped (its owner drops it before freeing
/// the code).
pub unsafe fn register(isa: &dyn TargetIsa, units: &[UnwindUnit<'_>]) -> Registration {
    let mut reg = Registration::default();
    if !sys::SUPPORTED || cfg!(target_endian = "big") {
        reg.missing = units.len();
        return reg;
    }
    for u in units {
        let Some((bytes, fde_at)) = table(isa, u) else {
            reg.missing += 1;
            continue;
        };
        let base = bytes.as_ptr().cast::<u8>();
        let registered = if sys::libunwind() {
            // SAFETY: `fde_at` is the offset of the FDE inside `bytes`.
            unsafe { base.add(fde_at) }
        } else {
            base
        };
        // SAFETY: `registered` is a well-formed table (libgcc) or FDE
        // (libunwind) whose bytes live in `bytes`, kept (unmoved: a boxed
        // slice) until `Registration`'s drop deregisters it; it describes
        // code that stays mapped as long (this function's contract).
        unsafe { sys::register(registered) };
        LIVE.fetch_add(1, Ordering::SeqCst);
        reg.tables.push(Table {
            _bytes: bytes,
            registered,
        });
        if !is_registered(u.start) {
            reg.missing += 1;
        }
    }
    reg
}

/// Does the process's unwinder find unwind info for `pc` (through
/// `_Unwind_Find_FDE`: registered tables, then the loaded objects')?
pub fn is_registered(pc: usize) -> bool {
    sys::find_fde(pc)
}

#[cfg(target_os = "linux")]
mod sys {
    use std::sync::atomic::{AtomicU8, Ordering};

    pub const SUPPORTED: bool = true;

    /// `struct dwarf_eh_bases` of libgcc (and LLVM libunwind's copy).
    #[repr(C)]
    struct DwarfEhBases {
        tbase: *mut u8,
        dbase: *mut u8,
        func: *mut u8,
    }

    extern "C" {
        fn __register_frame(begin: *const u8);
        fn __deregister_frame(begin: *const u8);
        fn _Unwind_Find_FDE(pc: *const u8, bases: *mut DwarfEhBases) -> *const u8;
    }

    /// Is the process's unwinder LLVM's libunwind (one FDE per
    /// `__register_frame`) rather than libgcc (a table)? Detected once.
    pub fn libunwind() -> bool {
        static KIND: AtomicU8 = AtomicU8::new(0); // 0 unknown, 1 libgcc, 2 libunwind
        match KIND.load(Ordering::Relaxed) {
            1 => false,
            2 => true,
            _ => {
                // SAFETY: dlsym with the default handle and a NUL-terminated name.
                let found = unsafe {
                    !libc::dlsym(libc::RTLD_DEFAULT, c"__unw_add_dynamic_fde".as_ptr()).is_null()
                };
                KIND.store(if found { 2 } else { 1 }, Ordering::Relaxed);
                found
            }
        }
    }

    /// # Safety
    /// `p` must be a table (libgcc) or FDE (libunwind) that stays alive and
    /// unmoved until [`deregister`].
    pub unsafe fn register(p: *const u8) {
        // SAFETY: per the contract.
        unsafe { __register_frame(p) }
    }

    /// # Safety
    /// `p` must have been registered by [`register`] and not deregistered.
    pub unsafe fn deregister(p: *const u8) {
        // SAFETY: per the contract (libgcc aborts on an unknown pointer).
        unsafe { __deregister_frame(p) }
    }

    pub fn find_fde(pc: usize) -> bool {
        let mut bases = DwarfEhBases {
            tbase: std::ptr::null_mut(),
            dbase: std::ptr::null_mut(),
            func: std::ptr::null_mut(),
        };
        // SAFETY: a lookup only: reads the unwinder's tables, writes `bases`.
        !unsafe { _Unwind_Find_FDE(pc as *const u8, &mut bases) }.is_null()
    }
}

#[cfg(not(target_os = "linux"))]
mod sys {
    pub const SUPPORTED: bool = false;
    pub fn libunwind() -> bool {
        false
    }
    pub unsafe fn register(_: *const u8) {}
    pub unsafe fn deregister(_: *const u8) {}
    pub fn find_fde(_: usize) -> bool {
        false
    }
}
