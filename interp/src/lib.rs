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

use guardlift_ir::analysis::{adstack_capacities, resolve_builtin};
use guardlift_ir::elide::redundant_underflow_checks;
use guardlift_ir::literal::{canonical_f32_bits, canonical_f64_bits, norm_int};
use guardlift_ir::{
    BinOp, Block, BlockCall, Callee, CheckKind, Checks, ConvOp, Diagnostic, FloatCC, FuncId, Inst,
    InstKind, IntCC, Module, ObjCall, SrcLoc, Type, UnOp, Value,
};
use guardlift_runtime::abi::Builtin;
use guardlift_runtime::adstack::{self, AdElem};
use guardlift_runtime::layout::{self, tag_ok};
use guardlift_runtime::watch::{self, IrFrame};
use guardlift_runtime::{Mode, Observed, ReportKind, Runtime, Verdict};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A host function the embedder provides for a non-built-in extern: raw
/// bits in (see `guardlift_ir::literal`), raw bits out (ignored for void).
pub type HostFn = Arc<dyn Fn(&[u64]) -> u64 + Send + Sync>;

/// Default limit on nested calls.
pub const DEFAULT_MAX_DEPTH: usize = 100_000;

/// Why a run did not produce a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterpError {
    #[error("{0}")]
    Link(Diagnostic),
    #[error("no function @{0}")]
    NoSuchFunction(String),
    #[error("@{func} takes {want} argument(s), got {got}")]
    ArgCount {
        func: String,
        want: usize,
        got: usize,
    },
    /// What would have been a crash in native code.
    #[error("{loc}: fatal: {msg}")]
    Fault { loc: SrcLoc, msg: String },
    /// A call deeper than the depth limit: what native code reports as
    /// `stack_overflow` (spec §6.2). `loc` is the call's.
    #[error("{loc}: fatal: stack overflow: call depth limit {limit} exceeded")]
    StackOverflow { loc: SrcLoc, limit: usize },
    /// A check failed in abort or trap mode (the runtime did not end the process).
    #[error("aborted after a violation")]
    Aborted,
    /// An analysis' claim failed while running (a bug of guardlift).
    #[error("{loc}: internal error: {msg}")]
    Internal { loc: SrcLoc, msg: String },
}

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
}

struct AdBuf {
    mem: Vec<u8>,
    elem: AdElem,
    cap: u32,
}

impl AdBuf {
    fn new(elem: AdElem, cap: u32) -> Self {
        AdBuf {
            mem: vec![0; adstack::buffer_bytes(elem, cap) as usize],
            elem,
            cap,
        }
    }
    fn rd(&self, off: u64, bytes: u32) -> u64 {
        let o = off as usize;
        match bytes {
            4 => u32::from_ne_bytes(self.mem[o..o + 4].try_into().unwrap_or([0; 4])) as u64,
            _ => u64::from_ne_bytes(self.mem[o..o + 8].try_into().unwrap_or([0; 8])),
        }
    }
    fn wr(&mut self, off: u64, bytes: u32, v: u64) {
        let o = off as usize;
        match bytes {
            4 => self.mem[o..o + 4].copy_from_slice(&(v as u32).to_ne_bytes()),
            _ => self.mem[o..o + 8].copy_from_slice(&v.to_ne_bytes()),
        }
    }
    fn len(&self) -> u64 {
        self.rd(adstack::ADSTACK_COUNT_OFFSET as u64, 8)
    }
    fn set_len(&mut self, n: u64) {
        self.wr(adstack::ADSTACK_COUNT_OFFSET as u64, 8, n)
    }
}

struct Frame {
    func: FuncId,
    block: usize,
    ip: usize,
    vals: Vec<u64>,
    stacks: Vec<AdBuf>,
    /// (block, inst index) of an alloc → index in `stacks`.
    alloc_slot: HashMap<(usize, usize), usize>,
    /// Where the caller wants the result.
    ret_dst: Option<Value>,
}

fn fault<T>(loc: SrcLoc, msg: impl Into<String>) -> Result<T, InterpError> {
    Err(InterpError::Fault {
        loc,
        msg: msg.into(),
    })
}

fn f32v(b: u64) -> f32 {
    f32::from_bits(b as u32)
}
fn f64v(b: u64) -> f64 {
    f64::from_bits(b)
}
fn fbits32(x: f32) -> u64 {
    x.to_bits() as u64
}

fn fmin64(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == b {
        if a.is_sign_negative() {
            a
        } else {
            b
        }
    } else {
        a.min(b)
    }
}
fn fmax64(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == b {
        if a.is_sign_positive() {
            a
        } else {
            b
        }
    } else {
        a.max(b)
    }
}
fn fmin32(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a == b {
        if a.is_sign_negative() {
            a
        } else {
            b
        }
    } else {
        a.min(b)
    }
}
fn fmax32(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a == b {
        if a.is_sign_positive() {
            a
        } else {
            b
        }
    } else {
        a.max(b)
    }
}

fn mask(ty: Type, x: u64) -> u64 {
    match ty.bits() {
        8 => x & 0xff,
        32 => x & 0xffff_ffff,
        _ => x,
    }
}

fn int_binop(op: BinOp, ty: Type, a: u64, b: u64) -> u64 {
    let bits = ty.bits();
    let sh = (b & (bits as u64 - 1)) as u32;
    let r = match op {
        BinOp::Iadd => a.wrapping_add(b),
        BinOp::Isub => a.wrapping_sub(b),
        BinOp::Imul => a.wrapping_mul(b),
        BinOp::Band => a & b,
        BinOp::Bor => a | b,
        BinOp::Bxor => a ^ b,
        BinOp::Ishl => a << sh,
        BinOp::Ushr => mask(ty, a) >> sh,
        BinOp::Sshr => ((norm_int(ty, a) as i64) >> sh) as u64,
        _ => 0,
    };
    norm_int(ty, r)
}

/// fadd … fmax; a NaN result is the canonical NaN (spec §3), as compiled
/// code makes it (Cranelift's NaN canonicalization).
fn float_binop(op: BinOp, ty: Type, a: u64, b: u64) -> u64 {
    if ty == Type::F32 {
        let (x, y) = (f32v(a), f32v(b));
        canonical_f32_bits(match op {
            BinOp::Fadd => x + y,
            BinOp::Fsub => x - y,
            BinOp::Fmul => x * y,
            BinOp::Fdiv => x / y,
            BinOp::Fmin => fmin32(x, y),
            _ => fmax32(x, y),
        }) as u64
    } else {
        let (x, y) = (f64v(a), f64v(b));
        canonical_f64_bits(match op {
            BinOp::Fadd => x + y,
            BinOp::Fsub => x - y,
            BinOp::Fmul => x * y,
            BinOp::Fdiv => x / y,
            BinOp::Fmin => fmin64(x, y),
            _ => fmax64(x, y),
        })
    }
}

fn icmp(cc: IntCC, ty: Type, a: u64, b: u64) -> bool {
    let (sa, sb) = (norm_int(ty, a) as i64, norm_int(ty, b) as i64);
    let (ua, ub) = (mask(ty, a), mask(ty, b));
    match cc {
        IntCC::Eq => ua == ub,
        IntCC::Ne => ua != ub,
        IntCC::Slt => sa < sb,
        IntCC::Sle => sa <= sb,
        IntCC::Sgt => sa > sb,
        IntCC::Sge => sa >= sb,
        IntCC::Ult => ua < ub,
        IntCC::Ule => ua <= ub,
        IntCC::Ugt => ua > ub,
        IntCC::Uge => ua >= ub,
    }
}

fn fcmp(cc: FloatCC, ty: Type, a: u64, b: u64) -> bool {
    let (x, y) = if ty == Type::F32 {
        (f32v(a) as f64, f32v(b) as f64)
    } else {
        (f64v(a), f64v(b))
    };
    match cc {
        FloatCC::Eq => x == y,
        FloatCC::Ne => x != y,
        FloatCC::Lt => x < y,
        FloatCC::Le => x <= y,
        FloatCC::Gt => x > y,
        FloatCC::Ge => x >= y,
    }
}

fn conv(op: ConvOp, from: Type, to: Type, a: u64) -> u64 {
    match op {
        ConvOp::Sext => norm_int(to, norm_int(from, a)),
        ConvOp::Uext => norm_int(to, mask(from, a)),
        ConvOp::Ireduce => norm_int(to, a),
        ConvOp::FcvtFromSint => {
            let x = norm_int(from, a) as i64;
            if to == Type::F32 {
                fbits32(x as f32)
            } else {
                (x as f64).to_bits()
            }
        }
        ConvOp::FcvtToSint => {
            let x = if from == Type::F32 {
                f32v(a) as f64
            } else {
                f64v(a)
            };
            let v = match to.bits() {
                8 => x as i8 as i64,
                32 => x as i32 as i64,
                _ => x as i64,
            };
            v as u64
        }
        ConvOp::Fpromote => canonical_f64_bits(f32v(a) as f64),
        ConvOp::Fdemote => canonical_f32_bits(f64v(a) as f32) as u64,
        ConvOp::Bitcast => match (from.bits(), to.is_float()) {
            (32, true) => mask(Type::I32, a),
            (32, false) => norm_int(Type::I32, a),
            _ => a,
        },
    }
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
            match resolve_builtin(e).map_err(InterpError::Link)? {
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
        Ok(Interpreter {
            m,
            _sites: guardlift_runtime::SiteRegistration::new(rt.clone(), site_base),
            rt,
            site_base,
            externs,
            max_depth: DEFAULT_MAX_DEPTH,
            elision: cfg!(debug_assertions).then(|| elision_claims(m)),
            verify_elision: false,
        })
    }

    /// With `on`, an underflow check the elision analysis claims cannot
    /// fail that fails while running ends the run with
    /// [`InterpError::Internal`] (the analysis is unsound), in any build.
    pub fn set_verify_elision(&mut self, on: bool) {
        self.verify_elision = on;
        if on && self.elision.is_none() {
            self.elision = Some(elision_claims(self.m));
        }
    }

    /// Replaces the claims checked while running (per function, the
    /// `(block, inst)` of underflow checks that cannot fail): for tests
    /// that the verification catches a false claim.
    #[doc(hidden)]
    pub fn set_elision_claims(&mut self, claims: Vec<HashSet<(u32, u32)>>) {
        self.elision = Some(claims);
    }

    /// An underflow check at `at` of `func` fails: was it claimed not to?
    fn check_elision(
        &self,
        func: FuncId,
        at: (usize, usize),
        loc: SrcLoc,
    ) -> Result<(), InterpError> {
        let at = (at.0 as u32, at.1 as u32);
        if !self
            .elision
            .as_ref()
            .and_then(|c| c.get(func.0 as usize))
            .is_some_and(|c| c.contains(&at))
        {
            return Ok(());
        }
        let msg = format!(
            "@{}: the underflow check at block {} inst {} was elided as one that cannot fail, and it fails",
            self.m.func(func).name, at.0, at.1
        );
        if self.verify_elision {
            return Err(InterpError::Internal { loc, msg });
        }
        debug_assert!(false, "{loc}: {msg}");
        Ok(())
    }

    /// Changes the nested-call limit.
    pub fn set_max_depth(&mut self, depth: usize) {
        self.max_depth = depth;
    }

    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.rt
    }

    fn new_frame(&self, func: FuncId, args: &[u64], ret_dst: Option<Value>) -> Frame {
        let f = self.m.func(func);
        let mut vals = vec![0u64; f.values.len()];
        for (p, a) in f.params.iter().zip(args) {
            vals[p.0 as usize] = *a;
        }
        Frame {
            func,
            block: 0,
            ip: 0,
            vals,
            stacks: Vec::new(),
            alloc_slot: HashMap::new(),
            ret_dst,
        }
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
            match self.step_frame(&mut stack)? {
                Some(ret) => return Ok(ret),
                None => continue,
            }
        }
    }

    /// Reports through the runtime; `callers` (outermost first) give the
    /// report's backtrace beyond the reporting frame.
    fn report(
        &self,
        callers: &[Frame],
        kind: ReportKind,
        site: u32,
        obs: Observed,
    ) -> Result<(), InterpError> {
        let outer = || self.call_frames(callers);
        let report = || self.rt.report(kind, self.site_base + site, obs);
        match guardlift_runtime::backtrace::with_outer_frames(&outer, report) {
            Verdict::Recover => Ok(()),
            Verdict::Abort => Err(InterpError::Aborted),
        }
    }

    /// What a check's outcome means here: `Ok(true)` go on, `Ok(false)`
    /// apply the recover effect, `Err` the run aborted.
    fn go_on(&self, r: Result<(), Verdict>) -> Result<bool, InterpError> {
        match r {
            Ok(()) => Ok(true),
            Err(Verdict::Recover) => Ok(false),
            Err(Verdict::Abort) => Err(InterpError::Aborted),
        }
    }

    /// The checks guarding `inst` and its runtime-global site id.
    fn guard(&self, inst: &Inst) -> (Checks, u32) {
        match inst.site {
            Some(s) => (self.m.inst_checks(inst), self.site_base + s.0),
            None => (Checks::EMPTY, 0),
        }
    }

    /// The lifetime check of an object op: false when `obj` is a freed
    /// object (reported; the op takes its recover effect).
    fn live(
        &self,
        callers: &[Frame],
        checks: Checks,
        site: u32,
        obj: u64,
    ) -> Result<bool, InterpError> {
        if !checks.contains(CheckKind::Lifetime) {
            return Ok(true);
        }
        self.go_on(self.with_bt(callers, || self.rt.check_live(obj, site)))
    }

    /// The lifetime check of a raw access of `bytes` at `addr`.
    fn mem_live(
        &self,
        callers: &[Frame],
        checks: Checks,
        site: u32,
        addr: u64,
        bytes: u32,
    ) -> Result<bool, InterpError> {
        if !checks.contains(CheckKind::Lifetime) {
            return Ok(true);
        }
        self.go_on(self.with_bt(callers, || self.rt.check_mem(addr, bytes, site)))
    }

    /// The dict check of `word` (read from, or about to be stored in, `obj`'s slot).
    fn dict_ok(
        &self,
        callers: &[Frame],
        checks: Checks,
        site: u32,
        obj: u64,
        word: u64,
    ) -> Result<bool, InterpError> {
        if !checks.contains(CheckKind::Dict) || tag_ok(word) {
            return Ok(true);
        }
        let obs = Observed::Dict {
            object: obj,
            value: word,
        };
        match self.with_bt(callers, || {
            self.rt.report(ReportKind::DictSlotTag, site, obs)
        }) {
            Verdict::Recover => Ok(false),
            Verdict::Abort => Err(InterpError::Aborted),
        }
    }

    /// The bounds check of attribute `index` of the values array at `values`
    /// (its capacity is the u64 at `values − 8`, spec §4).
    fn bounds_ok(
        &self,
        callers: &[Frame],
        (checks, site): (Checks, u32),
        loc: SrcLoc,
        obj: u64,
        values: u64,
        index: u32,
    ) -> Result<bool, InterpError> {
        if !checks.contains(CheckKind::Bounds) {
            return Ok(true);
        }
        let cap_addr = values.wrapping_add(layout::VALUES_CAPACITY_OFFSET as i64 as u64);
        let capacity = self.read_mem(loc, cap_addr, 8)?;
        if (index as u64) < capacity {
            return Ok(true);
        }
        match self.with_bt(callers, || {
            self.rt.report_bounds(site, obj, index as u64, capacity)
        }) {
            Verdict::Recover => Ok(false),
            Verdict::Abort => Err(InterpError::Aborted),
        }
    }

    /// Runs `f` (which may report) with the calling IR frames known to the
    /// report's backtrace.
    fn with_bt<R>(&self, callers: &[Frame], f: impl FnOnce() -> R) -> R {
        let outer = || self.call_frames(callers);
        guardlift_runtime::backtrace::with_outer_frames(&outer, f)
    }

    /// The IR calls `callers` (outermost first) are in, innermost first, as
    /// backtrace frames: each frame's current instruction is its call.
    fn call_frames(&self, callers: &[Frame]) -> Vec<String> {
        callers
            .iter()
            .rev()
            .take(guardlift_runtime::backtrace::MAX_FRAMES)
            .map(|c| {
                let f = self.m.func(c.func);
                let inst =
                    c.ip.checked_sub(1)
                        .and_then(|i| f.blocks[c.block].insts.get(i));
                let (loc, op) = inst.map_or((f.loc, "?"), |i| (i.loc, i.kind.opcode()));
                guardlift_runtime::backtrace::ir_frame(&f.name, loc.line, loc.col, op)
            })
            .collect()
    }

    fn read_mem(&self, loc: SrcLoc, addr: u64, bytes: u32) -> Result<u64, InterpError> {
        let ok = self.rt.with_heap(|h| h.is_valid(addr, bytes as u64));
        if !ok {
            return fault(
                loc,
                format!("load of {bytes} byte(s) at {addr:#x} is outside every live heap block"),
            );
        }
        // SAFETY: [addr, addr+bytes) lies inside a live block of the runtime's heap.
        Ok(unsafe {
            match bytes {
                1 => (addr as *const u8).read_unaligned() as u64,
                4 => (addr as *const u32).read_unaligned() as u64,
                _ => (addr as *const u64).read_unaligned(),
            }
        })
    }

    fn write_mem(&self, loc: SrcLoc, addr: u64, bytes: u32, v: u64) -> Result<(), InterpError> {
        let ok = self.rt.with_heap(|h| h.is_valid(addr, bytes as u64));
        if !ok {
            return fault(
                loc,
                format!("store of {bytes} byte(s) at {addr:#x} is outside every live heap block"),
            );
        }
        // SAFETY: as in `read_mem`.
        unsafe {
            match bytes {
                1 => (addr as *mut u8).write_unaligned(v as u8),
                4 => (addr as *mut u32).write_unaligned(v as u32),
                _ => (addr as *mut u64).write_unaligned(v),
            }
        }
        Ok(())
    }

    /// Runs the top frame until it calls, returns or fails. `Some(r)` is the
    /// entry function's result.
    fn step_frame(&self, stack: &mut Vec<Frame>) -> Result<Option<Option<u64>>, InterpError> {
        let depth = stack.len();
        // Watchpoints name the IR frames of a write (empty when off).
        let watch_callers = self.ir_callers(stack);
        let Some((fr, callers)) = stack.split_last_mut() else {
            return Ok(Some(None));
        };
        let callers: &[Frame] = callers;
        let func = self.m.func(fr.func);
        loop {
            let block = &func.blocks[fr.block];
            let Some(inst) = block.insts.get(fr.ip) else {
                return fault(block.loc, "block without terminator");
            };
            let at = (fr.block, fr.ip);
            fr.ip += 1;
            let loc = inst.loc;
            let v = |fr: &Frame, x: Value| fr.vals[x.0 as usize];
            let ty = |x: Value| func.ty(x);
            let set = |fr: &mut Frame, r: u64| {
                if let Some(d) = inst.result {
                    fr.vals[d.0 as usize] = r;
                }
            };
            match &inst.kind {
                InstKind::Iconst { ty, imm } => set(fr, norm_int(*ty, *imm as u64)),
                InstKind::Fconst { ty, value } => set(
                    fr,
                    if *ty == Type::F32 {
                        fbits32(*value as f32)
                    } else {
                        value.to_bits()
                    },
                ),
                InstKind::Binary { op, a, b } => {
                    let t = ty(*a);
                    let r = if op.is_float() {
                        float_binop(*op, t, v(fr, *a), v(fr, *b))
                    } else {
                        int_binop(*op, t, v(fr, *a), v(fr, *b))
                    };
                    set(fr, r)
                }
                InstKind::Unary { op, a } => {
                    let x = v(fr, *a);
                    let r = if ty(*a) == Type::F32 {
                        let f = f32v(x);
                        match op {
                            UnOp::Fneg => fbits32(-f),
                            UnOp::Fabs => fbits32(f.abs()),
                            UnOp::Fsqrt => canonical_f32_bits(f.sqrt()) as u64,
                        }
                    } else {
                        let f = f64v(x);
                        match op {
                            UnOp::Fneg => (-f).to_bits(),
                            UnOp::Fabs => f.abs().to_bits(),
                            UnOp::Fsqrt => canonical_f64_bits(f.sqrt()),
                        }
                    };
                    set(fr, r)
                }
                InstKind::Icmp { cc, a, b } => {
                    let r = icmp(*cc, ty(*a), v(fr, *a), v(fr, *b));
                    set(fr, r as u64)
                }
                InstKind::Fcmp { cc, a, b } => {
                    let r = fcmp(*cc, ty(*a), v(fr, *a), v(fr, *b));
                    set(fr, r as u64)
                }
                InstKind::Select { cond, a, b } => {
                    let c = mask(ty(*cond), v(fr, *cond)) != 0;
                    let r = if c { v(fr, *a) } else { v(fr, *b) };
                    set(fr, r)
                }
                InstKind::Conv { op, ty: to, a } => {
                    let r = conv(*op, ty(*a), *to, v(fr, *a));
                    set(fr, r)
                }
                InstKind::Load {
                    ty: t,
                    addr,
                    offset,
                } => {
                    let a = v(fr, *addr).wrapping_add(*offset as i64 as u64);
                    let (checks, site) = self.guard(inst);
                    if !self.mem_live(callers, checks, site, a, t.bytes())? {
                        set(fr, 0);
                        continue;
                    }
                    let raw = self.read_mem(loc, a, t.bytes())?;
                    set(fr, canon(*t, raw))
                }
                InstKind::Store {
                    value,
                    addr,
                    offset,
                } => {
                    let t = ty(*value);
                    let a = v(fr, *addr).wrapping_add(*offset as i64 as u64);
                    let x = mask(
                        if t.is_float() && t.bits() == 32 {
                            Type::I32
                        } else {
                            t
                        },
                        v(fr, *value),
                    );
                    let (checks, site) = self.guard(inst);
                    if !self.mem_live(callers, checks, site, a, t.bytes())? {
                        continue;
                    }
                    if checks.contains(CheckKind::Clobber)
                        && self.rt.clobber_check(site, a, t.bytes(), x)
                    {
                        if self.rt.mode() != Mode::Recover {
                            return Err(InterpError::Aborted);
                        }
                        continue;
                    }
                    self.with_frames(&watch_callers, func, inst, || {
                        self.write_mem(loc, a, t.bytes(), x)
                    })?;
                }
                InstKind::Call { callee, args } => {
                    let argv: Vec<u64> = args.iter().map(|a| v(fr, *a)).collect();
                    match callee {
                        Callee::Func(fid) => {
                            if depth >= self.max_depth {
                                return Err(InterpError::StackOverflow {
                                    loc,
                                    limit: self.max_depth,
                                });
                            }
                            let callee_f = self.m.func(*fid);
                            let argv: Vec<u64> = callee_f
                                .params
                                .iter()
                                .zip(&argv)
                                .map(|(p, a)| canon(callee_f.ty(*p), *a))
                                .collect();
                            let nf = self.new_frame(*fid, &argv, inst.result);
                            stack.push(nf);
                            return Ok(None);
                        }
                        Callee::Extern(eid) => {
                            let r = match (inst.site, self.m.obj_call(&inst.kind)) {
                                (Some(s), Some(ObjCall::New)) => {
                                    let n = argv.first().copied().unwrap_or(0) as i64;
                                    self.rt.obj_new_at(n, self.site_base + s.0)
                                }
                                (Some(s), Some(ObjCall::Free)) => {
                                    let o = argv.first().copied().unwrap_or(0);
                                    self.go_on(self.with_bt(callers, || {
                                        self.rt.obj_free_at(o, self.site_base + s.0)
                                    }))?;
                                    0
                                }
                                _ => self.with_frames(&watch_callers, func, inst, || {
                                    self.call_extern(*eid, &argv)
                                }),
                            };
                            if let (Some(d), Some(rt)) = (inst.result, self.m.ext(*eid).ret) {
                                fr.vals[d.0 as usize] = canon(rt, r);
                            }
                        }
                    }
                }
                InstKind::Jump { dest } => {
                    self.branch(fr, func, dest);
                }
                InstKind::Brif {
                    cond,
                    then_dest,
                    else_dest,
                } => {
                    let c = mask(ty(*cond), v(fr, *cond)) != 0;
                    self.branch(fr, func, if c { then_dest } else { else_dest });
                }
                InstKind::Return { value } => {
                    let r = value.map(|x| v(fr, x));
                    let dst = fr.ret_dst;
                    stack.pop();
                    return match stack.last_mut() {
                        None => Ok(Some(r)),
                        Some(caller) => {
                            if let (Some(d), Some(r)) = (dst, r) {
                                caller.vals[d.0 as usize] = r;
                            }
                            Ok(None)
                        }
                    };
                }
                InstKind::DictSlotLoad { obj } => {
                    let o = v(fr, *obj);
                    let (checks, site) = self.guard(inst);
                    if !self.live(callers, checks, site, o)? {
                        set(fr, 0);
                        continue;
                    }
                    let word = self.read_mem(loc, self.rt.layout().slot_addr(o), 8)?;
                    // A bad word is still the load's result (spec §6).
                    self.dict_ok(callers, checks, site, o, word)?;
                    set(fr, word)
                }
                InstKind::DictSlotStore { obj, word } => {
                    let o = v(fr, *obj);
                    let w = v(fr, *word);
                    let (checks, site) = self.guard(inst);
                    if !self.live(callers, checks, site, o)?
                        || !self.dict_ok(callers, checks, site, o, w)?
                    {
                        continue;
                    }
                    self.with_frames(&watch_callers, func, inst, || {
                        watch::runtime_write(|| {
                            self.write_mem(loc, self.rt.layout().slot_addr(o), 8, w)
                        })
                    })?;
                    if checks.contains(CheckKind::Dict) {
                        self.rt.note_slot_write(site, o, w);
                    }
                }
                InstKind::LoadAttr { obj, index } => {
                    let o = v(fr, *obj);
                    let (checks, site) = self.guard(inst);
                    if !self.live(callers, checks, site, o)? {
                        set(fr, 0);
                        continue;
                    }
                    let word = self.read_mem(loc, self.rt.layout().slot_addr(o), 8)?;
                    if !self.dict_ok(callers, checks, site, o, word)? {
                        set(fr, 0);
                        continue;
                    }
                    let r = if word & layout::VALUES_BIT != 0 {
                        let values = layout::values_ptr(word);
                        if !self.bounds_ok(callers, (checks, site), loc, o, values, *index)? {
                            set(fr, 0);
                            continue;
                        }
                        let a = values.wrapping_add(layout::attr_offset(*index) as u64);
                        self.read_mem(loc, a, 8)?
                    } else {
                        self.rt.load_attr_slow(o, *index) as u64
                    };
                    set(fr, r)
                }
                InstKind::StoreAttr { obj, index, value } => {
                    let o = v(fr, *obj);
                    let x = v(fr, *value);
                    let (checks, site) = self.guard(inst);
                    if !self.live(callers, checks, site, o)? {
                        continue;
                    }
                    let word = self.read_mem(loc, self.rt.layout().slot_addr(o), 8)?;
                    if !self.dict_ok(callers, checks, site, o, word)? {
                        continue;
                    }
                    if word & layout::VALUES_BIT != 0 {
                        let values = layout::values_ptr(word);
                        if !self.bounds_ok(callers, (checks, site), loc, o, values, *index)? {
                            continue;
                        }
                        let a = values.wrapping_add(layout::attr_offset(*index) as u64);
                        self.write_mem(loc, a, 8, x)?;
                    } else {
                        self.rt.store_attr_slow(o, *index, x as i64);
                    }
                }
                InstKind::AdAlloc { elem, capacity } => {
                    let idx = match fr.alloc_slot.get(&at) {
                        Some(&i) => {
                            fr.stacks[i].set_len(0);
                            i
                        }
                        None => {
                            fr.stacks.push(AdBuf::new(*elem, *capacity));
                            fr.alloc_slot.insert(at, fr.stacks.len() - 1);
                            fr.stacks.len() - 1
                        }
                    };
                    set(fr, idx as u64)
                }
                InstKind::AdPush { stack: s, value } => {
                    let x = v(fr, *value);
                    let site = inst.site;
                    let buf = adbuf(fr, v(fr, *s), loc)?;
                    let (n, cap) = (buf.len(), buf.cap);
                    if n >= cap as u64 {
                        match site {
                            Some(site) => {
                                self.report(callers, ReportKind::AdstackOverflow, site.0, Observed::Adstack { capacity: cap as u64, len: n })?;
                                continue;
                            }
                            None => return fault(loc, format!("adstack overflow in uninstrumented code (len {n}, capacity {cap}): undefined behaviour")),
                        }
                    }
                    let b = adbuf(fr, v(fr, *s), loc)?;
                    let eb = b.elem.bytes();
                    b.wr(adstack::primal_offset(b.elem, n), eb, x);
                    b.wr(adstack::adjoint_offset(b.elem, n), eb, 0);
                    b.set_len(n + 1);
                }
                InstKind::AdPop { stack: s }
                | InstKind::AdTop { stack: s }
                | InstKind::AdTopAdj { stack: s }
                | InstKind::AdAccAdj { stack: s, .. } => {
                    let delta = match &inst.kind {
                        InstKind::AdAccAdj { delta, .. } => v(fr, *delta),
                        _ => 0,
                    };
                    let h = v(fr, *s);
                    let (n, cap) = {
                        let b = adbuf(fr, h, loc)?;
                        (b.len(), b.cap)
                    };
                    if n == 0 {
                        match inst.site {
                            Some(site) => {
                                self.check_elision(fr.func, at, loc)?;
                                self.report(callers, ReportKind::AdstackUnderflow, site.0, Observed::Adstack { capacity: cap as u64, len: 0 })?;
                                set(fr, 0);
                                continue;
                            }
                            None => return fault(loc, format!("{} on an empty adstack in uninstrumented code: undefined behaviour", inst.kind.opcode())),
                        }
                    }
                    let b = adbuf(fr, h, loc)?;
                    let (e, eb) = (b.elem, b.elem.bytes());
                    match &inst.kind {
                        InstKind::AdPop { .. } => b.set_len(n - 1),
                        InstKind::AdTop { .. } => {
                            let r = canon_elem(e, b.rd(adstack::primal_offset(e, n - 1), eb));
                            set(fr, r)
                        }
                        InstKind::AdTopAdj { .. } => {
                            let r = canon_elem(e, b.rd(adstack::adjoint_offset(e, n - 1), eb));
                            set(fr, r)
                        }
                        _ => {
                            let off = adstack::adjoint_offset(e, n - 1);
                            let old = b.rd(off, eb);
                            let new = match e {
                                AdElem::F32 => fbits32(f32v(old) + f32v(delta)),
                                AdElem::F64 => (f64v(old) + f64v(delta)).to_bits(),
                                AdElem::I64 => old.wrapping_add(delta),
                            };
                            b.wr(off, eb, new);
                        }
                    }
                }
                InstKind::AdLen { stack: s } => {
                    let n = adbuf(fr, v(fr, *s), loc)?.len();
                    set(fr, n)
                }
                InstKind::Watch { obj } => self.rt.watch(v(fr, *obj)),
            }
        }
    }

    /// The IR calls below the top frame, innermost first, while
    /// watchpoints are on (see [`watch::with_ir_frames`]).
    fn ir_callers(&self, stack: &[Frame]) -> Vec<IrFrame<'m>> {
        if !watch::active() {
            return Vec::new();
        }
        let m: &'m Module = self.m;
        let n = stack.len().saturating_sub(1);
        stack[..n]
            .iter()
            .rev()
            .map(|fr| {
                let f = m.func(fr.func);
                let loc = f.blocks[fr.block]
                    .insts
                    .get(fr.ip.wrapping_sub(1))
                    .map_or(f.loc, |i| i.loc);
                IrFrame {
                    function: &f.name,
                    line: loc.line,
                    col: loc.col,
                    op: "call",
                }
            })
            .collect()
    }

    /// Runs `f` (the execution of `inst`) with the IR frames published for
    /// watchpoints; just `f()` when they are off.
    fn with_frames<R>(
        &self,
        callers: &[IrFrame<'m>],
        func: &'m guardlift_ir::Function,
        inst: &'m guardlift_ir::Inst,
        f: impl FnOnce() -> R,
    ) -> R {
        if !watch::active() {
            return f();
        }
        let mut frames = Vec::with_capacity(callers.len() + 1);
        frames.push(IrFrame {
            function: &func.name,
            line: inst.loc.line,
            col: inst.loc.col,
            op: inst.kind.opcode(),
        });
        frames.extend_from_slice(callers);
        watch::with_ir_frames(&frames, f)
    }

    fn branch(&self, fr: &mut Frame, func: &guardlift_ir::Function, dest: &BlockCall) {
        let Block(b) = dest.block;
        let target = &func.blocks[b as usize];
        let args: Vec<u64> = dest.args.iter().map(|a| fr.vals[a.0 as usize]).collect();
        for (p, a) in target.params.iter().zip(args) {
            fr.vals[p.0 as usize] = canon(func.ty(*p), a);
        }
        fr.block = b as usize;
        fr.ip = 0;
    }

    fn call_extern(&self, eid: guardlift_ir::ExternId, a: &[u64]) -> u64 {
        let g = |i: usize| a.get(i).copied().unwrap_or(0);
        match &self.externs[eid.0 as usize] {
            ExternImpl::Host(h) => h(a),
            ExternImpl::Builtin(b) => {
                let rt = &self.rt;
                match b.name {
                    "obj_new" => rt.obj_new(g(0) as i64),
                    "obj_dictify" => {
                        rt.obj_dictify(g(0));
                        0
                    }
                    "obj_free" => {
                        rt.obj_free(g(0));
                        0
                    }
                    "fault_clear_lsb" => {
                        rt.fault_clear_lsb(g(0));
                        0
                    }
                    "load_attr_slow" => rt.load_attr_slow(g(0), g(1) as u32) as u64,
                    "store_attr_slow" => {
                        rt.store_attr_slow(g(0), g(1) as u32, g(2) as i64);
                        0
                    }
                    "print_i64" => {
                        rt.print_i64(g(0) as i64);
                        0
                    }
                    "print_f64" => {
                        rt.print_f64(f64v(g(0)));
                        0
                    }
                    // The same functions the JIT calls, so results agree bit for bit.
                    "sin" => guardlift_runtime::abi::gl_sin(f64v(g(0))).to_bits(),
                    "cos" => guardlift_runtime::abi::gl_cos(f64v(g(0))).to_bits(),
                    "exp" => guardlift_runtime::abi::gl_exp(f64v(g(0))).to_bits(),
                    "log" => guardlift_runtime::abi::gl_log(f64v(g(0))).to_bits(),
                    _ => 0,
                }
            }
        }
    }
}

/// Canonical bits of a value of type `ty` (ints sign-extended, f32 in the low 32 bits).
fn canon(ty: Type, x: u64) -> u64 {
    match ty {
        Type::F32 => x & 0xffff_ffff,
        t if t.is_int() => norm_int(t, x),
        _ => x,
    }
}

fn canon_elem(e: AdElem, x: u64) -> u64 {
    match e {
        AdElem::F32 => x & 0xffff_ffff,
        _ => x,
    }
}

/// Per function, the underflow checks claimed not to fail.
fn elision_claims(m: &Module) -> Vec<HashSet<(u32, u32)>> {
    m.functions
        .iter()
        .map(|f| match adstack_capacities(f) {
            Ok(caps) => redundant_underflow_checks(f, &caps),
            Err(_) => HashSet::new(),
        })
        .collect()
}

fn adbuf(fr: &mut Frame, h: u64, loc: SrcLoc) -> Result<&mut AdBuf, InterpError> {
    match fr.stacks.get_mut(h as usize) {
        Some(b) => Ok(b),
        None => fault(loc, "adstack handle used before its adstack.alloc ran"),
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
