//! `/tmp/perf-PID.map`: the perf map that `perf report`, `perf top` and
//! `perf script` read to name code that no file backs. One line per
//! compiled function, `START SIZE NAME` (hex, no `0x`), appended and
//! flushed when its module's code is published. As in V8 and wasmtime,
//! entries are never removed: perf takes the last entry that covers an
//! address, so a later module that reuses freed memory supersedes the
//! earlier names (and cranelift-jit's own `.LfnN` entries, written only
//! under `PERF_BUILDID_DIR`, are superseded by ours, written after them).

use super::CodeUnit;
use std::fs::File;
use std::io::Write;
use std::sync::Mutex;

/// The open map of this process (the pid it was opened for: a forked child
/// opens its own).
static MAP: Mutex<Option<(u32, File)>> = Mutex::new(None);

/// The map's path for process `pid`.
pub fn path(pid: u32) -> String {
    format!("/tmp/perf-{pid}.map")
}

/// The map's lines for `units`.
pub fn lines(units: &[CodeUnit<'_>]) -> String {
    let mut s = String::new();
    for u in units {
        // A name is one line: IR names have no newline, but stay safe.
        let name = u.profiler_name().replace(['\n', '\r'], " ");
        s.push_str(&format!("{:x} {:x} {name}\n", u.start, u.len));
    }
    s
}

/// Appends `units`' lines to this process's map (opening it, appending,
/// the first time) and flushes them.
pub fn append(units: &[CodeUnit<'_>]) -> std::io::Result<()> {
    let text = lines(units);
    let pid = std::process::id();
    let mut g = MAP.lock().unwrap_or_else(|e| e.into_inner());
    if !matches!(g.as_ref(), Some((p, _)) if *p == pid) {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path(pid))?;
        *g = Some((pid, f));
    }
    let Some((_, f)) = g.as_mut() else {
        return Ok(());
    };
    // One write of whole lines: a reader never sees half a module.
    f.write_all(text.as_bytes())?;
    f.flush()
}
