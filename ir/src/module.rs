//! Functions, blocks, externs, sites and the module that holds them.

use crate::error::Diagnostic;
use crate::inst::{
    Block, Callee, Checks, ExternId, FuncId, Inst, InstKind, ObjCall, SiteId, SrcLoc, Value,
};
use crate::types::Type;
use cranelift_entity::EntityRef;
use guardlift_abi::layout::DictLayout;
use std::collections::BTreeMap;

/// The text name of a value or a block: stored inline up to 24 bytes, so
/// that parsing a function of a million names allocates none of them (and
/// dropping it frees none: issue 33 measured 0.2 µs an instruction of
/// allocator work at 10^6 for a `String` each).
pub type Name = compact_str::CompactString;

/// What defines a value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ValueDef {
    /// The n-th function parameter.
    Param(u32),
    /// The n-th parameter of a block.
    BlockParam(Block, u32),
    /// The result of an instruction of `block`. Its position in the block
    /// is not recorded: inserting instructions (as the instrumentation pass
    /// does) never renumbers definitions.
    Inst(Block),
}

/// A value's type, its text name (without `%`) and its definition.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueData {
    /// The name in the text, without `%` (empty: none).
    pub name: Name,
    /// The value's type.
    pub ty: Type,
    /// Where it is defined.
    pub def: ValueDef,
}

/// A basic block: label, params, instructions (the last one a terminator).
#[derive(Clone, Debug, PartialEq)]
pub struct BlockData {
    /// The label.
    pub name: Name,
    /// The block's parameters.
    pub params: Vec<Value>,
    /// The instructions; the last one is the terminator.
    pub insts: Vec<Inst>,
    /// Where the label is written.
    pub loc: SrcLoc,
}

/// A function: signature, values and blocks in layout order (block 0 is the entry).
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// The name, without `@`.
    pub name: String,
    /// The parameters.
    pub params: Vec<Value>,
    /// The return type, if any.
    pub ret: Option<Type>,
    /// Every value of the function, by [`Value`] index.
    pub values: Vec<ValueData>,
    /// The blocks in layout order.
    pub blocks: Vec<BlockData>,
    /// Where `fn` is written.
    pub loc: SrcLoc,
}

impl Function {
    /// The data of value `v`.
    pub fn value(&self, v: Value) -> &ValueData {
        &self.values[v.index()]
    }
    /// The type of value `v`.
    pub fn ty(&self, v: Value) -> Type {
        self.values[v.index()].ty
    }
    /// The index of the block that defines value `v` (an instruction's
    /// result or a block param); `None` for a function param or a value
    /// that does not exist.
    pub fn def_block(&self, v: Value) -> Option<u32> {
        match self.values.get(v.index()).map(|d| d.def) {
            Some(ValueDef::Inst(b) | ValueDef::BlockParam(b, _)) => Some(b.0),
            _ => None,
        }
    }
    /// The data of block `b`.
    pub fn block(&self, b: Block) -> &BlockData {
        &self.blocks[b.index()]
    }
    /// The parameter types, in order.
    pub fn param_types(&self) -> Vec<Type> {
        self.params.iter().map(|&p| self.ty(p)).collect()
    }
    /// Every block, in layout order.
    pub fn block_ids(&self) -> impl Iterator<Item = Block> {
        (0..self.blocks.len() as u32).map(Block)
    }
    /// Number of instructions in all blocks.
    pub fn inst_count(&self) -> usize {
        self.blocks.iter().map(|b| b.insts.len()).sum()
    }
}

/// A host function declaration (`extern fn @name(T, ...) -> T`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternDecl {
    /// The name, without `@`.
    pub name: String,
    /// Parameter types.
    pub params: Vec<Type>,
    /// Return type, if any.
    pub ret: Option<Type>,
    /// Where `extern fn` is written.
    pub loc: SrcLoc,
}

impl ExternDecl {
    /// Matches an extern against the built-in host functions of spec §7.
    /// `Ok(Some(b))`: a built-in with a matching signature; `Ok(None)`: not a
    /// built-in (the embedder must provide it); `Err`: a built-in's name with the
    /// wrong signature.
    pub fn resolve_builtin(&self) -> Result<Option<&'static guardlift_abi::Builtin>, Diagnostic> {
        let ext = self;
        use crate::types::Type;
        use guardlift_abi::{builtin, AbiTy};
        let Some(b) = builtin(&ext.name) else {
            return Ok(None);
        };
        let abi = |t: Type| match t {
            Type::I64 | Type::Ptr => Some(AbiTy::I64),
            Type::F64 => Some(AbiTy::F64),
            _ => None,
        };
        let params: Option<Vec<AbiTy>> = ext.params.iter().map(|&t| abi(t)).collect();
        let ret = match ext.ret {
            None => Some(None),
            Some(t) => abi(t).map(Some),
        };
        if params.as_deref() == Some(b.params) && ret == Some(b.ret) {
            Ok(Some(b))
        } else {
            let sig = |p: &[AbiTy], r: Option<AbiTy>| {
                let n = |t: &AbiTy| if *t == AbiTy::F64 { "f64" } else { "i64|ptr" };
                let ps: Vec<&str> = p.iter().map(n).collect();
                match r {
                    Some(r) => format!("({}) -> {}", ps.join(", "), n(&r)),
                    None => format!("({})", ps.join(", ")),
                }
            };
            let declared: Vec<String> = ext.params.iter().map(|t| t.to_string()).collect();
            let declared = match ext.ret {
                Some(r) => format!("({}) -> {r}", declared.join(", ")),
                None => format!("({})", declared.join(", ")),
            };
            Err(Diagnostic::new(
                ext.loc,
                format!(
                    "extern @{} is declared {declared} but the built-in is {}",
                    b.name,
                    sig(b.params, b.ret)
                ),
            ))
        }
    }
}

/// Where a guard came from: the guarded op's function, source position and opcode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The function of the guarded instruction.
    pub func: FuncId,
    /// Source position of the guarded instruction in the original text.
    pub loc: SrcLoc,
    /// The guarded opcode (`store_attr`, `adstack.push`, `store`, ...).
    pub op: &'static str,
    /// The checks that guard the instruction (run in spec order); never
    /// empty, always a subset of [`Module::applicable_checks`].
    pub checks: Checks,
}

/// A whole program: layout, externs, functions, and the guard sites they use.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    /// Where the managed-dict slot is.
    pub layout: DictLayout,
    /// Host function declarations, by [`ExternId`].
    pub externs: Vec<ExternDecl>,
    /// Functions, by [`FuncId`].
    pub functions: Vec<Function>,
    /// Guard sites by id. Ids are stable: the pass numbers them in program
    /// order and the text format carries them (`!site(ID, LINE:COL)`).
    pub sites: BTreeMap<SiteId, Site>,
}

impl Module {
    /// The function `id`.
    pub fn func(&self, id: FuncId) -> &Function {
        &self.functions[id.index()]
    }
    /// The extern `id`.
    pub fn ext(&self, id: ExternId) -> &ExternDecl {
        &self.externs[id.index()]
    }
    /// The site `id`, if any.
    pub fn site(&self, id: SiteId) -> Option<&Site> {
        self.sites.get(&id)
    }
    /// The function named `name`.
    pub fn func_by_name(&self, name: &str) -> Option<FuncId> {
        self.functions
            .iter()
            .position(|f| f.name == name)
            .map(|i| FuncId(i as u32))
    }
    /// The extern named `name`.
    pub fn extern_by_name(&self, name: &str) -> Option<ExternId> {
        self.externs
            .iter()
            .position(|f| f.name == name)
            .map(|i| ExternId(i as u32))
    }
    /// The built-in object call (`@obj_new`, `@obj_free`) `kind` makes, if
    /// any: a call of an extern of that name whose signature is the built-in's.
    pub fn obj_call(&self, kind: &InstKind) -> Option<ObjCall> {
        let InstKind::Call {
            callee: Callee::Extern(e),
            ..
        } = kind
        else {
            return None;
        };
        let ext = self.externs.get(e.index())?;
        let c = ObjCall::from_name(&ext.name)?;
        matches!(ext.resolve_builtin(), Ok(Some(_))).then_some(c)
    }

    /// The checks that may guard an instruction `kind` of this module
    /// (spec §6; for calls, by callee).
    pub fn applicable_checks(&self, kind: &InstKind) -> Checks {
        match kind {
            InstKind::Call { .. } => self
                .obj_call(kind)
                .map_or(Checks::EMPTY, ObjCall::applicable),
            k => k.applicable_checks(),
        }
    }

    /// The checks guarding `inst` (empty when it has no site).
    pub fn inst_checks(&self, inst: &Inst) -> Checks {
        inst.site
            .and_then(|s| self.sites.get(&s))
            .map_or(Checks::EMPTY, |s| s.checks)
    }

    /// Is any instruction of the module guarded?
    pub fn is_instrumented(&self) -> bool {
        !self.sites.is_empty()
    }
    /// Number of instructions in all functions.
    pub fn inst_count(&self) -> usize {
        self.functions.iter().map(|f| f.inst_count()).sum()
    }
}

impl Module {
    /// The site table in the runtime's terms, by local site id (sparse: one
    /// entry per site, whatever the ids): what the runtime's
    /// `register_sites` takes.
    pub fn site_infos(&self) -> guardlift_abi::ModuleSites {
        self.sites
            .iter()
            .map(|(id, s)| {
                let function = self
                    .functions
                    .get(s.func.index())
                    .map_or_else(|| "?".to_string(), |f| f.name.clone());
                (
                    id.0,
                    guardlift_abi::SiteInfo {
                        function,
                        line: s.loc.line,
                        col: s.loc.col,
                        op: s.op.to_string(),
                    },
                )
            })
            .collect()
    }

    /// Registers the module's sites ([`Module::site_infos`]) with `register`
    /// (the runtime's `register_sites`) and returns their base; an error
    /// (the runtime's site-id space has no room for the module's largest
    /// id) becomes a diagnostic at that site's position.
    pub fn register_sites<E: std::fmt::Display>(
        &self,
        register: impl FnOnce(guardlift_abi::ModuleSites) -> Result<u32, E>,
    ) -> Result<u32, crate::error::Diagnostic> {
        register(self.site_infos()).map_err(|e| {
            let loc = self
                .sites
                .values()
                .next_back()
                .map_or_else(SrcLoc::default, |s| s.loc);
            crate::error::Diagnostic::new(loc, e.to_string())
        })
    }
}
