//! Fuzzing library (being written).
