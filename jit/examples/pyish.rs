//! pyish in Rust: a tiny Python-like bytecode interpreter that hands its hot
//! function to guardlift through the Rust API (the C twin of this example
//! is `capi/examples/pyish`, over the C API).
//!
//! ```text
//! cargo run -p guardlift-jit --example pyish -- [--instrument] [--buggy] [--no-jit]
//!     [--hot N] [--rounds N] [--iters N] [--bug-at N] [--dump-ir]
//! ```
//!
//! Objects are laid out like CPython 3.12's: the managed-dict word is at
//! `obj - 24` (`layout cpython312`), values arrays are tagged `values - 1`
//! (low bits `0b111`) and carry CPython's size prefix, and dict mode points
//! the word at a real dict owned by the interpreter (`Dict`, 8-aligned).
//!
//! Once `step` has been called `--hot` times, it is translated to guardlift
//! IR text, compiled with [`Jit::compile`] against a recover-mode
//! [`Runtime`], and called through a [`guardlift_jit::TypedFunc`] from then
//! on. It does not bind its own slow paths
//! (`Runtime::bind_attr_slow_paths`, which `minivm.rs` shows), so
//! `load_attr`/`store_attr` would call the runtime's model heap on a miss;
//! the translation branches on the word itself instead: `load_attr`/`store_attr` when it is
//! values-tagged, the interpreter's `@interp_dict_get`/`@interp_dict_set`
//! host functions otherwise.
//!
//! `--instrument` writes the dict check into the IR as `guard.` ops
//! (`guard.dict_slot.load`, `guard.load_attr`, `guard.store_attr`), exactly
//! what `guardlift_instrument::instrument(&m, CheckSet { dict: true, .. })`
//! inserts; the report handler prints each report with the IR line it
//! names. `--buggy` swaps the `incref` helper for one that, once, flips the
//! tag bit of the object's managed-dict word.

use guardlift_jit::{CompileOptions, Jit, TypedFunc};
use guardlift_runtime::{Mode, Report, Runtime, RuntimeConfig};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

// ---- objects: CPython 3.12 layout -------------------------------------------------------------

/// `[weakref][dict_or_values][gc_next][gc_prev]` before the object.
const PRE_HEADER: usize = 32;
/// `_PyObject_DictOrValuesPointer(obj) == obj - 24`.
const DICT_OR_VALUES: isize = -24;
/// The class's split keys: attribute `i` of the values array.
const KEYS: [&str; 3] = ["x", "y", "total"];

#[repr(C)]
struct Object {
    ob_refcnt: i64,
    ob_type: usize,
    /// Allocator bookkeeping (not object model): the values block this
    /// object owns, so memory is freed correctly even after a corruption.
    values_mem: *mut u8,
}

/// A real dict, what the word points to in dict mode.
#[repr(C, align(8))]
struct Dict {
    ob_refcnt: i64,
    map: HashMap<&'static str, i64>,
}

fn object_layout() -> Layout {
    Layout::from_size_align(PRE_HEADER + std::mem::size_of::<Object>(), 16).unwrap()
}

fn values_layout(n: usize) -> (Layout, usize) {
    let prefix = (n + 2 + 7) & !7; // _Py_SIZE_ROUND_UP(size + 2, 8)
    (Layout::from_size_align(prefix + 8 * n, 16).unwrap(), prefix)
}

/// # Safety
/// `o` is a live object.
unsafe fn word(o: *mut Object) -> *mut u64 {
    // SAFETY: `o` is live (the caller's contract): its dict word is inside it.
    unsafe { (o as *mut u8).offset(DICT_OR_VALUES) as *mut u64 }
}

fn word_ok(w: u64) -> bool {
    matches!(w & 7, 0 | 7)
}

fn object_new() -> *mut Object {
    // SAFETY: fresh allocations of the object's and values' layouts, written in bounds.
    unsafe {
        let mem = alloc_zeroed(object_layout());
        let o = mem.add(PRE_HEADER) as *mut Object;
        let (vl, prefix) = values_layout(KEYS.len());
        let vmem = alloc_zeroed(vl);
        *vmem.add(prefix - 1) = prefix as u8;
        o.write(Object {
            ob_refcnt: 1,
            ob_type: 0,
            values_mem: vmem,
        });
        *word(o) = vmem.add(prefix) as u64 - 1; // values - 1: low bits 0b111
        o
    }
}

/// Dict mode (what touching `obj.__dict__` does in CPython 3.12).
fn object_materialize_dict(o: *mut Object) {
    // SAFETY: like CPython's C API, the interpreter passes only live objects
    // from `object_new`; their words are values-tagged or dict pointers it made.
    unsafe {
        let w = *word(o);
        if w & 1 == 0 {
            return;
        }
        let values = (w + 1) as *const i64;
        let map = KEYS
            .iter()
            .enumerate()
            .map(|(i, k)| (*k, *values.add(i)))
            .collect();
        let (vl, _) = values_layout(KEYS.len());
        dealloc((*o).values_mem, vl);
        (*o).values_mem = std::ptr::null_mut();
        *word(o) = Box::into_raw(Box::new(Dict { ob_refcnt: 1, map })) as u64;
    }
}

fn object_free(o: *mut Object) {
    // SAFETY: as in `object_materialize_dict`; `o` is not used after this.
    unsafe {
        let w = *word(o);
        if !word_ok(w) {
            eprintln!("pyish: object {o:p} has a corrupt managed-dict word {w:#x} at dealloc; freeing through the allocator's record");
        } else if w != 0 && w & 1 == 0 {
            drop(Box::from_raw(w as *mut Dict));
        }
        if !(*o).values_mem.is_null() {
            dealloc((*o).values_mem, values_layout(KEYS.len()).0);
        }
        dealloc((o as *mut u8).sub(PRE_HEADER), object_layout());
    }
}

static CORRUPT_REFUSED: AtomicU64 = AtomicU64::new(0);

/// The dict slow path (also the interpreter's own LoadAttr when not values-tagged).
extern "C" fn interp_dict_get(o: *mut Object, i: i64) -> i64 {
    // SAFETY: as in `object_materialize_dict` (a corrupt word is refused
    // before it is followed); `i` is below the number of keys.
    unsafe {
        let w = *word(o);
        if w & 1 == 1 {
            return *((w + 1) as *const i64).add(i as usize);
        }
        if w == 0 {
            return 0;
        }
        if !word_ok(w) {
            // CPython would use `w` as a PyDictObject * here and crash.
            CORRUPT_REFUSED.fetch_add(1, Relaxed);
            return 0;
        }
        let d = &*(w as *const Dict);
        d.map.get(KEYS[i as usize]).copied().unwrap_or(0)
    }
}

extern "C" fn interp_dict_set(o: *mut Object, i: i64, v: i64) {
    // SAFETY: as in `interp_dict_get`.
    unsafe {
        let w = *word(o);
        if w & 1 == 1 {
            *((w + 1) as *mut i64).add(i as usize) = v;
            return;
        }
        if !word_ok(w) || w == 0 {
            CORRUPT_REFUSED.fetch_add((w != 0) as u64, Relaxed);
            return;
        }
        let d = &mut *(w as *mut Dict);
        d.map.insert(KEYS[i as usize], v);
    }
}

fn get_attr(o: *mut Object, i: usize) -> i64 {
    // SAFETY: as in `interp_dict_get`.
    unsafe {
        let w = *word(o);
        if w & 1 == 1 {
            *((w + 1) as *const i64).add(i)
        } else {
            interp_dict_get(o, i as i64)
        }
    }
}

fn set_attr(o: *mut Object, i: usize, v: i64) {
    // SAFETY: as in `interp_dict_get`.
    unsafe {
        let w = *word(o);
        if w & 1 == 1 {
            *((w + 1) as *mut i64).add(i) = v;
        } else {
            interp_dict_set(o, i as i64, v)
        }
    }
}

extern "C" fn interp_incref(o: *mut Object) {
    // SAFETY: `o` is a live object (the interpreter's contract).
    unsafe { (*o).ob_refcnt += 1 }
}

extern "C" fn interp_decref(o: *mut Object) {
    // SAFETY: `o` is a live object (the interpreter's contract).
    unsafe { (*o).ob_refcnt -= 1 }
}

static BUG_AT: AtomicU64 = AtomicU64::new(500);
static BUGGY_CALLS: AtomicU64 = AtomicU64::new(0);
static BUG_FIRED: AtomicBool = AtomicBool::new(false);

/// Once, after `BUG_AT` calls, on an object with inline values: writes the
/// word three slots before the object (meaning a field after it) and flips
/// the managed-dict word's tag bit.
extern "C" fn interp_incref_buggy(o: *mut Object) {
    // SAFETY: `o` is a live object; the stray write (the bug this demo
    // plants) stays inside its allocation's pre-header.
    unsafe {
        (*o).ob_refcnt += 1;
        let n = BUGGY_CALLS.fetch_add(1, Relaxed) + 1;
        if n >= BUG_AT.load(Relaxed) && *word(o) & 1 == 1 && !BUG_FIRED.swap(true, Relaxed) {
            *(o as *mut u64).sub(3) ^= 1;
        }
    }
}

// ---- bytecode ---------------------------------------------------------------------------------

#[derive(Copy, Clone, Debug)]
enum Op {
    LoadConst(i64),
    LoadFast(usize),
    StoreFast(usize),
    LoadAttr(usize),
    StoreAttr(usize),
    Add,
    Mul,
    CompareLt,
    PopJumpIfFalse(usize),
    Jump(usize),
    /// 0: incref, 1: decref.
    CallHelper(usize),
    Return,
}
use Op::*;

/// `def step(p, n)`: see the C version's main.c for the Python source.
const STEP: &[Op] = &[
    LoadConst(0),
    StoreFast(2),
    LoadFast(2), // 2: loop head
    LoadFast(1),
    CompareLt,
    PopJumpIfFalse(31),
    LoadFast(0),
    CallHelper(0), // 7: incref(p)
    LoadFast(0),
    LoadAttr(2), // 9: p.total
    LoadFast(0),
    LoadAttr(0), // p.x
    LoadFast(0),
    LoadAttr(1), // p.y
    Mul,
    Add,
    LoadFast(0),
    StoreAttr(2), // p.total = ...
    LoadFast(0),
    LoadAttr(0),
    LoadConst(1),
    Add,
    LoadFast(0),
    StoreAttr(0), // p.x = p.x + 1
    LoadFast(0),
    CallHelper(1), // decref(p)
    LoadFast(2),
    LoadConst(1),
    Add,
    StoreFast(2),
    Jump(2),
    LoadFast(0), // 31
    LoadAttr(2),
    Return,
];
const NLOCALS: usize = 3;

fn interpret(code: &[Op], args: &[i64], helpers: &[extern "C" fn(*mut Object); 2]) -> i64 {
    let mut locals = [0i64; NLOCALS];
    locals[..args.len()].copy_from_slice(args);
    let mut stack: Vec<i64> = Vec::with_capacity(16);
    let mut pc = 0;
    loop {
        let op = code[pc];
        pc += 1;
        match op {
            LoadConst(c) => stack.push(c),
            LoadFast(l) => stack.push(locals[l]),
            StoreFast(l) => locals[l] = stack.pop().unwrap(),
            LoadAttr(i) => {
                let o = stack.pop().unwrap() as *mut Object;
                stack.push(get_attr(o, i));
            }
            StoreAttr(i) => {
                let o = stack.pop().unwrap() as *mut Object;
                let v = stack.pop().unwrap();
                set_attr(o, i, v);
            }
            Add | Mul | CompareLt => {
                let b = stack.pop().unwrap();
                let a = stack.pop().unwrap();
                stack.push(match op {
                    Add => a.wrapping_add(b),
                    Mul => a.wrapping_mul(b),
                    _ => (a < b) as i64,
                });
            }
            PopJumpIfFalse(t) => {
                if stack.pop().unwrap() == 0 {
                    pc = t
                }
            }
            Jump(t) => pc = t,
            CallHelper(h) => helpers[h](stack.pop().unwrap() as *mut Object),
            Return => return stack.pop().unwrap(),
        }
    }
}

// ---- the JIT: bytecode -> guardlift IR text -----------------------------------------------------

struct Tr {
    out: String,
    next: u32,
    guard: &'static str,
}

impl Tr {
    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("%v{}", self.next - 1)
    }
    fn emit(&mut self, inst: String, comment: &str) {
        let _ = writeln!(self.out, "    {inst:<44} ; {comment}");
    }
}

/// Translates `code` (stack empty at every jump target) to IR text.
fn translate(name: &str, code: &[Op], nargs: usize, instrument: bool) -> String {
    let mut leader = vec![false; code.len() + 1];
    leader[0] = true;
    for (pc, op) in code.iter().enumerate() {
        match *op {
            Jump(t) | PopJumpIfFalse(t) => {
                leader[t] = true;
                leader[pc + 1] = true;
            }
            Return => leader[pc + 1] = true,
            _ => {}
        }
    }
    let mut t = Tr {
        out: String::new(),
        next: 0,
        guard: if instrument { "guard." } else { "" },
    };
    let g = t.guard;
    let _ = writeln!(
        t.out,
        "; {name}, translated by pyish (Rust) from its bytecode"
    );
    t.out.push_str("layout cpython312\n");
    t.out
        .push_str("extern fn @interp_dict_get(ptr, i64) -> i64\n");
    t.out
        .push_str("extern fn @interp_dict_set(ptr, i64, i64)\n");
    t.out.push_str("extern fn @interp_incref(ptr)\n");
    t.out.push_str("extern fn @interp_decref(ptr)\n\n");
    let params: Vec<String> = (0..nargs).map(|i| format!("%a{i}: i64")).collect();
    let _ = writeln!(t.out, "fn @{name}({}) -> i64 {{\nentry:", params.join(", "));
    let mut locals: Vec<String> = (0..NLOCALS)
        .map(|j| {
            if j < nargs {
                format!("%a{j}")
            } else {
                let v = t.fresh();
                t.emit(format!("{v} = iconst.i64 0"), "locals = 0");
                v
            }
        })
        .collect();
    t.emit(format!("jump bc0({})", locals.join(", ")), "");
    let mut stack: Vec<String> = Vec::new();
    let mut terminated = true;
    for (pc, &op) in code.iter().enumerate() {
        if leader[pc] {
            if !terminated {
                assert!(stack.is_empty(), "stack not empty at a block boundary");
                t.emit(
                    format!("jump bc{pc}({})", locals.join(", ")),
                    "fall through",
                );
            }
            locals = (0..NLOCALS).map(|j| format!("%l{j}_{pc}")).collect();
            let ps: Vec<String> = locals.iter().map(|l| format!("{l}: i64")).collect();
            let _ = writeln!(t.out, "bc{pc}({}):", ps.join(", "));
            terminated = false;
        }
        if terminated {
            continue;
        }
        let cm = format!("bc {pc} {op:?}");
        match op {
            LoadConst(c) => {
                let v = t.fresh();
                t.emit(format!("{v} = iconst.i64 {c}"), &cm);
                stack.push(v);
            }
            LoadFast(l) => stack.push(locals[l].clone()),
            StoreFast(l) => locals[l] = stack.pop().unwrap(),
            Add | Mul => {
                let b = stack.pop().unwrap();
                let a = stack.pop().unwrap();
                let v = t.fresh();
                let o = if matches!(op, Add) { "iadd" } else { "imul" };
                t.emit(format!("{v} = {o} {a}, {b}"), &cm);
                stack.push(v);
            }
            CompareLt => {
                let b = stack.pop().unwrap();
                let a = stack.pop().unwrap();
                let (c, v) = (t.fresh(), t.fresh());
                t.emit(format!("{c} = icmp.slt {a}, {b}"), &cm);
                t.emit(format!("{v} = uext.i64 {c}"), &cm);
                stack.push(v);
            }
            LoadAttr(i) | StoreAttr(i) => {
                let cm = format!(
                    "bc {pc} {} {}",
                    if matches!(op, LoadAttr(_)) {
                        "LOAD_ATTR"
                    } else {
                        "STORE_ATTR"
                    },
                    KEYS[i]
                );
                let obj = stack.pop().unwrap();
                let (w, one, tag, k) = (t.fresh(), t.fresh(), t.fresh(), t.fresh());
                let pre = if matches!(op, LoadAttr(_)) {
                    "la"
                } else {
                    "sa"
                };
                t.emit(format!("{w} = {g}dict_slot.load {obj}"), &cm);
                t.emit(format!("{one} = iconst.i64 1"), &cm);
                t.emit(format!("{tag} = band {w}, {one}"), &cm);
                t.emit(format!("brif {tag}, {pre}{pc}_values, {pre}{pc}_dict"), &cm);
                if let LoadAttr(_) = op {
                    let (fast, slow, res) = (t.fresh(), t.fresh(), t.fresh());
                    let _ = writeln!(t.out, "la{pc}_values:");
                    t.emit(format!("{fast} = {g}load_attr {obj}, {i}"), &cm);
                    t.emit(format!("jump la{pc}_done({fast})"), &cm);
                    let _ = writeln!(t.out, "la{pc}_dict:");
                    t.emit(format!("{k} = iconst.i64 {i}"), &cm);
                    t.emit(format!("{slow} = call @interp_dict_get({obj}, {k})"), &cm);
                    t.emit(format!("jump la{pc}_done({slow})"), &cm);
                    let _ = writeln!(t.out, "la{pc}_done({res}: i64):");
                    stack.push(res);
                } else {
                    let v = stack.pop().unwrap();
                    let _ = writeln!(t.out, "sa{pc}_values:");
                    t.emit(format!("{g}store_attr {obj}, {i}, {v}"), &cm);
                    t.emit(format!("jump sa{pc}_done"), &cm);
                    let _ = writeln!(t.out, "sa{pc}_dict:");
                    t.emit(format!("{k} = iconst.i64 {i}"), &cm);
                    t.emit(format!("call @interp_dict_set({obj}, {k}, {v})"), &cm);
                    t.emit(format!("jump sa{pc}_done"), &cm);
                    let _ = writeln!(t.out, "sa{pc}_done:");
                }
            }
            CallHelper(h) => {
                let o = stack.pop().unwrap();
                let f = ["interp_incref", "interp_decref"][h];
                t.emit(format!("call @{f}({o})"), &cm);
            }
            PopJumpIfFalse(target) => {
                let c = stack.pop().unwrap();
                assert!(stack.is_empty(), "stack not empty at a branch");
                let a = locals.join(", ");
                t.emit(format!("brif {c}, bc{}({a}), bc{target}({a})", pc + 1), &cm);
                terminated = true;
            }
            Jump(target) => {
                assert!(stack.is_empty(), "stack not empty at a jump");
                t.emit(format!("jump bc{target}({})", locals.join(", ")), &cm);
                terminated = true;
            }
            Return => {
                let v = stack.pop().unwrap();
                t.emit(format!("return {v}"), &cm);
                terminated = true;
            }
        }
    }
    assert!(terminated, "code falls off its end");
    t.out.push_str("}\n");
    t.out
}

// ---- the driver -------------------------------------------------------------------------------

struct Args {
    jit: bool,
    instrument: bool,
    buggy: bool,
    hot: u32,
    rounds: u64,
    iters: i64,
    dump_ir: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        jit: true,
        instrument: false,
        buggy: false,
        hot: 4,
        rounds: 20,
        iters: 50,
        dump_ir: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(s) = it.next() {
        let mut num = |what: &str| -> u64 {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{what} needs a number"))
        };
        match s.as_str() {
            "--instrument" => a.instrument = true,
            "--buggy" => a.buggy = true,
            "--no-jit" => a.jit = false,
            "--dump-ir" => a.dump_ir = true,
            "--hot" => a.hot = num("--hot") as u32,
            "--rounds" => a.rounds = num("--rounds"),
            "--iters" => a.iters = num("--iters") as i64,
            "--bug-at" => BUG_AT.store(num("--bug-at"), Relaxed),
            _ => {
                eprintln!("usage: pyish [--instrument] [--buggy] [--no-jit] [--hot N] [--rounds N] [--iters N] [--bug-at N] [--dump-ir]");
                std::process::exit(2);
            }
        }
    }
    a
}

/// Prints a report with the IR line its site names.
fn print_report(r: &Report, ir: &str) {
    eprintln!(
        "==pyish== guardlift report: {} in @{} at IR line {}:{} ({}), site {}",
        r.kind.name(),
        r.info.function,
        r.info.line,
        r.info.col,
        r.info.op,
        r.site
    );
    if let guardlift_runtime::Observed::Dict { object, value } = r.observed {
        eprintln!(
            "==pyish==   object {object:#x}: managed-dict word {value:#x} (low bits 0b{:03b})",
            value & 7
        );
    }
    if let Some(line) = ir.lines().nth(r.info.line.saturating_sub(1) as usize) {
        eprintln!("==pyish==   IR {}: {line}", r.info.line);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args();
    let helpers: [extern "C" fn(*mut Object); 2] = [
        if args.buggy {
            interp_incref_buggy
        } else {
            interp_incref
        },
        interp_decref,
    ];
    // The JIT backend: CPython 3.12 objects, recover mode (record, skip, go on).
    let rt = Runtime::new(RuntimeConfig {
        layout: guardlift_runtime::layout::DictLayout::Cpython312,
        mode: Mode::Recover,
        ..Default::default()
    });
    let ir_text: Arc<Mutex<String>> = Arc::default();
    {
        let ir_text = ir_text.clone();
        rt.set_report_handler(Some(Arc::new(move |r: &Report| {
            if r.count == 1 {
                print_report(r, &ir_text.lock().unwrap_or_else(|e| e.into_inner()));
            }
        })));
    }
    // SAFETY: the helpers have their externs' signatures and are the
    // interpreter's own slow paths; the translated code passes them only
    // the live objects `p` and `q` (the buggy incref's stray write stays
    // inside the object's allocation, in its pre-header).
    let symbols = unsafe {
        CompileOptions::default()
            .symbol("interp_dict_get", interp_dict_get as *const u8)
            .symbol("interp_dict_set", interp_dict_set as *const u8)
            .symbol("interp_incref", helpers[0] as *const u8)
            .symbol("interp_decref", interp_decref as *const u8)
    };

    let p = object_new();
    set_attr(p, 0, 1);
    set_attr(p, 1, 2);
    let q = object_new();
    set_attr(q, 0, 3);
    set_attr(q, 1, 5);
    object_materialize_dict(q);

    let mut calls = 0u32;
    let mut compiled: Option<TypedFunc<(i64, i64), i64>> = None;
    let mut step = |o: *mut Object, n: i64| -> Result<i64, Box<dyn std::error::Error>> {
        if compiled.is_none() && args.jit && calls >= args.hot {
            let text = translate("step", STEP, 2, args.instrument);
            if args.dump_ir {
                print!("{text}");
            }
            let module = guardlift_ir::parse_and_verify(&text)?;
            let code = Jit::compile(&module, rt.clone(), &symbols)?;
            compiled = Some(code.func::<(i64, i64), i64>("step")?);
            *ir_text.lock().unwrap() = text;
            println!(
                "pyish: step is hot after {calls} calls: compiled to guardlift IR ({})",
                if args.instrument {
                    "instrumented: dict"
                } else {
                    "not instrumented"
                }
            );
        }
        calls += 1;
        Ok(match &compiled {
            // SAFETY: `o` is `p` or `q`, live objects of the interpreter's
            // layout: the translated step's attribute accesses and helper
            // calls stay inside them (see `symbols`).
            Some(f) => unsafe { f.call((o as i64, n)) },
            None => interpret(STEP, &[o as i64, n], &helpers),
        })
    };
    let (mut last_p, mut last_q) = (0, 0);
    for _ in 0..args.rounds {
        last_p = step(p, args.iters)?;
        last_q = step(q, args.iters)?;
    }
    println!("pyish: step(p) = {last_p}, step(q) = {last_q}");
    println!(
        "pyish: p.x = {}, p.total = {}, q.x = {}, q.total = {}, refcounts {} {}",
        get_attr(p, 0),
        get_attr(p, 2),
        get_attr(q, 0),
        get_attr(q, 2),
        // SAFETY: `p` and `q` are live until the end of `main`.
        unsafe { (*p).ob_refcnt },
        // SAFETY: as above.
        unsafe { (*q).ob_refcnt }
    );
    let refused = CORRUPT_REFUSED.load(Relaxed);
    if refused > 0 {
        println!("pyish: the dict slow path refused {refused} access(es) through a corrupt managed-dict word (CPython would have crashed there)");
    }
    let reports = rt.take_reports();
    println!("pyish: {} guardlift report(s)", reports.len());
    for r in &reports {
        println!(
            "pyish:   {} in @{} at IR line {}:{} ({}), {} time(s)",
            r.kind.name(),
            r.info.function,
            r.info.line,
            r.info.col,
            r.info.op,
            r.count
        );
    }
    object_free(p);
    object_free(q);
    std::process::exit(if reports.is_empty() { 0 } else { 1 })
}
