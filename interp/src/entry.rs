//! Verification of entry variants ([`guardlift_ir::analysis::entry`])
//! while running: the JIT calls a function's entry variant, which drops
//! the lifetime checks and `guard.watch`es of some params inside its entry
//! region, when the caller's own tests vouch for those arguments.
//!
//! Each frame keeps what its tests vouched for since its latest call
//! ([`Frame::vouched`]): the value, the bits it held then, and the unwatch
//! epoch when an object op on it passed its lifetime check or a
//! `guard.watch` of it ran. This is at least what the JIT's variables say
//! (the interpreter also vouches where the JIT dropped a test, and keys by
//! bits where the JIT forgets at each definition), so every call the JIT
//! sends to an entry variant is verified here. At a call of a function
//! with an entry plan whose vouched-for arguments cover the plan, the
//! callee's frame records each claimed param with those epochs
//! ([`Frame::entry_claims`]) and starts vouched for them (the JIT's variant
//! sets its variables so). Inside the callee's entry region, an
//! instruction whose test the variant drops must see the epoch of its
//! claim: a free since the test that vouched (the epoch moved) refutes
//! the claim — an internal error.

use crate::frame::{Cx, EntryClaim, Frame, Vouched};
use crate::{InterpError, Interpreter};
use guardlift_ir::analysis::entry::EntryPlan;
use guardlift_ir::analysis::ownentry::writes_words;
use guardlift_ir::{CheckKind, Inst, InstKind};
use guardlift_runtime::internals::*;

impl Interpreter<'_> {
    /// The entry plan of the frame's function, when verifying.
    fn entry_plan(&self, fr: &Frame) -> Option<&EntryPlan> {
        self.entries.as_ref()?.get(fr.func.0 as usize)?.as_ref()
    }

    /// After instruction `inst` of `fr` ran (`live`: an object op whose
    /// lifetime check passed): what it vouches for.
    pub(crate) fn track_vouch(&self, fr: &mut Frame, inst: &Inst, live: bool) {
        if self.entries.is_none() {
            return;
        }
        if matches!(
            inst.kind,
            InstKind::Call { .. } | InstKind::CallIndirect { .. }
        ) {
            fr.vouched.clear();
            return;
        }
        if writes_words(self.m, inst) {
            // Any word may have changed: no own-values pass holds.
            for x in &mut fr.vouched {
                x.own = false;
            }
        }
        let Some(o) = inst.kind.dict_obj() else {
            return;
        };
        let watch = matches!(inst.kind, InstKind::Watch { .. });
        let passed = live && self.m.inst_checks(inst).contains(CheckKind::Lifetime);
        if !(watch || passed) {
            return;
        }
        let (bits, epoch) = (fr.val(o), self.rt.unwatch_epoch());
        let i = match fr.vouched.iter().position(|x| x.v == o) {
            Some(i) => i,
            None => {
                fr.vouched.push(Vouched {
                    v: o,
                    bits,
                    life: None,
                    watch: None,
                    own: false,
                });
                fr.vouched.len() - 1
            }
        };
        // An attribute op that passed: does the object work on its own
        // values array, with room for the value's demand?
        let own = match inst.kind {
            InstKind::LoadAttr { .. } | InstKind::StoreAttr { .. } => {
                let demand = (self.owns.as_ref()).and_then(|p| p.demand_of(fr.func.0 as usize, o));
                demand.is_some_and(|d| self.own_state(bits).is_some_and(|cap| cap > u64::from(d)))
            }
            _ => false,
        };
        let x = &mut fr.vouched[i];
        if x.bits != bits {
            (x.bits, x.life, x.watch, x.own) = (bits, None, None, false);
        }
        match watch {
            true => x.watch = Some(epoch),
            false => x.life = Some(epoch),
        }
        if own {
            // Live and watched, as the JIT's own-values test vouches.
            (x.own, x.watch) = (true, Some(epoch));
        }
    }

    /// When `obj` is a live object of the model heap whose slot is
    /// watched, marked as working on its own values array, and whose word
    /// is that array's (the JIT's own-values test, `ownvalues`): the
    /// array's recorded capacity byte.
    pub(crate) fn own_state(&self, obj: u64) -> Option<u64> {
        use guardlift_runtime::heap::Heap;
        use guardlift_runtime::shadow;
        let mark = shadow::own_values_mark(self.rt.shadow_watch_id())?;
        let values = obj.wrapping_add(Heap::own_values_offset(self.rt.layout()) as u64);
        let at = guardlift_runtime::layout::capacity_word_addr(values);
        if at & shadow::UNMAPPED_OR_UNALIGNED != 0 || shadow::read_own_values_mark(values) != mark {
            return None;
        }
        let slot = self.rt.layout().slot_addr(obj);
        let word = self.read_mem(Default::default(), slot, 8).ok()?;
        (word == values.wrapping_sub(1)).then(|| u64::from(shadow::read_capacity(values)))
    }

    /// At a call of an IR function by `inst` of `fr`, whose frame is `nf`:
    /// when what `fr` vouches for covers the callee's entry plan, the
    /// claims of `nf` (which starts vouched for them).
    pub(crate) fn entry_claims(&self, fr: &Frame, inst: &Inst, nf: &mut Frame) {
        let InstKind::Call { args, .. } = &inst.kind else {
            return;
        };
        self.vouched_entry_claims(fr, args, nf);
        // The own variant: every argument of its params passed an
        // own-values test with the param's demand. Such a param starts
        // vouched for, as the JIT's own variant starts it.
        let g = self.m.func(nf.func);
        let Some(own) = self.owns.as_ref().and_then(|o| o.plan(nf.func.0 as usize)) else {
            return;
        };
        let passed = |k: usize| {
            let a = args.get(k)?;
            fr.vouched
                .iter()
                .find(|x| x.v == *a && x.bits == fr.val(*a) && x.own)
        };
        if !own.params.iter().all(|&k| passed(k).is_some()) {
            return;
        }
        nf.own_claims = own.params.iter().map(|&k| g.params[k]).collect();
        let epoch = self.rt.unwatch_epoch();
        for &p in &nf.own_claims {
            let bits = nf.val(p);
            match nf.vouched.iter_mut().find(|x| x.v == p) {
                Some(x) => (x.own, x.life, x.watch) = (true, Some(epoch), Some(epoch)),
                None => nf.vouched.push(Vouched {
                    v: p,
                    bits,
                    life: Some(epoch),
                    watch: Some(epoch),
                    own: true,
                }),
            }
        }
    }

    /// The entry variant's part of [`Self::entry_claims`].
    fn vouched_entry_claims(&self, fr: &Frame, args: &[guardlift_ir::Value], nf: &mut Frame) {
        let g = self.m.func(nf.func);
        let Some(plan) = self.entry_plan(nf) else {
            return;
        };
        let vouched = |k: usize| {
            let a = *args.get(k)?;
            fr.vouched.iter().find(|x| x.v == a && x.bits == fr.val(a))
        };
        let mut claims: Vec<EntryClaim> = Vec::new();
        for k in plan.params() {
            let need_life = plan.life.contains(&k);
            let need_watch = plan.watch.contains(&k);
            let Some(x) = vouched(k) else {
                return;
            };
            if (need_life && x.life.is_none()) || (need_watch && x.watch.is_none()) {
                return;
            }
            claims.push(EntryClaim {
                param: g.params[k],
                life: x.life.filter(|_| need_life),
                watch: x.watch.filter(|_| need_watch),
            });
        }
        nf.vouched = (claims.iter())
            .map(|c| Vouched {
                v: c.param,
                bits: nf.val(c.param),
                life: c.life,
                watch: c.watch,
                own: false,
            })
            .collect();
        nf.entry_claims = claims;
    }

    /// Before instruction `cx.inst` of `fr` runs: a test the entry variant
    /// drops must see the epoch of the claim that let it drop it.
    pub(crate) fn check_entry_claim(&self, fr: &Frame, cx: &Cx) -> Result<(), InterpError> {
        self.check_own_claim(fr, cx)?;
        if fr.entry_claims.is_empty() {
            return Ok(());
        }
        let Some(plan) = self.entry_plan(fr) else {
            return Ok(());
        };
        let at = (cx.at.0 as u32, cx.at.1 as u32);
        if !plan.drops(cx.func, at, cx.inst) {
            return Ok(());
        }
        let Some(o) = cx.inst.kind.dict_obj() else {
            return Ok(());
        };
        let Some(c) = fr.entry_claims.iter().find(|c| c.param == o) else {
            return Ok(());
        };
        let epoch = match cx.inst.kind {
            InstKind::Watch { .. } => c.watch,
            _ => c.life,
        };
        if epoch.is_none_or(|e| e == self.rt.unwatch_epoch()) {
            return Ok(());
        }
        let (v, b) = cx.names(o);
        let msg = format!(
            "@{}: block {b}: the entry variant drops a test of %{v}, which its caller vouched for, and something freed since",
            cx.func.name
        );
        self.claim_refuted(cx.inst.loc, msg)
    }

    /// Before instruction `cx.inst` of `fr`: where the own variant
    /// addresses an attribute op without a test (or drops a lifetime check
    /// or watch) because the caller's own-values test passed, the object
    /// must still be a live model-heap object on its own values array,
    /// with room for the index.
    fn check_own_claim(&self, fr: &Frame, cx: &Cx) -> Result<(), InterpError> {
        if fr.own_claims.is_empty() {
            return Ok(());
        }
        let Some(plan) = self.owns.as_ref().and_then(|o| o.plan(fr.func.0 as usize)) else {
            return Ok(());
        };
        let at = (cx.at.0 as u32, cx.at.1 as u32);
        if !plan.covers(cx.func, at, cx.inst) {
            return Ok(());
        }
        let Some(o) = cx.inst.kind.dict_obj() else {
            return Ok(());
        };
        if !fr.own_claims.contains(&o) {
            return Ok(());
        }
        let index = match cx.inst.kind {
            InstKind::LoadAttr { index, .. } | InstKind::StoreAttr { index, .. } => index,
            _ => 0,
        };
        let room = self
            .own_state(fr.val(o))
            .is_some_and(|cap| cap > u64::from(index));
        if room {
            return Ok(());
        }
        let (v, b) = cx.names(o);
        let msg = format!(
            "@{}: block {b}: the own variant addresses %{v} from the object, which its caller's own-values test passed for, but it no longer works on its own values array with room for attribute {index}",
            cx.func.name
        );
        self.claim_refuted(cx.inst.loc, msg)
    }
}
