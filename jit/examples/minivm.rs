//! minivm: a small Python-like bytecode VM whose baseline JIT emits
//! guardlift IR the way a type-specialising method JIT does, and falls back
//! to the interpreter through a **side exit** when a guard fails.
//!
//! ```text
//! cargo run --release -p guardlift-jit --example minivm -- [--instrument] [--no-jit]
//!     [--n N] [--d D] [--objects K] [--dump-ir]
//! ```
//!
//! The function it runs (its bytecode is [`SCORE`]):
//!
//! ```python
//! def score(objs, n, d):
//!     acc = 1
//!     i = 0
//!     while i < n:
//!         p = objs[i % len(objs)]
//!         acc = acc * 31 + (p.x + p.weight()) // d
//!         p.y = acc % 1000
//!         i = i + 1
//!     return acc % 1000000007
//! ```
//!
//! The interpreter computes with unbounded integers (`i128` here, enough for
//! the iteration counts the example allows). The JIT specialises `score` on
//! small integers: every `+`/`*` tests `sadd_overflows`/`smul_overflows`,
//! `//` and `%` are `sdiv`/`srem` with Python's floor correction and a
//! guard for a zero divisor, the list index is bounds-tested. When a guard
//! fails — `acc * 31` overflows 64 bits after a dozen iterations — the
//! compiled code writes the operand stack next to the locals in its frame
//! area (a `stack_alloc`), calls the host's `@deopt(frame, exit)`, which
//! resumes the interpreter at the failing bytecode with those values, and
//! returns what the interpreter returns.
//!
//! The JIT builds its IR with `guardlift_ir::builder`, one
//! `set_srcloc(bytecode offset, 1)` per bytecode, so every report names
//! the bytecode it came from; host functions are typed
//! (`CompileOptions::host_fn`).
//!
//! What else it shows:
//! - **A bound slow path.** Objects are laid out as CPython 3.12's (the
//!   managed-dict word at `obj - 24`); some have had their `__dict__`
//!   materialised, so their word points at a real dict of the VM. The JIT
//!   emits plain `load_attr`/`store_attr`; a word that is not values-tagged
//!   goes straight to the VM's own dict code, bound with
//!   `Runtime::bind_attr_slow_paths`.
//! - **`call_indirect`.** `p.weight()` is a method whose native code sits in
//!   the object's type (a slot, as `tp_hash` is in CPython): the JIT loads
//!   it from the type and calls it through the pointer, whatever the type.
//! - **Locals in a `stack_alloc` frame area**, which is also what the side
//!   exit hands to the interpreter.
//! - `--instrument` compiles the IR with every check
//!   (`guardlift_instrument::CheckSet::ALL`); a clean run reports nothing.
//!   `--use-after-free` (with `--instrument`) releases an object the list
//!   still holds: the compiled code reports each use at its IR site and
//!   skips it (recover mode).
//!
//! It prints the result, where the side exit happened and how many
//! attribute slow paths and method calls the compiled code made.

use guardlift_abi::layout::DictLayout;
use guardlift_ir::builder::{FunctionBuilder, ModuleBuilder};
use guardlift_ir::{BinOp, Block, ConvOp, ExternId, IntCC, Module, SrcLoc, Type, Value};
use guardlift_jit::{CompileOptions, Jit, Ptr};
use guardlift_runtime::{AttrSlowPaths, Mode, Report, Runtime, RuntimeConfig};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

// ---- objects: CPython 3.12's managed dict ---------------------------------------------------

/// Bytes before the object: `[weakref][dict_or_values][gc_next][gc_prev]`.
const PRE_HEADER: usize = 32;
/// The managed-dict word: `obj - 24` (`layout cpython312`).
const DICT_OR_VALUES: usize = 24;
/// The class's attributes: `x` (0), `y` (1).
const KEYS: [&str; 2] = ["x", "y"];

/// A type: its name and its `weight` slot (native code).
#[repr(C)]
struct PyType {
    weight: extern "C" fn(u64) -> i64,
    name: &'static str,
}

/// An object: refcount and type, after the pre-header.
#[repr(C)]
struct Obj {
    refcnt: i64,
    ty: *const PyType,
}

/// A dict of the VM (what a materialised `__dict__` is).
#[repr(C, align(8))]
struct Dict {
    map: HashMap<&'static str, i64>,
}

fn obj_layout() -> Layout {
    Layout::from_size_align(PRE_HEADER + std::mem::size_of::<Obj>(), 16).expect("layout")
}

/// Values array: a u64 capacity, then one word per attribute (spec §4).
fn values_layout() -> Layout {
    Layout::from_size_align(8 + 8 * KEYS.len(), 16).expect("layout")
}

/// # Safety
/// `o` is a live object of [`obj_new`].
unsafe fn word(o: u64) -> *mut u64 {
    (o as usize - DICT_OR_VALUES) as *mut u64
}

fn obj_new(ty: &'static PyType, x: i64) -> u64 {
    // SAFETY: fresh allocations of the object's and values' layouts,
    // written within them.
    unsafe {
        let mem = alloc_zeroed(obj_layout());
        let o = mem.add(PRE_HEADER) as *mut Obj;
        o.write(Obj { refcnt: 1, ty });
        let v = alloc_zeroed(values_layout()) as *mut u64;
        *v = KEYS.len() as u64;
        let values = v.add(1);
        *values = x as u64;
        *word(o as u64) = values as u64 - 1; // values - 1: low bits 0b111
        o as u64
    }
}

/// Materialises the object's `__dict__`: the values move into a dict of the
/// VM, and the word points at it.
fn obj_dictify(o: u64) {
    // SAFETY: `o` is live; its word is values-tagged (checked) or a dict.
    unsafe {
        let w = *word(o);
        if w & 1 == 0 {
            return;
        }
        let values = (w + 1) as *const i64;
        let map = (KEYS.iter().enumerate())
            .map(|(i, k)| (*k, *values.add(i)))
            .collect();
        dealloc((values as *mut u8).sub(8), values_layout());
        *word(o) = Box::into_raw(Box::new(Dict { map })) as u64;
    }
}

fn obj_free(o: u64) {
    // SAFETY: `o` is live and not used after this.
    unsafe {
        let w = *word(o);
        if w & 1 == 1 {
            dealloc(((w + 1) as *mut u8).sub(8), values_layout());
        } else if w != 0 {
            drop(Box::from_raw(w as *mut Dict));
        }
        dealloc((o as *mut u8).sub(PRE_HEADER), obj_layout());
    }
}

/// Dict-mode attribute reads and writes: the VM's own dict code.
fn dict_get(o: u64, i: u32) -> i64 {
    // SAFETY: `o` is live; a word that is not values-tagged is 0 or a Dict.
    unsafe {
        match *word(o) {
            0 => 0,
            w => (*(w as *const Dict))
                .map
                .get(KEYS[i as usize])
                .copied()
                .unwrap_or(0),
        }
    }
}

fn dict_set(o: u64, i: u32, v: i64) {
    // SAFETY: as in `dict_get`.
    unsafe {
        let w = *word(o);
        if w != 0 {
            (*(w as *mut Dict)).map.insert(KEYS[i as usize], v);
        }
    }
}

fn get_attr(o: u64, i: u32) -> i64 {
    // SAFETY: `o` is live: values-tagged words lead to its values array.
    unsafe {
        match *word(o) {
            w if w & 1 == 1 => *((w + 1) as *const i64).add(i as usize),
            _ => dict_get(o, i),
        }
    }
}

fn set_attr(o: u64, i: u32, v: i64) {
    // SAFETY: as in `get_attr`.
    unsafe {
        match *word(o) {
            w if w & 1 == 1 => *((w + 1) as *mut i64).add(i as usize) = v,
            _ => dict_set(o, i, v),
        }
    }
}

static SLOW_CALLS: AtomicU64 = AtomicU64::new(0);
static WEIGHT_CALLS: AtomicU64 = AtomicU64::new(0);

/// The VM's slow paths, bound to the runtime: a `load_attr`/`store_attr`
/// of compiled code on a dict-mode object lands here.
struct VmSlowPaths;

impl AttrSlowPaths for VmSlowPaths {
    fn load_attr(&self, obj: u64, index: u32) -> i64 {
        SLOW_CALLS.fetch_add(1, Relaxed);
        dict_get(obj, index)
    }
    fn store_attr(&self, obj: u64, index: u32, value: i64) {
        SLOW_CALLS.fetch_add(1, Relaxed);
        dict_set(obj, index, value)
    }
}

extern "C" fn point_weight(o: u64) -> i64 {
    WEIGHT_CALLS.fetch_add(1, Relaxed);
    2 * get_attr(o, 0)
}

extern "C" fn heavy_weight(_o: u64) -> i64 {
    WEIGHT_CALLS.fetch_add(1, Relaxed);
    100
}

static POINT: PyType = PyType {
    weight: point_weight,
    name: "Point",
};
static HEAVY: PyType = PyType {
    weight: heavy_weight,
    name: "Heavy",
};

/// A list of objects: its length and its items.
#[repr(C)]
struct List {
    len: i64,
    items: *const u64,
}

// ---- bytecode and the interpreter ------------------------------------------------------------

/// One bytecode instruction of the stack machine.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Op {
    Const(i64),
    Load(usize),
    Store(usize),
    Add,
    Mul,
    FloorDiv,
    Mod,
    Lt,
    JumpIfFalse(usize),
    Jump(usize),
    LoadAttr(u32),
    /// `obj.k = value`: pops the object, then the value.
    StoreAttr(u32),
    /// `list[index]`: pops the index, then the list.
    GetItem,
    Len,
    /// `obj.weight()`: the type's slot.
    CallWeight,
    Return,
}

use Op::*;

/// Locals of `score`: objs, n, d, acc, i, p.
const NLOCALS: usize = 6;
const NPARAMS: usize = 3;

/// `score(objs, n, d)` (the module doc).
const SCORE: &[Op] = &[
    Const(1),
    Store(3),
    Const(0),
    Store(4),
    Load(4), // 4: loop head
    Load(1),
    Lt,
    JumpIfFalse(37),
    Load(0),
    Load(4),
    Load(0),
    Len,
    Mod,
    GetItem,
    Store(5),
    Load(3),
    Const(31),
    Mul, // 17: overflows after a dozen iterations
    Load(5),
    LoadAttr(0),
    Load(5),
    CallWeight,
    Add,
    Load(2),
    FloorDiv,
    Add,
    Store(3),
    Load(3),
    Const(1000),
    Mod,
    Load(5),
    StoreAttr(1),
    Load(4),
    Const(1),
    Add,
    Store(4),
    Jump(4),
    Load(3), // 37
    Const(1_000_000_007),
    Mod,
    Return,
];

/// A value of the interpreter.
#[derive(Copy, Clone, Debug, PartialEq)]
enum V {
    Int(i128),
    Obj(u64),
    List(u64),
}

impl V {
    fn int(self) -> Result<i128, String> {
        match self {
            V::Int(i) => Ok(i),
            v => Err(format!("TypeError: {v:?} is not an int")),
        }
    }
    fn obj(self) -> Result<u64, String> {
        match self {
            V::Obj(o) => Ok(o),
            v => Err(format!("TypeError: {v:?} is not an object")),
        }
    }
}

fn floordiv(a: i128, b: i128) -> Result<i128, String> {
    if b == 0 {
        return Err("ZeroDivisionError: integer division or modulo by zero".into());
    }
    let (q, r) = (a / b, a % b);
    Ok(if r != 0 && (r < 0) != (b < 0) {
        q - 1
    } else {
        q
    })
}

fn pymod(a: i128, b: i128) -> Result<i128, String> {
    Ok(a - b * floordiv(a, b)?)
}

/// Runs `code` from `pc` with `locals` and operand `stack` to its return.
fn interpret(
    code: &[Op],
    mut pc: usize,
    locals: &mut [V],
    stack: &mut Vec<V>,
) -> Result<V, String> {
    let pop = |s: &mut Vec<V>| s.pop().ok_or_else(|| "stack underflow".to_string());
    loop {
        let op = *code.get(pc).ok_or("pc out of range")?;
        pc += 1;
        match op {
            Const(c) => stack.push(V::Int(c as i128)),
            Load(k) => stack.push(locals[k]),
            Store(k) => locals[k] = pop(stack)?,
            Add | Mul | FloorDiv | Mod | Lt => {
                let b = pop(stack)?.int()?;
                let a = pop(stack)?.int()?;
                stack.push(V::Int(match op {
                    Add => a.checked_add(b).ok_or("int too large for this example")?,
                    Mul => a.checked_mul(b).ok_or("int too large for this example")?,
                    FloorDiv => floordiv(a, b)?,
                    Mod => pymod(a, b)?,
                    _ => (a < b) as i128,
                }));
            }
            JumpIfFalse(t) => {
                if pop(stack)?.int()? == 0 {
                    pc = t;
                }
            }
            Jump(t) => pc = t,
            LoadAttr(k) => {
                let o = pop(stack)?.obj()?;
                stack.push(V::Int(get_attr(o, k) as i128));
            }
            StoreAttr(k) => {
                let o = pop(stack)?.obj()?;
                let v = pop(stack)?.int()?;
                let v = i64::try_from(v).map_err(|_| "OverflowError: attribute too large")?;
                set_attr(o, k, v);
            }
            GetItem => {
                let i = pop(stack)?.int()?;
                let V::List(l) = pop(stack)? else {
                    return Err("TypeError: not a list".into());
                };
                // SAFETY: lists of the VM are live while `score` runs.
                let list = unsafe { &*(l as *const List) };
                let i = if i < 0 { i + list.len as i128 } else { i };
                if !(0..list.len as i128).contains(&i) {
                    return Err("IndexError: list index out of range".into());
                }
                // SAFETY: `i` is within the list's items.
                stack.push(V::Obj(unsafe { *list.items.add(i as usize) }));
            }
            Len => {
                let V::List(l) = pop(stack)? else {
                    return Err("TypeError: not a list".into());
                };
                // SAFETY: as in `GetItem`.
                stack.push(V::Int(unsafe { (*(l as *const List)).len } as i128));
            }
            CallWeight => {
                let o = pop(stack)?.obj()?;
                // SAFETY: `o` is a live object of the VM: its type is one of ours.
                let ty = unsafe { &*(*(o as *const Obj)).ty };
                stack.push(V::Int((ty.weight)(o) as i128));
            }
            Return => return pop(stack),
        }
    }
}

// ---- the JIT: bytecode to guardlift IR --------------------------------------------------------

/// What the JIT knows of a stack value or local (its deopt metadata).
#[derive(Copy, Clone, Debug, PartialEq)]
enum Kind {
    Int,
    Obj,
    List,
}

/// A side exit: where the interpreter resumes and the kinds of the
/// operand stack the compiled code wrote after the locals.
#[derive(Clone, Debug)]
struct Exit {
    pc: usize,
    reason: &'static str,
    stack: Vec<Kind>,
}

/// An operand-stack slot of the translation: its IR value and kind.
type Slot = (Value, Kind);

/// The kinds of `score`'s locals (fixed by the specialisation).
const LOCAL_KINDS: [Kind; NLOCALS] = [
    Kind::List,
    Kind::Int,
    Kind::Int,
    Kind::Int,
    Kind::Int,
    Kind::Obj,
];

fn ir_type(k: Kind) -> Type {
    match k {
        Kind::Int => Type::I64,
        Kind::Obj | Kind::List => Type::Ptr,
    }
}

/// The translation of one function: the builder, the frame area and the
/// side exits' metadata.
struct Translator<'a, 'm> {
    f: &'a mut FunctionBuilder<'m>,
    frame: Value,
    deopt: ExternId,
    exits: Vec<Exit>,
}

impl Translator<'_, '_> {
    fn int(&mut self, v: i64) -> Value {
        self.f.iconst(Type::I64, v)
    }

    /// A guard: a side exit resuming at `pc` with `stack` (the state before
    /// the bytecode) when `cond` (an i8) is non-zero.
    fn guard(&mut self, cond: Value, pc: usize, reason: &'static str, stack: &[Slot]) {
        let k = self.exits.len();
        self.exits.push(Exit {
            pc,
            reason,
            stack: stack.iter().map(|s| s.1).collect(),
        });
        let exit = self.f.create_block(&format!("exit{k}"));
        let ok = self.f.create_block(&format!("ok{k}"));
        self.f.brif(cond, exit, &[], ok, &[]);
        self.f.switch_to_block(exit);
        for (j, &(v, _)) in stack.iter().enumerate() {
            self.f.store(v, self.frame, 8 * (NLOCALS + j) as i32);
        }
        let e = self.int(k as i64);
        let r = self.f.call(self.deopt, &[self.frame, e]);
        self.f.ret(r);
        self.f.switch_to_block(ok);
    }
}

/// Translates `code` with the IR builder to `@score(ptr, i64, i64) -> i64`,
/// each instruction at the position `(bytecode offset, 1)`, so reports name
/// the bytecode; the side exits' metadata, by exit number.
fn translate(code: &[Op], max_stack: usize) -> Result<(Module, Vec<Exit>), String> {
    let mut leaders: Vec<usize> = vec![0];
    for (pc, op) in code.iter().enumerate() {
        if let JumpIfFalse(t) | Jump(t) = *op {
            leaders.extend([t, pc + 1]);
        }
    }
    leaders.retain(|&l| l < code.len());
    leaders.sort_unstable();
    leaders.dedup();
    let mut mb = ModuleBuilder::new(DictLayout::Cpython312);
    let deopt = mb.declare_extern("deopt", &[Type::Ptr, Type::I64], Some(Type::I64));
    let id = mb.declare_function("score", &[Type::Ptr, Type::I64, Type::I64], Some(Type::I64));
    let mut f = mb.function(id);
    let entry = f.create_block("entry");
    let blocks: HashMap<usize, Block> = (leaders.iter())
        .map(|&pc| (pc, f.create_block(&format!("pc{pc}"))))
        .collect();
    f.switch_to_block(entry);
    let frame = f.stack_alloc((8 * (NLOCALS + max_stack)) as u32);
    for k in 0..NPARAMS {
        let p = f.param(k);
        f.store(p, frame, 8 * k as i32);
    }
    f.jump(blocks[&0], &[]);
    let mut t = Translator {
        f: &mut f,
        frame,
        deopt,
        exits: Vec::new(),
    };
    let mut stack: Vec<Slot> = Vec::new();
    let under = || "stack underflow".to_string();
    for (pc, op) in code.iter().enumerate() {
        if let Some(&b) = blocks.get(&pc) {
            if !stack.is_empty() {
                return Err(format!(
                    "pc {pc}: the operand stack is not empty at a block start"
                ));
            }
            // Fall through into the new block.
            if pc > 0 && !matches!(code[pc - 1], JumpIfFalse(_) | Jump(_) | Return) {
                t.f.jump(b, &[]);
            }
            t.f.switch_to_block(b);
        }
        t.f.set_srcloc(SrcLoc {
            line: pc as u32,
            col: 1,
        });
        let before = stack.clone();
        match *op {
            Const(c) => {
                let v = t.int(c);
                stack.push((v, Kind::Int));
            }
            Load(k) => {
                let v = t.f.load(ir_type(LOCAL_KINDS[k]), frame, 8 * k as i32);
                stack.push((v, LOCAL_KINDS[k]));
            }
            Store(k) => {
                let (v, kind) = stack.pop().ok_or_else(under)?;
                if kind != LOCAL_KINDS[k] {
                    return Err(format!("pc {pc}: local {k} changes kind"));
                }
                t.f.store(v, frame, 8 * k as i32);
            }
            Add | Mul => {
                let (b, _) = stack.pop().ok_or_else(under)?;
                let (a, _) = stack.pop().ok_or_else(under)?;
                let (test, op) = match *op {
                    Add => (BinOp::SaddOverflows, BinOp::Iadd),
                    _ => (BinOp::SmulOverflows, BinOp::Imul),
                };
                let o = t.f.binary(test, a, b);
                t.guard(o, pc, "integer overflow", &before);
                let v = t.f.binary(op, a, b);
                stack.push((v, Kind::Int));
            }
            FloorDiv | Mod => {
                let (b, _) = stack.pop().ok_or_else(under)?;
                let (a, _) = stack.pop().ok_or_else(under)?;
                // Guards: a zero divisor (the interpreter raises), and
                // MIN // -1 (overflows).
                let z = t.int(0);
                let zero = t.f.icmp(IntCC::Eq, b, z);
                t.guard(zero, pc, "division by zero", &before);
                let (m1, min) = (t.int(-1), t.int(i64::MIN));
                let isneg1 = t.f.icmp(IntCC::Eq, b, m1);
                let ismin = t.f.icmp(IntCC::Eq, a, min);
                let both = t.f.binary(BinOp::Band, isneg1, ismin);
                t.guard(both, pc, "integer overflow", &before);
                // Python floors: q = a / b, r = a % b (truncating); when r
                // != 0 and r, b differ in sign, q -= 1 and r += b.
                let q = t.f.binary(BinOp::Sdiv, a, b);
                let r = t.f.binary(BinOp::Srem, a, b);
                let x = t.f.binary(BinOp::Bxor, r, b);
                let sx = t.f.icmp(IntCC::Slt, x, z);
                let rnz = t.f.icmp(IntCC::Ne, r, z);
                let adj = t.f.binary(BinOp::Band, sx, rnz);
                let v = if *op == FloorDiv {
                    let adj64 = t.f.conv(ConvOp::Uext, Type::I64, adj);
                    t.f.binary(BinOp::Isub, q, adj64)
                } else {
                    let badd = t.f.select(adj, b, z);
                    t.f.binary(BinOp::Iadd, r, badd)
                };
                stack.push((v, Kind::Int));
            }
            Lt => {
                let (b, _) = stack.pop().ok_or_else(under)?;
                let (a, _) = stack.pop().ok_or_else(under)?;
                let c = t.f.icmp(IntCC::Slt, a, b);
                let v = t.f.conv(ConvOp::Uext, Type::I64, c);
                stack.push((v, Kind::Int));
            }
            JumpIfFalse(target) => {
                let (c, _) = stack.pop().ok_or_else(under)?;
                t.f.brif(c, blocks[&(pc + 1)], &[], blocks[&target], &[]);
            }
            Jump(target) => t.f.jump(blocks[&target], &[]),
            LoadAttr(k) => {
                let (o, _) = stack.pop().ok_or_else(under)?;
                let v = t.f.load_attr(o, k);
                stack.push((v, Kind::Int));
            }
            StoreAttr(k) => {
                let (o, _) = stack.pop().ok_or_else(under)?;
                let (v, _) = stack.pop().ok_or_else(under)?;
                t.f.store_attr(o, k, v);
            }
            GetItem => {
                let (i, _) = stack.pop().ok_or_else(under)?;
                let (l, _) = stack.pop().ok_or_else(under)?;
                let len = t.f.load(Type::I64, l, 0);
                // Unsigned: a negative index fails too (the interpreter
                // handles Python's negative indices).
                let oob = t.f.icmp(IntCC::Uge, i, len);
                t.guard(oob, pc, "index out of range", &before);
                let items = t.f.load(Type::Ptr, l, 8);
                let three = t.int(3);
                let off = t.f.binary(BinOp::Ishl, i, three);
                let addr = t.f.binary(BinOp::Iadd, items, off);
                let v = t.f.load(Type::Ptr, addr, 0);
                stack.push((v, Kind::Obj));
            }
            Len => {
                let (l, _) = stack.pop().ok_or_else(under)?;
                let v = t.f.load(Type::I64, l, 0);
                stack.push((v, Kind::Int));
            }
            CallWeight => {
                let (o, _) = stack.pop().ok_or_else(under)?;
                // The object's type, then its `weight` slot.
                let ty = t.f.load(Type::Ptr, o, 8);
                let slot = t.f.load(Type::Ptr, ty, 0);
                let v = t.f.call_indirect(slot, &[o], &[Type::Ptr], Some(Type::I64));
                stack.push((v.ok_or("call_indirect gave no value")?, Kind::Int));
            }
            Return => {
                let (v, _) = stack.pop().ok_or_else(under)?;
                t.f.ret(Some(v));
            }
        }
    }
    let exits = t.exits;
    f.finish();
    let m = mb.build().map_err(|e| e.to_string())?;
    Ok((m, exits))
}

// ---- the side exit ---------------------------------------------------------------------------

/// What `@deopt` needs: the side exits' metadata, and what happened.
struct DeoptState {
    exits: Vec<Exit>,
    taken: Vec<String>,
}

static DEOPT: Mutex<Option<DeoptState>> = Mutex::new(None);

/// `@deopt(frame, exit)`: rebuilds the interpreter's frame from the
/// compiled code's frame area and resumes interpreting `score` where the
/// guard failed; returns its result (the compiled function returns it).
extern "C" fn deopt(frame: Ptr, exit: i64) -> i64 {
    let frame = frame.0 as *const i64;
    let exit_meta = {
        let g = DEOPT.lock().unwrap_or_else(|e| e.into_inner());
        g.as_ref().and_then(|s| s.exits.get(exit as usize).cloned())
    };
    let Some(e) = exit_meta else {
        eprintln!("minivm: side exit {exit} has no metadata");
        std::process::abort();
    };
    let to_v = |k: Kind, w: i64| match k {
        Kind::Int => V::Int(w as i128),
        Kind::Obj => V::Obj(w as u64),
        Kind::List => V::List(w as u64),
    };
    // SAFETY: the compiled code passes its frame area: NLOCALS locals,
    // then the operand stack its exit wrote (e.stack.len() words).
    let words = unsafe { std::slice::from_raw_parts(frame, NLOCALS + e.stack.len()) };
    let mut locals: Vec<V> = (LOCAL_KINDS.iter().zip(words))
        .map(|(&k, &w)| to_v(k, w))
        .collect();
    let mut stack: Vec<V> = (e.stack.iter().zip(&words[NLOCALS..]))
        .map(|(&k, &w)| to_v(k, w))
        .collect();
    let i = words[4];
    let r = interpret(SCORE, e.pc, &mut locals, &mut stack);
    if let Some(s) = DEOPT.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        s.taken.push(format!(
            "side exit {exit} at bytecode {} ({:?}: {}) in iteration i={i}",
            e.pc, SCORE[e.pc], e.reason
        ));
    }
    match r {
        Ok(V::Int(v)) => v as i64,
        Ok(v) => {
            eprintln!("minivm: score returned {v:?}");
            std::process::abort()
        }
        Err(msg) => {
            // A real VM would raise into the caller; the example stops.
            eprintln!("minivm: {msg}");
            std::process::exit(1)
        }
    }
}

// ---- main ----------------------------------------------------------------------------------

struct Args {
    instrument: bool,
    jit: bool,
    n: i64,
    d: i64,
    objects: usize,
    dump_ir: bool,
    use_after_free: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        instrument: false,
        jit: true,
        n: 20,
        d: 3,
        objects: 5,
        dump_ir: false,
        use_after_free: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(s) = it.next() {
        let mut num = |what: &str| -> Result<i64, String> {
            let v = it.next().ok_or(format!("{what} needs a value"))?;
            v.parse()
                .map_err(|_| format!("{what}: `{v}` is not a number"))
        };
        match s.as_str() {
            "--instrument" => a.instrument = true,
            "--no-jit" => a.jit = false,
            "--dump-ir" => a.dump_ir = true,
            "--use-after-free" => a.use_after_free = true,
            "--n" => a.n = num("--n")?,
            "--d" => a.d = num("--d")?,
            "--objects" => a.objects = num("--objects")?.max(1) as usize,
            _ => return Err(format!("unknown argument `{s}`")),
        }
    }
    if a.use_after_free && !a.instrument {
        return Err("--use-after-free needs --instrument (else the read is a real one)".into());
    }
    if a.n > 24 {
        return Err("--n: at most 24 (the interpreter's ints are i128)".into());
    }
    Ok(a)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("minivm: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("minivm: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let rt = Runtime::new(RuntimeConfig {
        layout: guardlift_runtime::layout::DictLayout::Cpython312,
        mode: Mode::Recover,
        ..Default::default()
    });
    let reports = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = reports.clone();
    // The site's position is the bytecode offset the translation set.
    rt.set_report_handler(Some(Arc::new(move |r: &Report| {
        let pc = r.info.line as usize;
        let what = format!(
            "minivm: {} at bytecode {pc} ({}) of score\n{}",
            r.kind.name(),
            SCORE
                .get(pc)
                .map_or("?".to_string(), |op| format!("{op:?}")),
            r.to_human()
        );
        sink.lock().unwrap_or_else(|e| e.into_inner()).push(what);
    })));
    rt.bind_attr_slow_paths(Arc::new(VmSlowPaths))?;

    // The objects: Points and a Heavy, every third one in dict mode.
    let objs: Vec<u64> = (0..args.objects)
        .map(|k| {
            let ty = if k % 4 == 3 { &HEAVY } else { &POINT };
            let o = obj_new(ty, 10 + 7 * k as i64);
            if k % 3 == 1 {
                obj_dictify(o);
            }
            o
        })
        .collect();
    for &o in &objs {
        rt.register_object(o)?;
    }
    let kinds: Vec<String> = (objs.iter())
        .map(|&o| {
            // SAFETY: `o` is live.
            let (ty, w) = unsafe { ((*(*(o as *const Obj)).ty).name, *word(o)) };
            format!("{ty}{}", if w & 1 == 0 { "(dict)" } else { "" })
        })
        .collect();
    println!("minivm: objects: {}", kinds.join(" "));
    if args.use_after_free {
        // The VM's bug: object 0 is released (the runtime is told, as a
        // tp_dealloc hook would) while the list still holds it. Its memory
        // stays allocated until the end, so only the checks see the use.
        rt.object_freed(objs[0])?;
        println!("minivm: object 0 freed while the list still holds it");
    }
    let list = List {
        len: objs.len() as i64,
        items: objs.as_ptr(),
    };
    let list_addr = &list as *const List as u64;

    let result = if args.jit {
        let (mut module, exits) = translate(SCORE, 8)?;
        *DEOPT.lock().unwrap_or_else(|e| e.into_inner()) = Some(DeoptState {
            exits,
            taken: Vec::new(),
        });
        if args.instrument {
            module = guardlift_instrument::instrument(&module, guardlift_instrument::CheckSet::ALL);
        }
        if args.dump_ir {
            println!("{}", guardlift_ir::print_module(&module));
        }
        // Typed: the compile checks `@deopt`'s declaration against it.
        let opts =
            CompileOptions::default().host_fn("deopt", deopt as extern "C" fn(Ptr, i64) -> i64);
        let code = Jit::compile(&module, rt.clone(), &opts)?;
        let score = code.func::<(Ptr, i64, i64), i64>("score")?;
        // SAFETY: the list and its objects are live for the call; the
        // host functions (`deopt`, the weight slots, the slow paths) touch
        // only them.
        let r = unsafe { score.call((Ptr(list_addr), args.n, args.d)) };
        let st = DEOPT.lock().unwrap_or_else(|e| e.into_inner());
        let taken = st.as_ref().map(|s| s.taken.clone()).unwrap_or_default();
        if taken.is_empty() {
            println!("minivm: no side exit: the compiled code ran to the end");
        }
        for t in taken {
            println!("minivm: {t}; resumed in the interpreter");
        }
        println!(
            "minivm: compiled code: {} attribute slow paths (the VM's dicts), {} weight() calls through call_indirect (with the interpreter's after the exit)",
            SLOW_CALLS.load(Relaxed),
            WEIGHT_CALLS.load(Relaxed)
        );
        r as i128
    } else {
        let mut locals = vec![V::Int(0); NLOCALS];
        locals[0] = V::List(list_addr);
        locals[1] = V::Int(args.n as i128);
        locals[2] = V::Int(args.d as i128);
        interpret(SCORE, 0, &mut locals, &mut Vec::new())?.int()?
    };
    let ys: Vec<String> = objs.iter().map(|&o| get_attr(o, 1).to_string()).collect();
    println!("minivm: score = {result}");
    println!("minivm: p.y = {}", ys.join(" "));
    // Drained: the handler has them (else the runtime prints them again).
    let _ = rt.take_reports();
    let reports = reports.lock().unwrap_or_else(|e| e.into_inner());
    println!("minivm: {} report(s)", reports.len());
    for r in reports.iter() {
        println!("{r}");
    }
    for (k, &o) in objs.iter().enumerate() {
        if !(args.use_after_free && k == 0) {
            rt.object_freed(o)?;
        }
        obj_free(o);
    }
    Ok(())
}
