//! The C ABI that generated code calls: built-in host functions (spec §7)
//! and the instrumentation entry points. Every function that needs the
//! runtime takes it as a hidden first argument (`*const Runtime`), which the
//! lowering passes as a constant owned by the compiled module (it holds an
//! `Arc<Runtime>`, so the pointer outlives the code).
//!
//! What the functions are (symbols, signatures) is written once, in
//! [`guardlift_abi::foreach_entry!`]; this module supplies their bodies and
//! [`entry_addr`], the address of every entry, built by expanding that
//! table: an entry without a function here, or whose function's type
//! disagrees with the table, fails to compile.

use crate::objects::ObjectBuiltins;
use crate::report::{Observed, ReportKind};
use crate::runtime::RuntimeInternals;
use crate::runtime::{Runtime, Verdict};
pub use guardlift_abi::entry::{builtin, builtins, AbiTy, Builtin, Entry};

/// The Rust type of an ABI class in the runtime's definitions.
macro_rules! rust_ty {
    (I8) => {
        u8
    };
    (I32) => {
        u32
    };
    (I64) => {
        u64
    };
    (F64) => {
        f64
    };
}

/// The function-pointer type an entry's definition must have.
macro_rules! entry_fn_ty {
    (rt ($($p:ident),*) $(-> $r:ident)?) => {
        unsafe extern "C" fn(*const Runtime $(, rust_ty!($p))*) $(-> rust_ty!($r))?
    };
    (- ($($p:ident),*) $(-> $r:ident)?) => {
        unsafe extern "C" fn($(rust_ty!($p)),*) $(-> rust_ty!($r))?
    };
}

macro_rules! entry_addresses {
    ($(
        $(#[$attr:meta])*
        $variant:ident $sym:ident [$($ir:literal)?] $rt:tt ($($p:ident),*) $(-> $r:ident)?;
    )*) => {
        /// The address of entry `e`'s definition in this runtime (what the
        /// JIT binds its symbol to).
        pub fn entry_addr(e: Entry) -> *const u8 {
            match e {
                $(Entry::$variant => {
                    let f: entry_fn_ty!($rt ($($p),*) $(-> $r)?) = $sym;
                    f as *const u8
                })*
            }
        }
    };
}

guardlift_abi::foreach_entry!(entry_addresses);

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
    fn gl_obj_new(n: u64) -> u64 = |r| r.obj_new(n as i64);
    fn gl_obj_dictify(obj: u64) = |r| r.obj_dictify(obj);
    fn gl_obj_free(obj: u64) = |r| r.obj_free(obj);
    fn gl_fault_clear_lsb(obj: u64) = |r| r.fault_clear_lsb(obj);
    fn gl_load_attr_slow(obj: u64, i: u64) -> u64 = |r| r.load_attr_slow(obj, i as u32) as u64;
    fn gl_store_attr_slow(obj: u64, i: u64, v: u64) = |r| r.store_attr_slow(obj, i as u32, v as i64);
    fn gl_print_i64(v: u64) = |r| r.print_i64(v as i64);
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

/// `@sin(x)`: the sine.
pub extern "C" fn gl_sin(x: f64) -> f64 {
    x.sin()
}
/// `@cos(x)`: the cosine.
pub extern "C" fn gl_cos(x: f64) -> f64 {
    x.cos()
}
/// `@exp(x)`: the `e^x`.
pub extern "C" fn gl_exp(x: f64) -> f64 {
    x.exp()
}
/// `@log(x)`: the natural logarithm.
pub extern "C" fn gl_log(x: f64) -> f64 {
    x.ln()
}
/// `@pow(x, y)`: `x` to the power `y` (the C library's `pow`, as the
/// object paths' support calls it).
pub extern "C" fn gl_pow(x: f64, y: f64) -> f64 {
    x.powf(y)
}
/// `@fmod(x, y)`: C `fmod` (the remainder truncated toward zero, the sign of `x`).
pub extern "C" fn gl_fmod(x: f64, y: f64) -> f64 {
    x % y
}

/// A fatal division fault of the calling IR op (`kind`: a
/// [`ReportKind::code`], `fp`: the IR function's frame pointer): reported
/// as the fault handler reports a fault, then the process aborts.
///
/// # Safety
/// Called only by generated code registered with `rt` (the call's return
/// address names the op).
pub unsafe extern "C" fn gl_arith_fault(_rt: *const Runtime, kind: u32, fp: u64) {
    let k = match ReportKind::from_code(kind as u8) {
        Some(k) if k.is_arith() => k,
        _ => ReportKind::DivByZero,
    };
    crate::fault::arith_fault(k, fp as usize)
}

// ---- the last-known-write record of guarded dict_slot.store ----

abi_fns! {
    /// Instrumented code wrote `word` to `obj`'s dict slot at `site` (runtime-global id).
    fn gl_note_slot_write(site: u32, obj: u64, word: u64) = |r| r.note_slot_write(site, obj, word);
}

// ---- trap mode: the clobber test without a report ----

abi_fns! {
    /// 1 when a raw store of `width` bytes at `addr` overlaps a watched dict slot.
    fn gl_clobber_overlaps(addr: u64, width: u32) -> u32 = |r| r.clobber_overlaps(addr, width) as u32;
}

// ---- lifetime and bounds checks (spec §6), allocation sites ----

fn go_on(r: Result<(), Verdict>) -> u8 {
    r.is_ok() as u8
}

abi_fns! {
    /// `@obj_new(n)` recording `site` (runtime-global) as the allocation site.
    fn gl_obj_new_at(n: u64, site: u32) -> u64 = |r| r.obj_new_at(n as i64, site);
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
    /// The entry test of a clean loop whose bounds tests of `obj` are
    /// made once ([`Runtime::attr_fixed`]): 1 = they cannot fail in it.
    fn gl_attr_fixed(obj: u64, max: u32) -> u8 = |r| r.attr_fixed(obj, max) as u8;
    /// Bounds violation at `site`: attribute `index` ≥ `capacity` (the u64
    /// at values − 8). Returns 0 to recover (abort mode does not return).
    fn gl_report_bounds(site: u32, obj: u64, index: u64, capacity: u64) -> u32 = |r| {
        verdict(r.report_bounds(site, obj, index, capacity))
    };
    /// `call @obj_dictify` under the lifetime check: the released values
    /// array's free site is `site` ([`Runtime::obj_dictify_at`]).
    fn gl_obj_dictify_at(obj: u64, site: u32) = |r| r.obj_dictify_at(obj, site);
    /// The slow path of the bounds check ([`Runtime::check_bounds`]):
    /// attribute `index` of `obj` against the recorded capacity of the
    /// values array at `values`. 1 = in bounds; 0 = reported (recover).
    fn gl_check_bounds(site: u32, obj: u64, values: u64, index: u64) -> u8 = |r| {
        go_on(r.check_bounds(site, obj, values, index))
    };
    /// The bounds check of a raw access ([`Runtime::check_redzone`]):
    /// `width` bytes at `addr`, `store` 1 with the stored `value`. 1 = go
    /// on; 0 = it touches a redzone (reported; recover).
    fn gl_check_redzone(addr: u64, width: u32, site: u32, store: u32, value: u64) -> u8 = |r| {
        go_on(r.check_redzone(addr, width, site, (store != 0).then_some(value)))
    };
    /// A frame's `stack_alloc` area: its pads are redzones until released.
    fn gl_stack_area(addr: u64, size: u32) = |r| r.stack_area(addr, size);
    /// The frame of the area returns.
    fn gl_stack_release(addr: u64, size: u32) = |r| r.stack_area_gone(addr, size);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_entry_has_a_distinct_address() {
        let addrs: HashSet<usize> = Entry::ALL.iter().map(|&e| entry_addr(e) as usize).collect();
        assert_eq!(addrs.len(), Entry::ALL.len());
        assert!(!addrs.contains(&0));
    }

    /// A runtime built in place (`Runtime::init_at`, as the target library
    /// builds its `guardlift_runtime` cell) answers the entry points
    /// through its address, and generated code finds its epochs at the
    /// contract's offsets from that address.
    #[test]
    fn a_runtime_built_in_place_answers_through_its_address() {
        use crate::internals::RuntimeInternals;
        use crate::{Mode, ReportKind, RuntimeConfig, SiteInfo};
        use std::mem::MaybeUninit;

        let mut cell = Box::new(MaybeUninit::<Runtime>::uninit());
        let config = RuntimeConfig {
            mode: Mode::Recover,
            abort_process: false,
            ..Default::default()
        };
        // SAFETY: the cell is writable, aligned and holds no runtime.
        unsafe { Runtime::init_at(config, cell.as_mut_ptr()) }.unwrap();
        let p = cell.as_ptr();
        let epoch = |offset: i32| {
            // SAFETY: the runtime is live; its epochs are u64s (the test
            // checks they are where the contract says).
            unsafe { std::ptr::read_volatile(p.cast::<u8>().add(offset as usize).cast::<u64>()) }
        };
        // SAFETY: `p` is a live runtime for every call below.
        unsafe {
            let r = &*p;
            assert_eq!(
                std::ptr::from_ref(r.trap_scratch()).cast::<u8>(),
                p.cast::<u8>()
                    .add(guardlift_abi::TRAP_SCRATCH_OFFSET as usize)
            );
            let info = SiteInfo {
                function: "main".into(),
                line: 4,
                col: 2,
                op: "call @obj_free".into(),
            };
            let site = r.register_sites([(0, info)].into()).unwrap();
            let obj = gl_obj_new(p, 3);
            assert_ne!(obj, 0);
            gl_store_attr_slow(p, obj, 2, 42);
            assert_eq!(gl_load_attr_slow(p, obj, 2), 42);
            assert_eq!(gl_check_live(p, obj, site), 1);
            let (unwatch, values) = (
                epoch(guardlift_abi::UNWATCH_EPOCH_OFFSET),
                epoch(guardlift_abi::VALUES_EPOCH_OFFSET),
            );
            assert_eq!(unwatch, r.unwatch_epoch());
            gl_obj_free_at(p, obj, site);
            // A free moves both epochs, seen through the raw offsets.
            assert_eq!(epoch(guardlift_abi::UNWATCH_EPOCH_OFFSET), unwatch + 1);
            assert_eq!(epoch(guardlift_abi::VALUES_EPOCH_OFFSET), values + 1);
            assert_eq!(
                epoch(guardlift_abi::UNWATCH_EPOCH_OFFSET),
                r.unwatch_epoch()
            );
            // The second free is a report (recover: recorded, ignored).
            gl_obj_free_at(p, obj, site);
            assert_eq!(gl_check_live(p, obj, site), 0);
            let reports = r.take_reports();
            let kinds: Vec<_> = reports.iter().map(|r| r.kind).collect();
            assert_eq!(kinds, [ReportKind::DoubleFree, ReportKind::UseAfterFree]);
            assert_eq!(reports[0].info.function, "main");
            assert_eq!(gl_report_dict(p, site, obj, 3), 0);
            assert_eq!(r.take_reports()[0].kind, ReportKind::DictSlotTag);
        }
        // SAFETY: built above, dropped once; nothing uses it afterwards.
        unsafe { std::ptr::drop_in_place(cell.as_mut_ptr()) };
        let bad = RuntimeConfig {
            layout: crate::layout::DictLayout::Custom(3),
            ..Default::default()
        };
        // SAFETY: as above (the cell's runtime was dropped).
        assert!(unsafe { Runtime::init_at(bad, cell.as_mut_ptr()) }.is_err());
    }

    /// The offsets generated code uses (from the contract crate) are where
    /// the runtime's `#[repr(C)]` structs put the fields.
    #[test]
    fn contract_offsets_match_the_runtime_structs() {
        use crate::trap;
        assert_eq!(
            guardlift_abi::TRAP_SCRATCH_OFFSET,
            crate::TRAP_SCRATCH_OFFSET
        );
        assert_eq!(
            guardlift_abi::UNWATCH_EPOCH_OFFSET,
            crate::UNWATCH_EPOCH_OFFSET
        );
        assert_eq!(
            guardlift_abi::VALUES_EPOCH_OFFSET,
            crate::VALUES_EPOCH_OFFSET
        );
        assert_eq!(
            guardlift_abi::offsets::FIXED_MEMO_OFFSET,
            crate::FIXED_MEMO_OFFSET
        );
        assert_eq!(guardlift_abi::TRAP_OWNER_OFFSET, trap::TRAP_OWNER_OFFSET);
        assert_eq!(guardlift_abi::TRAP_VALUES_OFFSET, trap::TRAP_VALUES_OFFSET);
        assert_eq!(guardlift_abi::TRAP_READY_OFFSET, trap::TRAP_READY_OFFSET);
        assert_eq!(guardlift_abi::TRAP_VALUE_COUNT, trap::TRAP_VALUE_COUNT);
        for site in [0, 1, 77, u32::MAX] {
            assert_eq!(
                guardlift_abi::trap_token(site),
                crate::TrapScratch::token(site)
            );
        }
    }
}
