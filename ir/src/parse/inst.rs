//! One instruction line: `[%r =] [guard.]OPCODE OPERANDS [!site(...)]`.
//! [`Parser::inst`] reads the head (result, guard, opcode), the operands
//! of its form ([`Parser::operands`]), the optional site annotation, then
//! records the instruction with what the module-level pass still needs
//! (pending callee, pending site).

use super::*;

/// What the head of an instruction line says: `[%r =] [guard.]OPCODE`.
struct Head<'a> {
    /// The result's name and position, if written.
    result: Option<(&'a str, SrcLoc)>,
    guard: bool,
    op: Op,
}

/// The operands read: the instruction, its result type when the opcode
/// fixes it, and a call's callee name (resolved when the module is read).
struct Body<'a> {
    kind: InstKind,
    ty: Option<Type>,
    call: Option<(&'a str, SrcLoc)>,
}

/// An explicit `!site(ID, LINE:COL[, CHECK...])`: the id and where it is
/// written, the site's position and its check list.
struct SiteAnnotation {
    id: u32,
    idloc: SrcLoc,
    loc: SrcLoc,
    checks: Option<Checks>,
}

impl<'a> Parser<'a> {
    pub(super) fn inst(&mut self, f: &mut FnState<'a>, mut c: Cur<'_, 'a>) -> PResult<()> {
        let first = c.loc();
        let Some(b) = f.cur_block else {
            return err(first, "expected a block label before the first instruction");
        };
        let head = Self::head(&mut c, first)?;
        let body = Self::operands(f, &mut c, head.op)?;
        let site = Self::site_annotation(&mut c, &head)?;
        c.end()?;
        self.record(f, b, first, head, body, site)
    }

    /// `[%r =] [guard.]OPCODE`, checked against the opcode table: `guard.`
    /// only where it applies, a result exactly where the opcode yields one.
    fn head(c: &mut Cur<'_, 'a>, first: SrcLoc) -> PResult<Head<'a>> {
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
        Ok(Head { result, guard, op })
    }

    /// The operands of `op`'s form: the first operand-group reader that
    /// knows `op` reads them. Every opcode has one; an opcode none knows is
    /// a parser bug ([`ParseError::Internal`]), not an error in the text.
    fn operands(f: &mut FnState<'a>, c: &mut Cur<'_, 'a>, op: Op) -> PResult<Body<'a>> {
        let mut r = Operands {
            f,
            c,
            ty: None,
            call: None,
        };
        let kind = if let Some(k) = r.arith(op)? {
            k
        } else if let Some(k) = r.memory_control(op)? {
            k
        } else if let Some(k) = r.object_adstack(op)? {
            k
        } else {
            return Err(ParseError::Internal {
                loc: r.c.loc(),
                what: format!("no operand reader for {op:?}"),
            });
        };
        let (mut ty, call) = (r.ty, r.call);
        // A result of its first operand's type (the rule `infer` applies)
        // whose operand is defined above: known now, so that a function
        // written in order needs no inference pass (nor its CFG).
        if ty.is_none() {
            let src = super::infer::type_source(&kind).and_then(|v| f.operand_type(v));
            ty = src.and_then(|st| super::infer::derived_type(&kind, st));
        }
        Ok(Body { kind, ty, call })
    }
}

/// What the operand readers work with: the function's names, the cursor
/// after the opcode, and what they find besides the instruction (the
/// result type when the opcode fixes it, a call's callee name).
struct Operands<'s, 'c, 'a> {
    f: &'s mut FnState<'a>,
    c: &'s mut Cur<'c, 'a>,
    ty: Option<Type>,
    call: Option<(&'a str, SrcLoc)>,
}

impl<'a> Operands<'_, '_, 'a> {
    /// The first operand.
    fn first(&mut self) -> PResult<Value> {
        self.f.operand(self.c)
    }

    /// `, OPERAND`.
    fn next(&mut self) -> PResult<Value> {
        self.f.next_operand(self.c)
    }

    /// Constants, arithmetic, comparisons, `select`, conversions.
    fn arith(&mut self, op: Op) -> PResult<Option<InstKind>> {
        Ok(Some(match op {
            Op::Iconst(t) => {
                let (w, l) = self.c.word("an integer")?;
                let v = int_lit(w, l)?;
                let bits = t.bits();
                let lo = -(1i128 << (bits - 1));
                let hi = (1i128 << bits) - 1;
                if v < lo || v > hi {
                    return err(l, format!("integer literal out of range for {t}: {w}"));
                }
                self.ty = Some(t);
                InstKind::Iconst {
                    ty: t,
                    imm: sext_imm(v as u64 as i64, bits),
                }
            }
            Op::Fconst(t) => {
                let (w, l) = self.c.word("a float")?;
                self.ty = Some(t);
                InstKind::Fconst {
                    ty: t,
                    value: float_lit(w, t, l)?,
                }
            }
            Op::Bin(op) => {
                let a = self.first()?;
                let b = self.next()?;
                InstKind::Binary { op, a, b }
            }
            Op::Un(op) => InstKind::Unary {
                op,
                a: self.first()?,
            },
            Op::Icmp(cc) => {
                let (a, b) = (self.first()?, self.next()?);
                self.ty = Some(Type::I8);
                InstKind::Icmp { cc, a, b }
            }
            Op::Fcmp(cc) => {
                let (a, b) = (self.first()?, self.next()?);
                self.ty = Some(Type::I8);
                InstKind::Fcmp { cc, a, b }
            }
            Op::Select => {
                let cond = self.first()?;
                let a = self.next()?;
                let b = self.next()?;
                InstKind::Select { cond, a, b }
            }
            Op::Conv(op, t) => {
                self.ty = Some(t);
                InstKind::Conv {
                    op,
                    ty: t,
                    a: self.first()?,
                }
            }
            _ => return Ok(None),
        }))
    }

    /// Raw memory, calls and branches.
    fn memory_control(&mut self, op: Op) -> PResult<Option<InstKind>> {
        Ok(Some(match op {
            Op::Load(t) => {
                let addr = self.first()?;
                let offset = offset(self.c)?;
                self.ty = Some(t);
                InstKind::Load {
                    ty: t,
                    addr,
                    offset,
                }
            }
            Op::Store => {
                let value = self.first()?;
                let addr = self.next()?;
                let offset = offset(self.c)?;
                InstKind::Store {
                    value,
                    addr,
                    offset,
                }
            }
            Op::Call => {
                let (name, nloc) = self.c.func()?;
                self.c.expect(Tok::LParen)?;
                let args = self.f.args(self.c)?;
                self.call = Some((name, nloc));
                InstKind::Call {
                    callee: Callee::Extern(ExternId(u32::MAX)),
                    args,
                }
            }
            Op::CallIndirect => {
                let target = self.first()?;
                self.c.expect(Tok::LParen)?;
                let args = self.f.args(self.c)?;
                self.c.expect(Tok::Colon)?;
                let sig = indirect_sig(self.c)?;
                self.ty = sig.ret;
                InstKind::CallIndirect {
                    target,
                    args,
                    sig: Box::new(sig),
                }
            }
            Op::FuncAddr => {
                let (name, nloc) = self.c.func()?;
                self.call = Some((name, nloc));
                self.ty = Some(Type::Ptr);
                InstKind::FuncAddr {
                    callee: Callee::Extern(ExternId(u32::MAX)),
                }
            }
            Op::StackAlloc => {
                let size = self.c.int_in(
                    "a size",
                    1,
                    MAX_STACK_ALLOC as i128,
                    &format!("a stack_alloc size (1 to {MAX_STACK_ALLOC} bytes)"),
                )?;
                self.ty = Some(Type::Ptr);
                InstKind::StackAlloc {
                    size: u32::try_from(size).unwrap_or(1),
                }
            }
            Op::Jump => InstKind::Jump {
                dest: self.f.block_call(self.c)?,
            },
            Op::Brif => {
                let cond = self.first()?;
                self.c.expect(Tok::Comma)?;
                let then_dest = self.f.block_call(self.c)?;
                self.c.expect(Tok::Comma)?;
                let else_dest = self.f.block_call(self.c)?;
                InstKind::Brif {
                    cond,
                    then_dest,
                    else_dest,
                }
            }
            Op::BrTable => {
                let index = self.first()?;
                self.c.expect(Tok::Comma)?;
                let default = self.f.block_call(self.c)?;
                self.c.expect(Tok::Comma)?;
                let table = self.br_table_list()?;
                InstKind::BrTable {
                    index,
                    default,
                    table,
                }
            }
            Op::Return => {
                let value = match self.c.peek() {
                    Some(_) => Some(self.first()?),
                    None => None,
                };
                InstKind::Return { value }
            }
            _ => return Ok(None),
        }))
    }

    /// `[b0(ARGS), b1, ...]`: a `br_table`'s destinations (`[]`: none),
    /// at most [`MAX_BR_TABLE`].
    fn br_table_list(&mut self) -> PResult<ThinVec<BlockCall>> {
        self.c.expect(Tok::LBracket)?;
        let mut table = ThinVec::new();
        if self.c.eat(Tok::RBracket) {
            return Ok(table);
        }
        loop {
            if table.len() == MAX_BR_TABLE {
                return err(
                    self.c.loc(),
                    format!("a br_table has at most {MAX_BR_TABLE} destinations"),
                );
            }
            table.push(self.f.block_call(self.c)?);
            if self.c.eat(Tok::Comma) {
                continue;
            }
            if self.c.eat(Tok::RBracket) {
                return Ok(table);
            }
            return self.c.fail("`,` or `]`");
        }
    }

    /// Object-model and adstack instructions, `guard.watch`.
    fn object_adstack(&mut self, op: Op) -> PResult<Option<InstKind>> {
        Ok(Some(match op {
            Op::DictLoad => {
                self.ty = Some(Type::I64);
                InstKind::DictSlotLoad { obj: self.first()? }
            }
            Op::DictStore => {
                let obj = self.first()?;
                let word = self.next()?;
                InstKind::DictSlotStore { obj, word }
            }
            Op::LoadAttr => {
                let obj = self.first()?;
                self.c.expect(Tok::Comma)?;
                let index = attr_index(self.c)?;
                self.ty = Some(Type::I64);
                InstKind::LoadAttr { obj, index }
            }
            Op::StoreAttr => {
                let obj = self.first()?;
                self.c.expect(Tok::Comma)?;
                let index = attr_index(self.c)?;
                let value = self.next()?;
                InstKind::StoreAttr { obj, index, value }
            }
            Op::AdAlloc(elem) => {
                let cap = self.c.int_in(
                    "a capacity",
                    1,
                    MAX_ADSTACK_CAPACITY as i128,
                    &format!("an adstack capacity (1 to {MAX_ADSTACK_CAPACITY})"),
                )?;
                self.ty = Some(Type::AdStack(elem));
                InstKind::AdAlloc {
                    elem,
                    capacity: u32::try_from(cap).unwrap_or(1),
                }
            }
            Op::AdPush => {
                let stack = self.first()?;
                let value = self.next()?;
                InstKind::AdPush { stack, value }
            }
            Op::AdPop => InstKind::AdPop {
                stack: self.first()?,
            },
            Op::AdTop => InstKind::AdTop {
                stack: self.first()?,
            },
            Op::AdTopAdj => InstKind::AdTopAdj {
                stack: self.first()?,
            },
            Op::AdAccAdj => {
                let stack = self.first()?;
                let delta = self.next()?;
                InstKind::AdAccAdj { stack, delta }
            }
            Op::AdLen => {
                self.ty = Some(Type::I64);
                InstKind::AdLen {
                    stack: self.first()?,
                }
            }
            Op::Watch => InstKind::Watch { obj: self.first()? },
            _ => return Ok(None),
        }))
    }
}

impl<'a> Parser<'a> {
    /// The optional `!site(ID, LINE:COL[, CHECK...])`.
    fn site_annotation(c: &mut Cur<'_, 'a>, head: &Head<'a>) -> PResult<Option<SiteAnnotation>> {
        let Some(Tok::Bang(name)) = c.peek() else {
            return Ok(None);
        };
        {
            let bloc = c.loc();
            if name != "site" {
                return err(
                    bloc,
                    format!("unknown annotation `!{name}` (expected `!site`)"),
                );
            }
            if !head.guard || head.op == Op::Watch {
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
            let checks = site_checks(c)?;
            c.expect(Tok::RParen)?;
            Ok(Some(SiteAnnotation {
                id,
                idloc,
                loc: SrcLoc::new(line, col),
                checks,
            }))
        }
    }

    /// Defines the result, queues the pending site and callee, appends the
    /// instruction to block `b`.
    fn record(
        &mut self,
        f: &mut FnState<'a>,
        b: usize,
        first: SrcLoc,
        head: Head<'a>,
        body: Body<'a>,
        explicit_site: Option<SiteAnnotation>,
    ) -> PResult<()> {
        let Body { kind, ty, call } = body;
        let (guard, op, result) = (head.guard, head.op, head.result);
        let inst_idx = f.insts.len();
        index_u32(inst_idx, first, "instructions in a block")?;
        if let (Some((name, rloc)), InstKind::CallIndirect { sig, .. }) = (result, &kind) {
            if sig.ret.is_none() {
                return err(
                    rloc,
                    format!("the call_indirect signature returns no value, so `%{name} =` cannot take its result"),
                );
            }
        }
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
            if let Some(SiteAnnotation {
                id,
                idloc,
                loc: sloc,
                checks,
            }) = explicit_site
            {
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
        f.insts.push(Inst {
            kind,
            result,
            loc: first,
            site,
        });
        Ok(())
    }
}

/// The optional check list of a `!site(...)`: `, NAME NAME ...` (spec
/// order or any order; no repeats).
pub(super) fn site_checks(c: &mut Cur<'_, '_>) -> PResult<Option<Checks>> {
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
pub(super) fn offset(c: &mut Cur<'_, '_>) -> PResult<i32> {
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

pub(super) fn attr_index(c: &mut Cur<'_, '_>) -> PResult<u32> {
    let v = c.int_in(
        "an attribute index",
        0,
        MAX_ATTR_INDEX as i128,
        &format!("an attribute index (0 to {MAX_ATTR_INDEX})"),
    )?;
    Ok(u32::try_from(v).unwrap_or(0))
}

/// `(T, ...) [-> R]`: a `call_indirect`'s signature (read as an extern's).
fn indirect_sig(c: &mut Cur<'_, '_>) -> PResult<IndirectSig> {
    let (params, ret) = super::sig_types(c)?;
    Ok(IndirectSig { params, ret })
}
