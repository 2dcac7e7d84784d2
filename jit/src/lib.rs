//! Cranelift backend (being written).
