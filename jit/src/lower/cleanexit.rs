//! Clean exits ([`guardlift_ir::hoist::CleanLoop::exits`]): a block a
//! versioned loop's hot part exits to, whose leading instructions keep the
//! loop's claims (its **exit prefix**), is lowered a second time — its
//! **twin** — which the clean copy's exits enter instead of it. In the
//! twin's prefix the ops on the loop's objects drop what the clean copy
//! drops: the lifetime checks and `guard.watch`es the dispatch tested, and
//! the bounds tests of fixed attributes at indices up to the highest the
//! entry test fixed (a higher index keeps its test). Every other check
//! stays; after the prefix the twin is the block as ever. The checked
//! copy's exits enter the block itself. A twin is made when the block is
//! in no versioned loop, heads no loop and defines no value another block
//! uses (so that the two lowerings need no merge): the method loop's
//! `return self.total` after its loop (docs/CODEGEN.md, "Clean exits").

use super::version::Versioned;
use super::FnLower;
use crate::error::JitError;
use cranelift_module::Module as ClModule;
use guardlift_ir::{Block, Inst, InstKind, Value};

impl<M: ClModule + ?Sized> FnLower<'_, '_, M> {
    /// The clean exit twins of the versioned loops: an exit prefix block
    /// ([`CleanLoop::exits`]) gets a second lowering, entered from the
    /// clean copy's exits only, whose prefix drops what the clean copy
    /// drops (the bounds tests at the indices the entry fixed) — when the
    /// block is in no versioned loop, heads no loop and defines no value
    /// another block uses (the twin then needs no merge).
    pub(super) fn plan_exit_twins(&mut self) {
        let want: Vec<(usize, u32, u32)> = (self.versions.iter().enumerate())
            .flat_map(|(k, v)| v.lp.exits.iter().map(move |&(e, n)| (k, e, n)))
            .filter(|&(_, e, _)| !self.version_of_block.contains_key(&e))
            .collect();
        if want.is_empty() {
            return;
        }
        let f = self.f;
        let an = &self.lw.analyses[self.id];
        let (cfg, dt) = (an.cfg(), an.domtree());
        // The blocks whose values another block uses.
        let mut escapes = vec![false; f.blocks.len()];
        for (bi, blk) in f.blocks.iter().enumerate() {
            for inst in &blk.insts {
                inst.kind.for_each_operand(|v| {
                    if let Some(d) = f.def_block(v).filter(|&d| d as usize != bi) {
                        escapes[d as usize] = true;
                    }
                });
            }
        }
        let heads = |e: u32| (cfg.preds(Block(e)).iter()).any(|&p| dt.dominates(Block(e), p));
        let twins: Vec<(usize, u32, u32)> = want
            .into_iter()
            .filter(|&(_, e, _)| !escapes[e as usize] && !heads(e))
            .collect();
        for (k, e, n) in twins {
            let twin = self.block_like(e);
            self.versions[k].exits.push((e, twin, n));
        }
    }

    /// In the prefix of the clean exit twin being lowered, for `inst`, an
    /// op on object `o`: whether it drops its lifetime check and its
    /// bounds check (only at an index the loop's entry fixed); `None`
    /// outside such a prefix.
    pub(super) fn exit_prefix_drops(&self, inst: &Inst, o: Value) -> Option<(bool, bool)> {
        let v = self.exit_prefix_loop()?;
        let index = match inst.kind {
            InstKind::LoadAttr { index, .. } => Some(index),
            _ => None,
        };
        let bounds = (v.attrs.iter()).any(|&(x, m)| x == o && index.is_some_and(|i| i <= m));
        Some((v.life.contains(&o), bounds))
    }

    /// In the prefix of a clean exit twin being lowered: its loop.
    pub(super) fn exit_prefix_loop(&self) -> Option<&Versioned> {
        let (k, n) = self.in_exit?;
        (self.at.1 < n).then(|| &self.versions[k])
    }

    /// The clean exit twins of loop `k`: each its block lowered again,
    /// its prefix without what the clean copy proved (`plan_exit_twins`).
    /// Called with the objects and the opaque zero as the clean copy has
    /// them: the objects are the clean header's params, which dominate
    /// every exit of the clean copy (the values from before the loop would
    /// stay live across it: regalloc2 kept the method loop's `self` in a
    /// frame slot, reloaded and stored at every iteration).
    pub(super) fn lower_exit_twins(&mut self, k: usize) -> Result<(), JitError> {
        for i in 0..self.versions[k].exits.len() {
            let (e, twin, n) = self.versions[k].exits[i];
            self.in_exit = Some((k, n));
            let lowered = self.lower_block_at(twin, e);
            self.in_exit = None;
            lowered?;
        }
        Ok(())
    }
}
