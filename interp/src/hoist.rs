//! Verification of the loop-versioning analysis ([`guardlift_ir::hoist`])
//! while running: the JIT runs a clean loop without the lifetime checks and
//! `guard.watch`es of its invariant objects when they pass at the entry,
//! on the claim that no instruction of the loop frees or unwatches
//! anything. Both move the runtime's unwatch epoch, so an instruction of a
//! clean loop across which the epoch moves refutes the claim. A call of a
//! clean loop (a leaf callee's) runs in a frame of its own: that frame is
//! marked claimed ([`Frame::claimed`]), and so are the frames it calls, so
//! every instruction the callee runs is verified the same way.

use crate::frame::Frame;
use crate::{InterpError, Interpreter};
use guardlift_ir::hoist::clean_loops;
use guardlift_ir::{FuncId, Module, SrcLoc};

/// Per function, per block: is it in a clean loop?
pub(crate) type LoopClaims = Vec<Vec<bool>>;

/// The blocks of every function's clean loops.
pub(crate) fn loop_claims(m: &Module) -> LoopClaims {
    m.functions
        .iter()
        .map(|f| {
            let mut in_loop = vec![false; f.blocks.len()];
            for b in clean_loops(m, f).iter().flat_map(|l| l.blocks.iter()) {
                if let Some(x) = in_loop.get_mut(*b as usize) {
                    *x = true;
                }
            }
            in_loop
        })
        .collect()
}

impl Interpreter<'_> {
    /// Before an instruction of `block` of frame `fr` runs: the unwatch
    /// epoch if the block is claimed to be in a clean loop or the frame
    /// was called from one.
    pub(crate) fn hoist_epoch(&self, fr: &Frame, block: usize) -> Option<u64> {
        let loops = self.loops.as_ref()?;
        let claimed = fr.claimed
            || (loops.get(fr.func.0 as usize))
                .and_then(|b| b.get(block).copied())
                .unwrap_or(false);
        claimed.then(|| self.rt.unwatch_epoch())
    }

    /// After it ran: the epoch must not have moved.
    pub(crate) fn check_hoist(
        &self,
        func: FuncId,
        block: usize,
        before: Option<u64>,
        loc: SrcLoc,
    ) -> Result<(), InterpError> {
        match before {
            Some(e) if e != self.rt.unwatch_epoch() => {}
            _ => return Ok(()),
        }
        let msg = format!(
            "@{}: block {block} is in (or called from) a loop claimed to free and unwatch nothing, and an instruction of it freed",
            self.m.func(func).name
        );
        if self.verify_elision {
            return Err(InterpError::Internal { loc, msg });
        }
        debug_assert!(false, "{loc}: {msg}");
        Ok(())
    }
}
