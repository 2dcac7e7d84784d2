//! Alternate signal stacks for the threads that run guardlift code.
//!
//! guardlift's signal handlers are installed with `SA_ONSTACK`: they run on
//! the thread's alternate signal stack (`sigaltstack(2)`) when it has one,
//! so that a report is still written on a thread with little stack left
//! (deep recursion, a small host thread). [`ensure_current_thread`] gives
//! the calling thread one of [`ALT_STACK_BYTES`] (plus a guard page below
//! it) unless it already has an enabled one of at least
//! [`ALT_STACK_MIN_BYTES`]; the stack is unmapped when the thread exits.
//! The trap-site registration calls it on the compiling thread, and
//! [`crate::codemap::enter_compiled_code`] on each call into compiled code
//! (`call_dynamic`, `TypedFunc::call`, hence every C API call), the only
//! ways in.

/// Size of the alternate stack guardlift maps for a thread.
pub const ALT_STACK_BYTES: usize = 64 << 10;
/// An alternate stack at least this large is kept as it is.
pub const ALT_STACK_MIN_BYTES: usize = 32 << 10;

/// Makes sure the calling thread has an alternate signal stack for
/// guardlift's handlers (see the module docs). Cheap after the first call
/// on a thread (a thread-local flag).
pub fn ensure_current_thread() -> std::io::Result<()> {
    imp::ensure()
}

/// The calling thread's stack, (lowest, highest) address, as recorded by
/// [`ensure_current_thread`] on this thread (`None` before). Async-signal-safe.
pub fn thread_stack_bounds() -> Option<(usize, usize)> {
    imp::bounds()
}

/// The calling thread's alternate signal stack: `Some(size)` when enabled.
pub fn current_size() -> Option<usize> {
    imp::current().map(|(_, size)| size)
}

#[cfg(unix)]
mod imp {
    use std::cell::{Cell, RefCell};

    /// An alternate stack this thread mapped: unmapped at thread exit.
    struct AltStack {
        /// Start of the mapping (the guard page).
        map: *mut libc::c_void,
        map_len: usize,
        /// Start of the usable stack (`map` + one page).
        sp: *mut libc::c_void,
    }

    impl Drop for AltStack {
        fn drop(&mut self) {
            // Disable it first if it is still the thread's alternate stack.
            // SAFETY: plain syscalls on our own mapping.
            unsafe {
                if current().is_some_and(|(sp, _)| sp == self.sp as usize) {
                    let off = libc::stack_t {
                        ss_sp: std::ptr::null_mut(),
                        ss_flags: libc::SS_DISABLE,
                        ss_size: 0,
                    };
                    libc::sigaltstack(&off, std::ptr::null_mut());
                }
                libc::munmap(self.map, self.map_len);
            }
        }
    }

    thread_local! {
        static READY: Cell<bool> = const { Cell::new(false) };
        /// The thread's stack: (lowest address, highest address), 0s if unknown.
        static BOUNDS: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
        static OURS: RefCell<Option<AltStack>> = const { RefCell::new(None) };
    }

    /// The thread's enabled alternate stack: (start, size).
    pub fn current() -> Option<(usize, usize)> {
        // SAFETY: querying only; `old` is a valid out-pointer.
        unsafe {
            let mut old: libc::stack_t = std::mem::zeroed();
            if libc::sigaltstack(std::ptr::null(), &mut old) != 0 {
                return None;
            }
            (old.ss_flags & libc::SS_DISABLE == 0).then_some((old.ss_sp as usize, old.ss_size))
        }
    }

    pub fn ensure() -> std::io::Result<()> {
        if READY.with(Cell::get) {
            return Ok(());
        }
        if current().is_none_or(|(_, size)| size < super::ALT_STACK_MIN_BYTES) {
            install()?;
        }
        BOUNDS.with(|b| b.set(stack_bounds().unwrap_or((0, 0))));
        READY.with(|r| r.set(true));
        Ok(())
    }

    /// The thread's stack as recorded by `ensure` (async-signal-safe: a
    /// constant-initialized thread-local).
    pub fn bounds() -> Option<(usize, usize)> {
        let b = BOUNDS.with(Cell::get);
        (b.1 != 0).then_some(b)
    }

    #[cfg(target_os = "linux")]
    fn stack_bounds() -> Option<(usize, usize)> {
        // SAFETY: querying the calling thread's attributes.
        unsafe {
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
                return None;
            }
            let mut addr: *mut libc::c_void = std::ptr::null_mut();
            let mut size = 0usize;
            let r = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
            libc::pthread_attr_destroy(&mut attr);
            (r == 0).then_some((addr as usize, addr as usize + size))
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn stack_bounds() -> Option<(usize, usize)> {
        None
    }

    fn install() -> std::io::Result<()> {
        // SAFETY: sysconf is always safe to call.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let map_len = super::ALT_STACK_BYTES + page;
        // SAFETY: a fresh anonymous mapping; the guard page is made
        // inaccessible, the rest becomes the alternate stack.
        unsafe {
            let map = libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if map == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            let stack = AltStack {
                map,
                map_len,
                sp: map.cast::<u8>().add(page).cast(),
            };
            if libc::mprotect(map, page, libc::PROT_NONE) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let ss = libc::stack_t {
                ss_sp: stack.sp,
                ss_flags: 0,
                ss_size: super::ALT_STACK_BYTES,
            };
            if libc::sigaltstack(&ss, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            OURS.with(|o| *o.borrow_mut() = Some(stack));
        }
        Ok(())
    }
}

#[cfg(not(unix))]
mod imp {
    pub fn bounds() -> Option<(usize, usize)> {
        None
    }
    pub fn current() -> Option<(usize, usize)> {
        None
    }
    pub fn ensure() -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_new_thread_gets_a_large_enough_alt_stack() {
        std::thread::spawn(|| {
            ensure_current_thread().unwrap();
            let size = current_size().expect("an alternate stack");
            assert!(size >= ALT_STACK_MIN_BYTES, "{size}");
            // Idempotent.
            ensure_current_thread().unwrap();
            assert_eq!(current_size(), Some(size));
        })
        .join()
        .unwrap();
    }
}
