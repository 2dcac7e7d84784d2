//! The guardlift C API: `libguardlift.a` / `libguardlift.so` with the
//! hand-written header `capi/include/guardlift.h`.
//!
//! An interpreter links this library to use guardlift as its JIT backend:
//! it hands over IR text (`gl_module_parse`), optionally instruments it
//! (`gl_module_instrument`), compiles it against a runtime that knows the
//! interpreter's host functions (`gl_runtime_add_symbol`, `gl_compile`),
//! looks functions up with the signature it expects (`gl_code_get_func`)
//! and calls them (`gl_func_call`). Reports reach the host through a
//! callback (`gl_runtime_set_report_callback`) or are collected after a
//! run (`gl_runtime_take_reports`). See `docs/EMBEDDING.md`.
//!
//! Rules every entry point follows:
//! - it returns a status (`GL_OK` = 0, `GL_ERR_*`) and leaves a message for
//!   `gl_last_error()` (thread-local, "" after a success);
//! - it never unwinds into C: each body runs under `catch_unwind`, and a
//!   panic becomes `GL_ERR_PANIC`;
//! - pointer arguments are NULL-checked; handles are looked up in a table
//!   with generation counters, so a freed, double-freed, foreign or
//!   wrong-type handle is `GL_ERR_HANDLE`, never a dereference.
//!
//! The Rust functions are also callable from Rust (the crate is an rlib
//! too, named `guardlift`), which is how the API's own tests drive it.

#![allow(clippy::missing_safety_doc)] // every function's contract is in guardlift.h

mod api;
mod error;
mod handles;
mod state;

pub use api::*;
pub use error::{
    GL_ERR_ARGUMENT, GL_ERR_CODEGEN, GL_ERR_HANDLE, GL_ERR_IO, GL_ERR_LAYOUT, GL_ERR_LINK,
    GL_ERR_NO_FUNCTION, GL_ERR_NULL, GL_ERR_PANIC, GL_ERR_PARSE, GL_ERR_SIGNATURE, GL_ERR_VERIFY,
    GL_OK,
};
pub use state::{
    gl_report, gl_report_object, GL_TYPE_F32, GL_TYPE_F64, GL_TYPE_I32, GL_TYPE_I64, GL_TYPE_I8,
    GL_TYPE_PTR, GL_TYPE_VOID,
};

/// Report kind (`gl_report::kind`, equal to the runtime's report codes):
/// `dict_slot_tag`.
pub const GL_REPORT_DICT_SLOT_TAG: u32 = 0;
/// `adstack_overflow`.
pub const GL_REPORT_ADSTACK_OVERFLOW: u32 = 1;
/// `adstack_underflow`.
pub const GL_REPORT_ADSTACK_UNDERFLOW: u32 = 2;
/// `slot_clobber`.
pub const GL_REPORT_SLOT_CLOBBER: u32 = 3;
/// `use_after_free`.
pub const GL_REPORT_USE_AFTER_FREE: u32 = 4;
/// `double_free`.
pub const GL_REPORT_DOUBLE_FREE: u32 = 5;
/// `invalid_free`.
pub const GL_REPORT_INVALID_FREE: u32 = 6;
/// `attr_out_of_bounds`.
pub const GL_REPORT_ATTR_OUT_OF_BOUNDS: u32 = 7;
/// A watched dict word written by foreign code or left malformed (`watch=`).
pub const GL_REPORT_FOREIGN_WRITE: u32 = 8;
/// `heap_overflow`: a raw load/store touching a heap redzone.
pub const GL_REPORT_HEAP_OVERFLOW: u32 = 9;
/// `gl_report.site` of a report that no guard site made (`foreign_write`).
pub const GL_NO_SITE: u32 = guardlift_runtime::report::NO_SITE;

#[cfg(test)]
mod tests {
    use super::*;
    use guardlift_runtime::ReportKind;

    #[test]
    fn report_kind_codes_match_the_runtime() {
        let table = [
            (ReportKind::DictSlotTag, GL_REPORT_DICT_SLOT_TAG),
            (ReportKind::AdstackOverflow, GL_REPORT_ADSTACK_OVERFLOW),
            (ReportKind::AdstackUnderflow, GL_REPORT_ADSTACK_UNDERFLOW),
            (ReportKind::SlotClobber, GL_REPORT_SLOT_CLOBBER),
            (ReportKind::ForeignWrite, GL_REPORT_FOREIGN_WRITE),
            (ReportKind::UseAfterFree, GL_REPORT_USE_AFTER_FREE),
            (ReportKind::DoubleFree, GL_REPORT_DOUBLE_FREE),
            (ReportKind::InvalidFree, GL_REPORT_INVALID_FREE),
            (ReportKind::AttrOutOfBounds, GL_REPORT_ATTR_OUT_OF_BOUNDS),
            (ReportKind::HeapOverflow, GL_REPORT_HEAP_OVERFLOW),
        ];
        for (kind, code) in table {
            assert_eq!(kind.code() as u32, code, "{kind:?}");
        }
    }
}
