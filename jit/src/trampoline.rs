//! Dynamic-call trampolines: one small function per IR function, compiled
//! on first use into the same JIT module, that unpacks raw 64-bit argument
//! words, calls the function with its native signature and packs the result
//! (what [`crate::CompiledModule::call_dynamic`] calls).

use crate::engine::FuncInfo;
use crate::error::JitError;
use crate::lower;
use cranelift_codegen::ir::{
    types, AbiParam, ExtFuncData, ExternalName, InstBuilder, MemFlagsData, Signature,
    UserExternalName, UserFuncName,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::Module as _;

/// The code size and unwind info of a trampoline, for profilers and
/// debuggers (`crate::debuginfo`) and the unwinder (`crate::unwind`).
pub(crate) type Seen = (usize, Option<cranelift_codegen::isa::unwind::UnwindInfo>);

/// `extern "C" fn(args: *const u64, ret: *mut u64)` that unpacks raw bits,
/// calls `f`, and packs its result; its address, and with `named` or
/// `unwind` its [`Seen`] (`named`: declared under the name our perf map
/// gives it, for profilers and debuggers; `unwind`: for the unwinder).
pub(crate) fn build_trampoline(
    jm: &mut JITModule,
    f: &FuncInfo,
    named: bool,
    unwind: bool,
) -> Result<(usize, Option<Seen>), JitError> {
    let cc = jm.isa().default_call_conv();
    let mut sig = Signature::new(cc);
    sig.params.push(AbiParam::new(types::I64));
    sig.params.push(AbiParam::new(types::I64));
    let id = if named {
        // Named as in our perf map (see `engine::build`'s `declare`).
        let name = format!("guardlift:[trampoline @{}]", f.name);
        jm.declare_function(&name, cranelift_module::Linkage::Local, &sig)
    } else {
        jm.declare_anonymous_function(&sig)
    }
    .map_err(|e| JitError::module(format!("declaring the trampoline of @{}", f.name), e))?;
    let mut ctx = jm.make_context();
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let callee_sig = b.import_signature(lower::ir_signature(cc, &f.params, f.ret));
        let name = b.func.declare_imported_user_function(UserExternalName {
            namespace: 0,
            index: f.id.as_u32(),
        });
        let callee = b.import_function(ExtFuncData {
            name: ExternalName::user(name),
            signature: callee_sig,
            colocated: false,
            patchable: false,
        });
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let (args_p, ret_p) = (b.block_params(entry)[0], b.block_params(entry)[1]);
        let flags = MemFlagsData::trusted();
        let mut args = Vec::with_capacity(f.params.len());
        for (k, &t) in f.params.iter().enumerate() {
            let raw = b.ins().load(types::I64, flags, args_p, (k * 8) as i32);
            let v = match lower::cl_type(t) {
                types::I8 => b.ins().ireduce(types::I8, raw),
                types::I32 => b.ins().ireduce(types::I32, raw),
                types::F32 => {
                    let w = b.ins().ireduce(types::I32, raw);
                    b.ins().bitcast(types::F32, MemFlagsData::new(), w)
                }
                types::F64 => b.ins().bitcast(types::F64, MemFlagsData::new(), raw),
                _ => raw,
            };
            args.push(v);
        }
        let call = b.ins().call(callee, &args);
        if let (Some(t), Some(&r)) = (f.ret, b.inst_results(call).first()) {
            let bits = match lower::cl_type(t) {
                types::I8 | types::I32 => b.ins().sextend(types::I64, r),
                types::F32 => {
                    let w = b.ins().bitcast(types::I32, MemFlagsData::new(), r);
                    b.ins().uextend(types::I64, w)
                }
                types::F64 => b.ins().bitcast(types::I64, MemFlagsData::new(), r),
                _ => r,
            };
            b.ins().store(flags, bits, ret_p, 0);
        }
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(jm.isa().frontend_config());
    }
    jm.define_function(id, &mut ctx)
        .map_err(|e| JitError::module(format!("the trampoline of @{}", f.name), e))?;
    let seen = match ctx.compiled_code() {
        Some(code) if named || unwind => {
            // None when Cranelift cannot describe the frame: left out.
            let unwind = code.create_unwind_info(jm.isa()).ok().flatten();
            Some((code.code_info().total_size as usize, unwind))
        }
        _ => None,
    };
    jm.finalize_definitions()
        .map_err(|e| JitError::module(format!("finalizing the trampoline of @{}", f.name), e))?;
    Ok((jm.get_finalized_function(id) as usize, seen))
}
