//! Where generated code finds the runtime's fields from the runtime pointer
//! it embeds: the head of the `#[repr(C)]` runtime (trap scratch area,
//! unwatch epoch) and the trap scratch area's fields. The runtime pins
//! these against its structs with a test (`runtime::abi`).

/// Offset of the trap-mode scratch area from the runtime pointer.
pub const TRAP_SCRATCH_OFFSET: i32 = 0;
/// Offset of the unwatch epoch (a u64 bumped by every free) from the
/// runtime pointer.
pub const UNWATCH_EPOCH_OFFSET: i32 = 48;
/// Offset of the values epoch (a u64 bumped by every free and every
/// `obj_dictify`: whenever an object or its values array goes) from the
/// runtime pointer.
pub const VALUES_EPOCH_OFFSET: i32 = 56;

/// Offset of the address of the runtime's `attr_fixed` memo (a u64: its
/// [`FIXED_MEMO_ENTRIES`] entries, fixed for the runtime's life) from the
/// runtime pointer.
pub const FIXED_MEMO_OFFSET: i32 = 64;

/// Sets of the `attr_fixed` memo, as a power of two.
pub const FIXED_MEMO_SETS_LOG2: u32 = 7;
/// Entries (ways) per set, next to each other: an object's success is in
/// one of its set's ways.
pub const FIXED_MEMO_WAYS: usize = 2;
/// Entries of the `attr_fixed` memo.
pub const FIXED_MEMO_ENTRIES: usize = FIXED_MEMO_WAYS << FIXED_MEMO_SETS_LOG2;
/// Bytes of one memo entry, as a power of two (64: one cache line).
pub const FIXED_MEMO_ENTRY_BYTES_LOG2: u32 = 6;
/// The multiplier of the memo's hash ([`fixed_memo_set`]).
pub const FIXED_MEMO_HASH: u64 = 0x9e37_79b9_7f4a_7c15;
/// Offsets in a memo entry: its sequence number (odd while a write is
/// under way, 0 before the first), then the object, its values word, its
/// attribute count and the values epoch of the success it records.
pub const FIXED_MEMO_SEQ: i32 = 0;
/// See [`FIXED_MEMO_SEQ`].
pub const FIXED_MEMO_OBJ: i32 = 8;
/// See [`FIXED_MEMO_SEQ`].
pub const FIXED_MEMO_WORD: i32 = 16;
/// See [`FIXED_MEMO_SEQ`].
pub const FIXED_MEMO_N_ATTRS: i32 = 24;
/// See [`FIXED_MEMO_SEQ`].
pub const FIXED_MEMO_EPOCH: i32 = 32;

/// The memo set of object `obj`: a multiplicative hash of its granule,
/// top bits (the runtime fills and the JIT's loop entries probe the same).
/// Its first entry is entry `set * FIXED_MEMO_WAYS`.
pub const fn fixed_memo_set(obj: u64) -> usize {
    ((obj >> 3).wrapping_mul(FIXED_MEMO_HASH) >> (64 - FIXED_MEMO_SETS_LOG2)) as usize
}

/// How many observed values a trapping guard leaves in the scratch area.
pub const TRAP_VALUE_COUNT: usize = 3;
/// Offset of the owner token in the scratch area.
pub const TRAP_OWNER_OFFSET: i32 = 0;
/// Offset of the first observed value (the others follow, 8 bytes apart).
pub const TRAP_VALUES_OFFSET: i32 = 8;
/// Offset of the `ready` token, stored once the values are written.
pub const TRAP_READY_OFFSET: i32 = TRAP_VALUES_OFFSET + 8 * TRAP_VALUE_COUNT as i32;

/// The token a trapping guard of runtime-global `site` tags the scratch
/// area with (never 0, which means "never used").
pub const fn trap_token(site: u32) -> u64 {
    site as u64 + 1
}
