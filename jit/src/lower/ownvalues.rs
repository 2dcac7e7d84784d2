//! Own values (issue 33): one test of the runtime's records stands for an
//! attribute op's lifetime, watch, dict and bounds tests when the object
//! is a live model-heap object working on its own values array.
//!
//! The model heap allocates every object with its values array at a fixed
//! distance `K` from it (`Heap::own_values_offset`, one allocation, each
//! block between its own redzones) and writes the **own-values mark**
//! (`0x80 | watch id`, [`shadow::own_values_mark`]) into the capacity
//! table at the granule of that array's capacity word. The mark is there
//! exactly while the object lives and the array is its own: `obj_new`
//! sets it after watching the object's slot and recording the array's
//! capacity; `forget_values` (the object's free, or the `obj_dictify`
//! that releases the array) clears it with the record. Nothing but the
//! runtime writes the table, and no capacity byte reaches `0x80`.
//!
//! So at an attribute op on `o` with highest index `max` (its group's),
//! when
//!
//! 1. `o + K − 8` is 8-aligned and below 2^47 (its rotation by 3 is its
//!    granule index),
//! 2. the table's byte at that granule is this runtime's mark — so `o` is
//!    a live object of this runtime's heap (the granule determines the
//!    object), its slot is watched, `o + K` is its own live array,
//! 3. the table's byte at the next granule (`o + K`, the array) exceeds
//!    `max` — the recorded capacity, and
//! 4. `o`'s word is `o + K − 1` — the values word of that array (a valid
//!    tag; the access goes where the word says),
//!
//! every one of those checks would pass: the op goes straight to its
//! access, addressed from `o`. Any other outcome runs the checks as ever
//! (they decide and report exactly as without this test). The
//! interpreter verifies the implication at every attribute op it runs
//! (`interp`, `check_own_values`): a mismatch is an internal error.

use super::FnLower;
use crate::error::JitError;
use cranelift_codegen::ir::MemFlagsData;
use cranelift_codegen::ir::{self as cl, condcodes::IntCC, types, BlockArg, InstBuilder};
use cranelift_module::Module as ClModule;
use guardlift_ir::InstKind;
use guardlift_runtime::heap::Heap;
use guardlift_runtime::shadow;

use super::guards::DICT_CHECK_ADD;

/// An own-values test made for the attribute op about to be lowered: its
/// object and the block its pass jumps to with the tested word (not yet
/// filled: the op's checks join it there, `own_values_join`).
#[derive(Copy, Clone, Debug)]
pub(super) struct OwnHit {
    obj: cl::Value,
    access: cl::Block,
    /// The first block made after the test: the checks' blocks, cold.
    first_cold: usize,
}

impl<M: ClModule + ?Sized> FnLower<'_, '_, M> {
    /// The shadow base, this runtime's mark and `K`, when an own-values
    /// test can be made for a highest index of `max`.
    fn own_values_params(&self, max: u32) -> Option<(u64, u8, i64)> {
        let sh = self.lw.shadow.filter(|sh| sh.own_values)?;
        let mark = shadow::own_values_mark(sh.watch_id?)?;
        (u64::from(max) < shadow::CAPACITY_BYTE_MAX).then_some((
            sh.base,
            mark,
            Heap::own_values_offset(self.lw.ir.layout),
        ))
    }

    /// Emits the own-values test of `o` for attribute op `op` of the
    /// current block. Its pass (hot, falling through the tests) defines
    /// the op's group verdict when the op opens a group (the test tested
    /// the group's highest index), vouches for `o` as the checks would
    /// (`entryvariant`: live, its slot watched) and jumps to the access
    /// block with the word it tested, `o + K − 1`; its failure goes to a
    /// new cold block, left current, where the checks run as ever. `None`,
    /// emitting nothing, when no test can be made.
    fn own_values_test(&mut self, o: cl::Value, op: u32) -> Option<OwnHit> {
        let max = self.own_values_max(op)?;
        let params = self.own_values_params(max)?;
        let k = params.2;
        let miss = self.b.create_block();
        self.b.set_cold_block(miss);
        let access = self.b.create_block();
        self.b.append_block_param(access, types::I64);
        self.own_values_tests(o, max, params, miss);
        if let Some((gi, g)) = self.attr.group_of(self.at.0, op) {
            if g.members.first() == Some(&op) {
                let (clean, _) = self.attr_vars(gi);
                let one = self.iconst(types::I8, 1);
                self.b.def_var(clean, one);
            }
        }
        self.vouch_live(true);
        let inst = self.f.blocks[self.at.0 as usize].insts.get(op as usize);
        if inst
            .and_then(|i| self.own_demand_of(i))
            .is_some_and(|d| d <= max)
        {
            self.vouch_own();
        }
        let own = self.b.ins().iadd_imm_s(o, k - 1);
        self.b.ins().jump(access, &[BlockArg::Value(own)]);
        self.b.switch_to_block(miss);
        let first_cold = self.b.func.dfg.num_blocks();
        Some(OwnHit {
            obj: o,
            access,
            first_cold,
        })
    }

    /// In an own variant, an attribute op on `obj` that its plan covers
    /// (a param whose caller's own-values test passed with its demand, in
    /// the own region), with every member of its group: `obj`'s word as
    /// the test would have seen it, `obj + K − 1`, from which the op
    /// addresses the values array — no load of the word, no test.
    pub(super) fn own_static_word(
        &mut self,
        obj: guardlift_ir::Value,
    ) -> Result<Option<cl::Value>, JitError> {
        let (f, (bi, ii)) = (self.f, self.at);
        let Some(plan) = &self.own_plan else {
            return Ok(None);
        };
        let inst = &f.blocks[bi as usize].insts[ii as usize];
        if !plan.covers(f, (bi, ii), inst) {
            return Ok(None);
        }
        if let Some((_, g)) = self.attr.group_of(bi, ii) {
            if !g.members.iter().all(|&m| plan.in_region(bi, m)) {
                return Ok(None);
            }
        }
        let o = self.val(obj)?;
        let k = Heap::own_values_offset(self.lw.ir.layout);
        Ok(Some(self.b.ins().iadd_imm_s(o, k - 1)))
    }

    /// The four tests of the module docs for `o` and a highest index of
    /// `max`, with the [`Self::own_values_params`] of `max`, each
    /// branching to `miss` when it fails; the builder goes on where all
    /// passed.
    fn own_values_tests(
        &mut self,
        o: cl::Value,
        max: u32,
        (base, mark, k): (u64, u8, i64),
        miss: cl::Block,
    ) {
        let flags = MemFlagsData::new().with_notrap();
        // 1. The capacity word's granule index, when aligned and low.
        let cap_word = self.b.ins().iadd_imm_s(o, k - 8);
        let g = self
            .b
            .ins()
            .rotr_imm_u(cap_word, shadow::GRANULE_SHIFT as i64);
        let far =
            (self.b.ins()).icmp_imm_u(IntCC::UnsignedGreaterThan, g, shadow::INDEX_MASK as i64);
        self.then(far, miss);
        // 2. The mark, 3. the capacity byte of the next granule (the
        // table has slack past its last index).
        let table = base.wrapping_add(shadow::CAPACITY_TABLE_OFFSET);
        let at = self.b.ins().iadd_imm_u(g, table as i64);
        let m = self.b.ins().uload8(types::I32, flags, at, 0);
        let other = self.b.ins().icmp_imm_u(IntCC::NotEqual, m, i64::from(mark));
        self.then(other, miss);
        let cap = self.b.ins().uload8(types::I32, flags, at, 1);
        let small = (self.b.ins()).icmp_imm_u(IntCC::UnsignedLessThanOrEqual, cap, i64::from(max));
        self.then(small, miss);
        // 4. The word.
        let word = self.load_word(o);
        let own = self.b.ins().iadd_imm_s(o, k - 1);
        let other = self.b.ins().icmp(IntCC::NotEqual, word, own);
        self.then(other, miss);
    }

    /// The entry test of a versioned loop's fixed attributes
    /// (`entrycache::fixed_attrs_test`), before its cache: when every
    /// object of `attrs` (with its highest index) passes its own-values
    /// test, `attr_fixed` holds for it — a live object of the model heap
    /// whose word is its own values array's, of a capacity above the
    /// index (`Heap::fixed_record`) — and the entry goes to `clean` with
    /// `args`. The builder is left in the (cold) block where one failed;
    /// false, emitting nothing, when a test cannot be made.
    pub(super) fn own_values_entry(
        &mut self,
        attrs: &[(guardlift_ir::Value, u32)],
        args: &[BlockArg],
        clean: cl::Block,
    ) -> Result<bool, JitError> {
        let params: Option<Vec<_>> = (attrs.iter())
            .map(|&(_, m)| self.own_values_params(m))
            .collect();
        let Some(params) = params.filter(|p| !p.is_empty()) else {
            return Ok(false);
        };
        let miss = self.b.create_block();
        self.b.set_cold_block(miss);
        for (&(o, max), p) in attrs.iter().zip(params) {
            let o = self.val(o)?;
            self.own_values_tests(o, max, p, miss);
        }
        self.b.ins().jump(clean, args);
        self.b.switch_to_block(miss);
        Ok(true)
    }

    /// Marks every block made since block number `first` cold (Cranelift
    /// lays cold blocks out after the others).
    pub(super) fn cold_since(&mut self, first: usize) {
        for i in first..self.b.func.dfg.num_blocks() {
            self.b.set_cold_block(cl::Block::from_u32(i as u32));
        }
    }

    /// Branches to `to` when `cond` is non-zero, else goes on in a new
    /// block.
    fn then(&mut self, cond: cl::Value, to: cl::Block) {
        let next = self.b.create_block();
        self.b.ins().brif(cond, to, &[], next, &[]);
        self.b.switch_to_block(next);
    }

    /// The highest index an own-values test before attribute op `ii` of
    /// the current block tests: its group's when it opens one, else its
    /// own; `None` for any other instruction.
    fn own_values_max(&self, ii: u32) -> Option<u32> {
        let inst = self.f.blocks[self.at.0 as usize].insts.get(ii as usize)?;
        let index = match inst.kind {
            InstKind::LoadAttr { index, .. } | InstKind::StoreAttr { index, .. } => index,
            _ => return None,
        };
        let max = match self.attr.group_of(self.at.0, ii) {
            Some((_, g)) if g.members.first() == Some(&ii) => g.max_index.max(index),
            _ => index,
        };
        // A value an own variant's call may vouch for: its demand.
        Some(match self.own_demand_of(inst) {
            Some(d) => max.max(d),
            None => max,
        })
    }

    /// The demand of the object of attribute op `inst` when it has a
    /// `life` variable to keep a pass in (`entryvariant`, [`LIFE_OWN`]).
    fn own_demand_of(&self, inst: &guardlift_ir::Inst) -> Option<u32> {
        let o = inst.kind.dict_obj()?;
        self.own_tracked(o).then_some(())?;
        self.lw.own_demand(self.id, o)
    }

    /// At a `guard.watch` of `o` fused with the next instruction's
    /// lifetime check (`next_checks_life_of_watched`): when that is an
    /// attribute op, its own-values test, before the watch's own test.
    pub(super) fn own_values_at_watch(&mut self, o: cl::Value) {
        if self.own.is_none() {
            self.own = self.own_values_test(o, self.at.1 + 1);
        }
    }

    /// At the start of an attribute op's checks (`memory::attr_access`):
    /// the pending test of a fused `guard.watch` of `o`, else, when the
    /// op has a lifetime check to save, a test made here. The checks'
    /// fast path joins its pass ([`Self::own_values_join`]).
    pub(super) fn own_values_before(
        &mut self,
        o: cl::Value,
        lifetime: bool,
    ) -> Result<Option<OwnHit>, JitError> {
        if let Some(own) = self.own.take() {
            if own.obj != o {
                return Err(super::func::internal(
                    self.fname,
                    "an own-values test of another object",
                ));
            }
            return Ok(Some(own));
        }
        Ok(if lifetime {
            self.own_values_test(o, self.at.1)
        } else {
            None
        })
    }

    /// After the checks, on their values fast path with `base` (in the
    /// form [`Self::attr_offset`] takes; `checked`: the dict check's,
    /// `word + DICT_CHECK_ADD`): joins the own-values pass in its access
    /// block, which takes the word; returns the base, in that form, both
    /// paths go on with.
    pub(super) fn own_values_join(
        &mut self,
        own: OwnHit,
        base: cl::Value,
        checked: bool,
    ) -> cl::Value {
        let add = if checked { DICT_CHECK_ADD as i64 } else { 0 };
        let word = self.b.ins().iadd_imm_s(base, -add);
        self.b.ins().jump(own.access, &[BlockArg::Value(word)]);
        // The checks ran where the test failed: every block they made is
        // laid out after the hot code, which jumps over none of them.
        self.cold_since(own.first_cold);
        self.b.switch_to_block(own.access);
        let word = self.b.block_params(own.access)[0];
        self.b.ins().iadd_imm_s(word, add)
    }
}

#[cfg(test)]
mod tests {
    use super::super::version::tests::{lower_first, WATCHING};
    use super::super::ShadowRef;
    use cranelift_codegen::ir::condcodes::IntCC;
    use cranelift_codegen::ir::{Function, InstructionData};
    use guardlift_instrument::CheckSet;
    use guardlift_runtime::shadow;

    /// How many `icmp cond x, imm` of `f` compare with the constant `imm`.
    fn compares(f: &Function, cond: IntCC, imm: i64) -> usize {
        let konst = |v| match f.dfg.value_def(v).inst().map(|k| &f.dfg.insts[k]) {
            Some(InstructionData::UnaryImm { imm, .. }) => Some(imm.bits()),
            _ => None,
        };
        (f.layout.blocks())
            .flat_map(|b| f.layout.block_insts(b))
            .filter(|&i| match f.dfg.insts[i] {
                InstructionData::IntCompare { cond: c, args, .. } => {
                    c == cond && konst(args[1]) == Some(imm)
                }
                _ => false,
            })
            .count()
    }

    /// How many tests of runtime 1's own-values mark `f` makes.
    fn mark_tests(f: &Function) -> usize {
        let mark = shadow::own_values_mark(1).expect("a mark");
        compares(f, IntCC::NotEqual, i64::from(mark))
    }

    const GROUP: &str = "fn @f(%o: ptr, %p: ptr) -> i64 {\nentry:\n    %x = load_attr %o, 2\n    store_attr %o, 5, %x\n    %y = load_attr %p, 1\n    return %y\n}\n";

    /// An own-values test per object op with a lifetime check: `%o`'s
    /// group's first member (made at its fused `guard.watch`), the checked
    /// fallback of its later member (cold), `%p`'s op; none without a watch
    /// id of the runtime's own, nor without a lifetime check to save.
    #[test]
    fn an_own_values_test_stands_for_each_object_s_first_checks() {
        let f = lower_first(GROUP, CheckSet::ALL, Some(WATCHING));
        assert_eq!(
            mark_tests(&f),
            3,
            "%o's group, its fallback, %p\n{}",
            f.display()
        );
        let shared = ShadowRef {
            watch_id: None,
            ..WATCHING
        };
        let f = lower_first(GROUP, CheckSet::ALL, Some(shared));
        assert_eq!(mark_tests(&f), 0);
        let dict = CheckSet {
            lifetime: false,
            clobber: false,
            ..CheckSet::ALL
        };
        assert_eq!(mark_tests(&lower_first(GROUP, dict, Some(WATCHING))), 0);
    }

    /// The group's test checks its highest index's room, `cap > 5`.
    #[test]
    fn a_group_s_own_values_test_tests_its_highest_index() {
        let f = lower_first(GROUP, CheckSet::ALL, Some(WATCHING));
        let room = |imm| compares(&f, IntCC::UnsignedLessThanOrEqual, imm);
        // The first member's and the later member's fallback's.
        assert_eq!((room(5), room(2)), (2, 0), "{}", f.display());
    }
}
