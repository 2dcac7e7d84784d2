//! C entry points on report lists (`gl_reports_*`, `gl_report_get_*`).

use super::*;

/// The items of a report list.
///
/// # Safety
/// `out_items` and `out_count` are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn gl_reports_get(
    list: *mut gl_reports,
    out_items: *mut *const gl_report,
    out_count: *mut usize,
) -> c_int {
    const F: &str = "gl_reports_get";
    ffi(|| {
        non_null(out_items, F, "out_items")?;
        non_null(out_count, F, "out_count")?;
        // SAFETY: checked non-null.
        unsafe {
            put(out_items, std::ptr::null());
            put(out_count, 0);
        }
        let l = get_as!(Reports, list, Kind::Reports, F, "list");
        // SAFETY: checked non-null; the array lives as long as the list handle.
        unsafe {
            put(out_items, l.items.as_ptr());
            put(out_count, l.items.len());
        }
        Ok(())
    })
}

/// Object `index` of a report's `objects` (spec §6): its allocation id and
/// how many of the report's occurrences were about it.
///
/// # Safety
/// `report` is NULL or a report from a live list or callback;
/// `out_id` and `out_count` are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn gl_report_get_object(
    report: *const gl_report,
    index: usize,
    out_id: *mut u64,
    out_count: *mut u64,
) -> c_int {
    const F: &str = "gl_report_get_object";
    ffi(|| {
        non_null(report, F, "report")?;
        non_null(out_id, F, "out_id")?;
        non_null(out_count, F, "out_count")?;
        // SAFETY: checked non-null; the caller vouches that it is a live report.
        let r = unsafe { &*report };
        if index as u64 >= r.object_count || r.objects.is_null() {
            return Err(Error::new(
                GL_ERR_ARGUMENT,
                format!(
                    "{F}: index {index} out of range (the report lists {} object(s))",
                    r.object_count
                ),
            ));
        }
        // SAFETY: `objects` holds `object_count` entries owned with the report.
        let o = unsafe { *r.objects.add(index) };
        // SAFETY: checked non-null.
        unsafe {
            put(out_id, o.object_id);
            put(out_count, o.count);
        }
        Ok(())
    })
}

/// `gl_report_get_object_stack`'s `which`: the allocation stack.
pub const GL_STACK_ALLOC: u32 = 0;
/// `gl_report_get_object_stack`'s `which`: the free stack.
pub const GL_STACK_FREE: u32 = 1;

/// The host's native stack recorded when the report's object was
/// registered (`GL_STACK_ALLOC`) or reported freed (`GL_STACK_FREE`):
/// `*out_count` frames, and frame `index` (innermost first) in `*out_frame`
/// (NULL when `index >= *out_count`), as the report's text prints it. The
/// string lives as long as the report's strings.
///
/// # Safety
/// `report` is a live report guardlift gave (a callback's, or an item of a
/// list not yet freed); the out pointers are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn gl_report_get_object_stack(
    report: *const gl_report,
    which: u32,
    index: usize,
    out_frame: *mut *const c_char,
    out_count: *mut usize,
) -> c_int {
    const F: &str = "gl_report_get_object_stack";
    ffi(|| {
        // SAFETY: NULL or valid for writes by contract.
        unsafe { clear_out(out_frame, std::ptr::null(), F, "out_frame") }?;
        // SAFETY: as above.
        unsafe { clear_out(out_count, 0, F, "out_count") }?;
        non_null(report, F, "report")?;
        if which != GL_STACK_ALLOC && which != GL_STACK_FREE {
            return Err(Error::new(
                GL_ERR_ARGUMENT,
                format!("{F}: which must be GL_STACK_ALLOC (0) or GL_STACK_FREE (1), got {which}"),
            ));
        }
        // SAFETY: checked non-null; the caller vouches that it is a live report.
        let r = unsafe { &*report };
        let Some(st) = crate::state::stacks_of(r.json) else {
            return Ok(());
        };
        let frames = if which == GL_STACK_ALLOC {
            &st.alloc
        } else {
            &st.free
        };
        // The strings stay owned by the report's entry (`st` is a second
        // reference to them), which lives as long as the report.
        let frame = frames.get(index).map_or(std::ptr::null(), |f| f.as_ptr());
        // SAFETY: checked non-null.
        unsafe {
            put(out_count, frames.len());
            put(out_frame, frame);
        }
        Ok(())
    })
}

/// Frees a report list and every string its reports point to (NULL: no-op).
#[no_mangle]
pub extern "C" fn gl_reports_free(list: *mut gl_reports) -> c_int {
    free_handle(h(list), Kind::Reports, "gl_reports_free")
}
