//! The one lowering from guardlift IR to Cranelift IR, shared by the JIT
//! ([`crate::engine`]) and the object emitter ([`crate::object`]) through
//! the one compile driver, [`crate::unit`]. Private to the crate: how a
//! unit is lowered is chosen by a [`LowerConfig`].
//!
//! Each IR block becomes a Cranelift block with the same parameters, except
//! that a block entered by one edge has none: its params map to the
//! branch's arguments (`func`, `FnLower::plan_forwarding`). Each IR value
//! maps to one Cranelift value (no variables: the IR is already SSA).
//! Blocks are lowered in reverse postorder so every definition is lowered
//! before its uses; unreachable blocks are dropped.
//!
//! Object-model and adstack code reads its offsets from
//! [`guardlift_abi::layout`] and [`guardlift_abi::adstack`] only; the
//! signatures of runtime functions from [`guardlift_abi::foreach_entry!`].
//!
//! Guards (instructions with a site) are an inline check of a few
//! instructions that branches to an out-of-line cold block; the cold block
//! calls the runtime's report entry point and then applies the recover-mode
//! effect and rejoins (abort, recover), or leaves what it observed in the
//! runtime's trap scratch area and executes a trap instruction (trap). How
//! a mode is lowered is decided in one place, [`guard_strategy`].
//!
//! The parts, by concern (as wasmtime keeps bounds checks apart from
//! translation):
//! - `abi`: Cranelift types and signatures of IR functions, entry points
//!   and built-ins; extern resolution;
//! - `stubs`: the module-local stubs generated code calls runtime
//!   functions through;
//! - `func`: the per-function lowerer (block order, value map, calls);
//! - `inst`, `memory`, `adstack`: the instructions, by family;
//! - `guards`: the check code of every check kind (dict, bounds, lifetime,
//!   adstack, clobber, watch) and how a failed check reports or traps;
//! - `shadow`: the JIT's inline hot paths of the lifetime, clobber and
//!   watch checks on the runtime's shadow bytes;
//! - `version`: loops lowered twice, with and without the lifetime and
//!   watch tests of their invariant objects.
//!
//! **No relocation depends on where the OS places code and data**
//! (docs/CODEGEN.md, "Relocations"): cranelift-jit maps code, writable
//! data and read-only data separately, chunk by chunk, anywhere in the
//! address space (the 16 TiB shadow reservation between them). So every
//! reference generated code makes to a symbol is far: data objects through
//! `far_data` (an absolute address: `Abs8`, or a GOT entry in PIC
//! objects), calls of JIT functions, stubs, runtime entries and host
//! functions non-colocated (`Abs8`; the object emitter may call its own
//! functions near, [`Calls::Near`]: a linker places one text
//! section), libcalls non-colocated (`target`). Only a function's own
//! constants and jump tables are PC-relative, inside its own code.

mod abi;
mod adstack;
mod anchor;
mod attrgroup;
mod cleanexit;
mod dispatch;
mod entrycache;
mod entryvariant;
mod func;
mod guards;
mod inst;
mod looprange;
mod memory;
mod ownvalues;
mod shadow;
mod stubs;
mod version;

pub(crate) use abi::{cl_type, ir_signature, resolve_externs, ExternBinding};
pub(crate) use guardlift_abi::Entry;
use guardlift_ir::analysis::context::FuncAnalysis;
use guardlift_ir::hoist::HostModel;
pub(crate) use shadow::ShadowRef;
pub(crate) use stubs::{Stub, StubCode, StubInfo};

use crate::error::JitError;
use cranelift_codegen::ir::{self as cl, Signature, SourceLoc, UserFuncName};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{DataId, FuncId as ClFuncId, Linkage, Module as ClModule};
use guardlift_abi::{Mode, ReportKind};
use guardlift_ir::{analysis, CheckKind, FuncId, Value};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Name of the data symbol whose address is the runtime pointer in object files.
pub const RUNTIME_SYMBOL: &str = "guardlift_runtime";

/// How generated code finds the runtime (the hidden first argument of
/// built-ins and report entry points).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum RtRef {
    /// A constant address (JIT: `Arc::as_ptr` of the module's runtime).
    Const(u64),
    /// The address of the imported data symbol [`RUNTIME_SYMBOL`] (object files).
    Symbol,
}

/// How a failed check is lowered.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum GuardStrategy {
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
pub(crate) fn guard_strategy(mode: Mode) -> GuardStrategy {
    match mode {
        Mode::Abort | Mode::Recover => GuardStrategy::ReportCall,
        Mode::Trap => GuardStrategy::Trap,
    }
}

/// Set in the source location of every instruction of a trap sequence; the
/// low bits are the trap's index in [`Lowerer::trap_sites`]. (Lines stay
/// far below this bit, so the relative encoding of source locations
/// cannot collide with it.)
pub(crate) const TRAP_SRCLOC_BIT: u32 = 1 << 31;

/// The index into [`Lowerer::trap_sites`] that a trap instruction's source
/// location encodes, if it is one of ours.
pub(crate) fn trap_index(loc: SourceLoc) -> Option<usize> {
    (!loc.is_default() && loc.bits() & TRAP_SRCLOC_BIT != 0)
        .then(|| (loc.bits() & !TRAP_SRCLOC_BIT) as usize)
}

/// The trap code Cranelift records for the IR's memory accesses (raw
/// `load`/`store` and the object-model accesses, `func::mem`): where one
/// sits in the code, that machine instruction accesses memory an IR
/// access named, even where the backend merged the access into another
/// instruction (`crate::codemap` maps it back to the access).
pub(crate) fn access_trap_code() -> Option<cl::TrapCode> {
    func::mem().trap_code()
}

/// Which code of an IR function is lowered: the function as written, its
/// clean variant (`version`: the same function without the lifetime
/// checks, watches and bounds tests of the object params a clean loop's
/// entry test vouches for) or its entry variant (`entryvariant`: without
/// the lifetime checks and watches, in its entry region, of the params its
/// caller's tests vouch for).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Variant {
    /// The function with all its checks.
    Checked,
    /// The clean variant.
    Clean,
    /// The entry variant.
    Entry,
    /// The own variant (`entryvariant`, [`guardlift_ir::analysis::ownentry`]).
    Own,
    /// Piece `k ≥ 1` of a function compiled in pieces ([`crate::pieces`]),
    /// a function of its own in the split module, lowered as written.
    Piece(u32),
}

impl Variant {
    /// The suffix of a variant's local symbol in an object file.
    pub(crate) fn suffix(self) -> String {
        match self {
            Variant::Checked => "checked".into(),
            Variant::Clean => "clean".into(),
            Variant::Entry => "entry".into(),
            Variant::Own => "own".into(),
            Variant::Piece(k) => format!("piece{k}"),
        }
    }
}

/// May calls between a unit's IR functions use near (limited-range)
/// relocations?
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Calls {
    /// Yes: one text section, placed by a linker (object files).
    Near,
    /// No: every call is far (the JIT maps code chunk by chunk).
    Far,
}

/// How a unit's IR functions and stubs are declared in the Cranelift module.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Names {
    /// IR functions exported under their names (object files: the symbols
    /// the linker and the target runtime see); stubs anonymous.
    Export,
    /// Everything anonymous (the JIT).
    Anonymous,
    /// Everything local, under the names the perf map gives it
    /// (`guardlift:@f`, `guardlift:@f [clean]`, `guardlift:[stub …]`): with
    /// `perfmap=1`, so that cranelift-jit's own perf map lines (under `perf
    /// record`) name the code as ours do (`crate::debuginfo::perfmap`).
    Profiler,
}

/// How a unit is lowered: what differs between the JIT's code and an
/// object file's.
#[derive(Copy, Clone, Debug)]
pub(crate) struct LowerConfig {
    /// How generated code finds the runtime.
    pub(crate) rt: RtRef,
    /// The runtime mode (decides the guard lowering, [`guard_strategy`]).
    pub(crate) mode: Mode,
    /// Added to local site ids to get runtime-global ids.
    pub(crate) site_base: u32,
    /// Near or far calls between the unit's functions.
    pub(crate) calls: Calls,
    /// How functions and stubs are declared.
    pub(crate) names: Names,
    /// The runtime's shadow (JIT only; `None`: every check calls the
    /// runtime, and no loop is versioned).
    pub(crate) shadow: Option<ShadowRef>,
    /// What the loop analysis assumes of the host (its own attribute slow
    /// paths: `Runtime::attr_slow_paths_bound`).
    pub(crate) host: HostModel,
}

/// Module-wide lowering state: how IR functions, externs and the runtime map
/// to Cranelift module entities. Imports are declared on first use.
pub(crate) struct Lowerer<'m> {
    /// The module being lowered.
    pub(crate) ir: &'m guardlift_ir::Module,
    /// How generated code finds the runtime.
    pub(crate) rt: RtRef,
    /// The runtime mode (decides the guard lowering, [`guard_strategy`]).
    pub(crate) mode: Mode,
    /// Added to local site ids to get runtime-global ids.
    pub(crate) site_base: u32,
    /// The target's calling convention for IR functions and the runtime.
    pub(crate) call_conv: CallConv,
    /// The Cranelift function of every IR function (by [`FuncId`]).
    pub(crate) funcs: Vec<ClFuncId>,
    /// The binding of every IR extern (by `ExternId`).
    pub(crate) externs: Vec<ExternBinding>,
    /// May calls between IR functions use near (limited-range) relocations?
    pub(crate) colocated_calls: bool,
    /// The runtime's shadow (JIT only; `None`: every check calls the runtime).
    pub(crate) shadow: Option<ShadowRef>,
    /// What the loop analysis assumes of the host (its own attribute slow
    /// paths: `Runtime::attr_slow_paths_bound`).
    pub(crate) host: HostModel,
    /// The module has bounds checks: `stack_alloc` areas tell the runtime
    /// their pads, which are redzones until the function returns
    /// (`gl_stack_area` / `gl_stack_release`), as the interpreter's areas
    /// have.
    pub(crate) stack_redzones: bool,
    /// Declare stubs under their names ([`Names::Profiler`]) rather than
    /// anonymously.
    pub(crate) named_stubs: bool,
    /// The clean variant of every IR function (by [`FuncId`]) that has
    /// one, declared by the compile driver (`crate::unit`) after
    /// [`Lowerer::plan_clean_variants`] (`version`).
    pub(crate) clean_funcs: Vec<Option<ClFuncId>>,
    /// The param indices whose lifetime checks and `guard.watch`es each IR
    /// function's clean variant drops (`version`).
    variants: Vec<Option<version::VariantDrops>>,
    /// Each IR function's entry variant plan (`entryvariant`).
    entries: Vec<Option<guardlift_ir::analysis::entry::EntryPlan>>,
    /// The entry variant of every IR function that has one, declared by
    /// the compile driver after [`Lowerer::plan_entry_variants`].
    pub(crate) entry_funcs: Vec<Option<ClFuncId>>,
    /// Each IR function's own variant plan and its values' demands
    /// (`entryvariant`; empty without own-values tests).
    owns: guardlift_ir::analysis::ownentry::OwnPlans,
    /// The own variant of every IR function that has one, declared by the
    /// compile driver after [`Lowerer::plan_entry_variants`].
    pub(crate) own_funcs: Vec<Option<ClFuncId>>,
    /// Has any IR function an own variant (`own_funcs`)? Read at every
    /// instruction (`own_after`): a scan of `own_funcs` there made the
    /// lowering quadratic in a big function's pieces.
    pub(crate) has_own_funcs: bool,
    imports: HashMap<String, ClFuncId>,
    /// Stubs declared so far (see [`Lowerer::define_stubs`]).
    stubs: Vec<(Stub, ClFuncId)>,
    stub_names: HashMap<ClFuncId, String>,
    rt_data: Option<DataId>,
    /// (runtime-global site, kind) of each trap of the last lowered
    /// function, indexed by [`trap_index`] of the trap's source location.
    traps: Vec<(u32, ReportKind)>,
    /// Each IR function's analyses (CFG, reverse postorder, clean loops,
    /// elided checks), computed once for the whole compile: a function is
    /// lowered twice when it has a clean variant, and the clean-variant
    /// plan asks for its callers' loops too.
    analyses: Vec<FuncAnalysis<'m>>,
    /// By IR function: is it a piece after the first of a function
    /// compiled in pieces ([`crate::pieces`]): Cranelift's `tail` calling
    /// convention, its exit call a `return_call`, no variant?
    later_pieces: Vec<bool>,
}

/// A global value for data object `d` in `func`: its address, never
/// assumed near the code (`colocated: false`, unlike cranelift-module's
/// `declare_data_in_func` for a module-local object, which makes it a
/// 32-bit PC-relative reference that cranelift-jit cannot patch when
/// code and data land more than 2 GiB apart).
pub(crate) fn far_data<M: ClModule + ?Sized>(
    m: &M,
    d: DataId,
    func: &mut cl::Function,
) -> cl::GlobalValue {
    let tls = m.declarations().get_data_decl(d).tls;
    let name = func.declare_imported_user_function(cl::UserExternalName {
        namespace: 1,
        index: d.as_u32(),
    });
    func.create_global_value(cl::GlobalValueData::Symbol {
        name: cl::ExternalName::user(name),
        offset: cl::immediates::Imm64::new(0),
        colocated: false,
        tls,
    })
}

impl<'m> Lowerer<'m> {
    /// A lowerer for `ir` as `cfg` says, with the target's calling
    /// convention `call_conv`, whose functions are declared as `funcs` and
    /// whose externs are bound to `externs` ([`resolve_externs`]).
    pub(crate) fn new(
        ir: &'m guardlift_ir::Module,
        cfg: &LowerConfig,
        call_conv: CallConv,
        funcs: Vec<ClFuncId>,
        externs: Vec<ExternBinding>,
    ) -> Self {
        Lowerer {
            ir,
            rt: cfg.rt,
            mode: cfg.mode,
            site_base: cfg.site_base,
            call_conv,
            funcs,
            externs,
            colocated_calls: cfg.calls == Calls::Near,
            shadow: cfg.shadow,
            host: cfg.host,
            stack_redzones: (ir.sites.values()).any(|s| s.checks.contains(CheckKind::Bounds)),
            analyses: ir.functions.iter().map(FuncAnalysis::new).collect(),
            named_stubs: cfg.names == Names::Profiler,
            clean_funcs: Vec::new(),
            variants: Vec::new(),
            entries: Vec::new(),
            entry_funcs: Vec::new(),
            owns: Default::default(),
            own_funcs: Vec::new(),
            has_own_funcs: false,
            imports: HashMap::new(),
            stubs: Vec::new(),
            stub_names: HashMap::new(),
            rt_data: None,
            traps: Vec::new(),
            later_pieces: Vec::new(),
        }
    }

    /// Marks the later pieces of split functions (by IR function), before
    /// the variants are planned ([`Lowerer::plan_clean_variants`],
    /// [`Lowerer::plan_entry_variants`]): they get none, since only their
    /// previous piece calls them, once, outside any loop, and a piece's
    /// exit call does not make the clean-loop analysis run on it.
    pub(crate) fn set_later_pieces(&mut self, later: Vec<bool>) {
        self.later_pieces = later;
        self.drop_later_pieces_variants();
    }

    /// Drops any variant planned for a later piece (`plan_entry_variants`,
    /// which runs after `plan_clean_variants`, ends with it).
    pub(crate) fn drop_later_pieces_variants(&mut self) {
        for (i, _) in (self.later_pieces.iter().enumerate()).filter(|(_, &l)| l) {
            if let Some(e) = self.entries.get_mut(i) {
                *e = None;
            }
            if let Some(v) = self.variants.get_mut(i) {
                *v = None;
            }
        }
    }

    /// Is IR function `g` a later piece ([`Lowerer::set_later_pieces`])?
    pub(crate) fn is_later_piece(&self, g: FuncId) -> bool {
        self.later_pieces
            .get(g.0 as usize)
            .copied()
            .unwrap_or(false)
    }

    /// (runtime-global site, kind) of every trap instruction emitted for the
    /// last function [`Lowerer::lower_function`] lowered (trap mode), in
    /// emission order; a trap's source location holds its index here
    /// ([`trap_index`]). Traps of blocks Cranelift drops are simply absent
    /// from the machine code.
    pub(crate) fn trap_sites(&self) -> &[(u32, ReportKind)] {
        &self.traps
    }

    /// The native signature of IR function `id`.
    pub(crate) fn func_signature(&self, id: FuncId) -> Signature {
        let f = self.ir.func(id);
        let cc = match self.is_later_piece(id) {
            true => CallConv::Tail,
            false => self.call_conv,
        };
        ir_signature(cc, &f.param_types(), f.ret)
    }

    pub(crate) fn import<M: ClModule + ?Sized>(
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

    /// Lowers IR function `id` into `out` (which is cleared first).
    pub(crate) fn lower_function<M: ClModule + ?Sized>(
        &mut self,
        m: &mut M,
        id: FuncId,
        name: UserFuncName,
        out: &mut cl::Function,
        fctx: &mut FunctionBuilderContext,
    ) -> Result<(), JitError> {
        self.lower_as(m, id, name, out, fctx, Variant::Checked)
    }

    /// Lowers `variant` of IR function `id` into `out` (which is cleared
    /// first).
    pub(crate) fn lower_as<M: ClModule + ?Sized>(
        &mut self,
        m: &mut M,
        id: FuncId,
        name: UserFuncName,
        out: &mut cl::Function,
        fctx: &mut FunctionBuilderContext,
        variant: Variant,
    ) -> Result<(), JitError> {
        let f = self.ir.func(id);
        let entry = match variant {
            Variant::Entry => Some(
                self.entry_plan(id)
                    .cloned()
                    .ok_or_else(|| JitError::Internal(format!("@{}: no entry variant", f.name)))?,
            ),
            // The own variant drops what the entry variant drops, if any.
            Variant::Own => self.entry_plan(id).cloned(),
            _ => None,
        };
        let own_plan = match variant {
            Variant::Own => Some(
                (self.own_plan(id).cloned())
                    .ok_or_else(|| JitError::Internal(format!("@{}: no own variant", f.name)))?,
            ),
            _ => None,
        };
        let variant = match variant {
            Variant::Checked | Variant::Entry | Variant::Own | Variant::Piece(_) => None,
            Variant::Clean => Some(
                self.variant_values(id)
                    .ok_or_else(|| JitError::Internal(format!("@{}: no clean variant", f.name)))?,
            ),
        };
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
            id: id.0 as usize,
            fname: &f.name,
            vals: vec![None; f.values.len()],
            blocks: vec![None; f.blocks.len()],
            caps,
            frefs: HashMap::new(),
            rt_gv: None,
            elided: Default::default(),
            elide_check: false,
            cache_slots: HashMap::new(),
            stack_areas: BTreeMap::new(),
            at: (0, 0),
            versions: Vec::new(),
            version_of_header: HashMap::new(),
            version_of_block: HashMap::new(),
            in_clean: None,
            in_exit: None,
            opaque_zero: None,
            aliased: None,
            fused_watch: None,
            own: None,
            variant,
            entry_dropped: entryvariant::entry_dropped(f, entry.as_ref(), own_plan.as_ref()),
            entry,
            own_plan,
            vouch: Default::default(),
            forward: Vec::new(),
            raw: Default::default(),
            ranges: Default::default(),
            raw_clean: HashMap::new(),
            attr: Default::default(),
            attr_ok: HashMap::new(),
            attr_vars: HashMap::new(),
            group_bounds: None,
            verdict_slot: None,
            anchor_slot: None,
            anchor_uses: None,
        };
        fl.run()?;
        let FnLower { b, .. } = fl;
        b.finalize(frontend_config);
        Ok(())
    }
}

// ---- per-function lowering --------------------------------------------------

/// The state of lowering one IR function (see `func`; its methods live in
/// the submodules by concern).
struct FnLower<'a, 'm, M: ClModule + ?Sized> {
    lw: &'a mut Lowerer<'m>,
    m: &'a mut M,
    b: FunctionBuilder<'a>,
    f: &'m guardlift_ir::Function,
    /// `f`'s index in the module (its [`Lowerer::analyses`] entry).
    id: usize,
    fname: &'m str,
    vals: Vec<Option<cl::Value>>,
    blocks: Vec<Option<cl::Block>>,
    caps: HashMap<Value, u32>,
    frefs: HashMap<ClFuncId, cl::FuncRef>,
    rt_gv: Option<cl::GlobalValue>,
    /// Guarded underflow checks that cannot fail ([`guardlift_ir::elide`]).
    elided: HashSet<(u32, u32)>,
    /// Is the instruction being lowered one of `elided`?
    elide_check: bool,
    /// The frame slot of each `guard.watch`'s cache, by (block, inst).
    cache_slots: HashMap<(u32, u32), cl::StackSlot>,
    /// With [`Lowerer::stack_redzones`]: the frame slot and size of each
    /// `stack_alloc`, by (block, inst), made before any block is lowered
    /// so that every `return` releases them all (`inst`).
    stack_areas: BTreeMap<(u32, u32), (cl::StackSlot, u32)>,
    /// (block, inst) of the instruction being lowered.
    at: (u32, u32),
    /// The loops lowered twice (`version`).
    versions: Vec<version::Versioned>,
    /// Index in `versions` of the loop each versioned header starts.
    version_of_header: HashMap<u32, usize>,
    /// Index in `versions` of the loop each versioned block belongs to.
    version_of_block: HashMap<u32, usize>,
    /// The loop whose clean copy is being lowered.
    in_clean: Option<usize>,
    /// The loop whose clean exit twin is being lowered, with the length
    /// of the block's exit prefix (`version`, "Clean exits").
    in_exit: Option<(usize, u32)>,
    /// In a clean copy or exit twin: its opaque zero (`FnLower::opaque_args`).
    opaque_zero: Option<cl::Value>,
    /// The loop whose checked copy is being lowered (its objects are
    /// the header's params: `version`).
    aliased: Option<usize>,
    /// A `guard.watch` of this object just lowered whose fast path (this
    /// block) the next instruction's lifetime check joins (`guards`).
    fused_watch: Option<(cl::Value, cl::Block)>,
    /// An own-values test made at a fused `guard.watch` for the attribute
    /// op after it, whose pass that op joins (`ownvalues`).
    own: Option<ownvalues::OwnHit>,
    /// Lowering a clean variant (`version`): the params whose lifetime
    /// checks, `guard.watch`es and bounds checks it drops.
    variant: Option<version::Drops<Value>>,
    /// Lowering an entry variant (`entryvariant`): its plan.
    entry: Option<guardlift_ir::analysis::entry::EntryPlan>,
    /// The instructions whose tests that plan drops (`entryvariant`).
    entry_dropped: HashSet<*const guardlift_ir::Inst>,
    /// Lowering an own variant (`entryvariant`): its plan.
    own_plan: Option<guardlift_ir::analysis::ownentry::OwnPlan>,
    /// The variables saying which values' objects the function's tests
    /// vouch for (`entryvariant`).
    vouch: entryvariant::Vouch,
    /// By IR block: does its one incoming edge define its params as the
    /// branch's arguments, with no Cranelift block params (`func`)?
    forward: Vec<bool>,
    /// With a shadow: the raw-access groups ([`guardlift_ir::rawgroup`])
    /// whose range one shadow test decides (`memory`).
    raw: guardlift_ir::rawgroup::RawGroups,
    /// With a shadow: the loop ranges ([`guardlift_ir::looprange`]) whose
    /// accesses a test at the loop's entry decides (`looprange`).
    ranges: looprange::Ranges,
    /// By group: the value, defined at its first access in the copy of the
    /// block being lowered, that is non-zero when the range is clean.
    raw_clean: HashMap<usize, cl::Value>,
    /// The function's attribute groups (`attrgroup`).
    attr: guardlift_ir::attrgroup::AttrGroups,
    /// By attribute group: are its later members lowered on the first
    /// member's verdict (decided at the first member)?
    attr_ok: HashMap<usize, bool>,
    /// By attribute group: the variables holding its verdict (I8) and
    /// values base (I64).
    attr_vars: HashMap<usize, (cranelift_frontend::Variable, cranelift_frontend::Variable)>,
    /// While the first member of an attribute group with the bounds check
    /// runs its checks: the group's highest index, which its inline bounds
    /// test tests instead of its own (`attrgroup`).
    group_bounds: Option<u32>,
    /// The frame slot check stubs store their verdict in (`func`), made
    /// on first use.
    verdict_slot: Option<cl::StackSlot>,
    /// The frame slot [`FnLower::anchor`] stores to (8 bytes: any scalar).
    anchor_slot: Option<cl::StackSlot>,
    /// Made on first use: what [`FnLower::anchor`] asks of `f` (`anchor`).
    anchor_uses: Option<anchor::Uses>,
}

#[cfg(test)]
mod tests {
    use super::*;

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
