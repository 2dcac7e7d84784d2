//! What the handles refer to, and the C view of a report.

use crate::error::cstring;
use guardlift_ir::{Module, Type};
use guardlift_jit::CompiledModule;
use guardlift_runtime::{Observed, Report, Runtime};
use std::collections::HashMap;
use std::ffi::{c_char, CString};
use std::sync::{Arc, Mutex};

/// A parsed (and possibly instrumented) module.
pub(crate) struct ModuleState {
    pub module: Module,
    /// The name given at parse time, used to prefix diagnostics.
    pub file: Option<String>,
}

/// A runtime and the host symbols registered with it.
pub(crate) struct RtState {
    pub rt: Arc<Runtime>,
    /// (IR name without `@`, address), in registration order; later wins.
    pub symbols: Mutex<Vec<(String, usize)>>,
}

/// Compiled code.
pub(crate) struct CodeState {
    pub code: CompiledModule,
    pub file: Option<String>,
}

/// A function looked up with its signature; keeps the code alive.
pub(crate) struct FuncState {
    pub code: CompiledModule,
    pub name: String,
    pub params: Vec<Type>,
    pub ret: Option<Type>,
}

// ---- type codes -------------------------------------------------------------

/// Type code: no value (a function without a result).
pub const GL_TYPE_VOID: u32 = 0;
/// Type code: `i8`.
pub const GL_TYPE_I8: u32 = 1;
/// Type code: `i32`.
pub const GL_TYPE_I32: u32 = 2;
/// Type code: `i64`.
pub const GL_TYPE_I64: u32 = 3;
/// Type code: `ptr`.
pub const GL_TYPE_PTR: u32 = 4;
/// Type code: `f32`.
pub const GL_TYPE_F32: u32 = 5;
/// Type code: `f64`.
pub const GL_TYPE_F64: u32 = 6;

/// The IR type of a type code (`GL_TYPE_VOID` is not a value type).
pub(crate) fn type_of_code(c: u32) -> Option<Type> {
    Some(match c {
        GL_TYPE_I8 => Type::I8,
        GL_TYPE_I32 => Type::I32,
        GL_TYPE_I64 => Type::I64,
        GL_TYPE_PTR => Type::Ptr,
        GL_TYPE_F32 => Type::F32,
        GL_TYPE_F64 => Type::F64,
        _ => return None,
    })
}

/// The type code of a value type (adstack handles never appear in signatures).
pub(crate) fn code_of_type(t: Option<Type>) -> u32 {
    match t {
        None => GL_TYPE_VOID,
        Some(Type::I8) => GL_TYPE_I8,
        Some(Type::I32) => GL_TYPE_I32,
        Some(Type::I64) => GL_TYPE_I64,
        Some(Type::Ptr) => GL_TYPE_PTR,
        Some(Type::F32) => GL_TYPE_F32,
        Some(Type::F64) => GL_TYPE_F64,
        Some(Type::AdStack(_)) => GL_TYPE_VOID,
    }
}

// ---- reports ------------------------------------------------------------------

/// One report as C sees it. Strings are NUL-terminated UTF-8 owned by
/// guardlift (see the header for how long they live).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct gl_report {
    /// `GL_REPORT_*` (dict_slot_tag = 0, adstack_overflow = 1, adstack_underflow = 2, slot_clobber = 3).
    pub kind: u32,
    /// Runtime-global site id.
    pub site: u32,
    /// `"dict_slot_tag"`, ...
    pub kind_name: *const c_char,
    /// The guarded instruction's IR function, without `@`.
    pub function: *const c_char,
    /// Source position of the guarded instruction in the IR text.
    pub line: u32,
    /// Column of the guarded instruction.
    pub col: u32,
    /// The guarded opcode (`"dict_slot.load"`, `"store_attr"`, ...).
    pub op: *const c_char,
    /// Occurrences of this (site, kind) so far.
    pub count: u64,
    /// dict_slot_tag: the object.
    pub object: u64,
    /// dict_slot_tag: the word observed; slot_clobber: the value stored.
    pub value: u64,
    /// adstack kinds: capacity and length at the failing op.
    pub capacity: u64,
    /// adstack kinds: the length.
    pub len: u64,
    /// slot_clobber: the raw store's address and width in bytes.
    pub address: u64,
    /// slot_clobber: the width in bytes.
    pub width: u32,
    /// 1 when `last_write_*` are known (dict kinds only).
    pub has_last_write: u32,
    /// The last write to the slot the runtime saw: its value, its writer,
    /// and its site (−1 when the writer was not instrumented code).
    pub last_write_value: u64,
    /// The last write's site (−1: not instrumented code).
    pub last_write_site: i64,
    /// The last write's writer, as text.
    pub last_write_by: *const c_char,
    /// The sanitizer-style human text (several lines, ending in a newline).
    pub text: *const c_char,
    /// The report as one line of JSON (no newline).
    pub json: *const c_char,
    /// attr_out_of_bounds: the attribute index (`capacity` holds the capacity).
    pub index: u64,
    /// The allocation id of the object the report is about (0: unknown).
    pub object_id: u64,
    /// Where it was allocated / freed: IR function (NULL when unknown) and line.
    pub alloc_site_function: *const c_char,
    /// The allocation site's line (0: unknown).
    pub alloc_site_line: u32,
    /// The free site's line (0: unknown).
    pub free_site_line: u32,
    /// The free site's IR function (NULL when unknown).
    pub free_site_function: *const c_char,
    /// Every object the report's occurrences were about, first seen first
    /// (up to 8; the first is `object_id`; NULL when no object is known).
    pub objects: *const gl_report_object,
    /// How many `objects` there are (more than 1: the spec's `objects` list).
    pub object_count: u64,
}

/// One object of a report's [`gl_report::objects`] and how many of its
/// occurrences were about it.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct gl_report_object {
    /// The object's allocation id.
    pub object_id: u64,
    /// Occurrences about it.
    pub count: u64,
}

/// The host stacks of a report's object as C strings (symbolized when the
/// C view of the report is made): what `gl_report_get_object_stack` gives.
pub(crate) struct ReportStacks {
    /// Allocation stack frames, innermost first.
    pub alloc: Vec<CString>,
    /// Free stack frames, innermost first.
    pub free: Vec<CString>,
}

/// The host stacks of every live C report, by its `json` pointer (unique
/// while the report lives; a copy of the `gl_report` struct finds them
/// too). Only reports about host objects with stacks have an entry.
static REPORT_STACKS: Mutex<Option<HashMap<usize, Arc<ReportStacks>>>> = Mutex::new(None);

fn report_stacks() -> std::sync::MutexGuard<'static, Option<HashMap<usize, Arc<ReportStacks>>>> {
    REPORT_STACKS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The stacks of the live C report whose `json` is `json`, if it has any.
pub(crate) fn stacks_of(json: *const c_char) -> Option<Arc<ReportStacks>> {
    report_stacks().as_ref()?.get(&(json as usize)).cloned()
}

/// A report's entry in [`REPORT_STACKS`], removed when it is dropped (with
/// the report's strings).
pub(crate) struct StacksEntry(usize);

impl StacksEntry {
    fn new(json: *const c_char, stacks: ReportStacks) -> Self {
        report_stacks()
            .get_or_insert_with(HashMap::new)
            .insert(json as usize, Arc::new(stacks));
        StacksEntry(json as usize)
    }
}

impl Drop for StacksEntry {
    fn drop(&mut self) {
        if let Some(m) = report_stacks().as_mut() {
            m.remove(&self.0);
        }
    }
}

/// A [`gl_report`] with the strings it points into.
pub(crate) struct OwnedReport {
    pub c: gl_report,
    /// The object's host stacks (declared before `_strings`, so dropped
    /// while `json` is still allocated: no other report has its address).
    _stacks: Option<StacksEntry>,
    _strings: Vec<CString>,
    /// What `c.objects` points into (a moved `Vec` keeps its buffer).
    _objects: Vec<gl_report_object>,
}

impl OwnedReport {
    pub fn new(r: &Report) -> Self {
        let mut strings = Vec::with_capacity(9);
        let mut keep = |s: &str| {
            let c = cstring(s);
            let p = c.as_ptr();
            strings.push(c); // moving a CString does not move its bytes
            p
        };
        let kind_name = keep(r.kind.name());
        let function = keep(&r.info.function);
        let op = keep(&r.info.op);
        let text = keep(&r.to_human());
        let json = keep(&r.to_json().to_string());
        let last_write_by = match &r.last_write {
            Some(w) => keep(&w.by),
            None => std::ptr::null(),
        };
        let obj = r.object.as_ref();
        let alloc = obj.and_then(|n| n.alloc_site.as_ref());
        let free = obj.and_then(|n| n.free_site.as_ref());
        let alloc_site_function = alloc.map_or(std::ptr::null(), |s| keep(&s.function));
        let free_site_function = free.map_or(std::ptr::null(), |s| keep(&s.function));
        let objects: Vec<gl_report_object> = r
            .objects
            .iter()
            .map(|o| gl_report_object {
                object_id: o.object_id,
                count: o.count,
            })
            .collect();
        let mut c = gl_report {
            kind: r.kind.code() as u32,
            site: r.site,
            kind_name,
            function,
            line: r.info.line,
            col: r.info.col,
            op,
            count: r.count,
            object: 0,
            value: 0,
            capacity: 0,
            len: 0,
            address: 0,
            width: 0,
            has_last_write: r.last_write.is_some() as u32,
            last_write_value: r.last_write.as_ref().map_or(0, |w| w.value),
            last_write_site: r
                .last_write
                .as_ref()
                .and_then(|w| w.site)
                .map_or(-1, |s| s as i64),
            last_write_by,
            text,
            json,
            index: 0,
            object_id: obj.map_or(0, |n| n.id),
            alloc_site_function,
            alloc_site_line: alloc.map_or(0, |s| s.line),
            free_site_line: free.map_or(0, |s| s.line),
            free_site_function,
            objects: if objects.is_empty() {
                std::ptr::null()
            } else {
                objects.as_ptr()
            },
            object_count: objects.len() as u64,
        };
        match r.observed {
            Observed::Dict { object, value } => (c.object, c.value) = (object, value),
            Observed::Adstack { capacity, len } => (c.capacity, c.len) = (capacity, len),
            Observed::Clobber {
                address,
                width,
                value,
            } => (c.address, c.width, c.value) = (address, width, value),
            Observed::Overflow {
                address,
                width,
                value,
            } => (c.address, c.width, c.value) = (address, width, value.unwrap_or(0)),
            // foreign_write: the object, the word written and the store's width.
            Observed::Write {
                object, new, width, ..
            } => (c.object, c.value, c.width) = (object, new, width),
            Observed::Lifetime {
                object,
                address,
                width,
            } => {
                c.object = object;
                if width > 0 {
                    (c.address, c.width) = (address, width);
                }
            }
            Observed::Bounds {
                object,
                index,
                capacity,
            } => (c.object, c.index, c.capacity) = (object, index, capacity),
        }
        let stacks = obj.map(|n| &n.stacks).filter(|st| !st.is_empty());
        let stacks = stacks.map(|st| {
            let frames = |s: &Option<Arc<guardlift_runtime::HostStack>>| -> Vec<CString> {
                s.as_ref()
                    .map(|s| s.frames().iter().map(|f| cstring(f)).collect())
                    .unwrap_or_default()
            };
            let free = if obj.is_some_and(|n| n.freed) {
                frames(&st.free)
            } else {
                Vec::new()
            };
            StacksEntry::new(
                c.json,
                ReportStacks {
                    alloc: frames(&st.alloc),
                    free,
                },
            )
        });
        OwnedReport {
            c,
            _stacks: stacks,
            _strings: strings,
            _objects: objects,
        }
    }
}

/// Reports taken from a runtime: a contiguous array for C plus the strings
/// its entries point into.
#[derive(Default)]
pub(crate) struct ReportList {
    pub items: Vec<gl_report>,
    // Entries before strings: each is removed while its `json` is allocated.
    _stacks: Vec<Option<StacksEntry>>,
    _strings: Vec<Vec<CString>>,
    _objects: Vec<Vec<gl_report_object>>,
}

impl ReportList {
    pub fn new(reports: &[Report]) -> Self {
        let mut items = Vec::with_capacity(reports.len());
        let mut strings = Vec::with_capacity(reports.len());
        let mut objects = Vec::with_capacity(reports.len());
        let mut stacks = Vec::with_capacity(reports.len());
        for r in reports {
            let o = OwnedReport::new(r);
            items.push(o.c);
            strings.push(o._strings);
            objects.push(o._objects);
            stacks.push(o._stacks);
        }
        ReportList {
            items,
            _stacks: stacks,
            _strings: strings,
            _objects: objects,
        }
    }
}

// SAFETY: the raw pointers in `items` point into the CStrings the list owns,
// which are never mutated; sharing them between threads is sharing `&str`s.
unsafe impl Send for ReportList {}
// SAFETY: as for `Send`: the list is immutable once built.
unsafe impl Sync for ReportList {}
