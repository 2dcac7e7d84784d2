//! The guards: the check code of every check kind, apart from the
//! instruction lowering that calls it (as wasmtime keeps bounds checks
//! apart from translation).
//!
//! - dict: the two-instruction tag test ([`DICT_CHECK_ADD`],
//!   [`DICT_CHECK_MASK`]);
//! - bounds: the index against the runtime's recorded capacity (the
//!   capacity table inline, `gl_check_bounds` otherwise);
//! - lifetime: `gl_check_live` / `gl_check_mem` behind the JIT's epoch
//!   fast path and frame cache;
//! - adstack: overflow and underflow of the count;
//! - clobber: the runtime's verdict before a raw store;
//! - watch: `guard.watch` behind the same frame cache.
//!
//! A failed check goes to a cold block that reports and rejoins, or traps
//! ([`FnLower::check`], by [`guard_strategy`]).

use super::func::{internal, mem};
use super::{guard_strategy, Entry, FnLower, GuardStrategy, RtRef, Stub, TRAP_SRCLOC_BIT};
use crate::error::JitError;
use cranelift_codegen::ir::{
    self as cl, condcodes, types, BlockArg, InstBuilder, MemFlagsData, SourceLoc, StackSlotData,
    StackSlotKind,
};
use cranelift_module::Module as ClModule;
use guardlift_abi::{layout, ReportKind};
use guardlift_ir::{CheckKind, Checks, InstKind, SiteId, Type, Value};
use guardlift_runtime::shadow;

/// Added to the word so that both valid tags land on low bits with
/// `DICT_CHECK_MASK` clear: `VALUES_TAG` (0b111) wraps to 0b000 and
/// `DICT_TAG` (0b000) becomes 0b001.
pub const DICT_CHECK_ADD: u64 = layout::TAG_MASK + 1 - layout::VALUES_TAG;
/// The tag bits other than the values bit: `((word + ADD) & MASK) == 0` iff the tag is valid.
pub const DICT_CHECK_MASK: u64 = layout::TAG_MASK & !layout::VALUES_BIT;

// The two-instruction check relies on the tag encoding; pin it.
const _: () = assert!(layout::VALUES_TAG == layout::TAG_MASK);
const _: () = assert!(layout::DICT_TAG == 0);
const _: () = assert!(layout::VALUES_BIT == 1);
const _: () = assert!(layout::TAG_MASK == 0b111);

/// The check the inline sequence computes, in Rust (tests compare it with
/// [`layout::tag_ok`]).
#[cfg(test)]
pub const fn dict_word_ok(word: u64) -> bool {
    word.wrapping_add(DICT_CHECK_ADD) & DICT_CHECK_MASK == 0
}

/// What a failed check reports: the arguments of its report entry call.
#[derive(Copy, Clone)]
pub(super) enum Report {
    Dict {
        site: u32,
        obj: cl::Value,
        word: cl::Value,
    },
    Adstack {
        site: u32,
        kind: ReportKind,
        capacity: u32,
        len: cl::Value,
    },
}

impl Report {
    /// The runtime-global site, the kind and the report entry point.
    fn head(&self) -> (u32, ReportKind, Entry) {
        match *self {
            Report::Dict { site, .. } => (site, ReportKind::DictSlotTag, Entry::ReportDict),
            Report::Adstack { site, kind, .. } => (site, kind, Entry::ReportAdstack),
        }
    }
}

/// What the recover path passes to the join block.
#[derive(Copy, Clone)]
pub(super) enum Recover {
    Nothing,
    Zero(cl::Type),
}

impl<M: ClModule + ?Sized> FnLower<'_, '_, M> {
    // ---- the watch cache ----

    /// JIT only: one frame slot per `guard.watch` and per object access
    /// under the lifetime check, `(object, unwatch epoch)`, zeroed at
    /// function entry (a null object matches nothing). Object files
    /// (`RtRef::Symbol`) call the runtime every time.
    pub(super) fn init_watch_caches(&mut self, rpo: &[u32]) {
        if !matches!(self.lw.rt, RtRef::Const(_)) || self.lw.shadow.is_some() {
            return;
        }
        let zero = self.iconst(types::I64, 0);
        for &bi in rpo {
            for (ii, inst) in self.f.blocks[bi as usize].insts.iter().enumerate() {
                let cached = match inst.kind {
                    InstKind::Watch { .. } => true,
                    InstKind::LoadAttr { .. }
                    | InstKind::StoreAttr { .. }
                    | InstKind::DictSlotLoad { .. }
                    | InstKind::DictSlotStore { .. } => {
                        self.checks_of(inst).contains(CheckKind::Lifetime)
                    }
                    _ => false,
                };
                if cached {
                    let ss = self.b.create_sized_stack_slot(StackSlotData::new(
                        StackSlotKind::ExplicitSlot,
                        16,
                        3,
                    ));
                    self.b.ins().stack_store(types::I64, zero, ss, 0);
                    self.b.ins().stack_store(types::I64, zero, ss, 8);
                    self.cache_slots.insert((bi, ii as u32), ss);
                }
            }
        }
    }

    /// The checks guarding `inst` that the lowering emits: its site's,
    /// less an underflow check [`crate::elide`] proved cannot fail and a
    /// lifetime and bounds checks the clean copy of a loop drops (`version`).
    pub(super) fn checks_of(&self, inst: &guardlift_ir::Inst) -> Checks {
        let c = self.clean_copy_checks(inst, self.lw.site_checks(inst));
        if self.elide_check {
            c.iter().filter(|&k| k != CheckKind::Adstack).collect()
        } else {
            c
        }
    }

    /// The unwatch epoch (bumped by every free), read from the JIT's runtime.
    pub(super) fn load_epoch(&mut self, rt: u64) -> cl::Value {
        let at = self.iconst(types::I64, rt as i64);
        self.b.ins().load(
            types::I64,
            MemFlagsData::trusted(),
            at,
            guardlift_abi::UNWATCH_EPOCH_OFFSET,
        )
    }

    /// Fills cold block `fail` (the builder is left there): jump to `join`
    /// with `recover`'s value — where a failed call-based check (lifetime)
    /// goes after the runtime reported.
    pub(super) fn recover_to(&mut self, fail: cl::Block, join: cl::Block, recover: Recover) {
        self.b.switch_to_block(fail);
        let args = self.recover_args(recover);
        self.b.ins().jump(join, &args);
    }

    /// The value a recover path passes to its join block.
    fn recover_args(&mut self, recover: Recover) -> Vec<BlockArg> {
        match recover {
            Recover::Nothing => vec![],
            Recover::Zero(t) => vec![BlockArg::Value(self.zero(t))],
        }
    }

    /// Does frame cache `ss` hold `(o, epoch)`? (An i8 truth value.)
    fn cache_hit(&mut self, ss: cl::StackSlot, o: cl::Value, epoch: cl::Value) -> cl::Value {
        let seen_obj = self.b.ins().stack_load(types::I64, types::I64, ss, 0);
        let seen_epoch = self.b.ins().stack_load(types::I64, types::I64, ss, 8);
        let same_obj = self.b.ins().icmp(condcodes::IntCC::Equal, seen_obj, o);
        let same_epoch = self
            .b
            .ins()
            .icmp(condcodes::IntCC::Equal, seen_epoch, epoch);
        self.b.ins().band(same_obj, same_epoch)
    }

    /// Remembers `(o, epoch)` in frame cache `ss`.
    fn cache_remember(&mut self, ss: cl::StackSlot, o: cl::Value, epoch: cl::Value) {
        self.b.ins().stack_store(types::I64, o, ss, 0);
        self.b.ins().stack_store(types::I64, epoch, ss, 8);
    }

    /// The site of lifetime check `id`, the block where the access goes
    /// on and the cold block where a failed check goes.
    fn live_check_blocks(&mut self, id: SiteId) -> Result<(u32, cl::Block, cl::Block), JitError> {
        let site = self.site(id)?;
        let ok = self.b.create_block();
        let fail = self.b.create_block();
        self.b.set_cold_block(fail);
        Ok((site, ok, fail))
    }

    /// `gl_check_live(o, site)` through its stub: 1 = live.
    fn call_check_live(&mut self, o: cl::Value, site: u32) -> Result<cl::Value, JitError> {
        let s = self.iconst(types::I32, site as i64);
        self.call_stub(Stub::Check(Entry::CheckLive), &[o, s])?
            .ok_or_else(|| internal(self.fname, "gl_check_live returns nothing"))
    }

    /// Branches on a lifetime verdict: to `ok` (left current) when live,
    /// else to `fail`, which rejoins `join` with `recover`'s value.
    fn live_verdict(
        &mut self,
        live: cl::Value,
        ok: cl::Block,
        fail: cl::Block,
        join: cl::Block,
        recover: Recover,
    ) {
        self.b.ins().brif(live, ok, &[], fail, &[]);
        self.recover_to(fail, join, recover);
        self.b.switch_to_block(ok);
    }

    /// The lifetime check of an object access (`load_attr`, `store_attr`,
    /// `dict_slot.*`): `gl_check_live(obj, site)` through a stub; on 0 (reported, recover) jump to `join` with `recover`. The JIT
    /// skips the call while nothing was ever freed (epoch 0) and when this
    /// site already found this very object live at the current epoch (the
    /// frame cache; no free since means it is still live). Leaves the
    /// builder where the object is live.
    ///
    /// Right after a fused `guard.watch` of `o` (the builder is then in the
    /// watch's cold path, after its call) the watch's fast path goes
    /// straight to where the object is live: the shadow said the runtime
    /// watches `o`'s slot, and the runtime never watches a freed object
    /// (it refuses to, and a free unwatches first: `Heap::watch`,
    /// `Heap::obj_free_at`, `Heap::host_object_freed`), so `gl_check_live`
    /// would find `o` live. Only the cold path tests it.
    pub(super) fn obj_live_check(
        &mut self,
        id: SiteId,
        o: cl::Value,
        join: cl::Block,
        recover: Recover,
    ) -> Result<(), JitError> {
        let fused = self.fused_watch.take();
        let (site, ok, fail) = self.live_check_blocks(id)?;
        let gated = self.shadow_gate(o, 1, shadow::FREED_OBJ, ok);
        if let (RtRef::Const(p), Some(&ss), false) =
            (self.lw.rt, self.cache_slots.get(&self.at), gated)
        {
            self.cached_live_check((p, ss), o, site, (ok, fail), join, recover)?;
        } else {
            let live = self.call_check_live(o, site)?;
            self.live_verdict(live, ok, fail, join, recover);
        }
        if let Some((watched, fast)) = fused {
            if watched != o {
                return Err(internal(self.fname, "fused watch of another object"));
            }
            let ok = self
                .b
                .current_block()
                .ok_or_else(|| internal(self.fname, "no block"))?;
            self.b.switch_to_block(fast);
            self.b.ins().jump(ok, &[]);
            self.b.switch_to_block(ok);
        }
        // Here the object is live (and, fused, its watch ran): what a call
        // of an entry variant needs of it (`entryvariant`).
        self.vouch_live(fused.is_some());
        Ok(())
    }

    /// Is the instruction after the `guard.watch` being lowered an object
    /// op on the same object under the lifetime check (a fused pair)?
    fn next_checks_life_of_watched(&self) -> bool {
        let insts = &self.f.blocks[self.at.0 as usize].insts;
        let (Some(w), Some(next)) = (
            insts.get(self.at.1 as usize),
            insts.get(self.at.1 as usize + 1),
        ) else {
            return false;
        };
        let InstKind::Watch { obj } = w.kind else {
            return false;
        };
        !matches!(next.kind, InstKind::Watch { .. })
            && next.kind.dict_obj() == Some(obj)
            && self.checks_of(next).contains(CheckKind::Lifetime)
    }

    /// The frame-cached form of [`Self::obj_live_check`] (no shadow): skip
    /// the call while the epoch is 0 or this site already found `o` live at
    /// this epoch.
    fn cached_live_check(
        &mut self,
        (p, ss): (u64, cl::StackSlot),
        o: cl::Value,
        site: u32,
        (ok, fail): (cl::Block, cl::Block),
        join: cl::Block,
        recover: Recover,
    ) -> Result<(), JitError> {
        let epoch = self.load_epoch(p);
        let probe = self.b.create_block();
        self.b.ins().brif(epoch, probe, &[], ok, &[]);
        self.b.switch_to_block(probe);
        let hit = self.cache_hit(ss, o, epoch);
        let miss = self.b.create_block();
        self.b.set_cold_block(miss);
        self.b.ins().brif(hit, ok, &[], miss, &[]);
        self.b.switch_to_block(miss);
        let live = self.call_check_live(o, site)?;
        let remember = self.b.create_block();
        self.b.set_cold_block(remember);
        self.b.ins().brif(live, remember, &[], fail, &[]);
        self.b.switch_to_block(remember);
        self.cache_remember(ss, o, epoch);
        self.b.ins().jump(ok, &[]);
        self.recover_to(fail, join, recover);
        self.b.switch_to_block(ok);
        Ok(())
    }

    /// The lifetime and bounds checks of a raw `load`/`store` of `width`
    /// bytes at `addr` (`stored`: the value a store writes), in spec order:
    /// `gl_check_mem(addr, width, site)` (freed memory: `use_after_free`),
    /// then `gl_check_redzone(addr, width, site, store, value)` (a heap
    /// redzone: `heap_overflow`), through stubs; on 0 (reported, recover)
    /// jump to `join` with `recover`. With a shadow, one inline test of
    /// the granules' freed/redzone bit (`shadow::FREED_MEM` =
    /// `shadow::REDZONE`) guards both calls; without one the JIT skips the
    /// lifetime call while nothing was ever freed (epoch 0), and the
    /// bounds call is made every time (as in object files).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn mem_checks(
        &mut self,
        lifetime: Option<SiteId>,
        bounds: Option<SiteId>,
        addr: cl::Value,
        width: u32,
        stored: Option<(cl::Value, Type)>,
        join: cl::Block,
        recover: Recover,
    ) -> Result<(), JitError> {
        if lifetime.is_none() && bounds.is_none() {
            return Ok(());
        }
        let ok = self.b.create_block();
        let gated = self.shadow_gate(addr, width, shadow::FREED_MEM | shadow::REDZONE, ok);
        let w = self.iconst(types::I32, width as i64);
        if let Some(id) = lifetime {
            let (site, next, fail) = self.live_check_blocks(id)?;
            if gated {
                self.b.set_cold_block(next);
            }
            if let (RtRef::Const(p), false) = (self.lw.rt, gated) {
                let epoch = self.load_epoch(p);
                let call = self.b.create_block();
                self.b.set_cold_block(call);
                self.b.ins().brif(epoch, call, &[], next, &[]);
                self.b.switch_to_block(call);
            }
            let s = self.iconst(types::I32, site as i64);
            let live = self
                .call_stub(Stub::Check(Entry::CheckMem), &[addr, w, s])?
                .ok_or_else(|| internal(self.fname, "gl_check_mem returns nothing"))?;
            self.live_verdict(live, next, fail, join, recover);
        }
        match bounds {
            Some(id) => {
                let site = self.site(id)?;
                let fail = self.b.create_block();
                self.b.set_cold_block(fail);
                let s = self.iconst(types::I32, site as i64);
                let store = self.iconst(types::I32, stored.is_some() as i64);
                let value = match stored {
                    Some((v, t)) => self.bits_u64(v, t),
                    None => self.iconst(types::I64, 0),
                };
                let go_on = self
                    .call_stub(
                        Stub::Check(Entry::CheckRedzone),
                        &[addr, w, s, store, value],
                    )?
                    .ok_or_else(|| internal(self.fname, "gl_check_redzone returns nothing"))?;
                self.live_verdict(go_on, ok, fail, join, recover);
            }
            None => {
                self.b.ins().jump(ok, &[]);
                self.b.switch_to_block(ok);
            }
        }
        Ok(())
    }

    /// The bounds check of `load_attr`/`store_attr` on the values fast path
    /// (`base` from [`Self::attr_fast_path`]; `checked`: the dict check
    /// made it the values pointer, else it is the word), against the
    /// capacity the runtime recorded for the values array — never the
    /// capacity word before it, which a raw store can rewrite (spec §6).
    ///
    /// With a shadow, inline: the capacity table's byte of the values
    /// pointer (`shadow::CAPACITY_TABLE_OFFSET`: `min(capacity, 127)`, 0 =
    /// no record), read as a signed byte (an own-values mark, from `0x80`
    /// on, is negative: `shadow::own_values_mark`), passes any index below
    /// it; anything else, and every
    /// access without a shadow or in an object file, calls
    /// `gl_check_bounds`, which decides from the runtime's record (and
    /// reports; on 0 the access rejoins `join` with `recover`'s value).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn bounds_check(
        &mut self,
        id: SiteId,
        o: cl::Value,
        base: cl::Value,
        index: u32,
        (values_life, checked): (Option<SiteId>, bool),
        join: cl::Block,
        recover: Recover,
    ) -> Result<(), JitError> {
        let site = self.site(id)?;
        let delta = layout::values_ptr(0) as i64 - if checked { DICT_CHECK_ADD as i64 } else { 0 };
        let values = if delta == 0 {
            base
        } else {
            self.b.ins().iadd_imm_s(base, delta)
        };
        let ok = self.b.create_block();
        let fail = self.b.create_block();
        self.b.set_cold_block(fail);
        if let (Some(sh), true) = (self.lw.shadow, u64::from(index) < shadow::CAPACITY_BYTE_MAX) {
            // The granule index, `(values >> 3) & INDEX_MASK`, as two
            // shifts (no 44-bit mask constant to load in the hot path).
            let high = 64 - shadow::ADDR_BITS;
            let g = self.b.ins().ishl_imm_u(values, high as i64);
            let g = (self.b.ins()).ushr_imm_u(g, (high + shadow::GRANULE_SHIFT) as i64);
            let table = sh.base.wrapping_add(shadow::CAPACITY_TABLE_OFFSET);
            let at = self.b.ins().iadd_imm_u(g, table as i64);
            let cap = (self.b.ins()).sload8(types::I32, MemFlagsData::new().with_notrap(), at, 0);
            // The first member of an attribute group tests the group's
            // highest index, the test's outcome is the group's verdict
            // (`attrgroup`); failing, the runtime decides its own index.
            let group = self.group_bounds.take().filter(|&m| m >= index);
            let room = self.b.ins().icmp_imm_u(
                condcodes::IntCC::SignedGreaterThan,
                cap,
                group.unwrap_or(index) as i64,
            );
            if group.is_some() {
                self.attr_group_pass(room)?;
            }
            let call = self.b.create_block();
            self.b.set_cold_block(call);
            self.b.ins().brif(room, ok, &[], call, &[]);
            self.b.switch_to_block(call);
        }
        if let Some(life) = values_life {
            // The values array's lifetime first (spec order), on its header.
            let life = self.site(life)?;
            let next = self.b.create_block();
            self.b.set_cold_block(next);
            let header = self
                .b
                .ins()
                .iadd_imm_s(values, layout::VALUES_CAPACITY_OFFSET as i64);
            let w = self.iconst(types::I32, layout::VALUES_HEADER_BYTES as i64);
            let s = self.iconst(types::I32, life as i64);
            let live = self
                .call_stub(Stub::Check(Entry::CheckMem), &[header, w, s])?
                .ok_or_else(|| internal(self.fname, "gl_check_mem returns nothing"))?;
            self.b.ins().brif(live, next, &[], fail, &[]);
            self.b.switch_to_block(next);
        }
        let s = self.iconst(types::I32, site as i64);
        let i = self.iconst(types::I64, index as i64);
        let go_on = self
            .call_stub(Stub::Check(Entry::CheckBounds), &[s, o, values, i])?
            .ok_or_else(|| internal(self.fname, "gl_check_bounds returns nothing"))?;
        self.live_verdict(go_on, ok, fail, join, recover);
        Ok(())
    }

    /// `guard.watch %o`: register the object's slot with the watch list.
    /// Watching is idempotent and only `obj_free` unwatches (bumping the
    /// runtime's unwatch epoch), so the JIT skips the call when this site
    /// already watched this very object in this frame and the epoch has
    /// not moved: a loop watches its object once per call, not once per
    /// iteration. The cache only skips calls that would change nothing, so
    /// the watch list — and every clobber report — is what the interpreter,
    /// which watches every time, has.
    pub(super) fn watch(&mut self, o: cl::Value) -> Result<(), JitError> {
        self.watch_inner(o)?;
        if self.fused_watch.is_none() {
            // The watch ran (a fused one vouches with its lifetime check).
            self.vouch_watched();
        }
        Ok(())
    }

    /// [`Self::watch`] but for what it vouches for.
    fn watch_inner(&mut self, o: cl::Value) -> Result<(), JitError> {
        if self.lw.shadow.is_some() && self.next_checks_life_of_watched() {
            self.own_values_at_watch(o);
        }
        if let Some(done) = self.shadow_watch_gate(o) {
            self.call_stub(Stub::Check(Entry::Watch), &[o])?;
            if self.next_checks_life_of_watched() {
                // Fused with the next instruction's lifetime check, which
                // runs only here, after the call (`obj_live_check`).
                self.fused_watch = Some((o, done));
                return Ok(());
            }
            self.b.ins().jump(done, &[]);
            self.b.switch_to_block(done);
            return Ok(());
        }
        let (RtRef::Const(p), Some(&ss)) = (self.lw.rt, self.cache_slots.get(&self.at)) else {
            self.call_stub(Stub::Check(Entry::Watch), &[o])?;
            return Ok(());
        };
        let epoch = self.load_epoch(p);
        let hit = self.cache_hit(ss, o, epoch);
        let miss = self.b.create_block();
        self.b.set_cold_block(miss);
        let done = self.b.create_block();
        self.b.ins().brif(hit, done, &[], miss, &[]);
        self.b.switch_to_block(miss);
        self.call_stub(Stub::Check(Entry::Watch), &[o])?;
        self.cache_remember(ss, o, epoch);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        Ok(())
    }

    /// What a failed check observed, as I64 values (constants
    /// materialized here): the values the report entry point takes after
    /// the site (and kind), and that the trap scratch area receives.
    fn observed(&mut self, r: &Report) -> Vec<cl::Value> {
        match *r {
            Report::Dict { obj, word, .. } => vec![obj, word],
            Report::Adstack { capacity, len, .. } => {
                vec![self.iconst(types::I64, capacity as i64), len]
            }
        }
    }

    /// The report entry point's call (through its stub) for `r`.
    fn emit_report(&mut self, r: Report) -> Result<(), JitError> {
        let (site, kind, entry) = r.head();
        let mut args = vec![self.iconst(types::I32, site as i64)];
        if entry == Entry::ReportAdstack {
            args.push(self.iconst(types::I32, kind.code() as i64));
        }
        let observed = self.observed(&r);
        args.extend(observed);
        self.call_stub_cold(Stub::Report(entry), &args)?;
        Ok(())
    }

    /// The inline check of a guard: when `bad` is non-zero, branch to a cold
    /// block that reports and then jumps to `join` with the recover value.
    /// Leaves the builder in the block where the check passed.
    pub(super) fn check(
        &mut self,
        bad: cl::Value,
        report: Report,
        join: cl::Block,
        recover: Recover,
    ) -> Result<(), JitError> {
        let cold = self.b.create_block();
        self.b.set_cold_block(cold);
        let ok = self.b.create_block();
        self.b.ins().brif(bad, cold, &[], ok, &[]);
        self.b.switch_to_block(cold);
        match guard_strategy(self.lw.mode) {
            GuardStrategy::ReportCall => {
                self.emit_report(report)?;
                let args = self.recover_args(recover);
                self.b.ins().jump(join, &args);
                self.b.switch_to_block(ok);
            }
            GuardStrategy::Trap => {
                // Nothing rejoins: the trap ends the process.
                let _ = (join, recover);
                let (site, kind, _) = report.head();
                let vals = self.observed(&report);
                self.emit_trap(site, kind, &vals)?;
                self.b.switch_to_block(ok);
            }
        }
        Ok(())
    }

    /// The trap sequence (in the current, cold block): tag the runtime's
    /// trap scratch area with the site's token (`owner`), fence, store
    /// `vals` (I64), publish `ready = token` (a sequentially consistent
    /// store), then `trap` with `kind`'s user code. No read-modify-write and
    /// no call: nothing here constrains register allocation of the hot path.
    /// Every instruction carries the source location that maps the trap
    /// back to `(site, kind)`.
    pub(super) fn emit_trap(
        &mut self,
        site: u32,
        kind: ReportKind,
        vals: &[cl::Value],
    ) -> Result<(), JitError> {
        let code = cl::TrapCode::user(kind.trap_code())
            .ok_or_else(|| internal(self.fname, "trap code out of Cranelift's user range"))?;
        let idx = u32::try_from(self.lw.traps.len())
            .ok()
            .filter(|&i| i < TRAP_SRCLOC_BIT)
            .ok_or_else(|| internal(self.fname, "too many trap sites"))?;
        self.lw.traps.push((site, kind));
        let saved = self.b.srcloc();
        self.b.set_srcloc(SourceLoc::new(TRAP_SRCLOC_BIT | idx));
        let token = self.iconst(types::I64, guardlift_abi::trap_token(site) as i64);
        let mut args = vec![token];
        args.extend_from_slice(vals);
        while args.len() < 1 + guardlift_abi::TRAP_VALUE_COUNT {
            args.push(self.iconst(types::I64, 0));
        }
        self.call_stub_cold(Stub::TrapScratch, &args)?;
        self.b.ins().trap(code);
        self.b.set_srcloc(saved);
        Ok(())
    }

    /// `((word + 1) & 0b110) != 0`: the managed-dict word's tag is invalid.
    pub(super) fn dict_bad(&mut self, word: cl::Value) -> cl::Value {
        let t = self.b.ins().iadd_imm_u(word, DICT_CHECK_ADD as i64);
        self.b.ins().band_imm_u(t, DICT_CHECK_MASK as i64)
    }

    /// The dict check of `word` (to be stored in, or loaded from, `obj`'s
    /// slot); a failed check rejoins `join` with nothing.
    pub(super) fn dict_check(
        &mut self,
        id: SiteId,
        obj: cl::Value,
        word: cl::Value,
        join: cl::Block,
    ) -> Result<(), JitError> {
        let site = self.site(id)?;
        let bad = self.dict_bad(word);
        let report = Report::Dict { site, obj, word };
        self.check(bad, report, join, Recover::Nothing)
    }

    /// After a dict-checked slot store: the runtime's last-known-write
    /// record (as the interpreter keeps it).
    pub(super) fn note_slot_write(
        &mut self,
        id: SiteId,
        obj: cl::Value,
        word: cl::Value,
    ) -> Result<(), JitError> {
        let site = self.site(id)?;
        let s = self.iconst(types::I32, site as i64);
        self.call_stub(Stub::Check(Entry::NoteSlotWrite), &[s, obj, word])?;
        Ok(())
    }

    /// A raw store of `x` (IR type `t`) to `p + offset` under the clobber
    /// check. Report modes: the runtime decides (reports) and the store
    /// happens only on 0. Trap mode: the runtime only answers "overlaps?";
    /// the cold path stores the observation and traps.
    pub(super) fn clobber_checked_store(
        &mut self,
        id: SiteId,
        x: cl::Value,
        t: Type,
        p: cl::Value,
        offset: i32,
    ) -> Result<(), JitError> {
        let site = self.site(id)?;
        let eff = self.effective_addr(p, offset);
        let do_store = self.b.create_block();
        // The runtime is asked only when a watch mark is on the bytes.
        self.shadow_gate(eff, t.bytes(), shadow::WATCH_MASK, do_store);
        if guard_strategy(self.lw.mode) == GuardStrategy::Trap {
            let w = self.iconst(types::I32, t.bytes() as i64);
            let hit = self
                .call_stub(Stub::Check(Entry::ClobberOverlaps), &[eff, w])?
                .ok_or_else(|| internal(self.fname, "clobber test returns nothing"))?;
            let cold = self.b.create_block();
            self.b.set_cold_block(cold);
            self.b.ins().brif(hit, cold, &[], do_store, &[]);
            self.b.switch_to_block(cold);
            let bits = self.bits_u64(x, t);
            let w64 = self.iconst(types::I64, t.bytes() as i64);
            self.emit_trap(site, ReportKind::SlotClobber, &[eff, w64, bits])?;
            self.b.switch_to_block(do_store);
            self.b.ins().store(mem(), x, p, offset);
            return Ok(());
        }
        let bits = self.bits_u64(x, t);
        let s = self.iconst(types::I32, site as i64);
        let w = self.iconst(types::I32, t.bytes() as i64);
        let skip = self
            .call_stub(Stub::Check(Entry::ClobberCheck), &[s, eff, w, bits])?
            .ok_or_else(|| internal(self.fname, "clobber check returns nothing"))?;
        let done = self.b.create_block();
        self.b.ins().brif(skip, done, &[], do_store, &[]);
        self.b.switch_to_block(do_store);
        self.b.ins().store(mem(), x, p, offset);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        Ok(())
    }

    /// For a guarded `ad.push`: branch to a cold overflow report when
    /// `n >= capacity`.
    pub(super) fn overflow_check(
        &mut self,
        id: SiteId,
        stack: Value,
        n: cl::Value,
        join: cl::Block,
    ) -> Result<(), JitError> {
        let site = self.site(id)?;
        let capacity = self.cap(stack)?;
        let bad = self.b.ins().icmp_imm_u(
            condcodes::IntCC::UnsignedGreaterThanOrEqual,
            n,
            capacity as i64,
        );
        let report = Report::Adstack {
            site,
            kind: ReportKind::AdstackOverflow,
            capacity,
            len: n,
        };
        self.check(bad, report, join, Recover::Nothing)
    }

    /// For a guarded adstack op: branch to a cold underflow report when `n == 0`.
    pub(super) fn underflow_check(
        &mut self,
        site: Option<SiteId>,
        stack: Value,
        n: cl::Value,
        join: Option<cl::Block>,
        recover: Recover,
    ) -> Result<(), JitError> {
        let (Some(id), Some(join)) = (site, join) else {
            return Ok(());
        };
        let site = self.site(id)?;
        let capacity = self.cap(stack)?;
        let bad = self.b.ins().icmp_imm_u(condcodes::IntCC::Equal, n, 0);
        let report = Report::Adstack {
            site,
            kind: ReportKind::AdstackUnderflow,
            capacity,
            len: n,
        };
        self.check(bad, report, join, recover)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dict_check_matches_tag_ok() {
        assert_eq!(DICT_CHECK_ADD, 1);
        assert_eq!(DICT_CHECK_MASK, 6);
        for hi in [
            0u64,
            8,
            0x1000,
            0xffff_ffff_ffff_fff8,
            0x8000_0000_0000_0000,
        ] {
            for low in 0..8u64 {
                let w = hi | low;
                assert_eq!(dict_word_ok(w), layout::tag_ok(w), "word {w:#x}");
            }
        }
    }
}
