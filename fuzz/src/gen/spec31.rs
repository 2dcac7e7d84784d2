//! The control, frame and call ops of spec §3.1 in generated modules:
//!
//! - `br_table` as a `switch`: one to four arms (block params of their
//!   own, a destination may name an arm several times with other
//!   arguments), every arm reached from the table or the default, an
//!   empty table sometimes, merging like an `if`/`else`; the index is an
//!   int widened to `i64` (or a `ptr`), masked to a few past the table's
//!   length or left whole (a negative one is a huge unsigned index: the
//!   default). Also in restricted regions (leaf helpers, leaf-call loops),
//!   so the JIT versions loops that hold one;
//! - `stack_alloc` areas with raw loads and stores inside them (constant
//!   and run-time offsets), read back before and after the stores (the
//!   area is zeroed each time the instruction runs, in a loop too);
//! - `func_addr` + `call_indirect` of a helper of the module (a later one,
//!   as direct calls: nothing recurses) or of a math built-in (`@sin` …,
//!   which takes no runtime), with the callee's own signature; the pointer
//!   sometimes goes through a `stack_alloc` area first (a method table).
//!
//! Addresses (the areas, the function pointers) never join the value
//! pools: the interpreter's function tokens and areas are not the JIT's
//! addresses.

use super::FnGen;
use guardlift_ir::{BinOp, Block, Type, Value};
use guardlift_runtime::heap::REDZONE_BYTES;

/// The pads around a `stack_alloc` area (the heap's redzone size).
const REDZONE: i32 = REDZONE_BYTES as i32;

impl FnGen<'_, '_, '_> {
    /// `br_table` over one to four arms that merge (see the module doc).
    pub(super) fn switch(&mut self) {
        let idx = self.switch_index();
        let n_arms = self.src.range(1, 4) as usize;
        let arms: Vec<Block> = (0..n_arms).map(|_| self.fb.create_block("case")).collect();
        let merge = self.fb.create_block("endswitch");
        let arm_tys: Vec<Vec<Type>> = (0..n_arms)
            .map(|_| {
                (0..self.src.range(0, 2))
                    .map(|_| self.src.scalar_ty())
                    .collect()
            })
            .collect();
        let arm_params: Vec<Vec<Value>> = (arms.iter().zip(&arm_tys))
            .map(|(&b, tys)| {
                tys.iter()
                    .map(|&t| self.fb.append_block_param(b, t))
                    .collect()
            })
            .collect();
        let merge_tys: Vec<Type> = (0..self.src.range(0, 2))
            .map(|_| self.src.scalar_ty())
            .collect();
        let merge_vals: Vec<Value> = (merge_tys.iter())
            .map(|&t| self.fb.append_block_param(merge, t))
            .collect();
        let passed: Vec<usize> = (0..self.stacks.len())
            .filter(|_| self.src.chance(1, 3))
            .collect();
        let merge_handles: Vec<Value> = (passed.iter())
            .map(|&i| {
                let t = Type::AdStack(self.stacks[i].elem);
                self.fb.append_block_param(merge, t)
            })
            .collect();
        if !passed.is_empty() {
            self.ev.insert("adstack.handle_param");
        }
        // The default, then a table naming every other arm at least once,
        // some arms again (the same block with other arguments).
        let default = self.src.index(n_arms);
        let mut table: Vec<usize> = (0..n_arms).filter(|&k| k != default).collect();
        if !(n_arms == 1 && self.src.chance(1, 3)) {
            for _ in 0..self.src.range(0, 3) {
                let at = self.src.index(table.len() + 1);
                let arm = self.src.index(n_arms);
                table.insert(at, arm);
            }
        }
        if table.is_empty() {
            self.ev.insert("ctl.br_table_empty");
        }
        let dest = |g: &mut Self, k: usize| -> (Block, Vec<Value>) {
            let args = (arm_tys[k].iter()).map(|&t| g.pick_compat(t)).collect();
            (arms[k], args)
        };
        let d = dest(self, default);
        let calls: Vec<(Block, Vec<Value>)> = table.iter().map(|&k| dest(self, k)).collect();
        let refs: Vec<(Block, &[Value])> = calls.iter().map(|(b, a)| (*b, &a[..])).collect();
        self.fb.br_table(idx, (d.0, &d.1), &refs);
        let s = self.scope();
        self.depth += 1;
        let saved_arm = self.arm_in_loop;
        self.arm_in_loop |= self.loop_depth > 0;
        for (k, &blk) in arms.iter().enumerate() {
            self.fb.switch_to_block(blk);
            self.vals.extend(arm_params[k].iter().copied());
            let n = self.src.range(0, 4);
            self.region(n);
            self.compensate(&s);
            let mut args: Vec<Value> = merge_tys.iter().map(|&t| self.pick_compat(t)).collect();
            args.extend(passed.iter().map(|&i| self.stacks[i].v));
            self.fb.jump(merge, &args);
            self.restore(&s);
        }
        self.depth -= 1;
        self.arm_in_loop = saved_arm;
        self.fb.switch_to_block(merge);
        self.vals.extend(merge_vals);
        for (&i, &h) in passed.iter().zip(&merge_handles) {
            self.stacks[i].v = h;
        }
    }

    /// A `br_table` index: an int widened to `i64` (a `ptr` stays one),
    /// masked to 0 … 3 or 0 … 7, or whole.
    fn switch_index(&mut self) -> Value {
        let x = self.pick_int();
        let x = self.widen_to_i64(x);
        if self.src.chance(2, 3) {
            let mask = [3i64, 7][self.src.index(2)];
            let t = self.ty(x);
            let m = self.iconst(t, mask);
            self.fb.binary(BinOp::Band, x, m)
        } else {
            self.ev.insert("ctl.br_table_wide_index");
            x
        }
    }

    /// A `stack_alloc` area and raw loads and stores inside it.
    pub(super) fn stack_area(&mut self) {
        let size = match self.src.range(0, 3) {
            0 => self.src.range(1, 16),
            1 => [16, 24, 32, 64][self.src.index(4)],
            _ => self.src.range(17, 200),
        };
        let p = self.fb.stack_alloc(size);
        for _ in 0..self.src.range(1, 4) {
            self.area_access(p, size);
        }
        if self.src.chance(1, 4) {
            self.area_pad_access(p, size);
        }
    }

    /// A raw load or store touching a pad of the `size`-byte area at `p`
    /// (docs/IR.md: the 16 bytes before it and after its whole 8-byte
    /// granules are redzones on every engine): a `heap_overflow` fault,
    /// guarded by hand or left to the `bounds` instrumentation.
    fn area_pad_access(&mut self, p: Value, size: u32) {
        // The area as the runtime records it (`Heap::native_stack_area`).
        let end = size.max(8).next_multiple_of(8) as i32;
        let (ty, w) = [(Type::I8, 1), (Type::I32, 4), (Type::I64, 8)][self.src.index(3)];
        let off = match self.src.range(0, 3) {
            0 => end,
            1 => end + REDZONE - w,
            2 => -w,
            _ => -REDZONE,
        };
        self.bounds_fault_access(ty, p, off);
        self.ev.insert("mem.stack_pad");
    }

    /// One in-bounds raw load or store of the `size`-byte area at `p`.
    fn area_access(&mut self, p: Value, size: u32) {
        let tys = [
            Type::I8,
            Type::I32,
            Type::I64,
            Type::Ptr,
            Type::F32,
            Type::F64,
        ];
        let fit: Vec<Type> = tys.into_iter().filter(|t| t.bytes() <= size).collect();
        let ty = fit[self.src.index(fit.len())];
        let w = ty.bytes();
        let (addr, off) = if size >= w + 56 && self.src.chance(1, 3) {
            // A run-time offset: (x & 0x38) is 0 … 56.
            let x = self.pick_int();
            let x = self.widen_to_i64(x);
            let m = self.iconst(Type::I64, 0x38);
            let d = self.fb.binary(BinOp::Band, x, m);
            let a = self.fb.binary(BinOp::Iadd, p, d);
            (a, self.src.range(0, size - 56 - w))
        } else {
            (p, self.src.range(0, size - w))
        };
        self.ev.insert("mem.stack_area");
        if self.src.chance(1, 2) {
            let r = self.fb.load(ty, addr, off as i32);
            self.vals.push(r);
        } else {
            let mut v = self.pick_compat(ty);
            if self.ty(v).is_float() {
                v = self.canon_nan(v);
            }
            self.fb.store(v, addr, off as i32);
        }
    }

    /// `func_addr` of a helper or a math built-in, then `call_indirect`
    /// through it with the callee's signature.
    pub(super) fn indirect_call(&mut self) {
        let helpers = self.callable();
        let (target, args, params, ret) = if !helpers.is_empty() && self.src.chance(2, 3) {
            let j = helpers[self.src.index(helpers.len())];
            let (id, args) = self.helper_args(j);
            let h = &self.ms.helpers[j];
            let params: Vec<Type> = h.params.iter().map(|p| p.ty()).collect();
            let ret = h.ret;
            self.ev.insert("call.indirect_function");
            (self.fb.func_addr(id), args, params, ret)
        } else {
            self.host_call_event();
            let a = self.f64_arg();
            let f = self.ms.ext.math[self.src.index(4)];
            self.ev.insert("call.indirect_builtin");
            (
                self.fb.func_addr(f),
                vec![a],
                vec![Type::F64],
                Some(Type::F64),
            )
        };
        let target = if self.src.chance(1, 3) {
            // A method table: the pointer stored in a frame area, read back.
            let slots = self.src.range(1, 4);
            let area = self.fb.stack_alloc(8 * slots);
            let k = 8 * self.src.range(0, slots - 1) as i32;
            self.fb.store(target, area, k);
            let ty = if self.src.chance(1, 2) {
                Type::Ptr
            } else {
                Type::I64
            };
            self.ev.insert("call.indirect_via_memory");
            self.fb.load(ty, area, k)
        } else {
            target
        };
        if let Some(r) = self.fb.call_indirect(target, &args, &params, ret) {
            self.vals.push(r);
        }
    }
}
