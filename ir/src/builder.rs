//! Building IR without text.
//!
//! ```
//! use guardlift_ir::builder::ModuleBuilder;
//! use guardlift_ir::{BinOp, Type};
//! use guardlift_abi::layout::DictLayout;
//!
//! let mut mb = ModuleBuilder::new(DictLayout::Cpython312);
//! let add = mb.declare_function("add", &[Type::I64, Type::I64], Some(Type::I64));
//! let mut f = mb.function(add);
//! let entry = f.create_block("entry");
//! f.switch_to_block(entry);
//! let (a, b) = (f.param(0), f.param(1));
//! let s = f.binary(BinOp::Iadd, a, b);
//! f.ret(Some(s));
//! f.finish();
//! let m = mb.build().unwrap();
//! assert!(guardlift_ir::print_module(&m).contains("%v2 = iadd %v0, %v1"));
//! ```
//!
//! Result types are inferred the way the parser infers them. Misuse that
//! would give a structurally broken module (a value or block of another
//! function, an instruction after a terminator, a constant of the wrong kind
//! of type, duplicate function names) panics; everything else (operand
//! types, dominance, ...) is left to the verifier, which
//! [`ModuleBuilder::build`] runs.

use crate::error::{Diagnostic, VerifyErrors};
use crate::inst::{
    BinOp, Block, BlockCall, Callee, CheckKind, Checks, ConvOp, ExternId, FloatCC, FuncId,
    IndirectSig, Inst, InstKind, IntCC, SiteId, SrcLoc, UnOp, Value,
};
use crate::module::{BlockData, ExternDecl, Function, Module, Site, ValueData, ValueDef};
use crate::parse::{canon_float, is_block_name, is_func_name, sext_imm};
use crate::types::Type;
use cranelift_entity::EntityRef;
use guardlift_abi::adstack::AdElem;
use guardlift_abi::layout::DictLayout;
use std::collections::HashSet;

impl From<FuncId> for Callee {
    fn from(f: FuncId) -> Self {
        Callee::Func(f)
    }
}

impl From<ExternId> for Callee {
    fn from(e: ExternId) -> Self {
        Callee::Extern(e)
    }
}

/// Builds a [`Module`]: declare externs and functions, then fill in bodies.
#[derive(Debug)]
pub struct ModuleBuilder {
    module: Module,
}

impl ModuleBuilder {
    /// A builder of an empty module with dict layout `layout`.
    pub fn new(layout: DictLayout) -> Self {
        ModuleBuilder {
            module: Module {
                layout,
                ..Module::default()
            },
        }
    }

    /// The module as built so far.
    pub fn module(&self) -> &Module {
        &self.module
    }

    fn check_new_name(&self, name: &str) {
        assert!(is_func_name(name), "invalid function name `{name}`");
        assert!(
            self.module.func_by_name(name).is_none() && self.module.extern_by_name(name).is_none(),
            "@{name} is already declared"
        );
    }

    /// Declares a host function.
    ///
    /// # Panics
    /// If the name is invalid or already taken by a function or extern.
    pub fn declare_extern(&mut self, name: &str, params: &[Type], ret: Option<Type>) -> ExternId {
        self.check_new_name(name);
        let id = ExternId(self.module.externs.len() as u32);
        self.module.externs.push(ExternDecl {
            name: name.to_string(),
            params: params.to_vec(),
            ret,
            loc: SrcLoc::default(),
        });
        id
    }

    /// Declares a function (its body is built later through [`Self::function`]),
    /// so calls can refer to it before it is built.
    ///
    /// # Panics
    /// If the name is invalid or already taken by a function or extern.
    pub fn declare_function(&mut self, name: &str, params: &[Type], ret: Option<Type>) -> FuncId {
        self.check_new_name(name);
        let id = FuncId(self.module.functions.len() as u32);
        let values: Vec<ValueData> = params
            .iter()
            .enumerate()
            .map(|(i, &ty)| ValueData {
                name: compact_str::format_compact!("v{i}"),
                ty,
                def: ValueDef::Param(i as u32),
            })
            .collect();
        self.module.functions.push(Function {
            name: name.to_string(),
            params: (0..params.len() as u32).map(Value).collect(),
            ret,
            values,
            blocks: Vec::new(),
            loc: SrcLoc::default(),
        });
        id
    }

    /// A builder for the body of a declared function.
    ///
    /// # Panics
    /// If `id` was not declared by this builder.
    pub fn function(&mut self, id: FuncId) -> FunctionBuilder<'_> {
        let f = self
            .module
            .functions
            .get(id.index())
            .expect("unknown FuncId");
        let labels = f.blocks.iter().map(|b| b.name.to_string()).collect();
        FunctionBuilder {
            module: &mut self.module,
            func: id.index(),
            current: None,
            labels,
            loc: SrcLoc::default(),
        }
    }

    /// Finishes the module without verifying it.
    pub fn into_module(self) -> Module {
        self.module
    }

    /// Finishes the module and verifies it.
    pub fn build(self) -> Result<Module, VerifyErrors> {
        let missing: Vec<Diagnostic> = self
            .module
            .functions
            .iter()
            .filter(|f| f.blocks.is_empty())
            .map(|f| Diagnostic::new(f.loc, format!("function @{} has no body", f.name)))
            .collect();
        if !missing.is_empty() {
            return Err(VerifyErrors(missing));
        }
        crate::verify::verify_module(&self.module)?;
        Ok(self.module)
    }
}

/// Builds the body of one function; instructions go to the current block.
#[derive(Debug)]
pub struct FunctionBuilder<'m> {
    module: &'m mut Module,
    func: usize,
    current: Option<Block>,
    labels: HashSet<String>,
    /// The source position given to the instructions and blocks appended
    /// from now on ([`Self::set_srcloc`]).
    loc: SrcLoc,
}

impl FunctionBuilder<'_> {
    fn f(&self) -> &Function {
        &self.module.functions[self.func]
    }

    fn fm(&mut self) -> &mut Function {
        &mut self.module.functions[self.func]
    }

    /// The id of the function being built.
    pub fn func_id(&self) -> FuncId {
        FuncId(self.func as u32)
    }

    /// The type of a value of this function.
    ///
    /// # Panics
    /// If `v` is not a value of this function.
    pub fn ty(&self, v: Value) -> Type {
        match self.f().values.get(v.index()) {
            Some(d) => d.ty,
            None => panic!("value {v:?} does not belong to function @{}", self.f().name),
        }
    }

    fn check_block(&self, b: Block) {
        assert!(
            (b.index()) < self.f().blocks.len(),
            "block {b:?} does not belong to function @{}",
            self.f().name
        );
    }

    /// The `i`-th function parameter.
    pub fn param(&self, i: usize) -> Value {
        match self.f().params.get(i) {
            Some(&v) => v,
            None => panic!("function @{} has no parameter {i}", self.f().name),
        }
    }

    /// Appends a new block. The first block created is the entry. The name is
    /// made a valid, unique label (`loop`, `loop_1`, ...).
    pub fn create_block(&mut self, name: &str) -> Block {
        let mut base: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if !is_block_name(&base) {
            base.insert(0, 'b');
        }
        let mut label = base.clone();
        let mut k = 0u64;
        while self.labels.contains(&label) {
            k += 1;
            label = format!("{base}_{k}");
        }
        self.labels.insert(label.clone());
        let b = Block(self.f().blocks.len() as u32);
        let loc = self.loc;
        self.fm().blocks.push(BlockData {
            name: label.into(),
            params: Vec::new(),
            insts: Vec::new(),
            loc,
        });
        b
    }

    /// Adds a parameter of type `ty` to `block`.
    pub fn append_block_param(&mut self, block: Block, ty: Type) -> Value {
        self.check_block(block);
        let f = self.fm();
        let v = Value(f.values.len() as u32);
        let i = f.blocks[block.index()].params.len() as u32;
        f.values.push(ValueData {
            name: compact_str::format_compact!("v{}", v.0),
            ty,
            def: ValueDef::BlockParam(block, i),
        });
        f.blocks[block.index()].params.push(v);
        v
    }

    /// Makes `block` the block that instructions are appended to.
    pub fn switch_to_block(&mut self, block: Block) {
        self.check_block(block);
        self.current = Some(block);
    }

    /// Sets the source position of the instructions (and blocks) appended
    /// from now on, as Cranelift's `FunctionBuilder::set_srcloc` does: an
    /// opaque `(line, col)` the embedder chooses — a source line, or a
    /// bytecode offset in `line` — which the instrumentation pass copies
    /// into each guard's site, so reports, backtraces and verifier errors
    /// name it (`Report::info.line`/`.col`, `gl_report::line`/`col`). The
    /// default is `0:0` (no position).
    ///
    /// ```
    /// use guardlift_abi::layout::DictLayout;
    /// use guardlift_ir::{builder::ModuleBuilder, SrcLoc, Type};
    ///
    /// let mut mb = ModuleBuilder::new(DictLayout::Cpython312);
    /// let id = mb.declare_function("get", &[Type::Ptr], Some(Type::I64));
    /// let mut f = mb.function(id);
    /// let entry = f.create_block("entry");
    /// f.switch_to_block(entry);
    /// let obj = f.param(0);
    /// f.set_srcloc(SrcLoc { line: 42, col: 1 }); // bytecode offset 42: LOAD_ATTR
    /// let v = f.load_attr(obj, 0);
    /// f.ret(Some(v));
    /// let m = mb.build().expect("verifies");
    /// let inst = &m.functions[0].blocks[0].insts[0];
    /// assert_eq!((inst.loc.line, inst.loc.col), (42, 1));
    /// ```
    pub fn set_srcloc(&mut self, loc: SrcLoc) {
        self.loc = loc;
    }

    /// The position [`Self::set_srcloc`] set last.
    pub fn srcloc(&self) -> SrcLoc {
        self.loc
    }

    /// The block instructions are appended to.
    pub fn current_block(&self) -> Option<Block> {
        self.current
    }

    fn push(&mut self, kind: InstKind, result_ty: Option<Type>) -> Option<Value> {
        kind.for_each_operand(|v| {
            self.ty(v);
        });
        for bc in kind.successors() {
            self.check_block(bc.block);
        }
        let Some(b) = self.current else {
            panic!(
                "no current block in @{}: call switch_to_block first",
                self.f().name
            )
        };
        let loc = self.loc;
        let f = &mut self.module.functions[self.func];
        let block = &f.blocks[b.index()];
        assert!(
            !block.insts.last().is_some_and(|i| i.kind.is_terminator()),
            "block `{}` of @{} is already terminated",
            block.name,
            f.name
        );
        let result = result_ty.map(|ty| {
            let v = Value(f.values.len() as u32);
            f.values.push(ValueData {
                name: compact_str::format_compact!("v{}", v.0),
                ty,
                def: ValueDef::Inst(b),
            });
            v
        });
        f.blocks[b.index()].insts.push(Inst {
            kind,
            result,
            loc,
            site: None,
        });
        result
    }

    fn push_val(&mut self, kind: InstKind, ty: Type) -> Value {
        self.push(kind, Some(ty)).unwrap_or(Value(0))
    }

    fn elem_of(&self, stack: Value) -> AdElem {
        match self.ty(stack).adstack_elem() {
            Some(e) => e,
            None => panic!("{stack:?} is not an adstack handle"),
        }
    }

    /// `iconst.T imm`; `imm` is stored sign-extended from T's width.
    ///
    /// # Panics
    /// If `ty` is not an integer type.
    pub fn iconst(&mut self, ty: Type, imm: i64) -> Value {
        assert!(ty.is_int(), "iconst needs an integer type, not {ty}");
        self.push_val(
            InstKind::Iconst {
                ty,
                imm: sext_imm(imm, ty.bits()),
            },
            ty,
        )
    }

    /// `fconst.T value`; an f32 constant is rounded to f32.
    ///
    /// # Panics
    /// If `ty` is not a float type.
    pub fn fconst(&mut self, ty: Type, value: f64) -> Value {
        assert!(ty.is_float(), "fconst needs a float type, not {ty}");
        self.push_val(
            InstKind::Fconst {
                ty,
                value: canon_float(ty, value),
            },
            ty,
        )
    }

    /// A two-operand op; the result has `a`'s type (an overflow test's is i8).
    pub fn binary(&mut self, op: BinOp, a: Value, b: Value) -> Value {
        let ty = if op.is_overflow_test() {
            Type::I8
        } else {
            self.ty(a)
        };
        self.push_val(InstKind::Binary { op, a, b }, ty)
    }

    /// A one-operand op (float arithmetic or rounding, `popcnt`/`clz`/`ctz`);
    /// the result has `a`'s type.
    pub fn unary(&mut self, op: UnOp, a: Value) -> Value {
        let ty = self.ty(a);
        self.push_val(InstKind::Unary { op, a }, ty)
    }

    /// `icmp.CC a, b`: 1 (as i8) if the comparison holds, else 0.
    pub fn icmp(&mut self, cc: IntCC, a: Value, b: Value) -> Value {
        self.push_val(InstKind::Icmp { cc, a, b }, Type::I8)
    }

    /// `fcmp.CC a, b`: 1 (as i8) if the comparison holds, else 0 (false on NaN except `ne`).
    pub fn fcmp(&mut self, cc: FloatCC, a: Value, b: Value) -> Value {
        self.push_val(InstKind::Fcmp { cc, a, b }, Type::I8)
    }

    /// `select cond, a, b`; the result has `a`'s type.
    pub fn select(&mut self, cond: Value, a: Value, b: Value) -> Value {
        let ty = self.ty(a);
        self.push_val(InstKind::Select { cond, a, b }, ty)
    }

    /// A conversion to `ty`.
    pub fn conv(&mut self, op: ConvOp, ty: Type, a: Value) -> Value {
        self.push_val(InstKind::Conv { op, ty, a }, ty)
    }

    /// `load.TY addr, offset`: a raw load.
    pub fn load(&mut self, ty: Type, addr: Value, offset: i32) -> Value {
        self.push_val(InstKind::Load { ty, addr, offset }, ty)
    }

    /// `store value, addr, offset`: a raw store.
    pub fn store(&mut self, value: Value, addr: Value, offset: i32) {
        self.push(
            InstKind::Store {
                value,
                addr,
                offset,
            },
            None,
        );
    }

    /// Calls a function or extern; returns its result if it has one.
    ///
    /// # Panics
    /// If the callee is not declared in this module.
    pub fn call(&mut self, callee: impl Into<Callee>, args: &[Value]) -> Option<Value> {
        let callee = callee.into();
        let ret = match callee {
            Callee::Func(id) => self.module.functions.get(id.index()).map(|f| f.ret),
            Callee::Extern(id) => self.module.externs.get(id.index()).map(|e| e.ret),
        };
        let Some(ret) = ret else {
            panic!("unknown callee {callee:?}")
        };
        self.push(
            InstKind::Call {
                callee,
                args: args.to_vec(),
            },
            ret,
        )
    }

    /// `jump block(args)`: ends the current block.
    pub fn jump(&mut self, block: Block, args: &[Value]) {
        self.push(
            InstKind::Jump {
                dest: BlockCall {
                    block,
                    args: args.iter().copied().collect(),
                },
            },
            None,
        );
    }

    /// `brif cond, then(then_args), else(else_args)`.
    pub fn brif(
        &mut self,
        cond: Value,
        then_block: Block,
        then_args: &[Value],
        else_block: Block,
        else_args: &[Value],
    ) {
        let then_dest = BlockCall {
            block: then_block,
            args: then_args.iter().copied().collect(),
        };
        let else_dest = BlockCall {
            block: else_block,
            args: else_args.iter().copied().collect(),
        };
        self.push(
            InstKind::Brif {
                cond,
                then_dest,
                else_dest,
            },
            None,
        );
    }

    /// `br_table index, default(args), [b0(args), b1(args), ...]`: ends
    /// the current block. Goes to `table[index]` when `index` (an `i64`,
    /// read unsigned) is below the table's length, else to `default`; an
    /// empty table sends every index to the default.
    ///
    /// ```
    /// use guardlift_abi::layout::DictLayout;
    /// use guardlift_ir::builder::ModuleBuilder;
    /// use guardlift_ir::Type;
    ///
    /// let mut mb = ModuleBuilder::new(DictLayout::Cpython312);
    /// let id = mb.declare_function("pick", &[Type::I64], Some(Type::I64));
    /// let mut f = mb.function(id);
    /// let entry = f.create_block("entry");
    /// let small = f.create_block("small");
    /// let other = f.create_block("other");
    /// let x = f.append_block_param(other, Type::I64);
    /// f.switch_to_block(entry);
    /// let i = f.param(0);
    /// // 0 and 2 go to `small`, 1 to `other(%i)`, anything else to `other(%i)` too.
    /// f.br_table(i, (other, &[i]), &[(small, &[]), (other, &[i]), (small, &[])]);
    /// f.switch_to_block(small);
    /// let k = f.iconst(Type::I64, 7);
    /// f.ret(Some(k));
    /// f.switch_to_block(other);
    /// f.ret(Some(x));
    /// f.finish();
    /// let m = mb.build().unwrap();
    /// assert!(guardlift_ir::print_module(&m)
    ///     .contains("br_table %v0, other(%v0), [small, other(%v0), small]"));
    /// ```
    pub fn br_table(
        &mut self,
        index: Value,
        default: (Block, &[Value]),
        table: &[(Block, &[Value])],
    ) {
        let call = |(block, args): (Block, &[Value])| BlockCall {
            block,
            args: args.iter().copied().collect(),
        };
        self.push(
            InstKind::BrTable {
                index,
                default: call(default),
                table: table.iter().map(|&d| call(d)).collect(),
            },
            None,
        );
    }

    /// `stack_alloc size`: a `ptr` to `size` bytes of the frame (16-aligned,
    /// zeroed, valid until the function returns); the verifier checks that
    /// `size` is 1 to [`crate::MAX_STACK_ALLOC`].
    pub fn stack_alloc(&mut self, size: u32) -> Value {
        self.push_val(InstKind::StackAlloc { size }, Type::Ptr)
    }

    /// `func_addr @f`: the native address (`ptr`) of a function or extern.
    ///
    /// # Panics
    /// If the callee is not declared in this module.
    pub fn func_addr(&mut self, callee: impl Into<Callee>) -> Value {
        let callee = callee.into();
        let known = match callee {
            Callee::Func(id) => id.index() < self.module.functions.len(),
            Callee::Extern(id) => id.index() < self.module.externs.len(),
        };
        assert!(known, "unknown callee {callee:?}");
        self.push_val(InstKind::FuncAddr { callee }, Type::Ptr)
    }

    /// `call_indirect target(args) : (params) [-> ret]`: a call through a
    /// pointer with the signature written here; returns its result if
    /// `ret` is one.
    pub fn call_indirect(
        &mut self,
        target: Value,
        args: &[Value],
        params: &[Type],
        ret: Option<Type>,
    ) -> Option<Value> {
        let sig = IndirectSig {
            params: params.to_vec(),
            ret,
        };
        self.push(
            InstKind::CallIndirect {
                target,
                args: args.to_vec(),
                sig: Box::new(sig),
            },
            ret,
        )
    }

    /// `return [value]`: ends the current block.
    pub fn ret(&mut self, value: Option<Value>) {
        self.push(InstKind::Return { value }, None);
    }

    /// `dict_slot.load obj`: the object's managed-dict word.
    pub fn dict_slot_load(&mut self, obj: Value) -> Value {
        self.push_val(InstKind::DictSlotLoad { obj }, Type::I64)
    }

    /// `dict_slot.store obj, word`: writes the object's managed-dict word.
    pub fn dict_slot_store(&mut self, obj: Value, word: Value) {
        self.push(InstKind::DictSlotStore { obj, word }, None);
    }

    /// `load_attr obj, index`: attribute `index` from the object's values array.
    pub fn load_attr(&mut self, obj: Value, index: u32) -> Value {
        self.push_val(InstKind::LoadAttr { obj, index }, Type::I64)
    }

    /// `store_attr obj, index, value`: writes attribute `index` of the object's values array.
    pub fn store_attr(&mut self, obj: Value, index: u32, value: Value) {
        self.push(InstKind::StoreAttr { obj, index, value }, None);
    }

    /// `adstack.alloc.T capacity`: an adstack handle.
    pub fn adstack_alloc(&mut self, elem: AdElem, capacity: u32) -> Value {
        self.push_val(InstKind::AdAlloc { elem, capacity }, Type::AdStack(elem))
    }

    /// `adstack.push stack, value`: pushes a primal with a zero adjoint.
    pub fn adstack_push(&mut self, stack: Value, value: Value) {
        self.push(InstKind::AdPush { stack, value }, None);
    }

    /// `adstack.pop stack`: drops the top entry.
    pub fn adstack_pop(&mut self, stack: Value) {
        self.push(InstKind::AdPop { stack }, None);
    }

    /// The primal of the top entry (element type of the stack).
    ///
    /// # Panics
    /// If `stack` is not an adstack handle.
    pub fn adstack_top(&mut self, stack: Value) -> Value {
        let ty = Type::of_elem(self.elem_of(stack));
        self.push_val(InstKind::AdTop { stack }, ty)
    }

    /// The adjoint of the top entry (element type of the stack).
    ///
    /// # Panics
    /// If `stack` is not an adstack handle.
    pub fn adstack_top_adj(&mut self, stack: Value) -> Value {
        let ty = Type::of_elem(self.elem_of(stack));
        self.push_val(InstKind::AdTopAdj { stack }, ty)
    }

    /// `adstack.acc_adj stack, delta`: adds `delta` to the top entry's adjoint.
    pub fn adstack_acc_adj(&mut self, stack: Value, delta: Value) {
        self.push(InstKind::AdAccAdj { stack, delta }, None);
    }

    /// `adstack.len stack`: the number of entries (i64).
    pub fn adstack_len(&mut self, stack: Value) -> Value {
        self.push_val(InstKind::AdLen { stack }, Type::I64)
    }

    /// `guard.watch obj`.
    pub fn watch(&mut self, obj: Value) {
        self.push(InstKind::Watch { obj }, None);
    }

    /// Guards the last instruction of the current block with a new site
    /// (one more than the largest site id of the module), whose source
    /// position is `loc`, by every check applicable to it.
    ///
    /// # Panics
    /// If there is no such instruction, or it cannot be guarded.
    pub fn guard_last(&mut self, loc: SrcLoc) -> SiteId {
        self.guard_last_with(loc, CheckKind::ALL.into_iter().collect())
    }

    /// [`Self::guard_last`] by the checks of `only` that apply to the
    /// instruction (a site's own check list in the text format).
    ///
    /// # Panics
    /// If there is no such instruction, or none of `only` applies to it.
    pub fn guard_last_with(&mut self, loc: SrcLoc, only: Checks) -> SiteId {
        let next = self
            .module
            .sites
            .keys()
            .next_back()
            .map_or(Some(0), |s| s.0.checked_add(1));
        let id = SiteId(next.expect("no site id left"));
        let func = FuncId(self.func as u32);
        let Some(b) = self.current else {
            panic!("no current block")
        };
        let m = &mut self.module;
        let Some(inst) = m.functions[self.func].blocks[b.index()].insts.last() else {
            panic!("no instruction to guard")
        };
        let checks = m.applicable_checks(&inst.kind).intersect(only);
        let op = inst.kind.opcode();
        assert!(
            !checks.is_empty() && inst.site.is_none(),
            "`{op}` cannot be guarded"
        );
        if let Some(inst) = m.functions[self.func].blocks[b.index()].insts.last_mut() {
            inst.site = Some(id);
        }
        m.sites.insert(
            id,
            Site {
                func,
                loc,
                op,
                checks,
            },
        );
        id
    }

    /// Ends building this function.
    pub fn finish(self) -> FuncId {
        self.func_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_and_verify, print_module};

    /// A builder with `@f(i64, f64) -> i64` being built, its entry current.
    fn with_f(body: impl FnOnce(&mut FunctionBuilder<'_>)) -> Result<Module, VerifyErrors> {
        let mut mb = ModuleBuilder::new(DictLayout::Cpython312);
        let id = mb.declare_function("f", &[Type::I64, Type::F64], Some(Type::I64));
        let mut f = mb.function(id);
        let entry = f.create_block("entry");
        f.switch_to_block(entry);
        body(&mut f);
        f.finish();
        mb.build()
    }

    /// The module prints, and what it prints parses, verifies and prints the same.
    fn round_trips(m: &Module) -> String {
        let text = print_module(m);
        let again = parse_and_verify(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(print_module(&again), text);
        text
    }

    #[test]
    fn binary_and_unary_make_every_arithmetic_op_of_spec_3_1() {
        let m = with_f(|f| {
            let (a, x) = (f.param(0), f.param(1));
            let mut acc = a;
            for op in BinOp::ALL {
                let r = if op.is_float() {
                    let y = f.binary(op, x, x);
                    assert_eq!(f.ty(y), Type::F64, "{}", op.name());
                    f.conv(ConvOp::FcvtToSint, Type::I64, y)
                } else {
                    let y = f.binary(op, a, a);
                    let want = if op.is_overflow_test() {
                        Type::I8
                    } else {
                        Type::I64
                    };
                    assert_eq!(f.ty(y), want, "{}", op.name());
                    match want {
                        Type::I8 => f.conv(ConvOp::Sext, Type::I64, y),
                        _ => y,
                    }
                };
                acc = f.binary(BinOp::Bxor, acc, r);
            }
            for op in UnOp::ALL {
                let y = if op.is_int() {
                    f.unary(op, a)
                } else {
                    let y = f.unary(op, x);
                    f.conv(ConvOp::FcvtToSint, Type::I64, y)
                };
                assert_eq!(f.ty(y), Type::I64, "{}", op.name());
                acc = f.binary(BinOp::Iadd, acc, y);
            }
            f.ret(Some(acc));
        })
        .expect("verifies");
        let text = round_trips(&m);
        for name in BinOp::ALL
            .iter()
            .map(|o| o.name())
            .chain(UnOp::ALL.iter().map(|o| o.name()))
        {
            assert!(
                text.contains(&format!(" = {name} ")),
                "{name} missing:\n{text}"
            );
        }
        for name in [
            "sdiv",
            "srem",
            "urem",
            "udiv",
            "smul_overflows",
            "fcopysign",
            "fnearest",
            "ctz",
        ] {
            assert!(text.contains(name), "{name}");
        }
    }

    #[test]
    fn stack_alloc_gives_a_pointer_and_its_size_is_verified() {
        let m = with_f(|f| {
            let p = f.stack_alloc(24);
            assert_eq!(f.ty(p), Type::Ptr);
            let a = f.param(0);
            f.store(a, p, 16);
            let v = f.load(Type::I64, p, 16);
            f.ret(Some(v));
        })
        .expect("verifies");
        assert!(round_trips(&m).contains("= stack_alloc 24\n"));
        for size in [0, crate::MAX_STACK_ALLOC + 1] {
            let e = with_f(|f| {
                f.stack_alloc(size);
                let a = f.param(0);
                f.ret(Some(a));
            })
            .expect_err("out of range");
            assert!(
                e.0[0]
                    .msg
                    .contains(&format!("stack_alloc size {size} is out of range")),
                "{e}"
            );
        }
    }

    #[test]
    fn func_addr_and_call_indirect_call_through_a_pointer() {
        let mut mb = ModuleBuilder::new(DictLayout::Cpython312);
        let sin = mb.declare_extern("sin", &[Type::F64], Some(Type::F64));
        let g = mb.declare_function("g", &[Type::I64], None);
        let main = mb.declare_function("main", &[Type::F64], Some(Type::F64));
        let mut f = mb.function(g);
        let e = f.create_block("entry");
        f.switch_to_block(e);
        f.ret(None);
        f.finish();
        let mut f = mb.function(main);
        let e = f.create_block("entry");
        f.switch_to_block(e);
        let x = f.param(0);
        let ps = f.func_addr(sin);
        let pg = f.func_addr(g);
        assert_eq!((f.ty(ps), f.ty(pg)), (Type::Ptr, Type::Ptr));
        let y = f
            .call_indirect(ps, &[x], &[Type::F64], Some(Type::F64))
            .expect("a result");
        assert_eq!(f.ty(y), Type::F64);
        let k = f.iconst(Type::I64, 3);
        assert_eq!(f.call_indirect(pg, &[k], &[Type::I64], None), None);
        f.ret(Some(y));
        f.finish();
        let m = mb.build().expect("verifies");
        let text = round_trips(&m);
        assert!(text.contains("= func_addr @sin\n"), "{text}");
        assert!(text.contains("= func_addr @g\n"), "{text}");
        assert!(
            text.contains("= call_indirect %v1(%v0) : (f64) -> f64\n"),
            "{text}"
        );
        assert!(
            text.contains("    call_indirect %v2(%v4) : (i64)\n"),
            "{text}"
        );
        // The written signature is checked against the arguments.
        let e = with_f(|f| {
            let x = f.param(1);
            let p = f.func_addr(FuncId(0));
            let r = f.call_indirect(p, &[x], &[Type::I64], Some(Type::I64));
            f.ret(r);
        })
        .expect_err("an f64 argument for an i64 parameter");
        assert!(
            e.0[0]
                .msg
                .contains("argument 1 of call_indirect must be i64"),
            "{e}"
        );
    }

    #[test]
    fn br_table_builds_every_form() {
        let mut mb = ModuleBuilder::new(DictLayout::Cpython312);
        let id = mb.declare_function("f", &[Type::I64], Some(Type::I64));
        let mut f = mb.function(id);
        let entry = f.create_block("entry");
        let a = f.create_block("a");
        let b = f.create_block("b");
        let none = f.create_block("none");
        let x = f.append_block_param(b, Type::I64);
        f.switch_to_block(entry);
        let i = f.param(0);
        f.br_table(i, (b, &[i]), &[(a, &[]), (b, &[i]), (a, &[])]);
        f.switch_to_block(a);
        // An empty table: every index takes the default.
        f.br_table(i, (none, &[]), &[]);
        f.switch_to_block(none);
        f.ret(Some(i));
        f.switch_to_block(b);
        f.ret(Some(x));
        f.finish();
        let m = mb.build().expect("verifies");
        let text = round_trips(&m);
        assert!(
            text.contains("    br_table %v0, b(%v0), [a, b(%v0), a]\n"),
            "{text}"
        );
        assert!(text.contains("    br_table %v0, none, []\n"), "{text}");
        let term = m.functions[0].blocks[0].insts.last().expect("a terminator");
        let targets: Vec<u32> = term.kind.branch_targets().map(|d| d.block.0).collect();
        assert_eq!(
            targets,
            vec![2, 1, 2, 1],
            "the default first, then the table"
        );
        // Wrong argument counts and a narrow index are verifier errors.
        let e = with_f(|f| {
            let t = f.create_block("t");
            let p = f.append_block_param(t, Type::I64);
            let i = f.param(0);
            let n = f.conv(ConvOp::Ireduce, Type::I32, i);
            f.br_table(n, (t, &[i]), &[(t, &[])]);
            f.switch_to_block(t);
            f.ret(Some(p));
        })
        .expect_err("two errors");
        let msgs: Vec<&str> = e.0.iter().map(|d| d.msg.as_str()).collect();
        assert!(
            msgs.contains(&"br_table index must be i64 or ptr, got %v3 (i32) (in @f)"),
            "{msgs:?}"
        );
        assert!(
            msgs.contains(&"block `t` expects 1 arguments, got 0 (in @f)"),
            "{msgs:?}"
        );
        // A table longer than the lowering's i32 index reaches far.
        let e = with_f(|f| {
            let t = f.create_block("t");
            let i = f.param(0);
            let table = vec![(t, &[][..]); crate::MAX_BR_TABLE + 1];
            f.br_table(i, (t, &[]), &table);
            f.switch_to_block(t);
            f.ret(Some(i));
        })
        .expect_err("too long");
        assert_eq!(
            e.0[0].msg,
            format!(
                "br_table has {} destinations (at most {}) (in @f)",
                crate::MAX_BR_TABLE + 1,
                crate::MAX_BR_TABLE
            )
        );
    }
}
