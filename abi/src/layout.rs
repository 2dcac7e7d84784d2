//! Object-model layout: where the managed-dict word lives and how it is tagged.
//!
//! This module is the single definition of the managed-dict slot offsets and
//! tag bits. The lowering (jit), the reference interpreter (interp) and the
//! model heap (runtime) all read these constants; nothing else may spell
//! them out.

use std::fmt;

/// CPython 3.12: `_PyObject_DictOrValuesPointer(obj)` is `obj - 24`.
pub const CPYTHON312_DICT_SLOT_OFFSET: i32 = -24;
/// The "phoenix" object layout: the slot is at `obj + 0x18`.
pub const PHOENIX_DICT_SLOT_OFFSET: i32 = 0x18;
/// Largest magnitude accepted for a custom `dict_slot_offset`.
pub const MAX_CUSTOM_DICT_SLOT_OFFSET: i32 = 4096;

/// Width of the managed-dict word in bytes.
pub const DICT_WORD_BYTES: u32 = 8;
/// The low bits that carry the tag.
pub const TAG_MASK: u64 = 0b111;
/// Low bits of a valid values-tagged word (values pointer − 1).
pub const VALUES_TAG: u64 = 0b111;
/// Low bits of a valid dict pointer (8-aligned).
pub const DICT_TAG: u64 = 0b000;
/// The bit that selects the values fast path.
pub const VALUES_BIT: u64 = 0b1;
/// Size of one attribute in a values array.
pub const ATTR_BYTES: u32 = 8;
/// Offset from a values array to its capacity word (a u64: the number of
/// attribute slots), spec §4. The `bounds` check reads it.
pub const VALUES_CAPACITY_OFFSET: i32 = -8;
/// Bytes before a values array's first attribute (the capacity word).
pub const VALUES_HEADER_BYTES: u32 = 8;
/// Largest attribute index an IR instruction may name (keeps `8*i` in an i32 offset).
pub const MAX_ATTR_INDEX: u32 = (1 << 24) - 1;

/// Is `word` a well-formed managed-dict word (low bits `0b000` or `0b111`)?
#[inline]
pub const fn tag_ok(word: u64) -> bool {
    let t = word & TAG_MASK;
    t == DICT_TAG || t == VALUES_TAG
}

/// Encodes a values-array pointer (8-aligned) as a tagged word.
#[inline]
pub const fn values_word(values: u64) -> u64 {
    values.wrapping_sub(1)
}

/// Decodes the values array pointer from a word whose LSB is 1.
#[inline]
pub const fn values_ptr(word: u64) -> u64 {
    word.wrapping_add(1)
}

/// The address of the capacity word of the values array at `values`
/// ([`VALUES_CAPACITY_OFFSET`] bytes from it).
#[inline]
pub const fn capacity_word_addr(values: u64) -> u64 {
    values.wrapping_add(VALUES_CAPACITY_OFFSET as i64 as u64)
}

/// Byte offset of attribute `index` in a values array.
#[inline]
pub const fn attr_offset(index: u32) -> i32 {
    (index * ATTR_BYTES) as i32
}

/// Spells out the low three bits of a word for reports: `0b110`.
pub fn low_bits(word: u64) -> String {
    format!("0b{:03b}", word & TAG_MASK)
}

/// Which object layout a module (and the heap it runs against) uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum DictLayout {
    /// CPython 3.12: the word is at `obj - 24`.
    #[default]
    Cpython312,
    /// phoenix: the word is at `obj + 0x18`.
    Phoenix,
    /// Any other offset (a multiple of 8 within ±[`MAX_CUSTOM_DICT_SLOT_OFFSET`]).
    Custom(i32),
}

/// Why a custom layout was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// The offset is not 8-aligned.
    #[error("dict_slot_offset {0} is not a multiple of 8")]
    /// The offset is not 8-byte aligned.
    Unaligned(i64),
    /// The offset is too far from the object.
    #[error("dict_slot_offset {0} is out of range (at most ±{MAX_CUSTOM_DICT_SLOT_OFFSET})")]
    /// The offset is beyond [`MAX_CUSTOM_DICT_SLOT_OFFSET`].
    OutOfRange(i64),
    /// No preset of that name.
    #[error("unknown layout preset `{0}` (expected cpython312, phoenix or dict_slot_offset = N)")]
    /// Not a preset name nor `dict_slot_offset = N`.
    UnknownPreset(String),
}

impl DictLayout {
    /// Builds a custom layout, checking the offset.
    pub fn custom(offset: i64) -> Result<Self, LayoutError> {
        if offset.unsigned_abs() > MAX_CUSTOM_DICT_SLOT_OFFSET as u64 {
            return Err(LayoutError::OutOfRange(offset));
        }
        if offset % 8 != 0 {
            return Err(LayoutError::Unaligned(offset));
        }
        Ok(DictLayout::Custom(offset as i32))
    }

    /// Looks a preset up by name.
    pub fn preset(name: &str) -> Result<Self, LayoutError> {
        match name {
            "cpython312" => Ok(DictLayout::Cpython312),
            "phoenix" => Ok(DictLayout::Phoenix),
            _ => Err(LayoutError::UnknownPreset(name.to_string())),
        }
    }

    /// Byte offset of the managed-dict word from the object address.
    pub const fn dict_slot_offset(self) -> i32 {
        match self {
            DictLayout::Cpython312 => CPYTHON312_DICT_SLOT_OFFSET,
            DictLayout::Phoenix => PHOENIX_DICT_SLOT_OFFSET,
            DictLayout::Custom(o) => o,
        }
    }

    /// Address of the slot of the object at `obj`.
    #[inline]
    pub const fn slot_addr(self, obj: u64) -> u64 {
        obj.wrapping_add(self.dict_slot_offset() as i64 as u64)
    }
}

impl fmt::Display for DictLayout {
    /// The IR spelling, as it follows the `layout` keyword.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DictLayout::Cpython312 => f.write_str("cpython312"),
            DictLayout::Phoenix => f.write_str("phoenix"),
            DictLayout::Custom(o) => write!(f, "dict_slot_offset = {o}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_pin_offsets() {
        assert_eq!(DictLayout::Cpython312.dict_slot_offset(), -24);
        assert_eq!(DictLayout::Phoenix.dict_slot_offset(), 0x18);
        assert_eq!(DictLayout::custom(-32).unwrap().dict_slot_offset(), -32);
        assert_eq!(DictLayout::Cpython312.slot_addr(0x1000), 0x1000 - 24);
        assert_eq!(DictLayout::Phoenix.slot_addr(0x1000), 0x1018);
        assert!(DictLayout::custom(-3).is_err());
        assert!(DictLayout::custom(1 << 20).is_err());
        assert_eq!(DictLayout::default(), DictLayout::Cpython312);
    }

    #[test]
    fn tag_bits() {
        assert_eq!(TAG_MASK, 7);
        assert_eq!(VALUES_TAG, 7);
        assert_eq!(DICT_TAG, 0);
        assert!(tag_ok(0));
        assert!(tag_ok(0x97));
        assert!(!tag_ok(0x96), "the real-world LSB-cleared word");
        assert!(tag_ok(0x1000));
        assert!(!tag_ok(0x1001));
        assert_eq!(values_word(0x98), 0x97);
        assert_eq!(values_ptr(0x97), 0x98);
        assert_eq!(low_bits(0x96), "0b110");
        assert_eq!(attr_offset(3), 24);
        assert_eq!(
            VALUES_CAPACITY_OFFSET, -8,
            "spec §4: capacity at values - 8"
        );
        assert_eq!(VALUES_HEADER_BYTES as i32, -VALUES_CAPACITY_OFFSET);
        assert_eq!(capacity_word_addr(0x1000), 0xff8);
    }
}
