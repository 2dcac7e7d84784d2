//! The module-local stubs generated code calls runtime functions through:
//! what they are ([`Stub`]), their signatures and calling conventions, and
//! their bodies ([`Lowerer::define_stubs`]).

use super::abi::entry_signature;
use super::{Lowerer, RtRef, RUNTIME_SYMBOL};
use crate::error::JitError;
use cranelift_codegen::ir::{
    self as cl, types, AbiParam, InstBuilder, MemFlagsData, Signature, UserFuncName,
};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{DataId, FuncId as ClFuncId, Linkage, Module as ClModule};
use guardlift_abi::{Entry, TRAP_VALUE_COUNT};

/// A module-local function that generated code calls instead of a runtime
/// function, so that the call site needs neither the runtime pointer nor
/// (for reports) any register: the hot code around a guard or an attribute
/// access keeps its registers, and no long-lived runtime-pointer value is
/// hoisted into loops for the sake of cold blocks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Stub {
    /// A report entry point, called from a guard's cold block. Cranelift's
    /// `preserve_all` convention: the call clobbers no register (SysV has
    /// no callee-saved vector registers, so every float live across a guard
    /// would otherwise be spilled on the hot path); the stub saves what the
    /// entry point may clobber. No result: the verdict is not needed (abort
    /// mode does not return when the process is to end; otherwise the
    /// recover path runs).
    Report(Entry),
    /// A check entry point that returns a verdict ([`Entry::CheckLive`],
    /// [`Entry::CheckMem`], ...), with the report stubs' convention and no
    /// result: Cranelift 0.135's `preserve_all` restores the return
    /// register too, so the stub stores the verdict through a pointer, its
    /// last parameter (a slot of the caller's frame, which reads it back).
    /// The call then clobbers no register, as a report's: a float live
    /// across a check of a loop would otherwise be spilled on its hot path.
    Check(Entry),
    /// A built-in slow path (`load_attr_slow`, `store_attr_slow`), with the
    /// platform convention and the built-in's result.
    Slow(Entry),
    /// Trap mode's hand-off (`preserve_all`, no result): `(token, v0, v1,
    /// v2)` into the runtime's trap scratch area — owner token, fence,
    /// values, then `ready = token` (sequentially consistent). The guard's
    /// cold block calls it and then executes its own trap instruction.
    TrapScratch,
}

/// The report and check stubs' convention on every target.
pub const REPORT_STUB_CONV: CallConv = CallConv::PreserveAll;

impl Stub {
    /// The runtime function's parameters without the runtime pointer;
    /// `cc` is the platform's convention (slow paths); reports and checks
    /// take [`REPORT_STUB_CONV`].
    pub fn signature(self, cc: CallConv) -> Signature {
        let mut s = match self {
            Stub::Report(e) => {
                let mut s = entry_signature(REPORT_STUB_CONV, e);
                s.returns.clear();
                s
            }
            Stub::Check(e) => {
                let mut s = entry_signature(REPORT_STUB_CONV, e);
                s.returns.clear();
                s.params.push(AbiParam::new(types::I64));
                s
            }
            Stub::Slow(e) => entry_signature(cc, e),
            Stub::TrapScratch => {
                let mut s = Signature::new(CallConv::PreserveAll);
                // (runtime, token, v0, v1, v2)
                let n = 2 + TRAP_VALUE_COUNT;
                s.params
                    .extend(std::iter::repeat_n(AbiParam::new(types::I64), n));
                s
            }
        };
        s.params.remove(0);
        s
    }
}

/// The body of [`Stub::TrapScratch`]: tag the runtime's trap scratch area
/// with `token` (owner), fence, store `vals`, publish `ready = token`.
fn store_trap_scratch(
    b: &mut FunctionBuilder,
    rt: cl::Value,
    token: cl::Value,
    vals: &[cl::Value],
) {
    use guardlift_abi::{
        TRAP_OWNER_OFFSET, TRAP_READY_OFFSET, TRAP_SCRATCH_OFFSET, TRAP_VALUES_OFFSET,
    };
    let flags = MemFlagsData::trusted();
    b.ins()
        .store(flags, token, rt, TRAP_SCRATCH_OFFSET + TRAP_OWNER_OFFSET);
    b.ins().fence();
    for (i, &v) in vals.iter().enumerate() {
        let off = TRAP_SCRATCH_OFFSET + TRAP_VALUES_OFFSET + 8 * i as i32;
        b.ins().store(flags, v, rt, off);
    }
    let ready = b
        .ins()
        .iadd_imm_s(rt, (TRAP_SCRATCH_OFFSET + TRAP_READY_OFFSET) as i64);
    b.ins().atomic_store(flags, token, ready);
}

impl Lowerer<'_> {
    /// The stub for `st`, declared on first use (defined by
    /// [`Lowerer::define_stubs`]).
    pub(super) fn stub<M: ClModule + ?Sized>(
        &mut self,
        m: &mut M,
        st: Stub,
    ) -> Result<ClFuncId, JitError> {
        if let Some(&(_, id)) = self.stubs.iter().find(|(x, _)| *x == st) {
            return Ok(id);
        }
        let report_cc = REPORT_STUB_CONV;
        let sig = st.signature(self.call_conv);
        let id = if self.named_stubs {
            let name = format!("guardlift:[stub {st:?}]");
            m.declare_function(&name, cranelift_module::Linkage::Local, &sig)
        } else {
            m.declare_anonymous_function(&sig)
        }
        .map_err(|err| JitError::Codegen(format!("declaring the {st:?} stub: {err}")))?;
        self.stubs.push((st, id));
        let what = match st {
            Stub::Report(e) => format!("stub({report_cc}) -> {}", e.symbol()),
            Stub::Check(e) => format!("stub({report_cc}, verdict in memory) -> {}", e.symbol()),
            Stub::Slow(e) => format!("stub -> {}", e.symbol()),
            Stub::TrapScratch => "stub(preserve_all): trap scratch hand-off".to_string(),
        };
        self.stub_names.insert(id, what);
        Ok(id)
    }

    /// What stub `id` is, for listings (`stub(preserve_all) -> gl_report_dict`).
    pub fn stub_name(&self, id: ClFuncId) -> Option<String> {
        self.stub_names.get(&id).cloned()
    }

    /// Defines the bodies of the stubs the lowered functions use: each
    /// materializes the runtime pointer, calls the runtime function with
    /// the platform's convention and returns its result (if the stub has
    /// one). Call once, after the last [`Lowerer::lower_function`]. With
    /// [`StubInfo::Keep`], returns each stub's function, name, code size
    /// and unwind info (for profilers, debuggers and the unwinder); with
    /// [`StubInfo::Skip`], nothing.
    pub(crate) fn define_stubs<M: ClModule + ?Sized>(
        &mut self,
        m: &mut M,
        fctx: &mut FunctionBuilderContext,
        info: StubInfo,
    ) -> Result<Vec<StubCode>, JitError> {
        let mut out = Vec::new();
        let mut ctx = m.make_context();
        for (st, id) in std::mem::take(&mut self.stubs) {
            let sig = st.signature(self.call_conv);
            let target = match st {
                Stub::Report(e) | Stub::Check(e) | Stub::Slow(e) => {
                    Some(self.import(m, e.symbol(), &entry_signature(self.call_conv, e))?)
                }
                Stub::TrapScratch => None,
            };
            let rt_data = match self.rt {
                RtRef::Symbol => Some(self.runtime_data(m)?),
                RtRef::Const(_) => None,
            };
            ctx.func.signature = sig;
            ctx.func.name = UserFuncName::user(0, id.as_u32());
            let mut b = FunctionBuilder::new(&mut ctx.func, fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            b.seal_block(entry);
            let rt = match (self.rt, rt_data) {
                (RtRef::Const(p), _) => b.ins().iconst(types::I64, p as i64),
                (RtRef::Symbol, Some(d)) => {
                    let gv = super::far_data(m, d, b.func);
                    b.ins().symbol_value(types::I64, gv)
                }
                (RtRef::Symbol, None) => unreachable!("declared above"),
            };
            let params = b.block_params(entry).to_vec();
            let rets: Vec<cl::Value> = match (st, target) {
                (Stub::TrapScratch, _) => {
                    store_trap_scratch(&mut b, rt, params[0], &params[1..]);
                    vec![]
                }
                (Stub::Check(_), Some(target)) => {
                    // The last parameter is where the verdict goes.
                    let (out, params) = params.split_last().expect("the verdict pointer");
                    let mut args = vec![rt];
                    args.extend_from_slice(params);
                    let callee = m.declare_func_in_func(target, b.func);
                    let call = b.ins().call(callee, &args);
                    let verdict = b.inst_results(call).to_vec();
                    for v in verdict {
                        b.ins().store(MemFlagsData::trusted(), v, *out, 0);
                    }
                    vec![]
                }
                (_, Some(target)) => {
                    let mut args = vec![rt];
                    args.extend_from_slice(&params);
                    let callee = m.declare_func_in_func(target, b.func);
                    let call = b.ins().call(callee, &args);
                    match st {
                        Stub::Slow(_) => b.inst_results(call).to_vec(),
                        _ => vec![],
                    }
                }
                (_, None) => unreachable!("only the trap stub has no target"),
            };
            b.ins().return_(&rets);
            b.finalize(m.isa().frontend_config());
            m.define_function(id, &mut ctx)
                .map_err(|err| JitError::Codegen(format!("the {st:?} stub: {err:?}")))?;
            if info == StubInfo::Keep {
                if let Some(code) = ctx.compiled_code() {
                    // None when Cranelift cannot describe the frame: the
                    // stub is left out of the unwind tables, never an error.
                    let unwind = code.create_unwind_info(m.isa()).ok().flatten();
                    out.push(StubCode {
                        id,
                        name: format!("[stub {st:?}]"),
                        size: code.code_info().total_size as usize,
                        unwind,
                    });
                }
            }
            m.clear_context(&mut ctx);
        }
        Ok(out)
    }

    pub(super) fn runtime_data<M: ClModule + ?Sized>(
        &mut self,
        m: &mut M,
    ) -> Result<DataId, JitError> {
        if let Some(d) = self.rt_data {
            return Ok(d);
        }
        let d = m
            .declare_data(RUNTIME_SYMBOL, Linkage::Import, true, false)
            .map_err(|e| JitError::Link {
                loc: Default::default(),
                msg: format!("cannot import data symbol `{RUNTIME_SYMBOL}`: {e}"),
            })?;
        self.rt_data = Some(d);
        Ok(d)
    }
}

/// What [`Lowerer::define_stubs`] returns of the stubs it compiles.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum StubInfo {
    /// Nothing (object files; the JIT when no profiler, debugger or
    /// unwinder is told of its code).
    Skip,
    /// Each stub's [`StubCode`].
    Keep,
}

/// A compiled stub as profilers and debuggers see it
/// ([`Lowerer::define_stubs`] with [`StubInfo::Keep`]).
pub struct StubCode {
    /// Its function in the module.
    pub id: cranelift_module::FuncId,
    /// `[stub Slow(StoreAttrSlow)]` and the like.
    pub name: String,
    /// Code size in bytes.
    pub size: usize,
    /// Cranelift's unwind info.
    pub unwind: Option<cranelift_codegen::isa::unwind::UnwindInfo>,
}
