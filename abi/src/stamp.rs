//! The ABI stamp: one `u64` that changes whenever anything object code and
//! a target runtime library must agree on changes, so a host can refuse a
//! stale library instead of linking it (docs/TARGETS.md, "One runtime").
//!
//! [`ABI_STAMP`] is computed at compile time (a `const fn`, 64-bit FNV-1a)
//! over, in this order:
//!
//! 1. [`PROTOCOL_VERSION`] (bump it when the target's line protocol or the
//!    library's own exports change in a way the table below does not show);
//! 2. every row of [`crate::foreach_entry!`] in table order: its symbol,
//!    whether it takes the runtime pointer, its parameter and result
//!    classes;
//! 3. the offsets of [`crate::offsets`] (trap scratch area, epochs, the
//!    `attr_fixed` memo's address, entries and hash, the
//!    scratch area's fields) and the trap token of a sample site;
//! 4. the dict and values layout constants of [`crate::layout`] and the
//!    adstack header of [`crate::adstack`];
//! 5. every [`ReportKind`]'s name and code, and [`crate::TRAP_CODE_BASE`];
//! 6. the program tables of [`crate::program`]: each table's C name and
//!    each field's name, declaration and size.
//!
//! The target library (`aot/rt`, `guardlift-target-rt`) exports the value
//! it was compiled with as the data symbol `gl_rt_abi` (a little- or
//! big-endian `u64` as the target is); `guardlift_aot::target_rt` reads it
//! from the archive and compares it with the host's.

use crate::adstack::{ADSTACK_COUNT_OFFSET, ADSTACK_HEADER_BYTES};
use crate::entry::{AbiTy, Entry};
use crate::layout::{
    ATTR_BYTES, DICT_TAG, DICT_WORD_BYTES, MAX_ATTR_INDEX, TAG_MASK, VALUES_BIT,
    VALUES_CAPACITY_OFFSET, VALUES_HEADER_BYTES, VALUES_TAG,
};
use crate::offsets::{
    trap_token, FIXED_MEMO_ENTRY_BYTES_LOG2, FIXED_MEMO_EPOCH, FIXED_MEMO_HASH, FIXED_MEMO_N_ATTRS,
    FIXED_MEMO_OBJ, FIXED_MEMO_OFFSET, FIXED_MEMO_SEQ, FIXED_MEMO_SETS_LOG2, FIXED_MEMO_WAYS,
    FIXED_MEMO_WORD, TRAP_OWNER_OFFSET, TRAP_READY_OFFSET, TRAP_SCRATCH_OFFSET, TRAP_VALUES_OFFSET,
    TRAP_VALUE_COUNT, UNWATCH_EPOCH_OFFSET, VALUES_EPOCH_OFFSET,
};
use crate::report::{ReportKind, TRAP_CODE_BASE};

/// The version of the protocol between object code, the target library and
/// the host, beyond what the stamp hashes itself.
pub const PROTOCOL_VERSION: u32 = 1;

/// The name of the data symbol the target library exports the stamp as.
pub const STAMP_SYMBOL: &str = "gl_rt_abi";

/// The stamp of this build of the contract (see the module header).
pub const ABI_STAMP: u64 = stamp();

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// A 64-bit FNV-1a state (the `const` hasher behind [`ABI_STAMP`]).
#[derive(Copy, Clone, Debug)]
struct Fnv(u64);

impl Fnv {
    const fn byte(self, b: u8) -> Fnv {
        Fnv((self.0 ^ b as u64).wrapping_mul(FNV_PRIME))
    }

    const fn bytes(mut self, bs: &[u8]) -> Fnv {
        let mut i = 0;
        while i < bs.len() {
            self = self.byte(bs[i]);
            i += 1;
        }
        self
    }

    /// A string, length first (so `"ab", "c"` and `"a", "bc"` differ).
    const fn str(self, s: &str) -> Fnv {
        self.u64(s.len() as u64).bytes(s.as_bytes())
    }

    const fn u64(self, v: u64) -> Fnv {
        self.bytes(&v.to_le_bytes())
    }

    const fn i32(self, v: i32) -> Fnv {
        self.bytes(&v.to_le_bytes())
    }

    const fn ty(self, t: AbiTy) -> Fnv {
        self.str(t.name())
    }
}

/// The stamp, computed as the module header says.
pub const fn stamp() -> u64 {
    let mut h = Fnv(FNV_OFFSET)
        .str("guardlift-abi")
        .u64(PROTOCOL_VERSION as u64);
    // The entry table.
    h = h.u64(Entry::ALL.len() as u64);
    let mut i = 0;
    while i < Entry::ALL.len() {
        let e = Entry::ALL[i];
        h = h.str(e.symbol()).byte(e.needs_rt() as u8);
        let params = e.params();
        h = h.u64(params.len() as u64);
        let mut j = 0;
        while j < params.len() {
            h = h.ty(params[j]);
            j += 1;
        }
        h = match e.ret() {
            Some(t) => h.byte(1).ty(t),
            None => h.byte(0),
        };
        i += 1;
    }
    // The protocol's event letters.
    let mut k = 0;
    while k < crate::protocol::EVENTS.len() {
        h = h
            .str(crate::protocol::EVENTS[k].0)
            .byte(crate::protocol::EVENTS[k].1);
        k += 1;
    }
    // The runtime's head and trap scratch area.
    h = h
        .i32(TRAP_SCRATCH_OFFSET)
        .i32(UNWATCH_EPOCH_OFFSET)
        .i32(VALUES_EPOCH_OFFSET)
        .u64(TRAP_VALUE_COUNT as u64)
        .i32(TRAP_OWNER_OFFSET)
        .i32(TRAP_VALUES_OFFSET)
        .i32(TRAP_READY_OFFSET)
        .u64(trap_token(7));
    // The attr_fixed memo.
    h = h
        .i32(FIXED_MEMO_OFFSET)
        .u64(FIXED_MEMO_SETS_LOG2 as u64)
        .u64(FIXED_MEMO_WAYS as u64)
        .u64(FIXED_MEMO_ENTRY_BYTES_LOG2 as u64)
        .u64(FIXED_MEMO_HASH)
        .i32(FIXED_MEMO_SEQ)
        .i32(FIXED_MEMO_OBJ)
        .i32(FIXED_MEMO_WORD)
        .i32(FIXED_MEMO_N_ATTRS)
        .i32(FIXED_MEMO_EPOCH);
    // The object and adstack layouts.
    h = h
        .u64(DICT_WORD_BYTES as u64)
        .u64(TAG_MASK)
        .u64(VALUES_TAG)
        .u64(DICT_TAG)
        .u64(VALUES_BIT)
        .u64(ATTR_BYTES as u64)
        .i32(VALUES_CAPACITY_OFFSET)
        .u64(VALUES_HEADER_BYTES as u64)
        .u64(MAX_ATTR_INDEX as u64)
        .u64(ADSTACK_HEADER_BYTES as u64)
        .u64(ADSTACK_COUNT_OFFSET as u64);
    // Report kinds and trap codes.
    h = h.byte(TRAP_CODE_BASE).u64(ReportKind::ALL.len() as u64);
    let mut k = 0;
    while k < ReportKind::ALL.len() {
        let kind = ReportKind::ALL[k];
        h = h.str(kind.name()).byte(kind.code());
        k += 1;
    }
    // The program tables.
    let tables = &crate::program::TABLES;
    h = h.u64(tables.len() as u64);
    let mut t = 0;
    while t < tables.len() {
        let fields = tables[t].fields;
        h = h.str(tables[t].c_name).u64(fields.len() as u64);
        let mut j = 0;
        while j < fields.len() {
            h = h
                .str(fields[j].name)
                .str(fields[j].decl)
                .u64(fields[j].bytes as u64);
            j += 1;
        }
        t += 1;
    }
    h.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stamp_is_a_const_and_sees_what_it_hashes() {
        // Computed at compile time, the same at run time.
        const AT_COMPILE_TIME: u64 = stamp();
        assert_eq!(AT_COMPILE_TIME, stamp());
        assert_eq!(ABI_STAMP, stamp());
        assert_ne!(ABI_STAMP, 0);
        // The hasher is FNV-1a (its published test vector for "a").
        assert_eq!(Fnv(FNV_OFFSET).bytes(b"a").0, 0xaf63_dc4c_8601_ec8c);
        // Strings are framed: moving a byte between two differs.
        let (ab, c) = (
            Fnv(FNV_OFFSET).str("ab").str("c"),
            Fnv(FNV_OFFSET).str("a").str("bc"),
        );
        assert_ne!(ab.0, c.0);
        // A different signature class of one entry would change it.
        let one = Fnv(FNV_OFFSET).ty(AbiTy::I32).0;
        assert_ne!(one, Fnv(FNV_OFFSET).ty(AbiTy::I64).0);
    }
}
