//! Guards: the checks of a guarded instruction's site (lifetime, dict,
//! bounds; adstack checks live with the adstacks) and how a failed one
//! reports — through the runtime, with the IR frames of the call stack as
//! the report's backtrace and, while watchpoints are on, published for
//! writes the watchpoints see.

use crate::frame::Frame;
use crate::{InterpError, Interpreter};
use guardlift_ir::{CheckKind, Checks, Function, Inst, Module};
use guardlift_runtime::backtrace;
use guardlift_runtime::internals::*;
use guardlift_runtime::layout::tag_ok;
use guardlift_runtime::watch::{self, IrFrame};
use guardlift_runtime::{Observed, ReportKind, Verdict};

/// What a verdict means for the run: recover goes on, abort ends it.
fn verdict_ok(v: Verdict) -> Result<bool, InterpError> {
    match v {
        Verdict::Recover => Ok(false),
        Verdict::Abort => Err(InterpError::Aborted),
    }
}

impl<'m> Interpreter<'m> {
    /// Reports through the runtime; `callers` (outermost first) give the
    /// report's backtrace beyond the reporting frame.
    pub(crate) fn report(
        &self,
        callers: &[Frame],
        kind: ReportKind,
        site: u32,
        obs: Observed,
    ) -> Result<(), InterpError> {
        let v = self.with_bt(callers, || self.rt.report(kind, self.site_base + site, obs));
        verdict_ok(v).map(|_| ())
    }

    /// What a check's outcome means here: `Ok(true)` go on, `Ok(false)`
    /// apply the recover effect, `Err` the run aborted.
    pub(crate) fn go_on(&self, r: Result<(), Verdict>) -> Result<bool, InterpError> {
        match r {
            Ok(()) => Ok(true),
            Err(v) => verdict_ok(v),
        }
    }

    /// The checks guarding `inst` and its runtime-global site id.
    pub(crate) fn guard(&self, inst: &Inst) -> (Checks, u32) {
        match inst.site {
            Some(s) => (self.m.inst_checks(inst), self.site_base + s.0),
            None => (Checks::EMPTY, 0),
        }
    }

    /// The lifetime check of an object op: false when `obj` is a freed
    /// object (reported; the op takes its recover effect).
    pub(crate) fn live(
        &self,
        callers: &[Frame],
        (checks, site): (Checks, u32),
        obj: u64,
    ) -> Result<bool, InterpError> {
        if !checks.contains(CheckKind::Lifetime) {
            return Ok(true);
        }
        let live = self.go_on(self.with_bt(callers, || self.rt.check_live(obj, site)));
        // Only a pass vouches (`crate::entry`): a recovered failure goes on.
        self.live_passed.set(matches!(live, Ok(true)));
        live
    }

    /// The lifetime check of a raw access of `bytes` at `addr`.
    pub(crate) fn mem_live(
        &self,
        callers: &[Frame],
        (checks, site): (Checks, u32),
        addr: u64,
        bytes: u32,
    ) -> Result<bool, InterpError> {
        if !checks.contains(CheckKind::Lifetime) {
            return Ok(true);
        }
        self.go_on(self.with_bt(callers, || self.rt.check_mem(addr, bytes, site)))
    }

    /// The bounds check of a raw access of `bytes` at `addr` (`value`: what
    /// a store writes): false when it touches a heap redzone (reported).
    pub(crate) fn mem_in_bounds(
        &self,
        callers: &[Frame],
        (checks, site): (Checks, u32),
        (addr, bytes): (u64, u32),
        value: Option<u64>,
    ) -> Result<bool, InterpError> {
        if !checks.contains(CheckKind::Bounds) {
            return Ok(true);
        }
        self.go_on(self.with_bt(callers, || self.rt.check_redzone(addr, bytes, site, value)))
    }

    /// The dict check of `word` (read from, or about to be stored in, `obj`'s slot).
    pub(crate) fn dict_ok(
        &self,
        callers: &[Frame],
        (checks, site): (Checks, u32),
        obj: u64,
        word: u64,
    ) -> Result<bool, InterpError> {
        if !checks.contains(CheckKind::Dict) || tag_ok(word) {
            return Ok(true);
        }
        let obs = Observed::Dict {
            object: obj,
            value: word,
        };
        verdict_ok(self.with_bt(callers, || {
            self.rt.report(ReportKind::DictSlotTag, site, obs)
        }))
    }

    /// The bounds check of attribute `index` of the values array at `values`
    /// against the capacity the runtime recorded for it (spec §6: never the
    /// capacity word in memory, which a raw store may have rewritten).
    pub(crate) fn bounds_ok(
        &self,
        callers: &[Frame],
        (checks, site): (Checks, u32),
        (obj, values): (u64, u64),
        index: u32,
    ) -> Result<bool, InterpError> {
        if !checks.contains(CheckKind::Bounds) {
            return Ok(true);
        }
        self.go_on(self.with_bt(callers, || {
            self.rt.check_bounds(site, obj, values, index as u64)
        }))
    }

    /// The capacity the runtime recorded for the values array at `values`
    /// that `obj`'s word points to (0: an array it does not know).
    /// The claim of the JIT's own-values test (`jit/src/lower/ownvalues.rs`)
    /// at an attribute op of `index` on `obj`: where the capacity table
    /// holds this runtime's own-values mark at the granule of `obj + K −
    /// 8` (`K` = `Heap::own_values_offset`, the granule aligned and below
    /// 2^47) and a byte above `index` at `obj + K`, `obj` must be a live
    /// object of the heap whose slot it watches, `obj + K` its own values
    /// array, recorded with a capacity above `index` — so that, its word
    /// being that array's, the lifetime, watch, dict and bounds checks the
    /// JIT then skips all pass. Verified at every such op (not only where
    /// the JIT makes the test): a mismatch is an internal error.
    pub(crate) fn check_own_values(
        &self,
        cx: &crate::frame::Cx,
        obj: u64,
        index: u32,
    ) -> Result<(), InterpError> {
        use guardlift_runtime::heap::Heap;
        use guardlift_runtime::shadow;
        let Some(mark) = shadow::own_values_mark(self.rt.shadow_watch_id()) else {
            return Ok(());
        };
        let values = obj.wrapping_add(Heap::own_values_offset(self.rt.layout()) as u64);
        let claimed = guardlift_runtime::layout::capacity_word_addr(values)
            & shadow::UNMAPPED_OR_UNALIGNED
            == 0
            && shadow::read_own_values_mark(values) == mark
            && u64::from(shadow::read_capacity(values)) > u64::from(index);
        if !claimed {
            return Ok(());
        }
        let msg = match self.rt.with_heap(|h| h.own_values_record(obj)) {
            Some((v, cap)) if v == values && cap > u64::from(index) => return Ok(()),
            Some((v, cap)) => format!(
                "@{}: {obj:#x} is marked as owning the values array {values:#x} with room for attribute {index}, but its own array is {v:#x} of capacity {cap}",
                cx.func.name
            ),
            None => format!(
                "@{}: {obj:#x} is marked as owning the values array {values:#x}, but it is no live object of the heap with a watched slot and its own array",
                cx.func.name
            ),
        };
        self.claim_refuted(cx.inst.loc, msg)
    }

    pub(crate) fn capacity(&self, obj: u64, values: u64) -> u64 {
        self.rt
            .with_heap(|h| h.recorded_capacity(obj, values))
            .unwrap_or(0)
    }

    /// Runs `f` (which may report) with the calling IR frames known to the
    /// report's backtrace.
    pub(crate) fn with_bt<R>(&self, callers: &[Frame], f: impl FnOnce() -> R) -> R {
        let outer = || self.call_frames(callers);
        backtrace::with_outer_frames(&outer, f)
    }

    /// `e` with its backtrace when it is a fault: the frames of `stack`
    /// (outermost first) when it happened, innermost first, each at the
    /// instruction it was executing.
    pub(crate) fn with_fault_backtrace(&self, mut e: InterpError, stack: &[Frame]) -> InterpError {
        if let InterpError::Fault { backtrace, .. }
        | InterpError::HostFault { backtrace, .. }
        | InterpError::StackOverflow { backtrace, .. }
        | InterpError::Arith { backtrace, .. } = &mut e
        {
            *backtrace = self.call_frames(stack);
        }
        e
    }

    /// The IR calls `callers` (outermost first) are in, innermost first, as
    /// backtrace frames: each frame's current instruction is its call.
    pub(crate) fn call_frames(&self, callers: &[Frame]) -> Vec<String> {
        callers
            .iter()
            .rev()
            .take(backtrace::MAX_FRAMES)
            .map(|c| {
                let f = self.m.func(c.func);
                let inst =
                    c.ip.checked_sub(1)
                        .and_then(|i| f.blocks[c.block].insts.get(i));
                let (loc, op) = inst.map_or((f.loc, "?"), |i| (i.loc, i.kind.opcode()));
                backtrace::ir_frame(&f.name, loc.line, loc.col, op)
            })
            .collect()
    }

    /// The IR calls below the top frame, innermost first, while
    /// watchpoints are on (see [`watch::with_ir_frames`]).
    pub(crate) fn ir_callers(&self, stack: &[Frame]) -> Vec<IrFrame<'m>> {
        if !watch::active() {
            return Vec::new();
        }
        let m: &'m Module = self.m;
        let n = stack.len().saturating_sub(1);
        stack[..n]
            .iter()
            .rev()
            .map(|fr| {
                let f = m.func(fr.func);
                let loc = f.blocks[fr.block]
                    .insts
                    .get(fr.ip.wrapping_sub(1))
                    .map_or(f.loc, |i| i.loc);
                IrFrame {
                    function: &f.name,
                    line: loc.line,
                    col: loc.col,
                    op: "call",
                }
            })
            .collect()
    }

    /// Runs `f` (the execution of `inst`) with the IR frames published for
    /// watchpoints; just `f()` when they are off.
    pub(crate) fn with_frames<R>(
        &self,
        callers: &[IrFrame<'m>],
        func: &'m Function,
        inst: &'m Inst,
        f: impl FnOnce() -> R,
    ) -> R {
        if !watch::active() {
            return f();
        }
        let mut frames = Vec::with_capacity(callers.len() + 1);
        frames.push(IrFrame {
            function: &func.name,
            line: inst.loc.line,
            col: inst.loc.col,
            op: inst.kind.opcode(),
        });
        frames.extend_from_slice(callers);
        watch::with_ir_frames(&frames, f)
    }
}
