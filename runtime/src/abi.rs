//! The C ABI that generated code calls: built-in host functions (spec §7)
//! and the instrumentation entry points. Every function that needs the
//! runtime takes it as a hidden first argument (`*const Runtime`), which the
//! lowering passes as a constant owned by the compiled module (it holds an
//! `Arc<Runtime>`, so the pointer outlives the code).

use crate::report::{Observed, ReportKind};
use crate::runtime::{Runtime, Verdict};

/// Argument and return classes at the ABI level (`ptr` passes as `I64`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AbiTy {
    /// A 64-bit integer (or pointer).
    I64,
    /// A 64-bit float.
    F64,
}

/// A built-in host function.
#[derive(Copy, Clone, Debug)]
pub struct Builtin {
    /// The IR name (without `@`).
    pub name: &'static str,
    /// The symbol the JIT binds it to.
    pub symbol: &'static str,
    /// IR-visible parameters (the hidden runtime pointer is not listed).
    pub params: &'static [AbiTy],
    /// The result, if any.
    pub ret: Option<AbiTy>,
    /// Takes the runtime as a hidden first argument.
    pub needs_rt: bool,
    /// The function's address.
    pub addr: *const u8,
}

// SAFETY: `addr` is the address of a function item, immutable for the program's life.
unsafe impl Sync for Builtin {}
// SAFETY: as for `Sync`: nothing in a `Builtin` is tied to a thread.
unsafe impl Send for Builtin {}

use AbiTy::{F64, I64};

/// Every built-in host function of spec §7.
pub static BUILTINS: &[Builtin] = &[
    Builtin {
        name: "obj_new",
        symbol: "gl_obj_new",
        params: &[I64],
        ret: Some(I64),
        needs_rt: true,
        addr: gl_obj_new as *const u8,
    },
    Builtin {
        name: "obj_dictify",
        symbol: "gl_obj_dictify",
        params: &[I64],
        ret: None,
        needs_rt: true,
        addr: gl_obj_dictify as *const u8,
    },
    Builtin {
        name: "obj_free",
        symbol: "gl_obj_free",
        params: &[I64],
        ret: None,
        needs_rt: true,
        addr: gl_obj_free as *const u8,
    },
    Builtin {
        name: "fault_clear_lsb",
        symbol: "gl_fault_clear_lsb",
        params: &[I64],
        ret: None,
        needs_rt: true,
        addr: gl_fault_clear_lsb as *const u8,
    },
    Builtin {
        name: "load_attr_slow",
        symbol: "gl_load_attr_slow",
        params: &[I64, I64],
        ret: Some(I64),
        needs_rt: true,
        addr: gl_load_attr_slow as *const u8,
    },
    Builtin {
        name: "store_attr_slow",
        symbol: "gl_store_attr_slow",
        params: &[I64, I64, I64],
        ret: None,
        needs_rt: true,
        addr: gl_store_attr_slow as *const u8,
    },
    Builtin {
        name: "sin",
        symbol: "gl_sin",
        params: &[F64],
        ret: Some(F64),
        needs_rt: false,
        addr: gl_sin as *const u8,
    },
    Builtin {
        name: "cos",
        symbol: "gl_cos",
        params: &[F64],
        ret: Some(F64),
        needs_rt: false,
        addr: gl_cos as *const u8,
    },
    Builtin {
        name: "exp",
        symbol: "gl_exp",
        params: &[F64],
        ret: Some(F64),
        needs_rt: false,
        addr: gl_exp as *const u8,
    },
    Builtin {
        name: "log",
        symbol: "gl_log",
        params: &[F64],
        ret: Some(F64),
        needs_rt: false,
        addr: gl_log as *const u8,
    },
    Builtin {
        name: "print_i64",
        symbol: "gl_print_i64",
        params: &[I64],
        ret: None,
        needs_rt: true,
        addr: gl_print_i64 as *const u8,
    },
    Builtin {
        name: "print_f64",
        symbol: "gl_print_f64",
        params: &[F64],
        ret: None,
        needs_rt: true,
        addr: gl_print_f64 as *const u8,
    },
];

/// Looks a built-in up by its IR name.
pub fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// Instrumentation entry points: (symbol, address).
pub const ENTRY_REPORT_DICT: (&str, *const u8) = ("gl_report_dict", gl_report_dict as *const u8);
/// Instrumentation entry point: the adstack report.
pub const ENTRY_REPORT_ADSTACK: (&str, *const u8) =
    ("gl_report_adstack", gl_report_adstack as *const u8);
/// Instrumentation entry point: the clobber check of a raw store.
pub const ENTRY_CLOBBER_CHECK: (&str, *const u8) =
    ("gl_clobber_check", gl_clobber_check as *const u8);
/// Instrumentation entry point: adds a slot to the clobber watch list.
pub const ENTRY_WATCH: (&str, *const u8) = ("gl_watch", gl_watch as *const u8);

/// # Safety
/// `rt` must point to a live `Runtime` (the compiled module keeps it alive).
unsafe fn rt<'a>(p: *const Runtime) -> &'a Runtime {
    // SAFETY: guaranteed by the caller (generated code passes its module's runtime).
    unsafe { &*p }
}

macro_rules! abi_fns {
    ($( $(#[$m:meta])* fn $name:ident($($a:ident: $t:ty),*) $(-> $r:ty)? = |$rt:ident| $body:expr; )*) => {
        $(
            $(#[$m])*
            /// # Safety
            /// `rt` must point to a live `Runtime`.
            pub unsafe extern "C" fn $name(rt_ptr: *const Runtime, $($a: $t),*) $(-> $r)? {
                // SAFETY: forwarded from the caller's contract.
                let $rt = unsafe { rt(rt_ptr) };
                $body
            }
        )*
    };
}

abi_fns! {
    fn gl_obj_new(n: i64) -> u64 = |r| r.obj_new(n);
    fn gl_obj_dictify(obj: u64) = |r| r.obj_dictify(obj);
    fn gl_obj_free(obj: u64) = |r| r.obj_free(obj);
    fn gl_fault_clear_lsb(obj: u64) = |r| r.fault_clear_lsb(obj);
    fn gl_load_attr_slow(obj: u64, i: u64) -> i64 = |r| r.load_attr_slow(obj, i as u32);
    fn gl_store_attr_slow(obj: u64, i: u64, v: i64) = |r| r.store_attr_slow(obj, i as u32, v);
    fn gl_print_i64(v: i64) = |r| r.print_i64(v);
    fn gl_print_f64(v: f64) = |r| r.print_f64(v);
    /// Dict tag violation at `site`: returns 0 to recover (abort mode does not return).
    fn gl_report_dict(site: u32, obj: u64, word: u64) -> u32 = |r| {
        verdict(r.report(ReportKind::DictSlotTag, site, Observed::Dict { object: obj, value: word }))
    };
    /// Adstack violation (`kind` = `ReportKind::code`): returns 0 to recover.
    fn gl_report_adstack(site: u32, kind: u32, capacity: u64, len: u64) -> u32 = |r| {
        let k = if kind == ReportKind::AdstackOverflow.code() as u32 { ReportKind::AdstackOverflow } else { ReportKind::AdstackUnderflow };
        verdict(r.report(k, site, Observed::Adstack { capacity, len }))
    };
    /// Clobber check of a raw store: 1 = skip the store.
    fn gl_clobber_check(site: u32, addr: u64, width: u32, value: u64) -> u32 = |r| r.clobber_check(site, addr, width, value) as u32;
    fn gl_watch(obj: u64) = |r| r.watch(obj);
}

fn verdict(v: Verdict) -> u32 {
    match v {
        Verdict::Recover => 0,
        Verdict::Abort => 1,
    }
}

/// `@sin`.
pub extern "C" fn gl_sin(x: f64) -> f64 {
    x.sin()
}
/// `@cos`.
pub extern "C" fn gl_cos(x: f64) -> f64 {
    x.cos()
}
/// `@exp`.
pub extern "C" fn gl_exp(x: f64) -> f64 {
    x.exp()
}
/// `@log` (natural logarithm).
pub extern "C" fn gl_log(x: f64) -> f64 {
    x.ln()
}

// ---- added for the JIT: the last-known-write record of guarded dict_slot.store ----

/// `(symbol, address)` of [`gl_note_slot_write`]: generated code calls it
/// after a guarded `dict_slot.store` has written the slot (as the
/// interpreter calls [`Runtime::note_slot_write`]).
pub const ENTRY_NOTE_SLOT_WRITE: (&str, *const u8) =
    ("gl_note_slot_write", gl_note_slot_write as *const u8);

abi_fns! {
    /// Instrumented code wrote `word` to `obj`'s dict slot at `site` (runtime-global id).
    fn gl_note_slot_write(site: u32, obj: u64, word: u64) = |r| r.note_slot_write(site, obj, word);
}

// ---- trap mode: the clobber test without a report ----

/// `(symbol, address)` of [`gl_clobber_overlaps`]: trap-mode code calls it
/// instead of [`gl_clobber_check`], then traps itself (see [`crate::trap`]).
pub const ENTRY_CLOBBER_OVERLAPS: (&str, *const u8) =
    ("gl_clobber_overlaps", gl_clobber_overlaps as *const u8);

abi_fns! {
    /// 1 when a raw store of `width` bytes at `addr` overlaps a watched dict slot.
    fn gl_clobber_overlaps(addr: u64, width: u32) -> u32 = |r| r.clobber_overlaps(addr, width) as u32;
}

// ---- lifetime and bounds checks (spec §6), allocation sites ----

/// `(symbol, address)` of [`gl_obj_new_at`]: a guarded `call @obj_new`.
pub const ENTRY_OBJ_NEW_AT: (&str, *const u8) = ("gl_obj_new_at", gl_obj_new_at as *const u8);
/// `(symbol, address)` of [`gl_obj_free_at`]: a `call @obj_free` under the lifetime check.
pub const ENTRY_OBJ_FREE_AT: (&str, *const u8) = ("gl_obj_free_at", gl_obj_free_at as *const u8);
/// `(symbol, address)` of [`gl_check_live`]: the lifetime check of an object op.
pub const ENTRY_CHECK_LIVE: (&str, *const u8) = ("gl_check_live", gl_check_live as *const u8);
/// `(symbol, address)` of [`gl_check_mem`]: the lifetime check of a raw load/store.
pub const ENTRY_CHECK_MEM: (&str, *const u8) = ("gl_check_mem", gl_check_mem as *const u8);
/// `(symbol, address)` of [`gl_report_bounds`]: the report of a failed bounds check.
pub const ENTRY_REPORT_BOUNDS: (&str, *const u8) =
    ("gl_report_bounds", gl_report_bounds as *const u8);

fn go_on(r: Result<(), Verdict>) -> u8 {
    r.is_ok() as u8
}

abi_fns! {
    /// `@obj_new(n)` recording `site` (runtime-global) as the allocation site.
    fn gl_obj_new_at(n: i64, site: u32) -> u64 = |r| r.obj_new_at(n, site);
    /// Lifetime-checked `@obj_free`: `double_free` / `invalid_free` are
    /// reported (abort and trap mode: report and abort inside; recover:
    /// recorded, the free ignored).
    fn gl_obj_free_at(obj: u64, site: u32) = |r| { let _ = r.obj_free_at(obj, site); };
    /// Lifetime check of `load_attr`/`store_attr`/`dict_slot.*` on `obj`:
    /// 1 = go on; 0 = `use_after_free` recorded, apply the recover effect
    /// (abort and trap mode do not return).
    fn gl_check_live(obj: u64, site: u32) -> u8 = |r| go_on(r.check_live(obj, site));
    /// Lifetime check of a raw load/store of `width` bytes at `addr`:
    /// 1 = go on; 0 = the bytes fall in a freed object's memory, recorded:
    /// skip the access (a load yields 0).
    fn gl_check_mem(addr: u64, width: u32, site: u32) -> u8 = |r| go_on(r.check_mem(addr, width, site));
    /// Bounds violation at `site`: attribute `index` ≥ `capacity` (the u64
    /// at values − 8). Returns 0 to recover (abort mode does not return).
    fn gl_report_bounds(site: u32, obj: u64, index: u64, capacity: u64) -> u32 = |r| {
        verdict(r.report_bounds(site, obj, index, capacity))
    };
}
