//! The trap scratch area: where a trapping guard leaves what it observed
//! (the first field of the `#[repr(C)]` runtime, written by generated code
//! at fixed offsets), and how the values decode per report kind. See the
//! table in [`crate::trap`].
//!
//! It sits below `runtime` in the module graph: the runtime embeds it, the
//! trap registry and handler read it.

use crate::report::{Observed, ReportKind};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::SeqCst};

/// How many observed values a trap leaves in [`TrapScratch::values`].
pub const TRAP_VALUE_COUNT: usize = 3;

/// The per-runtime area where a trapping guard leaves what it observed.
/// Generated code writes it at fixed offsets ([`TRAP_OWNER_OFFSET`],
/// [`TRAP_VALUES_OFFSET`], [`TRAP_READY_OFFSET`]) from the runtime pointer.
#[repr(C)]
#[derive(Debug)]
pub struct TrapScratch {
    /// The token of the site whose trap is writing (0: never used).
    pub owner: AtomicU64,
    /// The observed values (see the module docs for each kind).
    pub values: [AtomicU64; TRAP_VALUE_COUNT],
    /// The same token, stored once `values` are written.
    pub ready: AtomicU64,
    /// Where the handler writes reports: an fd, or -1 for stderr.
    log_fd: AtomicI32,
    /// Write reports as JSON lines.
    json: AtomicBool,
}

/// Offset of [`TrapScratch::owner`] in the scratch area.
pub const TRAP_OWNER_OFFSET: i32 = std::mem::offset_of!(TrapScratch, owner) as i32;
/// Offset of [`TrapScratch::values`]`[0]` (the others follow, 8 bytes apart).
pub const TRAP_VALUES_OFFSET: i32 = std::mem::offset_of!(TrapScratch, values) as i32;
/// Offset of [`TrapScratch::ready`].
pub const TRAP_READY_OFFSET: i32 = std::mem::offset_of!(TrapScratch, ready) as i32;

const _: () = assert!(TRAP_OWNER_OFFSET == 0);
const _: () = assert!(TRAP_VALUES_OFFSET == 8);
const _: () = assert!(TRAP_READY_OFFSET == 32);

impl TrapScratch {
    pub(crate) const fn new() -> Self {
        TrapScratch {
            owner: AtomicU64::new(0),
            values: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
            ready: AtomicU64::new(0),
            log_fd: AtomicI32::new(-1),
            json: AtomicBool::new(false),
        }
    }

    /// The tag a site's trap writes to `owner` and `ready` (never 0).
    pub const fn token(site: u32) -> u64 {
        site as u64 + 1
    }

    /// Where the signal handlers write: (fd or -1 for stderr, JSON lines?).
    pub(crate) fn output(&self) -> (i32, bool) {
        (self.log_fd.load(SeqCst), self.json.load(SeqCst))
    }

    /// Where the handler writes: `fd` (or stderr when `None`), human or JSON.
    pub(crate) fn set_output(&self, fd: Option<i32>, json: bool) {
        self.log_fd.store(fd.unwrap_or(-1), SeqCst);
        self.json.store(json, SeqCst);
    }

    /// The values if a trap with `token` wrote them (`ready` and `owner`
    /// both hold it).
    pub(crate) fn values_of(&self, token: u64) -> Option<[u64; TRAP_VALUE_COUNT]> {
        let r1 = self.ready.load(SeqCst);
        let v = [
            self.values[0].load(SeqCst),
            self.values[1].load(SeqCst),
            self.values[2].load(SeqCst),
        ];
        let r2 = self.owner.load(SeqCst);
        (r1 == token && r2 == token).then_some(v)
    }
}

/// The observation a kind's trap stored as `values`.
pub fn decode_observed(kind: ReportKind, values: [u64; 3]) -> Observed {
    match kind {
        ReportKind::DictSlotTag => Observed::Dict {
            object: values[0],
            value: values[1],
        },
        ReportKind::AdstackOverflow | ReportKind::AdstackUnderflow => Observed::Adstack {
            capacity: values[0],
            len: values[1],
        },
        ReportKind::SlotClobber => Observed::Clobber {
            address: values[0],
            width: values[1] as u32,
            value: values[2],
        },
        // Not a trap kind (watchpoints report through the sink).
        ReportKind::ForeignWrite => Observed::Write {
            object: values[0],
            old: values[1],
            new: values[2],
            width: 0,
            writer: crate::watch::WriterId::NONE,
        },
        ReportKind::UseAfterFree | ReportKind::DoubleFree | ReportKind::InvalidFree => {
            Observed::Lifetime {
                object: values[0],
                address: values[1],
                width: values[2] as u32,
            }
        }
        ReportKind::AttrOutOfBounds => Observed::Bounds {
            object: values[0],
            index: values[1],
            capacity: values[2],
        },
        ReportKind::HeapOverflow => Observed::Overflow {
            address: values[0],
            width: values[1] as u32,
            value: (values[1] >> 32 != 0).then_some(values[2]),
        },
        // Not trap kinds and never recorded in the sink: fatal, reported as
        // faults are (`fault::FaultCause::Arith`); decoded as raw values.
        ReportKind::DivByZero | ReportKind::IntOverflow => Observed::Bounds {
            object: values[0],
            index: values[1],
            capacity: values[2],
        },
    }
}

/// The three values [`decode_observed`] takes back to `o` (for the kinds
/// that record it): how an object target sends an observation
/// (`aot/src/protocol.rs`, the `R` line).
pub fn encode_observed(o: &Observed) -> [u64; 3] {
    match *o {
        Observed::Dict { object, value } => [object, value, 0],
        Observed::Adstack { capacity, len } => [capacity, len, 0],
        Observed::Clobber {
            address,
            width,
            value,
        } => [address, width.into(), value],
        Observed::Write {
            object, old, new, ..
        } => [object, old, new],
        Observed::Lifetime {
            object,
            address,
            width,
        } => [object, address, width.into()],
        Observed::Bounds {
            object,
            index,
            capacity,
        } => [object, index, capacity],
        Observed::Overflow {
            address,
            width,
            value,
        } => [
            address,
            u64::from(width) | u64::from(value.is_some()) << 32,
            value.unwrap_or(0),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_is_decodings_inverse() {
        let cases = [
            (ReportKind::DictSlotTag, [0x10, 0x96, 0]),
            (ReportKind::AdstackOverflow, [4, 4, 0]),
            (ReportKind::SlotClobber, [8, 1, 0xfe]),
            (ReportKind::UseAfterFree, [0x10, 0x18, 8]),
            (ReportKind::DoubleFree, [0x10, 0x10, 0]),
            (ReportKind::AttrOutOfBounds, [0x10, 5, 2]),
            (ReportKind::HeapOverflow, [0x20, 8 | 1 << 32, 7]),
            (ReportKind::HeapOverflow, [0x20, 4, 0]),
        ];
        for (kind, v) in cases {
            assert_eq!(encode_observed(&decode_observed(kind, v)), v, "{kind:?}");
        }
    }

    #[test]
    fn observed_values_decode_per_kind() {
        assert_eq!(
            decode_observed(ReportKind::SlotClobber, [8, 1, 0xfe]),
            Observed::Clobber {
                address: 8,
                width: 1,
                value: 0xfe
            }
        );
        assert_eq!(
            decode_observed(ReportKind::AdstackUnderflow, [4, 0, 9]),
            Observed::Adstack {
                capacity: 4,
                len: 0
            }
        );
    }

    #[test]
    fn values_are_taken_only_under_their_token() {
        let s = TrapScratch::new();
        assert_eq!(s.values_of(TrapScratch::token(0)), None);
        s.owner.store(TrapScratch::token(2), SeqCst);
        s.values[1].store(7, SeqCst);
        s.ready.store(TrapScratch::token(2), SeqCst);
        assert_eq!(s.values_of(TrapScratch::token(2)), Some([0, 7, 0]));
        assert_eq!(s.values_of(TrapScratch::token(1)), None);
    }
}
