//! The host's own attribute slow paths (spec §4, issue 34): what
//! `load_attr`/`store_attr` call when the managed-dict word is not
//! values-tagged, in place of the model heap's `load_attr_slow` /
//! `store_attr_slow`, so that a values miss goes straight to the VM's own
//! dict code instead of an extra branch on the word in IR.
//!
//! A runtime takes one binding ([`crate::Runtime::bind_attr_slow_paths`]),
//! before any module is compiled or interpreted against it: the loop
//! analysis decides at compile time whether an attribute op may run host
//! code (`guardlift_ir::hoist::HostModel`), so code compiled without a
//! binding would be wrong under one.

use std::sync::Arc;

/// The host's attribute slow paths. Called on the thread that runs the
/// compiled code (or the interpreter), with the object's address as the
/// IR code holds it and the attribute index of the op.
///
/// Like a host function, they may do anything the host's own code may
/// (allocate, call back into the interpreter, free objects): a loop with
/// an attribute op is then never run without its checks
/// (`guardlift_ir::hoist::HostModel`). A panic does not unwind through
/// compiled code: it aborts the process.
pub trait AttrSlowPaths: Send + Sync {
    /// `load_attr obj, index` on a word that is not values-tagged.
    fn load_attr(&self, obj: u64, index: u32) -> i64;
    /// `store_attr obj, index, value` on a word that is not values-tagged.
    fn store_attr(&self, obj: u64, index: u32, value: i64);
}

/// A binding of the host's slow paths, shared by the runtime.
pub type SlowPaths = Arc<dyn AttrSlowPaths>;

/// Why [`crate::Runtime::bind_attr_slow_paths`] refused a binding.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    /// The runtime already has a binding (one per runtime).
    #[error("the runtime's attribute slow paths are already bound")]
    AlreadyBound,
    /// Code is compiled against the runtime (or an interpreter runs on it)
    /// that assumed the model heap's slow paths.
    #[error("{0} module(s) are already compiled against this runtime: bind the slow paths first")]
    ModulesLive(usize),
}
