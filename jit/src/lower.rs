//! The one lowering from guardlift IR to Cranelift IR, shared by the JIT
//! ([`crate::engine`]) and the object emitter ([`crate::object`]).
//!
//! Each IR block becomes a Cranelift block with the same parameters; each IR
//! value maps to one Cranelift value (no variables: the IR is already SSA).
//! Blocks are lowered in reverse postorder so every definition is lowered
//! before its uses; unreachable blocks are dropped.
//!
//! Object-model and adstack code reads its offsets from
//! [`guardlift_runtime::layout`] and [`guardlift_runtime::adstack`] only.
//!
//! Guards (instructions with a site) are an inline check of a few
//! instructions that branches to an out-of-line cold block; the cold block
//! calls the runtime's report entry point and then applies the recover-mode
//! effect and rejoins (abort, recover), or leaves what it observed in the
//! runtime's trap scratch area and executes a trap instruction (trap). How
//! a mode is lowered is decided in one place, [`guard_strategy`].

use crate::error::JitError;
use cranelift_codegen::ir::{
    self as cl, condcodes, types, AbiParam, BlockArg, ExtFuncData, ExternalName, InstBuilder,
    MemFlagsData, Signature, SourceLoc, StackSlotData, StackSlotKind, UserExternalName,
    UserFuncName,
};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{DataId, FuncId as ClFuncId, Linkage, Module as ClModule};
use guardlift_ir::{
    analysis, BinOp, Block, Callee, CheckKind, Checks, ConvOp, FloatCC, FuncId, InstKind, IntCC,
    SiteId, Type, UnOp, Value,
};
use guardlift_runtime::abi::{self, AbiTy, Builtin};
use guardlift_runtime::adstack::{self, AdElem};
use guardlift_runtime::layout;
use guardlift_runtime::{Mode, ReportKind};
use std::collections::HashMap;

/// Name of the data symbol whose address is the runtime pointer in object files.
pub const RUNTIME_SYMBOL: &str = "guardlift_runtime";

/// How generated code finds the runtime (the hidden first argument of
/// built-ins and report entry points).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RtRef {
    /// A constant address (JIT: `Arc::as_ptr` of the module's runtime).
    Const(u64),
    /// The address of the imported data symbol [`RUNTIME_SYMBOL`] (object files).
    Symbol,
}

/// How a failed check is lowered.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GuardStrategy {
    /// Inline check branching to a cold block that calls the report entry
    /// point, then applies the recover-mode effect and rejoins. In abort mode
    /// the call does not return unless the runtime was configured not to
    /// end the process, in which case the recover path keeps every write
    /// inside its buffer or slot.
    ReportCall,
    /// The same inline check and branch; the cold block stores the observed
    /// values in the runtime's trap scratch area, tagged with the site, and
    /// executes `trap` with the report kind's user trap code (see
    /// [`guardlift_runtime::trap`]). Nothing after the trap runs: the signal
    /// handler reports and aborts. The clobber check calls
    /// `gl_clobber_overlaps` (no report) and traps the same way.
    Trap,
}

/// The single place where the runtime mode decides the guard lowering.
///
/// The JIT lowers a trap-mode module with the abort strategy instead when
/// trap mode cannot work in this process (no handler for the platform) or
/// must not (`RuntimeConfig::abort_process` is off: a trap cannot return a
/// verdict); see `Jit::compile`.
pub fn guard_strategy(mode: Mode) -> GuardStrategy {
    match mode {
        Mode::Abort | Mode::Recover => GuardStrategy::ReportCall,
        Mode::Trap => GuardStrategy::Trap,
    }
}

/// Set in the source location of every instruction of a trap sequence; the
/// low bits are the trap's index in [`Lowerer::trap_sites`]. (Lines stay
/// far below this bit, so the relative encoding of source locations
/// cannot collide with it.)
pub const TRAP_SRCLOC_BIT: u32 = 1 << 31;

/// The index into [`Lowerer::trap_sites`] that a trap instruction's source
/// location encodes, if it is one of ours.
pub fn trap_index(loc: SourceLoc) -> Option<usize> {
    (!loc.is_default() && loc.bits() & TRAP_SRCLOC_BIT != 0)
        .then(|| (loc.bits() & !TRAP_SRCLOC_BIT) as usize)
}

// ---- the dict tag check ----------------------------------------------------

/// Added to the word so that both valid tags land on low bits with
/// `DICT_CHECK_MASK` clear: `VALUES_TAG` (0b111) wraps to 0b000 and
/// `DICT_TAG` (0b000) becomes 0b001.
pub const DICT_CHECK_ADD: u64 = layout::TAG_MASK + 1 - layout::VALUES_TAG;
/// The tag bits other than the values bit: `((word + ADD) & MASK) == 0` iff the tag is valid.
pub const DICT_CHECK_MASK: u64 = layout::TAG_MASK & !layout::VALUES_BIT;

// The two-instruction check relies on the tag encoding; pin it.
const _: () = assert!(layout::VALUES_TAG == layout::TAG_MASK);
const _: () = assert!(layout::DICT_TAG == 0);
const _: () = assert!(layout::VALUES_BIT == 1);
const _: () = assert!(layout::TAG_MASK == 0b111);

/// The check the inline sequence computes, in Rust (tests compare it with
/// [`layout::tag_ok`]).
pub const fn dict_word_ok(word: u64) -> bool {
    word.wrapping_add(DICT_CHECK_ADD) & DICT_CHECK_MASK == 0
}

// ---- types and signatures ----------------------------------------------------

/// The Cranelift type of an IR type (`ptr` and adstack handles are addresses).
pub fn cl_type(t: Type) -> cl::Type {
    match t {
        Type::I8 => types::I8,
        Type::I32 => types::I32,
        Type::I64 | Type::Ptr | Type::AdStack(_) => types::I64,
        Type::F32 => types::F32,
        Type::F64 => types::F64,
    }
}

fn elem_type(e: AdElem) -> cl::Type {
    cl_type(Type::of_elem(e))
}

fn abi_cl(t: AbiTy) -> cl::Type {
    match t {
        AbiTy::I64 => types::I64,
        AbiTy::F64 => types::F64,
    }
}

/// The ABI class an IR type passes as to a built-in, if any.
pub fn abi_class(t: Type) -> Option<AbiTy> {
    match t {
        Type::I64 | Type::Ptr => Some(AbiTy::I64),
        Type::F64 => Some(AbiTy::F64),
        _ => None,
    }
}

/// The native signature of an IR function or host extern.
///
/// `i8` parameters and results travel sign-extended to 32 bits, as C
/// compilers (and Rust's `extern "C"`) expect on x86-64.
pub fn ir_signature(cc: CallConv, params: &[Type], ret: Option<Type>) -> Signature {
    let param = |t: Type| {
        let p = AbiParam::new(cl_type(t));
        if t == Type::I8 {
            p.sext()
        } else {
            p
        }
    };
    let mut s = Signature::new(cc);
    s.params.extend(params.iter().map(|&t| param(t)));
    s.returns.extend(ret.map(param));
    s
}

/// The native signature of a built-in (with the hidden runtime pointer when it needs it).
pub fn builtin_signature(cc: CallConv, b: &Builtin) -> Signature {
    let mut s = Signature::new(cc);
    if b.needs_rt {
        s.params.push(AbiParam::new(types::I64));
    }
    s.params
        .extend(b.params.iter().map(|&t| AbiParam::new(abi_cl(t))));
    s.returns.extend(b.ret.map(|t| AbiParam::new(abi_cl(t))));
    s
}

/// The instrumentation entry points of [`guardlift_runtime::abi`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Entry {
    ReportDict,
    ReportAdstack,
    ClobberCheck,
    Watch,
    NoteSlotWrite,
    /// Trap mode's clobber test (no report).
    ClobberOverlaps,
    /// The bounds report (the check itself is inline).
    ReportBounds,
    /// The lifetime check of an object access (reports; 1 = go on).
    CheckLive,
    /// The lifetime check of a raw load or store (reports; 1 = go on).
    CheckMem,
    /// `call @obj_new` recording its allocation site.
    ObjNewAt,
    /// `call @obj_free` under the lifetime check (double / invalid free).
    ObjFreeAt,
}

impl Entry {
    pub const ALL: [Entry; 11] = [
        Entry::ReportDict,
        Entry::ReportAdstack,
        Entry::ClobberCheck,
        Entry::Watch,
        Entry::NoteSlotWrite,
        Entry::ClobberOverlaps,
        Entry::ReportBounds,
        Entry::CheckLive,
        Entry::CheckMem,
        Entry::ObjNewAt,
        Entry::ObjFreeAt,
    ];

    /// (symbol, address) in the runtime.
    pub fn symbol_and_addr(self) -> (&'static str, *const u8) {
        match self {
            Entry::ReportDict => abi::ENTRY_REPORT_DICT,
            Entry::ReportAdstack => abi::ENTRY_REPORT_ADSTACK,
            Entry::ClobberCheck => abi::ENTRY_CLOBBER_CHECK,
            Entry::Watch => abi::ENTRY_WATCH,
            Entry::NoteSlotWrite => abi::ENTRY_NOTE_SLOT_WRITE,
            Entry::ClobberOverlaps => abi::ENTRY_CLOBBER_OVERLAPS,
            Entry::ReportBounds => abi::ENTRY_REPORT_BOUNDS,
            Entry::CheckLive => abi::ENTRY_CHECK_LIVE,
            Entry::CheckMem => abi::ENTRY_CHECK_MEM,
            Entry::ObjNewAt => abi::ENTRY_OBJ_NEW_AT,
            Entry::ObjFreeAt => abi::ENTRY_OBJ_FREE_AT,
        }
    }

    pub fn symbol(self) -> &'static str {
        self.symbol_and_addr().0
    }

    /// Native signature (runtime pointer first).
    pub fn signature(self, cc: CallConv) -> Signature {
        use types::{I32, I64, I8};
        let (params, ret): (&[cl::Type], Option<cl::Type>) = match self {
            // gl_report_dict(rt, site: u32, obj, word) -> u32
            Entry::ReportDict => (&[I64, I32, I64, I64], Some(I32)),
            // gl_report_adstack(rt, site: u32, kind: u32, capacity: u64, len: u64) -> u32
            Entry::ReportAdstack => (&[I64, I32, I32, I64, I64], Some(I32)),
            // gl_clobber_check(rt, site: u32, addr: u64, width: u32, value: u64) -> u32
            Entry::ClobberCheck => (&[I64, I32, I64, I32, I64], Some(I32)),
            // gl_watch(rt, obj)
            Entry::Watch => (&[I64, I64], None),
            // gl_note_slot_write(rt, site: u32, obj, word)
            Entry::NoteSlotWrite => (&[I64, I32, I64, I64], None),
            // gl_clobber_overlaps(rt, addr: u64, width: u32) -> u32
            Entry::ClobberOverlaps => (&[I64, I64, I32], Some(I32)),
            // gl_report_bounds(rt, site: u32, obj, index: u64, capacity: u64) -> u32
            Entry::ReportBounds => (&[I64, I32, I64, I64, I64], Some(I32)),
            // gl_check_live(rt, obj, site: u32) -> u8
            Entry::CheckLive => (&[I64, I64, I32], Some(I8)),
            // gl_check_mem(rt, addr: u64, width: u32, site: u32) -> u8
            Entry::CheckMem => (&[I64, I64, I32, I32], Some(I8)),
            // gl_obj_new_at(rt, n: i64, site: u32) -> ptr
            Entry::ObjNewAt => (&[I64, I64, I32], Some(I64)),
            // gl_obj_free_at(rt, obj, site: u32)
            Entry::ObjFreeAt => (&[I64, I64, I32], None),
        };
        let mut s = Signature::new(cc);
        s.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        s.returns.extend(ret.map(AbiParam::new));
        s
    }
}

/// A module-local function that generated code calls instead of a runtime
/// function, so that the call site needs neither the runtime pointer nor
/// (for reports) any register: the hot code around a guard or an attribute
/// access keeps its registers, and no long-lived runtime-pointer value is
/// hoisted into loops for the sake of cold blocks.
#[derive(Copy, Clone, Debug)]
pub enum Stub {
    /// A report entry point, called from a guard's cold block. Cranelift's
    /// `preserve_all` convention: the call clobbers no register (SysV has
    /// no callee-saved vector registers, so every float live across a guard
    /// would otherwise be spilled on the hot path); the stub saves what the
    /// entry point may clobber. No result: the verdict is not needed (abort
    /// mode does not return when the process is to end; otherwise the
    /// recover path runs).
    Report(Entry),
    /// A check entry point that returns a verdict ([`Entry::CheckLive`],
    /// [`Entry::CheckMem`]), with the platform convention: Cranelift
    /// 0.135's `preserve_all` restores the return register too (the
    /// verdict would be lost), so these cannot take the report stubs'
    /// convention. The JIT keeps the call off the hot path (epoch fast
    /// path and frame cache).
    Check(Entry),
    /// A built-in slow path (`load_attr_slow`, `store_attr_slow`), with the
    /// platform convention and the built-in's result.
    Slow(&'static Builtin),
    /// Trap mode's hand-off (`preserve_all`, no result): `(token, v0, v1,
    /// v2)` into the runtime's trap scratch area — owner token, fence,
    /// values, then `ready = token` (sequentially consistent). The guard's
    /// cold block calls it and then executes its own trap instruction.
    TrapScratch,
}

impl PartialEq for Stub {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Stub::Report(a), Stub::Report(b)) | (Stub::Check(a), Stub::Check(b)) => a == b,
            (Stub::Slow(a), Stub::Slow(b)) => a.symbol == b.symbol,
            (Stub::TrapScratch, Stub::TrapScratch) => true,
            _ => false,
        }
    }
}

/// The report stubs' convention: `preserve_all`, except on riscv64, where
/// Cranelift 0.135 saves the vector registers that a `preserve_all`
/// function's own calls clobber with V-extension stores even when the ISA
/// has no V (SIGILL on RV64GC): there they take the platform's convention.
pub fn report_stub_conv(isa: &dyn cranelift_codegen::isa::TargetIsa) -> CallConv {
    match isa.name() {
        "riscv64" => isa.default_call_conv(),
        _ => CallConv::PreserveAll,
    }
}

impl Stub {
    /// The runtime function's parameters without the runtime pointer;
    /// `report_cc` is [`report_stub_conv`].
    pub fn signature(self, cc: CallConv, report_cc: CallConv) -> Signature {
        let mut s = match self {
            Stub::Report(e) => {
                let mut s = e.signature(report_cc);
                s.returns.clear();
                s
            }
            Stub::Check(e) => e.signature(cc),
            Stub::Slow(b) => builtin_signature(cc, b),
            Stub::TrapScratch => {
                let mut s = Signature::new(CallConv::PreserveAll);
                // (runtime, token, v0, v1, v2)
                let n = 2 + guardlift_runtime::trap::TRAP_VALUE_COUNT;
                s.params
                    .extend(std::iter::repeat_n(AbiParam::new(types::I64), n));
                s
            }
        };
        s.params.remove(0);
        s
    }
}

/// The body of [`Stub::TrapScratch`]: tag the runtime's trap scratch area
/// with `token` (owner), fence, store `vals`, publish `ready = token`.
fn store_trap_scratch(
    b: &mut FunctionBuilder,
    rt: cl::Value,
    token: cl::Value,
    vals: &[cl::Value],
) {
    use guardlift_runtime::trap::{TRAP_OWNER_OFFSET, TRAP_READY_OFFSET, TRAP_VALUES_OFFSET};
    use guardlift_runtime::TRAP_SCRATCH_OFFSET;
    let flags = MemFlagsData::trusted();
    b.ins()
        .store(flags, token, rt, TRAP_SCRATCH_OFFSET + TRAP_OWNER_OFFSET);
    b.ins().fence();
    for (i, &v) in vals.iter().enumerate() {
        let off = TRAP_SCRATCH_OFFSET + TRAP_VALUES_OFFSET + 8 * i as i32;
        b.ins().store(flags, v, rt, off);
    }
    let ready = b
        .ins()
        .iadd_imm_s(rt, (TRAP_SCRATCH_OFFSET + TRAP_READY_OFFSET) as i64);
    b.ins().atomic_store(flags, token, ready);
}

// ---- extern resolution -------------------------------------------------------

/// What an IR extern is bound to.
#[derive(Clone, Debug)]
pub enum ExternBinding {
    /// A built-in of spec §7: call `symbol` (with the runtime pointer when `needs_rt`).
    Builtin(&'static Builtin),
    /// A host function under this linker symbol, called as declared.
    Host { symbol: String },
}

fn sig_text(params: &[Type], ret: Option<Type>) -> String {
    let p: Vec<String> = params.iter().map(|t| t.to_string()).collect();
    match ret {
        Some(r) => format!("({}) -> {r}", p.join(", ")),
        None => format!("({})", p.join(", ")),
    }
}

fn abi_sig_text(b: &Builtin) -> String {
    let name = |t: &AbiTy| match t {
        AbiTy::I64 => "i64",
        AbiTy::F64 => "f64",
    };
    let p: Vec<&str> = b.params.iter().map(name).collect();
    match &b.ret {
        Some(r) => format!("({}) -> {}", p.join(", "), name(r)),
        None => format!("({})", p.join(", ")),
    }
}

/// Binds every extern of the module: a built-in name to its built-in
/// (checking the declared signature), any other name to what `host` returns
/// (the linker symbol), or a link error `LINE:COL: undefined symbol @name`.
pub fn resolve_externs(
    m: &guardlift_ir::Module,
    mut host: impl FnMut(&str) -> Option<String>,
) -> Result<Vec<ExternBinding>, JitError> {
    let mut out = Vec::with_capacity(m.externs.len());
    for e in &m.externs {
        if let Some(b) = abi::builtin(&e.name) {
            let params_ok = e.params.len() == b.params.len()
                && e.params
                    .iter()
                    .zip(b.params)
                    .all(|(&t, &a)| abi_class(t) == Some(a));
            let ret_ok = match (e.ret, b.ret) {
                (None, None) => true,
                (Some(t), Some(a)) => abi_class(t) == Some(a),
                _ => false,
            };
            if !(params_ok && ret_ok) {
                return Err(JitError::Link {
                    loc: e.loc,
                    msg: format!(
                        "extern @{} is declared {} but the built-in is {}",
                        e.name,
                        sig_text(&e.params, e.ret),
                        abi_sig_text(b)
                    ),
                });
            }
            out.push(ExternBinding::Builtin(b));
        } else if let Some(symbol) = host(&e.name) {
            out.push(ExternBinding::Host { symbol });
        } else {
            return Err(JitError::Link {
                loc: e.loc,
                msg: format!("undefined symbol @{}", e.name),
            });
        }
    }
    Ok(out)
}

// ---- the module-level lowerer -----------------------------------------------

/// Module-wide lowering state: how IR functions, externs and the runtime map
/// to Cranelift module entities. Imports are declared on first use.
pub struct Lowerer<'m> {
    pub ir: &'m guardlift_ir::Module,
    pub rt: RtRef,
    pub mode: Mode,
    /// Added to local site ids to get runtime-global ids.
    pub site_base: u32,
    pub call_conv: CallConv,
    /// The Cranelift function of every IR function (by [`FuncId`]).
    pub funcs: Vec<ClFuncId>,
    /// The binding of every IR extern (by `ExternId`).
    pub externs: Vec<ExternBinding>,
    /// May calls between IR functions use near (limited-range) relocations?
    pub colocated_calls: bool,
    imports: HashMap<String, ClFuncId>,
    /// Stubs declared so far (see [`Lowerer::define_stubs`]).
    stubs: Vec<(Stub, ClFuncId)>,
    stub_names: HashMap<ClFuncId, String>,
    rt_data: Option<DataId>,
    /// (runtime-global site, kind) of each trap of the last lowered
    /// function, indexed by [`trap_index`] of the trap's source location.
    traps: Vec<(u32, ReportKind)>,
}

impl<'m> Lowerer<'m> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ir: &'m guardlift_ir::Module,
        rt: RtRef,
        mode: Mode,
        site_base: u32,
        call_conv: CallConv,
        funcs: Vec<ClFuncId>,
        externs: Vec<ExternBinding>,
        colocated_calls: bool,
    ) -> Self {
        Lowerer {
            ir,
            rt,
            mode,
            site_base,
            call_conv,
            funcs,
            externs,
            colocated_calls,
            imports: HashMap::new(),
            stubs: Vec::new(),
            stub_names: HashMap::new(),
            rt_data: None,
            traps: Vec::new(),
        }
    }

    /// (runtime-global site, kind) of every trap instruction emitted for the
    /// last function [`Lowerer::lower_function`] lowered (trap mode), in
    /// emission order; a trap's source location holds its index here
    /// ([`trap_index`]). Traps of blocks Cranelift drops are simply absent
    /// from the machine code.
    pub fn trap_sites(&self) -> &[(u32, ReportKind)] {
        &self.traps
    }

    /// The native signature of IR function `id`.
    pub fn func_signature(&self, id: FuncId) -> Signature {
        let f = self.ir.func(id);
        ir_signature(self.call_conv, &f.param_types(), f.ret)
    }

    fn import<M: ClModule + ?Sized>(
        &mut self,
        m: &mut M,
        symbol: &str,
        sig: &Signature,
    ) -> Result<ClFuncId, JitError> {
        if let Some(&id) = self.imports.get(symbol) {
            return Ok(id);
        }
        let id = m
            .declare_function(symbol, Linkage::Import, sig)
            .map_err(|e| JitError::Link {
                loc: Default::default(),
                msg: format!("cannot import symbol `{symbol}`: {e}"),
            })?;
        self.imports.insert(symbol.to_string(), id);
        Ok(id)
    }

    /// The stub for `st`, declared on first use (defined by
    /// [`Lowerer::define_stubs`]).
    fn stub<M: ClModule + ?Sized>(&mut self, m: &mut M, st: Stub) -> Result<ClFuncId, JitError> {
        if let Some(&(_, id)) = self.stubs.iter().find(|(x, _)| *x == st) {
            return Ok(id);
        }
        let report_cc = report_stub_conv(m.isa());
        let id = m
            .declare_anonymous_function(&st.signature(self.call_conv, report_cc))
            .map_err(|err| JitError::Codegen(format!("declaring the {st:?} stub: {err}")))?;
        self.stubs.push((st, id));
        let what = match st {
            Stub::Report(e) => format!("stub({report_cc}) -> {}", e.symbol()),
            Stub::Check(e) => format!("stub -> {}", e.symbol()),
            Stub::Slow(b) => format!("stub -> {}", b.symbol),
            Stub::TrapScratch => "stub(preserve_all): trap scratch hand-off".to_string(),
        };
        self.stub_names.insert(id, what);
        Ok(id)
    }

    /// What stub `id` is, for listings (`stub(preserve_all) -> gl_report_dict`).
    pub fn stub_name(&self, id: ClFuncId) -> Option<String> {
        self.stub_names.get(&id).cloned()
    }

    /// Defines the bodies of the stubs the lowered functions use: each
    /// materializes the runtime pointer, calls the runtime function with
    /// the platform's convention and returns its result (if the stub has
    /// one). Call once, after the last [`Lowerer::lower_function`].
    pub fn define_stubs<M: ClModule + ?Sized>(
        &mut self,
        m: &mut M,
        fctx: &mut FunctionBuilderContext,
    ) -> Result<(), JitError> {
        let mut ctx = m.make_context();
        for (st, id) in std::mem::take(&mut self.stubs) {
            let sig = st.signature(self.call_conv, report_stub_conv(m.isa()));
            let target = match st {
                Stub::Report(e) | Stub::Check(e) => {
                    Some(self.import(m, e.symbol(), &e.signature(self.call_conv))?)
                }
                Stub::Slow(bi) => {
                    Some(self.import(m, bi.symbol, &builtin_signature(self.call_conv, bi))?)
                }
                Stub::TrapScratch => None,
            };
            let rt_data = match self.rt {
                RtRef::Symbol => Some(self.runtime_data(m)?),
                RtRef::Const(_) => None,
            };
            ctx.func.signature = sig;
            ctx.func.name = UserFuncName::user(0, id.as_u32());
            let mut b = FunctionBuilder::new(&mut ctx.func, fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            b.seal_block(entry);
            let rt = match (self.rt, rt_data) {
                (RtRef::Const(p), _) => b.ins().iconst(types::I64, p as i64),
                (RtRef::Symbol, Some(d)) => {
                    let gv = m.declare_data_in_func(d, b.func);
                    b.ins().symbol_value(types::I64, gv)
                }
                (RtRef::Symbol, None) => unreachable!("declared above"),
            };
            let params = b.block_params(entry).to_vec();
            let rets: Vec<cl::Value> = match (st, target) {
                (Stub::TrapScratch, _) => {
                    store_trap_scratch(&mut b, rt, params[0], &params[1..]);
                    vec![]
                }
                (_, Some(target)) => {
                    let mut args = vec![rt];
                    args.extend_from_slice(&params);
                    let callee = m.declare_func_in_func(target, b.func);
                    let call = b.ins().call(callee, &args);
                    match st {
                        Stub::Slow(_) | Stub::Check(_) => b.inst_results(call).to_vec(),
                        _ => vec![],
                    }
                }
                (_, None) => unreachable!("only the trap stub has no target"),
            };
            b.ins().return_(&rets);
            b.finalize(m.isa().frontend_config());
            m.define_function(id, &mut ctx)
                .map_err(|err| JitError::Codegen(format!("the {st:?} stub: {err:?}")))?;
            m.clear_context(&mut ctx);
        }
        Ok(())
    }

    fn runtime_data<M: ClModule + ?Sized>(&mut self, m: &mut M) -> Result<DataId, JitError> {
        if let Some(d) = self.rt_data {
            return Ok(d);
        }
        let d = m
            .declare_data(RUNTIME_SYMBOL, Linkage::Import, true, false)
            .map_err(|e| JitError::Link {
                loc: Default::default(),
                msg: format!("cannot import data symbol `{RUNTIME_SYMBOL}`: {e}"),
            })?;
        self.rt_data = Some(d);
        Ok(d)
    }

    /// Lowers IR function `id` into `out` (which is cleared first).
    pub fn lower_function<M: ClModule + ?Sized>(
        &mut self,
        m: &mut M,
        id: FuncId,
        name: UserFuncName,
        out: &mut cl::Function,
        fctx: &mut FunctionBuilderContext,
    ) -> Result<(), JitError> {
        let f = self.ir.func(id);
        self.traps.clear();
        out.clear();
        out.name = name;
        out.signature = self.func_signature(id);
        let caps = analysis::adstack_capacities(f)
            .map_err(|d| JitError::Verify(guardlift_ir::VerifyErrors(vec![d])))?;
        let frontend_config = m.isa().frontend_config();
        let b = FunctionBuilder::new(out, fctx);
        let mut fl = FnLower {
            lw: self,
            m,
            b,
            f,
            fname: &f.name,
            vals: vec![None; f.values.len()],
            blocks: vec![None; f.blocks.len()],
            caps,
            frefs: HashMap::new(),
            rt_gv: None,
            elided: Default::default(),
            elide_check: false,
            cache_slots: HashMap::new(),
            at: (0, 0),
        };
        fl.run()?;
        let FnLower { b, .. } = fl;
        b.finalize(frontend_config);
        Ok(())
    }
}

// ---- per-function lowering --------------------------------------------------

/// Arguments of a report entry call.
enum Report {
    Dict {
        site: u32,
        obj: cl::Value,
        word: cl::Value,
    },
    Adstack {
        site: u32,
        kind: ReportKind,
        capacity: u32,
        len: cl::Value,
    },
    /// Attribute `index` of `obj`, whose values array holds `capacity`.
    Bounds {
        site: u32,
        obj: cl::Value,
        index: u32,
        capacity: cl::Value,
    },
}

/// What the recover path passes to the join block.
enum Recover {
    Nothing,
    Zero(cl::Type),
}

struct FnLower<'a, 'm, M: ClModule + ?Sized> {
    lw: &'a mut Lowerer<'m>,
    m: &'a mut M,
    b: FunctionBuilder<'a>,
    f: &'m guardlift_ir::Function,
    fname: &'m str,
    vals: Vec<Option<cl::Value>>,
    blocks: Vec<Option<cl::Block>>,
    caps: HashMap<Value, u32>,
    frefs: HashMap<ClFuncId, cl::FuncRef>,
    rt_gv: Option<cl::GlobalValue>,
    /// Guarded underflow checks that cannot fail ([`guardlift_ir::elide`]).
    elided: std::collections::HashSet<(u32, u32)>,
    /// Is the instruction being lowered one of `elided`?
    elide_check: bool,
    /// The frame slot of each `guard.watch`'s cache, by (block, inst).
    cache_slots: HashMap<(u32, u32), cl::StackSlot>,
    /// (block, inst) of the instruction being lowered.
    at: (u32, u32),
}

/// Flags of IR `load`/`store` and of object-model accesses: may trap, may be unaligned.
fn mem() -> MemFlagsData {
    MemFlagsData::new()
}

/// Flags of adstack accesses: our own aligned stack slot.
fn stack_mem() -> MemFlagsData {
    MemFlagsData::trusted()
}

fn int_cc(cc: IntCC) -> condcodes::IntCC {
    use condcodes::IntCC as C;
    match cc {
        IntCC::Eq => C::Equal,
        IntCC::Ne => C::NotEqual,
        IntCC::Slt => C::SignedLessThan,
        IntCC::Sle => C::SignedLessThanOrEqual,
        IntCC::Sgt => C::SignedGreaterThan,
        IntCC::Sge => C::SignedGreaterThanOrEqual,
        IntCC::Ult => C::UnsignedLessThan,
        IntCC::Ule => C::UnsignedLessThanOrEqual,
        IntCC::Ugt => C::UnsignedGreaterThan,
        IntCC::Uge => C::UnsignedGreaterThanOrEqual,
    }
}

fn float_cc(cc: FloatCC) -> condcodes::FloatCC {
    use condcodes::FloatCC as C;
    match cc {
        // Ordered comparisons: false when either operand is NaN.
        FloatCC::Eq => C::Equal,
        FloatCC::Lt => C::LessThan,
        FloatCC::Le => C::LessThanOrEqual,
        FloatCC::Gt => C::GreaterThan,
        FloatCC::Ge => C::GreaterThanOrEqual,
        // `ne` = not `eq`: unordered or not equal, true on NaN.
        FloatCC::Ne => C::NotEqual,
    }
}

fn internal(fname: &str, what: impl std::fmt::Display) -> JitError {
    JitError::Codegen(format!("@{fname}: {what}"))
}

impl<'a, 'm, M: ClModule + ?Sized> FnLower<'a, 'm, M> {
    fn run(&mut self) -> Result<(), JitError> {
        let f = self.f;
        if f.blocks.is_empty() {
            return Err(internal(self.fname, "function has no blocks"));
        }
        let rpo = analysis::reverse_postorder(f);
        self.elided = guardlift_ir::elide::redundant_underflow_checks(f, &self.caps);
        // Does any branch target the IR entry block? Then the Cranelift entry
        // (which holds the function parameters) must be a separate block.
        let entry_targeted = rpo.iter().any(|&bi| {
            f.blocks[bi as usize]
                .insts
                .last()
                .is_some_and(|t| t.kind.successors().iter().any(|bc| bc.block.0 == 0))
        });
        for &bi in &rpo {
            let blk = self.b.create_block();
            for &p in &f.blocks[bi as usize].params {
                let t = cl_type(f.ty(p));
                let v = self.b.append_block_param(blk, t);
                self.vals[p.0 as usize] = Some(v);
            }
            self.blocks[bi as usize] = Some(blk);
        }
        let ir_entry = self.blocks[0].expect("entry is reachable");
        let cl_entry = if entry_targeted {
            self.b.create_block()
        } else {
            ir_entry
        };
        self.b.append_block_params_for_function_params(cl_entry);
        let params: Vec<cl::Value> = self.b.block_params(cl_entry).to_vec();
        for (&p, v) in f.params.iter().zip(params) {
            self.vals[p.0 as usize] = Some(v);
        }
        self.b.switch_to_block(cl_entry);
        self.init_watch_caches(&rpo);
        if entry_targeted {
            self.b.ins().jump(ir_entry, &[]);
        }
        for &bi in &rpo {
            let blk = self.blocks[bi as usize].expect("reachable block");
            if blk != cl_entry {
                self.b.switch_to_block(blk);
            }
            let bd = &f.blocks[bi as usize];
            for (ii, inst) in bd.insts.iter().enumerate() {
                self.b.set_srcloc(SourceLoc::new(inst.loc.line));
                self.elide_check = self.elided.contains(&(bi, ii as u32));
                self.at = (bi, ii as u32);
                self.inst(inst)?;
            }
            if !bd.insts.last().is_some_and(|i| i.kind.is_terminator()) {
                return Err(internal(
                    self.fname,
                    format!("block `{}` does not end in a terminator", bd.name),
                ));
            }
        }
        self.b.seal_all_blocks();
        Ok(())
    }

    // ---- the watch cache ----

    /// JIT only: one frame slot per `guard.watch` and per object access
    /// under the lifetime check, `(object, unwatch epoch)`, zeroed at
    /// function entry (a null object matches nothing). Object files call
    /// the runtime every time (their runtime is the C support's, which
    /// keeps no epoch).
    fn init_watch_caches(&mut self, rpo: &[u32]) {
        if !matches!(self.lw.rt, RtRef::Const(_)) {
            return;
        }
        let zero = self.iconst(types::I64, 0);
        for &bi in rpo {
            for (ii, inst) in self.f.blocks[bi as usize].insts.iter().enumerate() {
                let cached = match inst.kind {
                    InstKind::Watch { .. } => true,
                    InstKind::LoadAttr { .. }
                    | InstKind::StoreAttr { .. }
                    | InstKind::DictSlotLoad { .. }
                    | InstKind::DictSlotStore { .. } => {
                        self.checks_of(inst).contains(CheckKind::Lifetime)
                    }
                    _ => false,
                };
                if cached {
                    let ss = self.b.create_sized_stack_slot(StackSlotData::new(
                        StackSlotKind::ExplicitSlot,
                        16,
                        3,
                    ));
                    self.b.ins().stack_store(types::I64, zero, ss, 0);
                    self.b.ins().stack_store(types::I64, zero, ss, 8);
                    self.cache_slots.insert((bi, ii as u32), ss);
                }
            }
        }
    }

    /// The checks guarding `inst` that the lowering emits: its site's,
    /// less an underflow check [`crate::elide`] proved cannot fail.
    fn checks_of(&self, inst: &guardlift_ir::Inst) -> Checks {
        let Some(site) = inst.site.and_then(|id| self.lw.ir.site(id)) else {
            return Checks::EMPTY;
        };
        let c = site
            .checks
            .intersect(self.lw.ir.applicable_checks(&inst.kind));
        if self.elide_check {
            c.iter().filter(|&k| k != CheckKind::Adstack).collect()
        } else {
            c
        }
    }

    /// The unwatch epoch (bumped by every free), read from the JIT's runtime.
    fn load_epoch(&mut self, rt: u64) -> cl::Value {
        let at = self.iconst(types::I64, rt as i64);
        self.b.ins().load(
            types::I64,
            MemFlagsData::trusted(),
            at,
            guardlift_runtime::UNWATCH_EPOCH_OFFSET,
        )
    }

    /// Fills cold block `fail` (the builder is left there): jump to `join`
    /// with `recover`'s value — where a failed call-based check (lifetime)
    /// goes after the runtime reported.
    fn recover_to(&mut self, fail: cl::Block, join: cl::Block, recover: Recover) {
        self.b.switch_to_block(fail);
        let args: Vec<BlockArg> = match recover {
            Recover::Nothing => vec![],
            Recover::Zero(t) => vec![BlockArg::Value(self.zero(t))],
        };
        self.b.ins().jump(join, &args);
    }

    /// The lifetime check of an object access (`load_attr`, `store_attr`,
    /// `dict_slot.*`): `gl_check_live(obj, site)` through a stub; on 0 (reported, recover) jump to `join` with `recover`. The JIT
    /// skips the call while nothing was ever freed (epoch 0) and when this
    /// site already found this very object live at the current epoch (the
    /// frame cache; no free since means it is still live). Leaves the
    /// builder where the object is live.
    fn obj_live_check(
        &mut self,
        id: SiteId,
        o: cl::Value,
        join: cl::Block,
        recover: Recover,
    ) -> Result<(), JitError> {
        let site = self.site(id)?;
        let ok = self.b.create_block();
        let fail = self.b.create_block();
        self.b.set_cold_block(fail);
        let (RtRef::Const(p), Some(&ss)) = (self.lw.rt, self.cache_slots.get(&self.at)) else {
            let s = self.iconst(types::I32, site as i64);
            let live = self
                .call_stub(Stub::Check(Entry::CheckLive), &[o, s])?
                .ok_or_else(|| internal(self.fname, "gl_check_live returns nothing"))?;
            self.b.ins().brif(live, ok, &[], fail, &[]);
            self.recover_to(fail, join, recover);
            self.b.switch_to_block(ok);
            return Ok(());
        };
        let epoch = self.load_epoch(p);
        let probe = self.b.create_block();
        self.b.ins().brif(epoch, probe, &[], ok, &[]);
        self.b.switch_to_block(probe);
        let seen_obj = self.b.ins().stack_load(types::I64, types::I64, ss, 0);
        let seen_epoch = self.b.ins().stack_load(types::I64, types::I64, ss, 8);
        let same_obj = self.b.ins().icmp(condcodes::IntCC::Equal, seen_obj, o);
        let same_epoch = self
            .b
            .ins()
            .icmp(condcodes::IntCC::Equal, seen_epoch, epoch);
        let hit = self.b.ins().band(same_obj, same_epoch);
        let miss = self.b.create_block();
        self.b.set_cold_block(miss);
        self.b.ins().brif(hit, ok, &[], miss, &[]);
        self.b.switch_to_block(miss);
        let s = self.iconst(types::I32, site as i64);
        let live = self
            .call_stub(Stub::Check(Entry::CheckLive), &[o, s])?
            .ok_or_else(|| internal(self.fname, "gl_check_live returns nothing"))?;
        let remember = self.b.create_block();
        self.b.set_cold_block(remember);
        self.b.ins().brif(live, remember, &[], fail, &[]);
        self.b.switch_to_block(remember);
        self.b.ins().stack_store(types::I64, o, ss, 0);
        self.b.ins().stack_store(types::I64, epoch, ss, 8);
        self.b.ins().jump(ok, &[]);
        self.recover_to(fail, join, recover);
        self.b.switch_to_block(ok);
        Ok(())
    }

    /// The lifetime check of a raw `load`/`store` of `width` bytes at
    /// `addr`: `gl_check_mem(addr, width, site)` through a stub; on 0 (reported, recover) jump to `join` with `recover`. The JIT
    /// skips the call while nothing was ever freed (epoch 0).
    fn mem_live_check(
        &mut self,
        id: SiteId,
        addr: cl::Value,
        width: u32,
        join: cl::Block,
        recover: Recover,
    ) -> Result<(), JitError> {
        let site = self.site(id)?;
        let ok = self.b.create_block();
        let fail = self.b.create_block();
        self.b.set_cold_block(fail);
        if let RtRef::Const(p) = self.lw.rt {
            let epoch = self.load_epoch(p);
            let call = self.b.create_block();
            self.b.set_cold_block(call);
            self.b.ins().brif(epoch, call, &[], ok, &[]);
            self.b.switch_to_block(call);
        }
        let w = self.iconst(types::I32, width as i64);
        let s = self.iconst(types::I32, site as i64);
        let live = self
            .call_stub(Stub::Check(Entry::CheckMem), &[addr, w, s])?
            .ok_or_else(|| internal(self.fname, "gl_check_mem returns nothing"))?;
        self.b.ins().brif(live, ok, &[], fail, &[]);
        self.recover_to(fail, join, recover);
        self.b.switch_to_block(ok);
        Ok(())
    }

    /// The bounds check of `load_attr`/`store_attr` on the values fast path
    /// (`base` from [`Self::attr_fast_path`]; `checked`: the dict check
    /// made it the values pointer, else it is the word): load the capacity
    /// word before the values array and fail when `index >= capacity`.
    #[allow(clippy::too_many_arguments)]
    fn bounds_check(
        &mut self,
        id: SiteId,
        o: cl::Value,
        base: cl::Value,
        index: u32,
        checked: bool,
        join: cl::Block,
        recover: Recover,
    ) -> Result<(), JitError> {
        let site = self.site(id)?;
        let off = self.capacity_offset(checked)?;
        let capacity = self.b.ins().load(types::I64, mem(), base, off);
        let bad = self.b.ins().icmp_imm_u(
            condcodes::IntCC::UnsignedLessThanOrEqual,
            capacity,
            index as i64,
        );
        let report = Report::Bounds {
            site,
            obj: o,
            index,
            capacity,
        };
        self.check(bad, report, join, recover)
    }

    /// `addr + offset` (the bytes a raw access touches start there).
    fn effective_addr(&mut self, addr: cl::Value, offset: i32) -> cl::Value {
        if offset == 0 {
            addr
        } else {
            self.b.ins().iadd_imm_s(addr, offset as i64)
        }
    }

    /// Calls entry `e` with the runtime pointer, `args` and `id`'s
    /// runtime-global site (a guarded `obj_new` / `obj_free`).
    fn call_at_site(
        &mut self,
        e: Entry,
        id: SiteId,
        args: &[cl::Value],
    ) -> Result<Option<cl::Value>, JitError> {
        let site = self.site(id)?;
        let mut full = vec![self.rt()?];
        full.extend_from_slice(args);
        full.push(self.iconst(types::I32, site as i64));
        self.call_entry(e, &full)
    }

    /// `guard.watch %o`: register the object's slot with the watch list.
    /// Watching is idempotent and only `obj_free` unwatches (bumping the
    /// runtime's unwatch epoch), so the JIT skips the call when this site
    /// already watched this very object in this frame and the epoch has
    /// not moved: a loop watches its object once per call, not once per
    /// iteration. The cache only skips calls that would change nothing, so
    /// the watch list — and every clobber report — is what the interpreter,
    /// which watches every time, has.
    fn watch(&mut self, o: cl::Value) -> Result<(), JitError> {
        let (RtRef::Const(p), Some(&ss)) = (self.lw.rt, self.cache_slots.get(&self.at)) else {
            let rt = self.rt()?;
            self.call_entry(Entry::Watch, &[rt, o])?;
            return Ok(());
        };
        let epoch_at = self.iconst(types::I64, p as i64);
        let flags = MemFlagsData::trusted();
        let epoch = self.b.ins().load(
            types::I64,
            flags,
            epoch_at,
            guardlift_runtime::UNWATCH_EPOCH_OFFSET,
        );
        let seen_obj = self.b.ins().stack_load(types::I64, types::I64, ss, 0);
        let seen_epoch = self.b.ins().stack_load(types::I64, types::I64, ss, 8);
        let same_obj = self.b.ins().icmp(condcodes::IntCC::Equal, seen_obj, o);
        let same_epoch = self
            .b
            .ins()
            .icmp(condcodes::IntCC::Equal, seen_epoch, epoch);
        let hit = self.b.ins().band(same_obj, same_epoch);
        let miss = self.b.create_block();
        self.b.set_cold_block(miss);
        let done = self.b.create_block();
        self.b.ins().brif(hit, done, &[], miss, &[]);
        self.b.switch_to_block(miss);
        let rt = self.rt()?;
        self.call_entry(Entry::Watch, &[rt, o])?;
        self.b.ins().stack_store(types::I64, o, ss, 0);
        self.b.ins().stack_store(types::I64, epoch, ss, 8);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        Ok(())
    }

    // ---- small helpers ----

    fn val(&self, v: Value) -> Result<cl::Value, JitError> {
        self.vals
            .get(v.0 as usize)
            .copied()
            .flatten()
            .ok_or_else(|| internal(self.fname, format!("value %{} used before definition", v.0)))
    }

    fn ty(&self, v: Value) -> Type {
        self.f.ty(v)
    }

    fn def(&mut self, r: Option<Value>, v: cl::Value) {
        if let Some(r) = r {
            self.vals[r.0 as usize] = Some(v);
        }
    }

    fn iconst(&mut self, ty: cl::Type, imm: i64) -> cl::Value {
        // Narrow constants are stored zero-extended.
        let bits = ty.bits();
        let imm = if bits < 64 {
            (imm as u64 & ((1u64 << bits) - 1)) as i64
        } else {
            imm
        };
        self.b.ins().iconst(ty, imm)
    }

    fn zero(&mut self, ty: cl::Type) -> cl::Value {
        match ty {
            types::F32 => self.b.ins().f32const(0.0f32),
            types::F64 => self.b.ins().f64const(0.0f64),
            _ => self.iconst(ty, 0),
        }
    }

    fn site(&self, id: SiteId) -> Result<u32, JitError> {
        self.lw
            .site_base
            .checked_add(id.0)
            .ok_or_else(|| internal(self.fname, "site id overflows u32"))
    }

    fn cap(&self, stack: Value) -> Result<u32, JitError> {
        self.caps
            .get(&stack)
            .copied()
            .ok_or_else(|| internal(self.fname, format!("no adstack capacity for %{}", stack.0)))
    }

    fn stack_elem(&self, stack: Value) -> Result<AdElem, JitError> {
        self.ty(stack)
            .adstack_elem()
            .ok_or_else(|| internal(self.fname, format!("%{} is not an adstack handle", stack.0)))
    }

    /// A FuncRef for a declared Cranelift function.
    fn fref(&mut self, id: ClFuncId) -> cl::FuncRef {
        if let Some(&r) = self.frefs.get(&id) {
            return r;
        }
        let decl = self.m.declarations().get_function_decl(id);
        let colocated = self.lw.colocated_calls && decl.linkage.is_final();
        let sig = decl.signature.clone();
        let sig = self.b.import_signature(sig);
        let name = self
            .b
            .func
            .declare_imported_user_function(UserExternalName {
                namespace: 0,
                index: id.as_u32(),
            });
        let r = self.b.import_function(ExtFuncData {
            name: ExternalName::user(name),
            signature: sig,
            colocated,
            patchable: false,
        });
        self.frefs.insert(id, r);
        r
    }

    fn import(&mut self, symbol: &str, sig: &Signature) -> Result<cl::FuncRef, JitError> {
        let id = self.lw.import(self.m, symbol, sig)?;
        Ok(self.fref(id))
    }

    /// The runtime pointer, materialized at the point of use (cold or slow paths).
    fn rt(&mut self) -> Result<cl::Value, JitError> {
        match self.lw.rt {
            RtRef::Const(p) => Ok(self.b.ins().iconst(types::I64, p as i64)),
            RtRef::Symbol => {
                let gv = match self.rt_gv {
                    Some(g) => g,
                    None => {
                        let d = self.lw.runtime_data(self.m)?;
                        let g = self.m.declare_data_in_func(d, self.b.func);
                        self.rt_gv = Some(g);
                        g
                    }
                };
                Ok(self.b.ins().symbol_value(types::I64, gv))
            }
        }
    }

    /// Calls `st`'s stub with `args` (no runtime pointer); its result, if any.
    fn call_stub(&mut self, st: Stub, args: &[cl::Value]) -> Result<Option<cl::Value>, JitError> {
        let id = self.lw.stub(self.m, st)?;
        let r = self.fref(id);
        let call = self.b.ins().call(r, args);
        Ok(self.b.inst_results(call).first().copied())
    }

    fn call_entry(&mut self, e: Entry, args: &[cl::Value]) -> Result<Option<cl::Value>, JitError> {
        let sig = e.signature(self.lw.call_conv);
        let r = self.import(e.symbol(), &sig)?;
        let call = self.b.ins().call(r, args);
        Ok(self.b.inst_results(call).first().copied())
    }

    fn call_builtin(
        &mut self,
        b: &'static Builtin,
        args: &[cl::Value],
    ) -> Result<Option<cl::Value>, JitError> {
        let sig = builtin_signature(self.lw.call_conv, b);
        let r = self.import(b.symbol, &sig)?;
        let mut full = Vec::with_capacity(args.len() + 1);
        if b.needs_rt {
            full.push(self.rt()?);
        }
        full.extend_from_slice(args);
        let call = self.b.ins().call(r, &full);
        Ok(self.b.inst_results(call).first().copied())
    }

    /// Calls a built-in slow path through its stub (no runtime pointer here).
    fn slow_path(&mut self, name: &str, args: &[cl::Value]) -> Result<Option<cl::Value>, JitError> {
        let b = abi::builtin(name)
            .ok_or_else(|| internal(self.fname, format!("runtime has no built-in `{name}`")))?;
        self.call_stub(Stub::Slow(b), args)
    }

    fn emit_report(&mut self, r: Report) -> Result<(), JitError> {
        match r {
            Report::Dict { site, obj, word } => {
                let s = self.iconst(types::I32, site as i64);
                self.call_stub(Stub::Report(Entry::ReportDict), &[s, obj, word])?;
            }
            Report::Adstack {
                site,
                kind,
                capacity,
                len,
            } => {
                let s = self.iconst(types::I32, site as i64);
                let k = self.iconst(types::I32, kind.code() as i64);
                let c = self.iconst(types::I64, capacity as i64);
                self.call_stub(Stub::Report(Entry::ReportAdstack), &[s, k, c, len])?;
            }
            Report::Bounds {
                site,
                obj,
                index,
                capacity,
            } => {
                let s = self.iconst(types::I32, site as i64);
                let i = self.iconst(types::I64, index as i64);
                self.call_stub(Stub::Report(Entry::ReportBounds), &[s, obj, i, capacity])?;
            }
        }
        Ok(())
    }

    /// The inline check of a guard: when `bad` is non-zero, branch to a cold
    /// block that reports and then jumps to `join` with the recover value.
    /// Leaves the builder in the block where the check passed.
    fn check(
        &mut self,
        bad: cl::Value,
        report: Report,
        join: cl::Block,
        recover: Recover,
    ) -> Result<(), JitError> {
        match guard_strategy(self.lw.mode) {
            GuardStrategy::ReportCall => {
                let cold = self.b.create_block();
                self.b.set_cold_block(cold);
                let ok = self.b.create_block();
                self.b.ins().brif(bad, cold, &[], ok, &[]);
                self.b.switch_to_block(cold);
                self.emit_report(report)?;
                let args: Vec<BlockArg> = match recover {
                    Recover::Nothing => vec![],
                    Recover::Zero(t) => vec![BlockArg::Value(self.zero(t))],
                };
                self.b.ins().jump(join, &args);
                self.b.switch_to_block(ok);
            }
            GuardStrategy::Trap => {
                // Nothing rejoins: the trap ends the process.
                let _ = (join, recover);
                let cold = self.b.create_block();
                self.b.set_cold_block(cold);
                let ok = self.b.create_block();
                self.b.ins().brif(bad, cold, &[], ok, &[]);
                self.b.switch_to_block(cold);
                let (site, kind, vals) = match report {
                    Report::Dict { site, obj, word } => {
                        (site, ReportKind::DictSlotTag, vec![obj, word])
                    }
                    Report::Adstack {
                        site,
                        kind,
                        capacity,
                        len,
                    } => {
                        let c = self.iconst(types::I64, capacity as i64);
                        (site, kind, vec![c, len])
                    }
                    Report::Bounds {
                        site,
                        obj,
                        index,
                        capacity,
                    } => {
                        let i = self.iconst(types::I64, index as i64);
                        (site, ReportKind::AttrOutOfBounds, vec![obj, i, capacity])
                    }
                };
                self.emit_trap(site, kind, &vals)?;
                self.b.switch_to_block(ok);
            }
        }
        Ok(())
    }

    /// The trap sequence (in the current, cold block): tag the runtime's
    /// trap scratch area with the site's token (`owner`), fence, store
    /// `vals` (I64), publish `ready = token` (a sequentially consistent
    /// store), then `trap` with `kind`'s user code. No read-modify-write and
    /// no call: nothing here constrains register allocation of the hot path.
    /// Every instruction carries the source location that maps the trap
    /// back to `(site, kind)`.
    fn emit_trap(
        &mut self,
        site: u32,
        kind: ReportKind,
        vals: &[cl::Value],
    ) -> Result<(), JitError> {
        use guardlift_runtime::trap::TrapScratch;
        let code = cl::TrapCode::user(kind.trap_code())
            .ok_or_else(|| internal(self.fname, "trap code out of Cranelift's user range"))?;
        let idx = u32::try_from(self.lw.traps.len())
            .ok()
            .filter(|&i| i < TRAP_SRCLOC_BIT)
            .ok_or_else(|| internal(self.fname, "too many trap sites"))?;
        self.lw.traps.push((site, kind));
        let saved = self.b.srcloc();
        self.b.set_srcloc(SourceLoc::new(TRAP_SRCLOC_BIT | idx));
        let token = self.iconst(types::I64, TrapScratch::token(site) as i64);
        let mut args = vec![token];
        args.extend_from_slice(vals);
        while args.len() < 1 + guardlift_runtime::trap::TRAP_VALUE_COUNT {
            args.push(self.iconst(types::I64, 0));
        }
        self.call_stub(Stub::TrapScratch, &args)?;
        self.b.ins().trap(code);
        self.b.set_srcloc(saved);
        Ok(())
    }

    /// `((word + 1) & 0b110) != 0`: the managed-dict word's tag is invalid.
    fn dict_bad(&mut self, word: cl::Value) -> cl::Value {
        let t = self.b.ins().iadd_imm_u(word, DICT_CHECK_ADD as i64);
        self.b.ins().band_imm_u(t, DICT_CHECK_MASK as i64)
    }

    fn slot_offset(&self) -> i32 {
        self.lw.ir.layout.dict_slot_offset()
    }

    /// Loads the managed-dict word of `obj`.
    fn load_word(&mut self, obj: cl::Value) -> cl::Value {
        let off = self.slot_offset();
        self.b.ins().load(types::I64, mem(), obj, off)
    }

    /// The constant offset of attribute `index` from the base that
    /// [`Self::attr_fast_path`] returns: `word + 1 + 8*index` from the word
    /// (uninstrumented), or `8*index` from `word + DICT_CHECK_ADD` (the
    /// checked path, whose tag test already computed that sum).
    fn attr_offset(&self, index: u32, checked: bool) -> Result<i32, JitError> {
        let from_word = layout::values_ptr(0) as i64 + layout::attr_offset(index) as i64;
        let off = if checked {
            from_word - DICT_CHECK_ADD as i64
        } else {
            from_word
        };
        i32::try_from(off).map_err(|_| internal(self.fname, "attribute offset overflows i32"))
    }

    /// The offset of the values array's capacity word from the base that
    /// [`Self::attr_fast_path`] returns (see [`Self::attr_offset`]).
    fn capacity_offset(&self, checked: bool) -> Result<i32, JitError> {
        let from_word = layout::values_ptr(0) as i64 + layout::VALUES_CAPACITY_OFFSET as i64;
        let off = if checked {
            from_word - DICT_CHECK_ADD as i64
        } else {
            from_word
        };
        i32::try_from(off).map_err(|_| internal(self.fname, "capacity offset overflows i32"))
    }

    /// The dispatch of `load_attr`/`store_attr` on the managed-dict word.
    /// Leaves the builder in the fast-path block (falls through from the
    /// test) and returns the base of the values access and the cold
    /// slow-path block, which the caller fills in.
    ///
    /// Uninstrumented: `test word, 1; jz slow` — values-tagged words take
    /// the fast path. Guarded: one test serves the fast path and the check,
    /// `t = word + 1; test t, 7; jnz other` (a valid values tag `0b111`
    /// wraps to `0b000`, so `t` is the values pointer), and only the cold
    /// `other` block tells a dict pointer (slow path) from a bad tag
    /// (report; recover: rejoin `join` with `recover`'s value).
    fn attr_fast_path(
        &mut self,
        site: Option<SiteId>,
        word: cl::Value,
        join: cl::Block,
        recover: Recover,
        report: impl FnOnce(u32) -> Report,
    ) -> Result<(cl::Value, cl::Block), JitError> {
        let fast = self.b.create_block();
        match site {
            None => {
                let slow = self.b.create_block();
                self.b.set_cold_block(slow);
                let is_values = self.b.ins().band_imm_u(word, layout::VALUES_BIT as i64);
                self.b.ins().brif(is_values, fast, &[], slow, &[]);
                self.b.switch_to_block(fast);
                Ok((word, slow))
            }
            Some(id) => {
                let site = self.site(id)?;
                let other = self.b.create_block();
                self.b.set_cold_block(other);
                let t = self.b.ins().iadd_imm_u(word, DICT_CHECK_ADD as i64);
                let not_values = self.b.ins().band_imm_u(t, layout::TAG_MASK as i64);
                self.b.ins().brif(not_values, other, &[], fast, &[]);
                self.b.switch_to_block(other);
                let bad = self.b.ins().band_imm_u(t, DICT_CHECK_MASK as i64);
                self.check(bad, report(site), join, recover)?;
                // A valid tag that is not the values tag: a dict (or none yet).
                let slow = self
                    .b
                    .current_block()
                    .ok_or_else(|| internal(self.fname, "no block after a check"))?;
                self.b.set_cold_block(slow);
                self.b.switch_to_block(fast);
                Ok((t, slow))
            }
        }
    }

    /// Zero-extended raw bits of `v` (of IR type `t`) as an i64.
    fn bits_u64(&mut self, v: cl::Value, t: Type) -> cl::Value {
        match cl_type(t) {
            types::I8 | types::I32 => self.b.ins().uextend(types::I64, v),
            types::F32 => {
                let i = self.b.ins().bitcast(types::I32, mem(), v);
                self.b.ins().uextend(types::I64, i)
            }
            types::F64 => self.b.ins().bitcast(types::I64, mem(), v),
            _ => v,
        }
    }

    /// `handle + n * entry_bytes`, the base from which entry `n - 1` is at
    /// `primal_offset(e, 0) - entry_bytes(e)` (see [`Self::top_offsets`]).
    fn entry_base(&mut self, handle: cl::Value, n: cl::Value, e: AdElem) -> cl::Value {
        let scaled = self.b.ins().imul_imm_u(n, adstack::entry_bytes(e) as i64);
        self.b.ins().iadd(handle, scaled)
    }

    /// Offsets (primal, adjoint) of entry `n` from `entry_base(n)`.
    fn push_offsets(e: AdElem) -> (i32, i32) {
        (
            adstack::primal_offset(e, 0) as i32,
            adstack::adjoint_offset(e, 0) as i32,
        )
    }

    /// Offsets (primal, adjoint) of entry `n - 1` from `entry_base(n)`.
    fn top_offsets(e: AdElem) -> (i32, i32) {
        let eb = adstack::entry_bytes(e) as i32;
        (
            adstack::primal_offset(e, 0) as i32 - eb,
            adstack::adjoint_offset(e, 0) as i32 - eb,
        )
    }

    fn load_count(&mut self, handle: cl::Value) -> cl::Value {
        self.b.ins().load(
            types::I64,
            stack_mem(),
            handle,
            adstack::ADSTACK_COUNT_OFFSET as i32,
        )
    }

    fn store_count(&mut self, handle: cl::Value, n: cl::Value) {
        self.b
            .ins()
            .store(stack_mem(), n, handle, adstack::ADSTACK_COUNT_OFFSET as i32);
    }

    /// For a guarded adstack op: branch to a cold underflow report when `n == 0`.
    fn underflow_check(
        &mut self,
        site: Option<SiteId>,
        stack: Value,
        n: cl::Value,
        join: Option<cl::Block>,
        recover: Recover,
    ) -> Result<(), JitError> {
        let (Some(id), Some(join)) = (site, join) else {
            return Ok(());
        };
        let site = self.site(id)?;
        let capacity = self.cap(stack)?;
        let bad = self.b.ins().icmp_imm_u(condcodes::IntCC::Equal, n, 0);
        let report = Report::Adstack {
            site,
            kind: ReportKind::AdstackUnderflow,
            capacity,
            len: n,
        };
        self.check(bad, report, join, recover)
    }

    /// Creates the join block of a guarded op (with a param of `ty` if the op yields one).
    fn join_block(
        &mut self,
        guarded: bool,
        ty: Option<cl::Type>,
    ) -> (Option<cl::Block>, Option<cl::Value>) {
        if !guarded {
            return (None, None);
        }
        let j = self.b.create_block();
        let p = ty.map(|t| self.b.append_block_param(j, t));
        (Some(j), p)
    }

    /// Ends the passing path of a guarded op: jump to the join with `result`, continue there.
    fn rejoin(&mut self, join: Option<cl::Block>, result: Option<cl::Value>) {
        if let Some(j) = join {
            let args: Vec<BlockArg> = result.into_iter().map(BlockArg::Value).collect();
            self.b.ins().jump(j, &args);
            self.b.switch_to_block(j);
        }
    }

    fn block_args(&self, args: &[Value]) -> Result<Vec<BlockArg>, JitError> {
        args.iter()
            .map(|&a| self.val(a).map(BlockArg::Value))
            .collect()
    }

    fn target(&self, b: Block) -> Result<cl::Block, JitError> {
        self.blocks
            .get(b.0 as usize)
            .copied()
            .flatten()
            .ok_or_else(|| internal(self.fname, format!("branch to unknown block #{}", b.0)))
    }

    // ---- instructions ----

    fn inst(&mut self, inst: &guardlift_ir::Inst) -> Result<(), JitError> {
        use InstKind::*;
        let r = inst.result;
        // The site of each check that guards this op (and can fail).
        let checks = self.checks_of(inst);
        let on = |k: CheckKind| inst.site.filter(|_| checks.contains(k));
        let lifetime = on(CheckKind::Lifetime);
        let site = on(CheckKind::Adstack);
        match &inst.kind {
            Iconst { ty, imm } => {
                let v = self.iconst(cl_type(*ty), *imm);
                self.def(r, v);
            }
            Fconst { ty, value } => {
                let v = match ty {
                    Type::F32 => self.b.ins().f32const(*value as f32),
                    _ => self.b.ins().f64const(*value),
                };
                self.def(r, v);
            }
            Binary { op, a, b } => {
                let (x, y) = (self.val(*a)?, self.val(*b)?);
                let ins = self.b.ins();
                let v = match op {
                    BinOp::Iadd => ins.iadd(x, y),
                    BinOp::Isub => ins.isub(x, y),
                    BinOp::Imul => ins.imul(x, y),
                    BinOp::Band => ins.band(x, y),
                    BinOp::Bor => ins.bor(x, y),
                    BinOp::Bxor => ins.bxor(x, y),
                    // Cranelift shifts take the amount modulo the operand width.
                    BinOp::Ishl => ins.ishl(x, y),
                    BinOp::Ushr => ins.ushr(x, y),
                    BinOp::Sshr => ins.sshr(x, y),
                    BinOp::Fadd => ins.fadd(x, y),
                    BinOp::Fsub => ins.fsub(x, y),
                    BinOp::Fmul => ins.fmul(x, y),
                    BinOp::Fdiv => ins.fdiv(x, y),
                    // NaN if either operand is NaN; -0.0 < +0.0.
                    BinOp::Fmin => ins.fmin(x, y),
                    BinOp::Fmax => ins.fmax(x, y),
                };
                self.def(r, v);
            }
            Unary { op, a } => {
                let x = self.val(*a)?;
                let ins = self.b.ins();
                let v = match op {
                    UnOp::Fneg => ins.fneg(x),
                    UnOp::Fabs => ins.fabs(x),
                    UnOp::Fsqrt => ins.sqrt(x),
                };
                self.def(r, v);
            }
            Icmp { cc, a, b } => {
                let (x, y) = (self.val(*a)?, self.val(*b)?);
                let v = self.b.ins().icmp(int_cc(*cc), x, y);
                self.def(r, v);
            }
            Fcmp { cc, a, b } => {
                let (x, y) = (self.val(*a)?, self.val(*b)?);
                let v = self.b.ins().fcmp(float_cc(*cc), x, y);
                self.def(r, v);
            }
            Select { cond, a, b } => {
                let (c, x, y) = (self.val(*cond)?, self.val(*a)?, self.val(*b)?);
                let v = self.b.ins().select(c, x, y);
                self.def(r, v);
            }
            Conv { op, ty, a } => {
                let v = self.conv(*op, *ty, *a)?;
                self.def(r, v);
            }
            Load { ty, addr, offset } => {
                let p = self.val(*addr)?;
                let t = cl_type(*ty);
                let (join, param) = self.join_block(lifetime.is_some(), Some(t));
                if let (Some(id), Some(j)) = (lifetime, join) {
                    let eff = self.effective_addr(p, *offset);
                    self.mem_live_check(id, eff, ty.bytes(), j, Recover::Zero(t))?;
                }
                let v = self.b.ins().load(t, mem(), p, *offset);
                self.rejoin(join, Some(v));
                self.def(r, param.unwrap_or(v));
            }
            Store {
                value,
                addr,
                offset,
            } => {
                let (x, p) = (self.val(*value)?, self.val(*addr)?);
                let t = self.ty(*value);
                let (join, _) = self.join_block(lifetime.is_some(), None);
                if let (Some(id), Some(j)) = (lifetime, join) {
                    let eff = self.effective_addr(p, *offset);
                    self.mem_live_check(id, eff, t.bytes(), j, Recover::Nothing)?;
                }
                match on(CheckKind::Clobber) {
                    None => {
                        self.b.ins().store(mem(), x, p, *offset);
                    }
                    Some(id) if guard_strategy(self.lw.mode) == GuardStrategy::Trap => {
                        // Trap mode: the runtime only answers "overlaps?";
                        // the cold path stores the observation and traps.
                        let site = self.site(id)?;
                        let eff = self.effective_addr(p, *offset);
                        let rt = self.rt()?;
                        let w = self.iconst(types::I32, t.bytes() as i64);
                        let hit = self
                            .call_entry(Entry::ClobberOverlaps, &[rt, eff, w])?
                            .ok_or_else(|| internal(self.fname, "clobber test returns nothing"))?;
                        let cold = self.b.create_block();
                        self.b.set_cold_block(cold);
                        let do_store = self.b.create_block();
                        self.b.ins().brif(hit, cold, &[], do_store, &[]);
                        self.b.switch_to_block(cold);
                        let bits = self.bits_u64(x, t);
                        let w64 = self.iconst(types::I64, t.bytes() as i64);
                        self.emit_trap(site, ReportKind::SlotClobber, &[eff, w64, bits])?;
                        self.b.switch_to_block(do_store);
                        self.b.ins().store(mem(), x, p, *offset);
                    }
                    Some(id) => {
                        // Clobber check: the runtime decides; store only on 0.
                        let site = self.site(id)?;
                        let eff = self.effective_addr(p, *offset);
                        let bits = self.bits_u64(x, t);
                        let rt = self.rt()?;
                        let s = self.iconst(types::I32, site as i64);
                        let w = self.iconst(types::I32, t.bytes() as i64);
                        let skip = self
                            .call_entry(Entry::ClobberCheck, &[rt, s, eff, w, bits])?
                            .ok_or_else(|| internal(self.fname, "clobber check returns nothing"))?;
                        let do_store = self.b.create_block();
                        let done = self.b.create_block();
                        self.b.ins().brif(skip, done, &[], do_store, &[]);
                        self.b.switch_to_block(do_store);
                        self.b.ins().store(mem(), x, p, *offset);
                        self.b.ins().jump(done, &[]);
                        self.b.switch_to_block(done);
                    }
                }
                self.rejoin(join, None);
            }
            Call { callee, args } => {
                let argv: Vec<cl::Value> = args
                    .iter()
                    .map(|&a| self.val(a))
                    .collect::<Result<_, _>>()?;
                let res = match callee {
                    Callee::Func(fid) => {
                        let id = *self
                            .lw
                            .funcs
                            .get(fid.0 as usize)
                            .ok_or_else(|| internal(self.fname, "call to unknown function"))?;
                        let fr = self.fref(id);
                        let call = self.b.ins().call(fr, &argv);
                        self.b.inst_results(call).first().copied()
                    }
                    Callee::Extern(eid) => {
                        let binding = self
                            .lw
                            .externs
                            .get(eid.0 as usize)
                            .cloned()
                            .ok_or_else(|| internal(self.fname, "call to unknown extern"))?;
                        match binding {
                            ExternBinding::Builtin(b) => match (b.name, inst.site) {
                                // Guarded built-ins: the runtime records the
                                // allocation site / checks the free.
                                ("obj_new", Some(id)) if !checks.is_empty() => {
                                    self.call_at_site(Entry::ObjNewAt, id, &argv)?
                                }
                                ("obj_free", Some(id)) if lifetime.is_some() => {
                                    self.call_at_site(Entry::ObjFreeAt, id, &argv)?
                                }
                                _ => self.call_builtin(b, &argv)?,
                            },
                            ExternBinding::Host { symbol } => {
                                let e = self.lw.ir.ext(*eid);
                                let sig = ir_signature(self.lw.call_conv, &e.params, e.ret);
                                let fr = self.import(&symbol, &sig)?;
                                let call = self.b.ins().call(fr, &argv);
                                self.b.inst_results(call).first().copied()
                            }
                        }
                    }
                };
                if let Some(rv) = r {
                    let v = res.ok_or_else(|| {
                        internal(self.fname, "call result of a callee that returns nothing")
                    })?;
                    self.vals[rv.0 as usize] = Some(v);
                }
            }
            Jump { dest } => {
                let t = self.target(dest.block)?;
                let args = self.block_args(&dest.args)?;
                self.b.ins().jump(t, &args);
            }
            Brif {
                cond,
                then_dest,
                else_dest,
            } => {
                let c = self.val(*cond)?;
                let (t1, t2) = (self.target(then_dest.block)?, self.target(else_dest.block)?);
                let a1 = self.block_args(&then_dest.args)?;
                let a2 = self.block_args(&else_dest.args)?;
                self.b.ins().brif(c, t1, &a1, t2, &a2);
            }
            Return { value } => {
                let rv: Vec<cl::Value> = value
                    .iter()
                    .map(|&v| self.val(v))
                    .collect::<Result<_, _>>()?;
                self.b.ins().return_(&rv);
            }
            DictSlotLoad { obj } => {
                let o = self.val(*obj)?;
                let (join, param) = self.join_block(lifetime.is_some(), Some(types::I64));
                if let (Some(id), Some(j)) = (lifetime, join) {
                    self.obj_live_check(id, o, j, Recover::Zero(types::I64))?;
                }
                let word = self.load_word(o);
                if let Some(id) = on(CheckKind::Dict) {
                    // Recover: the word itself is the result, so the cold path
                    // simply rejoins.
                    let site = self.site(id)?;
                    let ok = self.b.create_block();
                    let bad = self.dict_bad(word);
                    self.check(
                        bad,
                        Report::Dict { site, obj: o, word },
                        ok,
                        Recover::Nothing,
                    )?;
                    self.b.ins().jump(ok, &[]);
                    self.b.switch_to_block(ok);
                }
                self.rejoin(join, Some(word));
                self.def(r, param.unwrap_or(word));
            }
            DictSlotStore { obj, word } => {
                let (o, w) = (self.val(*obj)?, self.val(*word)?);
                let dict = on(CheckKind::Dict);
                let (join, _) = self.join_block(lifetime.is_some() || dict.is_some(), None);
                if let (Some(id), Some(j)) = (lifetime, join) {
                    self.obj_live_check(id, o, j, Recover::Nothing)?;
                }
                if let (Some(id), Some(j)) = (dict, join) {
                    // Checked before the write; recover: the slot is unchanged.
                    let site = self.site(id)?;
                    let bad = self.dict_bad(w);
                    self.check(
                        bad,
                        Report::Dict {
                            site,
                            obj: o,
                            word: w,
                        },
                        j,
                        Recover::Nothing,
                    )?;
                }
                let off = self.slot_offset();
                self.b.ins().store(mem(), w, o, off);
                if let Some(id) = dict {
                    // The runtime's last-known-write record (as the interpreter keeps it).
                    let site = self.site(id)?;
                    let rt = self.rt()?;
                    let s = self.iconst(types::I32, site as i64);
                    self.call_entry(Entry::NoteSlotWrite, &[rt, s, o, w])?;
                }
                self.rejoin(join, None);
            }
            LoadAttr { obj, index } => {
                let o = self.val(*obj)?;
                let join = self.b.create_block();
                let res = self.b.append_block_param(join, types::I64);
                // Recover (every check): the result is 0, nothing is read.
                if let Some(id) = lifetime {
                    self.obj_live_check(id, o, join, Recover::Zero(types::I64))?;
                }
                let word = self.load_word(o);
                let report = |site| Report::Dict { site, obj: o, word };
                let dict = on(CheckKind::Dict);
                let (base, slow) =
                    self.attr_fast_path(dict, word, join, Recover::Zero(types::I64), report)?;
                let checked = dict.is_some();
                if let Some(id) = on(CheckKind::Bounds) {
                    self.bounds_check(
                        id,
                        o,
                        base,
                        *index,
                        checked,
                        join,
                        Recover::Zero(types::I64),
                    )?;
                }
                let off = self.attr_offset(*index, checked)?;
                let v = self.b.ins().load(types::I64, mem(), base, off);
                self.b.ins().jump(join, &[BlockArg::Value(v)]);
                // Slow path (cold): the host's LoadAttr.
                self.b.switch_to_block(slow);
                let i = self.iconst(types::I64, *index as i64);
                let v = self
                    .slow_path("load_attr_slow", &[o, i])?
                    .ok_or_else(|| internal(self.fname, "load_attr_slow returns nothing"))?;
                self.b.ins().jump(join, &[BlockArg::Value(v)]);
                self.b.switch_to_block(join);
                self.def(r, res);
            }
            StoreAttr { obj, index, value } => {
                let (o, x) = (self.val(*obj)?, self.val(*value)?);
                let join = self.b.create_block();
                // Recover (every check): the store is skipped.
                if let Some(id) = lifetime {
                    self.obj_live_check(id, o, join, Recover::Nothing)?;
                }
                let word = self.load_word(o);
                let report = |site| Report::Dict { site, obj: o, word };
                let dict = on(CheckKind::Dict);
                let (base, slow) =
                    self.attr_fast_path(dict, word, join, Recover::Nothing, report)?;
                let checked = dict.is_some();
                if let Some(id) = on(CheckKind::Bounds) {
                    self.bounds_check(id, o, base, *index, checked, join, Recover::Nothing)?;
                }
                let off = self.attr_offset(*index, checked)?;
                self.b.ins().store(mem(), x, base, off);
                self.b.ins().jump(join, &[]);
                // Slow path (cold): the host's StoreAttr.
                self.b.switch_to_block(slow);
                let i = self.iconst(types::I64, *index as i64);
                self.slow_path("store_attr_slow", &[o, i, x])?;
                self.b.ins().jump(join, &[]);
                self.b.switch_to_block(join);
            }
            AdAlloc { elem, capacity } => {
                let bytes = u32::try_from(adstack::buffer_bytes(*elem, *capacity))
                    .map_err(|_| internal(self.fname, "adstack buffer too large"))?;
                let align_shift = adstack::ADSTACK_ALIGN.trailing_zeros() as u8;
                let ss = self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    bytes,
                    align_shift,
                ));
                let h = self.b.ins().stack_addr(types::I64, ss, 0);
                let zero = self.iconst(types::I64, 0);
                self.store_count(h, zero);
                self.def(r, h);
            }
            AdPush { stack, value } => {
                let e = self.stack_elem(*stack)?;
                let (h, x) = (self.val(*stack)?, self.val(*value)?);
                let n = self.load_count(h);
                let (join, _) = self.join_block(site.is_some(), None);
                if let (Some(id), Some(j)) = (site, join) {
                    let site = self.site(id)?;
                    let capacity = self.cap(*stack)?;
                    let bad = self.b.ins().icmp_imm_u(
                        condcodes::IntCC::UnsignedGreaterThanOrEqual,
                        n,
                        capacity as i64,
                    );
                    let report = Report::Adstack {
                        site,
                        kind: ReportKind::AdstackOverflow,
                        capacity,
                        len: n,
                    };
                    self.check(bad, report, j, Recover::Nothing)?;
                }
                let base = self.entry_base(h, n, e);
                let (po, ao) = Self::push_offsets(e);
                self.b.ins().store(stack_mem(), x, base, po);
                let z = self.zero(elem_type(e));
                self.b.ins().store(stack_mem(), z, base, ao);
                let n1 = self.b.ins().iadd_imm_u(n, 1);
                self.store_count(h, n1);
                self.rejoin(join, None);
            }
            AdPop { stack } => {
                let h = self.val(*stack)?;
                let n = self.load_count(h);
                let (join, _) = self.join_block(site.is_some(), None);
                self.underflow_check(site, *stack, n, join, Recover::Nothing)?;
                let n1 = self.b.ins().iadd_imm_s(n, -1);
                self.store_count(h, n1);
                self.rejoin(join, None);
            }
            AdTop { stack } | AdTopAdj { stack } => {
                let e = self.stack_elem(*stack)?;
                let et = elem_type(e);
                let h = self.val(*stack)?;
                let n = self.load_count(h);
                let (join, param) = self.join_block(site.is_some(), Some(et));
                self.underflow_check(site, *stack, n, join, Recover::Zero(et))?;
                let base = self.entry_base(h, n, e);
                let (po, ao) = Self::top_offsets(e);
                let off = if matches!(inst.kind, AdTop { .. }) {
                    po
                } else {
                    ao
                };
                let v = self.b.ins().load(et, stack_mem(), base, off);
                self.rejoin(join, Some(v));
                self.def(r, param.unwrap_or(v));
            }
            AdAccAdj { stack, delta } => {
                let e = self.stack_elem(*stack)?;
                let et = elem_type(e);
                let (h, d) = (self.val(*stack)?, self.val(*delta)?);
                let n = self.load_count(h);
                let (join, _) = self.join_block(site.is_some(), None);
                self.underflow_check(site, *stack, n, join, Recover::Nothing)?;
                let base = self.entry_base(h, n, e);
                let (_, ao) = Self::top_offsets(e);
                let adj = self.b.ins().load(et, stack_mem(), base, ao);
                let sum = match e {
                    AdElem::F32 | AdElem::F64 => self.b.ins().fadd(adj, d),
                    AdElem::I64 => self.b.ins().iadd(adj, d),
                };
                self.b.ins().store(stack_mem(), sum, base, ao);
                self.rejoin(join, None);
            }
            AdLen { stack } => {
                let h = self.val(*stack)?;
                let n = self.load_count(h);
                self.def(r, n);
            }
            Watch { obj } => {
                let o = self.val(*obj)?;
                self.watch(o)?;
            }
        }
        Ok(())
    }

    fn conv(&mut self, op: ConvOp, ty: Type, a: Value) -> Result<cl::Value, JitError> {
        let x = self.val(a)?;
        let from = cl_type(self.ty(a));
        let to = cl_type(ty);
        let ins = self.b.ins();
        Ok(match op {
            ConvOp::Sext => ins.sextend(to, x),
            ConvOp::Uext => ins.uextend(to, x),
            ConvOp::Ireduce => ins.ireduce(to, x),
            ConvOp::FcvtFromSint => {
                let x = if from == types::I8 {
                    ins.sextend(types::I32, x)
                } else {
                    x
                };
                self.b.ins().fcvt_from_sint(to, x)
            }
            ConvOp::FcvtToSint => {
                if to == types::I8 {
                    // Saturate through i32, then clamp to the i8 range.
                    let w = ins.fcvt_to_sint_sat(types::I32, x);
                    let lo = self.iconst(types::I32, i8::MIN as i64);
                    let hi = self.iconst(types::I32, i8::MAX as i64);
                    let w = self.b.ins().smax(w, lo);
                    let w = self.b.ins().smin(w, hi);
                    self.b.ins().ireduce(types::I8, w)
                } else {
                    // Saturating; NaN converts to 0.
                    ins.fcvt_to_sint_sat(to, x)
                }
            }
            ConvOp::Fpromote => ins.fpromote(to, x),
            ConvOp::Fdemote => ins.fdemote(to, x),
            ConvOp::Bitcast => {
                if from == to {
                    x
                } else {
                    ins.bitcast(to, mem(), x)
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dict_check_matches_tag_ok() {
        assert_eq!(DICT_CHECK_ADD, 1);
        assert_eq!(DICT_CHECK_MASK, 6);
        for hi in [
            0u64,
            8,
            0x1000,
            0xffff_ffff_ffff_fff8,
            0x8000_0000_0000_0000,
        ] {
            for low in 0..8u64 {
                let w = hi | low;
                assert_eq!(dict_word_ok(w), layout::tag_ok(w), "word {w:#x}");
            }
        }
    }

    #[test]
    fn guard_strategy_is_one_decision() {
        for m in [Mode::Abort, Mode::Recover] {
            assert_eq!(guard_strategy(m), GuardStrategy::ReportCall);
        }
        assert_eq!(guard_strategy(Mode::Trap), GuardStrategy::Trap);
    }

    #[test]
    fn trap_srclocs_are_distinct_from_lines() {
        assert_eq!(trap_index(SourceLoc::new(TRAP_SRCLOC_BIT | 7)), Some(7));
        assert_eq!(trap_index(SourceLoc::new(27)), None);
        assert_eq!(trap_index(SourceLoc::default()), None);
        // The relative encoding never maps a trap location to "unknown".
        for base in [1u32, 2, 1000, 1 << 24] {
            let rel = cl::RelSourceLoc::from_base_offset(
                SourceLoc::new(base),
                SourceLoc::new(TRAP_SRCLOC_BIT),
            );
            assert!(!rel.is_default());
            assert_eq!(rel.expand(SourceLoc::new(base)).bits(), TRAP_SRCLOC_BIT);
        }
    }
}
