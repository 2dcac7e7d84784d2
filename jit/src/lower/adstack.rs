//! Adstack instructions (`ad.alloc`, `ad.push`, `ad.pop`, `ad.top`,
//! `ad.top_adj`, `ad.acc_adj`, `ad.len`): a frame slot holding the count
//! and the (primal, adjoint) entries, laid out by
//! [`guardlift_runtime::adstack`]. The overflow and underflow checks are in
//! `guards`.

use super::abi::elem_type;
use super::func::{internal, stack_mem};
use super::guards::Recover;
use super::FnLower;
use crate::error::JitError;
use cranelift_codegen::ir::{self as cl, types, InstBuilder, StackSlotData, StackSlotKind};
use cranelift_module::Module as ClModule;
use guardlift_ir::{InstKind, SiteId, Value};
use guardlift_runtime::adstack::{self, AdElem};

impl<M: ClModule + ?Sized> FnLower<'_, '_, M> {
    /// Lowers adstack op `kind`; `site` is the adstack check's, if it guards it.
    pub(super) fn adstack_op(
        &mut self,
        site: Option<SiteId>,
        r: Option<Value>,
        kind: &InstKind,
    ) -> Result<(), JitError> {
        use InstKind::*;
        match kind {
            AdAlloc { elem, capacity } => {
                let h = self.ad_alloc(*elem, *capacity)?;
                self.def(r, h);
            }
            AdPush { stack, value } => self.ad_push(site, *stack, *value)?,
            AdPop { stack } => {
                let h = self.val(*stack)?;
                let n = self.load_count(h);
                let (join, _) = self.join_block(site.is_some(), None);
                self.underflow_check(site, *stack, n, join, Recover::Nothing)?;
                let n1 = self.b.ins().iadd_imm_s(n, -1);
                self.store_count(h, n1);
                self.rejoin(join, None);
            }
            AdTop { stack } | AdTopAdj { stack } => {
                let adjoint = matches!(kind, AdTopAdj { .. });
                let v = self.ad_top(site, *stack, adjoint)?;
                self.def(r, v);
            }
            AdAccAdj { stack, delta } => self.ad_acc_adj(site, *stack, *delta)?,
            AdLen { stack } => {
                let h = self.val(*stack)?;
                let n = self.load_count(h);
                self.def(r, n);
            }
            _ => return Err(internal(self.fname, "not an adstack op")),
        }
        Ok(())
    }

    /// `ad.alloc`: an aligned frame slot with a zero count; its address.
    fn ad_alloc(&mut self, elem: AdElem, capacity: u32) -> Result<cl::Value, JitError> {
        let bytes = u32::try_from(adstack::buffer_bytes(elem, capacity))
            .map_err(|_| internal(self.fname, "adstack buffer too large"))?;
        let align_shift = adstack::ADSTACK_ALIGN.trailing_zeros() as u8;
        let ss = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            bytes,
            align_shift,
        ));
        let h = self.b.ins().stack_addr(types::I64, ss, 0);
        let zero = self.iconst(types::I64, 0);
        self.store_count(h, zero);
        Ok(h)
    }

    /// `ad.push`: the entry `(value, 0)` at the count, then count + 1.
    fn ad_push(
        &mut self,
        site: Option<SiteId>,
        stack: Value,
        value: Value,
    ) -> Result<(), JitError> {
        let e = self.stack_elem(stack)?;
        let (h, x) = (self.val(stack)?, self.val(value)?);
        let n = self.load_count(h);
        let (join, _) = self.join_block(site.is_some(), None);
        if let (Some(id), Some(j)) = (site, join) {
            self.overflow_check(id, stack, n, j)?;
        }
        let base = self.entry_base(h, n, e);
        let (po, ao) = Self::push_offsets(e);
        self.b.ins().store(stack_mem(), x, base, po);
        let z = self.zero(elem_type(e));
        self.b.ins().store(stack_mem(), z, base, ao);
        let n1 = self.b.ins().iadd_imm_u(n, 1);
        self.store_count(h, n1);
        self.rejoin(join, None);
        Ok(())
    }

    /// `ad.top` / `ad.top_adj` (`adjoint`): the top entry's primal or adjoint.
    fn ad_top(
        &mut self,
        site: Option<SiteId>,
        stack: Value,
        adjoint: bool,
    ) -> Result<cl::Value, JitError> {
        let e = self.stack_elem(stack)?;
        let et = elem_type(e);
        let h = self.val(stack)?;
        let n = self.load_count(h);
        let (join, param) = self.join_block(site.is_some(), Some(et));
        self.underflow_check(site, stack, n, join, Recover::Zero(et))?;
        let base = self.entry_base(h, n, e);
        let (po, ao) = Self::top_offsets(e);
        let off = if adjoint { ao } else { po };
        let v = self.b.ins().load(et, stack_mem(), base, off);
        self.rejoin(join, Some(v));
        Ok(param.unwrap_or(v))
    }

    /// `ad.acc_adj`: adds `delta` to the top entry's adjoint.
    fn ad_acc_adj(
        &mut self,
        site: Option<SiteId>,
        stack: Value,
        delta: Value,
    ) -> Result<(), JitError> {
        let e = self.stack_elem(stack)?;
        let et = elem_type(e);
        let (h, d) = (self.val(stack)?, self.val(delta)?);
        let n = self.load_count(h);
        let (join, _) = self.join_block(site.is_some(), None);
        self.underflow_check(site, stack, n, join, Recover::Nothing)?;
        let base = self.entry_base(h, n, e);
        let (_, ao) = Self::top_offsets(e);
        let adj = self.b.ins().load(et, stack_mem(), base, ao);
        let sum = match e {
            AdElem::F32 | AdElem::F64 => self.b.ins().fadd(adj, d),
            AdElem::I64 => self.b.ins().iadd(adj, d),
        };
        self.b.ins().store(stack_mem(), sum, base, ao);
        self.rejoin(join, None);
        Ok(())
    }

    /// `handle + n * entry_bytes`, the base from which entry `n - 1` is at
    /// `primal_offset(e, 0) - entry_bytes(e)` (see [`Self::top_offsets`]).
    fn entry_base(&mut self, handle: cl::Value, n: cl::Value, e: AdElem) -> cl::Value {
        let scaled = self.b.ins().imul_imm_u(n, adstack::entry_bytes(e) as i64);
        self.b.ins().iadd(handle, scaled)
    }

    /// Offsets (primal, adjoint) of entry `n` from `entry_base(n)`.
    fn push_offsets(e: AdElem) -> (i32, i32) {
        (
            adstack::primal_offset(e, 0) as i32,
            adstack::adjoint_offset(e, 0) as i32,
        )
    }

    /// Offsets (primal, adjoint) of entry `n - 1` from `entry_base(n)`.
    fn top_offsets(e: AdElem) -> (i32, i32) {
        let eb = adstack::entry_bytes(e) as i32;
        (
            adstack::primal_offset(e, 0) as i32 - eb,
            adstack::adjoint_offset(e, 0) as i32 - eb,
        )
    }

    pub(super) fn load_count(&mut self, handle: cl::Value) -> cl::Value {
        self.b.ins().load(
            types::I64,
            stack_mem(),
            handle,
            adstack::ADSTACK_COUNT_OFFSET as i32,
        )
    }

    fn store_count(&mut self, handle: cl::Value, n: cl::Value) {
        self.b
            .ins()
            .store(stack_mem(), n, handle, adstack::ADSTACK_COUNT_OFFSET as i32);
    }
}
