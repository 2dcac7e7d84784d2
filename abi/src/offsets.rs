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
