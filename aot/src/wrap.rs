//! The module as it is compiled for a target: every IR function renamed
//! under [`FUNC_PREFIX`] (so `@main`, `@printf` or `@sin` cannot clash with
//! the runtime library, the generated `main` or libc in a static link), plus the entry wrapper
//! [`START_SYMBOL`], written in guardlift IR and appended after the existing
//! functions so that site ids and function ids do not move.
//!
//! ```text
//! fn @__gl_start(%args: ptr, %ret: ptr) {
//! entry:
//!     %a0 = load.i64 %args, 0        ; raw bits, one u64 per argument
//!     %x0 = ireduce.i32 %a0          ; i8/i32: ireduce; f64: bitcast;
//!     ...                            ; f32: ireduce.i32 + bitcast.f32; ptr/i64 as is
//!     %r = call @__glir_main(%x0, ...)
//!     %b = sext.i64 %r               ; back to raw bits (literal.rs convention)
//!     store %b, %ret, 0
//!     return
//! }
//! ```

use crate::AotError;
use guardlift_ir::builder::ModuleBuilder;
use guardlift_ir::{ConvOp, Module, Type};

/// Prefix of every IR function's symbol in the target object.
pub const FUNC_PREFIX: &str = "__glir_";
/// The entry wrapper the runtime library's `gl_target_main` calls: `void __gl_start(uint64_t *args, uint64_t *ret)`.
pub const START_SYMBOL: &str = "__gl_start";

/// Renames the functions of `m` and appends the entry wrapper for `entry`.
/// The result verifies; its site table is `m`'s.
pub fn wrap_entry(m: &Module, entry: &str) -> Result<Module, AotError> {
    let fid = m
        .func_by_name(entry)
        .ok_or_else(|| AotError::Usage(format!("no function @{entry}")))?;
    let mut out = m.clone();
    for f in &mut out.functions {
        f.name = format!("{FUNC_PREFIX}{}", f.name);
    }
    let callee = out.func(fid);
    let params = callee.param_types();
    let ret = callee.ret;

    // Build the wrapper in a scratch module whose functions are
    // body-less stand-ins with the same ids and signatures, then move it over.
    let mut mb = ModuleBuilder::new(m.layout);
    for f in &out.functions {
        mb.declare_function(&f.name, &f.param_types(), f.ret);
    }
    let start = mb.declare_function(START_SYMBOL, &[Type::Ptr, Type::Ptr], None);
    {
        let mut b = mb.function(start);
        let block = b.create_block("entry");
        b.switch_to_block(block);
        let (args_p, ret_p) = (b.param(0), b.param(1));
        let mut argv = Vec::with_capacity(params.len());
        for (i, &t) in params.iter().enumerate() {
            let off = i32::try_from(8 * i)
                .map_err(|_| AotError::Usage("too many entry parameters".into()))?;
            let raw = b.load(Type::I64, args_p, off);
            let v = match t {
                Type::I8 | Type::I32 => b.conv(ConvOp::Ireduce, t, raw),
                Type::F64 => b.conv(ConvOp::Bitcast, Type::F64, raw),
                Type::F32 => {
                    let w = b.conv(ConvOp::Ireduce, Type::I32, raw);
                    b.conv(ConvOp::Bitcast, Type::F32, w)
                }
                Type::I64 | Type::Ptr => raw,
                Type::AdStack(_) => {
                    return Err(AotError::Usage(
                        "adstack handles cannot be entry parameters".into(),
                    ))
                }
            };
            argv.push(v);
        }
        let r = b.call(fid, &argv);
        if let (Some(t), Some(r)) = (ret, r) {
            let bits = match t {
                // Integers travel sign-extended (guardlift_ir::literal).
                Type::I8 | Type::I32 => b.conv(ConvOp::Sext, Type::I64, r),
                Type::F64 => b.conv(ConvOp::Bitcast, Type::I64, r),
                // f32: its bits, zero-extended.
                Type::F32 => {
                    let w = b.conv(ConvOp::Bitcast, Type::I32, r);
                    b.conv(ConvOp::Uext, Type::I64, w)
                }
                _ => r,
            };
            b.store(bits, ret_p, 0);
        }
        b.ret(None);
        b.finish();
    }
    let scratch = mb.into_module();
    let wrapper = scratch.functions[start.0 as usize].clone();
    out.functions.push(wrapper);
    guardlift_ir::verify_module(&out).map_err(|e| {
        AotError::Internal(format!(
            "the entry wrapper does not verify: {}",
            e.with_file("<wrapper>")
        ))
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapper_is_appended_and_keeps_sites() {
        let text = "layout phoenix\nextern fn @obj_new(i64) -> ptr\n\
            fn @helper(%x: f32) -> f32 {\nentry:\n    return %x\n}\n\
            fn @main(%a: i8, %b: f32, %c: f64, %d: ptr, %e: i32) -> i8 {\nentry:\n    \
            %o = call @obj_new(%d)\n    store_attr %o, 0, %d\n    return %a\n}\n";
        let m = guardlift_ir::parse_and_verify(text).unwrap();
        let mi = guardlift_instrument::instrument(&m, guardlift_instrument::CheckSet::ALL);
        let w = wrap_entry(&mi, "main").unwrap();
        assert_eq!(w.functions.len(), 3);
        assert_eq!(w.functions[0].name, "__glir_helper");
        assert_eq!(w.functions[1].name, "__glir_main");
        assert_eq!(w.functions[2].name, START_SYMBOL);
        assert_eq!(w.sites, mi.sites);
        let text = guardlift_ir::print_module(&w);
        assert!(text.contains("ireduce.i8"), "{text}");
        assert!(text.contains("bitcast.f32"), "{text}");
        assert!(text.contains("sext.i64"), "{text}");
        assert!(wrap_entry(&m, "nope").is_err());
    }
}
