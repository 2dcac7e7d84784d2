//! Text parser for the IR format of `spec/IR.md`.
//!
//! Hand-written and line-based: each line is lexed on its own and the parser
//! is a flat state machine (top level / inside a function), so nothing
//! recurses and the run time is linear in the size of the input.
//!
//! Names may be used before they are defined (blocks can come in any order):
//! values and block labels are resolved when their function's `}` is read,
//! callees when the whole module has been read. Result types that depend on
//! an operand (`iadd`, `select`, `adstack.top`, ...) or on a callee are
//! inferred last, walking each function's blocks in reverse postorder.
//! Only inference happens here; type *checking* is the verifier's job.

use crate::analysis::dominator_tree::reverse_postorder;
use crate::analysis::flowgraph::ControlFlowGraph;
use crate::error::ParseError;
use cranelift_entity::EntityRef;
use crate::inst::{
    BinOp, Block, BlockCall, Callee, CheckKind, Checks, ConvOp, ExternId, FloatCC, FuncId, Inst,
    InstKind, IntCC, SiteId, SrcLoc, UnOp, Value,
};
use crate::opcode::{Opcode, Yields};
use crate::module::{BlockData, ExternDecl, Function, Module, Site, ValueData, ValueDef};
use crate::types::Type;
use guardlift_runtime::adstack::{AdElem, MAX_ADSTACK_CAPACITY};
use guardlift_runtime::layout::{DictLayout, MAX_ATTR_INDEX};
use foldhash::{HashMap, HashMapExt};

type PResult<T> = Result<T, ParseError>;

fn err<T>(loc: SrcLoc, msg: impl Into<String>) -> PResult<T> {
    Err(ParseError::new(loc, msg))
}

/// Parses a module from its text form (see `spec/IR.md`).
///
/// Never panics; returns the first error found, with its 1-based line and
/// column (in characters). A UTF-8 byte-order mark at the very start is
/// skipped (it is not part of line 1's columns).
pub fn parse_module(text: &str) -> Result<Module, ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut p = Parser::default();
    let mut toks = Vec::new();
    let mut lineno: u32 = 0;
    for raw in text.split('\n') {
        lineno = lineno.saturating_add(1);
        let end_col = lex(raw, lineno, &mut toks)?;
        if toks.is_empty() {
            continue;
        }
        let cur = Cur {
            toks: &toks,
            pos: 0,
            line: lineno,
            end_col,
        };
        p.line(cur)?;
    }
    p.finish()
}

// ---------------------------------------------------------------------------
// Shared helpers (also used by the printer and the builder).

/// Is `s` a valid value name (without `%`): `[A-Za-z0-9_.]+`?
pub(crate) fn is_value_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_word_char)
}

/// Is `s` a valid function name (without `@`): `[A-Za-z_][A-Za-z0-9_.]*`?
pub(crate) fn is_func_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_') && b.all(is_word_char)
}

/// Is `s` a valid block label: `[A-Za-z_][A-Za-z0-9_]*`?
pub(crate) fn is_block_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// Sign-extends the low `bits` bits of `x`.
pub(crate) fn sext_imm(x: i64, bits: u32) -> i64 {
    if bits == 0 || bits >= 64 {
        return x;
    }
    let sh = 64 - bits;
    x.wrapping_shl(sh).wrapping_shr(sh)
}

/// Rounds a constant to what its float type can hold (f32 constants hold an
/// f32 value; NaN is canonical).
pub(crate) fn canon_float(ty: Type, v: f64) -> f64 {
    if v.is_nan() {
        f64::NAN
    } else if ty == Type::F32 {
        v as f32 as f64
    } else {
        v
    }
}

// ---------------------------------------------------------------------------
// Lexer: one line at a time.

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Tok<'a> {
    /// Opcodes, types, labels, numbers, keywords: `[A-Za-z0-9_.-]+`.
    Word(&'a str),
    /// `%name` (without the `%`).
    Val(&'a str),
    /// `@name` (without the `@`).
    Func(&'a str),
    /// `!name` (without the `!`).
    Bang(&'a str),
    LParen,
    RParen,
    Comma,
    Colon,
    Eq,
    LBrace,
    RBrace,
    Arrow,
}

impl Tok<'_> {
    fn describe(&self) -> String {
        match *self {
            Tok::Word(w) => format!("`{w}`"),
            Tok::Val(v) => format!("`%{v}`"),
            Tok::Func(f) => format!("`@{f}`"),
            Tok::Bang(b) => format!("`!{b}`"),
            Tok::LParen => "`(`".into(),
            Tok::RParen => "`)`".into(),
            Tok::Comma => "`,`".into(),
            Tok::Colon => "`:`".into(),
            Tok::Eq => "`=`".into(),
            Tok::LBrace => "`{`".into(),
            Tok::RBrace => "`}`".into(),
            Tok::Arrow => "`->`".into(),
        }
    }
}

#[derive(Copy, Clone, Debug)]
struct Token<'a> {
    tok: Tok<'a>,
    col: u32,
}

fn is_word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'.'
}

/// 1-based column of byte `i` of a line whose bytes before `i` are all ASCII.
fn col_of(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX - 1).saturating_add(1)
}

/// Index of the first byte at or after `from` that does not satisfy `ok`.
fn scan(b: &[u8], from: usize, ok: impl Fn(u8) -> bool) -> usize {
    let mut j = from;
    while j < b.len() && ok(b[j]) {
        j += 1;
    }
    j
}

/// Lexes one line into `out`; returns the column just past its last token.
///
/// Only ASCII is accepted outside comments, so every byte index the lexer
/// stops at is a char boundary and byte offsets equal character columns.
fn lex<'a>(line: &'a str, lineno: u32, out: &mut Vec<Token<'a>>) -> PResult<u32> {
    out.clear();
    let b = line.as_bytes();
    let n = b.len();
    let mut i = 0usize;
    while i < n {
        let c = b[i];
        let col = col_of(i);
        let here = SrcLoc::new(lineno, col);
        let single = match c {
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b';' => break,
            b'(' => Some(Tok::LParen),
            b')' => Some(Tok::RParen),
            b',' => Some(Tok::Comma),
            b':' => Some(Tok::Colon),
            b'=' => Some(Tok::Eq),
            b'{' => Some(Tok::LBrace),
            b'}' => Some(Tok::RBrace),
            _ => None,
        };
        if let Some(tok) = single {
            out.push(Token { tok, col });
            i += 1;
            continue;
        }
        match c {
            b'-' if b.get(i + 1) == Some(&b'>') => {
                out.push(Token {
                    tok: Tok::Arrow,
                    col,
                });
                i += 2;
            }
            b'%' => {
                let e = scan(b, i + 1, is_word_char);
                if e == i + 1 {
                    return err(here, "expected a value name after `%`");
                }
                out.push(Token {
                    tok: Tok::Val(&line[i + 1..e]),
                    col,
                });
                i = e;
            }
            b'@' => {
                if !matches!(b.get(i + 1), Some(&d) if d.is_ascii_alphabetic() || d == b'_') {
                    return err(here, "expected a function name after `@`");
                }
                let e = scan(b, i + 1, is_word_char);
                out.push(Token {
                    tok: Tok::Func(&line[i + 1..e]),
                    col,
                });
                i = e;
            }
            b'!' => {
                let e = scan(b, i + 1, |d| d.is_ascii_alphanumeric() || d == b'_');
                if e == i + 1 {
                    return err(here, "expected an annotation name after `!`");
                }
                out.push(Token {
                    tok: Tok::Bang(&line[i + 1..e]),
                    col,
                });
                i = e;
            }
            c if is_word_char(c) || c == b'-' => {
                let body = if c == b'-' {
                    b.get(i + 1..).unwrap_or(&[])
                } else {
                    b.get(i..).unwrap_or(&[])
                };
                let numeric = body.first().is_some_and(u8::is_ascii_digit);
                let hex = body.starts_with(b"0x") || body.starts_with(b"0X");
                let mut j = i + 1;
                while j < n {
                    let d = b[j];
                    let exp_sign = numeric
                        && !hex
                        && (d == b'+' || d == b'-')
                        && matches!(b[j - 1], b'e' | b'E')
                        && b.get(j + 1) != Some(&b'>');
                    if is_word_char(d) || exp_sign {
                        j += 1;
                    } else {
                        break;
                    }
                }
                out.push(Token {
                    tok: Tok::Word(&line[i..j]),
                    col,
                });
                i = j;
            }
            _ => {
                let ch = line.get(i..).and_then(|s| s.chars().next()).unwrap_or('?');
                return err(
                    here,
                    format!("unexpected character `{}`", ch.escape_debug()),
                );
            }
        }
    }
    Ok(col_of(i.min(n)))
}

// ---------------------------------------------------------------------------
// Token cursor over one line.

struct Cur<'t, 'a> {
    toks: &'t [Token<'a>],
    pos: usize,
    line: u32,
    end_col: u32,
}

impl<'a> Cur<'_, 'a> {
    fn peek(&self) -> Option<Tok<'a>> {
        self.toks.get(self.pos).map(|t| t.tok)
    }
    fn peek_at(&self, k: usize) -> Option<Tok<'a>> {
        self.toks.get(self.pos.saturating_add(k)).map(|t| t.tok)
    }
    fn loc(&self) -> SrcLoc {
        SrcLoc::new(
            self.line,
            self.toks.get(self.pos).map_or(self.end_col, |t| t.col),
        )
    }
    fn found(&self) -> String {
        self.toks
            .get(self.pos)
            .map_or_else(|| "end of line".to_string(), |t| t.tok.describe())
    }
    fn fail<T>(&self, expected: &str) -> PResult<T> {
        err(
            self.loc(),
            format!("expected {expected}, found {}", self.found()),
        )
    }
    fn bump(&mut self) {
        self.pos = self.pos.saturating_add(1);
    }
    fn eat(&mut self, t: Tok<'_>) -> bool {
        if self.peek() == Some(t) {
            self.bump();
            true
        } else {
            false
        }
    }
    fn expect(&mut self, t: Tok<'_>) -> PResult<SrcLoc> {
        let loc = self.loc();
        if self.eat(t) {
            Ok(loc)
        } else {
            self.fail(&t.describe())
        }
    }
    fn value(&mut self) -> PResult<(&'a str, SrcLoc)> {
        let loc = self.loc();
        match self.peek() {
            Some(Tok::Val(v)) => {
                self.bump();
                Ok((v, loc))
            }
            _ => self.fail("a value (`%name`)"),
        }
    }
    fn func(&mut self) -> PResult<(&'a str, SrcLoc)> {
        let loc = self.loc();
        match self.peek() {
            Some(Tok::Func(v)) => {
                self.bump();
                Ok((v, loc))
            }
            _ => self.fail("a function name (`@name`)"),
        }
    }
    fn word(&mut self, what: &str) -> PResult<(&'a str, SrcLoc)> {
        let loc = self.loc();
        match self.peek() {
            Some(Tok::Word(w)) => {
                self.bump();
                Ok((w, loc))
            }
            _ => self.fail(what),
        }
    }
    fn ty(&mut self) -> PResult<Type> {
        let (w, loc) = self.word("a type")?;
        Type::from_name(w).map_or_else(|| err(loc, format!("unknown type `{w}`")), Ok)
    }
    fn end(&self) -> PResult<()> {
        if self.pos < self.toks.len() {
            err(
                self.loc(),
                format!("unexpected {} (expected end of line)", self.found()),
            )
        } else {
            Ok(())
        }
    }
    /// An integer literal within `lo..=hi`; `what` names it in the error.
    fn int_in(&mut self, expected: &str, lo: i128, hi: i128, what: &str) -> PResult<i128> {
        let (w, loc) = self.word(expected)?;
        let v = int_lit(w, loc)?;
        if v < lo || v > hi {
            return err(loc, format!("integer literal out of range for {what}: {w}"));
        }
        Ok(v)
    }
    fn u32_lit(&mut self, expected: &str, what: &str) -> PResult<u32> {
        let v = self.int_in(expected, 0, u32::MAX as i128, what)?;
        Ok(u32::try_from(v).unwrap_or(0))
    }
}

/// Parses an integer literal: optional `-`, then decimal digits or `0x` hex.
fn int_lit(s: &str, loc: SrcLoc) -> PResult<i128> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (radix, digits) = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(r) => (16u32, r),
        None => (10u32, body),
    };
    if digits.is_empty() || !digits.chars().all(|d| d.is_digit(radix)) {
        return err(loc, format!("invalid integer literal `{s}`"));
    }
    let mut acc: i128 = 0;
    for d in digits.chars() {
        let v = d.to_digit(radix).unwrap_or(0);
        acc = match acc
            .checked_mul(radix as i128)
            .and_then(|a| a.checked_add(v as i128))
        {
            Some(a) => a,
            None => return err(loc, format!("integer literal out of range: {s}")),
        };
    }
    Ok(if neg { -acc } else { acc })
}

/// Parses a float literal for a constant of type `ty` (the grammar and
/// range rules of [`crate::literal::parse_float`], shared with entry arguments).
fn float_lit(s: &str, ty: Type, loc: SrcLoc) -> PResult<f64> {
    crate::literal::parse_float(ty, s).map_err(|e| ParseError::new(loc, e))
}

// ---------------------------------------------------------------------------
// Opcodes.

#[derive(Copy, Clone, Debug, PartialEq)]
enum Op {
    Iconst(Type),
    Fconst(Type),
    Bin(BinOp),
    Un(UnOp),
    Icmp(IntCC),
    Fcmp(FloatCC),
    Select,
    Conv(ConvOp, Type),
    Load(Type),
    Store,
    Call,
    Jump,
    Brif,
    Return,
    DictLoad,
    DictStore,
    LoadAttr,
    StoreAttr,
    AdAlloc(AdElem),
    AdPush,
    AdPop,
    AdTop,
    AdTopAdj,
    AdAccAdj,
    AdLen,
    Watch,
}

impl Op {
    /// The form of the instruction (its row of the opcode table).
    fn opcode(self) -> Opcode {
        match self {
            Op::Iconst(_) => Opcode::Iconst,
            Op::Fconst(_) => Opcode::Fconst,
            Op::Bin(_) => Opcode::Binary,
            Op::Un(_) => Opcode::Unary,
            Op::Icmp(_) => Opcode::Icmp,
            Op::Fcmp(_) => Opcode::Fcmp,
            Op::Select => Opcode::Select,
            Op::Conv(..) => Opcode::Conv,
            Op::Load(_) => Opcode::Load,
            Op::Store => Opcode::Store,
            Op::Call => Opcode::Call,
            Op::Jump => Opcode::Jump,
            Op::Brif => Opcode::Brif,
            Op::Return => Opcode::Return,
            Op::DictLoad => Opcode::DictSlotLoad,
            Op::DictStore => Opcode::DictSlotStore,
            Op::LoadAttr => Opcode::LoadAttr,
            Op::StoreAttr => Opcode::StoreAttr,
            Op::AdAlloc(_) => Opcode::AdAlloc,
            Op::AdPush => Opcode::AdPush,
            Op::AdPop => Opcode::AdPop,
            Op::AdTop => Opcode::AdTop,
            Op::AdTopAdj => Opcode::AdTopAdj,
            Op::AdAccAdj => Opcode::AdAccAdj,
            Op::AdLen => Opcode::AdLen,
            Op::Watch => Opcode::Watch,
        }
    }
}

/// `a, b and c`: the guardable opcodes of the table, for the error message.
fn guardable_list() -> String {
    let names: Vec<&str> = Opcode::ALL
        .iter()
        .filter(|o| o.guardable())
        .map(|o| o.name())
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

const SUFFIXED: [&str; 14] = [
    "iconst",
    "fconst",
    "icmp",
    "fcmp",
    "sext",
    "uext",
    "ireduce",
    "fcvt_from_sint",
    "fcvt_to_sint",
    "fpromote",
    "fdemote",
    "bitcast",
    "load",
    "adstack.alloc",
];

fn parse_opcode(w: &str, loc: SrcLoc) -> PResult<Op> {
    let exact = match w {
        "iadd" => Op::Bin(BinOp::Iadd),
        "isub" => Op::Bin(BinOp::Isub),
        "imul" => Op::Bin(BinOp::Imul),
        "band" => Op::Bin(BinOp::Band),
        "bor" => Op::Bin(BinOp::Bor),
        "bxor" => Op::Bin(BinOp::Bxor),
        "ishl" => Op::Bin(BinOp::Ishl),
        "ushr" => Op::Bin(BinOp::Ushr),
        "sshr" => Op::Bin(BinOp::Sshr),
        "fadd" => Op::Bin(BinOp::Fadd),
        "fsub" => Op::Bin(BinOp::Fsub),
        "fmul" => Op::Bin(BinOp::Fmul),
        "fdiv" => Op::Bin(BinOp::Fdiv),
        "fmin" => Op::Bin(BinOp::Fmin),
        "fmax" => Op::Bin(BinOp::Fmax),
        "fneg" => Op::Un(UnOp::Fneg),
        "fabs" => Op::Un(UnOp::Fabs),
        "fsqrt" => Op::Un(UnOp::Fsqrt),
        "select" => Op::Select,
        "store" => Op::Store,
        "call" => Op::Call,
        "jump" => Op::Jump,
        "brif" => Op::Brif,
        "return" => Op::Return,
        "dict_slot.load" => Op::DictLoad,
        "dict_slot.store" => Op::DictStore,
        "load_attr" => Op::LoadAttr,
        "store_attr" => Op::StoreAttr,
        "adstack.push" => Op::AdPush,
        "adstack.pop" => Op::AdPop,
        "adstack.top" => Op::AdTop,
        "adstack.top_adj" => Op::AdTopAdj,
        "adstack.acc_adj" => Op::AdAccAdj,
        "adstack.len" => Op::AdLen,
        "watch" => Op::Watch,
        _ => {
            for base in SUFFIXED {
                if w == base {
                    let hint = match base {
                        "icmp" => "a condition code (e.g. `icmp.slt`)",
                        "fcmp" => "a condition code (e.g. `fcmp.lt`)",
                        "adstack.alloc" => "an element type (e.g. `adstack.alloc.f64`)",
                        _ => "a type suffix (e.g. `.i64`)",
                    };
                    return err(loc, format!("`{w}` needs {hint}"));
                }
                if let Some(sfx) = w.strip_prefix(base).and_then(|r| r.strip_prefix('.')) {
                    return parse_suffixed(base, sfx, loc);
                }
            }
            return err(loc, format!("unknown instruction `{w}`"));
        }
    };
    Ok(exact)
}

fn parse_suffixed(base: &str, sfx: &str, loc: SrcLoc) -> PResult<Op> {
    let ty = || Type::from_name(sfx).map_or_else(|| err(loc, format!("unknown type `{sfx}`")), Ok);
    Ok(match base {
        "iconst" => {
            let t = ty()?;
            if !t.is_int() {
                return err(loc, format!("iconst needs an integer type, not {t}"));
            }
            Op::Iconst(t)
        }
        "fconst" => {
            let t = ty()?;
            if !t.is_float() {
                return err(loc, format!("fconst needs a float type, not {t}"));
            }
            Op::Fconst(t)
        }
        "icmp" => match IntCC::from_name(sfx) {
            Some(cc) => Op::Icmp(cc),
            None => return err(loc, format!("unknown icmp condition code `{sfx}`")),
        },
        "fcmp" => match FloatCC::from_name(sfx) {
            Some(cc) => Op::Fcmp(cc),
            None => return err(loc, format!("unknown fcmp condition code `{sfx}`")),
        },
        "sext" => Op::Conv(ConvOp::Sext, ty()?),
        "uext" => Op::Conv(ConvOp::Uext, ty()?),
        "ireduce" => Op::Conv(ConvOp::Ireduce, ty()?),
        "fcvt_from_sint" => Op::Conv(ConvOp::FcvtFromSint, ty()?),
        "fcvt_to_sint" => Op::Conv(ConvOp::FcvtToSint, ty()?),
        "fpromote" => Op::Conv(ConvOp::Fpromote, ty()?),
        "fdemote" => Op::Conv(ConvOp::Fdemote, ty()?),
        "bitcast" => Op::Conv(ConvOp::Bitcast, ty()?),
        "load" => Op::Load(ty()?),
        _ => match Type::elem_from_name(sfx) {
            Some(e) => Op::AdAlloc(e),
            None => {
                return err(
                    loc,
                    format!("unknown adstack element type `{sfx}` (expected f32, f64 or i64)"),
                )
            }
        },
    })
}

// ---------------------------------------------------------------------------
// Parser state.

#[derive(Copy, Clone)]
struct Global {
    callee: Callee,
    ret: Option<Type>,
    line: u32,
}

struct PendingCall<'a> {
    block: usize,
    inst: usize,
    name: &'a str,
    loc: SrcLoc,
}

/// A guard whose site is completed when the whole module has been read:
/// its id (when written without `!site`) and its checks (when written
/// without a list, every applicable check, which for a call depends on the callee).
struct PendingSite {
    func: usize,
    block: usize,
    inst: usize,
    loc: SrcLoc,
    op: &'static str,
    /// The explicit id, if written.
    id: Option<u32>,
    /// The explicit check list, if written.
    checks: Option<Checks>,
}

/// What the module-level pass still needs for a finished function.
struct FuncExtra<'a> {
    /// Known result types by value (None: inferred at the end).
    known: Vec<Option<Type>>,
    calls: Vec<PendingCall<'a>>,
}

struct NameEntry<'a> {
    name: &'a str,
    value: Option<Value>,
    def_line: u32,
    first_use: Option<SrcLoc>,
}

struct LabelEntry<'a> {
    name: &'a str,
    block: Option<u32>,
    def_line: u32,
    first_use: Option<SrcLoc>,
}

/// A function being read. Operands hold provisional values (indices into
/// `entries`) and branches provisional blocks (indices into `labels`) until `}`.
struct FnState<'a> {
    func: Function,
    known: Vec<Option<Type>>,
    names: HashMap<&'a str, u32>,
    entries: Vec<NameEntry<'a>>,
    label_ids: HashMap<&'a str, u32>,
    labels: Vec<LabelEntry<'a>>,
    calls: Vec<PendingCall<'a>>,
    cur_block: Option<usize>,
}

fn index_u32(len: usize, loc: SrcLoc, what: &str) -> PResult<u32> {
    match u32::try_from(len) {
        Ok(v) if v < u32::MAX => Ok(v),
        _ => err(loc, format!("too many {what}")),
    }
}

impl<'a> FnState<'a> {
    fn new(name: &str, loc: SrcLoc) -> Self {
        FnState {
            func: Function {
                name: name.to_string(),
                params: Vec::new(),
                ret: None,
                values: Vec::new(),
                blocks: Vec::new(),
                loc,
            },
            known: Vec::new(),
            names: HashMap::new(),
            entries: Vec::new(),
            label_ids: HashMap::new(),
            labels: Vec::new(),
            calls: Vec::new(),
            cur_block: None,
        }
    }

    fn name_entry(&mut self, name: &'a str, loc: SrcLoc) -> PResult<u32> {
        if let Some(&e) = self.names.get(name) {
            return Ok(e);
        }
        let e = index_u32(self.entries.len(), loc, "value names")?;
        self.entries.push(NameEntry {
            name,
            value: None,
            def_line: 0,
            first_use: None,
        });
        self.names.insert(name, e);
        Ok(e)
    }

    fn define(
        &mut self,
        name: &'a str,
        loc: SrcLoc,
        def: ValueDef,
        ty: Option<Type>,
    ) -> PResult<Value> {
        let e = self.name_entry(name, loc)?;
        let entry = &mut self.entries[e as usize];
        if entry.value.is_some() {
            return err(
                loc,
                format!(
                    "value %{name} is already defined (at line {})",
                    entry.def_line
                ),
            );
        }
        let v = Value(index_u32(self.func.values.len(), loc, "values")?);
        entry.value = Some(v);
        entry.def_line = loc.line;
        self.func.values.push(ValueData {
            name: name.to_string(),
            ty: ty.unwrap_or(Type::I64),
            def,
        });
        self.known.push(ty);
        Ok(v)
    }

    /// A use of `%name`: a provisional value, resolved at `}`.
    fn use_value(&mut self, name: &'a str, loc: SrcLoc) -> PResult<Value> {
        let e = self.name_entry(name, loc)?;
        let entry = &mut self.entries[e as usize];
        if entry.first_use.is_none() {
            entry.first_use = Some(loc);
        }
        Ok(Value(e))
    }

    fn label_entry(&mut self, name: &'a str, loc: SrcLoc) -> PResult<u32> {
        if !is_block_name(name) {
            return err(loc, format!("invalid block label `{name}`"));
        }
        if let Some(&e) = self.label_ids.get(name) {
            return Ok(e);
        }
        let e = index_u32(self.labels.len(), loc, "block labels")?;
        self.labels.push(LabelEntry {
            name,
            block: None,
            def_line: 0,
            first_use: None,
        });
        self.label_ids.insert(name, e);
        Ok(e)
    }

    fn use_label(&mut self, name: &'a str, loc: SrcLoc) -> PResult<Block> {
        let e = self.label_entry(name, loc)?;
        let entry = &mut self.labels[e as usize];
        if entry.first_use.is_none() {
            entry.first_use = Some(loc);
        }
        Ok(Block(e))
    }

    fn define_label(&mut self, name: &'a str, loc: SrcLoc) -> PResult<usize> {
        let e = self.label_entry(name, loc)?;
        let entry = &mut self.labels[e as usize];
        if entry.block.is_some() {
            return err(
                loc,
                format!(
                    "block `{name}` is already defined (at line {})",
                    entry.def_line
                ),
            );
        }
        let b = index_u32(self.func.blocks.len(), loc, "blocks")?;
        entry.block = Some(b);
        entry.def_line = loc.line;
        self.func.blocks.push(BlockData {
            name: name.to_string(),
            params: Vec::new(),
            insts: Vec::new(),
            loc,
        });
        Ok(b as usize)
    }

    fn block_call(&mut self, c: &mut Cur<'_, 'a>) -> PResult<BlockCall> {
        let (name, loc) = c.word("a block label")?;
        let block = self.use_label(name, loc)?;
        let args = if c.eat(Tok::LParen) {
            self.args(c)?
        } else {
            Vec::new()
        };
        Ok(BlockCall { block, args })
    }

    /// Values up to `)`, after a `(`.
    fn args(&mut self, c: &mut Cur<'_, 'a>) -> PResult<Vec<Value>> {
        let mut args = Vec::new();
        if c.eat(Tok::RParen) {
            return Ok(args);
        }
        loop {
            let (v, l) = c.value()?;
            args.push(self.use_value(v, l)?);
            if c.eat(Tok::Comma) {
                continue;
            }
            if c.eat(Tok::RParen) {
                return Ok(args);
            }
            return c.fail("`,` or `)`");
        }
    }

    fn operand(&mut self, c: &mut Cur<'_, 'a>) -> PResult<Value> {
        let (v, l) = c.value()?;
        self.use_value(v, l)
    }

    /// `, %v`
    fn next_operand(&mut self, c: &mut Cur<'_, 'a>) -> PResult<Value> {
        c.expect(Tok::Comma)?;
        self.operand(c)
    }

    /// Resolves names at `}`: every label and value must be defined.
    fn resolve(&mut self) -> PResult<()> {
        let fname = &self.func.name;
        if self.func.blocks.is_empty() {
            return err(self.func.loc, format!("function @{fname} has no blocks"));
        }
        let missing_label = self
            .labels
            .iter()
            .filter(|l| l.block.is_none())
            .filter_map(|l| l.first_use.map(|u| (u, l.name)))
            .min();
        if let Some((loc, name)) = missing_label {
            return err(loc, format!("unknown block `{name}` in function @{fname}"));
        }
        let missing_value = self
            .entries
            .iter()
            .filter(|e| e.value.is_none())
            .filter_map(|e| e.first_use.map(|u| (u, e.name)))
            .min();
        if let Some((loc, name)) = missing_value {
            return err(loc, format!("unknown value %{name} in function @{fname}"));
        }
        let vmap: Vec<Value> = self
            .entries
            .iter()
            .map(|e| e.value.unwrap_or(Value(0)))
            .collect();
        let bmap: Vec<Block> = self
            .labels
            .iter()
            .map(|l| Block(l.block.unwrap_or(0)))
            .collect();
        for block in &mut self.func.blocks {
            for inst in &mut block.insts {
                inst.kind.for_each_operand_mut(|v| {
                    *v = vmap.get(v.index()).copied().unwrap_or(Value(0))
                });
                inst.kind.for_each_dest_mut(|b| {
                    *b = bmap.get(b.index()).copied().unwrap_or(Block(0))
                });
            }
        }
        Ok(())
    }
}

#[derive(Default)]
struct Parser<'a> {
    module: Module,
    layout_line: Option<u32>,
    globals: HashMap<&'a str, Global>,
    extras: Vec<FuncExtra<'a>>,
    cur_fn: Option<FnState<'a>>,
    /// Explicit site id -> line it was written on.
    site_lines: HashMap<u32, u32>,
    max_site: Option<u32>,
    pending_sites: Vec<PendingSite>,
}

impl<'a> Parser<'a> {
    fn line(&mut self, mut c: Cur<'_, 'a>) -> PResult<()> {
        let Some(mut f) = self.cur_fn.take() else {
            return match c.peek() {
                Some(Tok::Word("layout")) => self.layout(c),
                Some(Tok::Word("extern")) => self.extern_decl(c),
                Some(Tok::Word("fn")) => self.fn_header(c),
                _ => c.fail("`fn`, `extern fn` or `layout`"),
            };
        };
        match (c.peek(), c.peek_at(1)) {
            (Some(Tok::RBrace), _) => {
                c.bump();
                c.end()?;
                return self.finish_fn(f);
            }
            (Some(Tok::Word(_)), Some(Tok::Colon | Tok::LParen)) => self.label(&mut f, c)?,
            (Some(Tok::Word(w @ ("fn" | "extern" | "layout"))), _) => {
                return err(
                    f.func.loc,
                    format!(
                        "unclosed function @{} (`{w}` at line {} comes before its closing `}}`)",
                        f.func.name, c.line
                    ),
                );
            }
            _ => self.inst(&mut f, c)?,
        }
        self.cur_fn = Some(f);
        Ok(())
    }

    fn layout(&mut self, mut c: Cur<'_, 'a>) -> PResult<()> {
        let loc = c.loc();
        c.bump();
        if let Some(first) = self.layout_line {
            return err(
                loc,
                format!("duplicate `layout` line (the first is at line {first})"),
            );
        }
        let (w, wloc) = c.word("a layout (`cpython312`, `phoenix` or `dict_slot_offset = N`)")?;
        let layout = if w == "dict_slot_offset" {
            c.expect(Tok::Eq)?;
            let (n, nloc) = c.word("an offset")?;
            let v = int_lit(n, nloc)?;
            let v = i64::try_from(v)
                .map_err(|_| ParseError::new(nloc, format!("integer literal out of range: {n}")))?;
            DictLayout::custom(v).map_err(|e| ParseError::new(nloc, e.to_string()))?
        } else {
            DictLayout::preset(w).map_err(|e| ParseError::new(wloc, e.to_string()))?
        };
        c.end()?;
        self.layout_line = Some(loc.line);
        self.module.layout = layout;
        Ok(())
    }

    fn check_global(&self, name: &str, loc: SrcLoc) -> PResult<()> {
        match self.globals.get(name) {
            Some(g) => err(
                loc,
                format!("@{name} is already defined (at line {})", g.line),
            ),
            None => Ok(()),
        }
    }

    fn extern_decl(&mut self, mut c: Cur<'_, 'a>) -> PResult<()> {
        let loc = c.loc();
        c.bump();
        c.expect(Tok::Word("fn"))?;
        let (name, nloc) = c.func()?;
        self.check_global(name, nloc)?;
        c.expect(Tok::LParen)?;
        let mut params = Vec::new();
        if !c.eat(Tok::RParen) {
            loop {
                params.push(c.ty()?);
                if c.eat(Tok::Comma) {
                    continue;
                }
                if c.eat(Tok::RParen) {
                    break;
                }
                return c.fail("`,` or `)`");
            }
        }
        let ret = if c.eat(Tok::Arrow) {
            Some(c.ty()?)
        } else {
            None
        };
        c.end()?;
        let id = ExternId(index_u32(self.module.externs.len(), loc, "externs")?);
        self.globals.insert(
            name,
            Global {
                callee: Callee::Extern(id),
                ret,
                line: loc.line,
            },
        );
        self.module.externs.push(ExternDecl {
            name: name.to_string(),
            params,
            ret,
            loc,
        });
        Ok(())
    }

    fn fn_header(&mut self, mut c: Cur<'_, 'a>) -> PResult<()> {
        let loc = c.loc();
        c.bump();
        let (name, nloc) = c.func()?;
        self.check_global(name, nloc)?;
        let mut st = FnState::new(name, loc);
        c.expect(Tok::LParen)?;
        if !c.eat(Tok::RParen) {
            loop {
                let (pn, pl) = c.value()?;
                c.expect(Tok::Colon)?;
                let ty = c.ty()?;
                let i = index_u32(st.func.params.len(), pl, "parameters")?;
                let v = st.define(pn, pl, ValueDef::Param(i), Some(ty))?;
                st.func.params.push(v);
                if c.eat(Tok::Comma) {
                    continue;
                }
                if c.eat(Tok::RParen) {
                    break;
                }
                return c.fail("`,` or `)`");
            }
        }
        st.func.ret = if c.eat(Tok::Arrow) {
            Some(c.ty()?)
        } else {
            None
        };
        c.expect(Tok::LBrace)?;
        c.end()?;
        let id = FuncId(index_u32(self.module.functions.len(), loc, "functions")?);
        self.globals.insert(
            name,
            Global {
                callee: Callee::Func(id),
                ret: st.func.ret,
                line: loc.line,
            },
        );
        self.cur_fn = Some(st);
        Ok(())
    }

    fn finish_fn(&mut self, mut f: FnState<'a>) -> PResult<()> {
        f.resolve()?;
        self.module.functions.push(f.func);
        self.extras.push(FuncExtra {
            known: f.known,
            calls: f.calls,
        });
        Ok(())
    }

    fn label(&mut self, f: &mut FnState<'a>, mut c: Cur<'_, 'a>) -> PResult<()> {
        let (name, loc) = c.word("a block label")?;
        let b = f.define_label(name, loc)?;
        if c.eat(Tok::LParen) && !c.eat(Tok::RParen) {
            loop {
                let (pn, pl) = c.value()?;
                c.expect(Tok::Colon)?;
                let ty = c.ty()?;
                let block = &f.func.blocks[b];
                let i = index_u32(block.params.len(), pl, "block parameters")?;
                let v = f.define(pn, pl, ValueDef::BlockParam(Block(b as u32), i), Some(ty))?;
                f.func.blocks[b].params.push(v);
                if c.eat(Tok::Comma) {
                    continue;
                }
                if c.eat(Tok::RParen) {
                    break;
                }
                return c.fail("`,` or `)`");
            }
        }
        c.expect(Tok::Colon)?;
        c.end()?;
        f.cur_block = Some(b);
        Ok(())
    }

    fn inst(&mut self, f: &mut FnState<'a>, mut c: Cur<'_, 'a>) -> PResult<()> {
        let first = c.loc();
        let Some(b) = f.cur_block else {
            return err(first, "expected a block label before the first instruction");
        };
        let mut result = None;
        if let Some(Tok::Val(name)) = c.peek() {
            c.bump();
            c.expect(Tok::Eq)?;
            result = Some((name, first));
        }
        let (word, oploc) = c.word("an instruction")?;
        let (guard, opname) = match word.strip_prefix("guard.") {
            Some(r) => (true, r),
            None => (false, word),
        };
        let op = parse_opcode(opname, oploc)?;
        if op == Op::Watch && !guard {
            return err(
                oploc,
                "unknown instruction `watch` (did you mean `guard.watch`?)",
            );
        }
        if guard && !op.opcode().guardable() {
            return err(
                oploc,
                format!(
                    "`{opname}` cannot be guarded (`guard.` applies to {})",
                    guardable_list()
                ),
            );
        }
        match (op.opcode().yields(), result) {
            (Yields::Always, None) => {
                return err(
                    oploc,
                    format!("`{word}` produces a value: write `%name = {word} ...`"),
                )
            }
            (Yields::Never, Some((_, rloc))) => {
                return err(rloc, format!("`{word}` does not produce a value"))
            }
            _ => {}
        }

        let mut ty: Option<Type> = None;
        let mut call = None;
        let kind = match op {
            Op::Iconst(t) => {
                let (w, l) = c.word("an integer")?;
                let v = int_lit(w, l)?;
                let bits = t.bits();
                let lo = -(1i128 << (bits - 1));
                let hi = (1i128 << bits) - 1;
                if v < lo || v > hi {
                    return err(l, format!("integer literal out of range for {t}: {w}"));
                }
                ty = Some(t);
                InstKind::Iconst {
                    ty: t,
                    imm: sext_imm(v as u64 as i64, bits),
                }
            }
            Op::Fconst(t) => {
                let (w, l) = c.word("a float")?;
                ty = Some(t);
                InstKind::Fconst {
                    ty: t,
                    value: float_lit(w, t, l)?,
                }
            }
            Op::Bin(op) => {
                let a = f.operand(&mut c)?;
                let b = f.next_operand(&mut c)?;
                InstKind::Binary { op, a, b }
            }
            Op::Un(op) => InstKind::Unary {
                op,
                a: f.operand(&mut c)?,
            },
            Op::Icmp(cc) => {
                let a = f.operand(&mut c)?;
                let b = f.next_operand(&mut c)?;
                ty = Some(Type::I8);
                InstKind::Icmp { cc, a, b }
            }
            Op::Fcmp(cc) => {
                let a = f.operand(&mut c)?;
                let b = f.next_operand(&mut c)?;
                ty = Some(Type::I8);
                InstKind::Fcmp { cc, a, b }
            }
            Op::Select => {
                let cond = f.operand(&mut c)?;
                let a = f.next_operand(&mut c)?;
                let b = f.next_operand(&mut c)?;
                InstKind::Select { cond, a, b }
            }
            Op::Conv(op, t) => {
                ty = Some(t);
                InstKind::Conv {
                    op,
                    ty: t,
                    a: f.operand(&mut c)?,
                }
            }
            Op::Load(t) => {
                let addr = f.operand(&mut c)?;
                let offset = offset(&mut c)?;
                ty = Some(t);
                InstKind::Load {
                    ty: t,
                    addr,
                    offset,
                }
            }
            Op::Store => {
                let value = f.operand(&mut c)?;
                let addr = f.next_operand(&mut c)?;
                let offset = offset(&mut c)?;
                InstKind::Store {
                    value,
                    addr,
                    offset,
                }
            }
            Op::Call => {
                let (name, nloc) = c.func()?;
                c.expect(Tok::LParen)?;
                let args = f.args(&mut c)?;
                call = Some((name, nloc));
                InstKind::Call {
                    callee: Callee::Extern(ExternId(u32::MAX)),
                    args,
                }
            }
            Op::Jump => InstKind::Jump {
                dest: f.block_call(&mut c)?,
            },
            Op::Brif => {
                let cond = f.operand(&mut c)?;
                c.expect(Tok::Comma)?;
                let then_dest = f.block_call(&mut c)?;
                c.expect(Tok::Comma)?;
                let else_dest = f.block_call(&mut c)?;
                InstKind::Brif {
                    cond,
                    then_dest,
                    else_dest,
                }
            }
            Op::Return => {
                let value = if c.peek().is_some() {
                    Some(f.operand(&mut c)?)
                } else {
                    None
                };
                InstKind::Return { value }
            }
            Op::DictLoad => {
                ty = Some(Type::I64);
                InstKind::DictSlotLoad {
                    obj: f.operand(&mut c)?,
                }
            }
            Op::DictStore => {
                let obj = f.operand(&mut c)?;
                let word = f.next_operand(&mut c)?;
                InstKind::DictSlotStore { obj, word }
            }
            Op::LoadAttr => {
                let obj = f.operand(&mut c)?;
                c.expect(Tok::Comma)?;
                let index = attr_index(&mut c)?;
                ty = Some(Type::I64);
                InstKind::LoadAttr { obj, index }
            }
            Op::StoreAttr => {
                let obj = f.operand(&mut c)?;
                c.expect(Tok::Comma)?;
                let index = attr_index(&mut c)?;
                let value = f.next_operand(&mut c)?;
                InstKind::StoreAttr { obj, index, value }
            }
            Op::AdAlloc(elem) => {
                let cap = c.int_in(
                    "a capacity",
                    1,
                    MAX_ADSTACK_CAPACITY as i128,
                    &format!("an adstack capacity (1 to {MAX_ADSTACK_CAPACITY})"),
                )?;
                ty = Some(Type::AdStack(elem));
                InstKind::AdAlloc {
                    elem,
                    capacity: u32::try_from(cap).unwrap_or(1),
                }
            }
            Op::AdPush => {
                let stack = f.operand(&mut c)?;
                let value = f.next_operand(&mut c)?;
                InstKind::AdPush { stack, value }
            }
            Op::AdPop => InstKind::AdPop {
                stack: f.operand(&mut c)?,
            },
            Op::AdTop => InstKind::AdTop {
                stack: f.operand(&mut c)?,
            },
            Op::AdTopAdj => InstKind::AdTopAdj {
                stack: f.operand(&mut c)?,
            },
            Op::AdAccAdj => {
                let stack = f.operand(&mut c)?;
                let delta = f.next_operand(&mut c)?;
                InstKind::AdAccAdj { stack, delta }
            }
            Op::AdLen => {
                ty = Some(Type::I64);
                InstKind::AdLen {
                    stack: f.operand(&mut c)?,
                }
            }
            Op::Watch => InstKind::Watch {
                obj: f.operand(&mut c)?,
            },
        };

        // Optional `!site(ID, LINE:COL[, CHECK...])`.
        let mut explicit_site = None;
        if let Some(Tok::Bang(name)) = c.peek() {
            let bloc = c.loc();
            if name != "site" {
                return err(
                    bloc,
                    format!("unknown annotation `!{name}` (expected `!site`)"),
                );
            }
            if !guard || op == Op::Watch {
                return err(bloc, "`!site(...)` is only allowed on guarded instructions");
            }
            c.bump();
            c.expect(Tok::LParen)?;
            let idloc = c.loc();
            let id = c.u32_lit("a site id", "a site id")?;
            c.expect(Tok::Comma)?;
            let line = c.u32_lit("a line number", "a line number")?;
            c.expect(Tok::Colon)?;
            let col = c.u32_lit("a column number", "a column number")?;
            let checks = site_checks(&mut c)?;
            c.expect(Tok::RParen)?;
            explicit_site = Some((id, idloc, SrcLoc::new(line, col), checks));
        }
        c.end()?;

        let inst_idx = f.func.blocks[b].insts.len();
        index_u32(inst_idx, first, "instructions in a block")?;
        let result = match result {
            Some((name, rloc)) => {
                Some(f.define(name, rloc, ValueDef::Inst(Block(b as u32)), ty)?)
            }
            None => None,
        };
        let func_idx = self.module.functions.len();
        let mut site = None;
        if guard && op != Op::Watch {
            let mut pending = PendingSite {
                func: func_idx,
                block: b,
                inst: inst_idx,
                loc: first,
                op: kind.opcode(),
                id: None,
                checks: None,
            };
            if let Some((id, idloc, sloc, checks)) = explicit_site {
                if let Some(prev) = self.site_lines.get(&id) {
                    return err(
                        idloc,
                        format!("duplicate site id {id} (already used at line {prev})"),
                    );
                }
                self.site_lines.insert(id, first.line);
                self.max_site = Some(self.max_site.map_or(id, |m| m.max(id)));
                pending.loc = sloc;
                pending.id = Some(id);
                pending.checks = checks;
                site = Some(SiteId(id));
            }
            self.pending_sites.push(pending);
        }
        if let Some((name, loc)) = call {
            f.calls.push(PendingCall {
                block: b,
                inst: inst_idx,
                name,
                loc,
            });
        }
        f.func.blocks[b].insts.push(Inst {
            kind,
            result,
            loc: first,
            site,
        });
        Ok(())
    }

    fn finish(mut self) -> PResult<Module> {
        if let Some(f) = &self.cur_fn {
            return err(f.func.loc, format!("unclosed function @{}", f.func.name));
        }
        let globals = &self.globals;
        for (func, extra) in self.module.functions.iter_mut().zip(self.extras.iter_mut()) {
            for call in &extra.calls {
                let Some(g) = globals.get(call.name) else {
                    return err(call.loc, format!("unknown function @{}", call.name));
                };
                let Some(inst) = func
                    .blocks
                    .get_mut(call.block)
                    .and_then(|b| b.insts.get_mut(call.inst))
                else {
                    continue;
                };
                if let InstKind::Call { callee, .. } = &mut inst.kind {
                    *callee = g.callee;
                }
                if let Some(r) = inst.result {
                    let Some(ret) = g.ret else {
                        let rname = func
                            .values
                            .get(r.index())
                            .map_or("", |d| d.name.as_str());
                        return err(
                            inst.loc,
                            format!(
                                "@{} returns no value, so `%{rname} =` cannot take its result",
                                call.name
                            ),
                        );
                    };
                    if let Some(k) = extra.known.get_mut(r.index()) {
                        *k = Some(ret);
                    }
                }
            }
            infer_types(func, &mut extra.known)?;
            for (vd, k) in func.values.iter_mut().zip(&extra.known) {
                if let Some(t) = k {
                    vd.ty = *t;
                }
            }
        }
        // Guards written without `!site(...)` get fresh ids after the largest
        // explicit one; guards written without a check list get every check
        // applicable to their instruction (callees are resolved by now).
        let mut next = match self.max_site {
            None => Some(0u32),
            Some(m) => m.checked_add(1),
        };
        for p in &self.pending_sites {
            let id = match p.id {
                Some(id) => id,
                None => {
                    let Some(id) = next else {
                        return err(
                            p.loc,
                            "no site id left for this guard (ids go up to 4294967295)",
                        );
                    };
                    next = id.checked_add(1);
                    id
                }
            };
            let Some(inst) = self
                .module
                .functions
                .get_mut(p.func)
                .and_then(|f| f.blocks.get_mut(p.block))
                .and_then(|b| b.insts.get_mut(p.inst))
            else {
                continue;
            };
            inst.site = Some(SiteId(id));
            let checks = match p.checks {
                Some(c) => c,
                None => {
                    let kind = inst.kind.clone();
                    self.module.applicable_checks(&kind)
                }
            };
            self.module.sites.insert(
                SiteId(id),
                Site {
                    func: FuncId(p.func as u32),
                    loc: p.loc,
                    op: p.op,
                    checks,
                },
            );
        }
        Ok(self.module)
    }
}

/// The optional check list of a `!site(...)`: `, NAME NAME ...` (spec
/// order or any order; no repeats).
fn site_checks(c: &mut Cur<'_, '_>) -> PResult<Option<Checks>> {
    if !c.eat(Tok::Comma) {
        return Ok(None);
    }
    let mut set = Checks::EMPTY;
    loop {
        let (w, loc) = c.word("a check name (lifetime, dict, bounds, adstack, clobber)")?;
        let Some(k) = CheckKind::from_name(w) else {
            return err(
                loc,
                format!("unknown check `{w}` (expected lifetime, dict, bounds, adstack, clobber)"),
            );
        };
        if set.contains(k) {
            return err(loc, format!("check `{w}` is listed twice"));
        }
        set.insert(k);
        if !matches!(c.peek(), Some(Tok::Word(_))) {
            return Ok(Some(set));
        }
    }
}

/// `, OFFSET` (optional; must fit in i32).
fn offset(c: &mut Cur<'_, '_>) -> PResult<i32> {
    if !c.eat(Tok::Comma) {
        return Ok(0);
    }
    let v = c.int_in(
        "an offset",
        i32::MIN as i128,
        i32::MAX as i128,
        "an offset (i32)",
    )?;
    Ok(i32::try_from(v).unwrap_or(0))
}

fn attr_index(c: &mut Cur<'_, '_>) -> PResult<u32> {
    let v = c.int_in(
        "an attribute index",
        0,
        MAX_ATTR_INDEX as i128,
        &format!("an attribute index (0 to {MAX_ATTR_INDEX})"),
    )?;
    Ok(u32::try_from(v).unwrap_or(0))
}

/// Block order for type inference: reverse postorder of the CFG from the
/// entry, then unreachable blocks in layout order.
pub(crate) fn inference_order(func: &Function) -> Vec<usize> {
    let cfg = ControlFlowGraph::with_function(func);
    let rpo = reverse_postorder(&cfg);
    let mut seen = vec![false; func.blocks.len()];
    for b in &rpo {
        seen[b.index()] = true;
    }
    let unreachable = (0..func.blocks.len()).filter(|&b| !seen[b]);
    rpo.iter().map(|b| b.index()).chain(unreachable).collect()
}

/// Fills in the result types that depend on an operand, in reverse postorder.
fn infer_types(func: &Function, known: &mut [Option<Type>]) -> PResult<()> {
    let name = |v: Value| {
        func.values
            .get(v.index())
            .map_or("?", |d| d.name.as_str())
    };
    for b in inference_order(func) {
        let Some(block) = func.blocks.get(b) else {
            continue;
        };
        for inst in &block.insts {
            let Some(r) = inst.result else { continue };
            if known.get(r.index()).copied().flatten().is_some() {
                continue;
            }
            let src = match &inst.kind {
                InstKind::Binary { a, .. }
                | InstKind::Unary { a, .. }
                | InstKind::Select { a, .. } => *a,
                InstKind::AdTop { stack } | InstKind::AdTopAdj { stack } => *stack,
                _ => {
                    return err(
                        inst.loc,
                        format!("cannot determine the type of %{}", name(r)),
                    )
                }
            };
            let Some(st) = known.get(src.index()).copied().flatten() else {
                return err(
                    inst.loc,
                    format!(
                        "cannot determine the type of %{}: operand %{} is not defined before use",
                        name(r),
                        name(src)
                    ),
                );
            };
            let t = match &inst.kind {
                InstKind::AdTop { .. } | InstKind::AdTopAdj { .. } => match st.adstack_elem() {
                    Some(e) => Type::of_elem(e),
                    None => {
                        return err(
                            inst.loc,
                            format!(
                                "cannot determine the type of %{}: operand %{} is {st}, not an adstack handle",
                                name(r),
                                name(src)
                            ),
                        )
                    }
                },
                _ => st,
            };
            if let Some(k) = known.get_mut(r.index()) {
                *k = Some(t);
            }
        }
    }
    Ok(())
}
