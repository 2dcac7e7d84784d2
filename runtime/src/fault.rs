//! Faults (spec §6.2): the handler that turns a fatal signal in generated
//! code, or in a host function it called, into a `host_fault` (or
//! `stack_overflow`) report, and the report's form ([`FaultReport`]).
//!
//! Compiled code is registered here ([`Runtime::register_code`]) into the
//! one code registry, [`crate::codemap`], which maps PCs to IR sites.
//!
//! # The handler
//!
//! Registered with [`crate::sigchain`] for SIGSEGV, SIGBUS, SIGFPE and
//! SIGILL (after trap mode's handler, which claims the SIGILL of a guard's
//! trap instruction) the first time code is registered; it runs on the
//! thread's alternate stack ([`crate::sigstack`]). For a fault whose PC is
//! in registered code, the site is the instruction executing; otherwise,
//! if the thread is inside a call into compiled code
//! ([`crate::codemap::enter_compiled_code`]), the innermost return address into registered
//! code between the interrupted SP and that entry point is the IR call that
//! entered the host function. Neither: not ours, left to the action
//! installed before (Rust's own stack-overflow handler, a host's, or the
//! default: the process dies of the signal as without guardlift).
//!
//! Ours: it claims the final report latch ([`crate::output`]), writes the
//! reports recorded so far by the code's runtime
//! ([`write_pending_reports`]), then the fault report — human, or JSON
//! lines with `json=1` — to the runtime's log (stderr; stderr with a note
//! when the log fails), streaming from the stack, and calls `abort()`
//! (status 134). A SIGSEGV whose address lies at the low end of the
//! thread's stack (its guard page) is a `stack_overflow` instead.
//!
//! The report's backtrace (unless `backtrace=0`) is the site, then the IR
//! call chain read from the frame records starting at the interrupted frame
//! pointer (`crate::backtrace::walk_records`): exact on x86_64, where
//! Cranelift gives every function a frame record; on aarch64 a leaf
//! function without a frame record shows its caller's caller as frame #1.
//! For a fault in a host function the site is the IR call that entered it:
//! its return address on the stack (x86_64's `call`, or a non-leaf aarch64
//! function's saved link register), or the link register itself when it
//! still points into IR code (an aarch64 leaf host function, which never
//! stores it). The walk starts from the frame pointer only if the host
//! function left it pointing into the IR caller's frame (or at its own
//! record, linked to the caller's); else the backtrace is the site alone.

use crate::codemap::{CodeFunction, CodeRegistration};
use crate::runtime::Runtime;
use crate::runtime::RuntimeInternals;
use std::sync::Arc;

/// Compiled code and its faults: how the JIT registers code for the fault
/// handler and how engines without a signal print a fault. Internals like
/// [`crate::runtime::RuntimeInternals`] (see [`crate::internals`]).
pub trait CodeFaults {
    /// Registers compiled functions in the code registry
    /// ([`crate::codemap`]) and installs the fault handler the first time.
    /// The registration keeps the runtime alive. Errors when `sigaction`
    /// fails.
    fn register_code(
        self: &Arc<Self>,
        funcs: Vec<CodeFunction>,
    ) -> std::io::Result<CodeRegistration>;

    /// Writes a fault report to the log (stderr by default), human or a
    /// JSON line as configured: how engines without a signal (the
    /// interpreter) print what the fault handler prints.
    fn write_fault_report(&self, r: &FaultReport<'_>);
}

impl CodeFaults for Runtime {
    fn register_code(
        self: &Arc<Self>,
        funcs: Vec<CodeFunction>,
    ) -> std::io::Result<CodeRegistration> {
        imp::install()?;
        Ok(crate::codemap::register(funcs, self.clone()))
    }

    fn write_fault_report(&self, r: &FaultReport<'_>) {
        let (_, json) = self.trap_scratch().output();
        let text = if json {
            r.json().to_string()
        } else {
            r.to_string()
        };
        self.write_log_text(&text);
    }
}

/// How long a signal handler waits for the caught foreign writes to be
/// symbolized ([`write_pending_reports`]).
pub const DRAIN_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Writes the reports `rt` recorded so far to its log, before a signal
/// handler's own report (the fault handler's, the trap handler's), or a
/// note when its sink is locked at that moment.
///
/// Async-signal-safe except in one case: foreign writes a watchpoint caught
/// that are still raw in the watch ring ([`crate::watch::pending`]; only
/// with `--watch`) are symbolized and recorded first, on a helper thread
/// with an ordinary stack (symbolizing allocates and needs more stack than
/// the alternate signal stack has). The interrupted thread may hold one of
/// the runtime's locks (a fault inside a host function), so the handler
/// waits for the helper at most [`DRAIN_WAIT`] and then goes on without it.
pub fn write_pending_reports(rt: &Arc<Runtime>) {
    if crate::watch::pending() {
        let (done, wait) = std::sync::mpsc::channel();
        let helper = rt.clone();
        let spawned = std::thread::Builder::new().spawn(move || {
            helper.drain_watch();
            let _ = done.send(());
        });
        if spawned.is_ok() {
            let _ = wait.recv_timeout(DRAIN_WAIT);
        }
    }
    let (fd, json) = rt.trap_scratch().output();
    // Host stacks print as symbolized before, else as raw addresses.
    let pending = crate::host_stack::raw_frames_only(|| {
        rt.try_with_reports(|rs| {
            for r in rs {
                crate::report::write_signal_safe(fd, json, &r.human());
            }
        })
    });
    if pending.is_none() {
        crate::output::write_fd_or_stderr(
            fd,
            b"guardlift: the reports recorded before this fault could not be read (the runtime was busy)\n",
        );
    }
}

/// How a run that ends inside the run ends: abort mode's first report
/// (in ordinary context) or a fatal signal (in the fault or trap handler,
/// which must not allocate). Rendered by the front end before the run
/// starts (the run-session layer, `guardlift-session`) and handed to the
/// runtime with [`crate::internals::RuntimeInternals::set_fatal_ending`].
#[derive(Default)]
pub struct FatalEnding {
    /// The members the run's one JSON object carries besides its result and
    /// reports, without braces (`"engine":"jit",...`). With them, a fatal
    /// signal prints on stdout `{"result":null,"reports":[...every report
    /// and the fault...],MEMBERS,"aborted":true,"stdout":...}`; without,
    /// it prints nothing on stdout.
    pub stdout_json_members: Option<String>,
    /// Run just before abort mode ends the process (ordinary context: it
    /// may allocate), with the reports still pending.
    pub on_abort: Option<crate::runtime::AbortHook>,
}

/// What a host function's fault that ends the run (`host_call_fault`,
/// in normal context: it may allocate) renders before the fault handler's
/// allocation-free ending.
struct AtHostFault {
    /// The reports recorded before, each a full JSON object.
    reports: Vec<String>,
    /// The JSON member `"watch":{...}` of a watch session.
    watch: Option<String>,
    /// The watch session's end-of-run summary line.
    summary: Option<String>,
}

static AT_HOST_FAULT: std::sync::OnceLock<AtHostFault> = std::sync::OnceLock::new();

/// The names of the fatal signals the handler takes.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        _ => "signal",
    }
}

/// How a fault was caught.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FaultCause<'a> {
    /// A fatal signal: in native code, or the interpreter's wild access or
    /// depth limit, reported as the signal native code dies of (SIGSEGV,
    /// docs/INSTRUMENTATION.md) without a PC.
    Signal {
        /// Its name (`SIGSEGV`, ...).
        signal: &'static str,
        /// The faulting address (`si_addr`; the interpreter's: the wild
        /// access's address, `None` for a stack overflow).
        address: Option<usize>,
        /// The PC of the faulting instruction (`None`: the interpreter).
        pc: Option<usize>,
        /// In a host function called at the site (not in IR code itself).
        in_host: bool,
    },
    /// The interpreter's fault that is no memory access (undefined
    /// behaviour it refuses to run): its message.
    Interp(&'a str),
    /// A fatal arithmetic fault of spec §3.1 at the site (`div_by_zero`,
    /// `int_overflow`): the report is of that kind, not `host_fault`.
    Arith(crate::ReportKind),
    /// A host function of the model heap called at the site found what a
    /// real interpreter would have crashed on (a corrupted word in a slow
    /// path, a free of something that is no object, ...): a `host_fault`
    /// without a signal (spec §6.2, docs/INSTRUMENTATION.md "Faults").
    Host(&'a HostCallFault),
}

/// What a host function of the model heap found wrong, and the object it
/// was about, as the runtime knew it when it happened (never looked up
/// again when printed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCallFault {
    /// The host function and what was wrong.
    pub fault: crate::heap::HostFault,
    /// The object's address and what the runtime knows of it (`None` for
    /// the note: no object of the runtime's at that address).
    pub object: Option<(u64, Option<crate::report::ObjectNote>)>,
}

/// What a fatal arithmetic fault's report says happened.
pub fn arith_message(kind: crate::ReportKind) -> &'static str {
    match kind {
        crate::ReportKind::IntOverflow => "signed division of the minimum by -1 overflows",
        _ => "integer division by zero",
    }
}

/// The frames of a fault's backtrace after the site (`#0`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OuterFrames<'a> {
    /// Return addresses into host-registered code, innermost first, each
    /// printed as the IR call it returns to (through [`crate::codemap`]):
    /// the fault handler's, which must not allocate.
    ReturnAddrs(&'a [usize]),
    /// IR frames as backtraces print them (the interpreter's; a target's,
    /// mapped on the host).
    Frames(&'a [String]),
}

impl OuterFrames<'_> {
    /// Calls `f` with each frame's text, innermost first.
    fn each(
        &self,
        mut f: impl FnMut(&dyn std::fmt::Display) -> std::fmt::Result,
    ) -> std::fmt::Result {
        match *self {
            OuterFrames::ReturnAddrs(ras) => {
                for &ra in ras {
                    f(&crate::backtrace::ReturnFrame(ra))?;
                }
            }
            OuterFrames::Frames(frames) => {
                for fr in frames {
                    f(fr)?;
                }
            }
        }
        Ok(())
    }
}

/// A `host_fault` or `stack_overflow` report, formatted without
/// allocating (the fault handler prints it; the CLI prints the
/// interpreter's faults with it, so every engine reads the same).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FaultReport<'a> {
    /// A `stack_overflow` (else a `host_fault`).
    pub stack_overflow: bool,
    /// The site: the instruction executing, or the call into host code.
    pub function: &'a str,
    /// The site's line.
    pub line: u32,
    /// The site's column.
    pub col: u32,
    /// The site's opcode.
    pub op: &'a str,
    /// What happened.
    pub cause: FaultCause<'a>,
    /// The backtrace: `None` when not captured (`backtrace=0`); else the
    /// site as frame #0 and then these frames of the IR call chain,
    /// innermost first.
    pub backtrace: Option<OuterFrames<'a>>,
}

impl FaultReport<'_> {
    /// The site as backtrace frame #0.
    fn frame(&self) -> crate::backtrace::IrFrame<'_> {
        crate::backtrace::IrFrame {
            function: self.function,
            line: self.line,
            col: self.col,
            op: self.op,
        }
    }

    /// `host_fault`, `stack_overflow`, or an arithmetic fault's kind.
    pub fn kind(&self) -> &'static str {
        if let FaultCause::Arith(k) = self.cause {
            k.name()
        } else if self.stack_overflow {
            crate::report::STACK_OVERFLOW
        } else {
            crate::report::HOST_FAULT
        }
    }

    /// The JSON object (one line, ending in a newline).
    pub fn json(&self) -> impl std::fmt::Display + '_ {
        FaultJson(self)
    }
}

impl std::fmt::Display for FaultReport<'_> {
    fn fmt(&self, s: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            s,
            "==guardlift== ERROR: {} at @{} {}:{} ({})",
            self.kind(),
            self.function,
            self.line,
            self.col,
            self.op
        )?;
        match self.cause {
            FaultCause::Signal {
                signal,
                address,
                pc,
                in_host,
            } => {
                let at = SignalAt {
                    signal,
                    address,
                    pc,
                };
                if self.stack_overflow {
                    writeln!(s, "    the stack is exhausted ({at})")?;
                } else {
                    writeln!(s, "    {at}")?;
                }
                if in_host {
                    writeln!(s, "    in a host function called by this IR call")?;
                }
            }
            FaultCause::Interp(msg) => writeln!(s, "    {msg}")?,
            FaultCause::Arith(k) => writeln!(s, "    {}", arith_message(k))?,
            FaultCause::Host(h) => {
                writeln!(s, "    {}", h.fault)?;
                writeln!(s, "    in a host function called by this IR call")?;
            }
        }
        // ASan's order: what (above), then where (the backtrace), then the
        // object and its history.
        if let Some(outer) = self.backtrace {
            writeln!(s, "    #0 {}", self.frame())?;
            let mut i = 0;
            outer.each(|fr| {
                i += 1;
                writeln!(s, "    #{i} {fr}")
            })?;
        }
        if let FaultCause::Host(HostCallFault {
            object: Some((_, Some(n))),
            ..
        }) = self.cause
        {
            crate::report::write_object_note(s, n)?;
        }
        writeln!(s, "    seen 1 time(s)")
    }
}

/// `SIGSEGV at address 0x8, pc 0x…`: the parts that are known.
struct SignalAt {
    signal: &'static str,
    address: Option<usize>,
    pc: Option<usize>,
}

impl std::fmt::Display for SignalAt {
    fn fmt(&self, s: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        s.write_str(self.signal)?;
        if let Some(a) = self.address {
            write!(s, " at address {a:#x}")?;
        }
        if let Some(pc) = self.pc {
            write!(s, ", pc {pc:#x}")?;
        }
        Ok(())
    }
}

/// An optional hex field of the JSON line: `"0x…"` or `null`.
struct HexOrNull(Option<usize>);

impl std::fmt::Display for HexOrNull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(v) => write!(f, "\"{v:#x}\""),
            None => f.write_str("null"),
        }
    }
}

/// The JSON line of a fault report.
struct FaultJson<'a>(&'a FaultReport<'a>);

impl std::fmt::Display for FaultJson<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::report::JsonStr;
        let r = self.0;
        write!(
            f,
            "{{\"kind\":\"{}\",\"site\":null,\"function\":{},\"line\":{},\"col\":{},\"op\":{},\"count\":1",
            r.kind(),
            JsonStr(r.function),
            r.line,
            r.col,
            JsonStr(r.op),
        )?;
        match r.cause {
            FaultCause::Signal {
                signal,
                address,
                pc,
                in_host,
            } => write!(
                f,
                ",\"signal\":\"{signal}\",\"address\":{},\"pc\":{},\"in_host\":{in_host}",
                HexOrNull(address),
                HexOrNull(pc)
            )?,
            FaultCause::Interp(msg) => write!(
                f,
                ",\"signal\":null,\"address\":null,\"message\":{}",
                JsonStr(msg)
            )?,
            FaultCause::Arith(k) => write!(
                f,
                ",\"signal\":null,\"address\":null,\"message\":{}",
                JsonStr(arith_message(k))
            )?,
            FaultCause::Host(h) => {
                write!(
                    f,
                    ",\"signal\":null,\"address\":null,\"message\":{},\"in_host\":true",
                    JsonStr(&h.fault)
                )?;
                if let Some((obj, note)) = &h.object {
                    write!(f, ",\"object\":\"{obj:#x}\"")?;
                    if let Some(n) = note {
                        crate::report::write_object_note_json(f, n, false)?;
                    }
                }
            }
        }
        if let Some(outer) = r.backtrace {
            write!(f, ",\"backtrace\":[{}", JsonStr(r.frame()))?;
            outer.each(|fr| write!(f, ",{}", JsonStr(fr)))?;
            f.write_str("]")?;
        }
        f.write_str("}\n")
    }
}

/// Where a signal handler ends the process (the fault handler, trap
/// mode's handler): with [`FatalEnding::stdout_json_members`] set, prints on stdout the
/// one JSON object of the run, `{"result":null,"reports":[...the reports
/// recorded before, then last...],TAIL,"aborted":true,"stdout":...}` —
/// in every mode, trap mode included (spec §6.2). Async-signal-safe but for
/// the locks it only tries.
#[cfg(unix)]
pub(crate) fn write_stdout_json(rt: &Runtime, last: &dyn std::fmt::Display) {
    let Some(tail) = rt.stdout_json_members.get() else {
        return;
    };
    crate::host_stack::raw_frames_only(|| write_stdout_json_to(rt, last, tail))
}

#[cfg(unix)]
fn write_stdout_json_to(rt: &Runtime, last: &dyn std::fmt::Display, tail: &str) {
    use std::fmt::Write as _;
    let mut w = crate::output::FdWriter::new(libc::STDOUT_FILENO);
    let _ = w.write_str("{\"result\":null,\"reports\":[");
    let at = AT_HOST_FAULT.get();
    if let Some(at) = at {
        for r in &at.reports {
            let _ = write!(w, "{r},");
        }
    } else {
        let _ = rt.try_with_reports(|rs| {
            for r in rs {
                let _ = write!(w, "{},", r.human().json());
            }
        });
    }
    let _ = write!(w, "{last}],{tail},\"aborted\":true,");
    if let Some(watch) = at.and_then(|a| a.watch.as_ref()) {
        let _ = write!(w, "{watch},");
    }
    let _ = w.write_str("\"stdout\":");
    // The `print_*` output so far, as the CLI's other abort paths give it.
    let written = rt.try_with_output(|out| {
        let _ = write!(w, "{}", crate::report::JsonStr(out));
    });
    if written.is_none() {
        let _ = w.write_str("\"\"");
    }
    let _ = writeln!(w, "}}");
    let _ = w.finish();
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod imp {
    use super::*;
    use crate::backtrace::MAX_FRAMES;
    use crate::codemap::{call_site_on_stack, entry_sp, is_code, is_return_address};
    use crate::sigchain::{Order, Signal};

    /// SIGILL too: a guard's trap is claimed first by trap mode's handler
    /// ([`Order::GuardTrap`]); any other illegal instruction in guardlift
    /// code is a fault.
    const SIGNALS: [libc::c_int; 4] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL];
    /// How far up the stack the call-site scan looks.
    const SCAN_BYTES: usize = 1 << 20;
    /// A fault this close above the stack's low end (or below it) is an overflow.
    const OVERFLOW_SLACK: usize = 64 << 10;
    /// The largest frame of compiled code the backtrace walk believes in
    /// (between the IR call's return slot and its frame record).
    const MAX_FRAME_BYTES: usize = 1 << 20;

    pub fn install() -> std::io::Result<()> {
        for sig in SIGNALS {
            crate::sigchain::install(sig, Order::Fault, on_fault)?;
        }
        Ok(())
    }

    /// Where a fault is placed.
    struct Placed {
        /// The PC whose IR site the report names.
        site_pc: usize,
        /// In a host function called at the site.
        in_host: bool,
        /// The frame record the backtrace walk starts from (0: none).
        record: usize,
    }

    /// The fault's IR site: the faulting instruction if it is in registered
    /// code; else, if the thread is inside a call into compiled code, the
    /// innermost IR call between the faulting SP and that entry point.
    fn place(s: &Signal, bounds: Option<(usize, usize)>) -> Option<Placed> {
        let (pc, sp, fp) = (s.pc(), s.sp(), s.fp());
        let top = entry_sp();
        let on_stack = |a: usize| bounds.is_some_and(|(low, high)| low <= a && a < high);
        if let Some((ra, record)) = prologue_caller(s, top) {
            // An overflow in a callee's prologue: the IR call that made it.
            return Some(Placed {
                site_pc: ra - 1,
                in_host: false,
                record,
            });
        }
        if is_code(pc) {
            // The faulting function's own record (x86_64 sets up a frame in
            // every function; an aarch64 leaf may not, see the docs).
            let record = if sp <= fp && fp < top { fp } else { 0 };
            return Some(Placed {
                site_pc: pc,
                in_host: false,
                record,
            });
        }
        if top == 0 || sp >= top || !on_stack(sp) || bounds.is_none_or(|(_, h)| top > h) {
            return None;
        }
        if let Some(lr) = s.lr().filter(|&lr| is_return_address(lr)) {
            // aarch64: a `bl` from IR code left the return address in the
            // link register, and the host function has called nothing since
            // (a call would have pointed it into the host function): a leaf,
            // which may keep it there and never store it on the stack, and
            // which leaves the frame pointer at the IR caller's record (or
            // has stored its own record, which links to the caller's).
            let in_frame = |a: usize| {
                sp <= a
                    && a.is_multiple_of(8)
                    && a.checked_add(16).is_some_and(|e| e <= top)
                    && a - sp < MAX_FRAME_BYTES
            };
            let record = match in_frame(fp) {
                // SAFETY: `fp` is 8-aligned and `[fp, fp + 16)` lies in
                // [sp, top), live stack of this thread (checked above).
                true if unsafe { crate::codemap::read_stack_word(fp + 8) } == lr => {
                    // SAFETY: as above.
                    let caller = unsafe { crate::codemap::read_stack_word(fp) };
                    if in_frame(caller) {
                        caller
                    } else {
                        0
                    }
                }
                true => fp,
                false => 0,
            };
            return Some(Placed {
                site_pc: lr - 1,
                in_host: true,
                record,
            });
        }
        // SAFETY: [sp, top) is live stack of this thread (checked above).
        let (site_pc, slot) = unsafe { call_site_on_stack(sp, top, SCAN_BYTES) }?;
        // The IR function's frame record: the frame pointer if the host
        // function left it alone (just above the call's return slot), or
        // the record the host function pushed below that slot links to.
        let fp = if fp >= sp && fp.wrapping_add(8) == slot {
            // SAFETY: `fp` = `slot - 8` lies in [sp, top) with the slot.
            unsafe { crate::codemap::read_stack_word(fp) }
        } else {
            fp
        };
        let record = if slot < fp && fp < top && fp - slot < MAX_FRAME_BYTES {
            fp
        } else {
            0
        };
        Some(Placed {
            site_pc,
            in_host: true,
            record,
        })
    }

    /// The first instructions of every compiled function, as Cranelift
    /// emits them: the frame record set-up (`push rbp; mov rbp, rsp` on
    /// x86_64; `stp x29, x30, [sp, #-16]!; mov x29, sp` on aarch64), and the
    /// offset from which the frame pointer is the function's own record.
    #[cfg(target_arch = "x86_64")]
    const PROLOGUE: (&[u8], usize) = (&[0x55, 0x48, 0x89, 0xe5], 4);
    #[cfg(target_arch = "aarch64")]
    const PROLOGUE: (&[u8], usize) = (&[0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91], 8);

    /// For a fault in the prologue of a registered function (before its
    /// first instruction with an IR site: the frame set-up, the stack
    /// probe — where a deep recursion runs out of stack), the return
    /// address into the IR call that entered it and that caller's frame
    /// record (0: unknown): spec §6.2 names the call, not the callee.
    fn prologue_caller(s: &Signal, top: usize) -> Option<(usize, usize)> {
        let (pc, sp, fp) = (s.pc(), s.sp(), s.fp());
        let (f, _) = crate::codemap::owner_of(pc)?;
        let off = pc - f.start;
        if f.locs.first().is_some_and(|l| (l.start as usize) <= off) {
            return None;
        }
        let (bytes, set_up) = PROLOGUE;
        if f.len < bytes.len() || top == 0 {
            return None;
        }
        // SAFETY: [start, start + len) is the registered function's code,
        // mapped readable while it is registered (it is: `pc` is in it).
        let code = unsafe { std::slice::from_raw_parts(f.start as *const u8, bytes.len()) };
        if code != bytes {
            return None;
        }
        let on_stack =
            |a: usize| sp <= a && a.checked_add(8).is_some_and(|e| e <= top) && a.is_multiple_of(8);
        let read = |a: usize| {
            on_stack(a).then(|| {
                // SAFETY: `on_stack` checked the word lies in the interrupted
                // thread's live stack, [sp, entry), 8-aligned.
                unsafe { crate::codemap::read_stack_word(a) }
            })
        };
        let (ra, record) = if off == 0 {
            // Nothing pushed yet: the return address is where the call left it.
            (s.lr().or_else(|| read(sp))?, fp)
        } else if off < set_up {
            // The old frame pointer is pushed (x86_64) or the pair stored
            // (aarch64): the return address is the next word.
            (read(sp + 8)?, fp)
        } else {
            // The function's own record: the caller's record and the return address.
            (read(fp + 8)?, read(fp)?)
        };
        let record = if on_stack(record) { record } else { 0 };
        is_return_address(ra).then_some((ra, record))
    }

    fn on_fault(s: &Signal) -> bool {
        let bounds = crate::sigstack::thread_stack_bounds();
        let Some(placed) = place(s, bounds) else {
            // Not in guardlift code: whoever was there before decides.
            return false;
        };
        let addr = s.fault_addr();
        let overflow = s.sig == libc::SIGSEGV
            && bounds.is_some_and(|(low, _)| {
                addr < low.saturating_add(OVERFLOW_SLACK)
                    && addr >= low.saturating_sub(OVERFLOW_SLACK)
            });
        if placed.in_host && !overflow && host_resolves(s) {
            // The host's handler took it: the instruction runs again.
            return true;
        }
        report_and_abort(s, &placed, overflow)
    }

    thread_local! {
        /// The (PC, address) of the last fault this thread offered to the
        /// host's handler, which returned (0: none).
        static OFFERED: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
    }

    /// A fault in a host function goes first to the handler the host
    /// installed before guardlift, if any (spec §6.2; wasmtime's rule for
    /// faults outside its code): `true` when it took the fault and returned
    /// (the instruction is retried). The same fault again right after (same
    /// PC and address) is one the handler did not resolve: `false`, as when
    /// there is no handler or it declines.
    fn host_resolves(s: &Signal) -> bool {
        let key = (s.pc(), s.fault_addr());
        if OFFERED.with(|c| c.replace((0, 0))) == key {
            return false;
        }
        if crate::sigchain::offer_to_previous(s) {
            OFFERED.with(|c| c.set(key));
            return true;
        }
        false
    }

    /// Return addresses of the IR call chain outside the faulting frame.
    fn outer_frames(record: usize, out: &mut [usize; MAX_FRAMES]) -> usize {
        let mut n = 0;
        if record != 0 {
            // SAFETY: `place` checked [record, entry) is this thread's stack.
            // Twice as deep as kept: the calls of a function's next piece
            // are walked, not kept.
            unsafe {
                crate::backtrace::walk_records(record, entry_sp(), 2 * MAX_FRAMES, |ra| {
                    if n == MAX_FRAMES {
                        return false;
                    }
                    let ours = is_return_address(ra);
                    // A call of a function's next piece is no frame of its own.
                    if ours && !crate::codemap::is_piece_call(ra - 1) {
                        out[n] = ra;
                        n += 1;
                    }
                    ours
                })
            };
        }
        n
    }

    fn report_and_abort(s: &Signal, placed: &Placed, overflow: bool) -> ! {
        let cause = FaultCause::Signal {
            signal: signal_name(s.sig),
            address: Some(s.fault_addr()),
            pc: Some(s.pc()),
            in_host: placed.in_host,
        };
        report_placed_and_abort(placed, overflow, cause)
    }

    /// A fatal arithmetic fault (`kind`: `div_by_zero`, `int_overflow`)
    /// of the IR op whose cold path called the runtime's
    /// `gl_arith_fault`: the innermost return address into registered
    /// code on the stack is that call (its source location is the op's),
    /// `fp` the IR function's frame record (it called, so it has one).
    /// Reports as the fault handler does, then aborts.
    pub fn arith_fault(kind: crate::ReportKind, fp: usize) -> ! {
        let here = 0usize;
        let sp = std::ptr::addr_of!(here) as usize;
        let top = entry_sp();
        let found = if top > sp {
            // SAFETY: [sp, top) is this thread's live stack between this
            // frame and where it entered compiled code (which called us).
            unsafe { call_site_on_stack(sp, top, SCAN_BYTES) }
        } else {
            None
        };
        let Some((site_pc, slot)) = found else {
            // Not called from registered code: nothing to name.
            std::process::abort()
        };
        let record = if slot < fp && fp < top && fp - slot < MAX_FRAME_BYTES {
            fp
        } else {
            0
        };
        let placed = Placed {
            site_pc,
            in_host: false,
            record,
        };
        report_placed_and_abort(&placed, false, FaultCause::Arith(kind))
    }

    /// A fault a host function of the model heap found (`fault`), when
    /// this thread is inside a call into compiled code: reported at the
    /// innermost IR call on the stack (the one that entered the host
    /// function) as the fault handler reports a fault in a host function,
    /// then aborts. Returns when no IR call is on this thread's stack (a
    /// host calling the runtime itself: the caller records the fault).
    pub fn host_call_fault(fault: &HostCallFault) {
        let here = 0usize;
        let sp = std::ptr::addr_of!(here) as usize;
        let top = entry_sp();
        if top <= sp {
            return;
        }
        // SAFETY: [sp, top) is this thread's live stack between this frame
        // and where it entered compiled code (which called the host).
        let Some((site_pc, slot)) = (unsafe { call_site_on_stack(sp, top, SCAN_BYTES) }) else {
            return;
        };
        // SAFETY: as above; [slot, top) is part of it.
        let record = unsafe { ir_record_above(slot, top, site_pc) };
        let placed = Placed {
            site_pc,
            in_host: true,
            record,
        };
        report_placed_and_abort(&placed, false, FaultCause::Host(fault))
    }

    /// The frame record of the IR function whose call returns to
    /// `site_pc + 1` (stored at `slot`): the first record `[fp, return
    /// address]` in `[slot - 8, top)` whose return address is in IR code
    /// is either the called function's (returning to the site: the IR
    /// function's record is the one it saved) or the IR function's own
    /// (the called function set up none). 0: none found.
    ///
    /// # Safety
    /// `[slot - 8, top)` is live stack of this thread.
    unsafe fn ir_record_above(slot: usize, top: usize, site_pc: usize) -> usize {
        let mut a = slot - 8;
        let end = top.min(slot.saturating_add(MAX_FRAME_BYTES));
        while a + 16 <= end {
            // SAFETY: per the contract, a and a + 8 lie in [slot - 8, top).
            let (fp, ra) = unsafe {
                (
                    crate::codemap::read_stack_word(a),
                    crate::codemap::read_stack_word(a + 8),
                )
            };
            if fp > a && fp < top && fp.is_multiple_of(8) && is_return_address(ra) {
                return if ra - 1 == site_pc { fp } else { a };
            }
            a += 8;
        }
        0
    }

    fn report_placed_and_abort(placed: &Placed, overflow: bool, cause: FaultCause<'_>) -> ! {
        if !crate::output::claim_final_report() {
            crate::output::wait_for_exit()
        }
        let mut frames = [0usize; MAX_FRAMES];
        let mut n = outer_frames(placed.record, &mut frames);
        // A fault at a function's call of its next piece (the next piece's
        // prologue overflowed the stack) is a fault entering the function:
        // placed at its caller's call, as when it is compiled whole.
        let mut site_pc = placed.site_pc;
        if n > 0 && crate::codemap::is_piece_call(site_pc) {
            site_pc = frames[0] - 1;
            frames.copy_within(1..n, 0);
            n -= 1;
        }
        // One more was walked than is kept: the site may have come from it.
        n = n.min(MAX_FRAMES - 1);
        // The function and the runtime, as references never dropped: this
        // ends in abort.
        let Some((f, owner)) = crate::codemap::owner_of(site_pc) else {
            // SAFETY: abort is async-signal-safe.
            unsafe { libc::abort() }
        };
        let f = std::mem::ManuallyDrop::new(f);
        let Ok(rt) = owner.downcast::<Runtime>() else {
            // SAFETY: abort is async-signal-safe.
            unsafe { libc::abort() }
        };
        let rt = std::mem::ManuallyDrop::new(rt);
        write_pending_reports(&rt);
        let site = f.site_or_function(site_pc).frame;
        let report = FaultReport {
            stack_overflow: overflow,
            function: site.function,
            line: site.line,
            col: site.col,
            op: site.op,
            cause,
            backtrace: crate::backtrace::enabled()
                .then_some(OuterFrames::ReturnAddrs(&frames[..n])),
        };
        let (fd, json) = rt.trap_scratch().output();
        crate::host_stack::raw_frames_only(|| {
            if json {
                crate::output::write_display_fd_or_stderr(fd, &FaultJson(&report));
            } else {
                crate::output::write_display_fd_or_stderr(fd, &report);
            }
            write_stdout_json(&rt, &report.json());
        });
        if let Some(line) = AT_HOST_FAULT.get().and_then(|a| a.summary.as_ref()) {
            crate::output::write_display_fd_or_stderr(
                libc::STDERR_FILENO,
                &format_args!("{line}\n"),
            );
        }
        // SAFETY: abort is async-signal-safe.
        unsafe { libc::abort() }
    }
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
mod imp {
    /// No fault handler here: faults stay the host's (documented).
    pub fn install() -> std::io::Result<()> {
        Ok(())
    }

    /// Without the code registry's stack scan: the process ends as a fault would.
    pub fn arith_fault(_kind: crate::ReportKind, _fp: usize) -> ! {
        std::process::abort()
    }

    /// Without the stack scan the fault is only recorded.
    pub fn host_call_fault(_fault: &super::HostCallFault) {}
}

/// A fatal arithmetic fault (`div_by_zero`, `int_overflow`) of the IR op
/// whose cold path called `gl_arith_fault` (`fp`: its function's frame
/// pointer): printed with the reports recorded before, as a fault is; aborts.
pub fn arith_fault(kind: crate::ReportKind, fp: usize) -> ! {
    imp::arith_fault(kind, fp)
}

/// A fault a host function of the model heap found, on a thread inside a
/// call into compiled code: reported at that IR call as `host_fault` with
/// the reports recorded before, then the process aborts (spec §6.2).
/// Returns when the thread is not in compiled code (nothing to name).
pub fn host_call_fault(rt: &Runtime, fault: &HostCallFault) {
    if crate::codemap::entry_sp() == 0 {
        return;
    }
    // The object's host stacks symbolized now, in normal context (the
    // printing below does not symbolize).
    if let Some((_, Some(n))) = &fault.object {
        for st in [&n.stacks.alloc, &n.stacks.free].into_iter().flatten() {
            st.frames();
        }
    }
    // The reports so far (a watch session's writes among them) in full,
    // and the watch session's state, which ends with the run.
    let reports = rt
        .peek_reports()
        .iter()
        .map(|r| r.to_json().to_string())
        .collect();
    let w = rt.watch_status();
    let _ = AT_HOST_FAULT.set(AtHostFault {
        reports,
        watch: w.as_ref().map(|w| format!("\"watch\":{}", w.to_json())),
        summary: w.as_ref().and_then(|w| w.summary_line()),
    });
    imp::host_call_fault(fault)
}
