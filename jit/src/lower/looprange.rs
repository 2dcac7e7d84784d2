//! Loop ranges ([`guardlift_ir::looprange`]): the guarded raw accesses of
//! a counted loop at `base + S·i + off` run unchecked when the whole range
//! the loop can touch passed their checks on the shadow at the loop's
//! entry.
//!
//! Each edge into the loop's header from outside goes through a block of
//! its own (the **entry block**, the header's params): there the counter's
//! start `init` and the bound `n` give the range `[base + S·init + lo,
//! base + S·(n − 1) + hi)` (`guardlift_ir::looprange::entry_range`: no
//! iteration → clean; a start below 0, a bound above 2^32, a range that
//! wraps, leaves the shadow or is wider than `MAX_SPAN` → not clean), and
//! a loop over its granules' shadow bytes looks for a bit the accesses'
//! checks test (eight-byte items from an 8-aligned base, at most eight of
//! them: one shadow word, with no other test of the range). The verdict lives in a Cranelift variable per range (0 at
//! the function's entry: any path that did not test runs the checks);
//! each access branches on it to a plain access or, cold, to its checks.
//! Only with a shadow, and not in a versioned loop (whose entry edges go
//! to its dispatch block) — but for the ranges of a clean copy
//! ([`guardlift_ir::looprange::LoopRange::clean_copy`]): the dispatch tests
//! them on its way into the clean copy (`super::dispatch`) and enters the
//! checked copy when one fails, so the clean copy's accesses run plain
//! (no branch on the verdict); the checked copy's run their checks.

use super::FnLower;
use crate::error::JitError;
use cranelift_codegen::ir::{self as cl, condcodes::IntCC, types, BlockArg, InstBuilder};
use cranelift_frontend::Variable;
use cranelift_module::Module as ClModule;
use guardlift_ir::looprange::{LoopRanges, MAX_BOUND, MAX_SPAN, TOP};
use guardlift_ir::CheckKind;
use guardlift_runtime::shadow;

/// The loop ranges the function's lowering uses.
#[derive(Default)]
pub(super) struct Ranges {
    /// The analysis's ranges.
    pub(super) all: LoopRanges,
    /// By range: its verdict variable (`None`: lowered checked).
    pub(super) vars: Vec<Option<Variable>>,
    /// The entry blocks made so far, with the header each enters.
    pub(super) entries: Vec<(cl::Block, u32)>,
}

impl<M: ClModule + ?Sized> FnLower<'_, '_, M> {
    /// At the function's entry (the builder there): a verdict variable,
    /// 0, for each range whose loop is not versioned.
    pub(super) fn plan_loop_ranges(&mut self) {
        let n = self.ranges.all.ranges().len();
        let mut vars = Vec::with_capacity(n);
        for r in self.ranges.all.ranges() {
            // A versioned loop's entries go to its dispatch: only the
            // clean copy's ranges are tested there (`enter_copies`), and
            // only where the dispatch also tests `attr_fixed` for the
            // loop's fixed objects — what keeps their attribute ops off
            // the slow paths, which could change the records.
            let version = self.version_of_header.get(&r.header);
            let tested = match r.clean_copy {
                true => version.is_some_and(|&k| !self.versions[k].attrs.is_empty()),
                false => version.is_none(),
            };
            if !tested {
                vars.push(None);
                continue;
            }
            let v = self.b.declare_var(types::I8);
            let zero = self.b.ins().iconst(types::I8, 0);
            self.b.def_var(v, zero);
            vars.push(Some(v));
        }
        self.ranges.vars = vars;
    }

    /// Does a branch of the block being lowered to IR block `b` enter a
    /// loop with ranges from outside?
    pub(super) fn enters_ranged_loop(&self, b: u32) -> bool {
        let from = self.at.0;
        (self.ranges.all.of_header(b)).any(|(i, r)| {
            !r.clean_copy
                && self.ranges.vars.get(i).is_some_and(|v| v.is_some())
                && !r.contains(from)
        })
    }

    /// In entry block `x` of the loop headed by `h` (the builder there):
    /// each range's verdict from `x`'s params.
    pub(super) fn test_loop_ranges(&mut self, x: cl::Block, h: u32) -> Result<(), JitError> {
        let Some(sh) = self.lw.shadow else {
            return Ok(());
        };
        let params: Vec<cl::Value> = self.b.block_params(x).to_vec();
        let todo: Vec<usize> = (self.ranges.all.of_header(h)).map(|(i, _)| i).collect();
        for i in todo {
            let Some(var) = self.ranges.vars[i] else {
                continue;
            };
            let r = self.ranges.all.ranges()[i].clone();
            let init = *params
                .get(r.counter)
                .ok_or_else(|| super::func::internal(self.fname, "a loop counter out of range"))?;
            let n = self.val(r.bound)?;
            let base = self.val(r.base)?;
            let mut mask = 0u8;
            if r.checks.contains(CheckKind::Lifetime) || r.checks.contains(CheckKind::Bounds) {
                mask |= shadow::FREED_MEM | shadow::REDZONE;
            }
            if r.checks.contains(CheckKind::Clobber) {
                mask |= shadow::WATCH_MASK;
            }
            let done = self.b.create_block();
            let verdict = self.b.append_block_param(done, types::I8);
            let (chk, scan_pre, scan, next) = (
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
            );
            let one = self.b.ins().iconst(types::I8, 1);
            let zero = self.b.ins().iconst(types::I8, 0);
            // No iteration: nothing to test.
            let empty = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, n, init);
            (self.b.ins()).brif(empty, done, &[BlockArg::Value(one)], chk, &[]);
            self.b.switch_to_block(chk);
            if r.scale == 8 && r.lo == 0 && r.hi == 8 {
                self.item_range_fast_path((base, init, n), mask, sh.base, done);
            }
            let lo = self.b.ins().imul_imm_s(init, r.scale);
            let lo = self.b.ins().iadd(base, lo);
            let lo = self.b.ins().iadd_imm_s(lo, r.lo);
            let hi = self.b.ins().imul_imm_s(n, r.scale);
            let hi = self.b.ins().iadd(base, hi);
            let hi = self.b.ins().iadd_imm_s(hi, r.hi - r.scale);
            let ok = [
                self.b
                    .ins()
                    .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, init, 0),
                self.b
                    .ins()
                    .icmp_imm_s(IntCC::SignedLessThanOrEqual, n, MAX_BOUND),
                self.b.ins().icmp(IntCC::UnsignedLessThan, lo, hi),
                (self.b.ins()).icmp_imm_u(IntCC::UnsignedLessThanOrEqual, hi, TOP as i64),
            ];
            let span = self.b.ins().isub(hi, lo);
            let narrow =
                (self.b.ins()).icmp_imm_u(IntCC::UnsignedLessThanOrEqual, span, MAX_SPAN as i64);
            let ok = ok.into_iter().fold(narrow, |a, c| self.b.ins().band(a, c));
            (self.b.ins()).brif(ok, scan_pre, &[], done, &[BlockArg::Value(zero)]);
            // The shadow bytes of the granules from lo's to (hi - 1)'s,
            // eight at a time (little-endian: the first granule's byte is
            // the word's lowest).
            self.b.switch_to_block(scan_pre);
            let g0 = self.b.ins().ushr_imm_u(lo, shadow::GRANULE_SHIFT as i64);
            let last = self.b.ins().iadd_imm_s(hi, -1);
            let g1 = self.b.ins().ushr_imm_u(last, shadow::GRANULE_SHIFT as i64);
            let count = self.b.ins().isub(g1, g0);
            let count = self.b.ins().iadd_imm_s(count, 1);
            let short = self
                .b
                .ins()
                .icmp_imm_u(IntCC::UnsignedLessThanOrEqual, count, 8);
            let (few, many) = (self.b.create_block(), self.b.create_block());
            self.b.ins().brif(short, few, &[], many, &[]);
            let mask64 = (mask as u64).wrapping_mul(0x0101_0101_0101_0101) as i64;
            // At most 8 granules: one word, the bytes past the range masked.
            self.b.switch_to_block(few);
            let clean = self.few_granules_clean(sh.base, g0, count, mask64);
            self.b.ins().jump(done, &[BlockArg::Value(clean)]);
            // More: whole words from g0, then the last eight granules.
            self.b.switch_to_block(many);
            let g = self.b.append_block_param(scan, types::I64);
            self.b.ins().jump(scan, &[BlockArg::Value(g0)]);
            self.b.switch_to_block(scan);
            let w = self.shadow_word(sh.base, g);
            let bits = self.b.ins().band_imm_u(w, mask64);
            let zero = self.b.ins().iconst(types::I8, 0);
            (self.b.ins()).brif(bits, done, &[BlockArg::Value(zero)], next, &[]);
            self.b.switch_to_block(next);
            let g2 = self.b.ins().iadd_imm_s(g, 8);
            let end = self.b.ins().iadd_imm_s(g2, 7);
            let more = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, end, g1);
            let tail = self.b.create_block();
            (self.b.ins()).brif(more, scan, &[BlockArg::Value(g2)], tail, &[]);
            self.b.switch_to_block(tail);
            let from = self.b.ins().iadd_imm_s(g1, -7);
            let w = self.shadow_word(sh.base, from);
            let bits = self.b.ins().band_imm_u(w, mask64);
            let clean = self.b.ins().icmp_imm_u(IntCC::Equal, bits, 0);
            self.b.ins().jump(done, &[BlockArg::Value(clean)]);
            self.b.switch_to_block(done);
            self.b.def_var(var, verdict);
        }
        Ok(())
    }

    /// Eight-byte items (`S = 8`, accesses at `[base + 8·i, base + 8·i +
    /// 8)`), in the entry block's test (the builder there, `n > init`
    /// known): a fast path for an 8-aligned base at most `TOP - 64` and at
    /// most eight items (`0 <= init < n <= 8`), which jumps to `done` with
    /// the verdict; leaves the builder in a new block for the general test
    /// otherwise. On the fast path the range passes every condition of the
    /// general test (`hi <= base + 64 <= TOP`), its granules are `g + init`
    /// to `g + n - 1` (`g = base >> 3`, here `base` rotated right by 3:
    /// unaligned, it is at least 2^61) and one shadow word holds them: the
    /// verdict the general test computes, in half its instructions.
    fn item_range_fast_path(
        &mut self,
        (base, init, n): (cl::Value, cl::Value, cl::Value),
        mask: u8,
        shadow_base: u64,
        done: cl::Block,
    ) {
        let (fast, general) = (self.b.create_block(), self.b.create_block());
        let g = self.b.ins().rotr_imm_u(base, shadow::GRANULE_SHIFT as i64);
        let top = ((TOP - 64) >> shadow::GRANULE_SHIFT) as i64;
        let near = (self.b.ins()).icmp_imm_u(IntCC::UnsignedLessThanOrEqual, g, top);
        let few = (self.b.ins()).icmp_imm_u(IntCC::UnsignedLessThanOrEqual, n, 8);
        let from0 = (self.b.ins()).icmp_imm_s(IntCC::SignedGreaterThanOrEqual, init, 0);
        let ok = self.b.ins().band(near, few);
        let ok = self.b.ins().band(ok, from0);
        self.b.ins().brif(ok, fast, &[], general, &[]);
        self.b.switch_to_block(fast);
        let g0 = self.b.ins().iadd(g, init);
        let mask64 = (mask as u64).wrapping_mul(0x0101_0101_0101_0101) as i64;
        let count = self.b.ins().isub(n, init);
        let clean = self.few_granules_clean(shadow_base, g0, count, mask64);
        self.b.ins().jump(done, &[BlockArg::Value(clean)]);
        self.b.switch_to_block(general);
    }

    /// The verdict of `count` granules (1 to 8) from `g0`: one shadow word,
    /// the bytes past them masked off, tested against `mask64` (the
    /// checks' mask in every byte); non-zero when no bit is set.
    fn few_granules_clean(
        &mut self,
        shadow_base: u64,
        g0: cl::Value,
        count: cl::Value,
        mask64: i64,
    ) -> cl::Value {
        let w = self.shadow_word(shadow_base, g0);
        let bits = self.b.ins().band_imm_u(w, mask64);
        let shift = self.b.ins().imul_imm_s(count, -8);
        let shift = self.b.ins().iadd_imm_s(shift, 64);
        let all = self.b.ins().iconst(types::I64, -1);
        let keep = self.b.ins().ushr(all, shift);
        let bits = self.b.ins().band(bits, keep);
        self.b.ins().icmp_imm_u(IntCC::Equal, bits, 0)
    }

    /// For a member of a range whose loop is tested at its entry: the
    /// verdict (non-zero: the access runs unchecked).
    pub(super) fn loop_range_clean(&mut self) -> Option<RangeVerdict> {
        let (bi, ii) = self.at;
        let (i, r) = self.ranges.all.range_of(bi, ii)?;
        // A clean copy's range speaks for that copy only.
        if r.clean_copy && self.in_clean.is_none() {
            return None;
        }
        let var = (*self.ranges.vars.get(i)?)?;
        // The dispatch enters the clean copy only when its ranges passed
        // (`enter_clean_copy`): there the verdict is known.
        Some(match r.clean_copy {
            true => RangeVerdict::Passed,
            false => RangeVerdict::Var(self.b.use_var(var)),
        })
    }

    /// On the way into the clean copy of the loop headed by `h`, from
    /// entry block `x` (the builder there, its ranges just tested by
    /// [`Self::test_loop_ranges`]): all the clean copy's verdicts, and-ed
    /// (`None`: the copy has no tested range).
    pub(super) fn clean_copy_verdict(&mut self, h: u32) -> Option<cl::Value> {
        let vars: Vec<Variable> = (self.ranges.all.of_header(h))
            .filter(|(_, r)| r.clean_copy)
            .filter_map(|(i, _)| self.ranges.vars.get(i).copied().flatten())
            .collect();
        let mut all: Option<cl::Value> = None;
        for var in vars {
            let v = self.b.use_var(var);
            all = Some(match all {
                None => v,
                Some(a) => self.b.ins().band(a, v),
            });
        }
        all
    }
}

/// What a range member's access knows of its range's verdict.
pub(super) enum RangeVerdict {
    /// Tested at the loop's entry: branch on it (non-zero: clean).
    Var(cl::Value),
    /// A clean copy's range: the dispatch entered the copy only after it
    /// passed, so the access runs unchecked.
    Passed,
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::{Calls, LowerConfig, Lowerer, Names, RtRef, ShadowRef};
    use cranelift_codegen::ir::{Function, InstructionData, Opcode, UserFuncName};
    use cranelift_codegen::isa::CallConv;
    use cranelift_frontend::FunctionBuilderContext;
    use cranelift_module::{Linkage, Module};
    use guardlift_instrument::{instrument, CheckSet};
    use guardlift_runtime::Mode;

    /// The shadow base of these tests.
    const SHADOW: u64 = 1 << 40;

    /// The eight-byte shadow reads of the entry tests in `@times` of
    /// spectral_norm (its inner loop walks `u`'s items), lowered with
    /// `checks` and `shadow`.
    fn entry_reads(checks: CheckSet, shadow: Option<ShadowRef>) -> usize {
        shadow_word_reads(("spectral_norm", "times"), checks, shadow)
    }

    /// The eight-byte shadow reads (range tests) in `@func` of
    /// `tests/programs/jitshapes/PROGRAM.glir`, lowered with `checks` and
    /// `shadow`.
    fn shadow_word_reads(
        (program, func): (&str, &str),
        checks: CheckSet,
        shadow: Option<ShadowRef>,
    ) -> usize {
        let f = lowered((program, func), checks, shadow);
        (f.layout.blocks())
            .flat_map(|b| f.layout.block_insts(b))
            .filter(|&i| {
                let d = &f.dfg.insts[i];
                // The address is `g + iconst SHADOW`.
                let from_shadow = || {
                    let at = f.dfg.inst_args(i)[0];
                    let def = f.dfg.value_def(at).inst()?;
                    let k = f.dfg.inst_args(def).get(1).copied()?;
                    match f.dfg.insts[f.dfg.value_def(k).inst()?] {
                        InstructionData::UnaryImm { imm, .. } => Some(imm.bits() as u64 == SHADOW),
                        _ => None,
                    }
                };
                d.opcode() == Opcode::Load
                    && f.dfg.ctrl_typevar(i) == cranelift_codegen::ir::types::I64
                    && from_shadow() == Some(true)
            })
            .count()
    }

    /// `@func` of `tests/programs/jitshapes/PROGRAM.glir`, lowered to
    /// CLIF (not optimized) with `checks` and `shadow`.
    pub(in crate::lower) fn lowered(
        (program, func): (&str, &str),
        checks: CheckSet,
        shadow: Option<ShadowRef>,
    ) -> Function {
        let path = format!(
            "{}/../tests/programs/jitshapes/{program}.glir",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).expect("program");
        let m = instrument(
            &guardlift_ir::parse_and_verify(&text).expect("valid"),
            checks,
        );
        let times = m.func_by_name(func).expect("the function");
        let mut om = crate::target::test_object_module();
        let declare = |f: &guardlift_ir::Function| {
            let sig = super::super::abi::ir_signature(CallConv::SystemV, &f.param_types(), f.ret);
            (om.declare_function(&f.name, Linkage::Local, &sig)).expect("declare")
        };
        let ids: Vec<_> = m.functions.iter().map(declare).collect();
        let cfg = LowerConfig {
            rt: RtRef::Const(0),
            mode: Mode::Recover,
            site_base: 0,
            calls: Calls::Far,
            names: Names::Anonymous,
            shadow,
            host: Default::default(),
        };
        let mut lw = Lowerer::new(&m, &cfg, CallConv::SystemV, ids, Vec::new());
        let (mut f, mut fctx) = (Function::new(), FunctionBuilderContext::new());
        let name = UserFuncName::default();
        (lw.lower_function(&mut om, times, name, &mut f, &mut fctx)).expect("lowered");
        cranelift_codegen::verify_function(&f, om.isa().flags()).expect("verifies");
        f
    }

    /// The inner loop's load is tested at the loop's entry (one read for
    /// up to eight 8-byte items from an aligned base, one for up to eight
    /// granules, the scan's and the tail's for more) wherever
    /// a raw check runs with a shadow; never without one, nor without a
    /// raw check. (The outer loop's store is not ranged: that loop is not
    /// innermost.)
    #[test]
    fn spectral_norms_loops_test_their_ranges_at_the_entry() {
        let shadow = Some(ShadowRef {
            base: SHADOW,
            watch_id: Some(1),
            own_values: true,
        });
        for checks in ["all", "lifetime", "bounds", "lifetime,bounds"] {
            let c = match checks {
                "all" => CheckSet::ALL,
                l => CheckSet::parse(l).expect("checks"),
            };
            assert_eq!(entry_reads(c, shadow), 4, "[{checks}]: one range");
            assert_eq!(entry_reads(c, None), 0, "[{checks}]: no shadow");
        }
        for checks in ["dict", "clobber"] {
            let c = CheckSet::parse(checks).expect("checks");
            assert_eq!(entry_reads(c, shadow), 0, "[{checks}]: no check of a load");
        }
    }

    /// richards' fill loop (`@work_fn`: attribute ops on `w` beside a raw
    /// store into a list) ranges its store in its clean copy — where the
    /// dispatch tests `attr_fixed`, which it does when the clean copy
    /// drops bounds tests: with every check, not without `bounds`.
    #[test]
    fn richards_fill_loop_tests_its_range_where_its_words_are_tested() {
        let shadow = Some(ShadowRef {
            base: SHADOW,
            watch_id: Some(1),
            own_values: true,
        });
        let reads = |checks: &str| {
            let c = match checks {
                "all" => CheckSet::ALL,
                l => CheckSet::parse(l).expect("checks"),
            };
            shadow_word_reads(("richards", "work_fn"), c, shadow)
        };
        assert!(reads("all") > 0, "every check: the clean copy's range");
        assert!(reads("lifetime,bounds,clobber") > 0, "with bounds");
        assert_eq!(reads("lifetime,clobber"), 0, "no attr_fixed test");
    }

    /// richards' fill loop's store into the list (`store %ch, %p`, `%p =
    /// items + i·8`): the dispatch enters the clean copy only after the
    /// copy's range passed, so there the store is one plain store with no
    /// checked twin; the checked copy stores with its checks. Two such
    /// stores in all (three when the clean copy branched on the verdict
    /// per store).
    #[test]
    fn richards_clean_fill_loop_stores_without_a_verdict_branch() {
        let shadow = Some(ShadowRef {
            base: SHADOW,
            watch_id: Some(1),
            own_values: true,
        });
        let f = lowered(("richards", "work_fn"), CheckSet::ALL, shadow);
        let def_op = |v| f.dfg.value_def(v).inst().map(|d| f.dfg.insts[d].opcode());
        let item_stores = (f.layout.blocks())
            .flat_map(|b| f.layout.block_insts(b))
            .filter(|&i| {
                let d = &f.dfg.insts[i];
                if d.opcode() != Opcode::Store {
                    return false;
                }
                // The address `items + off`, `off = i · 8`.
                let Some(at) = f.dfg.value_def(f.dfg.inst_args(i)[1]).inst() else {
                    return false;
                };
                f.dfg.insts[at].opcode() == Opcode::Iadd
                    && (f.dfg.inst_args(at).iter()).any(|&a| def_op(a) == Some(Opcode::Imul))
            })
            .count();
        assert_eq!(
            item_stores, 2,
            "a plain store in the clean copy, a checked one"
        );
    }
}
