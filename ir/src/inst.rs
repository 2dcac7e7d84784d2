//! Instructions: opcodes, operands, and the entity handles they refer to.

use crate::types::Type;
use cranelift_entity::entity_impl;
use guardlift_abi::adstack::AdElem;
use std::fmt;
pub use thin_vec::ThinVec;

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
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub col: u32,
}

impl SrcLoc {
    /// The position `line:col`.
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
    /// An IR function of the module.
    Func(FuncId),
    /// A host function declared with `extern fn`.
    Extern(ExternId),
}

/// Integer comparison codes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum IntCC {
    /// Equal.
    Eq,
    /// Not equal.
    Ne,
    /// Signed less than.
    Slt,
    /// Signed less than or equal.
    Sle,
    /// Signed greater than.
    Sgt,
    /// Signed greater than or equal.
    Sge,
    /// Unsigned less than.
    Ult,
    /// Unsigned less than or equal.
    Ule,
    /// Unsigned greater than.
    Ugt,
    /// Unsigned greater than or equal.
    Uge,
}

/// Float comparison codes (all false on NaN except `ne`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FloatCC {
    /// Equal (ordered).
    Eq,
    /// Not equal (true on NaN).
    Ne,
    /// Less than.
    Lt,
    /// Less than or equal.
    Le,
    /// Greater than.
    Gt,
    /// Greater than or equal.
    Ge,
}

/// Two-operand arithmetic.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// Wrapping integer addition.
    Iadd,
    /// Wrapping integer subtraction.
    Isub,
    /// Wrapping integer multiplication.
    Imul,
    /// Bitwise and.
    Band,
    /// Bitwise or.
    Bor,
    /// Bitwise exclusive or.
    Bxor,
    /// Shift left (amount modulo the width).
    Ishl,
    /// Logical shift right (amount modulo the width).
    Ushr,
    /// Arithmetic shift right (amount modulo the width).
    Sshr,
    /// Float addition.
    Fadd,
    /// Float subtraction.
    Fsub,
    /// Float multiplication.
    Fmul,
    /// Float division.
    Fdiv,
    /// Float minimum (NaN if either is NaN).
    Fmin,
    /// Float maximum (NaN if either is NaN).
    Fmax,
    /// Signed truncating division (divisor 0: `div_by_zero`; MIN / -1: `int_overflow`).
    Sdiv,
    /// Unsigned division (divisor 0: `div_by_zero`).
    Udiv,
    /// Signed remainder, the dividend's sign (divisor 0: `div_by_zero`; MIN % -1 = 0).
    Srem,
    /// Unsigned remainder (divisor 0: `div_by_zero`).
    Urem,
    /// 1 (i8) if the signed addition on the operands' type overflows.
    SaddOverflows,
    /// 1 (i8) if the signed subtraction on the operands' type overflows.
    SsubOverflows,
    /// 1 (i8) if the signed multiplication on the operands' type overflows.
    SmulOverflows,
    /// The magnitude of the first float with the sign of the second.
    Fcopysign,
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
            BinOp::Sdiv => "sdiv",
            BinOp::Udiv => "udiv",
            BinOp::Srem => "srem",
            BinOp::Urem => "urem",
            BinOp::SaddOverflows => "sadd_overflows",
            BinOp::SsubOverflows => "ssub_overflows",
            BinOp::SmulOverflows => "smul_overflows",
            BinOp::Fcopysign => "fcopysign",
        }
    }
    /// Every operation, in declaration order.
    pub const ALL: [BinOp; 23] = [
        BinOp::Iadd,
        BinOp::Isub,
        BinOp::Imul,
        BinOp::Band,
        BinOp::Bor,
        BinOp::Bxor,
        BinOp::Ishl,
        BinOp::Ushr,
        BinOp::Sshr,
        BinOp::Fadd,
        BinOp::Fsub,
        BinOp::Fmul,
        BinOp::Fdiv,
        BinOp::Fmin,
        BinOp::Fmax,
        BinOp::Sdiv,
        BinOp::Udiv,
        BinOp::Srem,
        BinOp::Urem,
        BinOp::SaddOverflows,
        BinOp::SsubOverflows,
        BinOp::SmulOverflows,
        BinOp::Fcopysign,
    ];
    /// The operation named `name` in the text format.
    pub fn from_name(name: &str) -> Option<BinOp> {
        BinOp::ALL.into_iter().find(|o| o.name() == name)
    }
    /// Is this an integer division or remainder (a fatal report on a zero
    /// divisor, spec §3.1)?
    pub const fn is_division(self) -> bool {
        matches!(self, BinOp::Sdiv | BinOp::Udiv | BinOp::Srem | BinOp::Urem)
    }
    /// Is this an overflow test (whose result is an i8 flag)?
    pub const fn is_overflow_test(self) -> bool {
        matches!(
            self,
            BinOp::SaddOverflows | BinOp::SsubOverflows | BinOp::SmulOverflows
        )
    }
    /// Is this a float operation?
    pub const fn is_float(self) -> bool {
        matches!(
            self,
            BinOp::Fadd
                | BinOp::Fsub
                | BinOp::Fmul
                | BinOp::Fdiv
                | BinOp::Fmin
                | BinOp::Fmax
                | BinOp::Fcopysign
        )
    }
    /// Is this a shift (whose operands need not have one type)?
    pub const fn is_shift(self) -> bool {
        matches!(self, BinOp::Ishl | BinOp::Ushr | BinOp::Sshr)
    }
}

/// One-operand ops: float arithmetic and rounding, integer bit counts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// Negation.
    Fneg,
    /// Absolute value.
    Fabs,
    /// Square root.
    Fsqrt,
    /// Round toward negative infinity.
    Ffloor,
    /// Round toward positive infinity.
    Fceil,
    /// Round toward zero.
    Ftrunc,
    /// Round to nearest, ties to even.
    Fnearest,
    /// Number of set bits (an int of the operand's type).
    Popcnt,
    /// Number of leading zero bits (the width for 0).
    Clz,
    /// Number of trailing zero bits (the width for 0).
    Ctz,
}

impl UnOp {
    /// The opcode as printed.
    pub const fn name(self) -> &'static str {
        match self {
            UnOp::Fneg => "fneg",
            UnOp::Fabs => "fabs",
            UnOp::Fsqrt => "fsqrt",
            UnOp::Ffloor => "ffloor",
            UnOp::Fceil => "fceil",
            UnOp::Ftrunc => "ftrunc",
            UnOp::Fnearest => "fnearest",
            UnOp::Popcnt => "popcnt",
            UnOp::Clz => "clz",
            UnOp::Ctz => "ctz",
        }
    }
    /// Every operation, in declaration order.
    pub const ALL: [UnOp; 10] = [
        UnOp::Fneg,
        UnOp::Fabs,
        UnOp::Fsqrt,
        UnOp::Ffloor,
        UnOp::Fceil,
        UnOp::Ftrunc,
        UnOp::Fnearest,
        UnOp::Popcnt,
        UnOp::Clz,
        UnOp::Ctz,
    ];
    /// The operation named `name` in the text format.
    pub fn from_name(name: &str) -> Option<UnOp> {
        UnOp::ALL.into_iter().find(|o| o.name() == name)
    }
    /// Does it take an integer operand (else a float)?
    pub const fn is_int(self) -> bool {
        matches!(self, UnOp::Popcnt | UnOp::Clz | UnOp::Ctz)
    }
}

/// Conversions; each names its result type with a suffix.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ConvOp {
    /// Sign-extend to a wider int.
    Sext,
    /// Zero-extend to a wider int.
    Uext,
    /// Truncate to a narrower int.
    Ireduce,
    /// Signed int to float.
    FcvtFromSint,
    /// Float to signed int (saturating; NaN gives 0).
    FcvtToSint,
    /// f32 to f64.
    Fpromote,
    /// f64 to f32.
    Fdemote,
    /// Reinterpret the bits as a type of the same width.
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
    /// The target block.
    pub block: Block,
    /// The values bound to its parameters (a [`ThinVec`]: one pointer,
    /// none allocated when empty, so that a `brif` fits an instruction of
    /// 64 bytes).
    pub args: ThinVec<Value>,
}

/// The operation of an instruction and its operands.
#[derive(Clone, Debug, PartialEq)]
pub enum InstKind {
    /// `iconst.TY IMM`.
    Iconst {
        /// The result type (an int).
        ty: Type,
        /// The value, sign-extended from the type's width.
        imm: i64,
    },
    /// `value` is exact for the type (an f32 constant holds an f32 value).
    Fconst {
        /// The result type (a float).
        ty: Type,
        /// The value.
        value: f64,
    },
    /// Two-operand arithmetic.
    Binary {
        /// The operation.
        op: BinOp,
        /// First operand.
        a: Value,
        /// Second operand.
        b: Value,
    },
    /// One-operand float arithmetic.
    Unary {
        /// The operation.
        op: UnOp,
        /// The operand.
        a: Value,
    },
    /// `icmp.CC a, b`.
    Icmp {
        /// The condition.
        cc: IntCC,
        /// Left operand.
        a: Value,
        /// Right operand.
        b: Value,
    },
    /// `fcmp.CC a, b`.
    Fcmp {
        /// The condition.
        cc: FloatCC,
        /// Left operand.
        a: Value,
        /// Right operand.
        b: Value,
    },
    /// `select cond, a, b`: `a` if `cond` is non-zero, else `b`.
    Select {
        /// The condition (an int).
        cond: Value,
        /// Value if true.
        a: Value,
        /// Value if false.
        b: Value,
    },
    /// A conversion `OP.TY a`.
    Conv {
        /// The conversion.
        op: ConvOp,
        /// The result type.
        ty: Type,
        /// The operand.
        a: Value,
    },
    /// `load.TY addr, offset`: raw memory read.
    Load {
        /// The loaded type.
        ty: Type,
        /// The base address.
        addr: Value,
        /// Byte offset added to the address.
        offset: i32,
    },
    /// `store value, addr, offset`: raw memory write.
    Store {
        /// The value stored.
        value: Value,
        /// The base address.
        addr: Value,
        /// Byte offset added to the address.
        offset: i32,
    },
    /// `call @f(args)`.
    Call {
        /// The function called.
        callee: Callee,
        /// The arguments.
        args: Vec<Value>,
    },
    /// `jump dest`.
    Jump {
        /// The target and its arguments.
        dest: BlockCall,
    },
    /// `brif cond, then, else`.
    Brif {
        /// The condition (non-zero: `then_dest`).
        cond: Value,
        /// Taken when `cond` is non-zero.
        then_dest: BlockCall,
        /// Taken when `cond` is zero.
        else_dest: BlockCall,
    },
    /// `br_table index, default, [b0, b1, ...]` (spec §3.1): `table[index]`
    /// when `index` (unsigned) is below the table's length, else `default`.
    /// An empty table is allowed (every index takes the default), as in
    /// Cranelift.
    BrTable {
        /// The index (an `i64` or `ptr`, read unsigned).
        index: Value,
        /// Taken when `index` ≥ the table's length.
        default: BlockCall,
        /// The destinations by index, at most [`MAX_BR_TABLE`].
        table: ThinVec<BlockCall>,
    },
    /// `return [value]`.
    Return {
        /// The returned value, if the function returns one.
        value: Option<Value>,
    },
    /// `dict_slot.load obj`.
    DictSlotLoad {
        /// The object.
        obj: Value,
    },
    /// `dict_slot.store obj, word`.
    DictSlotStore {
        /// The object.
        obj: Value,
        /// The new managed-dict word.
        word: Value,
    },
    /// `load_attr obj, index`.
    LoadAttr {
        /// The object.
        obj: Value,
        /// The attribute index into its values array.
        index: u32,
    },
    /// `store_attr obj, index, value`.
    StoreAttr {
        /// The object.
        obj: Value,
        /// The attribute index into its values array.
        index: u32,
        /// The value stored.
        value: Value,
    },
    /// `adstack.alloc.ELEM capacity`: a fresh, empty adstack in the frame.
    AdAlloc {
        /// The element type.
        elem: AdElem,
        /// Capacity in entries.
        capacity: u32,
    },
    /// `adstack.push stack, value`.
    AdPush {
        /// The adstack handle.
        stack: Value,
        /// The primal pushed.
        value: Value,
    },
    /// `adstack.pop stack`.
    AdPop {
        /// The adstack handle.
        stack: Value,
    },
    /// `adstack.top stack`: the top entry's primal.
    AdTop {
        /// The adstack handle.
        stack: Value,
    },
    /// `adstack.top_adj stack`: the top entry's adjoint.
    AdTopAdj {
        /// The adstack handle.
        stack: Value,
    },
    /// `adstack.acc_adj stack, delta`.
    AdAccAdj {
        /// The adstack handle.
        stack: Value,
        /// Added to the top entry's adjoint.
        delta: Value,
    },
    /// `adstack.len stack`.
    AdLen {
        /// The adstack handle.
        stack: Value,
    },
    /// `guard.watch %obj`: register the object's dict slot with the clobber watch list.
    Watch {
        /// The object watched.
        obj: Value,
    },
    /// `stack_alloc SIZE`: `size` bytes of the frame, 16-aligned, zeroed,
    /// valid until the function returns (spec §3.1).
    StackAlloc {
        /// Bytes, 1 to [`MAX_STACK_ALLOC`].
        size: u32,
    },
    /// `func_addr @name`: the native address of an IR function (callable
    /// with its IR signature under the platform C ABI) or of an extern.
    FuncAddr {
        /// The function or extern named.
        callee: Callee,
    },
    /// `call_indirect %f(args) : (T, ...) [-> R]`: a call through a
    /// pointer with the written signature (a wild target faults at it).
    CallIndirect {
        /// The address called.
        target: Value,
        /// The arguments.
        args: Vec<Value>,
        /// The signature the call assumes (boxed: a rare instruction does
        /// not make every one larger).
        sig: Box<IndirectSig>,
    },
}

/// Largest `stack_alloc` (1 MiB, spec §3.1).
pub const MAX_STACK_ALLOC: u32 = 1 << 20;

/// Most destinations of one `br_table` besides its default (2^20: the
/// lowering indexes Cranelift's jump table with an `i32`).
pub const MAX_BR_TABLE: usize = 1 << 20;

/// The signature written on a `call_indirect`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IndirectSig {
    /// Parameter types.
    pub params: Vec<Type>,
    /// The result type, if any.
    pub ret: Option<Type>,
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
    /// The check's name in check lists (`--checks`, `!site`).
    pub const fn name(self) -> &'static str {
        match self {
            CheckKind::Lifetime => "lifetime",
            CheckKind::Dict => "dict",
            CheckKind::Bounds => "bounds",
            CheckKind::Adstack => "adstack",
            CheckKind::Clobber => "clobber",
        }
    }
    /// The check named `s`.
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
    /// No check.
    pub const EMPTY: Checks = Checks(0);
    /// The checks that concern objects (a `call @obj_new` records its
    /// allocation site when any of them is on).
    pub const OBJECT: Checks = Checks(
        CheckKind::Lifetime.bit()
            | CheckKind::Dict.bit()
            | CheckKind::Bounds.bit()
            | CheckKind::Clobber.bit(),
    );
    /// The set of `k` alone.
    pub const fn only(k: CheckKind) -> Checks {
        Checks(k.bit())
    }
    /// The set with `k` added.
    pub const fn with(self, k: CheckKind) -> Checks {
        Checks(self.0 | k.bit())
    }
    /// Is `k` in the set?
    pub const fn contains(self, k: CheckKind) -> bool {
        self.0 & k.bit() != 0
    }
    /// Adds `k`.
    pub fn insert(&mut self, k: CheckKind) {
        self.0 |= k.bit()
    }
    /// Is the set empty?
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// The checks in both sets.
    pub const fn intersect(self, o: Checks) -> Checks {
        Checks(self.0 & o.0)
    }
    /// The checks in either set.
    pub const fn union(self, o: Checks) -> Checks {
        Checks(self.0 | o.0)
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
    /// `call @obj_dictify`: its site is the free site of the values array
    /// it releases (lifetime).
    Dictify,
}

impl ObjCall {
    /// The built-in named `name`, if it is one guards care about.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "obj_new" => Some(ObjCall::New),
            "obj_free" => Some(ObjCall::Free),
            "obj_dictify" => Some(ObjCall::Dictify),
            _ => None,
        }
    }
    /// The checks that may guard such a call.
    pub const fn applicable(self) -> Checks {
        match self {
            ObjCall::New => Checks::OBJECT,
            ObjCall::Free | ObjCall::Dictify => Checks::only(CheckKind::Lifetime),
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

    /// The callee and arguments of a `call` of an IR function.
    pub fn direct_call(&self) -> Option<(FuncId, &[Value])> {
        match self {
            InstKind::Call {
                callee: Callee::Func(g),
                args,
            } => Some((*g, args)),
            _ => None,
        }
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

    /// Does it call code the module does not see (`call_indirect`): an
    /// analysis must assume it frees, writes and runs anything.
    pub fn calls_unknown_code(&self) -> bool {
        matches!(self, InstKind::CallIndirect { .. })
    }

    /// Is this a `jump`, `brif`, `br_table` or `return`?
    pub fn is_terminator(&self) -> bool {
        self.is_branch() || matches!(self, InstKind::Return { .. })
    }

    /// Is this a `jump`, `brif` or `br_table` (a terminator with targets)?
    pub fn is_branch(&self) -> bool {
        matches!(
            self,
            InstKind::Jump { .. } | InstKind::Brif { .. } | InstKind::BrTable { .. }
        )
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
            InstKind::BrTable { default, table, .. } => {
                f(&mut default.block);
                table.iter_mut().for_each(|d| f(&mut d.block))
            }
            _ => {}
        }
    }

    /// Branch targets of a terminator.
    pub fn successors(&self) -> Vec<&BlockCall> {
        self.branch_targets().collect()
    }

    /// Branch targets of a terminator, in printing order (no allocation;
    /// a `br_table`'s default first, then its table, repeats included).
    pub fn branch_targets(&self) -> impl Iterator<Item = &BlockCall> {
        let (a, b, rest) = match self {
            InstKind::Jump { dest } => (Some(dest), None, &[][..]),
            InstKind::Brif {
                then_dest,
                else_dest,
                ..
            } => (Some(then_dest), Some(else_dest), &[][..]),
            InstKind::BrTable { default, table, .. } => (Some(default), None, table.as_slice()),
            _ => (None, None, &[][..]),
        };
        a.into_iter().chain(b).chain(rest)
    }
}

impl IntCC {
    /// Every condition code.
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
    /// The suffix as printed (`slt`, ...).
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
    /// The condition code of suffix `s`.
    pub fn from_name(s: &str) -> Option<Self> {
        IntCC::ALL.into_iter().find(|c| c.name() == s)
    }
}

impl FloatCC {
    /// Every condition code.
    pub const ALL: [FloatCC; 6] = [
        FloatCC::Eq,
        FloatCC::Ne,
        FloatCC::Lt,
        FloatCC::Le,
        FloatCC::Gt,
        FloatCC::Ge,
    ];
    /// The suffix as printed (`lt`, ...).
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
    /// The condition code of suffix `s`.
    pub fn from_name(s: &str) -> Option<Self> {
        FloatCC::ALL.into_iter().find(|c| c.name() == s)
    }
}

/// One instruction with its result, source location and optional guard site.
#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    /// The operation and its operands.
    pub kind: InstKind,
    /// The value this instruction defines, if it yields one.
    pub result: Option<Value>,
    /// Where the instruction is written (1-based; 0:0 when built by API).
    pub loc: SrcLoc,
    /// Set on guarded instructions (`guard.` prefix in text).
    pub site: Option<SiteId>,
}

#[cfg(test)]
mod size_tests {
    use super::*;

    /// An instruction is 64 bytes (a cache line holds one): the operands
    /// of its widest common forms (`brif`'s two block calls) are a value
    /// and a pointer each, rarer wide operands are boxed. A function of a
    /// million instructions is parsed, instrumented and lowered from
    /// these (docs/PERFORMANCE.md, the compile row).
    #[test]
    fn an_instruction_is_64_bytes() {
        assert_eq!(std::mem::size_of::<BlockCall>(), 16);
        assert_eq!(std::mem::size_of::<InstKind>(), 40);
        assert_eq!(std::mem::size_of::<Inst>(), 64);
    }
}
