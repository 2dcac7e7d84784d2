//! The frame loop: runs the top frame's instructions until it calls or
//! returns, dispatching each by kind — the pure value ops here, memory and
//! object ops to `memory`, adstacks to `adstack`, calls to `calls`.

use crate::frame::{fault, Cx, Frame, Step};
use crate::values::{
    conv, fcmp, fconst, float_binop, icmp, int_binop, int_div, mask, unary, DivFault,
};
use crate::{InterpError, Interpreter};
use guardlift_ir::literal::norm_int;
use guardlift_ir::{InstKind, Value};
use guardlift_runtime::internals::*;

/// How the top frame stopped running.
// As `Step`: the frame of `Call` goes onto the frame stack, unboxed.
#[allow(clippy::large_enum_variant)]
enum Exit {
    /// It calls this frame.
    Call(Frame),
    /// It returns this value to its `ret_dst`.
    Return(Option<u64>, Option<Value>),
}

impl<'m> Interpreter<'m> {
    /// Runs the top frame until it calls, returns or fails. `Some(r)` is the
    /// entry function's result.
    pub(crate) fn step_frame(
        &self,
        stack: &mut Vec<Frame>,
    ) -> Result<Option<Option<u64>>, InterpError> {
        // Watchpoints name the IR frames of a write (empty when off).
        let watch = self.ir_callers(stack);
        let Some((fr, callers)) = stack.split_last_mut() else {
            return Ok(Some(None));
        };
        let func = self.m.func(fr.func);
        let exit = loop {
            let block = &func.blocks[fr.block];
            let Some(inst) = block.insts.get(fr.ip) else {
                return fault(block.loc, "block without terminator");
            };
            let cx = Cx {
                callers,
                watch: &watch,
                func,
                inst,
                at: (fr.block, fr.ip),
            };
            fr.ip += 1;
            let epoch = self.hoist_epoch(fr, cx.at);
            if self.entries.is_some() {
                self.check_entry_claim(fr, &cx)?;
                self.live_passed.set(false);
            }
            let step = self.exec(fr, &cx)?;
            if self.rt.host_fault_ends_run() {
                // A host function called here crashed (what the JIT
                // reports at this call and dies of).
                return Err(InterpError::HostFault {
                    loc: inst.loc,
                    backtrace: Vec::new(),
                });
            }
            self.check_hoist(fr.func, cx.at.0, epoch, inst.loc)?;
            let live = self.live_passed.get();
            if inst.kind.is_branch() {
                self.track_fixed(fr, cx.at.0, inst.loc)?;
            }
            match step {
                Step::Set(r) => {
                    if let Some(d) = inst.result {
                        fr.vals[d.0 as usize] = r;
                    }
                    self.track_vouch(fr, inst, live);
                }
                Step::Next => self.track_vouch(fr, inst, live),
                Step::Call(mut nf) => {
                    // What a call of a claimed loop runs is claimed too.
                    nf.claimed = epoch.is_some();
                    nf.fixed_params = self.fixed_params(fr, inst, &nf);
                    if self.entries.is_some() {
                        self.entry_claims(fr, inst, &mut nf);
                        self.track_vouch(fr, inst, false);
                    }
                    break Exit::Call(nf);
                }
                Step::Return(r) => break Exit::Return(r, fr.ret_dst),
            }
        };
        match exit {
            Exit::Call(nf) => {
                stack.push(nf);
                Ok(None)
            }
            Exit::Return(r, dst) => {
                if let Some(done) = stack.pop() {
                    self.free_areas(&done);
                }
                match stack.last_mut() {
                    None => Ok(Some(r)),
                    Some(caller) => {
                        if let (Some(d), Some(r)) = (dst, r) {
                            caller.vals[d.0 as usize] = r;
                        }
                        Ok(None)
                    }
                }
            }
        }
    }

    /// Runs one instruction of the top frame `fr`.
    fn exec(&self, fr: &mut Frame, cx: &Cx<'_, 'm>) -> Result<Step, InterpError> {
        let v = |x: Value| fr.val(x);
        let ty = |x: Value| cx.func.ty(x);
        Ok(Step::Set(match &cx.inst.kind {
            InstKind::Iconst { ty, imm } => norm_int(*ty, *imm as u64),
            InstKind::Fconst { ty, value } => fconst(*ty, *value),
            InstKind::Binary { op, a, b } if op.is_float() => {
                float_binop(*op, ty(*a), v(*a), v(*b))
            }
            InstKind::Binary { op, a, b } if op.is_division() => {
                match int_div(*op, ty(*a), v(*a), v(*b)) {
                    Ok(r) => r,
                    Err(e) => {
                        let kind = match e {
                            DivFault::ByZero => guardlift_runtime::ReportKind::DivByZero,
                            DivFault::Overflow => guardlift_runtime::ReportKind::IntOverflow,
                        };
                        return Err(InterpError::Arith {
                            loc: cx.inst.loc,
                            kind,
                            backtrace: Vec::new(),
                        });
                    }
                }
            }
            InstKind::Binary { op, a, b } => int_binop(*op, ty(*a), v(*a), v(*b)),
            InstKind::Unary { op, a } => unary(*op, ty(*a), v(*a)),
            InstKind::Icmp { cc, a, b } => icmp(*cc, ty(*a), v(*a), v(*b)) as u64,
            InstKind::Fcmp { cc, a, b } => fcmp(*cc, ty(*a), v(*a), v(*b)) as u64,
            InstKind::Select { cond, a, b } => {
                if mask(ty(*cond), v(*cond)) != 0 {
                    v(*a)
                } else {
                    v(*b)
                }
            }
            InstKind::Conv { op, ty: to, a } => conv(*op, ty(*a), *to, v(*a)),
            InstKind::Jump { dest } => {
                self.branch(fr, cx.func, dest);
                return Ok(Step::Next);
            }
            InstKind::Brif {
                cond,
                then_dest,
                else_dest,
            } => {
                let c = mask(ty(*cond), v(*cond)) != 0;
                self.branch(fr, cx.func, if c { then_dest } else { else_dest });
                return Ok(Step::Next);
            }
            InstKind::BrTable {
                index,
                default,
                table,
            } => {
                // Unsigned (spec §3.1): an index past the table, however
                // large, takes the default.
                let i = usize::try_from(v(*index)).unwrap_or(usize::MAX);
                self.branch(fr, cx.func, table.get(i).unwrap_or(default));
                return Ok(Step::Next);
            }
            InstKind::Return { value } => return Ok(Step::Return(value.map(v))),
            InstKind::Call { .. } => return self.exec_call(fr, cx),
            InstKind::CallIndirect { .. } => return self.exec_call_indirect(fr, cx),
            InstKind::FuncAddr { callee } => crate::calls::func_token(*callee),
            InstKind::StackAlloc { size } => self.stack_alloc(fr, cx, *size)?,
            InstKind::Watch { obj } => {
                self.rt.watch(v(*obj));
                return Ok(Step::Next);
            }
            InstKind::Load { .. }
            | InstKind::Store { .. }
            | InstKind::DictSlotLoad { .. }
            | InstKind::DictSlotStore { .. }
            | InstKind::LoadAttr { .. }
            | InstKind::StoreAttr { .. } => return self.exec_mem(fr, cx),
            InstKind::AdAlloc { .. }
            | InstKind::AdPush { .. }
            | InstKind::AdPop { .. }
            | InstKind::AdTop { .. }
            | InstKind::AdTopAdj { .. }
            | InstKind::AdAccAdj { .. }
            | InstKind::AdLen { .. } => return self.exec_adstack(fr, cx),
        }))
    }
}
