//! Reports: what a guard observed at check time, and the sink that
//! deduplicates them per (site, kind) with an occurrence count.
//!
//! A report is built from values passed in by the check itself; nothing here
//! ever reads program memory to describe a violation.
//!
//! tidy: long because `HumanReport::fmt` writes every report kind's human form in one allocation-free function (the signal handlers print it).

use crate::host_stack::{HostStack, HostStacks};
use crate::layout::{low_bits, TAG_MASK};
use serde_json::{json, Value as Json};
use std::collections::HashMap;
use std::fmt;

pub use guardlift_abi::report::{kind_names, FAULT_KINDS, HOST_FAULT, STACK_OVERFLOW};
pub use guardlift_abi::{ReportKind, TRAP_CODE_BASE};

mod raw;
pub use raw::LastWriteCode;

/// The values a check saw, captured when it ran.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Observed {
    /// The object and the managed-dict word that was read or about to be stored.
    Dict {
        /// The object.
        object: u64,
        /// Its managed-dict word.
        value: u64,
    },
    /// The stack's capacity and its length at the failing op.
    Adstack {
        /// The stack's capacity.
        capacity: u64,
        /// Its length.
        len: u64,
    },
    /// The raw store's address, width in bytes and value (zero-extended).
    Clobber {
        /// The store's address.
        address: u64,
        /// Its width in bytes.
        width: u32,
        /// The value stored (zero-extended).
        value: u64,
    },
    /// A watchpoint's trapped write: the word before and after, the bytes
    /// the writing instruction stored, and who wrote it.
    Write {
        /// The watched object.
        object: u64,
        /// Its dict word before the write.
        old: u64,
        /// Its dict word after the write.
        new: u64,
        /// Bytes the writing instruction stored (0: unknown).
        width: u32,
        /// Who wrote it.
        writer: crate::watch::WriterId,
    },
    /// A lifetime violation: the object pointer the op used (or freed) and,
    /// for a raw load/store, the accessed address and width (else the
    /// object pointer and 0).
    Lifetime {
        /// The object pointer the op used or freed.
        object: u64,
        /// The accessed address (else the object pointer).
        address: u64,
        /// The access width in bytes (0: not a raw access).
        width: u32,
    },
    /// A raw access touching a heap redzone: its address, width in bytes
    /// and, for a store, the value (zero-extended). The object whose
    /// redzone it is, the runtime looks up (as for `Clobber`).
    Overflow {
        /// The access's address.
        address: u64,
        /// Its width in bytes.
        width: u32,
        /// The value stored (a store; `None` for a load).
        value: Option<u64>,
    },
    /// The object, the attribute index and the values array's capacity.
    Bounds {
        /// The object.
        object: u64,
        /// The attribute index.
        index: u64,
        /// The values array's capacity.
        capacity: u64,
    },
}

impl Observed {
    /// The object (or address, for a raw access) the observation is about.
    pub fn object(&self) -> Option<u64> {
        match *self {
            Observed::Dict { object, .. }
            | Observed::Lifetime { object, .. }
            | Observed::Bounds { object, .. }
            | Observed::Write { object, .. } => Some(object),
            Observed::Adstack { .. } | Observed::Clobber { .. } | Observed::Overflow { .. } => None,
        }
    }
}

/// Which object a report is about (spec §6): its allocation id and where
/// it was allocated and freed, as known to the runtime when the check ran.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectNote {
    /// Allocation id (1, 2, 3, … per runtime).
    pub id: u64,
    /// The IR call that allocated it (`None`: unknown, e.g. a host object).
    pub alloc_site: Option<SiteInfo>,
    /// The IR call that freed it (`None`: live, or freed by the host or
    /// without a site).
    pub free_site: Option<SiteInfo>,
    /// Has it been freed?
    pub freed: bool,
    /// A host object's native stacks at its registration and free, as
    /// the record held them when the report was recorded (symbolized when
    /// rendered: [`crate::host_stack`]).
    pub stacks: HostStacks,
    /// The runtime-global site ids of `alloc_site` and `free_site`: the
    /// raw record beside the text, which an object target's runtime sends
    /// to the host (`aot/src/protocol.rs`) to be named with its module.
    pub site_ids: [Option<u32>; 2],
}

/// One object a deduplicated report saw, and how many of its occurrences
/// were about it (spec §6, `objects`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectCount {
    /// The object's allocation id.
    pub object_id: u64,
    /// Occurrences about it.
    pub count: u64,
}

/// Most objects a report lists (spec §6); later ones are counted in the
/// report's `count` only.
pub const MAX_OBJECTS: usize = guardlift_abi::report::MAX_REPORT_OBJECTS;

/// Adds an occurrence about object `id` to `objects` (first seen first).
pub fn count_object(objects: &mut Vec<ObjectCount>, id: u64) {
    if let Some(o) = objects.iter_mut().find(|o| o.object_id == id) {
        o.count += 1;
    } else if objects.len() < MAX_OBJECTS {
        objects.push(ObjectCount {
            object_id: id,
            count: 1,
        });
    }
}

fn site_json(s: &Option<SiteInfo>) -> Json {
    match s {
        Some(s) => json!({"function": s.function, "line": s.line, "col": s.col}),
        None => Json::Null,
    }
}

/// [`site_json`] formatted without allocating.
struct SiteJson<'a>(&'a Option<SiteInfo>);

impl fmt::Display for SiteJson<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(s) => write!(
                f,
                "{{\"function\":{},\"line\":{},\"col\":{}}}",
                JsonStr(&s.function),
                s.line,
                s.col
            ),
            None => f.write_str("null"),
        }
    }
}

/// `@fn L:C` or "an unknown site", formatted without allocating (the
/// signal handlers print object notes of pending reports).
struct SiteText<'a>(&'a Option<SiteInfo>);

impl fmt::Display for SiteText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(s) => write!(f, "@{} {}:{}", s.function, s.line, s.col),
            None => f.write_str("an unknown site"),
        }
    }
}

pub use guardlift_abi::SiteInfo;

/// The human lines about a report's object: its id and allocation site,
/// and where it was freed (without allocating: fault handlers print them).
pub(crate) fn write_object_note(s: &mut dyn fmt::Write, n: &ObjectNote) -> fmt::Result {
    writeln!(
        s,
        "    object id {}, allocated at {}",
        n.id,
        SiteText(&n.alloc_site)
    )?;
    if let Some(st) = &n.stacks.alloc {
        write_stack(s, "registered by the host at", st)?;
    }
    if n.freed {
        writeln!(s, "    freed at {}", SiteText(&n.free_site))?;
        if let Some(st) = &n.stacks.free {
            write_stack(s, "reported freed by the host at", st)?;
        }
    }
    Ok(())
}

/// A host stack's human lines: `what:`, then its frames (`#0` innermost).
fn write_stack(s: &mut dyn fmt::Write, what: &str, st: &HostStack) -> fmt::Result {
    writeln!(s, "    {what}:")?;
    let mut i = 0;
    st.each_frame(|fr| {
        let r = writeln!(s, "      #{i} {fr}");
        i += 1;
        r
    })
}

/// A host stack as a JSON array of frame strings.
fn write_stack_json(f: &mut dyn fmt::Write, st: &HostStack) -> fmt::Result {
    f.write_char('[')?;
    let mut first = true;
    st.each_frame(|fr| {
        let sep = if first { "" } else { "," };
        first = false;
        write!(f, "{sep}{}", JsonStr(fr))
    })?;
    f.write_char(']')
}

/// The JSON fields about a report's object (`,"object_id":…,"alloc_site":…`,
/// and `free_site` when it was freed or `free_site` is asked for).
pub(crate) fn write_object_note_json(
    f: &mut dyn fmt::Write,
    n: &ObjectNote,
    free_site: bool,
) -> fmt::Result {
    write!(
        f,
        ",\"object_id\":{},\"alloc_site\":{}",
        n.id,
        SiteJson(&n.alloc_site)
    )?;
    if free_site || n.freed {
        write!(f, ",\"free_site\":{}", SiteJson(&n.free_site))?;
    }
    if let Some(st) = &n.stacks.alloc {
        f.write_str(",\"alloc_stack\":")?;
        write_stack_json(f, st)?;
    }
    if let (Some(st), true) = (&n.stacks.free, n.freed) {
        f.write_str(",\"free_stack\":")?;
        write_stack_json(f, st)?;
    }
    Ok(())
}

/// Does a dict report at a site of opcode `op` observe the word in the
/// slot, so that the slot's last known write ([`LastWrite`]) explains it?
/// Not a `dict_slot.store`: its word is the value it was about to write.
pub fn observes_the_slot(op: &str) -> bool {
    op != "dict_slot.store"
}

/// Site `s` as a backtrace frame.
pub fn site_frame(s: &SiteInfo) -> crate::backtrace::IrFrame<'_> {
    crate::backtrace::IrFrame {
        function: &s.function,
        line: s.line,
        col: s.col,
        op: &s.op,
    }
}

/// The last write to a dict slot that the runtime saw: from instrumented
/// code (`dict_slot.store` under the dict check) or from the model heap.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LastWrite {
    /// The writer: `dict_slot.store at @f 12:5 (site 3)`, `obj_new`, `obj_dictify`, ...
    pub by: String,
    /// Runtime-global site id of an instrumented writer.
    pub site: Option<u32>,
    /// The word written.
    pub value: u64,
    /// Allocation id of the object whose slot was written (a slot address
    /// recycled for another object shows a different id than the report's).
    pub object_id: Option<u64>,
}

/// One deduplicated report: the first observation and how often the (site, kind) fired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// What was found wrong.
    pub kind: ReportKind,
    /// Runtime-global site id.
    pub site: u32,
    /// The site's function, position and opcode.
    pub info: SiteInfo,
    /// What the first occurrence observed.
    pub observed: Observed,
    /// For dict kinds: the last known write to the slot, captured at check time.
    pub last_write: Option<LastWrite>,
    /// The object the report is about, when the runtime knows it.
    pub object: Option<ObjectNote>,
    /// Every object the occurrences were about (up to [`MAX_OBJECTS`], in
    /// the order first seen; the first is `object`'s). Listed as `objects`
    /// when there is more than one.
    pub objects: Vec<ObjectCount>,
    /// How many times the (site, kind) fired.
    pub count: u64,
    /// The first occurrence's backtrace, innermost first (see [`crate::backtrace`]);
    /// empty when not captured.
    pub backtrace: Vec<String>,
}

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

/// Runtime-global site id of reports that have no guard site (`foreign_write`).
pub const NO_SITE: u32 = u32::MAX;

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
            Observed::Overflow {
                address,
                width,
                value,
            } => {
                m.insert("address".into(), json!(hex(address)));
                m.insert("width".into(), json!(width));
                if let Some(v) = value {
                    m.insert("value".into(), json!(hex(v)));
                }
            }
            Observed::Write {
                object,
                old,
                new,
                width,
                writer,
            } => {
                m.insert("site".into(), json!(null));
                m.insert("object".into(), json!(hex(object)));
                m.insert("old".into(), json!(hex(old)));
                m.insert("new".into(), json!(hex(new)));
                m.insert("new_low_bits".into(), json!(low_bits(new)));
                m.insert("width".into(), json!(width));
                if let Some(w) = writer.get() {
                    m.insert("object_id".into(), json!(w.object_id));
                    let mut wj = json!({"symbol": w.symbol, "pc": hex(w.pc)});
                    if let Some(s) = &w.site {
                        wj["site"] = json!({"function": s.function, "line": s.line, "op": s.op});
                    }
                    m.insert("writer".into(), wj);
                    m.insert("backtrace".into(), json!(w.backtrace));
                }
            }
            Observed::Lifetime {
                object,
                address,
                width,
            } => {
                m.insert("object".into(), json!(hex(object)));
                if width > 0 {
                    m.insert("address".into(), json!(hex(address)));
                    m.insert("width".into(), json!(width));
                }
            }
            Observed::Bounds {
                object,
                index,
                capacity,
            } => {
                m.insert("object".into(), json!(hex(object)));
                m.insert("index".into(), json!(index));
                m.insert("capacity".into(), json!(capacity));
            }
        }
        if let Some(n) = &self.object {
            m.insert("object_id".into(), json!(n.id));
            m.insert("alloc_site".into(), site_json(&n.alloc_site));
            if self.kind.is_lifetime() || n.freed {
                m.insert("free_site".into(), site_json(&n.free_site));
            }
            if let Some(st) = &n.stacks.alloc {
                m.insert("alloc_stack".into(), json!(st.frames()));
            }
            if let (Some(st), true) = (&n.stacks.free, n.freed) {
                m.insert("free_stack".into(), json!(st.frames()));
            }
        }
        if self.objects.len() > 1 {
            let list: Vec<Json> = self
                .objects
                .iter()
                .map(|o| json!({"object_id": o.object_id, "count": o.count}))
                .collect();
            m.insert("objects".into(), Json::Array(list));
        }
        if let (Some(w), Observed::Dict { value, .. }) = (&self.last_write, self.observed) {
            m.insert(
                "last_write".into(),
                json!({"by": w.by, "site": w.site, "value": hex(w.value), "changed_behind": w.value != value, "object_id": w.object_id}),
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
            observed: Some(self.observed),
            last_write: self.last_write.as_ref(),
            object: self.object.as_ref(),
            objects: &self.objects,
            count: self.count,
            backtrace: &self.backtrace,
            ..HumanReport::at(self.kind, self.site, &self.info)
        }
    }
}

/// Where a trap-mode report came from: the signal and the trapping PC.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TrapNote {
    /// `SIGILL` or `SIGTRAP`.
    pub signal: &'static str,
    /// The trap instruction's address.
    pub pc: u64,
}

/// The human form of a report, written without allocating (`Display` over
/// borrowed parts), so that the trap-mode signal handler prints exactly
/// what [`Report::to_human`] prints, from a stack buffer.
#[derive(Copy, Clone, Debug)]
pub struct HumanReport<'a> {
    /// What was found wrong.
    pub kind: ReportKind,
    /// Runtime-global site id ([`NO_SITE`] for a writer's report).
    pub site: u32,
    /// The site's function.
    pub function: &'a str,
    /// The site's line.
    pub line: u32,
    /// The site's column.
    pub col: u32,
    /// The site's opcode.
    pub op: &'a str,
    /// `None`: the values were not captured (trap mode, see `trap.rs`).
    pub observed: Option<Observed>,
    /// The last known write to the slot (dict kinds).
    pub last_write: Option<&'a LastWrite>,
    /// The object the report is about (not known to the trap handler).
    pub object: Option<&'a ObjectNote>,
    /// The objects the occurrences were about ([`Report::objects`]).
    pub objects: &'a [ObjectCount],
    /// How many times the (site, kind) fired.
    pub count: u64,
    /// Set by trap mode's handler: the signal and the trap's PC.
    pub trap: Option<TrapNote>,
    /// Frames printed after the "where" line, `#0` innermost.
    pub backtrace: &'a [String],
}

impl<'a> HumanReport<'a> {
    /// A report of `kind` at `site` seen once, nothing else known yet (the
    /// other fields are filled in with struct update syntax).
    pub fn at(kind: ReportKind, site: u32, info: &'a SiteInfo) -> Self {
        HumanReport {
            kind,
            site,
            function: &info.function,
            line: info.line,
            col: info.col,
            op: &info.op,
            observed: None,
            last_write: None,
            object: None,
            objects: &[],
            count: 1,
            trap: None,
            backtrace: &[],
        }
    }

    /// The JSON line of this report, formatted without allocating (the
    /// keys of [`Report::to_json`], plus `trap_signal` and `trap_pc`).
    pub fn json(&self) -> JsonReport<'_> {
        JsonReport(self)
    }
}

impl fmt::Display for HumanReport<'_> {
    fn fmt(&self, s: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 && self.site == NO_SITE {
            // A writer known only by its function (JIT code without a line).
            write!(
                s,
                "==guardlift== ERROR: {} in @{}",
                self.kind.name(),
                self.function
            )?;
        } else {
            write!(
                s,
                "==guardlift== ERROR: {} at @{} {}:{} ({})",
                self.kind.name(),
                self.function,
                self.line,
                self.col,
                self.op,
            )?;
        }
        if self.site == NO_SITE {
            writeln!(s)?;
        } else {
            writeln!(s, ", site {}", self.site)?;
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
            Some(Observed::Overflow {
                address,
                width,
                value,
            }) => match value {
                Some(v) => writeln!(
                    s,
                    "    raw store of {width} byte(s) at {address:#x} (value {v:#x}) touches a heap redzone"
                )?,
                None => writeln!(
                    s,
                    "    raw load of {width} byte(s) at {address:#x} touches a heap redzone"
                )?,
            },
            Some(Observed::Write {
                object,
                old,
                new,
                width,
                writer,
            }) => crate::watch::write_human(s, object, old, new, width, writer)?,
            Some(Observed::Lifetime {
                object,
                address,
                width,
            }) => match self.kind {
                ReportKind::DoubleFree => writeln!(s, "    free of {object:#x}, already freed")?,
                ReportKind::InvalidFree => writeln!(
                    s,
                    "    free of {object:#x}, which is not an object the runtime allocated"
                )?,
                _ if width > 0 => writeln!(
                    s,
                    "    {width}-byte access at {address:#x} inside freed object {object:#x}"
                )?,
                _ => writeln!(s, "    access to freed object {object:#x}")?,
            },
            Some(Observed::Bounds {
                object,
                index,
                capacity,
            }) => writeln!(
                s,
                "    object {object:#x}: attribute index {index} at or past the values array's capacity {capacity}"
            )?,
            None => {
                writeln!(
                    s,
                    "    observed values not captured: another thread's trap overwrote them"
                )?;
            }
        }
        // ASan's order: what (above), where (the backtrace), then the
        // object and its history.
        for (i, f) in self.backtrace.iter().enumerate() {
            writeln!(s, "    #{i} {f}")?;
        }
        if let Some(n) = &self.object {
            write_object_note(s, n)?;
        }
        if self.objects.len() > 1 {
            write!(s, "    objects seen here:")?;
            for (i, o) in self.objects.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                write!(s, "{sep} id {} ({} time(s))", o.object_id, o.count)?;
            }
            writeln!(s)?;
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
            if let Some(id) = w.object_id {
                let same = self.object.map(|n| n.id);
                let note = match same {
                    Some(x) if x != id => " (another object at the same address)",
                    _ => "",
                };
                writeln!(s, "    that write was to object id {id}{note}")?;
            }
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

/// The foreign writes the watchpoints caught since the last call, as
/// (site, observation) pairs for the report sink: the site is the writer's
/// IR site, else the IR call below it, else the writer's symbol. Cheap when
/// nothing was caught.
pub(crate) fn foreign_writes() -> Vec<(SiteInfo, Observed)> {
    if !crate::watch::active() && !crate::watch::pending() {
        return Vec::new();
    }
    crate::watch::drain()
        .into_iter()
        .map(|fw| {
            let w = &fw.writer;
            let info = match w.site.as_ref().or(w.ir_caller.as_ref()) {
                Some(s) => SiteInfo {
                    function: s.function.clone(),
                    line: s.line,
                    col: s.col,
                    op: s.op.clone(),
                },
                None => SiteInfo {
                    function: w.symbol.clone(),
                    line: 0,
                    col: 0,
                    op: "?".into(),
                },
            };
            let observed = Observed::Write {
                object: fw.object,
                old: fw.old,
                new: fw.new,
                width: w.width,
                writer: crate::watch::WriterId::intern(fw.writer),
            };
            (info, observed)
        })
        .collect()
}

/// A JSON string literal of `T`'s text, escaped, written without
/// allocating.
pub(crate) struct JsonStr<T>(pub(crate) T);

impl<T: fmt::Display> fmt::Display for JsonStr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write as _;
        /// Escapes what is written through it.
        struct Escape<'a, 'b>(&'a mut fmt::Formatter<'b>);
        impl fmt::Write for Escape<'_, '_> {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                for c in s.chars() {
                    match c {
                        '"' => self.0.write_str("\\\"")?,
                        '\\' => self.0.write_str("\\\\")?,
                        c if (c as u32) < 0x20 => write!(self.0, "\\u{:04x}", c as u32)?,
                        c => self.0.write_char(c)?,
                    }
                }
                Ok(())
            }
        }
        f.write_char('"')?;
        write!(Escape(f), "{}", self.0)?;
        f.write_char('"')
    }
}

/// The JSON line of a [`HumanReport`] ([`HumanReport::json`]).
pub struct JsonReport<'a>(&'a HumanReport<'a>);

impl fmt::Display for JsonReport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        write!(
            f,
            "{{\"kind\":\"{}\",\"site\":{},\"function\":{},\"line\":{},\"col\":{},\"op\":{},\"count\":{}",
            r.kind.name(),
            r.site,
            JsonStr(r.function),
            r.line,
            r.col,
            JsonStr(r.op),
            r.count
        )?;
        match r.observed {
            Some(Observed::Dict { object, value }) => write!(
                f,
                ",\"object\":\"{object:#x}\",\"value\":\"{value:#x}\",\"value_low_bits\":\"0b{:03b}\"",
                value & TAG_MASK
            )?,
            Some(Observed::Adstack { capacity, len }) => {
                write!(f, ",\"capacity\":{capacity},\"len\":{len}")?
            }
            Some(Observed::Clobber {
                address,
                width,
                value,
            }) => write!(
                f,
                ",\"address\":\"{address:#x}\",\"width\":{width},\"value\":\"{value:#x}\""
            )?,
            Some(Observed::Overflow {
                address,
                width,
                value,
            }) => {
                write!(f, ",\"address\":\"{address:#x}\",\"width\":{width}")?;
                if let Some(v) = value {
                    write!(f, ",\"value\":\"{v:#x}\"")?;
                }
            }
            Some(Observed::Lifetime {
                object,
                address,
                width,
            }) => {
                write!(f, ",\"object\":\"{object:#x}\"")?;
                if width > 0 {
                    write!(f, ",\"address\":\"{address:#x}\",\"width\":{width}")?;
                }
            }
            Some(Observed::Bounds {
                object,
                index,
                capacity,
            }) => write!(
                f,
                ",\"object\":\"{object:#x}\",\"index\":{index},\"capacity\":{capacity}"
            )?,
            Some(Observed::Write { .. }) | None => {}
        }
        if let Some(n) = &r.object {
            write_object_note_json(f, n, r.kind.is_lifetime())?;
        }
        if r.objects.len() > 1 {
            f.write_str(",\"objects\":[")?;
            for (i, o) in r.objects.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                write!(
                    f,
                    "{sep}{{\"object_id\":{},\"count\":{}}}",
                    o.object_id, o.count
                )?;
            }
            f.write_str("]")?;
        }
        if let (Some(w), Some(Observed::Dict { value, .. })) = (r.last_write, r.observed) {
            write!(f, ",\"last_write\":{{\"by\":{},\"site\":", JsonStr(&w.by))?;
            match w.site {
                Some(site) => write!(f, "{site}")?,
                None => f.write_str("null")?,
            }
            write!(
                f,
                ",\"value\":\"{:#x}\",\"changed_behind\":{},\"object_id\":",
                w.value,
                w.value != value
            )?;
            match w.object_id {
                Some(id) => write!(f, "{id}}}")?,
                None => f.write_str("null}")?,
            }
        }
        if !r.backtrace.is_empty() {
            f.write_str(",\"backtrace\":[")?;
            for (i, fr) in r.backtrace.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                write!(f, "{sep}{}", JsonStr(fr))?;
            }
            f.write_str("]")?;
        }
        if let Some(t) = r.trap {
            write!(
                f,
                ",\"trap_signal\":\"{}\",\"trap_pc\":\"{:#x}\"",
                t.signal, t.pc
            )?;
        }
        f.write_str("}\n")
    }
}

/// Writes `report` to `fd` (stderr when `fd < 0`, with the fallback of
/// [`crate::output::write_fd_or_stderr`]), as a JSON line when `json`, else
/// in human form. Async-signal-safe when the report is (no object note:
/// the signal handlers never have one).
#[cfg(unix)]
pub fn write_signal_safe(fd: i32, json: bool, report: &HumanReport<'_>) {
    if json {
        crate::output::write_display_fd_or_stderr(fd, &report.json());
    } else {
        crate::output::write_display_fd_or_stderr(fd, report);
    }
}

/// Deduplicating, order-preserving report store. Not itself synchronized:
/// the runtime keeps it behind a mutex.
#[derive(Debug, Default)]
pub struct ReportSink {
    /// (site, kind, a hash of the writer's PC and IR position of a
    /// `foreign_write`, or `u64::MAX`) → report: one writing instruction's
    /// writes to several objects are one report listing them (`objects`).
    index: HashMap<(u32, ReportKind, u64), usize>,
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
        object: Option<ObjectNote>,
    ) -> (u64, &Report) {
        // A foreign write's report is its writing instruction's at its IR
        // position (the interpreter writes every IR store from one PC).
        let writer = match observed {
            Observed::Write { writer, .. } => {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                writer
                    .get()
                    .map_or(u64::from(writer.0), |w| w.pc)
                    .hash(&mut h);
                info.hash(&mut h);
                h.finish() & !(1 << 63)
            }
            _ => u64::MAX,
        };
        let i = match self.index.get(&(site, kind, writer)) {
            Some(&i) => {
                let r = &mut self.reports[i];
                r.count += 1;
                if let Some(n) = &object {
                    count_object(&mut r.objects, n.id);
                }
                i
            }
            None => {
                self.index.insert((site, kind, writer), self.reports.len());
                let objects = object
                    .iter()
                    .map(|n| ObjectCount {
                        object_id: n.id,
                        count: 1,
                    })
                    .collect();
                self.reports.push(Report {
                    kind,
                    site,
                    info: info.clone(),
                    observed,
                    last_write,
                    object,
                    objects,
                    count: 1,
                    // A watchpoint's write carries the writer's own backtrace.
                    backtrace: if kind == ReportKind::ForeignWrite {
                        Vec::new()
                    } else {
                        crate::backtrace::capture(site_frame(info))
                    },
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
    /// Has nothing been recorded?
    pub fn is_empty(&self) -> bool {
        self.reports.is_empty()
    }
    /// The reports recorded, in order of first occurrence.
    pub fn reports(&self) -> &[Report] {
        &self.reports
    }
}

#[cfg(test)]
mod tests;
