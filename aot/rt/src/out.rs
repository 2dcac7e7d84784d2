//! The line protocol's writer (`guardlift_aot::protocol`): one buffer in
//! static memory, written to stdout with `write(2)` only, so that the
//! signal handlers flush what the run wrote and add their own lines with
//! the same functions, async-signal-safely. Bytes past the buffer's length
//! are never read: a line half-appended when a signal arrives is simply
//! not written. Numbers are lowercase hex without `0x`. [`die_of`] ends
//! the process once its last line is written.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes buffered before a write.
const BUF_BYTES: usize = 1 << 16;

struct Buf(UnsafeCell<[u8; BUF_BYTES]>);

// SAFETY: the run is one thread (the run thread) plus the signal handlers
// that interrupt it, which flush and append on top; nothing else writes.
unsafe impl Sync for Buf {}

static BUF: Buf = Buf(UnsafeCell::new([0; BUF_BYTES]));
static LEN: AtomicUsize = AtomicUsize::new(0);

/// Writes what is buffered.
pub fn flush() {
    let n = LEN.load(Ordering::SeqCst);
    let p = BUF.0.get().cast::<u8>();
    let mut off = 0;
    while off < n {
        // SAFETY: [p, p + n) is the buffer's written part.
        let w = unsafe { libc::write(libc::STDOUT_FILENO, p.add(off).cast(), n - off) };
        if w < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        if w <= 0 {
            break;
        }
        off += w as usize;
    }
    LEN.store(0, Ordering::SeqCst);
}

/// Appends bytes.
pub fn bytes(b: &[u8]) {
    if LEN.load(Ordering::SeqCst) + b.len() > BUF_BYTES {
        flush();
    }
    let n = LEN.load(Ordering::SeqCst);
    let take = b.len().min(BUF_BYTES - n);
    // SAFETY: [n, n + take) lies in the buffer; no reader looks past LEN.
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), BUF.0.get().cast::<u8>().add(n), take) };
    LEN.store(n + take, Ordering::SeqCst);
}

/// Starts a line with its event letter.
pub fn event(ev: u8) {
    bytes(&[ev]);
}

/// ` HEX`: one numeric field.
pub fn field(mut v: u64) {
    let mut b = [0u8; 17];
    let mut i = b.len();
    loop {
        i -= 1;
        b[i] = b"0123456789abcdef"[(v & 15) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    i -= 1;
    b[i] = b' ';
    bytes(&b[i..]);
}

/// A site field: hex, or ` -` for none.
pub fn site(s: Option<u32>) {
    match s {
        Some(s) => field(s.into()),
        None => bytes(b" -"),
    }
}

/// Ends the line.
pub fn nl() {
    bytes(b"\n");
}

/// A line with no fields (`E`, `A`).
pub fn line(ev: u8) {
    event(ev);
    nl();
}

/// Dies of `sig` (no core file) once the handler returns and the faulting
/// instruction runs again; at once for a signal that is not a fault.
pub fn die_of(sig: libc::c_int) {
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain system calls, async-signal-safe.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}
