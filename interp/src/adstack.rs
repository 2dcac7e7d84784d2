//! Adstacks: the buffers (laid out by `guardlift_runtime::adstack`, as
//! compiled code lays them out), the `adstack.*` instructions with their
//! overflow and underflow checks, and the run-time verification of the
//! checks `guardlift_ir::elide` claims cannot fail.

use crate::adbuf::AdBuf;
use crate::frame::{fault, Cx, Frame, Step};
use crate::values::{canon_elem, f32v, f64v, fbits32};
use crate::{InterpError, Interpreter};
use guardlift_ir::analysis::adstack_capacities;
use guardlift_ir::elide::redundant_adstack_checks;
use guardlift_ir::{FuncId, Inst, InstKind, Module, SrcLoc};
use guardlift_runtime::adstack::{self, AdElem};
use guardlift_runtime::{Observed, ReportKind};
use std::collections::HashSet;

/// The buffer behind handle `h` of frame `fr`.
fn adbuf(fr: &mut Frame, h: u64, loc: SrcLoc) -> Result<&mut AdBuf, InterpError> {
    match fr.stacks.get_mut(h as usize) {
        Some(b) => Ok(b),
        None => fault(loc, "adstack handle used before its adstack.alloc ran"),
    }
}

/// Per function, the adstack checks claimed not to fail.
pub(crate) fn elision_claims(m: &Module) -> Vec<HashSet<(u32, u32)>> {
    m.functions
        .iter()
        .map(|f| match adstack_capacities(f) {
            Ok(caps) => redundant_adstack_checks(f, &caps),
            Err(_) => HashSet::new(),
        })
        .collect()
}

impl<'m> Interpreter<'m> {
    /// The adstack check at `at` of `func` fails: was it claimed not to?
    fn check_elision(
        &self,
        func: FuncId,
        at: (usize, usize),
        loc: SrcLoc,
    ) -> Result<(), InterpError> {
        let at = (at.0 as u32, at.1 as u32);
        if !self
            .elision
            .as_ref()
            .and_then(|c| c.get(func.0 as usize))
            .is_some_and(|c| c.contains(&at))
        {
            return Ok(());
        }
        let msg = format!(
            "@{}: the adstack check at block {} inst {} was elided as one that cannot fail, and it fails",
            self.m.func(func).name, at.0, at.1
        );
        self.claim_refuted(loc, msg)
    }

    /// Runs an `adstack.*` instruction of the top frame `fr`.
    pub(crate) fn exec_adstack(&self, fr: &mut Frame, cx: &Cx) -> Result<Step, InterpError> {
        let (callers, inst, at) = (cx.callers, cx.inst, cx.at);
        let loc = inst.loc;
        match &inst.kind {
            InstKind::AdAlloc { elem, capacity } => {
                let idx = match fr.alloc_slot.get(&at) {
                    Some(&i) => {
                        fr.stacks[i].set_len(0);
                        i
                    }
                    None => {
                        fr.stacks.push(AdBuf::new(*elem, *capacity));
                        fr.alloc_slot.insert(at, fr.stacks.len() - 1);
                        fr.stacks.len() - 1
                    }
                };
                Ok(Step::Set(idx as u64))
            }
            InstKind::AdPush { stack, value } => {
                let (h, x) = (fr.val(*stack), fr.val(*value));
                self.ad_push(fr, callers, inst, at, h, x)
            }
            InstKind::AdLen { stack } => {
                let h = fr.val(*stack);
                Ok(Step::Set(adbuf(fr, h, loc)?.len()))
            }
            _ => self.ad_top(fr, callers, inst, at),
        }
    }

    /// `adstack.push`, with its overflow check.
    fn ad_push(
        &self,
        fr: &mut Frame,
        callers: &[Frame],
        inst: &Inst,
        at: (usize, usize),
        h: u64,
        x: u64,
    ) -> Result<Step, InterpError> {
        let (loc, func) = (inst.loc, fr.func);
        let buf = adbuf(fr, h, loc)?;
        let (n, cap) = (buf.len(), buf.cap);
        if n >= cap as u64 {
            let Some(site) = inst.site else {
                return fault(loc, format!("adstack overflow in uninstrumented code (len {n}, capacity {cap}): undefined behaviour"));
            };
            self.check_elision(func, at, loc)?;
            let obs = Observed::Adstack {
                capacity: cap as u64,
                len: n,
            };
            self.report(callers, ReportKind::AdstackOverflow, site.0, obs)?;
            return Ok(Step::Next);
        }
        let eb = buf.elem.bytes();
        buf.wr(adstack::primal_offset(buf.elem, n), eb, x);
        buf.wr(adstack::adjoint_offset(buf.elem, n), eb, 0);
        buf.set_len(n + 1);
        Ok(Step::Next)
    }

    /// `adstack.pop`, `.top`, `.top_adj`, `.acc_adj`: the ops on the top
    /// entry, with their underflow check.
    fn ad_top(
        &self,
        fr: &mut Frame,
        callers: &[Frame],
        inst: &Inst,
        at: (usize, usize),
    ) -> Result<Step, InterpError> {
        let loc = inst.loc;
        let (s, delta) = match &inst.kind {
            InstKind::AdAccAdj { stack, delta } => (*stack, fr.val(*delta)),
            InstKind::AdPop { stack }
            | InstKind::AdTop { stack }
            | InstKind::AdTopAdj { stack } => (*stack, 0),
            _ => return Err(internal(loc, "not an adstack op")),
        };
        let (func, h) = (fr.func, fr.val(s));
        let b = adbuf(fr, h, loc)?;
        let (n, cap) = (b.len(), b.cap);
        if n == 0 {
            let Some(site) = inst.site else {
                return fault(
                    loc,
                    format!(
                        "{} on an empty adstack in uninstrumented code: undefined behaviour",
                        inst.kind.opcode()
                    ),
                );
            };
            self.check_elision(func, at, loc)?;
            let obs = Observed::Adstack {
                capacity: cap as u64,
                len: 0,
            };
            self.report(callers, ReportKind::AdstackUnderflow, site.0, obs)?;
            return Ok(Step::Set(0));
        }
        let (e, eb) = (b.elem, b.elem.bytes());
        Ok(match &inst.kind {
            InstKind::AdPop { .. } => {
                b.set_len(n - 1);
                Step::Next
            }
            InstKind::AdTop { .. } => {
                Step::Set(canon_elem(e, b.rd(adstack::primal_offset(e, n - 1), eb)))
            }
            InstKind::AdTopAdj { .. } => {
                Step::Set(canon_elem(e, b.rd(adstack::adjoint_offset(e, n - 1), eb)))
            }
            _ => {
                let off = adstack::adjoint_offset(e, n - 1);
                let old = b.rd(off, eb);
                let new = match e {
                    AdElem::F32 => fbits32(f32v(old) + f32v(delta)),
                    AdElem::F64 => (f64v(old) + f64v(delta)).to_bits(),
                    AdElem::I64 => old.wrapping_add(delta),
                };
                b.wr(off, eb, new);
                Step::Next
            }
        })
    }
}

fn internal(loc: SrcLoc, msg: &str) -> InterpError {
    InterpError::Internal {
        loc,
        msg: msg.into(),
    }
}
