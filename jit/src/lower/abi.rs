//! The ABI side of the lowering: Cranelift types and native signatures of IR
//! functions, host externs, built-ins and the runtime's instrumentation
//! entry points, and the binding of IR externs to built-ins or host symbols.

use crate::error::JitError;
use cranelift_codegen::ir::{self as cl, types, AbiParam, Signature};
use cranelift_codegen::isa::CallConv;
use guardlift_abi::adstack::AdElem;
use guardlift_abi::{AbiTy, Builtin, Entry};
use guardlift_ir::Type;

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
        AbiTy::I8 => types::I8,
        AbiTy::I32 => types::I32,
        AbiTy::I64 => types::I64,
        AbiTy::F64 => types::F64,
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

/// The native signature of entry point or built-in `e`, derived from its
/// row of [`guardlift_abi::foreach_entry!`] (the runtime pointer first when
/// it takes one). No signature of a runtime function is written anywhere
/// else in the JIT.
pub fn entry_signature(cc: CallConv, e: Entry) -> Signature {
    let mut s = Signature::new(cc);
    if e.needs_rt() {
        s.params.push(AbiParam::new(types::I64));
    }
    s.params
        .extend(e.params().iter().map(|&t| AbiParam::new(abi_cl(t))));
    s.returns.extend(e.ret().map(|t| AbiParam::new(abi_cl(t))));
    s
}

// ---- extern resolution -------------------------------------------------------

/// What an IR extern is bound to.
#[derive(Clone, Debug)]
pub enum ExternBinding {
    /// A built-in of spec §7: call `symbol` (with the runtime pointer when `needs_rt`).
    Builtin(&'static Builtin),
    /// A host function under this linker symbol, called as declared.
    Host {
        /// The linker symbol.
        symbol: String,
    },
}

/// Binds every extern of the module: a built-in name to its built-in
/// (the declared signature checked by the IR crate's
/// [`guardlift_ir::ExternDecl::resolve_builtin`], against the entry table), any other name to what `host` returns
/// (the linker symbol), or a link error `LINE:COL: undefined symbol @name`.
pub fn resolve_externs(
    m: &guardlift_ir::Module,
    mut host: impl FnMut(&str) -> Option<String>,
) -> Result<Vec<ExternBinding>, JitError> {
    let mut out = Vec::with_capacity(m.externs.len());
    for e in &m.externs {
        let builtin = e.resolve_builtin().map_err(|d| JitError::Link {
            loc: d.loc,
            msg: d.msg,
        })?;
        if let Some(b) = builtin {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every runtime function's signature is written once, in the table:
    /// the JIT's Cranelift signature of each entry is its row, and no
    /// library source outside the table spells an entry's symbol.
    #[test]
    fn every_entry_signature_is_derived_from_the_table() {
        for &e in Entry::ALL {
            let sig = entry_signature(CallConv::SystemV, e);
            let mut want: Vec<cl::Type> = Vec::new();
            if e.needs_rt() {
                want.push(types::I64);
            }
            want.extend(e.params().iter().map(|&t| abi_cl(t)));
            let got: Vec<cl::Type> = sig.params.iter().map(|p| p.value_type).collect();
            assert_eq!(got, want, "{e:?}");
            let ret: Vec<cl::Type> = sig.returns.iter().map(|p| p.value_type).collect();
            assert_eq!(ret, e.ret().map(abi_cl).into_iter().collect::<Vec<_>>());
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        for krate in [
            "abi",
            "runtime",
            "ir",
            "instrument",
            "interp",
            "jit",
            "aot",
            "capi",
            "cli",
        ] {
            collect_rs(&root.join(krate).join("src"), &mut files);
        }
        assert!(files.len() > 40, "found only {} sources", files.len());
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            for &e in Entry::ALL {
                let quoted = format!("\"{}\"", e.symbol());
                assert!(
                    !text.contains(&quoted) || f.ends_with("abi/src/entry.rs"),
                    "{} spells {quoted}: take it from guardlift_abi::Entry",
                    f.display()
                );
            }
        }
    }

    fn collect_rs(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for ent in rd.flatten() {
            let p = ent.path();
            if p.is_dir() {
                collect_rs(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
}
