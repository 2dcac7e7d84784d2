//! The reference interpreter: the oracle for every engine.
//!
//! It runs a verified [`Module`] against a [`Runtime`] (the same model heap,
//! report sink and layout constants the JIT uses) with exactly the semantics
//! of spec §3–§7, guards included. It never recurses on the Rust stack
//! (frames live in a vector, with a depth limit), never touches memory
//! outside a live heap block (a wild access is an [`InterpError::Fault`]
//! where native code would crash), and keeps adstacks in buffers laid out
//! by `guardlift_runtime::adstack`.
//!
//! A guarded instruction runs the checks of its site ([`guardlift_ir::Site::checks`])
//! in spec order — lifetime, dict, bounds, adstack, clobber — and the
//! first that fails reports and decides the instruction's effect.
//!
//! Modules: `frame` (frames, branches, what an instruction asks of the
//! loop), `step` (the frame loop and the pure value ops), `values` (the
//! arithmetic on raw bits), `memory` (raw memory and the object model),
//! `adstack` (adstack buffers and ops, elision verification), `hoist`
//! (verification of the loop-versioning claims), `rawgroup`
//! (verification of the raw-access groups' claim), `attrgroup` (of the
//! attribute groups' claim), `checks`
//! (guards, reports, backtraces), `calls` (IR, extern and built-in calls).

mod adbuf;
mod adstack;
mod attrgroup;
mod calls;
mod checks;
mod entry;
mod frame;
mod hoist;
mod memory;
mod rawgroup;
mod step;
mod values;

use guardlift_ir::analysis::adstack_capacities;
use guardlift_ir::{Diagnostic, Module, SrcLoc};
use guardlift_runtime::abi::Builtin;
use guardlift_runtime::Runtime;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub use calls::{host_call_site, HostCallSite};

use adstack::elision_claims;
use guardlift_runtime::internals::*;
use hoist::{claims, AttrClaims, LoopClaims};
use values::canon;

/// A host function the embedder provides for a non-built-in extern: raw
/// bits in (see `guardlift_ir::literal`), raw bits out (ignored for void).
pub type HostFn = Arc<dyn Fn(&[u64]) -> u64 + Send + Sync>;

/// Default limit on nested calls.
pub const DEFAULT_MAX_DEPTH: usize = 100_000;

/// Why a run did not produce a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterpError {
    /// Linking failed: an undefined symbol, a bad built-in signature, an
    /// adstack without one static capacity, too many sites.
    #[error("{0}")]
    Link(Diagnostic),
    /// The entry function does not exist.
    #[error("no function @{0}")]
    NoSuchFunction(String),
    /// The entry function was given the wrong number of arguments.
    #[error("@{func} takes {want} argument(s), got {got}")]
    ArgCount {
        /// The entry function.
        func: String,
        /// Its parameter count.
        want: usize,
        /// The arguments given.
        got: usize,
    },
    /// What would have been a crash in native code.
    #[error("{loc}: fatal: {msg}")]
    Fault {
        /// The faulting instruction.
        loc: SrcLoc,
        /// What went wrong.
        msg: String,
        /// The address of a wild access (what native code's SIGSEGV
        /// names); `None` for other faults.
        address: Option<u64>,
        /// The IR call chain, innermost first: the faulting instruction,
        /// then each call outside it (at most
        /// [`guardlift_runtime::backtrace::MAX_FRAMES`] frames).
        backtrace: Vec<String>,
    },
    /// A host function of the model heap called here found what native
    /// code would have crashed on (the runtime recorded the fault:
    /// [`Runtime::take_host_call_fault`]); only when the runtime ends the
    /// process on one ([`Runtime::host_fault_ends_run`]), as the JIT does.
    #[error("{loc}: fatal: host fault")]
    HostFault {
        /// The instruction that called the host function.
        loc: SrcLoc,
        /// The IR call chain, innermost first (as for [`InterpError::Fault`]).
        backtrace: Vec<String>,
    },
    /// A call deeper than the depth limit: what native code reports as
    /// `stack_overflow` (spec §6.2). `loc` is the call's.
    #[error("{loc}: fatal: stack overflow: call depth limit {limit} exceeded")]
    StackOverflow {
        /// The call that went too deep.
        loc: SrcLoc,
        /// The depth limit.
        limit: usize,
        /// The IR call chain, innermost first: the call, then the calls
        /// outside it (at most [`guardlift_runtime::backtrace::MAX_FRAMES`]).
        backtrace: Vec<String>,
    },
    /// A division by zero or `sdiv` of the minimum by −1 (spec §3.1):
    /// fatal on every engine, reported as `kind` at the op.
    #[error("{loc}: fatal: {}", guardlift_runtime::fault::arith_message(*kind))]
    Arith {
        /// The division.
        loc: SrcLoc,
        /// `div_by_zero` or `int_overflow`.
        kind: guardlift_runtime::ReportKind,
        /// The IR call chain, innermost first: the division, then the calls
        /// outside it (at most [`guardlift_runtime::backtrace::MAX_FRAMES`]).
        backtrace: Vec<String>,
    },
    /// A check failed in abort or trap mode (the runtime did not end the process).
    #[error("aborted after a violation")]
    Aborted,
    /// An analysis' claim failed while running (a bug of guardlift).
    #[error("{loc}: internal error: {msg}")]
    Internal {
        /// Where the claim failed.
        loc: SrcLoc,
        /// Which claim.
        msg: String,
    },
}

/// What an extern resolves to.
enum ExternImpl {
    Builtin(&'static Builtin),
    Host(HostFn),
}

/// A module linked against a runtime, ready to run.
pub struct Interpreter<'m> {
    m: &'m Module,
    rt: Arc<Runtime>,
    site_base: u32,
    /// The module's sites leave the runtime with the interpreter.
    _sites: guardlift_runtime::SiteRegistration,
    externs: Vec<ExternImpl>,
    max_depth: usize,
    /// Per function, the underflow checks `guardlift_ir::elide` claims
    /// cannot fail (the JIT emits none); checked while running in debug
    /// builds and with [`Interpreter::set_verify_elision`].
    elision: Option<Vec<HashSet<(u32, u32)>>>,
    /// A failed claim is an [`InterpError::Internal`] (else a debug assertion).
    verify_elision: bool,
    /// What the loop analysis assumes of the host (its own slow paths).
    host: guardlift_ir::hoist::HostModel,
    /// The blocks of the loops `guardlift_ir::hoist` claims free nothing
    /// (checked like `elision`).
    loops: Option<LoopClaims>,
    /// Per function, the clean loops with fixed attributes
    /// (`CleanLoop::attrs`): at an entry where the runtime's `attr_fixed`
    /// holds for each, no bounds test of those objects may fail until
    /// control leaves (checked like `elision`).
    attr_loops: Option<AttrClaims>,
    /// Per function, the raw-access groups whose range the JIT tests once
    /// (`crate::rawgroup`; checked like `elision`).
    raw_groups: Option<rawgroup::GroupClaims>,
    /// Per function, the attribute groups whose later members the JIT runs
    /// on the first one's verdict (`crate::attrgroup`; checked like
    /// `elision`).
    attr_groups: Option<attrgroup::AttrGroupClaims>,
    /// Per function, its entry variant plan (`crate::entry`; checked like
    /// `elision`).
    entries: Option<Vec<Option<guardlift_ir::analysis::entry::EntryPlan>>>,
    /// With `entries`: the own variants' plans and the values' demands
    /// (`crate::entry`).
    owns: Option<guardlift_ir::analysis::ownentry::OwnPlans>,
    /// Did the lifetime check of the object op running pass (set by
    /// `live`, read by `crate::entry`)?
    live_passed: std::cell::Cell<bool>,
}

impl<'m> Interpreter<'m> {
    /// Links `m` against `rt`: built-ins resolve to the runtime, other externs
    /// to `hosts`; registers the module's sites with the runtime.
    pub fn new(
        m: &'m Module,
        rt: Arc<Runtime>,
        hosts: &HashMap<String, HostFn>,
    ) -> Result<Self, InterpError> {
        let mut externs = Vec::with_capacity(m.externs.len());
        for e in &m.externs {
            match e.resolve_builtin().map_err(InterpError::Link)? {
                Some(b) => externs.push(ExternImpl::Builtin(b)),
                None => match hosts.get(&e.name) {
                    Some(h) => externs.push(ExternImpl::Host(h.clone())),
                    None => {
                        return Err(InterpError::Link(Diagnostic::new(
                            e.loc,
                            format!("undefined symbol @{}", e.name),
                        )))
                    }
                },
            }
        }
        // Same rule as the JIT: every handle has one statically known capacity.
        for f in &m.functions {
            adstack_capacities(f).map_err(InterpError::Link)?;
        }
        let site_base = m
            .register_sites(|s| rt.register_sites(s))
            .map_err(InterpError::Link)?;
        // Read after the sites are registered: a binding made later is refused.
        let host = guardlift_ir::hoist::HostModel {
            host_slow_paths: rt.attr_slow_paths_bound(),
        };
        Ok(Interpreter {
            m,
            _sites: guardlift_runtime::SiteRegistration::new(rt.clone(), site_base),
            rt,
            site_base,
            externs,
            max_depth: DEFAULT_MAX_DEPTH,
            elision: cfg!(debug_assertions).then(|| elision_claims(m)),
            verify_elision: false,
            host,
            loops: None,
            attr_loops: None,
            raw_groups: None,
            attr_groups: None,
            entries: None,
            owns: None,
            live_passed: std::cell::Cell::new(false),
        }
        .with_debug_claims())
    }

    /// With `on`, an underflow check the elision analysis claims cannot
    /// fail that fails while running ends the run with
    /// [`InterpError::Internal`] (the analysis is unsound), in any build;
    /// so does a free inside a loop `guardlift_ir::hoist` claims frees
    /// nothing.
    pub fn set_verify_elision(&mut self, on: bool) {
        self.verify_elision = on;
        if on && self.elision.is_none() {
            self.elision = Some(elision_claims(self.m));
        }
        if on && (self.loops.is_none() || self.attr_loops.is_none()) {
            let (loops, attrs) = claims(self.m, self.host);
            self.loops.get_or_insert(loops);
            self.attr_loops.get_or_insert(attrs);
        }
        if on && self.raw_groups.is_none() {
            self.raw_groups = Some(rawgroup::group_claims(self.m, self.host));
        }
        if on && self.attr_groups.is_none() {
            self.attr_groups = Some(attrgroup::attr_group_claims(self.m, self.host));
            self.entries = Some(guardlift_ir::analysis::entry::entry_plans(
                self.m, self.host,
            ));
        }
        if on && self.entries.is_none() {
            self.entries = Some(guardlift_ir::analysis::entry::entry_plans(
                self.m, self.host,
            ));
        }
        if self.entries.is_some() && self.owns.is_none() {
            let owns = guardlift_ir::analysis::ownentry::OwnPlans::of(self.m, self.host);
            self.owns = Some(owns);
        }
    }

    /// A claim of an analysis (elided check, clean loop, group) that the
    /// run refuted at `loc`: an internal error under
    /// [`Interpreter::set_verify_elision`], a debug assertion otherwise.
    pub(crate) fn claim_refuted(&self, loc: SrcLoc, msg: String) -> Result<(), InterpError> {
        if self.verify_elision {
            return Err(InterpError::Internal { loc, msg });
        }
        debug_assert!(false, "{loc}: {msg}");
        Ok(())
    }

    /// Debug builds verify the loop claims from the start.
    fn with_debug_claims(mut self) -> Self {
        if cfg!(debug_assertions) {
            let (loops, attrs) = claims(self.m, self.host);
            self.loops = Some(loops);
            self.attr_loops = Some(attrs);
            self.raw_groups = Some(rawgroup::group_claims(self.m, self.host));
            self.attr_groups = Some(attrgroup::attr_group_claims(self.m, self.host));
        }
        self
    }

    /// Replaces the fixed-attribute claims checked while running (per
    /// function, its clean loops with `attrs`): for tests that the
    /// verification catches a false claim.
    #[doc(hidden)]
    pub fn set_attr_claims(&mut self, claims: Vec<Vec<guardlift_ir::hoist::CleanLoop>>) {
        self.attr_loops = Some(claims);
    }

    /// Replaces the loop claims checked while running (per function, per
    /// block: in a loop that frees nothing): for tests that the
    /// verification catches a false claim.
    #[doc(hidden)]
    pub fn set_loop_claims(&mut self, claims: Vec<Vec<bool>>) {
        let whole = |c: Vec<bool>| {
            c.into_iter()
                .map(|b| if b { u32::MAX } else { 0 })
                .collect()
        };
        self.loops = Some(claims.into_iter().map(whole).collect());
    }

    /// Replaces the claims checked while running (per function, the
    /// `(block, inst)` of underflow checks that cannot fail): for tests
    /// that the verification catches a false claim.
    #[doc(hidden)]
    pub fn set_elision_claims(&mut self, claims: Vec<HashSet<(u32, u32)>>) {
        self.elision = Some(claims);
    }

    /// Changes the nested-call limit.
    pub fn set_max_depth(&mut self, depth: usize) {
        self.max_depth = depth;
    }

    /// The runtime the module is linked against.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.rt
    }

    /// Runs `@name` with raw-bit arguments; returns the raw-bit result.
    pub fn call(&self, name: &str, args: &[u64]) -> Result<Option<u64>, InterpError> {
        let fid = self
            .m
            .func_by_name(name)
            .ok_or_else(|| InterpError::NoSuchFunction(name.into()))?;
        let f = self.m.func(fid);
        if f.params.len() != args.len() {
            return Err(InterpError::ArgCount {
                func: name.into(),
                want: f.params.len(),
                got: args.len(),
            });
        }
        let args: Vec<u64> = f
            .params
            .iter()
            .zip(args)
            .map(|(p, a)| canon(f.ty(*p), *a))
            .collect();
        let mut stack = vec![self.new_frame(fid, &args, None)];
        loop {
            match self.step_frame(&mut stack) {
                Ok(Some(ret)) => return Ok(ret),
                Ok(None) => continue,
                Err(e) => return Err(self.with_fault_backtrace(e, &stack)),
            }
        }
    }
}

/// Convenience: link and run `entry` in one call.
pub fn run(
    m: &Module,
    rt: Arc<Runtime>,
    entry: &str,
    args: &[u64],
) -> Result<Option<u64>, InterpError> {
    Interpreter::new(m, rt, &HashMap::new())?.call(entry, args)
}
