//! Helpers shared by the JIT tests.
#![allow(dead_code)]

use guardlift_jit::{CompileOptions, CompiledModule, Jit, JitError};
use guardlift_runtime::{Mode, Report, ReportKind, Runtime, RuntimeConfig};
use std::sync::Arc;

/// Parses and verifies IR text, panicking with the diagnostics.
pub fn parse(text: &str) -> guardlift_ir::Module {
    match guardlift_ir::parse_and_verify(text) {
        Ok(m) => m,
        Err(e) => panic!("test module does not verify:\n{e}\n---\n{text}"),
    }
}

/// A runtime in recover mode that never ends the process and captures prints.
pub fn recover_rt() -> Arc<Runtime> {
    Runtime::new(RuntimeConfig {
        mode: Mode::Recover,
        abort_process: false,
        capture_output: true,
        ..Default::default()
    })
}

/// A runtime in abort mode that does not end the process (checks return Abort).
pub fn quiet_abort_rt() -> Arc<Runtime> {
    Runtime::new(RuntimeConfig {
        mode: Mode::Abort,
        abort_process: false,
        capture_output: true,
        ..Default::default()
    })
}

pub fn try_compile(text: &str, rt: &Arc<Runtime>) -> Result<CompiledModule, JitError> {
    Jit::compile(&parse(text), rt.clone(), &CompileOptions::default())
}

pub fn compile(text: &str, rt: &Arc<Runtime>) -> CompiledModule {
    try_compile(text, rt).unwrap_or_else(|e| panic!("compile failed: {e}\n---\n{text}"))
}

/// Compiles with a fresh recover-mode runtime.
pub fn jit(text: &str) -> CompiledModule {
    compile(text, &recover_rt())
}

/// Calls a memory-safe function through the dynamic trampoline and unwraps.
pub fn call(m: &CompiledModule, name: &str, args: &[u64]) -> Option<u64> {
    m.safe_call_dynamic(name, args)
        .unwrap_or_else(|e| panic!("call @{name}: {e}"))
}

/// [`call`] for any function.
///
/// # Safety
/// As [`CompiledModule::call_dynamic`]: every memory access of the call is
/// to memory valid for it.
pub unsafe fn call_raw(m: &CompiledModule, name: &str, args: &[u64]) -> Option<u64> {
    // SAFETY: forwarded to the caller.
    unsafe { m.call_dynamic(name, args) }.unwrap_or_else(|e| panic!("call @{name}: {e}"))
}

pub fn kinds(reports: &[Report]) -> Vec<(ReportKind, u64)> {
    reports.iter().map(|r| (r.kind, r.count)).collect()
}
