//! Adstack (autodiff stack) memory layout: the single definition of its sizes.
//!
//! A buffer is `ADSTACK_HEADER_BYTES + capacity * entry_bytes(T)` bytes: a u64
//! count at offset 0, then entries `[primal | adjoint]`, each `sizeof(T)`.
//! The JIT sizes its stack slots with these functions and the interpreter
//! allocates its buffers with them; a test pins every number.

/// Bytes of the count header. The bug this project exists for sized it 4.
pub const ADSTACK_HEADER_BYTES: u32 = 8;
/// Byte offset of the u64 count.
pub const ADSTACK_COUNT_OFFSET: u32 = 0;
/// Largest capacity an `adstack.alloc` may ask for.
pub const MAX_ADSTACK_CAPACITY: u32 = 1 << 20;
/// Largest total adstack bytes in one function's frame.
pub const MAX_ADSTACK_FRAME_BYTES: u64 = 32 << 20;
/// Alignment of an adstack buffer.
pub const ADSTACK_ALIGN: u32 = 8;

/// Element types an adstack may hold.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AdElem {
    /// `f32` elements.
    F32,
    /// `f64` elements.
    F64,
    /// `i64` elements.
    I64,
}

impl AdElem {
    /// `sizeof(T)`.
    pub const fn bytes(self) -> u32 {
        match self {
            AdElem::F32 => 4,
            AdElem::F64 | AdElem::I64 => 8,
        }
    }

    /// The IR spelling (`f32`, `f64`, `i64`).
    pub const fn name(self) -> &'static str {
        match self {
            AdElem::F32 => "f32",
            AdElem::F64 => "f64",
            AdElem::I64 => "i64",
        }
    }
}

/// Bytes of one `[primal | adjoint]` entry: `2 * sizeof(T)`.
pub const fn entry_bytes(elem: AdElem) -> u32 {
    2 * elem.bytes()
}

/// Total buffer bytes for `capacity` entries.
pub const fn buffer_bytes(elem: AdElem, capacity: u32) -> u64 {
    ADSTACK_HEADER_BYTES as u64 + capacity as u64 * entry_bytes(elem) as u64
}

/// Byte offset of entry `index`'s primal.
pub const fn primal_offset(elem: AdElem, index: u64) -> u64 {
    ADSTACK_HEADER_BYTES as u64 + index * entry_bytes(elem) as u64
}

/// Byte offset of entry `index`'s adjoint.
pub const fn adjoint_offset(elem: AdElem, index: u64) -> u64 {
    primal_offset(elem, index) + elem.bytes() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_pinned() {
        assert_eq!(ADSTACK_HEADER_BYTES, 8);
        assert_eq!(ADSTACK_COUNT_OFFSET, 0);
        assert_eq!(entry_bytes(AdElem::F32), 8);
        assert_eq!(entry_bytes(AdElem::F64), 16);
        assert_eq!(entry_bytes(AdElem::I64), 16);
        assert_eq!(buffer_bytes(AdElem::F32, 32), 8 + 32 * 8);
        assert_eq!(buffer_bytes(AdElem::F64, 16), 8 + 16 * 16);
        assert_eq!(primal_offset(AdElem::F64, 0), 8);
        assert_eq!(adjoint_offset(AdElem::F64, 0), 16);
        assert_eq!(primal_offset(AdElem::F32, 2), 8 + 16);
        assert_eq!(adjoint_offset(AdElem::F32, 2), 8 + 16 + 4);
    }
}
