//! The entry test of a clean loop's fixed attributes
//! ([`guardlift_ir::hoist::CleanLoop::attrs`]) and the inline cache in
//! front of it.
//!
//! The test is `Runtime::attr_fixed` for each object (a runtime call,
//! `gl_attr_fixed`: the heap's record, not the word, decides where it
//! reads, so a wild or forged word never makes the dispatch fault where
//! the loop would not). In front of the call, the runtime's own memo of
//! that call's successes (`runtime/src/fixed_cache.rs`, two ways per set
//! at the address the runtime holds at `FIXED_MEMO_OFFSET`) is probed
//! inline as the runtime probes it ([`FnLower::memo_test`]): a loop
//! entered with more receivers than its own cache has ways — a
//! megamorphic call site — then makes no call. In front of both, per
//! loop, a zeroed data object of
//! the module holds the last [`WAYS`] successes — each `[values epoch + 1,
//! (object, word) per object]` — and the index of the way the next success
//! fills (round robin). A way hits when the epoch is unchanged (no object
//! went and no values array was released since), its objects are these and
//! their words still those: each is then the same live object with the
//! same values array, whose capacity the runtime recorded (the capacity
//! word in memory is never read: a raw store may have changed it). The
//! cache is only an optimization: a hit gives the answer the runtime would.
//!
//! Several ways, because a method JIT's loop is entered with a few
//! receivers in turn (a method called on each of a few objects): with one
//! way every entry of such a loop missed and paid the runtime's lock and
//! hash lookup per object (docs/PERFORMANCE.md, "Loop-entry caches of more
//! than one way").

use super::func::internal;
use super::stubs::Stub;
use super::FnLower;
use crate::error::JitError;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self as cl, BlockArg, InstBuilder, MemFlagsData};
use cranelift_module::{DataDescription, Module as ClModule};
use guardlift_abi::{offsets, Entry};
use guardlift_ir::Value;

/// Ways of a loop's entry cache (a power of two: the index of the next way
/// to fill is masked, so that no value in the data object makes a fill
/// write outside it).
const WAYS: usize = 4;

// The memo probe picks one of two ways (`FnLower::memo_test`).
const _: () = assert!(offsets::FIXED_MEMO_WAYS == 2);

/// Bytes between two ways for `n` objects: the stamp, then (object,
/// word) each, rounded up to a power of two (a way's offset is a shift of
/// its index).
fn way_bytes(n: usize) -> i32 {
    (8 + 16 * n as u32).next_power_of_two() as i32
}

/// A loop's entry cache as the dispatch probed it: its address, the stamp
/// of this entry and the objects, for the fill after a miss.
pub(super) struct Probed {
    cache: cl::Value,
    epoch: cl::Value,
    stamp: cl::Value,
    objs: Vec<cl::Value>,
}

impl<M: ClModule + ?Sized> FnLower<'_, '_, M> {
    /// The entry test of the loop's fixed attributes `attrs` (the builder
    /// in a block of its own, after the shadow tests passed where the
    /// dispatch makes any): the cache,
    /// then the runtime on a miss; a branch with `args` to `clean` when it
    /// holds, to `checked` otherwise (see the module doc).
    pub(super) fn fixed_attrs_test(
        &mut self,
        attrs: &[(Value, u32)],
        args: &[BlockArg],
        clean: cl::Block,
        checked: cl::Block,
    ) -> Result<(), JitError> {
        // The runtime's own-values marks first (`ownvalues`): no cache
        // to probe or fill for the model heap's objects.
        self.own_values_entry(attrs, args, clean)?;
        let probed = self.fixed_attrs_probe(attrs, args, clean)?;
        self.fixed_attrs_ask(probed, attrs, args, (clean, checked))
    }

    /// The cache probe of `attrs`: a branch with `args` to `clean` on a
    /// hit; the builder is left in the miss block. A way matches when its
    /// objects are these (tested first: one load and compare per object
    /// for a way of other objects), then its stamp is this entry's and the
    /// words are unchanged.
    pub(super) fn fixed_attrs_probe(
        &mut self,
        attrs: &[(Value, u32)],
        args: &[BlockArg],
        clean: cl::Block,
    ) -> Result<Probed, JitError> {
        use cl::types::I64;
        let way = way_bytes(attrs.len());
        let obj_at = |w: i32, i: usize| w + 8 + 16 * i as i32;
        // The ways, then the index of the next way to fill.
        let cursor_at = way * WAYS as i32;
        let data = (self.m.declare_anonymous_data(true, false))
            .map_err(|e| JitError::module(format!("@{}: loop entry cache", self.fname), e))?;
        let mut desc = DataDescription::new();
        desc.define_zeroinit(cursor_at as usize + 8);
        desc.set_align(8);
        (self.m.define_data(data, &desc))
            .map_err(|e| JitError::module(format!("@{}: loop entry cache", self.fname), e))?;
        let gv = super::far_data(self.m, data, self.b.func);
        let cache = self.b.ins().symbol_value(I64, gv);
        let rt = self.rt()?;
        let flags = MemFlagsData::trusted();
        let epoch = (self.b.ins()).load(I64, flags, rt, guardlift_abi::VALUES_EPOCH_OFFSET);
        let stamp = self.b.ins().iadd_imm_s(epoch, 1);
        let objs: Vec<cl::Value> = (attrs.iter())
            .map(|&(o, _)| self.val(o))
            .collect::<Result<_, _>>()?;
        let miss = self.b.create_block();
        for k in 0..WAYS {
            let w = way * k as i32;
            let next = match k + 1 < WAYS {
                true => self.b.create_block(),
                false => miss,
            };
            // The objects of way k: one compare and branch each (no
            // `band` of flags: a branch per test is shorter on every
            // target and leaves at the first difference).
            for (i, &o) in objs.iter().enumerate() {
                let c = self.b.ins().load(I64, flags, cache, obj_at(w, i));
                let eq = self.b.ins().icmp(IntCC::Equal, c, o);
                self.pass_if(eq, next);
            }
            // Its stamp and the words: no object went and no values array
            // was released since it was filled, and each object still has
            // the values array whose recorded capacity the runtime tested
            // (a record changes only when the array is released, which
            // moves the epoch). The words are read only here, of objects
            // the way holds: never of an object no success named.
            let cached = self.b.ins().load(I64, flags, cache, w);
            let eq = self.b.ins().icmp(IntCC::Equal, cached, stamp);
            self.pass_if(eq, next);
            for (i, &o) in objs.iter().enumerate() {
                let word = self.load_word(o);
                let c = self.b.ins().load(I64, flags, cache, obj_at(w, i) + 8);
                let eq = self.b.ins().icmp(IntCC::Equal, word, c);
                self.pass_if(eq, next);
            }
            self.b.ins().jump(clean, args);
            self.b.switch_to_block(next);
        }
        Ok(Probed {
            cache,
            epoch,
            stamp,
            objs,
        })
    }

    /// After a miss of the probe (the builder in a block whose paths all
    /// passed the shadow tests, where the dispatch makes any: `attr_fixed`
    /// implies them for its objects, `super::dispatch`): the runtime's memo of `attr_fixed`
    /// successes, inline, then the runtime itself (a cold block) when the
    /// memo does not answer for every object; on success fill the next way
    /// and branch with `args` to `clean`, else to `checked`.
    pub(super) fn fixed_attrs_ask(
        &mut self,
        Probed {
            cache,
            epoch,
            stamp,
            objs,
        }: Probed,
        attrs: &[(Value, u32)],
        args: &[BlockArg],
        (clean, checked): (cl::Block, cl::Block),
    ) -> Result<(), JitError> {
        use cl::types::I64;
        let way = way_bytes(attrs.len());
        let obj_at = |w: i32, i: usize| w + 8 + 16 * i as i32;
        let cursor_at = way * WAYS as i32;
        let flags = MemFlagsData::trusted();
        let fill = self.b.create_block();
        let ask = self.b.create_block();
        let rt = self.rt()?;
        let memo = self
            .b
            .ins()
            .load(I64, flags, rt, offsets::FIXED_MEMO_OFFSET);
        for (&o, &(_, max)) in objs.iter().zip(attrs) {
            self.memo_test(memo, epoch, o, max, ask);
        }
        self.b.ins().jump(fill, &[]);
        self.b.switch_to_block(ask);
        self.b.set_cold_block(ask);
        let mut fixed = Vec::with_capacity(objs.len());
        for (&o, &(_, max)) in objs.iter().zip(attrs) {
            let mx = self.iconst(cl::types::I32, i64::from(max));
            let r = self
                .call_stub(Stub::Check(Entry::AttrFixed), &[o, mx])?
                .ok_or_else(|| internal(self.fname, "gl_attr_fixed returns nothing"))?;
            fixed.push(r);
        }
        let all = self.band_all(fixed)?;
        self.b.ins().brif(all, fill, &[], checked, args);
        self.b.switch_to_block(fill);
        let k = self.b.ins().load(I64, flags, cache, cursor_at);
        let k = self.b.ins().band_imm_u(k, WAYS as i64 - 1);
        let off = self.b.ins().ishl_imm_u(k, i64::from(way.trailing_zeros()));
        let at = self.b.ins().iadd(cache, off);
        self.b.ins().store(flags, stamp, at, 0);
        for (i, &o) in objs.iter().enumerate() {
            let word = self.load_word(o);
            self.b.ins().store(flags, o, at, obj_at(0, i));
            self.b.ins().store(flags, word, at, obj_at(0, i) + 8);
        }
        let k1 = self.b.ins().iadd_imm_s(k, 1);
        self.b.ins().store(flags, k1, cache, cursor_at);
        self.b.ins().jump(clean, args);
        Ok(())
    }

    /// The runtime's memo (`runtime/src/fixed_cache.rs`, at `memo`) probed
    /// for `obj` as its `lookup` does: goes on (in a new block) when the
    /// way of `obj`'s set naming it holds a success for it filled at
    /// values epoch `epoch`, read consistently (the sequence number even,
    /// not 0, and the same before and after; every field an acquire load,
    /// so in order on every target), with more than `max` attributes and
    /// the word it
    /// recorded still in the object's slot; branches to `ask` otherwise.
    /// The word is read only after the entry named `obj` at this epoch: the
    /// heap knew it as a live object then, and no object went since.
    fn memo_test(
        &mut self,
        memo: cl::Value,
        epoch: cl::Value,
        obj: cl::Value,
        max: u32,
        ask: cl::Block,
    ) {
        use cl::types::I64;
        use offsets::*;
        let flags = MemFlagsData::trusted();
        let granule = self.b.ins().ushr_imm_u(obj, 3);
        let h = self.b.ins().imul_imm_s(granule, FIXED_MEMO_HASH as i64);
        let set = self
            .b
            .ins()
            .ushr_imm_u(h, i64::from(64 - FIXED_MEMO_SETS_LOG2));
        let set_bytes = FIXED_MEMO_ENTRY_BYTES_LOG2 + FIXED_MEMO_WAYS.trailing_zeros();
        let off = self.b.ins().ishl_imm_u(set, i64::from(set_bytes));
        let e0 = self.b.ins().iadd(memo, off);
        // The way naming `obj` (a hint, read again below): the first, or
        // else the second.
        let o0 = (self.b.ins()).load(I64, flags, e0, FIXED_MEMO_OBJ);
        let first = self.b.ins().icmp(IntCC::Equal, o0, obj);
        let e1 = self
            .b
            .ins()
            .iadd_imm_s(e0, 1 << FIXED_MEMO_ENTRY_BYTES_LOG2);
        let e = self.b.ins().select(first, e0, e1);
        let field = |s: &mut Self, at: i32| {
            let p = s.b.ins().iadd_imm_s(e, i64::from(at));
            s.b.ins().atomic_load(I64, flags, p)
        };
        let seq = field(self, FIXED_MEMO_SEQ);
        // Even and not 0 (a write under way; never filled): rotated right
        // by one, a positive number.
        let rot = self.b.ins().rotr_imm_u(seq, 1);
        let ok = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, rot, 0);
        self.pass_if(ok, ask);
        let o = field(self, FIXED_MEMO_OBJ);
        let ok = self.b.ins().icmp(IntCC::Equal, o, obj);
        self.pass_if(ok, ask);
        let ep = field(self, FIXED_MEMO_EPOCH);
        let ok = self.b.ins().icmp(IntCC::Equal, ep, epoch);
        self.pass_if(ok, ask);
        let n = field(self, FIXED_MEMO_N_ATTRS);
        let ok = (self.b.ins()).icmp_imm_u(IntCC::UnsignedGreaterThan, n, i64::from(max));
        self.pass_if(ok, ask);
        let recorded = field(self, FIXED_MEMO_WORD);
        let again = field(self, FIXED_MEMO_SEQ);
        let ok = self.b.ins().icmp(IntCC::Equal, again, seq);
        self.pass_if(ok, ask);
        let word = self.load_word(obj);
        let ok = self.b.ins().icmp(IntCC::Equal, word, recorded);
        self.pass_if(ok, ask);
    }

    /// Goes on in a new block (left current) when `eq` is non-zero, else
    /// branches to `fail`.
    fn pass_if(&mut self, eq: cl::Value, fail: cl::Block) {
        let pass = self.b.create_block();
        self.b.ins().brif(eq, pass, &[], fail, &[]);
        self.b.switch_to_block(pass);
    }

    /// The `band` of `bits` (booleans of one type; at least one).
    fn band_all(&mut self, bits: Vec<cl::Value>) -> Result<cl::Value, JitError> {
        let mut it = bits.into_iter();
        let first = it
            .next()
            .ok_or_else(|| internal(self.fname, "no fixed attribute"))?;
        Ok(it.fold(first, |a, b| self.b.ins().band(a, b)))
    }
}
