//! How floats are written: results, `print_f64` output and IR literals
//! agree on one text form.

/// Formats a float the way results and `print_f64` show it:
/// shortest round-trip digits, `nan`, `inf`, `-inf`.
pub fn format_f64(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{v:?}")
    }
}

/// As [`format_f64`] for an f32 (shortest digits of the f32).
pub fn format_f32(v: f32) -> String {
    if v.is_nan() || v.is_infinite() {
        format_f64(v as f64)
    } else {
        format!("{v:?}")
    }
}
