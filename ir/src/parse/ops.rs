//! Opcode words: `iadd`, `load.i64`, `adstack.alloc.f64`, ... to [`Op`]
//! (the opcode with what its suffix says), and [`Op::opcode`], its row of
//! the opcode table ([`crate::opcode`]).

use super::*;

#[derive(Copy, Clone, Debug, PartialEq)]
pub(super) enum Op {
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
    BrTable,
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
    StackAlloc,
    FuncAddr,
    CallIndirect,
}

impl Op {
    /// The form of the instruction (its row of the opcode table).
    pub(super) fn opcode(self) -> Opcode {
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
            Op::BrTable => Opcode::BrTable,
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
            Op::StackAlloc => Opcode::StackAlloc,
            Op::FuncAddr => Opcode::FuncAddr,
            Op::CallIndirect => Opcode::CallIndirect,
        }
    }
}

/// `a, b and c`: the guardable opcodes of the table, for the error message.
pub(super) fn guardable_list() -> String {
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

pub(super) const SUFFIXED: [&str; 14] = [
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

pub(super) fn parse_opcode(w: &str, loc: SrcLoc) -> PResult<Op> {
    // The arithmetic of spec §3.1, by the operations' own name lists.
    if let Some(op) = BinOp::from_name(w) {
        return Ok(Op::Bin(op));
    }
    if let Some(op) = UnOp::from_name(w) {
        return Ok(Op::Un(op));
    }
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
        "call_indirect" => Op::CallIndirect,
        "func_addr" => Op::FuncAddr,
        "stack_alloc" => Op::StackAlloc,
        "jump" => Op::Jump,
        "brif" => Op::Brif,
        "br_table" => Op::BrTable,
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

pub(super) fn parse_suffixed(base: &str, sfx: &str, loc: SrcLoc) -> PResult<Op> {
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
