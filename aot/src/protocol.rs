//! The line protocol from the target program to the host.
//!
//! The target (the object linked with the runtime library, `aot/rt`) writes
//! these lines to its stdout, fully buffered (its own buffer and `write(2)`,
//! so that its fault handler can flush it), flushed at exit, before it aborts
//! and when it faults.
//! Numbers are lowercase hex without `0x`; fields are separated by one
//! space. Formatting of everything a user sees stays on the host.
//!
//! | line | meaning |
//! |---|---|
//! | `P i BITS` / `P f BITS` | `print_i64` / `print_f64` of the raw bits |
//! | `F FN FAULT A B OBJ ID FREED ALLOC FREE SITE N PCs` | a host fault in the model heap (first one only): [`FAULT_FUNCS`]`[FN]`, [`Fault`] code, operands, the object it was about (0: none) and what the runtime knew of it (as `OBJ` below), then the IR call that entered the host function (`- -`: not in an IR call) and the IR calls outside it (`N` PCs, innermost first). With a call, the run died there: the reports recorded before precede it and nothing follows |
//! | `R KIND SITE A B C LW LWSITE LWVALUE LWOBJ COUNT OBJ` | one deduplicated report, in first-occurrence order: [`ReportKind::code`], site id, observed values (as [`decode_observed`] takes them: dict: object word; adstack: capacity len; clobber: address width value; lifetime: object address width; bounds: object index capacity), the last known write to the slot ([`LastWriteCode`], its site, value and object id, 0 = unknown), the occurrence count, then the object the report is about (`OBJ`, below) |
//! | `T SIGNAL PC FOUND KIND SITE HAVE A B C` | a trap instruction fired (before `A`): FOUND 1 when the PC is a guard's trap (trap mode), with its kind and site; HAVE 1 when the scratch area held this site's observed values A B C (the object is not named: the host's trap handler cannot look it up either) |
//!
//! `OBJ` is four fields `ID FREED ALLOC FREE`: the allocation id (0: no
//! object known), 1 if it was freed, and the runtime-global site ids of the
//! IR calls that allocated and freed it, each `-` when unknown.
//! | `S SIGNAL` | the program is dying of a signal outside any IR call (in the runtime library itself) |
//! | `C SIGNAL ADDR PC HOST OVERFLOW SITE ALT` | a fatal signal (SIGSEGV, SIGBUS, SIGFPE, a SIGILL that is not a guard's) in IR code (HOST 0) or in a host function IR code called (HOST 1), at data address ADDR; OVERFLOW 1 when it hit the end of the stack; SITE the faulting instruction or the IR call into the host function, ALT the call in the link register (used when SITE has no IR site: a fault in a prologue), LEAF 1 when the first of the N PCs that follow is ALT (a function without a frame record of its own), then `N` and N PCs (`FN OFF`): the IR calls outside the site, innermost first (the frame-record walk); the reports recorded before it precede it |
//!
//! A PC in IR code (`SITE`, `ALT`, a report's frames) is two fields `FN OFF`:
//! the function's index in the program's code table (`gl_code`, the order
//! of [`guardlift_jit::ObjectCode::functions`]) and the offset in it, or
//! `- -`. A report line ends with its IR call chain: `N` then `N` PCs, the
//! report stub's call first (see [`parse`]), then `OBJS`: `M` then M pairs
//! `ID COUNT`, the objects its occurrences were about, first seen first (up
//! to [`MAX_OBJECTS`]; spec §6 `objects`).
//! | `D KIND SITE N PCs` | a fatal division fault of spec §3.1 ([`ReportKind::code`] of `div_by_zero` or `int_overflow`) at SITE (the op's call of `gl_arith_fault`), then the IR calls outside it (`N` PCs, innermost first); the reports recorded before it precede it |
//! | `V BITS` | the entry returned these raw result bits |
//! | `A` | abort/trap mode: a violation ended the run (reports precede it) |
//! | `E` | the run ended normally (reports and faults precede it) |

use crate::wrap::FUNC_PREFIX;
use guardlift_abi::protocol as ev;
use guardlift_runtime::backtrace::{self, MAX_FRAMES};
use guardlift_runtime::codemap::CodeFunction;
use guardlift_runtime::fault::{FaultCause, FaultReport, HostCallFault, OuterFrames};
use guardlift_runtime::report::{observes_the_slot, MAX_OBJECTS};
use guardlift_runtime::trap::decode_observed;
use guardlift_runtime::{
    HostFault, LastWrite, ModuleSites, ObjectCount, ObjectNote, Observed, Report, ReportKind,
    SiteInfo,
};

/// The model heap's functions, as host faults name them (`F FN ...`), and
/// what went wrong: the runtime's own definitions.
pub use guardlift_runtime::heap::{HostFaultKind as Fault, HOST_FAULT_FUNCS as FAULT_FUNCS};
use guardlift_runtime::heap::{BY_DICT_CODE, BY_OBJ_NEW};
/// Who last wrote a dict slot, as the target records it (`LW` of `R`).
pub use guardlift_runtime::report::LastWriteCode;

/// The last-write record the host runtime would have kept
/// (`Runtime::note_slot_write`'s text for instrumented writers).
pub fn last_write(
    code: u64,
    site: u32,
    value: u64,
    object_id: u64,
    sites: &ModuleSites,
) -> Option<LastWrite> {
    let by = match code {
        c if c == LastWriteCode::ObjNew as u64 => BY_OBJ_NEW.to_string(),
        c if c == LastWriteCode::DictCode as u64 => BY_DICT_CODE.to_string(),
        c if c == LastWriteCode::Site as u64 => {
            let i = site_info(sites, site);
            format!(
                "{} at @{} {}:{} (site {site})",
                i.op, i.function, i.line, i.col
            )
        }
        _ => return None,
    };
    let site = (code == LastWriteCode::Site as u64).then_some(site);
    Some(LastWrite {
        by,
        site,
        value,
        object_id: (object_id != 0).then_some(object_id),
    })
}

/// A site's info, or the runtime's placeholder for an unknown id.
pub fn site_info(sites: &ModuleSites, site: u32) -> SiteInfo {
    sites.get(&site).cloned().unwrap_or(SiteInfo {
        function: "?".into(),
        line: 0,
        col: 0,
        op: "?".into(),
    })
}

/// One `print_*` call of the program.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Print {
    /// `print_i64`.
    I64(i64),
    /// `print_f64`.
    F64(f64),
}

/// A guard's trap, mapped back to its site (trap mode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrapReport {
    /// The guard's check.
    pub kind: ReportKind,
    /// Its site id.
    pub site: u32,
    /// Where the site is in the IR.
    pub info: SiteInfo,
    /// What the guard left in the scratch area, if it was this site's.
    pub observed: Option<Observed>,
}

/// A trap instruction that fired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trap {
    /// `SIGILL` or `SIGTRAP` (the target's numbers are Linux's).
    pub signal: u32,
    /// The trapping PC (a target address).
    pub pc: u64,
    /// `None`: not a guard's trap instruction.
    pub report: Option<TrapReport>,
}

/// How the target run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// The entry returned (`E`).
    Exited,
    /// A violation in abort mode ended it (`A`); the reports say which.
    Aborted,
    /// A trap instruction ended it (`T`, then `A`).
    Trapped(Trap),
    /// It died of a signal (what the JIT would have crashed of); placed at
    /// an IR site in [`TargetRun::fault`] when it was in IR code or a host
    /// function IR code called.
    Crashed {
        /// The signal number (0: unknown).
        signal: u32,
    },
}

/// A fatal signal in IR code or in a host function it called, placed at
/// its IR site: the `host_fault` / `stack_overflow` report the host JIT's
/// fault handler prints ([`TargetFault::report`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetFault {
    /// The end of the stack was hit (`stack_overflow`).
    pub stack_overflow: bool,
    /// The signal number (Linux's, the same on every target).
    pub signal: u32,
    /// The faulting data address (a target address).
    pub address: u64,
    /// The faulting PC (a target address).
    pub pc: u64,
    /// In a host function called at the site, not in IR code itself.
    pub in_host: bool,
    /// The IR site: the instruction executing or the call into host code.
    pub at: IrPc,
    /// The IR calls outside the site, innermost first (the backtrace after `#0`).
    pub outer: Vec<String>,
    /// A fatal division fault (`D`: `div_by_zero`, `int_overflow`), not a signal.
    pub arith: Option<ReportKind>,
    /// A fault the model heap found in a host function called at the site
    /// (`F` with a site), not a signal.
    pub host: Option<HostCallFault>,
}

impl TargetFault {
    /// The report, formatted (human or JSON) as the host's fault handler does.
    pub fn report(&self) -> FaultReport<'_> {
        FaultReport {
            stack_overflow: self.stack_overflow,
            function: &self.at.function,
            line: self.at.line,
            col: self.at.col,
            op: self.at.op,
            cause: match (self.arith, &self.host) {
                (Some(k), _) => FaultCause::Arith(k),
                (None, Some(h)) => FaultCause::Host(h),
                (None, None) => FaultCause::Signal {
                    signal: crate::signal_name(self.signal),
                    address: Some(self.address as usize),
                    pc: Some(self.pc as usize),
                    in_host: self.in_host,
                },
            },
            backtrace: guardlift_runtime::backtrace::enabled()
                .then_some(OuterFrames::Frames(&self.outer)),
        }
    }
}

/// The IR instruction at a PC of the target's IR code (`"?"`, line 0 where
/// Cranelift kept no source location, as on the host).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IrPc {
    /// The IR function (without the object's symbol prefix).
    pub function: String,
    /// Line of the IR instruction (0: no source location).
    pub line: u32,
    /// Its column.
    pub col: u32,
    /// Its opcode.
    pub op: &'static str,
}

impl IrPc {
    /// The frame as backtraces print it.
    fn frame(&self) -> String {
        backtrace::ir_frame(&self.function, self.line, self.col, self.op)
    }

    fn is(&self, site: &SiteInfo) -> bool {
        self.function == site.function && self.line == site.line && self.col == site.col
    }
}

/// Everything a target run told the host.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetRun {
    /// The `print_*` calls, in order.
    pub prints: Vec<Print>,
    /// The raw result bits (`V`), when the entry returned.
    pub result: Option<u64>,
    /// The deduplicated reports, in first-occurrence order.
    pub reports: Vec<Report>,
    /// The first host fault of the model heap.
    pub host_fault: Option<HostFault>,
    /// The fatal signal that ended the run, placed at its IR site (`C`).
    pub fault: Option<TargetFault>,
    /// How it ended.
    pub end: End,
}

fn hex(field: Option<&str>, line: &str) -> Result<u64, String> {
    let f = field.ok_or_else(|| format!("short line `{line}`"))?;
    u64::from_str_radix(f, 16).map_err(|_| format!("bad number `{f}` in `{line}`"))
}

/// An optional site field: hex, or `-`; the id and its info.
fn opt_site(
    field: Option<&str>,
    line: &str,
    sites: &ModuleSites,
) -> Result<Option<(u32, SiteInfo)>, String> {
    match field {
        Some("-") => Ok(None),
        f => {
            let s = hex(f, line)?;
            let s = u32::try_from(s).map_err(|_| format!("bad site in `{line}`"))?;
            Ok(Some((s, site_info(sites, s))))
        }
    }
}

/// The `OBJS` fields ending a report line: `M` then M pairs `ID COUNT`
/// (none when the line ends first).
fn object_counts<'a>(
    it: &mut impl Iterator<Item = &'a str>,
    line: &str,
) -> Result<Vec<ObjectCount>, String> {
    let m = match it.next() {
        None => 0,
        f => hex(f, line)?,
    };
    if m > MAX_OBJECTS as u64 {
        return Err(format!("too many objects in `{line}`"));
    }
    let mut out = Vec::with_capacity(m as usize);
    for _ in 0..m {
        let (object_id, count) = (hex(it.next(), line)?, hex(it.next(), line)?);
        out.push(ObjectCount { object_id, count });
    }
    Ok(out)
}

/// The `OBJ` fields `ID FREED ALLOC FREE` of a line (None for id 0).
fn object_note<'a>(
    it: &mut impl Iterator<Item = &'a str>,
    line: &str,
    sites: &ModuleSites,
) -> Result<Option<ObjectNote>, String> {
    let id = hex(it.next(), line)?;
    let freed = hex(it.next(), line)? != 0;
    let alloc_site = opt_site(it.next(), line, sites)?;
    let free_site = opt_site(it.next(), line, sites)?;
    Ok((id != 0).then(|| ObjectNote {
        id,
        site_ids: [
            alloc_site.as_ref().map(|s| s.0),
            free_site.as_ref().map(|s| s.0),
        ],
        alloc_site: alloc_site.map(|s| s.1),
        free_site: free_site.map(|s| s.1),
        freed,
        stacks: Default::default(),
    }))
}

/// A PC in IR code: `FN OFF` or `- -` (see the module docs).
fn code_pc<'a>(
    it: &mut impl Iterator<Item = &'a str>,
    line: &str,
    code: &[CodeFunction],
) -> Result<Option<IrPc>, String> {
    let f = it.next();
    if f == Some("-") {
        return match it.next() {
            Some("-") => Ok(None),
            _ => Err(format!("bad code address in `{line}`")),
        };
    }
    let (fi, off) = (hex(f, line)?, hex(it.next(), line)?);
    let func = usize::try_from(fi)
        .ok()
        .and_then(|i| code.get(i))
        .ok_or_else(|| format!("bad function index in `{line}`"))?;
    let loc = usize::try_from(off).ok().and_then(|o| func.loc(o));
    let (line, col, op) = loc.map_or((0, 0, "?"), |l| (l.line, l.col, l.op));
    let name = &func.function;
    Ok(Some(IrPc {
        function: name.strip_prefix(FUNC_PREFIX).unwrap_or(name).to_string(),
        line,
        col,
        op,
    }))
}

/// `N` and N PCs ending a line (none when the line ends first).
fn code_pcs<'a>(
    it: &mut impl Iterator<Item = &'a str>,
    line: &str,
    code: &[CodeFunction],
) -> Result<Vec<Option<IrPc>>, String> {
    let n = match it.next() {
        None => 0,
        f => hex(f, line)?,
    };
    if n > MAX_FRAMES as u64 {
        return Err(format!("too many frames in `{line}`"));
    }
    let mut pcs = Vec::with_capacity(n as usize);
    for _ in 0..n {
        pcs.push(code_pc(it, line, code)?);
    }
    Ok(pcs)
}

/// The backtrace of a report at `info`: its own frame, then the IR callers
/// the target found (`N` PCs ending the line; the first must be the
/// report's own call, else only the site is given), as the host JIT lists them.
fn report_backtrace<'a>(
    it: &mut impl Iterator<Item = &'a str>,
    line: &str,
    code: &[CodeFunction],
    info: &SiteInfo,
) -> Result<Vec<String>, String> {
    let pcs = code_pcs(it, line, code)?;
    if !backtrace::enabled() {
        return Ok(Vec::new());
    }
    let mut bt = vec![backtrace::ir_frame(
        &info.function,
        info.line,
        info.col,
        &info.op,
    )];
    if pcs
        .first()
        .is_some_and(|p| p.as_ref().is_some_and(|p| p.is(info)))
    {
        bt.extend(pcs.iter().skip(1).flatten().map(IrPc::frame));
    }
    Ok(bt)
}

/// A `C` line (see the module docs).
fn crash<'a>(
    it: &mut impl Iterator<Item = &'a str>,
    line: &str,
    code: &[CodeFunction],
) -> Result<TargetFault, String> {
    let mut n = [0u64; 5];
    for x in &mut n {
        *x = hex(it.next(), line)?;
    }
    let [signal, address, pc, in_host, overflow] = n;
    let site = code_pc(it, line, code)?;
    let alt = code_pc(it, line, code)?;
    let (at, at_alt) = match (site, alt) {
        (Some(s), Some(a)) if s.line == 0 => (a, true),
        (Some(s), _) => (s, false),
        (None, _) => return Err(format!("a fault without a site in `{line}`")),
    };
    let leaf = match it.next() {
        None => false,
        f => hex(f, line)? != 0,
    };
    let mut outer = code_pcs(it, line, code)?;
    // A fault in a leaf's prologue: the link register's call is the site
    // and heads the walk too.
    if at_alt && leaf && !outer.is_empty() {
        outer.remove(0);
    }
    // (x86_64 sends one frame more for that case: the chain stays full.)
    outer.truncate(MAX_FRAMES - 1);
    Ok(TargetFault {
        outer: outer.iter().flatten().map(IrPc::frame).collect(),
        stack_overflow: overflow != 0,
        signal: u32::try_from(signal).map_err(|_| format!("bad signal in `{line}`"))?,
        address,
        pc,
        in_host: in_host != 0,
        at,
        arith: None,
        host: None,
    })
}

/// A `D` line (see the module docs).
fn arith<'a>(
    it: &mut impl Iterator<Item = &'a str>,
    line: &str,
    code: &[CodeFunction],
) -> Result<TargetFault, String> {
    let kind = u8::try_from(hex(it.next(), line)?)
        .ok()
        .and_then(ReportKind::from_code)
        .filter(|k| k.is_arith())
        .ok_or_else(|| format!("bad arithmetic fault kind in `{line}`"))?;
    let at = code_pc(it, line, code)?
        .ok_or_else(|| format!("an arithmetic fault without a site in `{line}`"))?;
    let outer = code_pcs(it, line, code)?;
    Ok(TargetFault {
        outer: outer.iter().flatten().map(IrPc::frame).collect(),
        stack_overflow: false,
        signal: 0,
        address: 0,
        pc: 0,
        in_host: false,
        at,
        arith: Some(kind),
        host: None,
    })
}

/// An `F` line (see the module docs): the host fault, and where the run
/// died of it when it happened in an IR call.
fn host_fault_line<'a>(
    it: &mut impl Iterator<Item = &'a str>,
    line: &str,
    sites: &ModuleSites,
    code: &[CodeFunction],
) -> Result<(HostFault, Option<TargetFault>), String> {
    let func = hex(it.next(), line)?;
    let fault = hex(it.next(), line)?;
    let (a, b) = (hex(it.next(), line)?, hex(it.next(), line)?);
    let func = *FAULT_FUNCS
        .get(func as usize)
        .ok_or_else(|| format!("bad fault function in `{line}`"))?;
    let fault = Fault::from_code(fault).ok_or_else(|| format!("bad fault code in `{line}`"))?;
    let obj = hex(it.next(), line)?;
    // The object as the runtime knew it (the `OBJ` fields of `R`).
    let note = object_note(it, line, sites)?;
    let host = fault.host_fault(func, a, b);
    let at = code_pc(it, line, code)?;
    let outer = code_pcs(it, line, code)?;
    let placed = at.map(|at| TargetFault {
        outer: outer.iter().flatten().map(IrPc::frame).collect(),
        stack_overflow: false,
        signal: 0,
        address: 0,
        pc: 0,
        in_host: true,
        at,
        arith: None,
        host: Some(HostCallFault {
            fault: host.clone(),
            object: (obj != 0).then_some((obj, note)),
        }),
    });
    Ok((host, placed))
}

/// Parses the target's stdout. `sites` is the module's site table
/// ([`guardlift_ir::Module::site_infos`]) so reports name their sites;
/// `code` the program's code table (PCs in IR code are mapped through it).
/// The flag is false when neither `E`, `A`, `S` nor `C` was seen (the run is
/// then `End::Crashed { signal: 0 }`; the caller decides from the exit status).
pub fn parse(
    stdout: &str,
    sites: &ModuleSites,
    code: &[CodeFunction],
) -> Result<(TargetRun, bool), String> {
    let mut run = TargetRun {
        prints: Vec::new(),
        result: None,
        reports: Vec::new(),
        host_fault: None,
        fault: None,
        end: End::Crashed { signal: 0 },
    };
    let mut trap = None;
    let mut complete = false;
    for line in stdout.lines() {
        let mut it = line.split(' ');
        // One letter, `guardlift_abi::protocol`'s (the target runtime
        // writes the same constants).
        let tag = match it.next().map(str::as_bytes) {
            Some(&[letter]) => letter,
            _ => 0,
        };
        match tag {
            ev::PRINT => {
                let k = it.next();
                let bits = hex(it.next(), line)?;
                run.prints.push(match k {
                    Some("i") => Print::I64(bits as i64),
                    Some("f") => Print::F64(f64::from_bits(bits)),
                    _ => return Err(format!("bad print line `{line}`")),
                });
            }
            ev::FAULT => {
                let (host, fault) = host_fault_line(&mut it, line, sites, code)?;
                if let Some(f) = fault {
                    // In an IR call: the run died there (spec §6.2).
                    run.fault = Some(f);
                    run.end = End::Crashed { signal: 0 };
                    complete = true;
                }
                if run.host_fault.is_none() {
                    run.host_fault = Some(host);
                }
            }
            ev::REPORT => {
                let mut n = [0u64; 10];
                for x in &mut n {
                    *x = hex(it.next(), line)?;
                }
                let [kind, site, a, b, c, lw, lw_site, lw_value, lw_object, count] = n;
                let kind = u8::try_from(kind)
                    .ok()
                    .and_then(ReportKind::from_code)
                    .ok_or_else(|| format!("bad report kind in `{line}`"))?;
                let site = u32::try_from(site).map_err(|_| format!("bad site in `{line}`"))?;
                let observed = decode_observed(kind, [a, b, c]);
                let info = site_info(sites, site);
                let last_write = match observed {
                    Observed::Dict { .. } if observes_the_slot(&info.op) => {
                        last_write(lw, lw_site as u32, lw_value, lw_object, sites)
                    }
                    _ => None,
                };
                let object = object_note(&mut it, line, sites)?;
                let backtrace = report_backtrace(&mut it, line, code, &info)?;
                let objects = object_counts(&mut it, line)?;
                run.reports.push(Report {
                    kind,
                    site,
                    info,
                    observed,
                    last_write,
                    object,
                    objects,
                    count,
                    backtrace,
                });
            }
            ev::TRAP => {
                let mut n = [0u64; 9];
                for x in &mut n {
                    *x = hex(it.next(), line)?;
                }
                let [signal, pc, found, kind, site, have, a, b, c] = n;
                let report = if found != 0 {
                    let kind = u8::try_from(kind)
                        .ok()
                        .and_then(ReportKind::from_code)
                        .ok_or_else(|| format!("bad trap kind in `{line}`"))?;
                    let site = u32::try_from(site).map_err(|_| format!("bad site in `{line}`"))?;
                    Some(TrapReport {
                        kind,
                        site,
                        info: site_info(sites, site),
                        observed: (have != 0).then(|| decode_observed(kind, [a, b, c])),
                    })
                } else {
                    None
                };
                trap = Some(Trap {
                    signal: signal as u32,
                    pc,
                    report,
                });
            }
            ev::CRASH => {
                let f = crash(&mut it, line, code)?;
                run.end = End::Crashed { signal: f.signal };
                run.fault = Some(f);
                complete = true;
            }
            ev::ARITH => {
                let f = arith(&mut it, line, code)?;
                run.end = End::Crashed { signal: 0 };
                run.fault = Some(f);
                complete = true;
            }
            ev::SIGNAL => {
                run.end = End::Crashed {
                    signal: hex(it.next(), line)? as u32,
                };
                complete = true;
            }
            ev::RESULT => run.result = Some(hex(it.next(), line)?),
            ev::ABORT => {
                run.end = match trap.take() {
                    Some(t) => End::Trapped(t),
                    None => End::Aborted,
                };
                complete = true;
            }
            ev::END => {
                run.end = End::Exited;
                complete = true;
            }
            _ => return Err(format!("unexpected line `{line}`")),
        }
    }
    Ok((run, complete))
}

#[cfg(test)]
mod tests {
    use super::*;
    use guardlift_runtime::heap::Heap;
    use guardlift_runtime::internals::*;
    use guardlift_runtime::layout::DictLayout;
    use guardlift_runtime::{Mode, Runtime, RuntimeConfig};

    /// The fault texts are the model heap's own.
    #[test]
    fn fault_messages_match_the_model_heap() {
        let mut h = Heap::new(DictLayout::Phoenix);
        let o = h.obj_new(2).unwrap();
        let e = h.store_attr_slow(o, 5, 1).unwrap_err();
        assert_eq!(e, Fault::AttrRange.host_fault("store_attr_slow", 5, 2));
        h.fault_clear_lsb(o).unwrap();
        // SAFETY: the slot of a live object of this heap (real memory).
        let word = unsafe { *(DictLayout::Phoenix.slot_addr(o) as *const u64) };
        let e = h.load_attr_slow(o, 0).unwrap_err();
        assert_eq!(e, Fault::Corrupted.host_fault("load_attr_slow", o, word));
        h.obj_free(o).unwrap();
        let e = h.obj_free(o).unwrap_err();
        assert_eq!(e, Fault::DoubleFree.host_fault("obj_free", o, 0));
        let e = h.fault_clear_lsb(o).unwrap_err();
        assert_eq!(e, Fault::NotLive.host_fault("fault_clear_lsb", o, 0));
        // Never an object: not a double free.
        let e = h.obj_free(o + 8).unwrap_err();
        assert_eq!(e, Fault::NotLive.host_fault("obj_free", o + 8, 0));
        let e = h.obj_new(-1).unwrap_err();
        assert_eq!(e, Fault::CountRange.host_fault("obj_new", -1i64 as u64, 0));
    }

    /// The last-write texts are the runtime's own.
    #[test]
    fn last_write_texts_match_the_runtime() {
        let mut h = Heap::new(DictLayout::Cpython312);
        let o = h.obj_new(1).unwrap();
        let slot = DictLayout::Cpython312.slot_addr(o);
        let w = h.last_write(slot).unwrap();
        assert_eq!(last_write(1, 0, w.value, 1, &ModuleSites::new()), Some(w));
        h.obj_dictify(o).unwrap();
        let w = h.last_write(slot).unwrap();
        assert_eq!(last_write(2, 0, w.value, 1, &ModuleSites::new()), Some(w));

        let rt = Runtime::new(RuntimeConfig {
            mode: Mode::Recover,
            ..Default::default()
        });
        let info = SiteInfo {
            function: "f".into(),
            line: 3,
            col: 5,
            op: "dict_slot.store".into(),
        };
        let sites: ModuleSites = [(1, info.clone())].into();
        rt.register_sites(sites.clone()).unwrap();
        rt.note_slot_write(1, 0x1000, 0x96);
        let w = rt.with_heap(|h| h.last_write(DictLayout::Cpython312.slot_addr(0x1000)));
        assert_eq!(last_write(3, 1, 0x96, 0, &sites), w);
        assert_eq!(last_write(0, 0, 0, 0, &sites), None);
    }

    /// `@__glir_f`: offsets 0..8 are line 3 (a load), 8..16 line 4 (a call).
    fn code() -> Vec<CodeFunction> {
        use guardlift_runtime::codemap::PcLoc;
        let loc = |start, line, op| PcLoc {
            start,
            end: start + 8,
            line,
            col: 5,
            op,
        };
        vec![CodeFunction {
            start: 0,
            len: 0x20,
            function: format!("{FUNC_PREFIX}f"),
            locs: vec![loc(0, 3, "load"), loc(8, 4, "call")],
            instrumented: false,
        }]
    }

    #[test]
    fn parses_faults_and_report_frames() {
        let sites: ModuleSites = [(
            0,
            SiteInfo {
                function: "f".into(),
                line: 3,
                col: 5,
                op: "load".into(),
            },
        )]
        .into();
        let (r, complete) = parse("C b 18 4008e8 0 0 0 2 - -\n", &sites, &code()).unwrap();
        assert!(complete);
        assert_eq!(r.end, End::Crashed { signal: 11 });
        let f = r.fault.unwrap();
        assert_eq!(
            (f.at.function.as_str(), f.at.line, f.at.op),
            ("f", 3, "load")
        );
        assert_eq!(
            (f.address, f.pc, f.in_host, f.stack_overflow),
            (0x18, 0x4008e8, false, false)
        );
        assert!(f.report().to_string().starts_with(
            "==guardlift== ERROR: host_fault at @f 3:5 (load)\n    \
                 SIGSEGV at address 0x18, pc 0x4008e8\n    #0 @f 3:5 (load)\n"
        ));
        // No source location at the PC (a prologue): the link register's call.
        let (r, _) = parse("C b 10 9 0 1 0 1a 0 a\n", &sites, &code()).unwrap();
        let f = r.fault.unwrap();
        assert!(f.stack_overflow);
        assert_eq!((f.at.line, f.at.op), (4, "call"));
        assert_eq!(f.outer, Vec::<String>::new());
        // The walk's calls follow the site; a leaf's link register heads
        // them and is dropped when it is the site already.
        let (r, _) = parse("C b 18 4008e8 0 0 0 2 - - 0 2 0 a 0 c\n", &sites, &code()).unwrap();
        assert_eq!(r.fault.unwrap().outer, ["@f 4:5 (call)", "@f 4:5 (call)"]);
        let (r, _) = parse("C b 10 9 0 1 0 1a 0 a 1 2 0 a 0 c\n", &sites, &code()).unwrap();
        let f = r.fault.unwrap();
        assert_eq!(f.outer, ["@f 4:5 (call)"]);
        assert!(f
            .report()
            .to_string()
            .contains("    #0 @f 4:5 (call)\n    #1 @f 4:5 (call)\n"));
        assert!(parse("C b 10 9 0 1 - - - -\n", &sites, &code()).is_err());
        assert!(
            parse("C b 10 9 0 1 5 0 - -\n", &sites, &code()).is_err(),
            "bad function"
        );
        // A report's frames: its own call first, then the callers.
        let line = "R 1 0 1 2 0 0 0 0 0 1 0 0 - - 2 0 2 0 a\nE\n";
        let (r, _) = parse(line, &sites, &code()).unwrap();
        assert_eq!(r.reports[0].backtrace, ["@f 3:5 (load)", "@f 4:5 (call)"]);
        // A first frame that is not the report's site: the site alone.
        let line = "R 1 0 1 2 0 0 0 0 0 1 0 0 - - 1 0 a\nE\n";
        let (r, _) = parse(line, &sites, &code()).unwrap();
        assert_eq!(r.reports[0].backtrace, ["@f 3:5 (load)"]);
        assert!(parse("R 1 0 1 2 0 0 0 0 0 1 0 0 - - 41\nE\n", &sites, &code()).is_err());
    }

    #[test]
    fn parses_a_run() {
        let sites: ModuleSites = [(
            0,
            SiteInfo {
                function: "main".into(),
                line: 27,
                col: 5,
                op: "store_attr".into(),
            },
        )]
        .into();
        let out = "P i ffffffffffffffff\nP f 3ff0000000000000\nR 0 0 10 96 0 1 0 97 2 7 3 0 0 -\nF 4 2 10 96 10 3 0 0 - - - 0\nV 2a\nE\n";
        let (r, complete) = parse(out, &sites, &[]).unwrap();
        assert!(complete);
        assert_eq!(r.prints, vec![Print::I64(-1), Print::F64(1.0)]);
        assert_eq!(r.result, Some(42));
        assert_eq!(r.end, End::Exited);
        assert_eq!(r.reports.len(), 1);
        assert_eq!(r.reports[0].count, 7);
        assert_eq!(r.reports[0].info.line, 27);
        assert_eq!(r.reports[0].last_write.as_ref().unwrap().by, "obj_new");
        assert_eq!(r.reports[0].last_write.as_ref().unwrap().object_id, Some(2));
        let obj = r.reports[0].object.as_ref().unwrap();
        assert_eq!((obj.id, obj.freed), (3, false));
        assert_eq!(obj.alloc_site.as_ref().unwrap().line, 27);
        assert_eq!(obj.free_site, None);
        assert_eq!(r.host_fault.as_ref().unwrap().func, "load_attr_slow");
        // Not in an IR call: recorded, the run goes on.
        assert_eq!(r.fault, None);
        // In an IR call (`- -` is none): the run died there, with the object.
        let code = vec![CodeFunction {
            start: 0,
            len: 0x40,
            function: "main".into(),
            locs: vec![guardlift_runtime::codemap::PcLoc {
                start: 0,
                end: 0x40,
                line: 27,
                col: 5,
                op: "store_attr",
            }],
            instrumented: false,
        }];
        let (r, complete) = parse("F 5 2 10 96 10 3 1 0 - 0 8 0\n", &sites, &code).unwrap();
        assert!(complete);
        assert_eq!(r.end, End::Crashed { signal: 0 });
        let f = r.fault.unwrap();
        assert_eq!((f.at.line, f.in_host), (27, true));
        let h = f.host.unwrap();
        assert_eq!(h.fault.func, "store_attr_slow");
        let (addr, note) = h.object.unwrap();
        assert_eq!(addr, 0x10);
        let note = note.unwrap();
        assert_eq!((note.id, note.freed), (3, true));
        assert_eq!(note.alloc_site.unwrap().line, 27);
        let (r, complete) = parse("T 4 1234 1 0 0 1 10 96 0\nA\n", &sites, &[]).unwrap();
        assert!(complete);
        let End::Trapped(t) = r.end else {
            panic!("{:?}", r.end)
        };
        assert_eq!((t.signal, t.pc), (4, 0x1234));
        let tr = t.report.unwrap();
        assert_eq!(tr.info.line, 27);
        assert_eq!(
            tr.observed,
            Some(Observed::Dict {
                object: 0x10,
                value: 0x96
            })
        );
        // A lifetime report: observed (object, address, width), the freed object.
        let (r, _) = parse("R 4 0 10 18 8 0 0 0 0 1 1 1 0 0\nE\n", &sites, &[]).unwrap();
        let rep = &r.reports[0];
        assert_eq!(rep.kind, ReportKind::UseAfterFree);
        assert_eq!(
            rep.observed,
            Observed::Lifetime {
                object: 0x10,
                address: 0x18,
                width: 8
            }
        );
        let obj = rep.object.as_ref().unwrap();
        assert!(obj.freed);
        assert_eq!(obj.free_site.as_ref().unwrap().line, 27);
        assert!(parse("R 4 0 10 18 8 0 0 0 0 1 1 1 0\nE\n", &sites, &[]).is_err());
        let (r, _) = parse("T 4 1234 0 0 0 0 0 0 0\nA\n", &sites, &[]).unwrap();
        assert!(matches!(r.end, End::Trapped(Trap { report: None, .. })));
        assert_eq!(parse("A\n", &sites, &[]).unwrap().0.end, End::Aborted);
        assert!(!parse("P i 1\n", &sites, &[]).unwrap().1);
        assert!(parse("Q\n", &sites, &[]).is_err());
    }
}
