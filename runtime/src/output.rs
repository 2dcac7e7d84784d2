//! Where report text goes, so that no report is lost.
//!
//! Reports go to the log file of `GUARDLIFT_OPTIONS=log_path=...`, or to
//! stderr. A log that cannot be written (a full disk, `EIO`, a closed or
//! revoked descriptor) falls back to stderr: the report is written there,
//! preceded (once per log) by a note saying why. Two paths do this:
//!
//! - [`LogFile::write_or_stderr`], for ordinary code (the runtime's report
//!   printing, the CLI);
//! - [`write_fd_or_stderr`], async-signal-safe (only `write(2)`, no locks,
//!   no allocation), for the signal handlers, which know the log only as a
//!   raw descriptor.
//!
//! It also owns the process-wide **final report latch**
//! ([`claim_final_report`]): the one thread that ends the process with a
//! report (abort mode's `die`, the trap handler, the fault handler) claims
//! it; any other thread that comes to end the process at the same time
//! waits for that one to finish instead of printing the same pending
//! reports a second time.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Mutex;

/// An open log file (`log_path`), with the stderr fallback.
#[derive(Debug)]
pub struct LogFile {
    path: String,
    /// Locked around each write, so that reports from threads do not interleave.
    file: Mutex<File>,
    /// The fallback note has been printed for this log.
    noted: AtomicBool,
    /// This log created the file (it did not exist before [`LogFile::open`]):
    /// if nothing was written to it, it is removed when the log closes, so a
    /// run that reports nothing leaves no empty log behind.
    created: bool,
}

impl LogFile {
    /// Opens `path` for appending (creating it: a file created here and
    /// still empty when the log is dropped is removed again).
    pub fn open(path: &str) -> std::io::Result<LogFile> {
        let (file, created) = match std::fs::OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(path)
        {
            Ok(f) => (f, true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                (std::fs::OpenOptions::new().append(true).open(path)?, false)
            }
            Err(e) => return Err(e),
        };
        Ok(LogFile {
            path: path.to_string(),
            file: Mutex::new(file),
            noted: AtomicBool::new(false),
            created,
        })
    }

    /// The path the log was opened with.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The raw descriptor (for the signal handlers).
    #[cfg(unix)]
    pub fn raw_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_raw_fd()
    }

    /// Writes `text` to the log; if that fails, writes it to stderr after a
    /// note (the first time) naming the log and the error. Never panics.
    pub fn write_or_stderr(&self, text: &[u8]) {
        let r = {
            let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
            f.write_all(text).and_then(|_| f.flush())
        };
        if let Err(e) = r {
            let mut err = std::io::stderr().lock();
            if !self.noted.swap(true, SeqCst) {
                let _ = writeln!(
                    err,
                    "guardlift: cannot write reports to log_path {}: {e}; writing them to stderr instead",
                    self.path
                );
            }
            let _ = err.write_all(text);
            let _ = err.flush();
        }
    }
}

impl Drop for LogFile {
    /// Removes the file this log created if nothing was written to it
    /// (`log_path` is created only when something is reported).
    fn drop(&mut self) {
        if !self.created {
            return;
        }
        let f = self.file.get_mut().unwrap_or_else(|e| e.into_inner());
        if f.metadata().is_ok_and(|m| m.is_file() && m.len() == 0) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Writes `text` to `log` (or stderr when `None`), with the fallback of
/// [`LogFile::write_or_stderr`].
pub fn write_report_text(log: Option<&LogFile>, text: &[u8]) {
    match log {
        Some(f) => f.write_or_stderr(text),
        None => {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(text);
            let _ = err.flush();
        }
    }
}

/// Set once the signal-safe fallback printed its note.
static FD_NOTED: AtomicBool = AtomicBool::new(false);

/// Async-signal-safe: writes `bytes` to `fd` (stderr when `fd < 0`); if
/// that fails, writes them to stderr, after a note (once per process) with
/// the errno. Only `write(2)` is called; nothing is allocated.
#[cfg(unix)]
pub fn write_fd_or_stderr(fd: i32, bytes: &[u8]) {
    emit_fd_or_stderr(fd, &|w: &mut FdWriter| w.write_bytes(bytes));
}

/// Async-signal-safe: formats `what` straight to `fd` (stderr when
/// `fd < 0`) through a small stack buffer, so text of any length is written
/// whole; if writing fails, formats it again to stderr after the note of
/// [`write_fd_or_stderr`]. `what` must not allocate (e.g.
/// [`crate::HumanReport`]).
#[cfg(unix)]
pub fn write_display_fd_or_stderr(fd: i32, what: &dyn std::fmt::Display) {
    use std::fmt::Write as _;
    emit_fd_or_stderr(fd, &|w: &mut FdWriter| {
        let _ = write!(w, "{what}");
    });
}

#[cfg(unix)]
fn emit_fd_or_stderr(fd: i32, emit: &dyn Fn(&mut FdWriter)) {
    let fd = if fd < 0 { libc::STDERR_FILENO } else { fd };
    let mut w = FdWriter::new(fd);
    emit(&mut w);
    let r = w.finish();
    if fd == libc::STDERR_FILENO {
        return;
    }
    if let Err(errno) = r {
        if !FD_NOTED.swap(true, SeqCst) {
            let mut note = [0u8; 128];
            let n = fallback_note(errno, &mut note);
            let _ = write_all_fd(libc::STDERR_FILENO, &note[..n]);
        }
        let mut w = FdWriter::new(libc::STDERR_FILENO);
        emit(&mut w);
        let _ = w.finish();
    }
}

/// A `fmt::Write` that buffers on the stack and `write(2)`s full chunks;
/// after the first failed write it drops everything and remembers the errno.
#[cfg(unix)]
pub struct FdWriter {
    fd: i32,
    buf: [u8; 512],
    len: usize,
    err: Option<i32>,
}

#[cfg(unix)]
impl FdWriter {
    /// A writer to `fd` with an empty buffer.
    pub fn new(fd: i32) -> Self {
        FdWriter {
            fd,
            buf: [0; 512],
            len: 0,
            err: None,
        }
    }

    fn flush_buf(&mut self) {
        if self.err.is_none() {
            if let Err(e) = write_all_fd(self.fd, &self.buf[..self.len]) {
                self.err = Some(e);
            }
        }
        self.len = 0;
    }

    /// Appends raw bytes (flushing full chunks).
    pub fn write_bytes(&mut self, mut b: &[u8]) {
        while !b.is_empty() && self.err.is_none() {
            let take = b.len().min(self.buf.len() - self.len);
            self.buf[self.len..self.len + take].copy_from_slice(&b[..take]);
            self.len += take;
            b = &b[take..];
            if self.len == self.buf.len() {
                self.flush_buf();
            }
        }
    }

    /// Writes what is buffered; `Err(errno)` if any write failed.
    pub fn finish(mut self) -> Result<(), i32> {
        self.flush_buf();
        self.err.map_or(Ok(()), Err)
    }
}

#[cfg(unix)]
impl std::fmt::Write for FdWriter {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.write_bytes(s.as_bytes());
        match self.err {
            None => Ok(()),
            Some(_) => Err(std::fmt::Error),
        }
    }
}

/// The note of the signal-safe fallback, written into `buf`; returns its length.
fn fallback_note(errno: i32, buf: &mut [u8; 128]) -> usize {
    const HEAD: &[u8] = b"guardlift: cannot write reports to log_path (errno ";
    const TAIL: &[u8] = b"); writing them to stderr instead\n";
    let mut n = 0;
    let mut put = |b: &[u8], n: &mut usize| {
        buf[*n..*n + b.len()].copy_from_slice(b);
        *n += b.len();
    };
    put(HEAD, &mut n);
    let mut digits = [0u8; 12];
    let mut d = digits.len();
    let mut v = errno.unsigned_abs();
    loop {
        d -= 1;
        digits[d] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    put(&digits[d..], &mut n);
    put(TAIL, &mut n);
    n
}

/// `write(2)` until everything is written; `Err(errno)` on failure
/// (a write of 0 bytes counts as `EIO`). Async-signal-safe.
#[cfg(unix)]
pub fn write_all_fd(fd: i32, mut bytes: &[u8]) -> Result<(), i32> {
    while !bytes.is_empty() {
        // SAFETY: writes from a valid slice.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 {
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(libc::EIO);
        }
        bytes = &bytes[n as usize..];
    }
    Ok(())
}

/// The process-wide final report latch.
static FINAL_REPORT: AtomicBool = AtomicBool::new(false);

/// Claims the right to end the process with a report. True for the first
/// caller only; a later caller must not print pending reports (the first
/// one does) and should wait for the process to end ([`wait_for_exit`]).
/// Async-signal-safe.
pub fn claim_final_report() -> bool {
    !FINAL_REPORT.swap(true, SeqCst)
}

/// Has some thread claimed the final report?
pub fn final_report_claimed() -> bool {
    FINAL_REPORT.load(SeqCst)
}

/// Waits, forever, for the thread that claimed the final report to end the
/// process. Async-signal-safe (`pause(2)`).
#[cfg(unix)]
pub fn wait_for_exit() -> ! {
    loop {
        // SAFETY: pause is async-signal-safe.
        unsafe { libc::pause() };
    }
}

/// Waits, forever, for the process to end.
#[cfg(not(unix))]
pub fn wait_for_exit() -> ! {
    loop {
        std::thread::park();
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn note_carries_the_errno() {
        let mut b = [0u8; 128];
        let n = fallback_note(28, &mut b);
        let s = std::str::from_utf8(&b[..n]).unwrap();
        assert_eq!(
            s,
            "guardlift: cannot write reports to log_path (errno 28); writing them to stderr instead\n"
        );
    }

    #[test]
    fn dev_full_fails_to_write() {
        let f = LogFile::open("/dev/full").expect("/dev/full opens");
        assert_eq!(write_all_fd(f.raw_fd(), b"x"), Err(libc::ENOSPC));
        assert_eq!(f.path(), "/dev/full");
    }

    #[test]
    fn fd_writer_writes_long_text_whole() {
        let (r, w) = pipe();
        let long = "x".repeat(5000);
        write_display_fd_or_stderr(w, &format_args!("<{long}>"));
        // SAFETY: our own pipe ends.
        unsafe { libc::close(w) };
        let got = read_all(r);
        assert_eq!(got, format!("<{long}>"));
    }

    fn pipe() -> (i32, i32) {
        let mut fds = [0; 2];
        // SAFETY: a valid two-element array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        (fds[0], fds[1])
    }

    fn read_all(fd: i32) -> String {
        use std::io::Read;
        use std::os::fd::FromRawFd;
        // SAFETY: we own `fd` and hand it to the File.
        let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
        let mut s = String::new();
        f.read_to_string(&mut s).unwrap();
        s
    }
}
