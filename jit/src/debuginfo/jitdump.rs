//! `jit-PID.dump`: the jitdump file `perf inject --jit` turns into one ELF
//! per function with symbols and `.glir` line tables (the format of Linux's
//! `tools/perf/Documentation/jitdump-specification.txt`, version 1).
//!
//! The file goes to `$JITDUMPDIR` or the current directory. It starts with
//! the file header; each compiled function adds a `JIT_CODE_DEBUG_INFO`
//! record (every mapped PC → `.glir` file and line) and then its
//! `JIT_CODE_LOAD` record (name, address, a copy of the code bytes), both
//! timestamped with `CLOCK_MONOTONIC`, the clock `perf record -k mono`
//! uses. perf finds the file through the `mmap` of its first page with
//! `PROT_EXEC` that this process makes when opening it (kept until exit):
//! the mmap event it records names the file.

use super::CodeUnit;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// `JiTD`, as a native-endian u32.
const MAGIC: u32 = 0x4A69_5444;
const VERSION: u32 = 1;
const HEADER_SIZE: u32 = 40;
const JIT_CODE_LOAD: u32 = 0;
const JIT_CODE_DEBUG_INFO: u32 = 2;

/// ELF `e_machine` of the host.
const ELF_MACH: u32 = if cfg!(target_arch = "x86_64") {
    62 // EM_X86_64
} else if cfg!(target_arch = "aarch64") {
    183 // EM_AARCH64
} else {
    0
};

struct Dump {
    pid: u32,
    file: File,
    path: PathBuf,
    /// Incremented per `JIT_CODE_LOAD`.
    code_index: u64,
}

static DUMP: Mutex<Option<Dump>> = Mutex::new(None);

/// Where this process's dump goes: `$JITDUMPDIR/jit-PID.dump`, or
/// `./jit-PID.dump`.
pub fn path(pid: u32) -> PathBuf {
    let dir = std::env::var_os("JITDUMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    dir.join(format!("jit-{pid}.dump"))
}

/// The path of the dump this process writes, once it has one.
pub fn current_path() -> Option<PathBuf> {
    let g = DUMP.lock().unwrap_or_else(|e| e.into_inner());
    g.as_ref().map(|d| d.path.clone())
}

/// `CLOCK_MONOTONIC` in nanoseconds.
fn timestamp() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-parameter.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

fn tid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// The file header.
fn header(pid: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_SIZE as usize);
    for w in [MAGIC, VERSION, HEADER_SIZE, ELF_MACH, 0, pid] {
        h.extend_from_slice(&w.to_ne_bytes());
    }
    h.extend_from_slice(&timestamp().to_ne_bytes());
    h.extend_from_slice(&0u64.to_ne_bytes()); // flags
    h
}

impl Dump {
    /// Creates the dump, writes its header and maps its first page with
    /// `PROT_EXEC` so that perf's mmap event names it.
    fn open(pid: u32) -> std::io::Result<Dump> {
        let path = path(pid);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        file.write_all(&header(pid))?;
        file.flush()?;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        use std::os::fd::AsRawFd;
        // SAFETY: maps a fresh region (no address given) of a file we hold
        // open; nothing reads or writes through it. It stays mapped until
        // the process exits: perf looks for it there.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page,
                libc::PROT_READ | libc::PROT_EXEC,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            return Err(std::io::Error::new(
                e.kind(),
                format!(
                    "{}: mmap with PROT_EXEC (perf needs it): {e}",
                    path.display()
                ),
            ));
        }
        Ok(Dump {
            pid,
            file,
            path,
            code_index: 0,
        })
    }
}

fn record_header(out: &mut Vec<u8>, id: u32, size: usize) {
    out.extend_from_slice(&id.to_ne_bytes());
    out.extend_from_slice(&(size as u32).to_ne_bytes());
    out.extend_from_slice(&timestamp().to_ne_bytes());
}

/// The `JIT_CODE_DEBUG_INFO` record of `u`: a line entry per mapped range
/// (line 0 where the range has no IR line), `None` without any.
fn debug_info(u: &CodeUnit<'_>, file: &str) -> Option<Vec<u8>> {
    let entries: Vec<(u64, u32)> = u
        .locs
        .iter()
        .filter(|l| l.line != 0)
        .map(|l| ((u.start + l.start as usize) as u64, l.line))
        .collect();
    if entries.is_empty() {
        return None;
    }
    let name_len = file.len() + 1;
    let size = 16 + 16 + entries.len() * (16 + name_len);
    let mut r = Vec::with_capacity(size);
    record_header(&mut r, JIT_CODE_DEBUG_INFO, size);
    r.extend_from_slice(&(u.start as u64).to_ne_bytes());
    r.extend_from_slice(&(entries.len() as u64).to_ne_bytes());
    for (addr, line) in entries {
        r.extend_from_slice(&addr.to_ne_bytes());
        r.extend_from_slice(&line.to_ne_bytes());
        r.extend_from_slice(&0u32.to_ne_bytes()); // discriminator
        r.extend_from_slice(file.as_bytes());
        r.push(0);
    }
    Some(r)
}

/// The `JIT_CODE_LOAD` record of `u` with `code`, its bytes.
fn code_load(u: &CodeUnit<'_>, code: &[u8], pid: u32, index: u64) -> Vec<u8> {
    let name = u.profiler_name().replace('\0', " ");
    let size = 16 + 40 + name.len() + 1 + code.len();
    let mut r = Vec::with_capacity(size);
    record_header(&mut r, JIT_CODE_LOAD, size);
    r.extend_from_slice(&pid.to_ne_bytes());
    r.extend_from_slice(&tid().to_ne_bytes());
    r.extend_from_slice(&(u.start as u64).to_ne_bytes()); // vma
    r.extend_from_slice(&(u.start as u64).to_ne_bytes()); // code_addr
    r.extend_from_slice(&(code.len() as u64).to_ne_bytes());
    r.extend_from_slice(&index.to_ne_bytes());
    r.extend_from_slice(name.as_bytes());
    r.push(0);
    r.extend_from_slice(code);
    r
}

/// Appends a debug-info and a code-load record per unit to this process's
/// dump (created the first time).
///
/// # Safety
/// Every unit's range must be finalized code of a live module.
pub unsafe fn append(units: &[CodeUnit<'_>], source: &Path) -> std::io::Result<()> {
    let (dir, name) = super::split_source(source);
    let file = if dir.is_empty() {
        name
    } else {
        format!("{dir}/{name}")
    };
    let pid = std::process::id();
    let mut g = DUMP.lock().unwrap_or_else(|e| e.into_inner());
    if !matches!(g.as_ref(), Some(d) if d.pid == pid) {
        *g = Some(Dump::open(pid)?);
    }
    let Some(d) = g.as_mut() else {
        return Ok(());
    };
    let mut out = Vec::new();
    for u in units {
        if let Some(r) = debug_info(u, &file) {
            out.extend_from_slice(&r);
        }
        // SAFETY: per this function's contract.
        let code = unsafe { u.code() };
        out.extend_from_slice(&code_load(u, code, pid, d.code_index));
        d.code_index += 1;
    }
    d.file.write_all(&out)?;
    d.file.flush()
}
