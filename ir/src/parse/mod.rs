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
use crate::inst::{
    BinOp, Block, BlockCall, Callee, CheckKind, Checks, ConvOp, ExternId, FloatCC, FuncId,
    IndirectSig, Inst, InstKind, IntCC, SiteId, SrcLoc, ThinVec, UnOp, Value, MAX_BR_TABLE,
    MAX_STACK_ALLOC,
};
use crate::module::{BlockData, ExternDecl, Function, Module, Site, ValueData, ValueDef};
use crate::opcode::{Opcode, Yields};
use crate::types::Type;
use cranelift_entity::EntityRef;
use foldhash::HashMap;
use guardlift_abi::adstack::{AdElem, MAX_ADSTACK_CAPACITY};
use guardlift_abi::layout::{DictLayout, MAX_ATTR_INDEX};

mod infer;
mod inst;
mod lex;
mod names;
mod ops;

use infer::infer_types;
use lex::{float_lit, int_lit, is_word_char, lex, Cur, Tok};
use names::{index_u32, FnState};
use ops::{guardable_list, parse_opcode, Op};

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
        // `raw` is a subslice of `text`: what follows it starts at its end.
        let next = raw.as_ptr() as usize - text.as_ptr() as usize + raw.len();
        p.rest = text.get(next..).unwrap_or("");
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
    /// The text after the line being read (a function header sizes its
    /// name tables from it).
    rest: &'a str,
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
        let (params, ret) = sig_types(&mut c)?;
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
        let mut st = FnState::new(name, loc, names::lines_before_brace(self.rest));
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
        f.end_block();
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
        f.end_block();
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
                if let InstKind::FuncAddr { callee } = &mut inst.kind {
                    // The address of the function, whatever it returns.
                    *callee = g.callee;
                    continue;
                }
                if let InstKind::Call { callee, .. } = &mut inst.kind {
                    *callee = g.callee;
                }
                if let Some(r) = inst.result {
                    let Some(ret) = g.ret else {
                        let rname = func.values.get(r.index()).map_or("", |d| d.name.as_str());
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
            if extra.known.iter().any(Option::is_none) {
                infer_types(func, &mut extra.known)?;
            }
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

/// `(T, ...) [-> R]`: the parameter and result types of an extern
/// declaration or a `call_indirect`.
fn sig_types(c: &mut Cur<'_, '_>) -> PResult<(Vec<Type>, Option<Type>)> {
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
    Ok((params, ret))
}
