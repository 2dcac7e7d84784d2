//! The verifier: structure, SSA definitions and dominance, types (spec §2–§3),
//! calls and branches, the adstack handle rules, guard sites and the layout.
//!
//! [`verify_module`] never panics, whatever the [`Module`] holds: indices that
//! point nowhere (values, blocks, functions, externs, sites) are reported as
//! errors. Every error is collected; they come back sorted by source position.
//!
//! Dominance comes from the function's [`DominatorTree`] (built on its
//! [`ControlFlowGraph`]), queried in O(1), so a function verifies in
//! near-linear time. Nothing here recurses.
//!
//! Decisions the spec leaves open:
//! - Uses inside unreachable blocks must name a defined value, but are not
//!   checked for dominance (like Cranelift). A reachable use of a value
//!   defined only in an unreachable block is an error.
//! - Branches back to the entry block are allowed (it has no params).
//! - `ptr` and `i64` are interchangeable wherever a type must "match" across
//!   an edge: call arguments and results, block arguments, `return`, and
//!   `adstack.push`/`adstack.acc_adj` on an `adstack.i64`. Results of
//!   arithmetic have exactly the first operand's type.
//! - The frame limit error is reported at the `adstack.alloc` that takes the
//!   function's total over [`MAX_ADSTACK_FRAME_BYTES`]; layout errors are
//!   reported at 0:0 (the module keeps no position for its `layout` line);
//!   unused sites at the site's own position.

mod types;

use crate::analysis::dominator_tree::DominatorTree;
use crate::analysis::flowgraph::ControlFlowGraph;
use crate::error::{Diagnostic, VerifyErrors};
use crate::inst::{
    Block, BlockCall, Callee, Checks, ConvOp, FuncId, Inst, InstKind, SiteId, SrcLoc, Value,
};
use crate::module::{Function, Module, ValueDef};
use crate::opcode::Yields;
use crate::types::Type;
use cranelift_entity::EntityRef;
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use guardlift_abi::adstack::{self, AdElem, MAX_ADSTACK_CAPACITY, MAX_ADSTACK_FRAME_BYTES};
use guardlift_abi::layout::{DictLayout, MAX_ATTR_INDEX};
use std::hash::BuildHasher;

/// Verifies a whole module, returning every error found (sorted by line, col).
pub fn verify_module(m: &Module) -> Result<(), VerifyErrors> {
    let mut errs = Vec::new();
    check_layout(m, &mut errs);
    check_names_and_externs(m, &mut errs);
    let mut site_users: HashMap<SiteId, SrcLoc> = HashMap::new();
    for (i, f) in m.functions.iter().enumerate() {
        let before = errs.len();
        let mut v = FnVerifier::new(m, FuncId(i as u32), f, &mut errs, &mut site_users);
        v.run();
        let allocs = v.allocs;
        // Guards need every handle's capacity: one allocation size per
        // handle (a function without `adstack.alloc` has no handle).
        if errs.len() == before && allocs {
            if let Err(d) = crate::analysis::adstack_capacities(f) {
                errs.push(d);
            }
        }
    }
    for (id, site) in &m.sites {
        if !site_users.contains_key(id) {
            errs.push(Diagnostic::new(
                site.loc,
                format!("site {} is not used by any instruction", id.0),
            ));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        errs.sort_by_key(|d| (d.loc.line, d.loc.col));
        Err(VerifyErrors(errs))
    }
}

fn check_layout(m: &Module, errs: &mut Vec<Diagnostic>) {
    if let DictLayout::Custom(o) = m.layout {
        if let Err(e) = DictLayout::custom(o as i64) {
            errs.push(Diagnostic::new(
                SrcLoc::default(),
                format!("invalid layout: {e}"),
            ));
        }
    }
}

fn check_names_and_externs(m: &Module, errs: &mut Vec<Diagnostic>) {
    let mut externs: HashSet<&str> = HashSet::new();
    for e in &m.externs {
        if !externs.insert(e.name.as_str()) {
            errs.push(Diagnostic::new(
                e.loc,
                format!("duplicate extern @{}", e.name),
            ));
        }
        for (i, t) in e.params.iter().enumerate() {
            if t.is_adstack() {
                errs.push(Diagnostic::new(
                    e.loc,
                    format!(
                        "extern @{} cannot take an adstack handle ({t}) as parameter {}",
                        e.name,
                        i + 1
                    ),
                ));
            }
        }
        if let Some(t) = e.ret {
            if t.is_adstack() {
                errs.push(Diagnostic::new(
                    e.loc,
                    format!("extern @{} cannot return an adstack handle ({t})", e.name),
                ));
            }
        }
    }
    let mut funcs: HashSet<&str> = HashSet::new();
    for f in &m.functions {
        if externs.contains(f.name.as_str()) {
            errs.push(Diagnostic::new(
                f.loc,
                format!("function @{} has the same name as an extern", f.name),
            ));
        } else if !funcs.insert(f.name.as_str()) {
            errs.push(Diagnostic::new(
                f.loc,
                format!("duplicate function @{}", f.name),
            ));
        }
    }
}

/// Where a value is actually defined.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Def {
    Param(u32),
    BlockParam(u32, u32),
    Inst(u32, u32),
}

impl Def {
    fn matches(self, d: ValueDef) -> bool {
        match (self, d) {
            (Def::Param(i), ValueDef::Param(j)) => i == j,
            (Def::BlockParam(b, i), ValueDef::BlockParam(Block(c), j)) => b == c && i == j,
            (Def::Inst(b, _), ValueDef::Inst(Block(c))) => b == c,
            _ => false,
        }
    }
}

struct FnVerifier<'a> {
    m: &'a Module,
    fid: FuncId,
    f: &'a Function,
    errs: &'a mut Vec<Diagnostic>,
    site_users: &'a mut HashMap<SiteId, SrcLoc>,
    /// Actual definition of each value (first one if defined twice).
    defs: Vec<Option<Def>>,
    /// Reachability and dominance of the blocks.
    domtree: DominatorTree,
    /// Running total of adstack bytes.
    frame_bytes: u64,
    frame_reported: bool,
    /// Whether the function has an `adstack.alloc`.
    allocs: bool,
    /// The operands of the instruction being checked (a reused buffer).
    ops: Vec<Value>,
}

impl<'a> FnVerifier<'a> {
    fn new(
        m: &'a Module,
        fid: FuncId,
        f: &'a Function,
        errs: &'a mut Vec<Diagnostic>,
        site_users: &'a mut HashMap<SiteId, SrcLoc>,
    ) -> Self {
        FnVerifier {
            m,
            fid,
            f,
            errs,
            site_users,
            defs: vec![None; f.values.len()],
            domtree: DominatorTree::default(),
            frame_bytes: 0,
            frame_reported: false,
            allocs: false,
            ops: Vec::new(),
        }
    }

    /// An error at `loc`; one without a position (a module built through
    /// the API that set none) names its function instead.
    fn err(&mut self, loc: SrcLoc, msg: String) {
        let msg = match loc == SrcLoc::default() {
            true => format!("{msg} (in @{})", self.f.name),
            false => msg,
        };
        self.errs.push(Diagnostic::new(loc, msg));
    }

    // ---- naming helpers -------------------------------------------------

    /// `%name` (or `%N` for a nameless value, `#N` for an invalid index).
    fn vname(&self, v: Value) -> String {
        match self.f.values.get(v.index()) {
            Some(d) if !d.name.is_empty() => format!("%{}", d.name),
            Some(_) => format!("%{}", v.0),
            None => format!("#{}", v.0),
        }
    }

    fn ty(&self, v: Value) -> Option<Type> {
        self.f.values.get(v.index()).map(|d| d.ty)
    }

    /// `%a (i64)`.
    fn desc(&self, v: Value) -> String {
        match self.ty(v) {
            Some(t) => format!("{} ({t})", self.vname(v)),
            None => self.vname(v),
        }
    }

    /// "`label`" for a block.
    fn bname(&self, b: u32) -> String {
        match self.f.blocks.get(b as usize) {
            Some(bd) => format!("`{}`", bd.name),
            None => format!("#{b}"),
        }
    }

    fn def_loc(&self, d: Def) -> SrcLoc {
        match d {
            Def::Param(_) => self.f.loc,
            Def::BlockParam(b, _) => self.f.blocks[b as usize].loc,
            Def::Inst(b, i) => self.f.blocks[b as usize].insts[i as usize].loc,
        }
    }

    /// Name, param types and return type of a callee (None if out of range).
    fn callee_sig(&self, c: Callee) -> Option<(String, Vec<Option<Type>>, Option<Type>)> {
        match c {
            Callee::Func(FuncId(i)) => {
                let g = self.m.functions.get(i as usize)?;
                let params = g
                    .params
                    .iter()
                    .map(|p| g.values.get(p.index()).map(|d| d.ty))
                    .collect();
                Some((format!("@{}", g.name), params, g.ret))
            }
            Callee::Extern(e) => {
                let x = self.m.externs.get(e.index())?;
                Some((
                    format!("@{}", x.name),
                    x.params.iter().map(|&t| Some(t)).collect(),
                    x.ret,
                ))
            }
        }
    }

    // ---- driver -----------------------------------------------------------

    fn run(&mut self) {
        let f = self.f;
        if let Some(t) = f.ret {
            if t.is_adstack() {
                self.err(
                    f.loc,
                    format!("function @{} cannot return an adstack handle ({t})", f.name),
                );
            }
        }
        if f.blocks.is_empty() {
            self.err(f.loc, format!("function @{} has no blocks", f.name));
        }
        self.collect_defs();
        self.check_structure();
        self.domtree = DominatorTree::with_cfg(&ControlFlowGraph::with_function(f));
        for (bi, bd) in f.blocks.iter().enumerate() {
            let reachable = self.domtree.is_reachable(Block(bi as u32));
            for (ii, inst) in bd.insts.iter().enumerate() {
                self.check_inst(bi as u32, ii as u32, inst, reachable);
            }
        }
    }

    /// Records where each value is really defined, and compares with the value table.
    fn collect_defs(&mut self) {
        let f = self.f;
        for (i, &p) in f.params.iter().enumerate() {
            self.define(p, Def::Param(i as u32), f.loc, "function parameter");
            if let Some(t) = self.ty(p) {
                if t.is_adstack() {
                    let n = self.vname(p);
                    self.err(
                        f.loc,
                        format!("adstack handle {n} cannot be a function parameter"),
                    );
                }
            }
        }
        for (bi, bd) in f.blocks.iter().enumerate() {
            for (pi, &p) in bd.params.iter().enumerate() {
                self.define(
                    p,
                    Def::BlockParam(bi as u32, pi as u32),
                    bd.loc,
                    "block parameter",
                );
            }
            for (ii, inst) in bd.insts.iter().enumerate() {
                if let Some(r) = inst.result {
                    self.define(r, Def::Inst(bi as u32, ii as u32), inst.loc, "result");
                }
            }
        }
        for (vi, vd) in f.values.iter().enumerate() {
            let v = Value(vi as u32);
            match self.defs[vi] {
                None => {
                    let n = self.vname(v);
                    self.err(f.loc, format!("value {n} is never defined"));
                }
                Some(d) if !d.matches(vd.def) => {
                    let n = self.vname(v);
                    let loc = self.def_loc(d);
                    let recorded = match vd.def {
                        ValueDef::Param(i) => format!("function parameter {i}"),
                        ValueDef::BlockParam(b, i) => {
                            format!("parameter {i} of block {}", self.bname(b.0))
                        }
                        ValueDef::Inst(b) => {
                            format!("an instruction of block {}", self.bname(b.0))
                        }
                    };
                    self.err(
                        loc,
                        format!(
                            "value {n} is recorded as defined by {recorded}, but is defined here"
                        ),
                    );
                }
                Some(_) => {}
            }
        }
    }

    fn define(&mut self, v: Value, d: Def, loc: SrcLoc, what: &str) {
        match self.defs.get(v.index()) {
            None => self.err(loc, format!("{what} refers to invalid value #{}", v.0)),
            Some(Some(prev)) => {
                let n = self.vname(v);
                let at = self.def_loc(*prev);
                self.err(
                    loc,
                    format!("value {n} is defined more than once (first at {at})"),
                );
            }
            Some(None) => self.defs[v.index()] = Some(d),
        }
    }

    fn check_structure(&mut self) {
        let f = self.f;
        // Block indices hashed by name (4 bytes an entry, not a name's 16).
        let hasher = foldhash::fast::RandomState::default();
        let mut names: hashbrown::HashTable<u32> =
            hashbrown::HashTable::with_capacity(f.blocks.len());
        for (bi, bd) in f.blocks.iter().enumerate() {
            let hash = hasher.hash_one(bd.name.as_str());
            let same = |&b: &u32| f.blocks[b as usize].name == bd.name;
            if names.find(hash, same).is_some() {
                self.err(bd.loc, format!("duplicate block name `{}`", bd.name));
            } else {
                names.insert_unique(hash, bi as u32, |&b| {
                    hasher.hash_one(f.blocks[b as usize].name.as_str())
                });
            }
            if bi == 0 && !bd.params.is_empty() {
                self.err(
                    bd.loc,
                    format!("entry block `{}` cannot have parameters", bd.name),
                );
            }
            match bd.insts.last() {
                None => self.err(
                    bd.loc,
                    format!("block `{}` is empty (it needs a terminator)", bd.name),
                ),
                Some(last) if !last.kind.is_terminator() => self.err(
                    bd.loc,
                    format!("block `{}` does not end with a terminator", bd.name),
                ),
                Some(_) => {}
            }
            let n = bd.insts.len();
            for inst in bd.insts.iter().take(n.saturating_sub(1)) {
                if inst.kind.is_terminator() {
                    self.err(
                        inst.loc,
                        format!(
                            "terminator `{}` must be the last instruction of block `{}`",
                            inst.kind.opcode(),
                            bd.name
                        ),
                    );
                }
            }
        }
    }

    fn def_dominates(&self, d: Def, b: u32, i: u32) -> bool {
        match d {
            Def::Param(_) => true,
            Def::BlockParam(db, _) => db == b || self.domtree.dominates(Block(db), Block(b)),
            Def::Inst(db, di) => {
                if db == b {
                    di < i
                } else {
                    self.domtree.dominates(Block(db), Block(b))
                }
            }
        }
    }

    // ---- instructions -----------------------------------------------------

    fn check_inst(&mut self, b: u32, i: u32, inst: &Inst, reachable: bool) {
        let loc = inst.loc;
        // Uses: existence and dominance. One operand buffer for the whole
        // function, not an allocation per instruction.
        let mut ops = std::mem::take(&mut self.ops);
        ops.clear();
        inst.kind.for_each_operand(|v| ops.push(v));
        for (k, &v) in ops.iter().enumerate() {
            if ops[..k].contains(&v) {
                continue; // one report per value and instruction
            }
            match self.defs.get(v.index()) {
                None => self.err(loc, format!("use of invalid value #{}", v.0)),
                Some(None) => {
                    let n = self.vname(v);
                    self.err(loc, format!("use of undefined value {n}"));
                }
                Some(Some(d)) => {
                    let d = *d;
                    if reachable && !self.def_dominates(d, b, i) {
                        let n = self.vname(v);
                        let at = self.def_loc(d);
                        self.err(
                            loc,
                            format!("use of {n} is not dominated by its definition at {at}"),
                        );
                    }
                }
            }
        }
        self.check_result_presence(inst);
        if !self.check_adstack_operands(inst, &ops) {
            self.check_types(inst);
        }
        self.ops = ops;
        self.check_site(inst);
    }

    fn check_result_presence(&mut self, inst: &Inst) {
        let op = inst.kind.opcode();
        let yields = match (&inst.kind, inst.kind.op().yields()) {
            (InstKind::Call { callee, .. }, _) => match self.callee_sig(*callee) {
                Some((name, _, None)) => {
                    if let Some(r) = inst.result {
                        let n = self.vname(r);
                        self.err(
                            inst.loc,
                            format!("call to {name} returns no value, but defines {n}"),
                        );
                    }
                    return;
                }
                _ => return,
            },
            (InstKind::CallIndirect { sig, .. }, _) => sig.ret.is_some(),
            (_, y) => y == Yields::Always,
        };
        match (yields, inst.result) {
            (true, None) => self.err(inst.loc, format!("`{op}` must define a result")),
            (false, Some(r)) => {
                let n = self.vname(r);
                self.err(
                    inst.loc,
                    format!("`{op}` does not produce a value, but defines {n}"),
                );
            }
            _ => {}
        }
    }

    /// Adstack handles used where no handle may go. Returns true if any was found.
    fn check_adstack_operands(&mut self, inst: &Inst, ops: &[Value]) -> bool {
        use InstKind::*;
        match &inst.kind {
            Iconst { .. }
            | Fconst { .. }
            | AdAlloc { .. }
            | Jump { .. }
            | Brif { .. }
            | BrTable { .. }
            | AdPush { .. }
            | AdPop { .. }
            | AdTop { .. }
            | AdTopAdj { .. }
            | AdAccAdj { .. }
            | AdLen { .. } => return false,
            _ => {}
        }
        let mut bad = false;
        for (k, &v) in ops.iter().enumerate() {
            if ops[..k].contains(&v) || !self.ty(v).is_some_and(Type::is_adstack) {
                continue;
            }
            bad = true;
            let what = match &inst.kind {
                Call { .. } => "be a call argument".to_string(),
                Return { .. } => "be returned".to_string(),
                Store { value, .. } if *value == v => "be stored to memory".to_string(),
                Select { .. } => "be a select operand".to_string(),
                k => format!("be an operand of `{}`", k.opcode()),
            };
            let n = self.vname(v);
            self.err(inst.loc, format!("adstack handle {n} cannot {what}"));
        }
        bad
    }

    /// Result `r` of `inst` must have type `want`.
    fn expect_result(&mut self, inst: &Inst, want: Type) {
        let Some(r) = inst.result else { return };
        let Some(t) = self.ty(r) else { return };
        if t != want {
            let n = self.vname(r);
            let op = inst.kind.opcode();
            self.err(
                inst.loc,
                format!("result {n} of {op} has type {t}, expected {want}"),
            );
        }
    }

    /// `v` must be an i64 or ptr.
    fn need_word(&mut self, inst: &Inst, v: Value, role: &str) {
        if let Some(t) = self.ty(v) {
            if !t.is_word() {
                let op = inst.kind.opcode();
                let d = self.desc(v);
                self.err(inst.loc, format!("{op} {role} must be i64 or ptr, got {d}"));
            }
        }
    }

    fn check_attr_index(&mut self, inst: &Inst, index: u32) {
        if index > MAX_ATTR_INDEX {
            self.err(
                inst.loc,
                format!("attribute index {index} is out of range (at most {MAX_ATTR_INDEX})"),
            );
        }
    }

    /// The element type of a stack operand, or an error.
    fn stack_elem(&mut self, inst: &Inst, s: Value) -> Option<Type> {
        let t = self.ty(s)?;
        match t.adstack_elem() {
            Some(e) => Some(Type::of_elem(e)),
            None => {
                let op = inst.kind.opcode();
                let d = self.desc(s);
                self.err(inst.loc, format!("{op} needs an adstack handle, got {d}"));
                None
            }
        }
    }

    fn check_block_call(&mut self, inst: &Inst, bc: &BlockCall) {
        let Some(target) = self.f.blocks.get(bc.block.index()) else {
            self.err(inst.loc, format!("branch to unknown block #{}", bc.block.0));
            return;
        };
        // The block's name is formatted only for an error: branches are a
        // large share of a big function's instructions.
        if bc.block.0 == 0 {
            let bn = self.bname(bc.block.0);
            self.err(inst.loc, format!("cannot branch to the entry block {bn}"));
        }
        if target.params.len() != bc.args.len() {
            let bn = self.bname(bc.block.0);
            self.err(
                inst.loc,
                format!(
                    "block {bn} expects {} arguments, got {}",
                    target.params.len(),
                    bc.args.len()
                ),
            );
            return;
        }
        for (k, (&p, &a)) in target.params.iter().zip(&bc.args).enumerate() {
            if let (Some(pt), Some(at)) = (self.ty(p), self.ty(a)) {
                if !at.compatible(pt) {
                    let (bn, d) = (self.bname(bc.block.0), self.desc(a));
                    self.err(
                        inst.loc,
                        format!("argument {} to block {bn} must be {pt}, got {d}", k + 1),
                    );
                }
            }
        }
    }

    fn check_site(&mut self, inst: &Inst) {
        let Some(id) = inst.site else { return };
        let loc = inst.loc;
        let op = inst.kind.opcode();
        let applicable = self.m.applicable_checks(&inst.kind);
        if applicable.is_empty() {
            let what = match inst.kind {
                InstKind::Call { .. } => " (only calls of @obj_new and @obj_free can be guarded)",
                _ => "",
            };
            self.err(
                loc,
                format!("`{op}` cannot be guarded (site {}){what}", id.0),
            );
        } else {
            match self.m.sites.get(&id) {
                None => self.err(loc, format!("unknown guard site {}", id.0)),
                Some(s) => {
                    if s.op != op {
                        self.err(loc, format!("site {} is for `{}`, not `{op}`", id.0, s.op));
                    }
                    if s.checks.is_empty() {
                        self.err(loc, format!("site {} has no checks", id.0));
                    } else if !s.checks.is_subset(applicable) {
                        let extra: Checks = s
                            .checks
                            .iter()
                            .filter(|k| !applicable.contains(*k))
                            .collect();
                        self.err(
                            loc,
                            format!(
                                "site {}: check(s) `{extra}` do not apply to `{op}` (it takes: {applicable})",
                                id.0
                            ),
                        );
                    }
                    if s.func != self.fid {
                        let owner = match self.m.functions.get(s.func.index()) {
                            Some(g) => format!("@{}", g.name),
                            None => format!("unknown function #{}", s.func.0),
                        };
                        let fname = &self.f.name;
                        self.err(
                            loc,
                            format!("site {} belongs to {owner}, not @{fname}", id.0),
                        );
                    }
                }
            }
        }
        if let Some(first) = self.site_users.get(&id).copied() {
            self.err(loc, format!("site {} is already used at {first}", id.0));
        } else {
            self.site_users.insert(id, loc);
        }
    }
}
