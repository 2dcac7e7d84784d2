//! The inline hot paths of the lifetime, clobber and watch checks on the
//! runtime's shadow bytes ([`guardlift_runtime::shadow`]).
//!
//! JIT code of a runtime with a shadow reads the byte of a granule (one
//! shift, one mask, one load) and tests a bit; only a set bit calls the
//! runtime, whose slow path then decides exactly as without the shadow
//! (a set bit is a "maybe", a clear one is exact), so reports and their
//! counts are the interpreter's. Object files keep the call form: their
//! runtime (the target runtime library, `aot/rt`) keeps no shadow.

use super::FnLower;
use cranelift_codegen::ir::{self as cl, condcodes::IntCC, types, InstBuilder, MemFlagsData};
use cranelift_module::Module as ClModule;
use guardlift_runtime::internals::*;
use guardlift_runtime::shadow;
use guardlift_runtime::Runtime;

/// What JIT code needs of the shadow: its base, and the runtime's id in
/// the watch field (`None`: the runtime has none, `guard.watch` calls).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ShadowRef {
    /// Address of the shadow byte of granule index 0.
    pub base: u64,
    /// The runtime's watch id ([`Runtime::shadow_watch_id`]).
    pub watch_id: Option<u8>,
}

impl ShadowRef {
    /// The shadow as code compiled for `rt` uses it; `None` without a
    /// shadow mapping (the checks keep their call form).
    pub fn of(rt: &Runtime) -> Option<Self> {
        let id = rt.shadow_watch_id();
        Some(ShadowRef {
            base: shadow::base()?,
            watch_id: (id != shadow::WATCH_SHARED).then_some(id),
        })
    }
}

/// Flags of a shadow load: the mapping covers every masked index.
fn shadow_mem() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

impl<M: ClModule + ?Sized> FnLower<'_, '_, M> {
    /// With a shadow: tests the `mask` bits of the granules of `[addr,
    /// addr + width)`, goes to `pass` when none is set, and leaves the
    /// builder in a new cold block (where the caller emits the runtime
    /// call) otherwise; returns false, emitting nothing, without one.
    pub(super) fn shadow_gate(
        &mut self,
        addr: cl::Value,
        width: u32,
        mask: u8,
        pass: cl::Block,
    ) -> bool {
        let Some(sh) = self.lw.shadow else {
            return false;
        };
        let hit = self.shadow_test(sh, addr, width, mask);
        self.branch_to_slow_path(hit, pass);
        true
    }

    /// `guard.watch %o` with a shadow and a watch id: goes to the block
    /// returned (not yet current) when the shadow says the runtime already
    /// watches `o`'s slot, else leaves the builder in a new cold block
    /// (where the caller calls the runtime); `None` without them.
    pub(super) fn shadow_watch_gate(&mut self, o: cl::Value) -> Option<cl::Block> {
        let (sh, id) = self.lw.shadow.and_then(|sh| Some((sh, sh.watch_id?)))?;
        let slot = self.effective_addr(o, self.slot_offset());
        // Rotated right by 3, the slot is its granule index when it is
        // 8-aligned and below 2^47, and above INDEX_MASK otherwise: one
        // branch for that, then the byte itself, unmasked, against the id
        // (a freed bit beside the id sends it to the runtime too — never
        // the case for a slot the runtime watches).
        let r = self.b.ins().rotr_imm_u(slot, shadow::GRANULE_SHIFT as i64);
        let odd = self
            .b
            .ins()
            .ushr_imm_u(r, (shadow::ADDR_BITS - shadow::GRANULE_SHIFT) as i64);
        let call = self.b.create_block();
        self.b.set_cold_block(call);
        let inside = self.b.create_block();
        self.b.ins().brif(odd, call, &[], inside, &[]);
        self.b.switch_to_block(inside);
        let at = self.b.ins().iadd_imm_u(r, sh.base as i64);
        let byte = self.b.ins().load(types::I8, shadow_mem(), at, 0);
        let other = self
            .b
            .ins()
            .icmp_imm_u(IntCC::NotEqual, byte, i64::from(id));
        let done = self.b.create_block();
        self.b.ins().brif(other, call, &[], done, &[]);
        self.b.switch_to_block(call);
        Some(done)
    }

    /// The dispatch test of a versioned loop (`version`): non-zero unless
    /// the shadow says that every object of `life` passes its lifetime
    /// check and the runtime watches the slot of every object of `watch`;
    /// `None` without a shadow (or, with watches, without a watch id or
    /// with a slot offset that is not a multiple of 8).
    ///
    /// The same bytes as the checks test, computed by other expressions on
    /// purpose: Cranelift would share equal expressions with the checks
    /// after the loop, and the shared values would then stay live (in
    /// registers) across the clean loop.
    pub(super) fn shadow_entry_miss(
        &mut self,
        life: &[cl::Value],
        watch: &[cl::Value],
    ) -> Option<cl::Value> {
        let sh = self.lw.shadow?;
        let mut tests = Vec::new();
        for &o in life {
            let byte = self.shadow_load_alt(sh.base, o, 0);
            let bits = self.b.ins().band_imm_u(byte, shadow::FREED_OBJ as i64);
            tests.push(self.b.ins().uextend(types::I64, bits));
        }
        if !watch.is_empty() {
            let id = sh.watch_id?;
            let off = i64::from(self.slot_offset());
            if off % 8 != 0 {
                return None;
            }
            for &o in watch {
                tests.push(self.watch_entry_miss(sh.base, id, o, off));
            }
        }
        tests.into_iter().reduce(|a, b| self.b.ins().bor(a, b))
    }

    /// The shadow byte of granule `(o >> 3) + delta` (masked into the
    /// mapping), as `((o & (INDEX_MASK << 3)) >> 3) + delta`.
    fn shadow_load_alt(&mut self, base: u64, o: cl::Value, delta: i64) -> cl::Value {
        let hi = self
            .b
            .ins()
            .band_imm_u(o, (shadow::INDEX_MASK << shadow::GRANULE_SHIFT) as i64);
        let mut g = self.b.ins().ushr_imm_u(hi, shadow::GRANULE_SHIFT as i64);
        if delta != 0 {
            let d = self.b.ins().iadd_imm_s(g, delta);
            g = self.b.ins().band_imm_u(d, shadow::INDEX_MASK as i64);
        }
        let at = self.b.ins().iadd_imm_u(g, base as i64);
        self.b.ins().uload8(types::I32, shadow_mem(), at, 0)
    }

    /// Non-zero unless the slot `o + off` (`off` a multiple of 8) is
    /// 8-aligned, in `[0, 2^47)` and watched by the runtime of id `id`
    /// ([`Self::shadow_watch_gate`]'s test, by other expressions).
    fn watch_entry_miss(&mut self, base: u64, id: u8, o: cl::Value, off: i64) -> cl::Value {
        let byte = self.shadow_load_alt(base, o, off >> shadow::GRANULE_SHIFT);
        let field = self.b.ins().band_imm_u(byte, shadow::WATCH_MASK as i64);
        let other = self.b.ins().bxor_imm_u(field, id as i64);
        let mut miss = self.b.ins().uextend(types::I64, other);
        let unaligned = self.b.ins().band_imm_u(o, 7);
        miss = self.b.ins().bor(miss, unaligned);
        // o + off must not wrap and must stay below 2^47.
        let top = (1i64 << shadow::ADDR_BITS) - off;
        let high = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, o, top);
        let high = self.b.ins().uextend(types::I64, high);
        miss = self.b.ins().bor(miss, high);
        if off < 0 {
            let low = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, o, -off);
            let low = self.b.ins().uextend(types::I64, low);
            miss = self.b.ins().bor(miss, low);
        }
        miss
    }

    /// Branches to a new cold block (left current) when `slow` is
    /// non-zero, else to `pass`.
    fn branch_to_slow_path(&mut self, slow: cl::Value, pass: cl::Block) {
        let call = self.b.create_block();
        self.b.set_cold_block(call);
        self.b.ins().brif(slow, call, &[], pass, &[]);
        self.b.switch_to_block(call);
    }

    /// The shadow byte of the granule holding `addr` (an i32, zero-extended).
    fn shadow_byte(&mut self, base: u64, addr: cl::Value) -> cl::Value {
        let g = self.b.ins().ushr_imm_u(addr, shadow::GRANULE_SHIFT as i64);
        self.shadow_load(base, g)
    }

    /// The shadow byte of granule `g` (masked into the mapping).
    pub(super) fn shadow_load(&mut self, base: u64, g: cl::Value) -> cl::Value {
        let g = self.b.ins().band_imm_u(g, shadow::INDEX_MASK as i64);
        let at = self.b.ins().iadd_imm_u(g, base as i64);
        self.b.ins().uload8(types::I32, shadow_mem(), at, 0)
    }

    /// Non-zero when a granule of `[addr, addr + width)` has a `mask`
    /// bit in its shadow byte (an access of up to 8 bytes spans at most
    /// two granules: the first byte's and the last byte's).
    fn shadow_test(&mut self, sh: ShadowRef, addr: cl::Value, width: u32, mask: u8) -> cl::Value {
        let mut bits = self.shadow_byte(sh.base, addr);
        if width > 1 {
            let last = self.b.ins().iadd_imm_u(addr, width as i64 - 1);
            let more = self.shadow_byte(sh.base, last);
            bits = self.b.ins().bor(bits, more);
        }
        self.b.ins().band_imm_u(bits, mask as i64)
    }

    /// Non-zero when a granule of `[addr + lo, addr + hi)` has a `mask`
    /// bit (`None` without a shadow): the granules from the first byte's
    /// on, `ceil((hi - lo) / 8)` of them (all touched), and the last byte's
    /// (the next one, or the last of those again).
    pub(super) fn shadow_range_test(
        &mut self,
        addr: cl::Value,
        lo: i64,
        hi: i64,
        mask: u8,
    ) -> Option<cl::Value> {
        let sh = self.lw.shadow?;
        let first = self.b.ins().iadd_imm_s(addr, lo);
        let g0 = self.b.ins().ushr_imm_u(first, shadow::GRANULE_SHIFT as i64);
        let granule = 1i64 << shadow::GRANULE_SHIFT;
        let whole = (hi - lo + granule - 1) / granule;
        let mut bits = self.shadow_load(sh.base, g0);
        for i in 1..whole {
            let g = self.b.ins().iadd_imm_s(g0, i);
            let more = self.shadow_load(sh.base, g);
            bits = self.b.ins().bor(bits, more);
        }
        let last = self.b.ins().iadd_imm_s(addr, hi - 1);
        let more = self.shadow_byte(sh.base, last);
        bits = self.b.ins().bor(bits, more);
        Some(self.b.ins().band_imm_u(bits, mask as i64))
    }
}
