//! The `guards` target: random managed-dict words and adstack op sequences
//! against a model of the invariants (spec §4–§6), not against another
//! engine.
//!
//! One straight-line `@main` per input:
//! - a test object and a neighbour object, every word of their blocks
//!   other than the dict slot and every attribute filled with canaries;
//! - per input word: a guarded `dict_slot.store` of it, then (the word
//!   written raw into the slot) a guarded `dict_slot.load`, and for words
//!   that do not take the values fast path a guarded `load_attr` and
//!   `store_attr`; the slot is restored after each;
//! - three adstacks of the same element type allocated one after the
//!   other, the outer two full of canaries, the middle one driven by the
//!   input's op sequence (guarded);
//! - a loop that re-runs an `adstack.alloc` while its header's param `%t`
//!   carries the previous iteration's handle (issue 13): `%p = alloc`,
//!   some pushes, `loop(%t = %p)`: guarded pushes through `%t`,
//!   `%s = alloc`, the input's guarded ops on `%t` or `%s`,
//!   `jump loop(%s)`. From the second iteration on `%t` and `%s` name one
//!   buffer that the alloc has just emptied; the model runs the loop;
//! - three fresh objects and the input's frees and uses of them, some
//!   after a free, some past the attribute capacity, capacity words
//!   forged by raw stores, `obj_dictify` with the values pointer kept,
//!   raw accesses touching the redzones (`life`);
//! - every canary read back at the end.
//!
//! The guards are written by hand on exactly the ops under test, or put
//! there by the instrumentation pass (`lifetime,dict,bounds,adstack`;
//! then every other object, raw memory and adstack op is guarded too and
//! must stay silent). Either way, in recover mode on both engines: a
//! guard fires exactly when the invariant is broken (word low bits not
//! `0b000`/`0b111`; push at len = capacity; pop/top/top_adj/acc_adj at
//! len 0; a use or free of a freed object, a free of a non-object, an
//! attribute index ≥ the capacity), with the right observation, and every
//! canary is intact.

use crate::exec::{canon_result, run_raw_with, Engine};
use crate::gen::renumber;
use arbitrary::Arbitrary;
use guardlift_instrument::{instrument, CheckSet};
use guardlift_ir::builder::{FunctionBuilder, ModuleBuilder};
use guardlift_ir::{
    print_module, verify_module, BinOp, ConvOp, FloatCC, Module, SrcLoc, Type, Value,
};
use guardlift_jit::{CompileOptions, OptLevel};
use guardlift_runtime::adstack::AdElem;
use guardlift_runtime::layout::{tag_ok, DictLayout};
use guardlift_runtime::{Mode, Observed, ReportKind};
use std::collections::{BTreeMap, BTreeSet};

mod life;

pub use life::LifeOp;

/// What a tested instruction must report: the kind and what it observes.
type Fire = (ReportKind, Want);

/// What a report must have observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    /// A dict word with these low bits (its address part differs per run).
    DictLow(u64),
    /// The adstack's `(capacity, len)`.
    Adstack(u64, u64),
    /// A lifetime report about object `obj` of the lifetime part: the
    /// reported object pointer is that object's address plus `delta` (an
    /// interior pointer freed), the address is the object pointer (`None`:
    /// a raw access, somewhere in the object's memory) and `width` bytes.
    Life {
        obj: usize,
        delta: u64,
        raw: bool,
        width: u32,
    },
    /// A bounds report about object `obj` of the lifetime part.
    Bounds {
        obj: usize,
        index: u64,
        capacity: u64,
    },
    /// A `heap_overflow`: a raw access of `width` bytes touching a
    /// redzone (`value`: what a store wrote, zero-extended).
    Overflow { width: u32, value: Option<u64> },
}

/// A managed-dict word to try.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum WordCase {
    /// This exact word.
    Raw(u64),
    /// The object's real (values-tagged) word with its low 3 bits replaced.
    Tagged(u8),
    /// The word 0 ("no values and no dict yet").
    Zero,
}

/// One op on the adstack under test.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum AdOp {
    /// Push this value (raw bits of the element type).
    Push(u64),
    Pop,
    Top,
    TopAdj,
    /// Add this (raw bits) to the top's adjoint.
    AccAdj(u64),
    Len,
}

/// One op of the re-allocating loop: on the header's param `%t` (the
/// previous iteration's handle) or on the loop's fresh `%s`.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct LoopOp {
    pub on_new: bool,
    pub op: AdOp,
}

/// A `guards` input.
#[derive(Arbitrary, Clone, Debug)]
pub struct GuardsInput {
    pub layout: u8,
    pub nattrs: u8,
    pub words: Vec<WordCase>,
    pub elem: u8,
    pub cap: u8,
    pub ops: Vec<AdOp>,
    /// Guards from the instrumentation pass instead of by hand.
    pub instrument: bool,
    /// The re-allocating loop: iterations, entries of `%p`, pushes
    /// through `%t` before the alloc, and the ops after it.
    pub loop_trips: u8,
    pub loop_init: u8,
    pub loop_pre: u8,
    pub loop_ops: Vec<LoopOp>,
    /// The lifetime and bounds part (`life`): the objects' attribute
    /// count and the frees and uses of them (a count byte, then the ops:
    /// sequences long enough to free an object twice are common).
    pub life_nattrs: u8,
    #[arbitrary(with = life::arbitrary_ops)]
    pub life_ops: Vec<LifeOp>,
    /// Compile with Cranelift's `none` optimization level instead of
    /// `speed` (guards lowered without the e-graph pass; a cheaper compile).
    pub opt_none: bool,
}

const MAX_WORDS: usize = 12;
const MAX_OPS: usize = 48;
const MAX_LOOP_OPS: usize = 16;
const MAX_LIFE_OPS: usize = 16;
/// Entries of each canary adstack: an overflow or underflow of the stack
/// under test reaches the neighbour's header or its first or last entry,
/// so two entries catch what four did (with 4: 401 IR instructions per
/// program of the committed seeds, with 2: 314, and 7 % fewer machine
/// instructions per execution).
const CANARY_STACK_CAP: u32 = 2;

/// The layouts the target tries (the presets and custom offsets below,
/// inside and above the object body).
fn layout_of(k: u8) -> DictLayout {
    match k % 6 {
        0 => DictLayout::Cpython312,
        1 => DictLayout::Phoenix,
        2 => DictLayout::Custom(-64),
        3 => DictLayout::Custom(0),
        4 => DictLayout::Custom(8),
        _ => DictLayout::Custom(32),
    }
}

/// Offsets (from the object address) of every word of an object's block
/// other than its dict slot (see `guardlift_runtime::heap::Heap::obj_new`).
pub fn canary_offsets(layout: DictLayout) -> Vec<i32> {
    let off = layout.dict_slot_offset();
    let lo = off.min(0);
    let hi = (off + 8).max(16);
    (lo..hi).step_by(8).filter(|&o| o != off).collect()
}

fn canary(obj: usize, k: i64) -> i64 {
    0x5a5a_0000_0000_0000u64 as i64 | ((obj as i64) << 32) | (k & 0xffff_ffff)
}

/// The element value (canonical bits) of raw input bits, as `fconst`/`iconst` build it.
fn elem_bits(e: AdElem, x: u64) -> u64 {
    let ty = match e {
        AdElem::F32 => Type::F32,
        AdElem::F64 => Type::F64,
        AdElem::I64 => Type::I64,
    };
    canon_result(ty, x)
}

/// `old + d` in the element type (bits in, bits out).
fn elem_add(e: AdElem, old: u64, d: u64) -> u64 {
    match e {
        AdElem::F32 => (f32::from_bits(old as u32) + f32::from_bits(d as u32)).to_bits() as u64,
        AdElem::F64 => (f64::from_bits(old) + f64::from_bits(d)).to_bits(),
        AdElem::I64 => old.wrapping_add(d),
    }
}

/// What the program prints for an element value: its bits as an i64, every NaN the same NaN.
fn elem_print(e: AdElem, bits: u64) -> String {
    let v = match e {
        AdElem::F32 => {
            let f = f32::from_bits(bits as u32);
            let b = if f.is_nan() {
                f32::NAN.to_bits()
            } else {
                f.to_bits()
            };
            b as i32 as i64
        }
        AdElem::F64 => {
            let f = f64::from_bits(bits);
            (if f.is_nan() { f64::NAN.to_bits() } else { bits }) as i64
        }
        AdElem::I64 => bits as i64,
    };
    v.to_string()
}

/// What adstack op `op` does to a modelled stack `m` (entries `(primal,
/// adjoint)` bits) of capacity `cap`: the report it must fire (kind and the
/// len it sees) and what the program prints after it (top/top_adj: the
/// element; len: the count).
fn model_op(
    elem: AdElem,
    cap: u32,
    m: &mut Vec<(u64, u64)>,
    op: AdOp,
) -> (Option<(ReportKind, usize)>, Option<String>) {
    let len = m.len();
    let under = Some((ReportKind::AdstackUnderflow, 0));
    match op {
        AdOp::Push(_) if len as u32 >= cap => (Some((ReportKind::AdstackOverflow, len)), None),
        AdOp::Push(x) => {
            m.push((elem_bits(elem, x), 0));
            (None, None)
        }
        AdOp::Pop => (if m.pop().is_none() { under } else { None }, None),
        AdOp::Top | AdOp::TopAdj => {
            let (fire, bits) = match m.last() {
                None => (under, 0),
                Some(&(p, _)) if matches!(op, AdOp::Top) => (None, p),
                Some(&(_, d)) => (None, d),
            };
            (fire, Some(elem_print(elem, bits)))
        }
        AdOp::AccAdj(x) => match m.last_mut() {
            None => (under, None),
            Some(top) => {
                top.1 = elem_add(elem, top.1, elem_bits(elem, x));
                (None, None)
            }
        },
        AdOp::Len => (None, Some(len.to_string())),
    }
}

/// A step of an emitted adstack op sequence, for the model to run.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// The loop's `%s = adstack.alloc` (empties the loop's buffer).
    Alloc,
    /// `op` at `(block, inst)` on `%s` (`on_new`) or on `%t`.
    Op {
        at: (usize, usize),
        on_new: bool,
        op: AdOp,
    },
}

/// A report the model expects: the guarded instruction (block and index
/// in it), its kind and its observation (`None`: a dict word, whose
/// address part differs per run; only the low bits are checked).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Expect {
    at: (usize, usize),
    kind: ReportKind,
    want: Want,
}

/// The builder with an instruction counter (every builder call here adds one instruction).
struct B<'f> {
    fb: FunctionBuilder<'f>,
    /// Instructions of the current block so far.
    n: usize,
    /// The current block's index, and the sizes of the blocks left.
    blk: usize,
    sizes: Vec<usize>,
    /// Emitting code the model runs afterwards: `test` and `print` record
    /// no expectation.
    quiet: bool,
    hand: bool,
    print_i64: guardlift_ir::ExternId,
    expect: Vec<Expect>,
    output: Vec<String>,
}

impl B<'_> {
    fn c(&mut self, ty: Type, x: i64) -> Value {
        self.n += 1;
        self.fb.iconst(ty, x)
    }
    fn f(&mut self, ty: Type, x: f64) -> Value {
        self.n += 1;
        self.fb.fconst(ty, x)
    }
    fn bin(&mut self, op: BinOp, a: Value, b: Value) -> Value {
        self.n += 1;
        self.fb.binary(op, a, b)
    }
    fn conv(&mut self, op: ConvOp, ty: Type, a: Value) -> Value {
        self.n += 1;
        self.fb.conv(op, ty, a)
    }
    /// Prints `a == b` (as 0/1) and expects 1.
    fn print_eq(&mut self, a: Value, b: Value) {
        self.n += 1;
        let e = self.fb.icmp(guardlift_ir::IntCC::Eq, a, b);
        let e = self.conv(ConvOp::Uext, Type::I64, e);
        self.print(e, "1".to_string());
    }
    fn print(&mut self, v: Value, expect: String) {
        self.n += 1;
        self.fb.call(self.print_i64, &[v]);
        if !self.quiet {
            self.output.push(expect);
        }
    }
    fn switch(&mut self, blk: guardlift_ir::Block) {
        self.sizes.push(self.n);
        self.n = 0;
        self.blk = blk.0 as usize;
        self.fb.switch_to_block(blk);
    }
    /// The position of the last instruction.
    fn last(&self) -> (usize, usize) {
        (self.blk, self.n - 1)
    }
    /// Expects an adstack report at `at` (as the model found it).
    fn expect_adstack(&mut self, at: (usize, usize), kind: ReportKind, cap: u32, len: usize) {
        self.expect.push(Expect {
            at,
            kind,
            want: Want::Adstack(cap as u64, len as u64),
        });
    }
    /// Marks the last instruction as under test: guarded by hand (unless
    /// the pass will guard it), expected to report `fire`.
    fn test(&mut self, fire: Option<Fire>) {
        if self.hand {
            self.fb.guard_last(SrcLoc::default());
        }
        if let Some((kind, want)) = fire.filter(|_| !self.quiet) {
            self.expect.push(Expect {
                at: self.last(),
                kind,
                want,
            });
        }
    }
}

/// The module of an input, the reports it must produce and its output.
pub struct GuardsCase {
    pub module: Module,
    /// The JIT's optimization level.
    pub opt: OptLevel,
    expect: Vec<Expect>,
    pub output: Vec<String>,
}

impl GuardsCase {
    /// How many reports the model expects from the re-allocating loop's
    /// body (block 2): a guard that must fire there, e.g. through a stale
    /// `%t` after the alloc emptied its buffer.
    pub fn loop_fires(&self) -> usize {
        self.expect.iter().filter(|e| e.at.0 == 2).count()
    }

    /// The kinds of report the model expects (spec names), each once.
    pub fn expected_kinds(&self) -> BTreeSet<&'static str> {
        self.expect.iter().map(|e| e.kind.name()).collect()
    }
}

/// Builds the module of `input` (instrumented if the input says so).
pub fn build(input: &GuardsInput) -> GuardsCase {
    let layout = layout_of(input.layout);
    let nattrs = 1 + (input.nattrs % 6) as u32;
    let elem = [AdElem::F32, AdElem::F64, AdElem::I64][(input.elem % 3) as usize];
    let ad = Ad {
        elem,
        et: Type::of_elem(elem),
        cap: 1 + (input.cap % 6) as u32,
    };
    let words = &input.words[..input.words.len().min(MAX_WORDS)];
    let ops = &input.ops[..input.ops.len().min(MAX_OPS)];

    let mut mb = ModuleBuilder::new(layout);
    let obj_new = mb.declare_extern("obj_new", &[Type::I64], Some(Type::Ptr));
    let print_i64 = mb.declare_extern("print_i64", &[Type::I64], None);
    let life_ext = life::Externs {
        obj_new,
        obj_free: mb.declare_extern("obj_free", &[Type::Ptr], None),
        obj_dictify: mb.declare_extern("obj_dictify", &[Type::Ptr], None),
    };
    let main = mb.declare_function("main", &[], None);
    let mut fb = mb.function(main);
    let entry = fb.create_block("entry");
    fb.switch_to_block(entry);
    let mut b = B {
        fb,
        n: 0,
        blk: 0,
        sizes: Vec::new(),
        quiet: false,
        hand: !input.instrument,
        print_i64,
        expect: Vec::new(),
        output: Vec::new(),
    };

    let objs = emit_words(&mut b, layout, obj_new, nattrs, words);
    let handles = emit_adstacks(&mut b, ad, ops);
    emit_realloc_loop(&mut b, ad, input);
    // ---- frees and uses of objects, attribute indices past the capacity ----
    let life_ops = &input.life_ops[..input.life_ops.len().min(MAX_LIFE_OPS)];
    life::emit(&mut b, &life_ext, layout, input.life_nattrs, life_ops);
    emit_canary_checks(&mut b, ad, layout, &objs, nattrs, &handles);
    b.n += 1;
    b.fb.ret(None);
    b.sizes.push(b.n);
    let B {
        sizes,
        expect,
        output,
        ..
    } = b;
    // The module's text only on a failure (printing every module took 4 %
    // of an execution).
    let mut module = mb.into_module();
    if let Err(e) = verify_module(&module) {
        panic!(
            "guards: the module does not verify: {e}\n{}",
            print_module(&module)
        );
    }
    let got: Vec<usize> = module.functions[0]
        .blocks
        .iter()
        .map(|b| b.insts.len())
        .collect();
    assert!(
        got == sizes,
        "guards: instruction count is off: {got:?}, expected {sizes:?}\n{}",
        print_module(&module)
    );
    renumber(&mut module);
    if input.instrument {
        module = instrument(
            &module,
            CheckSet {
                dict: true,
                adstack: true,
                clobber: false,
                bounds: true,
                lifetime: true,
            },
        );
    }
    GuardsCase {
        module,
        opt: if input.opt_none {
            OptLevel::None
        } else {
            OptLevel::Speed
        },
        expect,
        output,
    }
}

/// Managed-dict words: two canaried objects, then every word of the
/// input stored into the first one's dict slot, checked and raw, and read
/// back through guarded ops. Returns the objects.
fn emit_words(
    b: &mut B,
    layout: DictLayout,
    obj_new: guardlift_ir::ExternId,
    nattrs: u32,
    words: &[WordCase],
) -> Vec<Value> {
    let off = layout.dict_slot_offset();
    let mut objs = Vec::new();
    for _ in 0..2 {
        let n = b.c(Type::I64, nattrs as i64);
        b.n += 1;
        objs.push(b.fb.call(obj_new, &[n]).expect("obj_new returns"));
    }
    let cans = canary_offsets(layout);
    for (k, &o) in objs.iter().enumerate() {
        for &w in &cans {
            let c = b.c(Type::I64, canary(k, w as i64));
            b.n += 1;
            b.fb.store(c, o, w);
        }
        for i in 0..nattrs {
            let c = b.c(Type::I64, canary(k, 0x100 + i as i64));
            b.n += 1;
            b.fb.store_attr(o, i, c);
        }
    }
    let o = objs[0];
    b.n += 1;
    let orig = b.fb.dict_slot_load(o);
    for (ci, wc) in words.iter().enumerate() {
        let (wv, low) = match *wc {
            WordCase::Raw(x) => (b.c(Type::I64, x as i64), x & 7),
            WordCase::Zero => (b.c(Type::I64, 0), 0),
            WordCase::Tagged(t) => {
                let m = b.c(Type::I64, !7);
                let hi = b.bin(BinOp::Band, orig, m);
                let t = (t & 7) as i64;
                let tv = b.c(Type::I64, t);
                (b.bin(BinOp::Bor, hi, tv), t as u64)
            }
        };
        let bad = !tag_ok(low);
        let dict_fire = bad.then_some((ReportKind::DictSlotTag, Want::DictLow(low)));
        // dict_slot.store: written iff the tag is valid.
        b.n += 1;
        b.fb.dict_slot_store(o, wv);
        b.test(dict_fire);
        b.n += 1;
        let now = b.fb.dict_slot_load(o);
        b.print_eq(now, if bad { orig } else { wv });
        b.n += 1;
        b.fb.dict_slot_store(o, orig);
        // The word written raw (no check), then read through guarded ops.
        b.n += 1;
        b.fb.store(wv, o, off);
        b.n += 1;
        let seen = b.fb.dict_slot_load(o);
        b.test(dict_fire);
        b.print_eq(seen, wv);
        if low != 0b111 {
            // Not the fast path: the guard fires, or the host's slow path
            // answers (0 for an empty slot or a word that is not the object's).
            let i = ci as u32 % nattrs;
            b.n += 1;
            let a = b.fb.load_attr(o, i);
            b.test(dict_fire);
            let z = b.c(Type::I64, 0);
            b.print_eq(a, z);
            let x = b.c(Type::I64, 0x7777);
            b.n += 1;
            b.fb.store_attr(o, i, x);
            b.test(dict_fire);
        }
        b.n += 1;
        b.fb.store(orig, o, off);
    }
    objs
}

/// The adstack element type and capacity of a case: its canaries, its
/// constants, printing its elements, and emitting and modelling its ops.
#[derive(Clone, Copy)]
struct Ad {
    elem: AdElem,
    /// The IR type of `elem`.
    et: Type,
    /// The capacity of the stack under test and of the loop's stacks.
    cap: u32,
}

impl Ad {
    /// The canary element `k` of stack `s` (or its adjoint).
    fn canary_elem(self, s: usize, k: u32, adj: bool) -> u64 {
        let x = (s as u64) * 10 + k as u64 + if adj { 100 } else { 1 };
        match self.elem {
            AdElem::F32 => (x as f32).to_bits() as u64,
            AdElem::F64 => (x as f64).to_bits(),
            AdElem::I64 => x,
        }
    }

    /// A constant element of these bits.
    fn konst(self, b: &mut B, bits: u64) -> Value {
        match self.elem {
            AdElem::F32 => b.f(Type::F32, f32::from_bits(bits as u32) as f64),
            AdElem::F64 => b.f(Type::F64, f64::from_bits(bits)),
            AdElem::I64 => b.c(Type::I64, bits as i64),
        }
    }

    /// Prints an element's bits (canonical NaN) as an i64.
    fn print_elem(self, b: &mut B, v: Value, bits: u64) {
        let elem = self.elem;
        let p = match elem {
            AdElem::I64 => v,
            AdElem::F32 | AdElem::F64 => {
                b.n += 1;
                let c = b.fb.fcmp(FloatCC::Ne, v, v);
                let nan = b.f(self.et, f64::NAN);
                b.n += 1;
                let v = b.fb.select(c, nan, v);
                if elem == AdElem::F32 {
                    let i = b.conv(ConvOp::Bitcast, Type::I32, v);
                    b.conv(ConvOp::Sext, Type::I64, i)
                } else {
                    b.conv(ConvOp::Bitcast, Type::I64, v)
                }
            }
        };
        b.print(p, elem_print(elem, bits));
    }

    /// Emits `op` on `h` (guarded, quiet: the model runs it later); its position.
    fn emit(self, b: &mut B, h: Value, op: AdOp) -> (usize, usize) {
        let elem = self.elem;
        let at = match op {
            AdOp::Push(x) => {
                let v = self.konst(b, elem_bits(elem, x));
                b.n += 1;
                b.fb.adstack_push(h, v);
                b.last()
            }
            AdOp::Pop => {
                b.n += 1;
                b.fb.adstack_pop(h);
                b.last()
            }
            AdOp::Top | AdOp::TopAdj => {
                b.n += 1;
                let r = if matches!(op, AdOp::Top) {
                    b.fb.adstack_top(h)
                } else {
                    b.fb.adstack_top_adj(h)
                };
                b.test(None);
                let at = b.last();
                self.print_elem(b, r, 0);
                return at;
            }
            AdOp::AccAdj(x) => {
                let d = self.konst(b, elem_bits(elem, x));
                b.n += 1;
                b.fb.adstack_acc_adj(h, d);
                b.last()
            }
            AdOp::Len => {
                b.n += 1;
                let r = b.fb.adstack_len(h);
                b.print(r, String::new());
                return b.last();
            }
        };
        b.test(None);
        at
    }

    /// Runs emitted steps on the model: `t_is_s` when %t names the loop's buffer.
    fn run(
        self,
        b: &mut B,
        steps: &[Step],
        t: &mut Vec<(u64, u64)>,
        s: &mut Vec<(u64, u64)>,
        t_is_s: bool,
    ) {
        for step in steps {
            match *step {
                Step::Alloc => s.clear(),
                Step::Op { at, on_new, op } => {
                    let m = if on_new || t_is_s { &mut *s } else { &mut *t };
                    let (fire, printed) = model_op(self.elem, self.cap, m, op);
                    if let Some((kind, len)) = fire {
                        b.expect_adstack(at, kind, self.cap, len);
                    }
                    b.output.extend(printed);
                }
            }
        }
    }
}

/// Adstacks: the stack under test between two full canary stacks, and the
/// input's ops on it. Returns the three handles.
fn emit_adstacks(b: &mut B, ad: Ad, ops: &[AdOp]) -> Vec<Value> {
    let mut handles = Vec::new();
    for (s, c) in [CANARY_STACK_CAP, ad.cap, CANARY_STACK_CAP]
        .into_iter()
        .enumerate()
    {
        b.n += 1;
        let h = b.fb.adstack_alloc(ad.elem, c);
        handles.push(h);
        if s != 1 {
            for k in 0..c {
                let v = ad.konst(b, ad.canary_elem(s, k, false));
                b.n += 1;
                b.fb.adstack_push(h, v);
                let d = ad.konst(b, ad.canary_elem(s, k, true));
                b.n += 1;
                b.fb.adstack_acc_adj(h, d);
            }
        }
    }
    let a = handles[1];
    let mut model: Vec<(u64, u64)> = Vec::new();
    b.quiet = true;
    let steps: Vec<Step> = ops
        .iter()
        .map(|&op| Step::Op {
            at: ad.emit(b, a, op),
            on_new: false,
            op,
        })
        .collect();
    b.quiet = false;
    ad.run(b, &steps, &mut model, &mut Vec::new(), false);
    b.n += 1;
    let r = b.fb.adstack_len(a);
    b.print(r, model.len().to_string());
    handles
}

/// A loop that re-runs an alloc while %t names its buffer; leaves `b` in
/// the exit block.
fn emit_realloc_loop(b: &mut B, ad: Ad, input: &GuardsInput) {
    let (elem, cap) = (ad.elem, ad.cap);
    let trips = (input.loop_trips % 4) as i64;
    b.n += 1;
    let p = b.fb.adstack_alloc(elem, cap);
    let mut p_model = Vec::new();
    for k in 0..(input.loop_init as u32 % (cap + 1)) {
        let bits = ad.canary_elem(3, k, false);
        let v = ad.konst(b, bits);
        b.n += 1;
        b.fb.adstack_push(p, v);
        p_model.push((bits, 0));
    }
    let header = b.fb.create_block("loop");
    let body = b.fb.create_block("body");
    let exit = b.fb.create_block("exit");
    let i = b.fb.append_block_param(header, Type::I64);
    let t = b.fb.append_block_param(header, Type::AdStack(elem));
    let z = b.c(Type::I64, 0);
    b.n += 1;
    b.fb.jump(header, &[z, p]);
    b.switch(header);
    let k = b.c(Type::I64, trips);
    b.n += 1;
    let c = b.fb.icmp(guardlift_ir::IntCC::Slt, i, k);
    b.n += 1;
    b.fb.brif(c, body, &[], exit, &[]);
    b.switch(body);
    b.quiet = true;
    let mut steps = Vec::new();
    for j in 0..(input.loop_pre % 3) as u32 {
        let op = AdOp::Push(ad.canary_elem(4, j, false));
        steps.push(Step::Op {
            at: ad.emit(b, t, op),
            on_new: false,
            op,
        });
    }
    b.n += 1;
    let s_new = b.fb.adstack_alloc(elem, cap);
    steps.push(Step::Alloc);
    for lop in &input.loop_ops[..input.loop_ops.len().min(MAX_LOOP_OPS)] {
        let h = if lop.on_new { s_new } else { t };
        steps.push(Step::Op {
            at: ad.emit(b, h, lop.op),
            on_new: lop.on_new,
            op: lop.op,
        });
    }
    let one = b.c(Type::I64, 1);
    let i1 = b.bin(BinOp::Iadd, i, one);
    b.n += 1;
    b.fb.jump(header, &[i1, s_new]);
    b.quiet = false;
    let mut s_model = Vec::new();
    for it in 0..trips {
        ad.run(b, &steps, &mut p_model, &mut s_model, it > 0);
    }
    b.switch(exit);
}

/// Every canary, read back: the objects' words and attributes, and the
/// two canary adstacks popped to empty.
fn emit_canary_checks(
    b: &mut B,
    ad: Ad,
    layout: DictLayout,
    objs: &[Value],
    nattrs: u32,
    handles: &[Value],
) {
    let cans = canary_offsets(layout);
    for (k, &o) in objs.iter().enumerate() {
        for &w in &cans {
            b.n += 1;
            let r = b.fb.load(Type::I64, o, w);
            let c = b.c(Type::I64, canary(k, w as i64));
            b.print_eq(r, c);
        }
        for i in 0..nattrs {
            b.n += 1;
            let r = b.fb.load_attr(o, i);
            let c = b.c(Type::I64, canary(k, 0x100 + i as i64));
            b.print_eq(r, c);
        }
    }
    for s in [0usize, 2] {
        let h = handles[s];
        b.n += 1;
        let r = b.fb.adstack_len(h);
        b.print(r, CANARY_STACK_CAP.to_string());
        for k in (0..CANARY_STACK_CAP).rev() {
            b.n += 1;
            let t = b.fb.adstack_top(h);
            ad.print_elem(b, t, ad.canary_elem(s, k, false));
            b.n += 1;
            let d = b.fb.adstack_top_adj(h);
            ad.print_elem(b, d, ad.canary_elem(s, k, true));
            b.n += 1;
            b.fb.adstack_pop(h);
        }
    }
}

/// Runs a case on `engine` in recover mode and checks it against the model.
pub fn check(case: &GuardsCase, engine: Engine) -> Result<(), String> {
    // Without Cranelift's verifier (on in debug-assertion builds such as
    // the fuzz binaries, where its passes over every function took a third
    // of an execution): what this target checks is the model; `differential`
    // (debug assertions) and `compile_aarch64` (always) run the verifier.
    let jit = CompileOptions::default()
        .with_opt_level(case.opt)
        .with_verifier(false);
    let r = run_raw_with(&case.module, "main", &[], engine, Mode::Recover, &jit);
    let ctx = || {
        format!(
            "engine {engine:?}, opt {:?}\n{}",
            case.opt,
            print_module(&case.module)
        )
    };
    match &r.result {
        Ok(None) => {}
        other => return Err(format!("run failed: {other:?}\n{}", ctx())),
    }
    let output: Vec<&str> = r.output.lines().collect();
    if output != case.output {
        let first = output
            .iter()
            .zip(&case.output)
            .position(|(a, b)| a != b)
            .unwrap_or(output.len().min(case.output.len()));
        return Err(format!(
            "output differs from the model at line {first}: got {:?}, expected {:?} ({} vs {} lines; a canary or read-back value changed)\n{}",
            output.get(first),
            case.output.get(first),
            output.len(),
            case.output.len(),
            ctx()
        ));
    }
    // The instruction each expectation names, as a source line.
    let blocks = &case.module.functions[0].blocks;
    let line_of = |(b, k): (usize, usize)| -> u32 {
        // The pass never inserts instructions here (no clobber check), so
        // indices are the builder's.
        blocks[b].insts[k].loc.line
    };
    // Per (line, kind): the expectation and how often it fires (a site in
    // the loop fires once per failing iteration, always seeing the same).
    let mut want: BTreeMap<(u32, &'static str), (&Expect, u64)> = BTreeMap::new();
    for e in &case.expect {
        let w = want.entry((line_of(e.at), e.kind.name())).or_insert((e, 0));
        assert_eq!(w.0, e, "guards: one site, two observations");
        w.1 += 1;
    }
    let mut got: BTreeMap<(u32, &'static str), _> = BTreeMap::new();
    let mut bases = BTreeMap::new();
    for rep in &r.reports {
        got.insert((rep.info.line, rep.kind.name()), rep);
    }
    for (k, &(e, count)) in &want {
        let Some(rep) = got.get(k) else {
            return Err(format!(
                "guard did not fire: line {} {} (expected {e:?})\n{}",
                k.0,
                k.1,
                ctx()
            ));
        };
        let ok = rep.count == count && observed_as(e.want, &rep.observed, &mut bases);
        if !ok {
            return Err(format!(
                "wrong report at line {}: {rep:?}, expected {e:?}\n{}",
                k.0,
                ctx()
            ));
        }
    }
    for (k, rep) in &got {
        if !want.contains_key(k) {
            return Err(format!(
                "guard fired on an intact invariant: line {}: {rep:?}\n{}",
                k.0,
                ctx()
            ));
        }
    }
    Ok(())
}

/// Does `seen` match `want`? Besides the fields the model knows, the
/// reports about one object of the lifetime part must all name that
/// object's address, and different objects different addresses (`bases`:
/// the address of each object seen so far).
fn observed_as(want: Want, seen: &Observed, bases: &mut BTreeMap<usize, u64>) -> bool {
    let (obj, base) = match (want, *seen) {
        (Want::DictLow(low), Observed::Dict { value, .. }) => return low == value & 7,
        (Want::Adstack(c, l), Observed::Adstack { capacity, len }) => {
            return (c, l) == (capacity, len)
        }
        (Want::Overflow { width: w, value: v }, Observed::Overflow { width, value, .. }) => {
            return (w, v) == (width, value)
        }
        (
            Want::Life {
                obj,
                delta,
                raw,
                width: w,
            },
            Observed::Lifetime {
                object,
                address,
                width,
            },
        ) => {
            // A raw access is somewhere in the object's memory (its values
            // array: 8-aligned words); an object op names the object itself.
            let at = if raw {
                address != object && address % 8 == 0
            } else {
                address == object
            };
            if !at || w != width {
                return false;
            }
            (obj, object.wrapping_sub(delta))
        }
        (
            Want::Bounds {
                obj,
                index: i,
                capacity: c,
            },
            Observed::Bounds {
                object,
                index,
                capacity,
            },
        ) => {
            if (i, c) != (index, capacity) {
                return false;
            }
            (obj, object)
        }
        _ => return false,
    };
    match bases.get(&obj) {
        Some(&b) => b == base,
        None => {
            let fresh = !bases.values().any(|&b| b == base);
            bases.insert(obj, base);
            fresh
        }
    }
}
