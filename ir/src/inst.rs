//! Instructions: opcodes, operands, and the entity handles they refer to.

use crate::types::Type;
use cranelift_entity::entity_impl;
use guardlift_runtime::adstack::AdElem;
use std::fmt;

/// An SSA value, local to one function.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(pub u32);
entity_impl!(Value);

/// A basic block, local to one function. Block 0 in layout order is the entry.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Block(pub u32);
entity_impl!(Block);

/// Index of a function in [`crate::Module::functions`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub u32);
entity_impl!(FuncId);

/// Index of an extern in [`crate::Module::externs`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExternId(pub u32);
entity_impl!(ExternId);

/// A guard site: index into [`crate::Module::sites`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SiteId(pub u32);
entity_impl!(SiteId);

/// A 1-based line and column in the source text (0:0 when built by API).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SrcLoc {
    pub line: u32,
    pub col: u32,
}

impl SrcLoc {
    pub const fn new(line: u32, col: u32) -> Self {
        SrcLoc { line, col }
    }
}

impl fmt::Display for SrcLoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// What a `call` calls.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Callee {
    Func(FuncId),
    Extern(ExternId),
}

/// Integer comparison codes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum IntCC {
    Eq,
    Ne,
    Slt,
    Sle,
    Sgt,
    Sge,
    Ult,
    Ule,
    Ugt,
    Uge,
}

/// Float comparison codes (all false on NaN except `ne`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FloatCC {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Two-operand arithmetic.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Iadd,
    Isub,
    Imul,
    Band,
    Bor,
    Bxor,
    Ishl,
    Ushr,
    Sshr,
    Fadd,
    Fsub,
    Fmul,
    Fdiv,
    Fmin,
    Fmax,
}

impl BinOp {
    /// The opcode as printed.
    pub const fn name(self) -> &'static str {
        match self {
            BinOp::Iadd => "iadd",
            BinOp::Isub => "isub",
            BinOp::Imul => "imul",
            BinOp::Band => "band",
            BinOp::Bor => "bor",
            BinOp::Bxor => "bxor",
            BinOp::Ishl => "ishl",
            BinOp::Ushr => "ushr",
            BinOp::Sshr => "sshr",
            BinOp::Fadd => "fadd",
            BinOp::Fsub => "fsub",
            BinOp::Fmul => "fmul",
            BinOp::Fdiv => "fdiv",
            BinOp::Fmin => "fmin",
            BinOp::Fmax => "fmax",
        }
    }
    pub const fn is_float(self) -> bool {
        matches!(
            self,
            BinOp::Fadd | BinOp::Fsub | BinOp::Fmul | BinOp::Fdiv | BinOp::Fmin | BinOp::Fmax
        )
    }
    pub const fn is_shift(self) -> bool {
        matches!(self, BinOp::Ishl | BinOp::Ushr | BinOp::Sshr)
    }
}

/// One-operand float ops.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Fneg,
    Fabs,
    Fsqrt,
}

impl UnOp {
    /// The opcode as printed.
    pub const fn name(self) -> &'static str {
        match self {
            UnOp::Fneg => "fneg",
            UnOp::Fabs => "fabs",
            UnOp::Fsqrt => "fsqrt",
        }
    }
}

/// Conversions; each names its result type with a suffix.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ConvOp {
    Sext,
    Uext,
    Ireduce,
    FcvtFromSint,
    FcvtToSint,
    Fpromote,
    Fdemote,
    Bitcast,
}

impl ConvOp {
    /// The opcode as printed, without its type suffix.
    pub const fn name(self) -> &'static str {
        match self {
            ConvOp::Sext => "sext",
            ConvOp::Uext => "uext",
            ConvOp::Ireduce => "ireduce",
            ConvOp::FcvtFromSint => "fcvt_from_sint",
            ConvOp::FcvtToSint => "fcvt_to_sint",
            ConvOp::Fpromote => "fpromote",
            ConvOp::Fdemote => "fdemote",
            ConvOp::Bitcast => "bitcast",
        }
    }
}

/// A branch target with its arguments.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlockCall {
    pub block: Block,
    pub args: Vec<Value>,
}

/// The operation of an instruction and its operands.
#[derive(Clone, Debug, PartialEq)]
pub enum InstKind {
    Iconst {
        ty: Type,
        imm: i64,
    },
    /// `value` is exact for the type (an f32 constant holds an f32 value).
    Fconst {
        ty: Type,
        value: f64,
    },
    Binary {
        op: BinOp,
        a: Value,
        b: Value,
    },
    Unary {
        op: UnOp,
        a: Value,
    },
    Icmp {
        cc: IntCC,
        a: Value,
        b: Value,
    },
    Fcmp {
        cc: FloatCC,
        a: Value,
        b: Value,
    },
    Select {
        cond: Value,
        a: Value,
        b: Value,
    },
    Conv {
        op: ConvOp,
        ty: Type,
        a: Value,
    },
    Load {
        ty: Type,
        addr: Value,
        offset: i32,
    },
    Store {
        value: Value,
        addr: Value,
        offset: i32,
    },
    Call {
        callee: Callee,
        args: Vec<Value>,
    },
    Jump {
        dest: BlockCall,
    },
    Brif {
        cond: Value,
        then_dest: BlockCall,
        else_dest: BlockCall,
    },
    Return {
        value: Option<Value>,
    },
    DictSlotLoad {
        obj: Value,
    },
    DictSlotStore {
        obj: Value,
        word: Value,
    },
    LoadAttr {
        obj: Value,
        index: u32,
    },
    StoreAttr {
        obj: Value,
        index: u32,
        value: Value,
    },
    AdAlloc {
        elem: AdElem,
        capacity: u32,
    },
    AdPush {
        stack: Value,
        value: Value,
    },
    AdPop {
        stack: Value,
    },
    AdTop {
        stack: Value,
    },
    AdTopAdj {
        stack: Value,
    },
    AdAccAdj {
        stack: Value,
        delta: Value,
    },
    AdLen {
        stack: Value,
    },
    /// `guard.watch %obj`: register the object's dict slot with the clobber watch list.
    Watch {
        obj: Value,
    },
}

/// One check of spec §6. A guarded instruction carries a [`Checks`] set of
/// them (on its [`crate::Site`]); they run in [`CheckKind::ALL`] order.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CheckKind {
    /// `lifetime`: accesses to freed objects, double and invalid frees.
    Lifetime,
    /// `dict`: the managed-dict word's tag.
    Dict,
    /// `bounds`: attribute index against the values array's capacity.
    Bounds,
    /// `adstack`: capacity and emptiness.
    Adstack,
    /// `clobber`: raw stores over watched slots.
    Clobber,
}

impl CheckKind {
    /// Every check, in the order they run on one instruction (spec §6).
    pub const ALL: [CheckKind; 5] = [
        CheckKind::Lifetime,
        CheckKind::Dict,
        CheckKind::Bounds,
        CheckKind::Adstack,
        CheckKind::Clobber,
    ];
    pub const fn name(self) -> &'static str {
        match self {
            CheckKind::Lifetime => "lifetime",
            CheckKind::Dict => "dict",
            CheckKind::Bounds => "bounds",
            CheckKind::Adstack => "adstack",
            CheckKind::Clobber => "clobber",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        CheckKind::ALL.into_iter().find(|k| k.name() == s)
    }
    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of [`CheckKind`]s (a bitset); iterates in spec order. Printed as
/// names separated by spaces (`lifetime dict bounds`), the form of a site's
/// check list in the text format.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Checks(u8);

impl Checks {
    pub const EMPTY: Checks = Checks(0);
    /// The checks that concern objects (a `call @obj_new` records its
    /// allocation site when any of them is on).
    pub const OBJECT: Checks = Checks(
        CheckKind::Lifetime.bit()
            | CheckKind::Dict.bit()
            | CheckKind::Bounds.bit()
            | CheckKind::Clobber.bit(),
    );
    pub const fn only(k: CheckKind) -> Checks {
        Checks(k.bit())
    }
    pub const fn with(self, k: CheckKind) -> Checks {
        Checks(self.0 | k.bit())
    }
    pub const fn contains(self, k: CheckKind) -> bool {
        self.0 & k.bit() != 0
    }
    pub fn insert(&mut self, k: CheckKind) {
        self.0 |= k.bit()
    }
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub const fn intersect(self, o: Checks) -> Checks {
        Checks(self.0 & o.0)
    }
    /// Is every check of `self` in `o`?
    pub const fn is_subset(self, o: Checks) -> bool {
        self.0 & !o.0 == 0
    }
    /// The checks, in spec order.
    pub fn iter(self) -> impl Iterator<Item = CheckKind> {
        CheckKind::ALL
            .into_iter()
            .filter(move |k| self.contains(*k))
    }
}

impl FromIterator<CheckKind> for Checks {
    fn from_iter<I: IntoIterator<Item = CheckKind>>(it: I) -> Self {
        it.into_iter().fold(Checks::EMPTY, Checks::with)
    }
}

impl fmt::Display for Checks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, k) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            f.write_str(k.name())?;
        }
        Ok(())
    }
}

/// A built-in an instruction calls that guards care about (spec §7).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ObjCall {
    /// `call @obj_new`: its site records the allocation site.
    New,
    /// `call @obj_free`: the lifetime check (double / invalid free).
    Free,
}

impl ObjCall {
    /// The built-in named `name`, if it is one guards care about.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "obj_new" => Some(ObjCall::New),
            "obj_free" => Some(ObjCall::Free),
            _ => None,
        }
    }
    /// The checks that may guard such a call.
    pub const fn applicable(self) -> Checks {
        match self {
            ObjCall::New => Checks::OBJECT,
            ObjCall::Free => Checks::only(CheckKind::Lifetime),
        }
    }
}

impl InstKind {
    /// The opcode as printed (`store_attr`, `adstack.push`, `icmp`, ...), without suffixes.
    pub fn opcode(&self) -> &'static str {
        match self {
            InstKind::Binary { op, .. } => op.name(),
            InstKind::Unary { op, .. } => op.name(),
            InstKind::Conv { op, .. } => op.name(),
            k => k.op().name(),
        }
    }

    /// The checks that may guard this instruction (spec §6), for every op
    /// but `call`, whose checks depend on the callee
    /// ([`crate::Module::applicable_checks`]).
    pub fn applicable_checks(&self) -> Checks {
        self.op().checks()
    }

    /// The first check (spec order) that may guard this instruction, if any
    /// (`call` excepted, see [`InstKind::applicable_checks`]).
    pub fn check_kind(&self) -> Option<CheckKind> {
        self.applicable_checks().iter().next()
    }

    /// Does this instruction touch an object's managed-dict slot (and so watch it)?
    pub fn dict_obj(&self) -> Option<Value> {
        use InstKind::*;
        match self {
            DictSlotLoad { obj } | DictSlotStore { obj, .. } | LoadAttr { obj, .. } => Some(*obj),
            StoreAttr { obj, .. } | Watch { obj } => Some(*obj),
            _ => None,
        }
    }

    pub fn is_terminator(&self) -> bool {
        matches!(
            self,
            InstKind::Jump { .. } | InstKind::Brif { .. } | InstKind::Return { .. }
        )
    }

    /// Every value operand, in printing order (branch args included).
    pub fn operands(&self) -> Vec<Value> {
        let mut v = Vec::new();
        self.for_each_operand(|x| v.push(x));
        v
    }

    /// Calls `f` on every value operand, in printing order (branch args
    /// included; the list is [`crate::opcode::visit_operands`]).
    pub fn for_each_operand(&self, mut f: impl FnMut(Value)) {
        let mut g = |v: &Value| f(*v);
        crate::opcode::visit_operands!(self, g, iter)
    }

    /// Calls `f` on every value operand, mutably (same order as
    /// [`InstKind::for_each_operand`]).
    pub fn for_each_operand_mut(&mut self, mut f: impl FnMut(&mut Value)) {
        crate::opcode::visit_operands!(self, f, iter_mut)
    }

    /// Calls `f` on every branch target block, mutably.
    pub fn for_each_dest_mut(&mut self, mut f: impl FnMut(&mut Block)) {
        match self {
            InstKind::Jump { dest } => f(&mut dest.block),
            InstKind::Brif {
                then_dest,
                else_dest,
                ..
            } => {
                f(&mut then_dest.block);
                f(&mut else_dest.block)
            }
            _ => {}
        }
    }

    /// Branch targets of a terminator.
    pub fn successors(&self) -> Vec<&BlockCall> {
        self.branch_targets().collect()
    }

    /// Branch targets of a terminator, in printing order (no allocation).
    pub fn branch_targets(&self) -> impl Iterator<Item = &BlockCall> {
        let (a, b) = match self {
            InstKind::Jump { dest } => (Some(dest), None),
            InstKind::Brif {
                then_dest,
                else_dest,
                ..
            } => (Some(then_dest), Some(else_dest)),
            _ => (None, None),
        };
        a.into_iter().chain(b)
    }
}

impl IntCC {
    pub const ALL: [IntCC; 10] = [
        IntCC::Eq,
        IntCC::Ne,
        IntCC::Slt,
        IntCC::Sle,
        IntCC::Sgt,
        IntCC::Sge,
        IntCC::Ult,
        IntCC::Ule,
        IntCC::Ugt,
        IntCC::Uge,
    ];
    pub const fn name(self) -> &'static str {
        match self {
            IntCC::Eq => "eq",
            IntCC::Ne => "ne",
            IntCC::Slt => "slt",
            IntCC::Sle => "sle",
            IntCC::Sgt => "sgt",
            IntCC::Sge => "sge",
            IntCC::Ult => "ult",
            IntCC::Ule => "ule",
            IntCC::Ugt => "ugt",
            IntCC::Uge => "uge",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        IntCC::ALL.into_iter().find(|c| c.name() == s)
    }
}

impl FloatCC {
    pub const ALL: [FloatCC; 6] = [
        FloatCC::Eq,
        FloatCC::Ne,
        FloatCC::Lt,
        FloatCC::Le,
        FloatCC::Gt,
        FloatCC::Ge,
    ];
    pub const fn name(self) -> &'static str {
        match self {
            FloatCC::Eq => "eq",
            FloatCC::Ne => "ne",
            FloatCC::Lt => "lt",
            FloatCC::Le => "le",
            FloatCC::Gt => "gt",
            FloatCC::Ge => "ge",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        FloatCC::ALL.into_iter().find(|c| c.name() == s)
    }
}

/// One instruction with its result, source location and optional guard site.
#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    pub kind: InstKind,
    /// The value this instruction defines, if it yields one.
    pub result: Option<Value>,
    /// Where the instruction is written (1-based; 0:0 when built by API).
    pub loc: SrcLoc,
    /// Set on guarded instructions (`guard.` prefix in text).
    pub site: Option<SiteId>,
}
