//! Value types of the IR.

use guardlift_abi::adstack::AdElem;
use std::fmt;

/// A value type. `Ptr` is a 64-bit address that mixes with `I64` in integer ops.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// 8-bit integer (conditions).
    I8,
    /// 32-bit integer.
    I32,
    /// 64-bit integer.
    I64,
    /// 64-bit address (mixes with `i64`).
    Ptr,
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
    /// An adstack handle: block params and `adstack.alloc` results only.
    AdStack(AdElem),
}

impl Type {
    /// Is this an integer type (`ptr` included)?
    pub const fn is_int(self) -> bool {
        matches!(self, Type::I8 | Type::I32 | Type::I64 | Type::Ptr)
    }
    /// Is this a float type?
    pub const fn is_float(self) -> bool {
        matches!(self, Type::F32 | Type::F64)
    }
    /// Is this an adstack handle?
    pub const fn is_adstack(self) -> bool {
        matches!(self, Type::AdStack(_))
    }
    /// A 64-bit integer (`i64` or `ptr`): usable as an address.
    pub const fn is_word(self) -> bool {
        matches!(self, Type::I64 | Type::Ptr)
    }
    /// Width in bits (adstack handles are 64-bit addresses).
    pub const fn bits(self) -> u32 {
        match self {
            Type::I8 => 8,
            Type::I32 | Type::F32 => 32,
            Type::I64 | Type::Ptr | Type::F64 | Type::AdStack(_) => 64,
        }
    }
    /// Width in bytes.
    pub const fn bytes(self) -> u32 {
        self.bits() / 8
    }
    /// Two operand types that an integer or float op accepts together
    /// (`ptr` and `i64` mix freely).
    pub fn compatible(self, other: Type) -> bool {
        self == other || (self.is_word() && other.is_word())
    }
    /// The element type of an adstack handle.
    pub const fn adstack_elem(self) -> Option<AdElem> {
        match self {
            Type::AdStack(e) => Some(e),
            _ => None,
        }
    }
    /// The scalar type of an adstack element.
    pub const fn of_elem(elem: AdElem) -> Type {
        match elem {
            AdElem::F32 => Type::F32,
            AdElem::F64 => Type::F64,
            AdElem::I64 => Type::I64,
        }
    }
    /// Parses a type name as it appears in the text format.
    pub fn from_name(s: &str) -> Option<Type> {
        Some(match s {
            "i8" => Type::I8,
            "i32" => Type::I32,
            "i64" => Type::I64,
            "ptr" => Type::Ptr,
            "f32" => Type::F32,
            "f64" => Type::F64,
            "adstack.f32" => Type::AdStack(AdElem::F32),
            "adstack.f64" => Type::AdStack(AdElem::F64),
            "adstack.i64" => Type::AdStack(AdElem::I64),
            _ => return None,
        })
    }
    /// Parses an adstack element suffix (`f32`, `f64`, `i64`).
    pub fn elem_from_name(s: &str) -> Option<AdElem> {
        Some(match s {
            "f32" => AdElem::F32,
            "f64" => AdElem::F64,
            "i64" => AdElem::I64,
            _ => return None,
        })
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::I8 => f.write_str("i8"),
            Type::I32 => f.write_str("i32"),
            Type::I64 => f.write_str("i64"),
            Type::Ptr => f.write_str("ptr"),
            Type::F32 => f.write_str("f32"),
            Type::F64 => f.write_str("f64"),
            Type::AdStack(e) => write!(f, "adstack.{}", e.name()),
        }
    }
}
