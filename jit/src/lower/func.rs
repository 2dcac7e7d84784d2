//! The per-function lowerer's frame: block order and the IR-value map
//! ([`FnLower::run`]), small builders (constants, join blocks, branch
//! targets) and calls (IR functions, host externs, built-ins, runtime entry
//! points and stubs).

use super::abi::{cl_type, entry_signature};
use super::{FnLower, RtRef, Stub};
use crate::error::JitError;
use cranelift_codegen::ir::{
    self as cl, types, BlockArg, ExtFuncData, ExternalName, InstBuilder, MemFlagsData, Signature,
    SourceLoc, UserExternalName,
};
use cranelift_module::{FuncId as ClFuncId, Module as ClModule};
use guardlift_abi::adstack::AdElem;
use guardlift_abi::{self as abi, Builtin, Entry};
use guardlift_ir::{Block, SiteId, Type, Value};

/// Flags of IR `load`/`store` and of object-model accesses: may trap, may be unaligned.
pub(super) fn mem() -> MemFlagsData {
    MemFlagsData::new()
}

/// Flags of adstack accesses: our own aligned stack slot.
pub(super) fn stack_mem() -> MemFlagsData {
    MemFlagsData::trusted()
}

/// The 8-byte, 8-aligned frame slot kept in `slot`, made on first use.
pub(super) fn slot8(
    b: &mut cranelift_frontend::FunctionBuilder<'_>,
    slot: &mut Option<cl::StackSlot>,
) -> cl::StackSlot {
    *slot.get_or_insert_with(|| {
        let data = cl::StackSlotData::new(cl::StackSlotKind::ExplicitSlot, 8, 3);
        b.create_sized_stack_slot(data)
    })
}

/// The zero [`FnLower::cold_args`] loads: in read-only memory, never
/// written, so every load of it gives 0; Cranelift cannot know that.
static COLD_ZERO: u32 = 0;

/// An internal invariant failure while lowering function `fname`.
pub(super) fn internal(fname: &str, what: impl std::fmt::Display) -> JitError {
    JitError::Codegen(format!("@{fname}: {what}"))
}

/// Has `f` a guarded adstack instruction other than `adstack.alloc` and
/// `adstack.len` (the only ones
/// [`guardlift_ir::elide::redundant_adstack_checks`] can elide)?
fn has_guarded_adstack_check(f: &guardlift_ir::Function) -> bool {
    use guardlift_ir::InstKind::{AdAccAdj, AdPop, AdPush, AdTop, AdTopAdj};
    f.blocks.iter().flat_map(|b| &b.insts).any(|i| {
        i.site.is_some()
            && matches!(
                i.kind,
                AdTop { .. } | AdTopAdj { .. } | AdAccAdj { .. } | AdPop { .. } | AdPush { .. }
            )
    })
}

/// The edges into each IR block from the reachable blocks (`rpo`): how
/// many (both edges of a `brif` to one block count), and the source of the
/// last one (the only one where there is one). Read from the function's
/// control-flow graph (its analysis context), keeping reachable sources.
struct IncomingEdges {
    count: Vec<u32>,
    pred: Vec<u32>,
}

impl IncomingEdges {
    fn of(
        cfg: &guardlift_ir::analysis::flowgraph::ControlFlowGraph,
        rpo: &[u32],
        blocks: usize,
    ) -> Self {
        let mut reachable = vec![false; blocks];
        for &b in rpo {
            reachable[b as usize] = true;
        }
        let mut count = vec![0u32; blocks];
        let mut pred = vec![0u32; blocks];
        for b in 0..blocks {
            for p in cfg.preds(guardlift_ir::Block(b as u32)) {
                if reachable[p.0 as usize] {
                    count[b] += 1;
                    pred[b] = p.0;
                }
            }
        }
        IncomingEdges { count, pred }
    }
}

impl<M: ClModule + ?Sized> FnLower<'_, '_, M> {
    pub(super) fn run(&mut self) -> Result<(), JitError> {
        let f = self.f;
        if f.blocks.is_empty() {
            return Err(internal(self.fname, "function has no blocks"));
        }
        let rpo = self.lw.analyses[self.id].rpo().to_vec();
        // The elision analysis only ever marks guarded adstack pushes, reads
        // and pops: a function without one (most big functions) skips it.
        if has_guarded_adstack_check(f) {
            self.elided = (self.lw.analyses[self.id])
                .redundant_adstack_checks(&self.caps)
                .clone();
        }
        if self.lw.stack_redzones {
            self.make_stack_area_slots();
        }
        if self.lw.shadow.is_some() {
            let an = &self.lw.analyses[self.id];
            if f.blocks.len() >= 2 {
                // With the clean loops: their clean copies' ranges too.
                let clean = an.clean_loops(self.lw.ir, self.lw.host);
                self.ranges.all = guardlift_ir::looprange::LoopRanges::of_in_with(
                    f,
                    self.lw.ir,
                    (an.cfg(), an.domtree()),
                    &clean,
                );
            }
            self.raw =
                guardlift_ir::rawgroup::RawGroups::of_excluding(f, self.lw.ir, &self.ranges.all);
        }
        self.attr = guardlift_ir::attrgroup::AttrGroups::of_for(f, self.lw.ir, self.lw.host);
        let edges = IncomingEdges::of(self.lw.analyses[self.id].cfg(), &rpo, f.blocks.len());
        // Does any branch target the IR entry block? Then the Cranelift entry
        // (which holds the function parameters) must be a separate block.
        let entry_targeted = edges.count[0] > 0;
        for &bi in &rpo {
            let blk = self.b.create_block();
            for &p in &f.blocks[bi as usize].params {
                let t = cl_type(f.ty(p));
                let v = self.b.append_block_param(blk, t);
                self.vals[p.0 as usize] = Some(v);
            }
            self.blocks[bi as usize] = Some(blk);
        }
        let ir_entry = self.blocks[0].expect("entry is reachable");
        let cl_entry = if entry_targeted {
            self.b.create_block()
        } else {
            ir_entry
        };
        self.b.append_block_params_for_function_params(cl_entry);
        let params: Vec<cl::Value> = self.b.block_params(cl_entry).to_vec();
        for (&p, v) in f.params.iter().zip(params) {
            self.vals[p.0 as usize] = Some(v);
        }
        self.b.switch_to_block(cl_entry);
        self.attr_groups_init();
        self.plan_vouching();
        self.init_watch_caches(&rpo);
        self.plan_versions();
        self.plan_loop_ranges();
        self.plan_forwarding(&rpo, &edges);
        if entry_targeted {
            self.b.ins().jump(ir_entry, &[]);
        }
        for &bi in &rpo {
            let blk = self.blocks[bi as usize].expect("reachable block");
            if blk != cl_entry {
                self.b.switch_to_block(blk);
            }
            self.alias_objects(Some(bi))?;
            self.lower_block(bi)?;
        }
        self.alias_objects(None)?;
        self.lower_versions(&rpo)?;
        self.b.seal_all_blocks();
        Ok(())
    }

    /// Marks the blocks whose arguments are forwarded ([`FnLower::forward`])
    /// and removes their Cranelift params: a block other than the entry
    /// with one incoming edge, outside every versioned loop and not
    /// entered from one (the copies of a versioned loop and their exit
    /// blocks pass block arguments; `version`) or from a block with a
    /// clean exit twin (`cleanexit`). Its one predecessor comes
    /// first in `rpo` and dominates it, so the branch's arguments are
    /// defined wherever the block's params are used. Cranelift would
    /// remove such params itself (`remove_constant_phis`), but only after
    /// building and solving a table of every block param: in a function of
    /// 10^6 instructions that table outgrows the caches (measured: its
    /// Cranelift phase 12–14 % faster at 10^6 instructions, the same at 10^4).
    fn plan_forwarding(&mut self, rpo: &[u32], edges: &IncomingEdges) {
        let f = self.f;
        self.forward = vec![false; f.blocks.len()];
        // A block entered from a block with a clean exit twin is entered
        // from the twin too (`cleanexit`), with the twin's values.
        let twinned: Vec<u32> = (self.versions.iter())
            .flat_map(|v| v.exits.iter().map(|&(e, _, _)| e))
            .collect();
        for &bi in rpo {
            let b = bi as usize;
            if bi == 0
                || edges.count[b] != 1
                || self.version_of_block.contains_key(&bi)
                || self.version_of_block.contains_key(&edges.pred[b])
                || twinned.contains(&edges.pred[b])
            {
                continue;
            }
            for &p in &f.blocks[b].params {
                if let Some(v) = self.vals[p.0 as usize].take() {
                    self.b.func.dfg.remove_block_param(v);
                }
            }
            self.forward[b] = true;
        }
    }

    /// Lowers the instructions of IR block `bi` at the builder's position.
    pub(super) fn lower_block(&mut self, bi: u32) -> Result<(), JitError> {
        let bd = &self.f.blocks[bi as usize];
        // Entering the block defines its params again.
        for &p in &bd.params {
            self.vouch_reset(p);
        }
        for (ii, inst) in bd.insts.iter().enumerate() {
            self.b.set_srcloc(SourceLoc::new(inst.loc.line));
            self.elide_check = self.elided.contains(&(bi, ii as u32));
            self.at = (bi, ii as u32);
            if self.tail_call(inst)? {
                return Ok(());
            }
            self.inst(inst)?;
            self.own_after(inst);
        }
        if !bd.insts.last().is_some_and(|i| i.kind.is_terminator()) {
            return Err(internal(
                self.fname,
                format!("block `{}` does not end in a terminator", bd.name),
            ));
        }
        Ok(())
    }

    /// In a later piece of a function compiled in pieces
    /// ([`crate::pieces`]), its exit call of the next piece: lowered as a
    /// `return_call` (both `tail`), which ends the block (the `return`
    /// after it is not lowered). False for any other instruction.
    fn tail_call(&mut self, inst: &guardlift_ir::Inst) -> Result<bool, JitError> {
        let Some((g, args)) = inst.kind.direct_call() else {
            return Ok(false);
        };
        if !(self.lw.is_later_piece(g)
            && self.lw.is_later_piece(guardlift_ir::FuncId(self.id as u32)))
        {
            return Ok(false);
        }
        let argv = (args.iter())
            .map(|&a| self.val(a))
            .collect::<Result<Vec<_>, _>>()?;
        let id = self
            .lw
            .funcs
            .get(g.0 as usize)
            .copied()
            .ok_or_else(|| internal(self.fname, "tail call of an unknown piece"))?;
        let fr = self.fref(id);
        self.b.ins().return_call(fr, &argv);
        Ok(true)
    }

    /// `addr + offset` (the bytes a raw access touches start there).
    pub(super) fn effective_addr(&mut self, addr: cl::Value, offset: i32) -> cl::Value {
        if offset == 0 {
            addr
        } else {
            self.b.ins().iadd_imm_s(addr, offset as i64)
        }
    }

    /// Calls entry `e` with the runtime pointer, `args` and `id`'s
    /// runtime-global site (a guarded `obj_new` / `obj_free`).
    pub(super) fn call_at_site(
        &mut self,
        e: Entry,
        id: SiteId,
        args: &[cl::Value],
    ) -> Result<Option<cl::Value>, JitError> {
        let site = self.site(id)?;
        let mut full = vec![self.rt()?];
        full.extend_from_slice(args);
        full.push(self.iconst(types::I32, site as i64));
        self.call_entry(e, &full)
    }

    // ---- small helpers ----

    pub(super) fn val(&self, v: Value) -> Result<cl::Value, JitError> {
        self.vals
            .get(v.0 as usize)
            .copied()
            .flatten()
            .ok_or_else(|| internal(self.fname, format!("value %{} used before definition", v.0)))
    }

    pub(super) fn ty(&self, v: Value) -> Type {
        self.f.ty(v)
    }

    pub(super) fn def(&mut self, r: Option<Value>, v: cl::Value) {
        if let Some(r) = r {
            self.vals[r.0 as usize] = Some(v);
            self.vouch_reset(r);
        }
    }

    pub(super) fn iconst(&mut self, ty: cl::Type, imm: i64) -> cl::Value {
        // Narrow constants are stored zero-extended.
        let bits = ty.bits();
        let imm = if bits < 64 {
            (imm as u64 & ((1u64 << bits) - 1)) as i64
        } else {
            imm
        };
        self.b.ins().iconst(ty, imm)
    }

    pub(super) fn zero(&mut self, ty: cl::Type) -> cl::Value {
        match ty {
            types::F32 => self.b.ins().f32const(0.0f32),
            types::F64 => self.b.ins().f64const(0.0f64),
            _ => self.iconst(ty, 0),
        }
    }

    pub(super) fn site(&self, id: SiteId) -> Result<u32, JitError> {
        self.lw
            .site_base
            .checked_add(id.0)
            .ok_or_else(|| internal(self.fname, "site id overflows u32"))
    }

    pub(super) fn cap(&self, stack: Value) -> Result<u32, JitError> {
        self.caps
            .get(&stack)
            .copied()
            .ok_or_else(|| internal(self.fname, format!("no adstack capacity for %{}", stack.0)))
    }

    pub(super) fn stack_elem(&self, stack: Value) -> Result<AdElem, JitError> {
        self.ty(stack)
            .adstack_elem()
            .ok_or_else(|| internal(self.fname, format!("%{} is not an adstack handle", stack.0)))
    }

    /// A FuncRef for a declared Cranelift function.
    pub(super) fn fref(&mut self, id: ClFuncId) -> cl::FuncRef {
        if let Some(&r) = self.frefs.get(&id) {
            return r;
        }
        let decl = self.m.declarations().get_function_decl(id);
        let colocated = self.lw.colocated_calls && decl.linkage.is_final();
        let sig = decl.signature.clone();
        let sig = self.b.import_signature(sig);
        let name = self
            .b
            .func
            .declare_imported_user_function(UserExternalName {
                namespace: 0,
                index: id.as_u32(),
            });
        let r = self.b.import_function(ExtFuncData {
            name: ExternalName::user(name),
            signature: sig,
            colocated,
            patchable: false,
        });
        self.frefs.insert(id, r);
        r
    }

    pub(super) fn import(
        &mut self,
        symbol: &str,
        sig: &Signature,
    ) -> Result<cl::FuncRef, JitError> {
        let id = self.lw.import(self.m, symbol, sig)?;
        Ok(self.fref(id))
    }

    /// The runtime pointer, materialized at the point of use (cold or slow paths).
    pub(super) fn rt(&mut self) -> Result<cl::Value, JitError> {
        match self.lw.rt {
            RtRef::Const(p) => Ok(self.b.ins().iconst(types::I64, p as i64)),
            RtRef::Symbol => {
                let gv = match self.rt_gv {
                    Some(g) => g,
                    None => {
                        let d = self.lw.runtime_data(self.m)?;
                        let g = super::far_data(self.m, d, self.b.func);
                        self.rt_gv = Some(g);
                        g
                    }
                };
                Ok(self.b.ins().symbol_value(types::I64, gv))
            }
        }
    }

    /// Calls `st`'s stub with `args` (no runtime pointer); its result, if any.
    pub(super) fn call_stub(
        &mut self,
        st: Stub,
        args: &[cl::Value],
    ) -> Result<Option<cl::Value>, JitError> {
        let args = self.opaque_args(args);
        self.call_stub_with(st, &args)
    }

    /// [`Self::call_stub`] from the cold block of an op whose hot path
    /// keeps using the values passed (a report's object and word, an
    /// attribute slow path's object): in checked code, each is passed as a
    /// copy made in this block ([`Self::cold_args`]).
    pub(super) fn call_stub_cold(
        &mut self,
        st: Stub,
        args: &[cl::Value],
    ) -> Result<Option<cl::Value>, JitError> {
        let args = match self.opaque_zero {
            Some(_) => self.opaque_args(args),
            None => self.cold_args(args),
        };
        self.call_stub_with(st, &args)
    }

    fn call_stub_with(
        &mut self,
        st: Stub,
        args: &[cl::Value],
    ) -> Result<Option<cl::Value>, JitError> {
        let id = self.lw.stub(self.m, st)?;
        let r = self.fref(id);
        let Stub::Check(e) = st else {
            let call = self.b.ins().call(r, args);
            return Ok(self.b.inst_results(call).first().copied());
        };
        // A check stub stores its verdict in the frame's verdict slot.
        let slot = slot8(&mut self.b, &mut self.verdict_slot);
        let out = self.b.ins().stack_addr(types::I64, slot, 0);
        let out = self.opaque_args(&[out])[0];
        let mut full = args.to_vec();
        full.push(out);
        self.b.ins().call(r, &full);
        let sig = entry_signature(self.lw.call_conv, e);
        Ok(match sig.returns.first() {
            Some(ret) => Some(
                self.b
                    .ins()
                    .load(ret.value_type, MemFlagsData::trusted(), out, 0),
            ),
            None => None,
        })
    }

    pub(super) fn call_entry(
        &mut self,
        e: Entry,
        args: &[cl::Value],
    ) -> Result<Option<cl::Value>, JitError> {
        let sig = entry_signature(self.lw.call_conv, e);
        let r = self.import(e.symbol(), &sig)?;
        let call = self.b.ins().call(r, args);
        Ok(self.b.inst_results(call).first().copied())
    }

    pub(super) fn call_builtin(
        &mut self,
        b: &'static Builtin,
        args: &[cl::Value],
    ) -> Result<Option<cl::Value>, JitError> {
        let sig = entry_signature(self.lw.call_conv, b.entry);
        let r = self.import(b.symbol, &sig)?;
        let mut full = Vec::with_capacity(args.len() + 1);
        if b.needs_rt {
            full.push(self.rt()?);
        }
        full.extend_from_slice(args);
        let call = self.b.ins().call(r, &full);
        Ok(self.b.inst_results(call).first().copied())
    }

    /// Calls a built-in slow path through its stub (no runtime pointer here).
    pub(super) fn slow_path(
        &mut self,
        name: &str,
        args: &[cl::Value],
    ) -> Result<Option<cl::Value>, JitError> {
        let b = abi::builtin(name)
            .ok_or_else(|| internal(self.fname, format!("runtime has no built-in `{name}`")))?;
        self.call_stub_cold(Stub::Slow(b.entry), args)
    }

    /// Is `a` a constant Cranelift elaborates anywhere (`iconst`,
    /// `stack_addr`)?
    fn is_constant(&self, a: cl::Value) -> bool {
        let dfg = &self.b.func.dfg;
        dfg.value_def(a).inst().is_some_and(|i| {
            matches!(
                dfg.insts[i].opcode(),
                cl::Opcode::Iconst | cl::Opcode::StackAddr
            )
        })
    }

    /// `args` for a runtime call of a clean copy or exit twin: each
    /// constant (`iconst`, `stack_addr`) plus the copy's opaque zero.
    /// Cranelift hoists a constant out of the loop it is used in; a
    /// constant both copies use is elaborated twice, and the second copy
    /// is not rematerialized at its use, so the cold calls' site ids,
    /// indices and verdict slot address stayed in registers across the
    /// clean loop (the method loop's clean copy spilled its own values
    /// for them: docs/PERFORMANCE.md). On the zero, a loop value, they
    /// are computed in the cold block that calls.
    fn opaque_args(&mut self, args: &[cl::Value]) -> Vec<cl::Value> {
        let Some(z) = self.opaque_zero else {
            return args.to_vec();
        };
        args.iter()
            .map(|&a| {
                let constant = self.is_constant(a);
                let ty = self.b.func.dfg.value_type(a);
                if !constant || !ty.is_int() {
                    return a;
                }
                let z = match ty {
                    types::I64 => z,
                    t => self.b.ins().ireduce(t, z),
                };
                self.b.ins().iadd(a, z)
            })
            .collect()
    }

    /// `args` for a runtime call in a cold block of checked code: each
    /// i64 that is not a constant, plus a zero loaded in this block
    /// ([`COLD_ZERO`]). A value passed as it is gets the argument
    /// register as a fixed constraint at the call, and regalloc2 then
    /// splits its live range around every such call: the hot path copied
    /// the object of each attribute op into `%rsi` or `%rdi` and back
    /// (docs/CODEGEN.md, "Cold calls take copies"). The copy, not the
    /// object, meets the constraint. Object code (the runtime a symbol,
    /// [`RtRef::Symbol`]) passes `args` as they are: the zero's address is
    /// this process's.
    fn cold_args(&mut self, args: &[cl::Value]) -> Vec<cl::Value> {
        if !matches!(self.lw.rt, RtRef::Const(_)) {
            return args.to_vec();
        }
        let mut zero = None;
        args.iter()
            .map(|&a| {
                if self.is_constant(a) || self.b.func.dfg.value_type(a) != types::I64 {
                    return a;
                }
                let z = *zero.get_or_insert_with(|| {
                    // A 32-bit load: x64 cannot fold it into a 64-bit
                    // `add` (whose destructive form would tie the object
                    // to the argument register again), so the copy is a
                    // `lea`. Not `readonly`: Cranelift keeps the load here.
                    let at = std::ptr::addr_of!(COLD_ZERO) as i64;
                    let at = self.b.ins().iconst(types::I64, at);
                    let flags = MemFlagsData::new().with_notrap().with_aligned();
                    self.b.ins().uload32(flags, at, 0)
                });
                self.b.ins().iadd(a, z)
            })
            .collect()
    }

    /// Zero-extended raw bits of `v` (of IR type `t`) as an i64.
    pub(super) fn bits_u64(&mut self, v: cl::Value, t: Type) -> cl::Value {
        match cl_type(t) {
            types::I8 | types::I32 => self.b.ins().uextend(types::I64, v),
            types::F32 => {
                let i = self.b.ins().bitcast(types::I32, mem(), v);
                self.b.ins().uextend(types::I64, i)
            }
            types::F64 => self.b.ins().bitcast(types::I64, mem(), v),
            _ => v,
        }
    }

    /// Creates the join block of a guarded op (with a param of `ty` if the op yields one).
    pub(super) fn join_block(
        &mut self,
        guarded: bool,
        ty: Option<cl::Type>,
    ) -> (Option<cl::Block>, Option<cl::Value>) {
        if !guarded {
            return (None, None);
        }
        let j = self.b.create_block();
        let p = ty.map(|t| self.b.append_block_param(j, t));
        (Some(j), p)
    }

    /// Ends the passing path of a guarded op: jump to the join with `result`, continue there.
    pub(super) fn rejoin(&mut self, join: Option<cl::Block>, result: Option<cl::Value>) {
        if let Some(j) = join {
            let args: Vec<BlockArg> = result.into_iter().map(BlockArg::Value).collect();
            self.b.ins().jump(j, &args);
            self.b.switch_to_block(j);
        }
    }

    pub(super) fn block_args(&self, args: &[Value]) -> Result<Vec<BlockArg>, JitError> {
        args.iter()
            .map(|&a| self.val(a).map(BlockArg::Value))
            .collect()
    }

    pub(super) fn target(&self, b: Block) -> Result<cl::Block, JitError> {
        if let Some(d) = self.entry_redirect(b.0) {
            return Ok(d);
        }
        self.blocks
            .get(b.0 as usize)
            .copied()
            .flatten()
            .ok_or_else(|| internal(self.fname, format!("branch to unknown block #{}", b.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::version::tests::lower_first;
    use super::has_guarded_adstack_check;
    use guardlift_instrument::CheckSet;
    use guardlift_ir::analysis::adstack_capacities;
    use guardlift_ir::elide::redundant_adstack_checks;
    use guardlift_ir::InstKind::{AdAccAdj, AdPop, AdPush, AdTop, AdTopAdj};

    /// The lowering skips the elision analysis for functions the predicate
    /// rejects: sound only if every claim of the analysis is a guarded
    /// instruction the predicate looks for. Checked on ir's elision cases
    /// (every one claims something or is a function with adstack guards).
    #[test]
    fn the_elision_skip_loses_no_claim() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ir/tests/elide");
        let mut claimed = 0;
        for entry in std::fs::read_dir(&dir).expect("ir/tests/elide") {
            let path = entry.expect("entry").path();
            if path.extension().is_none_or(|e| e != "glir") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("readable");
            let m = guardlift_ir::parse_and_verify(&text).expect("valid case");
            for f in &m.functions {
                let caps = adstack_capacities(f).expect("caps");
                let claims = redundant_adstack_checks(f, &caps);
                assert!(
                    claims.is_empty() || has_guarded_adstack_check(f),
                    "{}",
                    path.display()
                );
                for (b, i) in claims {
                    let inst = &f.blocks[b as usize].insts[i as usize];
                    assert!(inst.site.is_some(), "{}", path.display());
                    assert!(matches!(
                        inst.kind,
                        AdTop { .. }
                            | AdTopAdj { .. }
                            | AdAccAdj { .. }
                            | AdPop { .. }
                            | AdPush { .. }
                    ));
                    claimed += 1;
                }
            }
        }
        assert!(claimed > 0, "no case claims anything");
        // A function without adstack guards (a big function's usual shape)
        // is skipped.
        let m = guardlift_ir::parse_and_verify(
            "fn @f(%x: i64) -> i64 {\nentry:\n    %y = iadd %x, %x\n    return %y\n}\n",
        )
        .expect("valid");
        assert!(!has_guarded_adstack_check(&m.functions[0]));
    }

    /// A report's and an attribute slow path's cold call in checked code
    /// (`--checks dict`, lowered without a shadow: no loop is versioned) takes, for each value the
    /// hot path keeps (the object, the word), a copy made in the cold
    /// block itself (`FnLower::cold_args`): a fixed argument register then
    /// constrains the copy, and register allocation no longer moves the
    /// object in and out of `%rsi`/`%rdi` around every attribute op.
    #[test]
    fn cold_calls_of_checked_code_take_copies_made_in_their_block() {
        use cranelift_codegen::ir::{InstructionData, Opcode};
        let text = "fn @acc(%self: ptr, %k: i64) -> i64 {\nentry:\n    %z = iconst.i64 0\n    %one = iconst.i64 1\n    jump loop(%z)\n\
            loop(%i: i64):\n    %d = icmp.sge %i, %k\n    brif %d, out, body\n\
            body:\n    %s = load_attr %self, 0\n    %t = load_attr %self, 1\n    %t2 = iadd %t, %s\n    store_attr %self, 1, %t2\n    %i2 = iadd %i, %one\n    jump loop(%i2)\n\
            out:\n    %r = load_attr %self, 1\n    return %r\n}\n";
        let checks = CheckSet {
            dict: true,
            ..CheckSet::NONE
        };
        let f = lower_first(text, checks, None);
        let param = f.dfg.block_params(f.layout.entry_block().expect("entry"))[0];
        let (mut calls, mut copies) = (0, 0);
        for b in f.layout.blocks() {
            for i in f.layout.block_insts(b) {
                let InstructionData::Call { args, .. } = &f.dfg.insts[i] else {
                    continue;
                };
                calls += 1;
                for a in args.as_slice(&f.dfg.value_lists) {
                    assert_ne!(*a, param, "a cold call takes the object itself");
                    let def = f.dfg.value_def(*a).inst();
                    if def.is_some_and(|d| f.dfg.insts[d].opcode() == Opcode::Iadd) {
                        let d = def.expect("an iadd");
                        assert_eq!(
                            f.layout.inst_block(d),
                            Some(b),
                            "the copy is made in the calling block"
                        );
                        copies += 1;
                    }
                }
            }
        }
        // Four attribute ops, each with a report and a slow path: eight
        // calls, each with a copy of the object (a report's word too).
        assert_eq!(calls, 8, "{}", f.display());
        assert!(copies >= 8, "{copies} copies\n{}", f.display());
    }
}
