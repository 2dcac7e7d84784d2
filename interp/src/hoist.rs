//! Verification of the loop-versioning analysis ([`guardlift_ir::hoist`])
//! while running: the JIT runs a clean loop without the lifetime checks and
//! `guard.watch`es of its invariant objects when they pass at the entry,
//! on the claim that no instruction of the loop frees or unwatches
//! anything. Both move the runtime's unwatch epoch, so an instruction of a
//! clean loop's hot block across which the epoch moves refutes the claim
//! (a cold block, which the clean copy leaves for the checked one, may
//! free). A call of a
//! clean loop (a leaf callee's) runs in a frame of its own: that frame is
//! marked claimed ([`Frame::claimed`]), and so are the frames it calls, so
//! every instruction the callee runs is verified the same way.
//!
//! The second claim, on a clean loop's fixed attributes
//! (`CleanLoop::attrs`), is verified per activation: at each entry of such
//! a loop from outside where the runtime's `attr_fixed` holds for every
//! fixed object (the JIT's entry test), the frame records those objects
//! ([`Frame::fixed`]) until control leaves the loop's hot part (an exit,
//! or a side exit to a cold block, after which the JIT runs the checked
//! copy until the next entry), and a callee it calls
//! records the params they are passed as ([`Frame::fixed_params`], for
//! the whole frame); an attribute op on a recorded
//! object whose index is not below the capacity its word leads to refutes
//! the claim, and so does one whose word is not values-tagged (the JIT
//! drops such an op's dict test with its bounds test). Each such entry also checks that the claimed objects are
//! defined outside the loop (whatever their type): a claim on a value the
//! loop defines is refuted at once.

use crate::frame::Cx;
use crate::frame::Frame;
use crate::{InterpError, Interpreter};
use guardlift_ir::analysis::context::FuncAnalysis;
use guardlift_ir::hoist::{CleanLoop, HostModel};
use guardlift_ir::{FuncId, Function, Inst, InstKind, Module, SrcLoc, Value};
use guardlift_runtime::internals::*;

/// Per function, per block: how many of its leading instructions are
/// claimed to free nothing (all of a clean loop's hot block, an exit
/// prefix's length, 0 elsewhere).
pub(crate) type LoopClaims = Vec<Vec<u32>>;

/// Per function, its clean loops with fixed attributes.
pub(crate) type AttrClaims = Vec<Vec<CleanLoop>>;

/// The claims of every function's clean loops: which blocks are in one,
/// and the loops whose `attrs` are not empty (one loop analysis per
/// function, through its `FuncAnalysis`).
pub(crate) fn claims(m: &Module, host: HostModel) -> (LoopClaims, AttrClaims) {
    m.functions
        .iter()
        .map(|f| {
            let loops = FuncAnalysis::new(f).clean_loops(m, host);
            let mut in_loop = vec![0u32; f.blocks.len()];
            // The claim is about the hot blocks (the clean copy's) and
            // the exit prefixes after them.
            let hot = loops
                .iter()
                .flat_map(|l| l.hot.iter().map(|&b| (b, u32::MAX)));
            let exits = loops.iter().flat_map(|l| l.exits.iter().copied());
            for (b, n) in hot.chain(exits) {
                if let Some(x) = in_loop.get_mut(b as usize) {
                    *x = (*x).max(n);
                }
            }
            let attrs = loops
                .iter()
                .filter(|l| !l.attrs.is_empty())
                .cloned()
                .collect();
            (in_loop, attrs)
        })
        .unzip()
}

impl Interpreter<'_> {
    /// After a branch of frame `fr` from block `from`: leaving the loop
    /// whose fixed attributes it recorded forgets them; entering a loop
    /// with fixed attributes from outside records them when the entry
    /// test holds for each.
    ///
    /// Each entry also verifies that the claim's objects are invariant:
    /// one defined inside the loop (whatever its type) has no value at the
    /// entry that the JIT's entry test could take, and refutes the claim.
    pub(crate) fn track_fixed(
        &self,
        fr: &mut Frame,
        from: usize,
        loc: SrcLoc,
    ) -> Result<(), InterpError> {
        let Some(loops) = (self.attr_loops.as_ref()).and_then(|c| c.get(fr.func.0 as usize)) else {
            return Ok(());
        };
        let to = fr.block as u32;
        if let Some(h) = fr.fixed_loop {
            let lp = loops.iter().find(|l| l.header == h);
            if fr.fixed_exit.is_none() {
                if lp.is_some_and(|l| l.is_hot(to)) {
                    return Ok(());
                }
                // An exit edge into an exit prefix: the claim goes on
                // there (the JIT's clean twin of the block).
                let n = lp.map_or(0, |l| l.exit_prefix(to));
                if n > 0 {
                    fr.fixed_exit = Some(n);
                    return Ok(());
                }
            }
            // Leaving the hot part otherwise (a side exit to a cold
            // block: the JIT goes on in the checked copy) or the exit
            // block ends the activation, and its clean copy's ranges.
            fr.fixed_loop = None;
            fr.fixed_exit = None;
            fr.fixed.clear();
            fr.fixed_words.clear();
            self.enter_clean_copy_ranges(fr, h, false);
        }
        let Some(lp) = (loops.iter()).find(|l| l.header == to && !l.contains(from as u32)) else {
            return Ok(());
        };
        let f = self.m.func(fr.func);
        let def_block = |o: Value| f.def_block(o);
        if let Some(&(o, _)) =
            (lp.attrs.iter()).find(|&&(o, _)| def_block(o).is_some_and(|b| lp.contains(b)))
        {
            let msg = format!(
                "@{}: the clean loop at block {to} claims fixed attributes of %{}, which it defines itself (not loop-invariant)",
                f.name,
                f.values.get(o.0 as usize).map_or("?", |d| d.name.as_str())
            );
            return self.claim_refuted(loc, msg);
        }
        // The JIT's dispatch enters the clean copy when the fixed
        // attributes hold and the copy's loop ranges pass.
        if (lp.attrs.iter()).all(|&(o, max)| self.rt.attr_fixed(fr.val(o), max))
            && self.clean_copy_ranges_pass(fr, to)
        {
            // The JIT's dispatch lets `attr_fixed` stand for the shadow
            // tests of the same objects: each must be live and its slot
            // watched.
            for &(o, _) in &lp.attrs {
                let obj = fr.val(o);
                let slot = self.rt.layout().slot_addr(obj);
                let (freed, watched) =
                    (self.rt).with_heap(|h| (h.is_freed(obj), h.overlaps_watched(slot, 8)));
                if freed || !watched {
                    let msg = format!(
                        "@{}: attr_fixed holds at the clean loop at block {to} for {obj:#x}, which is {}",
                        f.name,
                        if freed { "freed" } else { "not watched" }
                    );
                    return self.claim_refuted(loc, msg);
                }
            }
            fr.fixed_loop = Some(to);
            fr.fixed = lp.attrs.clone();
            let slot = |o: Value| self.rt.layout().slot_addr(fr.val(o));
            fr.fixed_words = (lp.attrs.iter())
                .map(|&(o, _)| self.read_mem(loc, slot(o), 8))
                .collect::<Result<_, _>>()?;
            self.enter_clean_copy_ranges(fr, to, true);
        }
        Ok(())
    }

    /// The params of the frame `callee` that call `inst` of `fr` passes a
    /// fixed object of `fr`'s claimed loop activation.
    pub(crate) fn fixed_params(&self, fr: &Frame, inst: &Inst, callee: &Frame) -> Vec<Value> {
        let InstKind::Call { args, .. } = &inst.kind else {
            return Vec::new();
        };
        if fr.fixed_loop.is_none() {
            return Vec::new();
        }
        let f: &Function = self.m.func(callee.func);
        (f.params.iter().zip(args))
            .filter(|&(_, a)| fr.fixed.iter().any(|&(o, _)| o == *a))
            .map(|(p, _)| *p)
            .collect()
    }

    /// Is the bounds test of instruction `ip` of `fr`'s block, an
    /// attribute op on `obj` at `index`, claimed not to fail: `obj` a
    /// fixed object of the frame's loop activation (in an exit prefix:
    /// within it, at an index the loop covers) or a param a claimed
    /// caller passed one?
    pub(crate) fn is_fixed(&self, fr: &Frame, ip: usize, obj: Value, index: u32) -> bool {
        if fr.fixed_params.contains(&obj) {
            return true;
        }
        let mut fixed = fr.fixed.iter();
        match fr.fixed_exit {
            None => fixed.any(|&(o, _)| o == obj),
            Some(n) => (ip as u64) < u64::from(n) && fixed.any(|&(o, m)| o == obj && index <= m),
        }
    }

    /// An attribute op on a fixed object at attribute `index` of the
    /// values array at `values`: the capacity must exceed it.
    pub(crate) fn check_fixed(
        &self,
        cx: &Cx,
        (obj, values): (u64, u64),
        index: u32,
    ) -> Result<(), InterpError> {
        let loc = cx.inst.loc;
        let capacity = self.capacity(obj, values);
        if (index as u64) < capacity {
            return Ok(());
        }
        let msg = format!(
            "@{}: attribute {index} of an object a clean loop's entry test fixed (capacity {capacity}): its bounds test fails",
            cx.func.name
        );
        self.claim_refuted(loc, msg)
    }

    /// An attribute op on a fixed object whose word is `word`: it must be
    /// values-tagged (the entry test saw the object's own values word, and
    /// no instruction of the loop writes it), so the dict test the JIT
    /// drops with the bounds test would pass; and in the frame of the
    /// activation (`entry`: the word its entry saw) it must be that word,
    /// from which the clean copy addresses the values array without
    /// loading the word again.
    pub(crate) fn check_fixed_word(
        &self,
        cx: &Cx,
        obj: u64,
        (word, entry): (u64, Option<u64>),
    ) -> Result<(), InterpError> {
        let tagged =
            word & guardlift_runtime::layout::TAG_MASK == guardlift_runtime::layout::VALUES_TAG;
        let msg = match entry {
            Some(e) if e != word => format!(
                "@{}: the word of an object a clean loop's entry test fixed ({obj:#x}) is {word:#x}, not the {e:#x} the entry saw",
                cx.func.name
            ),
            _ if tagged => return Ok(()),
            _ => format!(
                "@{}: the word of an object a clean loop's entry test fixed ({obj:#x}) is {word:#x}, not values-tagged: its dict test fails",
                cx.func.name
            ),
        };
        self.claim_refuted(cx.inst.loc, msg)
    }

    /// The word recorded at the entry of `fr`'s claimed loop activation for
    /// its fixed object `obj` (`None`: not one of the activation's own).
    pub(crate) fn fixed_entry_word(&self, fr: &Frame, obj: Value) -> Option<u64> {
        let i = fr.fixed.iter().position(|&(o, _)| o == obj)?;
        fr.fixed_words.get(i).copied()
    }

    /// Before an instruction of `block` of frame `fr` runs: the unwatch
    /// epoch if the block is claimed to be in a clean loop or the frame
    /// was called from one.
    pub(crate) fn hoist_epoch(&self, fr: &Frame, (block, ip): (usize, usize)) -> Option<u64> {
        let loops = self.loops.as_ref()?;
        let claimed = fr.claimed
            || (loops.get(fr.func.0 as usize))
                .and_then(|b| b.get(block).copied())
                .is_some_and(|n| (ip as u64) < u64::from(n));
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
        self.claim_refuted(loc, msg)
    }
}
