//! The ABI side of the lowering: Cranelift types and native signatures of IR
//! functions, host externs, built-ins and the runtime's instrumentation
//! entry points, and the binding of IR externs to built-ins or host symbols.

use crate::error::JitError;
use cranelift_codegen::ir::{self as cl, types, AbiParam, Signature};
use cranelift_codegen::isa::CallConv;
use guardlift_ir::Type;
use guardlift_runtime::abi::{self, AbiTy, Builtin};
use guardlift_runtime::adstack::AdElem;

/// The Cranelift type of an IR type (`ptr` and adstack handles are addresses).
pub fn cl_type(t: Type) -> cl::Type {
    match t {
        Type::I8 => types::I8,
        Type::I32 => types::I32,
        Type::I64 | Type::Ptr | Type::AdStack(_) => types::I64,
        Type::F32 => types::F32,
        Type::F64 => types::F64,
    }
}

pub(super) fn elem_type(e: AdElem) -> cl::Type {
    cl_type(Type::of_elem(e))
}

fn abi_cl(t: AbiTy) -> cl::Type {
    match t {
        AbiTy::I64 => types::I64,
        AbiTy::F64 => types::F64,
    }
}

/// The ABI class an IR type passes as to a built-in, if any.
pub fn abi_class(t: Type) -> Option<AbiTy> {
    match t {
        Type::I64 | Type::Ptr => Some(AbiTy::I64),
        Type::F64 => Some(AbiTy::F64),
        _ => None,
    }
}

/// The native signature of an IR function or host extern.
///
/// `i8` parameters and results travel sign-extended to 32 bits, as C
/// compilers (and Rust's `extern "C"`) expect on x86-64.
pub fn ir_signature(cc: CallConv, params: &[Type], ret: Option<Type>) -> Signature {
    let param = |t: Type| {
        let p = AbiParam::new(cl_type(t));
        if t == Type::I8 {
            p.sext()
        } else {
            p
        }
    };
    let mut s = Signature::new(cc);
    s.params.extend(params.iter().map(|&t| param(t)));
    s.returns.extend(ret.map(param));
    s
}

/// The native signature of a built-in (with the hidden runtime pointer when it needs it).
pub fn builtin_signature(cc: CallConv, b: &Builtin) -> Signature {
    let mut s = Signature::new(cc);
    if b.needs_rt {
        s.params.push(AbiParam::new(types::I64));
    }
    s.params
        .extend(b.params.iter().map(|&t| AbiParam::new(abi_cl(t))));
    s.returns.extend(b.ret.map(|t| AbiParam::new(abi_cl(t))));
    s
}

/// The instrumentation entry points of [`guardlift_runtime::abi`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Entry {
    ReportDict,
    ReportAdstack,
    ClobberCheck,
    Watch,
    NoteSlotWrite,
    /// Trap mode's clobber test (no report).
    ClobberOverlaps,
    /// The bounds report (the check itself is inline).
    ReportBounds,
    /// The lifetime check of an object access (reports; 1 = go on).
    CheckLive,
    /// The lifetime check of a raw load or store (reports; 1 = go on).
    CheckMem,
    /// `call @obj_new` recording its allocation site.
    ObjNewAt,
    /// `call @obj_free` under the lifetime check (double / invalid free).
    ObjFreeAt,
}

impl Entry {
    pub const ALL: [Entry; 11] = [
        Entry::ReportDict,
        Entry::ReportAdstack,
        Entry::ClobberCheck,
        Entry::Watch,
        Entry::NoteSlotWrite,
        Entry::ClobberOverlaps,
        Entry::ReportBounds,
        Entry::CheckLive,
        Entry::CheckMem,
        Entry::ObjNewAt,
        Entry::ObjFreeAt,
    ];

    /// (symbol, address) in the runtime.
    pub fn symbol_and_addr(self) -> (&'static str, *const u8) {
        match self {
            Entry::ReportDict => abi::ENTRY_REPORT_DICT,
            Entry::ReportAdstack => abi::ENTRY_REPORT_ADSTACK,
            Entry::ClobberCheck => abi::ENTRY_CLOBBER_CHECK,
            Entry::Watch => abi::ENTRY_WATCH,
            Entry::NoteSlotWrite => abi::ENTRY_NOTE_SLOT_WRITE,
            Entry::ClobberOverlaps => abi::ENTRY_CLOBBER_OVERLAPS,
            Entry::ReportBounds => abi::ENTRY_REPORT_BOUNDS,
            Entry::CheckLive => abi::ENTRY_CHECK_LIVE,
            Entry::CheckMem => abi::ENTRY_CHECK_MEM,
            Entry::ObjNewAt => abi::ENTRY_OBJ_NEW_AT,
            Entry::ObjFreeAt => abi::ENTRY_OBJ_FREE_AT,
        }
    }

    pub fn symbol(self) -> &'static str {
        self.symbol_and_addr().0
    }

    /// Native signature (runtime pointer first).
    pub fn signature(self, cc: CallConv) -> Signature {
        use types::{I32, I64, I8};
        let (params, ret): (&[cl::Type], Option<cl::Type>) = match self {
            // gl_report_dict(rt, site: u32, obj, word) -> u32
            Entry::ReportDict => (&[I64, I32, I64, I64], Some(I32)),
            // gl_report_adstack(rt, site: u32, kind: u32, capacity: u64, len: u64) -> u32
            Entry::ReportAdstack => (&[I64, I32, I32, I64, I64], Some(I32)),
            // gl_clobber_check(rt, site: u32, addr: u64, width: u32, value: u64) -> u32
            Entry::ClobberCheck => (&[I64, I32, I64, I32, I64], Some(I32)),
            // gl_watch(rt, obj)
            Entry::Watch => (&[I64, I64], None),
            // gl_note_slot_write(rt, site: u32, obj, word)
            Entry::NoteSlotWrite => (&[I64, I32, I64, I64], None),
            // gl_clobber_overlaps(rt, addr: u64, width: u32) -> u32
            Entry::ClobberOverlaps => (&[I64, I64, I32], Some(I32)),
            // gl_report_bounds(rt, site: u32, obj, index: u64, capacity: u64) -> u32
            Entry::ReportBounds => (&[I64, I32, I64, I64, I64], Some(I32)),
            // gl_check_live(rt, obj, site: u32) -> u8
            Entry::CheckLive => (&[I64, I64, I32], Some(I8)),
            // gl_check_mem(rt, addr: u64, width: u32, site: u32) -> u8
            Entry::CheckMem => (&[I64, I64, I32, I32], Some(I8)),
            // gl_obj_new_at(rt, n: i64, site: u32) -> ptr
            Entry::ObjNewAt => (&[I64, I64, I32], Some(I64)),
            // gl_obj_free_at(rt, obj, site: u32)
            Entry::ObjFreeAt => (&[I64, I64, I32], None),
        };
        let mut s = Signature::new(cc);
        s.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        s.returns.extend(ret.map(AbiParam::new));
        s
    }
}

/// What an IR extern is bound to.
#[derive(Clone, Debug)]
pub enum ExternBinding {
    /// A built-in of spec §7: call `symbol` (with the runtime pointer when `needs_rt`).
    Builtin(&'static Builtin),
    /// A host function under this linker symbol, called as declared.
    Host { symbol: String },
}

fn sig_text(params: &[Type], ret: Option<Type>) -> String {
    let p: Vec<String> = params.iter().map(|t| t.to_string()).collect();
    match ret {
        Some(r) => format!("({}) -> {r}", p.join(", ")),
        None => format!("({})", p.join(", ")),
    }
}

fn abi_sig_text(b: &Builtin) -> String {
    let name = |t: &AbiTy| match t {
        AbiTy::I64 => "i64",
        AbiTy::F64 => "f64",
    };
    let p: Vec<&str> = b.params.iter().map(name).collect();
    match &b.ret {
        Some(r) => format!("({}) -> {}", p.join(", "), name(r)),
        None => format!("({})", p.join(", ")),
    }
}

/// Binds every extern of the module: a built-in name to its built-in
/// (checking the declared signature), any other name to what `host` returns
/// (the linker symbol), or a link error `LINE:COL: undefined symbol @name`.
pub fn resolve_externs(
    m: &guardlift_ir::Module,
    mut host: impl FnMut(&str) -> Option<String>,
) -> Result<Vec<ExternBinding>, JitError> {
    let mut out = Vec::with_capacity(m.externs.len());
    for e in &m.externs {
        if let Some(b) = abi::builtin(&e.name) {
            let params_ok = e.params.len() == b.params.len()
                && e.params
                    .iter()
                    .zip(b.params)
                    .all(|(&t, &a)| abi_class(t) == Some(a));
            let ret_ok = match (e.ret, b.ret) {
                (None, None) => true,
                (Some(t), Some(a)) => abi_class(t) == Some(a),
                _ => false,
            };
            if !(params_ok && ret_ok) {
                return Err(JitError::Link {
                    loc: e.loc,
                    msg: format!(
                        "extern @{} is declared {} but the built-in is {}",
                        e.name,
                        sig_text(&e.params, e.ret),
                        abi_sig_text(b)
                    ),
                });
            }
            out.push(ExternBinding::Builtin(b));
        } else if let Some(symbol) = host(&e.name) {
            out.push(ExternBinding::Host { symbol });
        } else {
            return Err(JitError::Link {
                loc: e.loc,
                msg: format!("undefined symbol @{}", e.name),
            });
        }
    }
    Ok(out)
}
