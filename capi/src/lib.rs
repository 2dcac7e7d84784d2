//! The guardlift C API (being written).
