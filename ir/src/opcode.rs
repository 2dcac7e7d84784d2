//! The opcode table: one row per instruction form ([`InstKind`] variant),
//! from which the parser, the verifier and the instrumentation pass derive
//! whether an instruction yields a value, whether it may carry `guard.` and
//! which checks may guard it (spec §6).
//!
//! The operands of each form are listed once too, in `visit_operands!`
//! (instantiated for shared and mutable access:
//! [`InstKind::for_each_operand`], [`InstKind::for_each_operand_mut`]).

use crate::inst::{CheckKind, Checks, InstKind, Value};

/// Whether an instruction form defines a value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Yields {
    /// Always one result (`%r = iadd ...`).
    Always,
    /// Never a result (`store`, branches, ...).
    Never,
    /// A result when the callee returns one (`call`).
    Maybe,
}

/// The checks an opcode row lists, as a const [`Checks`].
const fn checks(list: &[CheckKind]) -> Checks {
    let mut c = Checks::EMPTY;
    let mut i = 0;
    while i < list.len() {
        c = c.with(list[i]);
        i += 1;
    }
    c
}

macro_rules! opcodes {
    ($( $(#[$doc:meta])* $op:ident $name:literal $yields:ident guard=$guard:literal [$($check:ident)*]; )*) => {
        /// An instruction form: one per [`InstKind`] variant, of the same name.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub enum Opcode {
            $( $(#[$doc])* $op, )*
        }

        impl Opcode {
            /// Every opcode, in table order.
            pub const ALL: &'static [Opcode] = &[$(Opcode::$op),*];

            /// The opcode's name in the text format; for the families
            /// (binary, unary, conversion) the family's name, the printed
            /// opcode being the member's ([`InstKind::opcode`]).
            pub const fn name(self) -> &'static str {
                match self { $(Opcode::$op => $name,)* }
            }

            /// Whether the instruction defines a value.
            pub const fn yields(self) -> Yields {
                match self { $(Opcode::$op => Yields::$yields,)* }
            }

            /// May the instruction be written with `guard.`?
            pub const fn guardable(self) -> bool {
                match self { $(Opcode::$op => $guard,)* }
            }

            /// The checks that may guard the instruction (spec §6); a
            /// `call`'s depend on its callee
            /// ([`crate::Module::applicable_checks`]).
            pub const fn checks(self) -> Checks {
                match self { $(Opcode::$op => checks(&[$(CheckKind::$check),*]),)* }
            }
        }

        impl InstKind {
            /// The instruction's form.
            pub const fn op(&self) -> Opcode {
                match self { $(InstKind::$op { .. } => Opcode::$op,)* }
            }
        }
    };
}

opcodes! {
    /// `iconst.T IMM`.
    Iconst "iconst" Always guard=false [];
    /// `fconst.T IMM`.
    Fconst "fconst" Always guard=false [];
    /// `iadd`, `fmul`, ... ([`crate::BinOp`]).
    Binary "binary" Always guard=false [];
    /// `fneg`, `fabs`, `fsqrt`.
    Unary "unary" Always guard=false [];
    /// `icmp.CC`.
    Icmp "icmp" Always guard=false [];
    /// `fcmp.CC`.
    Fcmp "fcmp" Always guard=false [];
    /// `select`.
    Select "select" Always guard=false [];
    /// `sext.T`, `bitcast.T`, ... ([`crate::ConvOp`]).
    Conv "conversion" Always guard=false [];
    /// `load.T`.
    Load "load" Always guard=true [Lifetime Bounds];
    /// `store`.
    Store "store" Never guard=true [Lifetime Bounds Clobber];
    /// `call @f(...)`.
    Call "call" Maybe guard=true [];
    /// `jump`.
    Jump "jump" Never guard=false [];
    /// `brif`.
    Brif "brif" Never guard=false [];
    /// `br_table`.
    BrTable "br_table" Never guard=false [];
    /// `return`.
    Return "return" Never guard=false [];
    /// `dict_slot.load`.
    DictSlotLoad "dict_slot.load" Always guard=true [Lifetime Dict];
    /// `dict_slot.store`.
    DictSlotStore "dict_slot.store" Never guard=true [Lifetime Dict];
    /// `load_attr`.
    LoadAttr "load_attr" Always guard=true [Lifetime Dict Bounds];
    /// `store_attr`.
    StoreAttr "store_attr" Never guard=true [Lifetime Dict Bounds];
    /// `adstack.alloc.E N`.
    AdAlloc "adstack.alloc" Always guard=false [];
    /// `adstack.push`.
    AdPush "adstack.push" Never guard=true [Adstack];
    /// `adstack.pop`.
    AdPop "adstack.pop" Never guard=true [Adstack];
    /// `adstack.top`.
    AdTop "adstack.top" Always guard=true [Adstack];
    /// `adstack.top_adj`.
    AdTopAdj "adstack.top_adj" Always guard=true [Adstack];
    /// `adstack.acc_adj`.
    AdAccAdj "adstack.acc_adj" Never guard=true [Adstack];
    /// `adstack.len`.
    AdLen "adstack.len" Always guard=false [];
    /// `guard.watch` (only ever written guarded; it has no site).
    Watch "watch" Never guard=true [];
    /// `stack_alloc N`.
    StackAlloc "stack_alloc" Always guard=false [];
    /// `func_addr @f`.
    FuncAddr "func_addr" Always guard=false [];
    /// `call_indirect %f(...) : SIG`.
    CallIndirect "call_indirect" Maybe guard=false [];
}

/// The one list of every form's value operands, in printing order (branch
/// arguments included): `visit_operands!(kind, f, iter)` calls `f` on a
/// reference to each, `kind` being `&InstKind` (with `iter`) or
/// `&mut InstKind` (with `iter_mut`).
macro_rules! visit_operands {
    ($kind:expr, $f:ident, $iter:ident) => {{
        use $crate::inst::InstKind::*;
        match $kind {
            Iconst { .. }
            | Fconst { .. }
            | AdAlloc { .. }
            | StackAlloc { .. }
            | FuncAddr { .. } => {}
            CallIndirect { target, args, .. } => {
                $f(target);
                args.$iter().for_each(&mut $f)
            }
            Binary { a, b, .. } | Icmp { a, b, .. } | Fcmp { a, b, .. } => {
                $f(a);
                $f(b)
            }
            Unary { a, .. } | Conv { a, .. } => $f(a),
            Select { cond, a, b } => {
                $f(cond);
                $f(a);
                $f(b)
            }
            Load { addr, .. } => $f(addr),
            Store { value, addr, .. } => {
                $f(value);
                $f(addr)
            }
            Call { args, .. } => args.$iter().for_each(&mut $f),
            Jump { dest } => dest.args.$iter().for_each(&mut $f),
            Brif {
                cond,
                then_dest,
                else_dest,
            } => {
                $f(cond);
                then_dest.args.$iter().for_each(&mut $f);
                else_dest.args.$iter().for_each(&mut $f)
            }
            BrTable {
                index,
                default,
                table,
            } => {
                $f(index);
                default.args.$iter().for_each(&mut $f);
                table.$iter().for_each(|d| d.args.$iter().for_each(&mut $f))
            }
            Return { value } => {
                if let Some(v) = value {
                    $f(v)
                }
            }
            DictSlotLoad { obj } | LoadAttr { obj, .. } | Watch { obj } => $f(obj),
            DictSlotStore { obj, word: b } | StoreAttr { obj, value: b, .. } => {
                $f(obj);
                $f(b)
            }
            AdPush { stack, value: b } | AdAccAdj { stack, delta: b } => {
                $f(stack);
                $f(b)
            }
            AdPop { stack } | AdTop { stack } | AdTopAdj { stack } | AdLen { stack } => $f(stack),
        }
    }};
}

/// The pattern of the scalar forms — constants, arithmetic, comparisons,
/// `select`, conversions: values in, a value out, no memory, no control
/// flow, never guarded — written once for every `match` on
/// [`InstKind`] that treats them as one family (the verifier's type rules,
/// the lowering).
#[macro_export]
macro_rules! scalar_inst {
    () => {
        $crate::InstKind::Iconst { .. }
            | $crate::InstKind::Fconst { .. }
            | $crate::InstKind::Binary { .. }
            | $crate::InstKind::Unary { .. }
            | $crate::InstKind::Icmp { .. }
            | $crate::InstKind::Fcmp { .. }
            | $crate::InstKind::Select { .. }
            | $crate::InstKind::Conv { .. }
    };
}

/// The operand visitors, instantiated from `visit_operands!` (here, next
/// to the list, so that `inst` does not depend on this module).
impl InstKind {
    /// Every value operand, in printing order (branch args included).
    pub fn operands(&self) -> Vec<Value> {
        let mut v = Vec::new();
        self.for_each_operand(|x| v.push(x));
        v
    }

    /// Calls `f` on every value operand, in printing order (branch args
    /// included; the list is `visit_operands!` below).
    pub fn for_each_operand(&self, mut f: impl FnMut(Value)) {
        let mut g = |v: &Value| f(*v);
        visit_operands!(self, g, iter)
    }

    /// Calls `f` on every value operand, mutably (same order as
    /// [`InstKind::for_each_operand`]).
    pub fn for_each_operand_mut(&mut self, mut f: impl FnMut(&mut Value)) {
        visit_operands!(self, f, iter_mut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_drives_guardability_and_checks() {
        let guardable: Vec<&str> = Opcode::ALL
            .iter()
            .filter(|o| o.guardable())
            .map(|o| o.name())
            .collect();
        assert_eq!(
            guardable.join(" "),
            "load store call dict_slot.load dict_slot.store load_attr store_attr \
             adstack.push adstack.pop adstack.top adstack.top_adj adstack.acc_adj watch"
        );
        // Every op with checks is guardable; `call` and `watch` have none of their own.
        for o in Opcode::ALL {
            assert!(o.checks().is_empty() || o.guardable(), "{o:?}");
        }
        assert_eq!(
            Opcode::Store.checks().to_string(),
            "lifetime bounds clobber"
        );
        assert_eq!(Opcode::Call.yields(), Yields::Maybe);
    }
}
