//! The dispatch block of a versioned loop (`version`): every entry from
//! outside tests the loop's objects and branches to the clean copy's
//! header when all pass, to the checked copy's otherwise, each through a
//! block of its own. When the loop's fixed attributes cover every object
//! the shadow tests would test, the fixed-attributes test alone (the entry
//! cache, the runtime's memo, `attr_fixed` on a miss) stands for them:
//! `attr_fixed` holds only for a live object of the model heap, whose slot
//! the heap watches from `obj_new` to the free. Otherwise the shadow tests,
//! then the fixed-attributes test when there is one.

use super::func::internal;
use super::FnLower;
use crate::error::JitError;
use cranelift_codegen::ir::{self as cl, BlockArg, InstBuilder, SourceLoc};
use cranelift_module::Module as ClModule;
use guardlift_ir::Value;

impl<M: ClModule + ?Sized> FnLower<'_, '_, M> {
    /// The dispatch block of loop `k`: the objects' shadow tests, then the
    /// clean header when all pass, the checked one otherwise.
    pub(super) fn fill_dispatch(&mut self, k: usize) -> Result<(), JitError> {
        let (header, dispatch) = (self.versions[k].lp.header, self.versions[k].dispatch);
        let checked = self.blocks[header as usize]
            .ok_or_else(|| internal(self.fname, "loop header not lowered"))?;
        let clean = self.versions[k]
            .clean
            .iter()
            .find(|&&(b, _)| b == header)
            .map(|&(_, c)| c)
            .ok_or_else(|| internal(self.fname, "versioned loop without header"))?;
        let line = self.f.blocks[header as usize].loc.line;
        self.b.set_srcloc(SourceLoc::new(line));
        self.b.switch_to_block(dispatch);
        let life: Vec<cl::Value> = (self.versions[k].life.clone().into_iter())
            .map(|o| self.val(o))
            .collect::<Result<_, _>>()?;
        let watch: Vec<cl::Value> = (self.versions[k].watch.clone().into_iter())
            .map(|o| self.val(o))
            .collect::<Result<_, _>>()?;
        let args: Vec<BlockArg> = self
            .b
            .block_params(dispatch)
            .iter()
            .map(|&v| BlockArg::Value(v))
            .collect();
        // Each copy is entered through a block of its own, so that what
        // Cranelift hoists out of one copy lands there and does not stay
        // live across the other one.
        let (pre_checked, pre_clean) = (self.block_like(header), self.block_like(header));
        let attrs = self.versions[k].attrs.clone();
        // When the entry cache covers every object the shadow tests test,
        // it comes first: a way is filled only after they passed, and
        // what they read changes only with a free, which moves the
        // cache's epoch (docs/CODEGEN.md, "Loop-entry caches").
        let (v, objs) = (&self.versions[k], &self.versions[k].attrs);
        let covered = !objs.is_empty()
            && (v.life.iter().chain(&v.watch)).all(|o| objs.iter().any(|&(x, _)| x == *o));
        // And then the fixed-attributes test alone: `attr_fixed` holds only
        // for a live object of the model heap, whose slot the heap watches
        // from `obj_new` to the free (the only unwatch), so where it holds
        // for every object the shadow tests would test, they would pass
        // (docs/CODEGEN.md, "The shadow tests a fixed object passes"; the
        // interpreter verifies it at each clean entry).
        if covered && !(life.is_empty() && watch.is_empty()) {
            self.fixed_attrs_test(&attrs, &args, pre_clean, pre_checked)?;
            return self.enter_copies(k, [(pre_checked, checked), (pre_clean, clean)]);
        }
        // No lifetime test or watch to drop (only bounds tests): no
        // shadow test, the fixed attributes' test alone.
        let miss = match life.is_empty() && watch.is_empty() {
            true => None,
            false => Some(
                self.shadow_entry_miss(&life, &watch)
                    .ok_or_else(|| internal(self.fname, "versioned loop without a shadow"))?,
            ),
        };
        match (miss, attrs.is_empty()) {
            (Some(miss), true) => {
                self.b
                    .ins()
                    .brif(miss, pre_checked, &args, pre_clean, &args);
            }
            (Some(miss), false) => {
                let fixed = self.b.create_block();
                self.b.ins().brif(miss, pre_checked, &args, fixed, &[]);
                self.b.switch_to_block(fixed);
                self.fixed_attrs_test(&attrs, &args, pre_clean, pre_checked)?;
            }
            (None, false) => self.fixed_attrs_test(&attrs, &args, pre_clean, pre_checked)?,
            (None, true) => return Err(internal(self.fname, "versioned loop drops nothing")),
        }
        self.enter_copies(k, [(pre_checked, checked), (pre_clean, clean)])
    }

    /// Fills the blocks `pre` that enter each copy's header `to` of loop
    /// `k`: a jump passing their params and the objects.
    fn enter_copies(
        &mut self,
        k: usize,
        pres: [(cl::Block, cl::Block); 2],
    ) -> Result<(), JitError> {
        for (pre, to) in pres {
            self.b.switch_to_block(pre);
            let mut args: Vec<BlockArg> = (self.b.block_params(pre).iter())
                .map(|&v| BlockArg::Value(v))
                .collect();
            // Both headers take the objects as params, the clean one its
            // opaque zero too.
            let objs = self.versions[k].objs.clone();
            for o in objs {
                args.push(BlockArg::Value(self.val(o)?));
            }
            if pre == pres[1].0 {
                if self.versions[k].clean_zero.is_some() {
                    args.push(BlockArg::Value(self.iconst(cl::types::I64, 0)));
                }
                // The fixed objects' words: the dispatch found each object
                // live with its own values array, so the load is safe.
                let words: Vec<Value> = self.versions[k].words.iter().map(|&(o, _)| o).collect();
                for o in words {
                    let o = self.val(o)?;
                    args.push(BlockArg::Value(self.load_word(o)));
                }
                // The clean copy's loop ranges, from the header's params:
                // the copy runs their accesses unchecked, so a failed one
                // sends the entry to the checked copy.
                let header = self.versions[k].lp.header;
                self.test_loop_ranges(pre, header)?;
                if let Some(clean) = self.clean_copy_verdict(header) {
                    let back: Vec<BlockArg> = (self.b.block_params(pre).iter())
                        .map(|&v| BlockArg::Value(v))
                        .collect();
                    (self.b.ins()).brif(clean, to, &args, pres[0].0, &back);
                    continue;
                }
            }
            self.b.ins().jump(to, &args);
        }
        Ok(())
    }
}
