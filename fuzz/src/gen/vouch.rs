//! Calls whose object arguments the caller's own tests vouch for (issue
//! 33, entry variants: `guardlift_ir::analysis::entry`,
//! `jit/src/lower/entryvariant.rs`). The JIT runs a callee without the
//! lifetime checks and watches of such params inside its entry region —
//! the blocks before its first call — when the caller's tests since its
//! latest call, on the value it passes, passed.
//!
//! - A helper with an object param reads that param's dict slot first
//!   (its tag bits: the same for every live values-tagged object), in its
//!   entry region: a test that only the lifetime check covers (no bounds
//!   test re-checks the object's values array there).
//! - The fault ([`FnGen::vouch_fault`], half the calls of a helper in a
//!   module with faults): a freed object reaches such a
//!   call through a value whose old object the caller's tests vouched
//!   for — a block param that takes the freed object on a back edge (no
//!   call between), or the object itself, tested and then freed (the free
//!   is the call between). The callee's own checks must report it.

use super::{FnGen, Param};
use guardlift_ir::{BinOp, Type};

impl FnGen<'_, '_, '_> {
    /// In a helper's prologue: two times in three, the tag bits of an
    /// object param's dict slot (see the module's header) — mostly the
    /// first one's, the param [`FnGen::vouch_fault`] passes its freed
    /// object for.
    pub(super) fn param_slot_read(&mut self) {
        let Some(i) = self.helper else {
            return;
        };
        let params = self.ms.helpers[i].params.clone();
        let objs: Vec<usize> = (params.iter().enumerate())
            .filter(|(_, p)| matches!(p, Param::Obj(..)))
            .map(|(k, _)| k)
            .collect();
        if objs.is_empty() || !self.src.chance(2, 3) {
            return;
        }
        let k = match self.src.chance(2, 3) {
            true => objs[0],
            false => objs[self.src.index(objs.len())],
        };
        let p = self.fb.param(k);
        let w = self.fb.dict_slot_load(p);
        let m = self.iconst(Type::I64, 7);
        let r = self.fb.binary(BinOp::Band, w, m);
        self.vals.push(r);
        self.ev.insert("entry.param_slot");
    }

    /// A call of helper `j` (a module with faults) that passes a freed
    /// object through a value the caller's tests vouched for as another
    /// object, or before the free (see the module's header); false when
    /// `j` has no object param. Needs the lifetime checks.
    pub(super) fn vouch_fault(&mut self, j: usize) -> bool {
        let params = &self.ms.helpers[j].params;
        let Some((k, n)) = params.iter().enumerate().find_map(|(k, p)| match *p {
            Param::Obj(n, _) => Some((k, n)),
            Param::Scalar(_) => None,
        }) else {
            return false;
        };
        let nv = self.iconst(Type::I64, i64::from(n));
        let b = (self.fb.call(self.ms.ext.obj_new, &[nv])).expect("obj_new returns");
        self.ms.needs.lifetime = true;
        if self.src.chance(1, 2) {
            // Tested, then freed, then passed.
            let x = self.fb.load_attr(b, 0);
            self.vals.push(x);
            self.fb.call(self.ms.ext.obj_free, &[b]);
            self.vouched_call(j, k, b);
            self.ev.insert("entry.vouch_then_free");
            return true;
        }
        // A block param tested as a live object, then given the freed one
        // on the back edge (no call between), then passed.
        let a = (self.fb.call(self.ms.ext.obj_new, &[nv])).expect("obj_new returns");
        self.fb.call(self.ms.ext.obj_free, &[b]);
        let zero = self.iconst(Type::I64, 0);
        let one = self.iconst(Type::I64, 1);
        let head = self.fb.create_block("vouch");
        let early = self.fb.create_block("vouch_test");
        let late = self.fb.create_block("vouch_call");
        let t = self.fb.append_block_param(head, Type::Ptr);
        let again = self.fb.append_block_param(head, Type::I64);
        self.fb.jump(head, &[a, zero]);
        self.fb.switch_to_block(head);
        self.fb.brif(again, late, &[], early, &[]);
        self.fb.switch_to_block(early);
        self.fb.load_attr(t, 0);
        self.fb.jump(head, &[b, one]);
        self.fb.switch_to_block(late);
        self.vouched_call(j, k, t);
        self.ev.insert("entry.vouch_param_redefined");
        true
    }

    /// A call of helper `j` after an own-values test of the object it
    /// passes (the caller's attribute op) whose pass must not reach the
    /// helper's own variant (`guardlift_ir::analysis::ownentry`): the
    /// object is one attribute too small for what the helper may access
    /// (the test, with the helper's demand, fails: the helper's own checks
    /// decide), or its word was written between (through another value) —
    /// another object's values word, whose attributes differ (the helper
    /// reads through it). False
    /// when `j` has no object param. Needs the lifetime checks.
    pub(super) fn own_fault(&mut self, j: usize) -> bool {
        let params = self.ms.helpers[j].params.clone();
        let objs: Vec<(usize, u32)> = (params.iter().enumerate())
            .filter_map(|(k, p)| match *p {
                Param::Obj(n, _) => Some((k, n)),
                Param::Scalar(_) => None,
            })
            .collect();
        let Some(&(k, n)) = objs.first() else {
            return false;
        };
        self.ms.needs.lifetime = true;
        let small = n >= 2 && self.src.chance(3, 5);
        // Fresh objects for every object param (a call resets what
        // vouches: all made first), each tested after the last write so
        // that every argument but the faulty one passes its own test.
        let (id, mut args) = self.helper_args(j);
        for &(i, m) in &objs {
            let cap = if i == k && small { m - 1 } else { m };
            let nv = self.iconst(Type::I64, i64::from(cap));
            args[i] = (self.fb.call(self.ms.ext.obj_new, &[nv])).expect("obj_new returns");
        }
        let b = args[k];
        if !small {
            let nv = self.iconst(Type::I64, i64::from(n));
            let c = (self.fb.call(self.ms.ext.obj_new, &[nv])).expect("obj_new returns");
            for i in 0..n {
                let v = self.iconst(Type::I64, 1000 + i64::from(i));
                self.fb.store_attr(c, i, v);
            }
            let x = self.fb.load_attr(b, 0);
            self.vals.push(x);
            // Written through another value (a block param) holding `b`:
            // what vouches for `b` itself is not touched by that op's own
            // checks.
            let alias = self.fb.create_block("own_alias");
            let a = self.fb.append_block_param(alias, Type::Ptr);
            self.fb.jump(alias, &[b]);
            self.fb.switch_to_block(alias);
            let w = self.fb.dict_slot_load(c);
            self.fb.dict_slot_store(a, w);
        }
        for &(i, _) in &objs {
            if small || i != k {
                let x = self.fb.load_attr(args[i], 0);
                self.vals.push(x);
            }
        }
        if let Some(r) = self.fb.call(id, &args) {
            self.vals.push(r);
        }
        self.ev.insert(match small {
            true => "entry.own_too_small",
            false => "entry.own_word_written",
        });
        true
    }

    /// A call of helper `j` passing `o` for its object param `k`.
    fn vouched_call(&mut self, j: usize, k: usize, o: guardlift_ir::Value) {
        let (id, mut args) = self.helper_args(j);
        args[k] = o;
        if let Some(r) = self.fb.call(id, &args) {
            self.vals.push(r);
        }
    }
}
