//! What the JIT tells profilers and debuggers about the code it compiles
//! (issue 35), each part behind its own switch of
//! [`guardlift_runtime::JitDebug`] (`perfmap`, `jitdump`, `gdb` in
//! `GUARDLIFT_OPTIONS`, [`crate::CompileOptions::debug`], or
//! `Runtime::set_jit_debug`):
//!
//! - [`perfmap`] — `/tmp/perf-PID.map`, one `START SIZE NAME` line per
//!   compiled function, for `perf report` / `perf top`;
//! - [`jitdump`] — `jit-PID.dump` (`$JITDUMPDIR` or the current directory)
//!   with a copy of the code and its `.glir` lines, for `perf inject --jit`;
//! - [`gdb`] — an in-memory ELF per module (symbols, DWARF lines and
//!   subprograms, the unwind info as `.debug_frame`) registered through the
//!   GDB JIT interface, unregistered before the module's code is freed.
//!
//! The JIT calls [`publish`] once per compiled module, after the code is
//! finalized and registered in the runtime's code registry, with the same
//! ranges and PC → IR-site maps the registry got ([`CodeUnit`]). With every
//! switch off nothing here runs (the engine tests [`JitDebug::any`]) and no
//! file is written.

pub mod gdb;
pub mod jitdump;
pub mod perfmap;

use crate::error::JitError;
use cranelift_codegen::isa::unwind::UnwindInfo;
use cranelift_codegen::isa::TargetIsa;
use guardlift_runtime::codemap::PcLoc;
use guardlift_runtime::JitDebug;
use std::path::Path;

/// One compiled function as profilers and debuggers see it.
#[derive(Clone, Debug)]
pub struct CodeUnit<'a> {
    /// The name tools show: `@f` for IR function `@f`, `@f [clean]` for
    /// its clean variant (`lower::version`), `[stub …]` and
    /// `[trampoline @f]` for the JIT's own glue code.
    pub name: String,
    /// Absolute address of the first instruction.
    pub start: usize,
    /// Code size in bytes.
    pub len: usize,
    /// PC → IR line map (offsets from `start`, sorted; empty for glue code).
    pub locs: &'a [PcLoc],
    /// The line of the IR function's header (0: unknown).
    pub line: u32,
    /// Cranelift's unwind info for the function (only collected with `gdb`).
    pub unwind: Option<&'a UnwindInfo>,
}

impl CodeUnit<'_> {
    /// The name of `variant` of IR function `function`'s code.
    pub(crate) fn ir_name(function: &str, variant: crate::lower::Variant) -> String {
        match variant {
            crate::lower::Variant::Checked => format!("@{function}"),
            crate::lower::Variant::Clean => format!("@{function} [clean]"),
            crate::lower::Variant::Entry => format!("@{function} [entry]"),
            crate::lower::Variant::Own => format!("@{function} [own]"),
            crate::lower::Variant::Piece(k) => format!("@{function} [piece {k}]"),
        }
    }

    /// The name in the perf map and jitdump: `guardlift:` and the display name.
    pub fn profiler_name(&self) -> String {
        format!("guardlift:{}", self.name)
    }

    /// The bytes of the function's code.
    ///
    /// # Safety
    /// `[start, start + len)` must be finalized code of a live module.
    unsafe fn code(&self) -> &[u8] {
        // SAFETY: per the contract, the range is mapped, readable code that
        // is not written while the module lives.
        unsafe { std::slice::from_raw_parts(self.start as *const u8, self.len) }
    }
}

/// What a module published that must be withdrawn before its code is freed
/// (the GDB registration; perf map and jitdump entries are never removed,
/// as V8's and wasmtime's are not).
#[derive(Default)]
pub struct Published {
    gdb: Option<gdb::Registration>,
}

impl Published {
    /// Withdraws what can be withdrawn (the GDB JIT entry). Also on drop.
    pub fn withdraw(&mut self) {
        drop(self.gdb.take());
    }
}

/// Publishes a freshly finalized module's code for what `d` asks.
///
/// # Safety
/// Every unit's range must be finalized code of a module that outlives the
/// returned [`Published`] (its owner drops it before freeing the code).
pub unsafe fn publish(
    d: JitDebug,
    units: &[CodeUnit<'_>],
    source: &Path,
    isa: &dyn TargetIsa,
) -> Result<Published, JitError> {
    let io = |what: &str, source: std::io::Error| JitError::Runtime {
        context: what.to_string(),
        source,
    };
    if d.perfmap {
        perfmap::append(units).map_err(|e| io("perfmap: writing /tmp/perf-PID.map", e))?;
    }
    if d.jitdump {
        // SAFETY: per this function's contract.
        unsafe { jitdump::append(units, source) }.map_err(|e| io("jitdump: writing", e))?;
    }
    let mut p = Published::default();
    if d.gdb {
        // SAFETY: per this function's contract.
        p.gdb = Some(unsafe { gdb::register(units, source, isa) }?);
    }
    Ok(p)
}

/// The source file's absolute path (as given when it cannot be made one),
/// split into (directory, file name) for the DWARF line table and jitdump.
pub(crate) fn split_source(source: &Path) -> (String, String) {
    let abs = std::fs::canonicalize(source)
        .or_else(|_| std::path::absolute(source))
        .unwrap_or_else(|_| source.to_path_buf());
    let dir = abs
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = abs
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| abs.to_string_lossy().into_owned());
    (dir, name)
}
