//! Printer: the canonical text form of a module (what `guardlift fmt` shows).
//!
//! The output parses back to an equal module (up to source positions) and
//! printing is idempotent. Names are kept as written; a name that is invalid
//! or duplicated (possible only in modules built or rewritten by code) is
//! replaced by a fresh one so the text still parses.

use crate::inst::{Block, BlockCall, Callee, Checks, Inst, InstKind, SrcLoc, Value};
use crate::module::{Function, Module};
use crate::parse::{is_block_name, is_func_name, is_value_name, sext_imm};
use crate::types::Type;
use cranelift_entity::EntityRef;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// Prints `m` in the canonical text form.
pub fn print_module(m: &Module) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "layout {}", m.layout);
    let global_names = unique_names(
        m.functions
            .iter()
            .map(|f| f.name.as_str())
            .chain(m.externs.iter().map(|e| e.name.as_str())),
        is_func_name,
        "_",
        "f",
    );
    let (fnames, enames) = global_names.split_at(m.functions.len().min(global_names.len()));
    if !m.externs.is_empty() {
        out.push('\n');
        for (e, name) in m.externs.iter().zip(enames) {
            let params: Vec<String> = e.params.iter().map(Type::to_string).collect();
            let _ = write!(out, "extern fn @{name}({})", params.join(", "));
            if let Some(r) = e.ret {
                let _ = write!(out, " -> {r}");
            }
            out.push('\n');
        }
    }
    for (f, name) in m.functions.iter().zip(fnames) {
        out.push('\n');
        let p = FnPrinter {
            m,
            f,
            fnames,
            enames,
            vnames: unique_names(
                f.values.iter().map(|v| v.name.as_str()),
                is_value_name,
                ".",
                "v",
            ),
            bnames: unique_names(
                f.blocks.iter().map(|b| b.name.as_str()),
                is_block_name,
                "_",
                "block",
            ),
        };
        p.function(name, &mut out);
    }
    out
}

/// Prints one float constant so that it parses back bit-exactly.
pub fn format_float(ty: Type, v: f64) -> String {
    if v.is_nan() {
        "nan".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.to_string()
    } else if ty == Type::F32 {
        format!("{:?}", v as f32)
    } else {
        format!("{v:?}")
    }
}

/// Keeps each valid name the first time it appears; renames invalid or
/// repeated ones to `BASE{sep}N`, never clashing with any original name.
fn unique_names<'s>(
    names: impl Iterator<Item = &'s str> + Clone,
    valid: fn(&str) -> bool,
    sep: &str,
    fallback: &str,
) -> Vec<String> {
    let taken: HashSet<&str> = names.clone().filter(|n| valid(n)).collect();
    let mut used: HashSet<String> = HashSet::new();
    let mut counters: HashMap<String, u64> = HashMap::new();
    let mut out = Vec::new();
    for n in names {
        if valid(n) && !used.contains(n) {
            used.insert(n.to_string());
            out.push(n.to_string());
            continue;
        }
        let base = if valid(n) { n } else { fallback };
        let k = counters.entry(base.to_string()).or_insert(0);
        loop {
            *k += 1;
            let cand = format!("{base}{sep}{k}");
            if !taken.contains(cand.as_str()) && !used.contains(&cand) {
                used.insert(cand.clone());
                out.push(cand);
                break;
            }
        }
    }
    out
}

struct FnPrinter<'m> {
    m: &'m Module,
    f: &'m Function,
    fnames: &'m [String],
    enames: &'m [String],
    vnames: Vec<String>,
    bnames: Vec<String>,
}

impl FnPrinter<'_> {
    fn v(&self, v: Value) -> String {
        match self.vnames.get(v.index()) {
            Some(n) => format!("%{n}"),
            None => format!("%<invalid value {}>", v.0),
        }
    }

    fn vlist(&self, vs: &[Value]) -> String {
        vs.iter().map(|&v| self.v(v)).collect::<Vec<_>>().join(", ")
    }

    fn typed(&self, v: Value) -> String {
        let ty = self
            .f
            .values
            .get(v.index())
            .map_or("<invalid>".to_string(), |d| d.ty.to_string());
        format!("{}: {ty}", self.v(v))
    }

    fn block(&self, b: Block) -> String {
        match self.bnames.get(b.index()) {
            Some(n) => n.clone(),
            None => format!("<invalid block {}>", b.0),
        }
    }

    fn block_call(&self, bc: &BlockCall) -> String {
        if bc.args.is_empty() {
            self.block(bc.block)
        } else {
            format!("{}({})", self.block(bc.block), self.vlist(&bc.args))
        }
    }

    fn function(&self, name: &str, out: &mut String) {
        let params: Vec<String> = self.f.params.iter().map(|&p| self.typed(p)).collect();
        let _ = write!(out, "fn @{name}({})", params.join(", "));
        if let Some(r) = self.f.ret {
            let _ = write!(out, " -> {r}");
        }
        out.push_str(" {\n");
        for (i, b) in self.f.blocks.iter().enumerate() {
            out.push_str(&self.block(Block(i as u32)));
            if !b.params.is_empty() {
                let ps: Vec<String> = b.params.iter().map(|&p| self.typed(p)).collect();
                let _ = write!(out, "({})", ps.join(", "));
            }
            out.push_str(":\n");
            for inst in &b.insts {
                out.push_str("    ");
                self.inst(inst, out);
                out.push('\n');
            }
        }
        out.push_str("}\n");
    }

    fn inst(&self, inst: &Inst, out: &mut String) {
        use InstKind::*;
        if let Some(r) = inst.result {
            let _ = write!(out, "{} = ", self.v(r));
        }
        // Faithful: a guard the verifier rejects (a guarded call of a
        // function that is not an object call) prints as written, so that
        // printing never turns an invalid module into a valid one.
        if inst.site.is_some() || matches!(inst.kind, Watch { .. }) {
            out.push_str("guard.");
        }
        let op = inst.kind.opcode();
        let off = |o: i32| {
            if o == 0 {
                String::new()
            } else {
                format!(", {o}")
            }
        };
        let text = match &inst.kind {
            Iconst { ty, imm } => {
                let imm = if ty.is_int() {
                    sext_imm(*imm, ty.bits())
                } else {
                    *imm
                };
                format!("iconst.{ty} {imm}")
            }
            Fconst { ty, value } => format!("fconst.{ty} {}", format_float(*ty, *value)),
            Binary { a, b, .. } => format!("{op} {}, {}", self.v(*a), self.v(*b)),
            Unary { a, .. } => format!("{op} {}", self.v(*a)),
            Icmp { cc, a, b } => format!("icmp.{} {}, {}", cc.name(), self.v(*a), self.v(*b)),
            Fcmp { cc, a, b } => format!("fcmp.{} {}, {}", cc.name(), self.v(*a), self.v(*b)),
            Select { cond, a, b } => {
                format!("select {}, {}, {}", self.v(*cond), self.v(*a), self.v(*b))
            }
            Conv { ty, a, .. } => format!("{op}.{ty} {}", self.v(*a)),
            Load { ty, addr, offset } => format!("load.{ty} {}{}", self.v(*addr), off(*offset)),
            Store {
                value,
                addr,
                offset,
            } => {
                format!(
                    "store {}, {}{}",
                    self.v(*value),
                    self.v(*addr),
                    off(*offset)
                )
            }
            Call { callee, args } => {
                let name = match callee {
                    Callee::Func(id) => self.fnames.get(id.index()),
                    Callee::Extern(id) => self.enames.get(id.index()),
                };
                let name = name.map_or_else(|| "<invalid callee>".to_string(), Clone::clone);
                format!("call @{name}({})", self.vlist(args))
            }
            FuncAddr { callee } => {
                let name = match callee {
                    Callee::Func(id) => self.fnames.get(id.index()),
                    Callee::Extern(id) => self.enames.get(id.index()),
                };
                let name = name.map_or_else(|| "<invalid callee>".to_string(), Clone::clone);
                format!("func_addr @{name}")
            }
            CallIndirect { target, args, sig } => {
                let params: Vec<String> = sig.params.iter().map(|t| t.to_string()).collect();
                let ret = sig.ret.map_or_else(String::new, |t| format!(" -> {t}"));
                format!(
                    "call_indirect {}({}) : ({}){ret}",
                    self.v(*target),
                    self.vlist(args),
                    params.join(", ")
                )
            }
            StackAlloc { size } => format!("stack_alloc {size}"),
            Jump { dest } => format!("jump {}", self.block_call(dest)),
            Brif {
                cond,
                then_dest,
                else_dest,
            } => format!(
                "brif {}, {}, {}",
                self.v(*cond),
                self.block_call(then_dest),
                self.block_call(else_dest)
            ),
            BrTable {
                index,
                default,
                table,
            } => {
                let mut t = format!(
                    "br_table {}, {}, [",
                    self.v(*index),
                    self.block_call(default)
                );
                for (i, d) in table.iter().enumerate() {
                    if i > 0 {
                        t.push_str(", ");
                    }
                    t.push_str(&self.block_call(d));
                }
                t.push(']');
                t
            }
            Return { value: Some(v) } => format!("return {}", self.v(*v)),
            Return { value: None } => "return".to_string(),
            DictSlotLoad { obj } => format!("{op} {}", self.v(*obj)),
            DictSlotStore { obj, word } => format!("{op} {}, {}", self.v(*obj), self.v(*word)),
            LoadAttr { obj, index } => format!("{op} {}, {index}", self.v(*obj)),
            StoreAttr { obj, index, value } => {
                format!("{op} {}, {index}, {}", self.v(*obj), self.v(*value))
            }
            AdAlloc { elem, capacity } => format!("adstack.alloc.{} {capacity}", elem.name()),
            AdPush { stack, value } => format!("{op} {}, {}", self.v(*stack), self.v(*value)),
            AdAccAdj { stack, delta } => format!("{op} {}, {}", self.v(*stack), self.v(*delta)),
            AdPop { stack } | AdTop { stack } | AdTopAdj { stack } | AdLen { stack } => {
                format!("{op} {}", self.v(*stack))
            }
            Watch { obj } => format!("{op} {}", self.v(*obj)),
        };
        out.push_str(&text);
        if let Some(id) = inst.site {
            let (loc, checks): (SrcLoc, Checks) = self
                .m
                .site(id)
                .map_or((inst.loc, Checks::EMPTY), |s| (s.loc, s.checks));
            let _ = write!(out, " !site({}, {}:{}", id.0, loc.line, loc.col);
            if !checks.is_empty() {
                let _ = write!(out, ", {checks}");
            }
            out.push(')');
        }
    }
}
