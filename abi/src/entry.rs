//! The one table of every function generated code calls: the built-in host
//! functions of spec §7 (with an IR name) and the instrumentation entry
//! points (without). Each is written once, in `foreach_entry!`, with its
//! symbol, parameter and result classes and whether it takes the runtime
//! pointer, as wasmtime's `foreach_builtin_function!` lists its built-ins.
//!
//! Every consumer derives its view from the table: [`Entry`] and
//! [`Builtin`] here, the runtime's address table (which fails to compile
//! if a function's Rust type disagrees), the JIT's Cranelift signatures,
//! the C declarations of the object paths' support library, and the IR
//! verifier's matching of `extern` declarations.

/// Invokes `$mac!` with every entry point and built-in, one per line:
///
/// ```text
/// /// doc
/// Variant symbol [ "ir_name" ] rt (I64, ...) -> I64;
/// ```
///
/// `[]` for an instrumentation entry point (no IR name); `rt` when the
/// function takes the runtime pointer as a hidden first argument, `-` when
/// it does not; parameter and result classes are [`AbiTy`] variants (the
/// hidden runtime pointer is not listed).
#[macro_export]
macro_rules! foreach_entry {
    ($mac:ident) => {
        $mac! {
            /// `@obj_new(n)`: a new object with `n` attributes.
            ObjNew gl_obj_new ["obj_new"] rt (I64) -> I64;
            /// `@obj_dictify(obj)`: move the attributes into a dict.
            ObjDictify gl_obj_dictify ["obj_dictify"] rt (I64);
            /// `@obj_free(obj)`.
            ObjFree gl_obj_free ["obj_free"] rt (I64);
            /// `@fault_clear_lsb(obj)`: the fault injection of spec §7.
            FaultClearLsb gl_fault_clear_lsb ["fault_clear_lsb"] rt (I64);
            /// `@load_attr_slow(obj, index)`: the host's LoadAttr.
            LoadAttrSlow gl_load_attr_slow ["load_attr_slow"] rt (I64, I64) -> I64;
            /// `@store_attr_slow(obj, index, value)`: the host's StoreAttr.
            StoreAttrSlow gl_store_attr_slow ["store_attr_slow"] rt (I64, I64, I64);
            /// `@sin(x)`.
            Sin gl_sin ["sin"] - (F64) -> F64;
            /// `@cos(x)`.
            Cos gl_cos ["cos"] - (F64) -> F64;
            /// `@exp(x)`.
            Exp gl_exp ["exp"] - (F64) -> F64;
            /// `@log(x)`.
            Log gl_log ["log"] - (F64) -> F64;
            /// `@print_i64(v)`.
            PrintI64 gl_print_i64 ["print_i64"] rt (I64);
            /// `@print_f64(v)`.
            PrintF64 gl_print_f64 ["print_f64"] rt (F64);
            /// Dict tag violation `(site, obj, word)`: 0 = recover.
            ReportDict gl_report_dict [] rt (I32, I64, I64) -> I32;
            /// Adstack violation `(site, kind code, capacity, len)`: 0 = recover.
            ReportAdstack gl_report_adstack [] rt (I32, I32, I64, I64) -> I32;
            /// Clobber check of a raw store `(site, addr, width, value)`: 1 = skip it.
            ClobberCheck gl_clobber_check [] rt (I32, I64, I32, I64) -> I32;
            /// `guard.watch (obj)`.
            Watch gl_watch [] rt (I64);
            /// After a guarded `dict_slot.store` `(site, obj, word)`: the last-write record.
            NoteSlotWrite gl_note_slot_write [] rt (I32, I64, I64);
            /// Trap mode's clobber test `(addr, width)`: 1 = overlaps (no report).
            ClobberOverlaps gl_clobber_overlaps [] rt (I64, I32) -> I32;
            /// Bounds violation `(site, obj, index, capacity)`: 0 = recover.
            ReportBounds gl_report_bounds [] rt (I32, I64, I64, I64) -> I32;
            /// Lifetime check of an object op `(obj, site)`: 1 = go on.
            CheckLive gl_check_live [] rt (I64, I32) -> I8;
            /// Lifetime check of a raw access `(addr, width, site)`: 1 = go on.
            CheckMem gl_check_mem [] rt (I64, I32, I32) -> I8;
            /// A guarded `call @obj_new` `(n, site)`, recording its allocation site.
            ObjNewAt gl_obj_new_at [] rt (I64, I32) -> I64;
            /// `call @obj_free` under the lifetime check `(obj, site)`.
            ObjFreeAt gl_obj_free_at [] rt (I64, I32);
            /// A clean loop's entry test of `(obj, max)`: 1 = a live object
            /// whose word is its own values array of more than `max` attributes.
            AttrFixed gl_attr_fixed [] rt (I64, I32) -> I8;
            /// `call @obj_dictify` under the lifetime check `(obj, site)`.
            ObjDictifyAt gl_obj_dictify_at [] rt (I64, I32);
            /// The bounds check's slow path `(site, obj, values, index)`:
            /// 1 = in bounds by the recorded capacity; 0 = reported.
            CheckBounds gl_check_bounds [] rt (I32, I64, I64, I64) -> I8;
            /// The bounds check of a raw access `(addr, width, site, store,
            /// value)`: 1 = go on; 0 = it touches a heap redzone (reported).
            CheckRedzone gl_check_redzone [] rt (I64, I32, I32, I32, I64) -> I8;
            /// `@pow(x, y)`: `x` to the power `y` (C `pow`).
            Pow gl_pow ["pow"] - (F64, F64) -> F64;
            /// `@fmod(x, y)`: the remainder of `x / y` truncated (C `fmod`).
            Fmod gl_fmod ["fmod"] - (F64, F64) -> F64;
            /// A `stack_alloc` area `(addr, size)` of a function with
            /// bounds checks: the pads around it are redzones until
            /// `gl_stack_release`.
            StackArea gl_stack_area [] rt (I64, I32);
            /// The function that made the area `(addr, size)` returns.
            StackRelease gl_stack_release [] rt (I64, I32);
            /// A fatal division fault `(kind code, frame pointer)` of the
            /// calling IR op (`div_by_zero`, `int_overflow`): never returns.
            ArithFault gl_arith_fault [] rt (I32, I64);
        }
    };
}

/// The class of a parameter or result at the ABI level: the width of an
/// integer (`ptr` passes as `I64`; signedness is the callee's business) or
/// a double.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AbiTy {
    /// An 8-bit integer (C `uint8_t`).
    I8,
    /// A 32-bit integer (C `uint32_t`).
    I32,
    /// A 64-bit integer or pointer (C `uint64_t`).
    I64,
    /// A double.
    F64,
}

impl AbiTy {
    /// The name in signatures shown to users (`i64`, `f64`).
    pub const fn name(self) -> &'static str {
        match self {
            AbiTy::I8 => "i8",
            AbiTy::I32 => "i32",
            AbiTy::I64 => "i64",
            AbiTy::F64 => "f64",
        }
    }

    /// The C type of the support library's declarations.
    pub const fn c_type(self) -> &'static str {
        match self {
            AbiTy::I8 => "uint8_t",
            AbiTy::I32 => "uint32_t",
            AbiTy::I64 => "uint64_t",
            AbiTy::F64 => "double",
        }
    }
}

#[doc(hidden)]
#[macro_export]
macro_rules! __entry_ir_name {
    () => {
        None
    };
    ($name:literal) => {
        Some($name)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __entry_needs_rt {
    (rt) => {
        true
    };
    (-) => {
        false
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __entry_ret {
    () => {
        None
    };
    ($r:ident) => {
        Some(AbiTy::$r)
    };
}

macro_rules! define_entries {
    ($(
        $(#[$attr:meta])*
        $variant:ident $sym:ident [$($ir:literal)?] $rt:tt ($($p:ident),*) $(-> $r:ident)?;
    )*) => {
        /// Every entry point and built-in of `foreach_entry!`.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub enum Entry {
            $( $(#[$attr])* $variant, )*
        }

        impl Entry {
            /// Every entry, in table order.
            pub const ALL: &'static [Entry] = &[$(Entry::$variant),*];

            /// The linker symbol.
            pub const fn symbol(self) -> &'static str {
                match self { $(Entry::$variant => stringify!($sym),)* }
            }

            /// The IR name of a built-in (without `@`); `None` for an
            /// instrumentation entry point.
            pub const fn ir_name(self) -> Option<&'static str> {
                match self { $(Entry::$variant => $crate::__entry_ir_name!($($ir)?),)* }
            }

            /// Does it take the runtime pointer as a hidden first argument?
            pub const fn needs_rt(self) -> bool {
                match self { $(Entry::$variant => $crate::__entry_needs_rt!($rt),)* }
            }

            /// The parameter classes (without the runtime pointer).
            pub const fn params(self) -> &'static [AbiTy] {
                match self { $(Entry::$variant => &[$(AbiTy::$p),*],)* }
            }

            /// The result class, if any.
            pub const fn ret(self) -> Option<AbiTy> {
                match self {
                    $(Entry::$variant => $crate::__entry_ret!($($r)?),)*
                }
            }
        }
    };
}

foreach_entry!(define_entries);

/// A built-in host function (spec §7): an [`Entry`] with an IR name.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Builtin {
    /// The IR name (without `@`).
    pub name: &'static str,
    /// The linker symbol.
    pub symbol: &'static str,
    /// IR-visible parameters (the hidden runtime pointer is not listed).
    pub params: &'static [AbiTy],
    /// The result, if any.
    pub ret: Option<AbiTy>,
    /// Takes the runtime as a hidden first argument.
    pub needs_rt: bool,
    /// Its row of the table.
    pub entry: Entry,
}

const fn builtin_of(e: Entry) -> Option<Builtin> {
    match e.ir_name() {
        Some(name) => Some(Builtin {
            name,
            symbol: e.symbol(),
            params: e.params(),
            ret: e.ret(),
            needs_rt: e.needs_rt(),
            entry: e,
        }),
        None => None,
    }
}

/// [`Entry::builtin`] of every entry, by `Entry as usize`.
static BUILTIN_OF: [Option<Builtin>; Entry::ALL.len()] = {
    let mut t = [None; Entry::ALL.len()];
    let mut i = 0;
    while i < t.len() {
        t[i] = builtin_of(Entry::ALL[i]);
        i += 1;
    }
    t
};

impl Entry {
    /// The built-in view of this entry, if it has an IR name.
    pub fn builtin(self) -> Option<&'static Builtin> {
        BUILTIN_OF[self as usize].as_ref()
    }
}

/// Every built-in host function of spec §7, in table order.
pub fn builtins() -> impl Iterator<Item = &'static Builtin> {
    BUILTIN_OF.iter().flatten()
}

/// Looks a built-in up by its IR name.
pub fn builtin(name: &str) -> Option<&'static Builtin> {
    builtins().find(|b| b.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_table_is_consistent() {
        let symbols: HashSet<_> = Entry::ALL.iter().map(|e| e.symbol()).collect();
        assert_eq!(symbols.len(), Entry::ALL.len(), "a symbol is listed twice");
        for (i, &e) in Entry::ALL.iter().enumerate() {
            assert_eq!(e as usize, i);
            assert!(e.symbol().starts_with("gl_"), "{e:?}");
            // Instrumentation entry points all take the runtime.
            assert!(e.ir_name().is_some() || e.needs_rt(), "{e:?}");
            // IR-visible built-ins pass only i64/ptr and f64 (spec §7).
            if let Some(b) = e.builtin() {
                assert!(b
                    .params
                    .iter()
                    .chain(&b.ret)
                    .all(|t| matches!(t, AbiTy::I64 | AbiTy::F64)));
                assert_eq!(b.symbol, format!("gl_{}", b.name));
            }
        }
        assert_eq!(builtins().count(), 14);
        assert_eq!(
            builtin("load_attr_slow").map(|b| b.entry),
            Some(Entry::LoadAttrSlow)
        );
        assert_eq!(Entry::CheckLive.ret(), Some(AbiTy::I8));
        assert_eq!(Entry::Watch.ret(), None);
        assert!(!Entry::Sin.needs_rt());
        assert_eq!(
            Entry::ReportDict.params(),
            &[AbiTy::I32, AbiTy::I64, AbiTy::I64]
        );
        assert!(builtin("report_dict").is_none() && builtin("gl_sin").is_none());
    }
}
