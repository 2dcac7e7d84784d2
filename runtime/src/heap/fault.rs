//! Host faults of the model heap as raw data: what went wrong
//! ([`HostFaultKind`]) and its two operands, from which the message is
//! made ([`HostFaultKind::message`]). An object target's runtime sends the
//! raw fields to the host (`aot/src/protocol.rs`, the `F` line), which
//! makes the same message with the same function: the texts have one
//! definition.

use super::MAX_OBJ_ATTRS;
use crate::layout;

/// The host functions a host fault names, in the order the target
/// protocol numbers them (`F FN ...`).
pub const HOST_FAULT_FUNCS: &[&str] = &[
    "obj_new",
    "obj_dictify",
    "obj_free",
    "fault_clear_lsb",
    "load_attr_slow",
    "store_attr_slow",
    "dict",
];

/// The writer of a slot's last write when `obj_new` stored the values word.
pub const BY_OBJ_NEW: &str = "obj_new";
/// The writer of a slot's last write when the heap's dict code stored a dict.
pub const BY_DICT_CODE: &str = "the host's dict code";

/// What went wrong in a host fault (its code is the discriminant).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum HostFaultKind {
    /// `A` is not a live object.
    NotLive = 0,
    /// `obj_free(A)` of an object already freed (in quarantine).
    DoubleFree = 1,
    /// Object `A`'s word `B` is neither its values array nor its dict.
    Corrupted = 2,
    /// Attribute `A` of an object with `B`.
    AttrRange = 3,
    /// `obj_new(A)` with a count out of range.
    CountRange = 4,
    /// The allocation failed.
    OutOfMemory = 5,
}

impl HostFaultKind {
    /// Every kind, in code order.
    pub const ALL: [HostFaultKind; 6] = [
        HostFaultKind::NotLive,
        HostFaultKind::DoubleFree,
        HostFaultKind::Corrupted,
        HostFaultKind::AttrRange,
        HostFaultKind::CountRange,
        HostFaultKind::OutOfMemory,
    ];

    /// The kind of a code, if any.
    pub fn from_code(c: u64) -> Option<HostFaultKind> {
        HostFaultKind::ALL.into_iter().find(|f| *f as u64 == c)
    }

    /// The message of this fault with operands `a` and `b`.
    pub fn message(self, a: u64, b: u64) -> String {
        match self {
            HostFaultKind::NotLive => format!("{a:#x} is not a live object"),
            HostFaultKind::DoubleFree => format!("{a:#x} is not a live object (double free)"),
            HostFaultKind::Corrupted => format!(
                "object {a:#x}: managed-dict word {b:#x} (low bits {}) is neither its values array nor its dict: the word was corrupted",
                layout::low_bits(b)
            ),
            HostFaultKind::AttrRange => format!("attribute {a} of an object with {b}"),
            HostFaultKind::CountRange => format!(
                "attribute count {} out of range 0..={MAX_OBJ_ATTRS}",
                a as i64
            ),
            HostFaultKind::OutOfMemory => "out of memory".to_string(),
        }
    }

    /// The host fault of this kind in `func`.
    pub fn host_fault(self, func: &'static str, a: u64, b: u64) -> super::HostFault {
        super::HostFault {
            func,
            msg: self.message(a, b),
            kind: self,
            operands: [a, b],
        }
    }
}

/// `Err` of the host fault `kind` in `func`.
pub(super) fn fault<T>(
    func: &'static str,
    kind: HostFaultKind,
    a: u64,
    b: u64,
) -> Result<T, super::HostFault> {
    Err(kind.host_fault(func, a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_functions_are_distinct() {
        for k in HostFaultKind::ALL {
            assert_eq!(HostFaultKind::from_code(k as u64), Some(k));
        }
        assert_eq!(HostFaultKind::from_code(6), None);
        let mut f = HOST_FAULT_FUNCS.to_vec();
        f.sort_unstable();
        f.dedup();
        assert_eq!(f.len(), HOST_FAULT_FUNCS.len());
    }
}
