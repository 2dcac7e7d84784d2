//! The inline hot paths of the lifetime, clobber and watch checks on the
//! runtime's shadow bytes ([`guardlift_runtime::shadow`]).
//!
//! JIT code of a runtime with a shadow reads the byte of a granule and
//! tests a bit — at an 8-aligned address below 2^47 one rotation, one
//! branch and one unmasked load ([`FnLower::aligned_granule`]), elsewhere
//! one shift, one mask and one load per granule; only a set bit calls the
//! runtime, whose slow path then decides exactly as without the shadow
//! (a set bit is a "maybe", a clear one is exact), so reports and their
//! counts are the interpreter's. Object files keep the call form: their
//! runtime (the target runtime library, `aot/rt`) keeps no shadow.

use super::FnLower;
use cranelift_codegen::ir::{
    self as cl, condcodes::IntCC, types, BlockArg, InstBuilder, MemFlagsData,
};
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
    /// Make own-values tests (`ownvalues`; `CompileOptions::own_values`).
    pub own_values: bool,
}

impl ShadowRef {
    /// The shadow as code compiled for `rt` uses it; `None` without a
    /// shadow mapping (the checks keep their call form).
    pub fn of(rt: &Runtime) -> Option<Self> {
        let id = rt.shadow_watch_id();
        Some(ShadowRef {
            base: shadow::base()?,
            watch_id: (id != shadow::WATCH_SHARED).then_some(id),
            own_values: true,
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
        let call = self.b.create_block();
        self.b.set_cold_block(call);
        if (2..=8).contains(&width) {
            // An 8-aligned access of at most 8 bytes lies in one granule:
            // one byte, unmasked (the index is below 2^44). Any other
            // address tests both granules, in a cold block.
            let (g, generic) = self.aligned_granule(addr);
            let byte = self.shadow_load_unmasked(sh.base, g);
            let bits = self.b.ins().band_imm_u(byte, mask as i64);
            self.b.ins().brif(bits, call, &[], pass, &[]);
            self.b.switch_to_block(generic);
        }
        let hit = self.shadow_test(sh, addr, width, mask);
        self.b.ins().brif(hit, call, &[], pass, &[]);
        self.b.switch_to_block(call);
        true
    }

    /// Rotated right by 3, `addr` is its granule index when it is
    /// 8-aligned and below 2^47, and at least 2^44 (`INDEX_MASK + 1`)
    /// otherwise: one shift and one branch tell them apart. Goes on in a
    /// new block (left current) with the index when it is one; branches to
    /// the new cold block returned (not yet current) otherwise.
    fn aligned_granule(&mut self, addr: cl::Value) -> (cl::Value, cl::Block) {
        let r = self.b.ins().rotr_imm_u(addr, shadow::GRANULE_SHIFT as i64);
        let odd = self
            .b
            .ins()
            .ushr_imm_u(r, (shadow::ADDR_BITS - shadow::GRANULE_SHIFT) as i64);
        let other = self.b.create_block();
        self.b.set_cold_block(other);
        let inside = self.b.create_block();
        self.b.ins().brif(odd, other, &[], inside, &[]);
        self.b.switch_to_block(inside);
        (r, other)
    }

    /// The shadow byte of granule `g`, known to be below 2^44 (an i32,
    /// zero-extended).
    fn shadow_load_unmasked(&mut self, base: u64, g: cl::Value) -> cl::Value {
        let at = self.b.ins().iadd_imm_u(g, base as i64);
        self.b.ins().uload8(types::I32, shadow_mem(), at, 0)
    }

    /// `guard.watch %o` with a shadow and a watch id: goes to the block
    /// returned (not yet current) when the shadow says the runtime already
    /// watches `o`'s slot, else leaves the builder in a new cold block
    /// (where the caller calls the runtime); `None` without them.
    pub(super) fn shadow_watch_gate(&mut self, o: cl::Value) -> Option<cl::Block> {
        let (sh, id) = self.lw.shadow.and_then(|sh| Some((sh, sh.watch_id?)))?;
        let slot = self.effective_addr(o, self.slot_offset());
        // The slot's granule index when it is 8-aligned and below 2^47
        // (else the runtime decides), then the byte itself, unmasked,
        // against the id (a freed bit beside the id sends it to the
        // runtime too — never the case for a slot the runtime watches).
        let (r, call) = self.aligned_granule(slot);
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
    /// bit (`None` without a shadow; an i64). From an 8-aligned first byte
    /// below 2^47, a range of at most 64 bytes ([`MAX_GROUP_SPAN`]) is
    /// the granules `ceil((hi - lo) / 8)` from its first: one shadow word,
    /// those bytes of it tested by one constant. Otherwise, in a cold
    /// block, the granules from the first byte's on (all touched) and the
    /// last byte's (the next one, or the last of those again).
    ///
    /// [`MAX_GROUP_SPAN`]: guardlift_ir::rawgroup::MAX_GROUP_SPAN
    pub(super) fn shadow_range_test(
        &mut self,
        addr: cl::Value,
        lo: i64,
        hi: i64,
        mask: u8,
    ) -> Option<cl::Value> {
        let sh = self.lw.shadow?;
        let first = self.b.ins().iadd_imm_s(addr, lo);
        let granule = 1i64 << shadow::GRANULE_SHIFT;
        let whole = (hi - lo + granule - 1) / granule;
        let done = self.b.create_block();
        let dirty = self.b.append_block_param(done, types::I64);
        if (1..=8).contains(&whole) {
            let (g0, generic) = self.aligned_granule(first);
            // The table has slack past its last index: the word at any
            // index below 2^44 is mapped.
            let w = self.shadow_word(sh.base, g0);
            let bytes = match whole {
                8 => u64::MAX,
                n => (1u64 << (8 * n)) - 1,
            };
            let m = (mask as u64).wrapping_mul(0x0101_0101_0101_0101) & bytes;
            let bits = self.b.ins().band_imm_u(w, m as i64);
            self.b.ins().jump(done, &[BlockArg::Value(bits)]);
            self.b.switch_to_block(generic);
        }
        let g0 = self.b.ins().ushr_imm_u(first, shadow::GRANULE_SHIFT as i64);
        let mut bits = self.shadow_load(sh.base, g0);
        for i in 1..whole {
            let g = self.b.ins().iadd_imm_s(g0, i);
            let more = self.shadow_load(sh.base, g);
            bits = self.b.ins().bor(bits, more);
        }
        let last = self.b.ins().iadd_imm_s(addr, hi - 1);
        let more = self.shadow_byte(sh.base, last);
        bits = self.b.ins().bor(bits, more);
        let bits = self.b.ins().band_imm_u(bits, mask as i64);
        let bits = self.b.ins().uextend(types::I64, bits);
        self.b.ins().jump(done, &[BlockArg::Value(bits)]);
        self.b.switch_to_block(done);
        Some(dirty)
    }

    /// The 8 shadow bytes from granule `g`'s (little-endian: `g`'s is the
    /// lowest); `g` below 2^44 (the table's slack covers the rest).
    pub(super) fn shadow_word(&mut self, base: u64, g: cl::Value) -> cl::Value {
        let at = self.b.ins().iadd_imm_u(g, base as i64);
        self.b.ins().load(types::I64, shadow_mem(), at, 0)
    }
}
