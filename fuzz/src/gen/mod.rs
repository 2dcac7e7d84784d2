//! The module generator of the `differential` and `compile_aarch64`
//! targets: `arbitrary` bytes in, a well-typed, verified [`Module`] out,
//! built through [`guardlift_ir::builder`].
//!
//! Every module it makes is *safe to run* on both engines under the check
//! sets its [`Needs`] allow, and its results do not depend on where the
//! heap put anything, so the interpreter and the JIT must agree bit for bit:
//!
//! - Control flow is structured: `if`/`else` diamonds with merge params,
//!   `while` and `do … while` loops with a bounded trip count (a constant,
//!   or a value masked to at most 7), nested a few levels; helper
//!   functions are called acyclically (a helper only calls helpers
//!   declared after it), so nothing recurses.
//! - Memory goes only to a sandboxed buffer (the values array of an object
//!   from `@obj_new`, addressed through its managed-dict word, at in-bounds
//!   offsets, some computed at run time) and to the 16-byte bodies of
//!   model-heap objects.
//! - Values derived from addresses (object pointers, managed-dict words,
//!   the buffer's base) are kept out of the value pools: only their low tag
//!   bits (`band w, 7`) flow on.
//! - Floats are canonicalized (`select (fcmp.ne x, x), nan, x`) wherever
//!   their bits could become visible as an integer (`bitcast` to an int, a
//!   `store` to memory), so NaN payloads never decide a result; the
//!   runner compares float results with every NaN equal.
//! - Attribute indices are below the object's attribute count, so both the
//!   values fast path and the dict slow path stay in bounds whatever mode
//!   the object is in (values, dict after `@obj_dictify`, or empty).
//! - The depth of every adstack is known exactly at every point: a nested
//!   region (an `if` arm, a loop body) is brought back to the depth it
//!   started at before it ends, and "tape" loops push or pop a constant
//!   number of times. A push at capacity or a pop/top/top_adj/acc_adj at
//!   length 0 is only emitted as an *injected fault*. Re-allocating loops
//!   run an `adstack.alloc` again while the header's param still carries
//!   the previous iteration's handle (so the two name one, just emptied,
//!   buffer); their depths are modelled for the first and the later
//!   iterations, and nothing of them is used after the loop.
//! - Injected faults (`@fault_clear_lsb`, raw stores over a dict slot,
//!   `dict_slot.store` of a word with bad tag bits, adstack overflow and
//!   underflow) are either guarded by hand (`guard_last`: a hand-written
//!   `guard.` op, so even the uninstrumented run stays in bounds) or
//!   recorded in [`Needs`], and then the module only runs with those
//!   checks on. A corrupting word always has low bits in `1..=6`, so no
//!   corruption can ever look like a values-tagged word.
//! - Lifetime and bounds faults (`FnGen::lifetime_fault`,
//!   `FnGen::bounds_fault`) follow the same rule: a use of a freed object
//!   (attribute, dict slot, raw access to its header or through a values
//!   pointer kept from before the free), a double or invalid free, or an
//!   attribute index at or past the object's capacity is hand-guarded or
//!   needs `lifetime` / `bounds`. Freed objects are fresh ones that never
//!   join the object pool, so nothing else touches them.
//! - The trust shapes of issue 28 (`trust`) too: attribute ops past a
//!   capacity word a raw store forged (the one write outside the buffer
//!   and object bodies the program makes unchecked: the word is inside
//!   the values array's block, and both engines write it alike), uses of
//!   a values array `@obj_dictify` released, raw accesses touching
//!   redzones. Object params of helpers are typed `ptr` or `i64`; a
//!   leaf-call loop may pass an object it selects inside the loop.
//! - Loops entered with four receivers in turn (`receivers`), one of
//!   which may fail the fixed-attribute entry test (too few attributes,
//!   or dictified): the JIT's loop-entry cache must answer for each.
//!
//! A generated module that does not verify is a bug of this generator: it
//! panics with the module's text.

mod adstack;
mod control;
mod faults;
mod helpers;
mod ops;
mod rawloop;
mod receivers;
mod shape;
mod side;
mod spec31;
mod src;
mod trust;
mod vouch;

pub(crate) use src::Src;

use arbitrary::Unstructured;
use guardlift_instrument::CheckSet;
use guardlift_ir::builder::{FunctionBuilder, ModuleBuilder};
use guardlift_ir::{print_module, verify_module, ExternId, FuncId, Module, SrcLoc, Type, Value};
use guardlift_runtime::adstack::AdElem;
use guardlift_runtime::layout::DictLayout;
use std::collections::BTreeSet;

/// Size limits of generated modules.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// Helper functions besides `@main`.
    pub max_helpers: u32,
    /// Statements of `@main` (all regions together).
    pub max_main_stmts: u32,
    /// Statements of a helper.
    pub max_helper_stmts: u32,
    /// Nesting of `if`s and loops.
    pub max_depth: u32,
    /// Nesting of loops.
    pub max_loop_depth: u32,
    /// Largest product of the trip bounds of the loops around a statement.
    pub max_mult: u64,
    /// Largest estimated dynamic cost of one function (statements executed,
    /// callees included).
    pub max_cost: u64,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_helpers: 3,
            max_main_stmts: 48,
            max_helper_stmts: 16,
            max_depth: 3,
            max_loop_depth: 2,
            max_mult: 64,
            max_cost: 20_000,
        }
    }
}

/// The checks a module must run with because some injected fault is not
/// guarded by hand.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    pub dict: bool,
    pub adstack: bool,
    pub lifetime: bool,
    pub bounds: bool,
}

impl Needs {
    /// May the module run instrumented with `checks` (none = uninstrumented)?
    pub fn allows(self, checks: CheckSet) -> bool {
        (!self.dict || checks.dict)
            && (!self.adstack || checks.adstack)
            && (!self.lifetime || checks.lifetime)
            && (!self.bounds || checks.bounds)
    }
}

/// A generated module with the arguments of its entry `@main`.
#[derive(Clone, Debug)]
pub struct Generated {
    pub module: Module,
    /// Canonical argument bits for `@main` (see `guardlift_ir::literal`).
    pub args: Vec<u64>,
    pub needs: Needs,
    /// Per function (module order): what the generator put in it that its
    /// opcodes do not show (`fault.overflow`, `ctl.loop`, ...).
    pub events: Vec<BTreeSet<&'static str>>,
    /// Run against runtimes whose attribute slow paths are the host's
    /// ([`crate::exec::HostSlowPaths`]) instead of the model heap's: the
    /// target picks it (`targets::pick_slow_paths`), the generator never.
    pub host_slow_paths: bool,
}

/// The entry function of every generated module.
pub const ENTRY: &str = "main";

/// Generates one module from `u`. Never fails: when the bytes run out,
/// every choice takes its first option and the module simply ends.
pub fn generate(u: &mut Unstructured<'_>, cfg: &GenConfig) -> Generated {
    let mut src = Src { u };
    let layout = match src.range(0, 4) {
        0 | 1 => DictLayout::Cpython312,
        2 => DictLayout::Phoenix,
        3 => DictLayout::Custom(-64),
        _ => DictLayout::Custom(32),
    };
    let faults = src.chance(1, 2);
    let mut mb = ModuleBuilder::new(layout);
    let ext = Ext::declare(&mut mb);

    let main_params: Vec<Type> = (0..src.range(0, 3)).map(|_| src.scalar_ty()).collect();
    let main_ret = if src.chance(4, 5) {
        Some(src.scalar_ty())
    } else {
        None
    };
    let main = mb.declare_function(ENTRY, &main_params, main_ret);
    let n_helpers = src.range(0, cfg.max_helpers);
    let mut helpers = Vec::new();
    for i in 0..n_helpers {
        let params: Vec<Param> = (0..src.range(0, 4))
            .map(|_| {
                if src.chance(2, 7) {
                    // An object param typed `i64` in three of five (spec §2: `ptr` mixes with `i64`; a
                    // leaf callee's object param of either type needs a
                    // loop-invariant argument, issue 28 item 4).
                    let ty = if src.chance(3, 5) {
                        Type::I64
                    } else {
                        Type::Ptr
                    };
                    Param::Obj(src.range(1, 4), ty)
                } else {
                    Param::Scalar(src.scalar_ty())
                }
            })
            .collect();
        let ret = if src.chance(3, 4) {
            Some(src.scalar_ty())
        } else {
            None
        };
        let tys: Vec<Type> = params.iter().map(Param::ty).collect();
        let id = mb.declare_function(&format!("h{i}"), &tys, ret);
        // Half the helpers with an object param are leaf object functions
        // (`guardlift_ir::hoist`): loops that call them can be versioned.
        let leaf = params.iter().any(|p| matches!(p, Param::Obj(..))) && src.chance(1, 2);
        helpers.push(HelperSig {
            id,
            params,
            ret,
            cost: 0,
            leaf,
        });
    }
    let mut ms = ModState {
        cfg: cfg.clone(),
        faults,
        layout,
        ext,
        helpers,
        needs: Needs::default(),
    };
    let mut events = vec![BTreeSet::new(); 1 + n_helpers as usize];
    // Callees before callers, so each caller knows its callees' costs.
    for i in (0..n_helpers as usize).rev() {
        let id = ms.helpers[i].id;
        let (cost, ev) = gen_function(&mut ms, &mut src, &mut mb, id, Some(i));
        ms.helpers[i].cost = cost;
        events[1 + i] = ev;
    }
    let (_, ev) = gen_function(&mut ms, &mut src, &mut mb, main, None);
    events[0] = ev;

    let text = print_module(mb.module());
    let mut module = match mb.build() {
        Ok(m) => m,
        Err(e) => panic!("generator bug: the module does not verify: {e}\n{text}"),
    };
    renumber(&mut module);
    if let Err(e) = verify_module(&module) {
        panic!(
            "generator bug: renumbered module does not verify: {e}\n{}",
            print_module(&module)
        );
    }
    let args = main_params.iter().map(|&t| src.arg_bits(t)).collect();
    Generated {
        module,
        args,
        needs: ms.needs,
        events,
        host_slow_paths: false,
    }
}

/// Gives every function, block and instruction its own line (as if the
/// module had been written one instruction per line), and every site the
/// position of the instruction it guards, so reports name distinct lines.
pub fn renumber(m: &mut Module) {
    let Module {
        functions, sites, ..
    } = m;
    let mut line = 1u32;
    for f in functions.iter_mut() {
        f.loc = SrcLoc::new(line, 1);
        line += 1;
        for b in &mut f.blocks {
            b.loc = SrcLoc::new(line, 1);
            line += 1;
            for inst in &mut b.insts {
                inst.loc = SrcLoc::new(line, 5);
                line += 1;
                if let Some(s) = inst.site.and_then(|id| sites.get_mut(&id)) {
                    s.loc = inst.loc;
                }
            }
        }
        line += 1;
    }
}

// ---------------------------------------------------------------------------
// Module-level state.

struct Ext {
    obj_new: ExternId,
    obj_dictify: ExternId,
    obj_free: ExternId,
    fault_clear_lsb: ExternId,
    load_attr_slow: ExternId,
    store_attr_slow: ExternId,
    math: [ExternId; 4],
    print_i64: ExternId,
    print_f64: ExternId,
}

impl Ext {
    fn declare(mb: &mut ModuleBuilder) -> Ext {
        use Type::*;
        Ext {
            obj_new: mb.declare_extern("obj_new", &[I64], Some(Ptr)),
            obj_dictify: mb.declare_extern("obj_dictify", &[Ptr], None),
            obj_free: mb.declare_extern("obj_free", &[Ptr], None),
            fault_clear_lsb: mb.declare_extern("fault_clear_lsb", &[Ptr], None),
            load_attr_slow: mb.declare_extern("load_attr_slow", &[Ptr, I64], Some(I64)),
            store_attr_slow: mb.declare_extern("store_attr_slow", &[Ptr, I64, I64], None),
            math: [
                mb.declare_extern("sin", &[F64], Some(F64)),
                mb.declare_extern("cos", &[F64], Some(F64)),
                mb.declare_extern("exp", &[F64], Some(F64)),
                mb.declare_extern("log", &[F64], Some(F64)),
            ],
            print_i64: mb.declare_extern("print_i64", &[I64], None),
            print_f64: mb.declare_extern("print_f64", &[F64], None),
        }
    }
}

/// A helper parameter: a scalar, or an object with at least this many
/// attributes, typed `ptr` or `i64`.
#[derive(Clone, Copy, Debug)]
enum Param {
    Scalar(Type),
    Obj(u32, Type),
}

impl Param {
    fn ty(&self) -> Type {
        match self {
            Param::Scalar(t) => *t,
            Param::Obj(_, t) => *t,
        }
    }
}

struct HelperSig {
    id: FuncId,
    params: Vec<Param>,
    ret: Option<Type>,
    cost: u64,
    /// A leaf object function: no call, raw store or adstack op (its body
    /// is made of [`FnGen::restricted`] statements).
    leaf: bool,
}

struct ModState {
    cfg: GenConfig,
    faults: bool,
    layout: DictLayout,
    ext: Ext,
    helpers: Vec<HelperSig>,
    needs: Needs,
}

// ---------------------------------------------------------------------------
// Function-level state.

/// A model-heap object (a `ptr` that only ever reaches object operands).
#[derive(Clone, Copy, Debug)]
struct Obj {
    v: Value,
    nattrs: u32,
}

/// The sandboxed buffer: `base` (an address, never in a pool) and its size.
#[derive(Clone, Copy, Debug)]
struct Buf {
    obj: Value,
    base: Value,
    bytes: u32,
}

/// An adstack, its current handle value and its exact depth.
#[derive(Clone, Copy, Debug)]
struct Stack {
    v: Value,
    elem: AdElem,
    cap: u32,
    depth: u32,
}

/// What a region restores when it ends.
struct Scope {
    vals: usize,
    objs: usize,
    stacks: Vec<(Value, u32)>,
}

/// Size of the sandboxed buffer (16 attributes).
const BUF_ATTRS: u32 = 16;
const BUF_BYTES: u32 = BUF_ATTRS * 8;

struct FnGen<'f, 'a, 'b> {
    src: &'f mut Src<'a, 'b>,
    ms: &'f mut ModState,
    fb: FunctionBuilder<'f>,
    /// Index of this helper (callees must come after it), None for @main.
    helper: Option<usize>,
    /// Clean scalar values (no address ever flows into them).
    vals: Vec<Value>,
    objs: Vec<Obj>,
    bufs: Vec<Buf>,
    stacks: Vec<Stack>,
    depth: u32,
    loop_depth: u32,
    mult: u64,
    cost: u64,
    stmts_left: u32,
    /// Has an `@obj_dictify` call been emitted (earlier in program order)?
    dictified: bool,
    /// Generating a leaf helper's body (see [`HelperSig::leaf`]).
    leaf: bool,
    /// Generating the body of a loop that only calls leaf helpers
    /// ([`FnGen::leaf_call_loop`]): no call but those, no raw store, no
    /// adstack op, no new object.
    leaf_body: bool,
    /// The next statement of a leaf-call loop's body calls a leaf helper
    /// if one fits (so that most such loops call one).
    force_call: bool,
    /// Generating an `if` arm inside a loop (a host call there is a cold
    /// one: the loop is not clean, the call rarely taken).
    arm_in_loop: bool,
    ev: BTreeSet<&'static str>,
}

fn gen_function(
    ms: &mut ModState,
    src: &mut Src<'_, '_>,
    mb: &mut ModuleBuilder,
    id: FuncId,
    helper: Option<usize>,
) -> (u64, BTreeSet<&'static str>) {
    let (params, ret) = match helper {
        Some(i) => (ms.helpers[i].params.clone(), ms.helpers[i].ret),
        None => {
            let f = mb.module().func(id);
            (
                f.param_types().into_iter().map(Param::Scalar).collect(),
                f.ret,
            )
        }
    };
    let max_stmts = if helper.is_some() {
        ms.cfg.max_helper_stmts
    } else {
        ms.cfg.max_main_stmts
    };
    let leaf = helper.is_some_and(|i| ms.helpers[i].leaf);
    let fb = mb.function(id);
    let mut g = FnGen {
        src,
        ms,
        fb,
        helper,
        vals: Vec::new(),
        objs: Vec::new(),
        bufs: Vec::new(),
        stacks: Vec::new(),
        depth: 0,
        loop_depth: 0,
        mult: 1,
        cost: 0,
        stmts_left: max_stmts,
        dictified: false,
        leaf,
        leaf_body: false,
        arm_in_loop: false,
        force_call: false,
        ev: BTreeSet::new(),
    };
    let entry = g.fb.create_block("entry");
    g.fb.switch_to_block(entry);
    for (i, p) in params.iter().enumerate() {
        let v = g.fb.param(i);
        match *p {
            Param::Scalar(_) => g.vals.push(v),
            Param::Obj(k, _) => g.objs.push(Obj { v, nattrs: k }),
        }
    }
    g.prologue();
    let n = g.src.range(1, max_stmts);
    g.region(n);
    g.epilogue(ret);
    let FnGen { cost, ev, .. } = g;
    (cost.max(1), ev)
}
