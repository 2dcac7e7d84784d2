//! Pure values before the checks' branches ([`FnLower::anchor`]), and
//! only where a later use needs them there ([`Uses`]).

use super::FnLower;
use crate::error::JitError;
use cranelift_codegen::ir::{self as cl, types, InstBuilder};
use cranelift_module::Module as ClModule;
use guardlift_ir::{InstKind, Value};

/// Pure operand trees deeper than this are anchored without looking
/// further (the walk stays bounded on any input).
const MAX_DEPTH: u32 = 16;

/// Of the function being lowered: how often each value is an operand, and
/// the (block, instruction) that defines each instruction result.
pub(super) struct Uses {
    count: Vec<u32>,
    def: Vec<Option<(u32, u32)>>,
}

impl Uses {
    fn of(f: &guardlift_ir::Function) -> Self {
        let mut count = vec![0u32; f.values.len()];
        let mut def = vec![None; f.values.len()];
        for (bi, b) in f.blocks.iter().enumerate() {
            for (ii, inst) in b.insts.iter().enumerate() {
                inst.kind.for_each_operand(|v| {
                    if let Some(c) = count.get_mut(v.0 as usize) {
                        *c = c.saturating_add(1);
                    }
                });
                if let Some(d) = inst.result.and_then(|r| def.get_mut(r.0 as usize)) {
                    *d = Some((bi as u32, ii as u32));
                }
            }
        }
        Uses { count, def }
    }

    /// Can a use of `v` other than the instruction at `at` (in block
    /// `at.0`) need the value, or a pure value it is computed from, after
    /// that instruction? False only when `v` and every pure value of its
    /// operand tree are used once and computed in block `at.0`; the tree
    /// stops at what Cranelift keeps in place (parameters, block
    /// parameters, constants, loads, calls, any non-scalar instruction).
    fn needed_later(&self, f: &guardlift_ir::Function, v: Value, at: u32, depth: u32) -> bool {
        let Some(Some((bi, ii))) = self.def.get(v.0 as usize).copied() else {
            return false;
        };
        let kind = &f.blocks[bi as usize].insts[ii as usize].kind;
        match kind {
            InstKind::Iconst { .. } | InstKind::Fconst { .. } => return false,
            guardlift_ir::scalar_inst!() => {}
            _ => return false,
        }
        if depth >= MAX_DEPTH || bi != at || self.count[v.0 as usize] != 1 {
            return true;
        }
        let mut later = false;
        kind.for_each_operand(|x| later = later || self.needed_later(f, x, at, depth + 1));
        later
    }
}

impl<M: ClModule + ?Sized> FnLower<'_, '_, M> {
    /// Makes Cranelift compute `v` here, before the branches of the
    /// instruction about to be lowered, when `v` is the result of a pure
    /// operation (arithmetic, conversions; not a constant, load or call)
    /// that a later instruction may need ([`Uses`]): one store of it to a
    /// frame slot nothing reads.
    ///
    /// Why: Cranelift's optimizer lets pure values float and places each
    /// where the first instruction with an effect uses it, scoped by the
    /// dominator tree (its "scoped elaboration"). An instruction lowered
    /// as a diamond — a checked store in its fast arm, `store_attr`'s
    /// values and dict arms, a checked adstack push — uses its operand
    /// only inside an arm, which dominates nothing after the join: a later
    /// use of the same value (or of anything it was computed from)
    /// computes it all again (wasmtime issue 8959). In nbody's pair loop
    /// the distance's `sqrt` and `fdiv` ran six times per pair instead of
    /// once. A store is the one use Cranelift keeps in place, and costs
    /// one store to a private slot (docs/CODEGEN.md, "Pure values and the
    /// checks' branches"). A value used once, from a tree of such values
    /// of this block, has no later use to serve: it is left to float into
    /// the arm (the same work on the fast path, no store).
    pub(super) fn anchor(&mut self, v: Value) -> Result<(), JitError> {
        use cl::Opcode as O;
        let x = self.val(v)?;
        let cl::ValueDef::Result(i, _) = self.b.func.dfg.value_def(x) else {
            return Ok(());
        };
        let op = self.b.func.dfg.insts[i].opcode();
        if matches!(op, O::Iconst | O::F32const | O::F64const)
            || op.can_load()
            || op.can_store()
            || op.is_call()
            || op.can_trap()
            || op.other_side_effects()
        {
            return Ok(());
        }
        let f = self.f;
        let uses = self.anchor_uses.get_or_insert_with(|| Uses::of(f));
        if !uses.needed_later(f, v, self.at.0, 0) {
            return Ok(());
        }
        let slot = super::func::slot8(&mut self.b, &mut self.anchor_slot);
        self.b.ins().stack_store(types::I64, x, slot, 0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = "
fn @f(%o: ptr, %a: i64, %b: i64) -> i64 {
entry:
    %x = iadd %a, %b
    store_attr %o, 0, %x
    %s = imul %a, %b
    %y = iadd %s, %a
    store_attr %o, 1, %y
    %l = load_attr %o, 2
    %w = iadd %l, %s
    %q = isub %a, %b
    jump next
next:
    store_attr %o, 3, %q
    %c0 = iadd %a, %b
    %c1 = iadd %c0, %b
    %c2 = iadd %c1, %b
    %c3 = iadd %c2, %b
    %c4 = iadd %c3, %b
    %c5 = iadd %c4, %b
    %c6 = iadd %c5, %b
    %c7 = iadd %c6, %b
    %c8 = iadd %c7, %b
    %c9 = iadd %c8, %b
    %d0 = iadd %c9, %b
    %d1 = iadd %d0, %b
    %d2 = iadd %d1, %b
    %d3 = iadd %d2, %b
    %d4 = iadd %d3, %b
    %d5 = iadd %d4, %b
    %d6 = iadd %d5, %b
    store_attr %o, 4, %d6
    %c = iconst.i64 7
    store_attr %o, 5, %c
    return %w
}
";

    /// Which stored values [`Uses::needed_later`] anchors: `(name, block)`.
    fn needed(name: &str, block: u32) -> bool {
        let m = guardlift_ir::parse_and_verify(MODULE).expect("the module");
        let f = &m.functions[0];
        let v = (f.values.iter().position(|d| d.name.as_str() == name))
            .map(|i| Value(i as u32))
            .expect("the value");
        Uses::of(f).needed_later(f, v, block, 0)
    }

    #[test]
    fn only_values_a_later_use_may_need_are_anchored() {
        // Used once, computed in this block from parameters: floats freely.
        assert!(!needed("x", 0));
        // Used once, but computed from `%s`, which `%w` uses again.
        assert!(needed("y", 0));
        // Computed in another block than the store's.
        assert!(needed("q", 1));
        // A tree deeper than MAX_DEPTH is anchored without looking further.
        assert!(needed("d6", 1));
        // Shallower single-use trees are not.
        assert!(!needed("c5", 1));
        // Constants and parameters are never pure results to anchor.
        assert!(!needed("c", 1));
        assert!(!needed("a", 0));
    }
}
