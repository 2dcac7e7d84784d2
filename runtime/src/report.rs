//! Reports: what a guard observed at check time, and the sink that
//! deduplicates them per (site, kind) with an occurrence count.
//!
//! A report is built from values passed in by the check itself; nothing here
//! ever reads program memory to describe a violation.

use crate::layout::{low_bits, TAG_MASK};
use serde_json::{json, Value as Json};
use std::collections::HashMap;
use std::fmt;

/// First user trap code of trap mode: one code per [`ReportKind`] follows.
pub const TRAP_CODE_BASE: u8 = 0x60;

/// What a guard found wrong.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReportKind {
    DictSlotTag,
    AdstackOverflow,
    AdstackUnderflow,
    SlotClobber,
}

impl ReportKind {
    pub const fn name(self) -> &'static str {
        match self {
            ReportKind::DictSlotTag => "dict_slot_tag",
            ReportKind::AdstackOverflow => "adstack_overflow",
            ReportKind::AdstackUnderflow => "adstack_underflow",
            ReportKind::SlotClobber => "slot_clobber",
        }
    }
    /// The numeric code used by generated code and trap codes.
    pub const fn code(self) -> u8 {
        self as u8
    }
    /// The user trap code of this kind's trap instruction in trap mode
    /// (`TRAP_CODE_BASE + code()`; Cranelift's `TrapCode::user`).
    pub const fn trap_code(self) -> u8 {
        TRAP_CODE_BASE + self.code()
    }
    /// The kind whose trap instruction carries user trap code `c`.
    pub fn from_trap_code(c: u8) -> Option<Self> {
        c.checked_sub(TRAP_CODE_BASE).and_then(Self::from_code)
    }
    pub fn from_code(c: u8) -> Option<Self> {
        Some(match c {
            0 => ReportKind::DictSlotTag,
            1 => ReportKind::AdstackOverflow,
            2 => ReportKind::AdstackUnderflow,
            3 => ReportKind::SlotClobber,
            _ => return None,
        })
    }
}

/// The values a check saw, captured when it ran.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Observed {
    /// The object and the managed-dict word that was read or about to be stored.
    Dict { object: u64, value: u64 },
    /// The stack's capacity and its length at the failing op.
    Adstack { capacity: u64, len: u64 },
    /// The raw store's address, width in bytes and value (zero-extended).
    Clobber {
        address: u64,
        width: u32,
        value: u64,
    },
}

/// Where a guard sits: the guarded op's function, source position and opcode.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SiteInfo {
    pub function: String,
    pub line: u32,
    pub col: u32,
    pub op: String,
}

/// The last write to a dict slot that the runtime saw: from instrumented
/// code (`dict_slot.store` under the dict check) or from the model heap.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LastWrite {
    /// The writer: `dict_slot.store at @f 12:5 (site 3)`, `obj_new`, `obj_dictify`, ...
    pub by: String,
    /// Runtime-global site id of an instrumented writer.
    pub site: Option<u32>,
    pub value: u64,
}

/// One deduplicated report: the first observation and how often the (site, kind) fired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub kind: ReportKind,
    /// Runtime-global site id.
    pub site: u32,
    pub info: SiteInfo,
    pub observed: Observed,
    /// For dict kinds: the last known write to the slot, captured at check time.
    pub last_write: Option<LastWrite>,
    pub count: u64,
    /// The first occurrence's backtrace, innermost first (see [`crate::backtrace`]);
    /// empty when not captured.
    pub backtrace: Vec<String>,
}

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

impl Report {
    /// The JSON object of spec §8 (`kind site function line op count` plus per-kind fields).
    pub fn to_json(&self) -> Json {
        let mut o = json!({
            "kind": self.kind.name(),
            "site": self.site,
            "function": self.info.function,
            "line": self.info.line,
            "col": self.info.col,
            "op": self.info.op,
            "count": self.count,
        });
        let m = o.as_object_mut().expect("json object");
        match self.observed {
            Observed::Dict { object, value } => {
                m.insert("object".into(), json!(hex(object)));
                m.insert("value".into(), json!(hex(value)));
                m.insert("value_low_bits".into(), json!(low_bits(value)));
            }
            Observed::Adstack { capacity, len } => {
                m.insert("capacity".into(), json!(capacity));
                m.insert("len".into(), json!(len));
            }
            Observed::Clobber {
                address,
                width,
                value,
            } => {
                m.insert("address".into(), json!(hex(address)));
                m.insert("width".into(), json!(width));
                m.insert("value".into(), json!(hex(value)));
            }
        }
        if let (Some(w), Observed::Dict { value, .. }) = (&self.last_write, self.observed) {
            m.insert(
                "last_write".into(),
                json!({"by": w.by, "site": w.site, "value": hex(w.value), "changed_behind": w.value != value}),
            );
        }
        if !self.backtrace.is_empty() {
            m.insert("backtrace".into(), json!(self.backtrace));
        }
        o
    }

    /// Sanitizer-style human text, several lines, ending in a newline.
    pub fn to_human(&self) -> String {
        self.human().to_string()
    }

    /// The human form as a [`fmt::Display`] that borrows this report.
    pub fn human(&self) -> HumanReport<'_> {
        HumanReport {
            kind: self.kind,
            site: self.site,
            function: &self.info.function,
            line: self.info.line,
            col: self.info.col,
            op: &self.info.op,
            observed: Some(self.observed),
            last_write: self.last_write.as_ref(),
            count: self.count,
            trap: None,
            backtrace: &self.backtrace,
        }
    }
}

/// Where a trap-mode report came from: the signal and the trapping PC.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TrapNote {
    /// `SIGILL` or `SIGTRAP`.
    pub signal: &'static str,
    pub pc: u64,
}

/// The human form of a report, written without allocating (`Display` over
/// borrowed parts), so that the trap-mode signal handler prints exactly
/// what [`Report::to_human`] prints, from a stack buffer.
#[derive(Copy, Clone, Debug)]
pub struct HumanReport<'a> {
    pub kind: ReportKind,
    pub site: u32,
    pub function: &'a str,
    pub line: u32,
    pub col: u32,
    pub op: &'a str,
    /// `None`: the values were not captured (trap mode, see `trap.rs`).
    pub observed: Option<Observed>,
    pub last_write: Option<&'a LastWrite>,
    pub count: u64,
    pub trap: Option<TrapNote>,
    /// Frames printed after the "where" line, `#0` innermost.
    pub backtrace: &'a [String],
}

impl fmt::Display for HumanReport<'_> {
    fn fmt(&self, s: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            s,
            "==guardlift== ERROR: {} at @{} {}:{} ({}), site {}",
            self.kind.name(),
            self.function,
            self.line,
            self.col,
            self.op,
            self.site
        )?;
        for (i, f) in self.backtrace.iter().enumerate() {
            writeln!(s, "    #{i} {f}")?;
        }
        match self.observed {
            Some(Observed::Dict { object, value }) => {
                writeln!(
                    s,
                    "    object {object:#x}: managed-dict word {value:#x}, low bits 0b{:03b} (valid: 0b111 values-tagged, 0b000 dict pointer or 0)",
                    value & TAG_MASK
                )?;
            }
            Some(Observed::Adstack { capacity, len }) => {
                let what = match self.kind {
                    ReportKind::AdstackOverflow => "push into a full adstack",
                    _ => "access to an empty adstack",
                };
                writeln!(s, "    {what}: len {len}, capacity {capacity}")?;
            }
            Some(Observed::Clobber {
                address,
                width,
                value,
            }) => {
                writeln!(
                    s,
                    "    raw store of {width} byte(s) at {address:#x} (value {value:#x}) overlaps a watched managed-dict slot"
                )?;
            }
            None => {
                writeln!(
                    s,
                    "    observed values not captured: another thread's trap overwrote them"
                )?;
            }
        }
        if let (Some(w), Some(Observed::Dict { value, .. })) = (self.last_write, self.observed) {
            let verdict = if w.value != value {
                "the word changed behind the JIT's back"
            } else {
                "the bad word was written by that store"
            };
            writeln!(
                s,
                "    last known write to the slot: {} stored {:#x}; {verdict}",
                w.by, w.value
            )?;
        }
        if let Some(t) = self.trap {
            writeln!(
                s,
                "    trap mode: {} at pc {:#x} (the guard's trap instruction); aborting",
                t.signal, t.pc
            )?;
        }
        writeln!(s, "    seen {} time(s)", self.count)
    }
}

/// Deduplicating, order-preserving report store. Not itself synchronized:
/// the runtime keeps it behind a mutex.
#[derive(Debug, Default)]
pub struct ReportSink {
    index: HashMap<(u32, ReportKind), usize>,
    reports: Vec<Report>,
}

impl ReportSink {
    /// Records one occurrence; returns the (site, kind)'s count so far
    /// (1 for the first) and its report.
    pub fn record(
        &mut self,
        kind: ReportKind,
        site: u32,
        info: &SiteInfo,
        observed: Observed,
        last_write: Option<LastWrite>,
    ) -> (u64, &Report) {
        let i = match self.index.get(&(site, kind)) {
            Some(&i) => {
                self.reports[i].count += 1;
                i
            }
            None => {
                self.index.insert((site, kind), self.reports.len());
                self.reports.push(Report {
                    kind,
                    site,
                    info: info.clone(),
                    observed,
                    last_write,
                    count: 1,
                    backtrace: crate::backtrace::capture(info),
                });
                self.reports.len() - 1
            }
        };
        (self.reports[i].count, &self.reports[i])
    }
    /// Takes every report, leaving the sink empty.
    pub fn take(&mut self) -> Vec<Report> {
        self.index.clear();
        std::mem::take(&mut self.reports)
    }
    pub fn is_empty(&self) -> bool {
        self.reports.is_empty()
    }
    pub fn reports(&self) -> &[Report] {
        &self.reports
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedup_counts_and_keeps_first_observation() {
        let info = SiteInfo {
            function: "main".into(),
            line: 3,
            col: 5,
            op: "store_attr".into(),
        };
        let mut s = ReportSink::default();
        let lw = LastWrite {
            by: "obj_new".into(),
            site: None,
            value: 0x97,
        };
        let dict = |v| Observed::Dict {
            object: 16,
            value: v,
        };
        assert_eq!(
            s.record(ReportKind::DictSlotTag, 0, &info, dict(0x96), Some(lw))
                .0,
            1
        );
        assert_eq!(
            s.record(ReportKind::DictSlotTag, 0, &info, dict(0x2), None)
                .0,
            2
        );
        let ad = Observed::Adstack {
            capacity: 1,
            len: 1,
        };
        assert_eq!(
            s.record(ReportKind::AdstackOverflow, 0, &info, ad, None).0,
            1
        );
        let r = s.take();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].count, 2);
        assert_eq!(
            r[0].observed,
            Observed::Dict {
                object: 16,
                value: 0x96
            }
        );
        assert_eq!(r[0].to_json()["value"], "0x96");
        assert_eq!(r[0].to_json()["value_low_bits"], "0b110");
        assert!(r[0].to_human().contains("low bits 0b110"));
        assert_eq!(r[0].to_json()["last_write"]["changed_behind"], true);
        assert!(r[0].to_human().contains("changed behind the JIT's back"));
        assert!(s.take().is_empty(), "taking twice finds nothing");
    }
}
