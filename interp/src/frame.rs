//! Call frames: what one activation of an IR function holds (its values,
//! adstacks and position), how a frame is entered and how a branch moves
//! it, and what an instruction asks of the frame loop ([`Step`]).

use crate::adbuf::AdBuf;
use crate::values::canon;
use crate::{InterpError, Interpreter};
use guardlift_ir::{Block, BlockCall, FuncId, Function, Inst, SrcLoc, Value};
use guardlift_runtime::watch::IrFrame;
use std::collections::HashMap;

/// One activation of an IR function.
pub(crate) struct Frame {
    pub(crate) func: FuncId,
    pub(crate) block: usize,
    pub(crate) ip: usize,
    pub(crate) vals: Vec<u64>,
    pub(crate) stacks: Vec<AdBuf>,
    /// (block, inst index) of an alloc → index in `stacks`.
    pub(crate) alloc_slot: HashMap<(usize, usize), usize>,
    /// (block, inst index) of a `stack_alloc` → its area, a block of the
    /// runtime's heap given back when the frame returns (boxed: most
    /// frames have none, and a frame moves on every call).
    #[allow(clippy::box_collection)] // one word in the frame, which moves on every call
    pub(crate) areas: Option<Box<HashMap<(usize, usize), u64>>>,
    /// Where the caller wants the result.
    pub(crate) ret_dst: Option<Value>,
    /// Called from an instruction of a loop `guardlift_ir::hoist` claims
    /// frees nothing (or from such a frame): every instruction it runs is
    /// under the claim (`crate::hoist`).
    pub(crate) claimed: bool,
    /// The objects (values of this frame) whose bounds tests are claimed
    /// not to fail (`crate::hoist`): the fixed attributes of the clean
    /// loop `fixed_loop` since an entry that passed its test, each with
    /// the highest index the loop uses on it.
    pub(crate) fixed: Vec<(Value, u32)>,
    /// Each of `fixed`'s objects' word at the activation's entry: the JIT's
    /// clean copy addresses the values array from it, so every attribute
    /// op of the activation must find the word unchanged.
    pub(crate) fixed_words: Vec<u64>,
    /// The header of the loop whose activation `fixed` belongs to.
    pub(crate) fixed_loop: Option<u32>,
    /// After that activation left the hot part by an exit edge into an
    /// exit prefix (`CleanLoop::exits`): the prefix's length. Its
    /// instructions stay under the claim, at indices up to each object's
    /// highest; the next branch ends the activation.
    pub(crate) fixed_exit: Option<u32>,
    /// The params a claimed loop activation of the caller passed fixed
    /// objects to: claimed for the whole frame.
    pub(crate) fixed_params: Vec<Value>,
    /// The raw-access groups of this frame whose range passed at their
    /// latest first access (`crate::rawgroup`).
    pub(crate) raw_clean: Vec<u32>,
    /// The attribute groups of this frame recorded clean at their latest
    /// first member, with the object's word then (`crate::attrgroup`;
    /// groups on different objects interleave).
    pub(crate) attr_clean: Vec<(u32, u64)>,
    /// The loop ranges of this frame recorded clean at the latest entry
    /// into their loop, with their address range (`crate::rawgroup`).
    pub(crate) loop_clean: Vec<(u32, u64, u64)>,
    /// What this frame's tests vouch for since its latest call
    /// (`crate::entry`).
    pub(crate) vouched: Vec<Vouched>,
    /// Entered as an entry variant: the params its caller vouched for
    /// (`crate::entry`).
    pub(crate) entry_claims: Vec<EntryClaim>,
    /// Entered as an own variant: the params its caller's own-values
    /// tests passed for (`crate::entry`).
    pub(crate) own_claims: Vec<Value>,
}

impl Frame {
    /// The bits of `x` in this frame.
    pub(crate) fn val(&self, x: Value) -> u64 {
        self.vals[x.0 as usize]
    }
}

/// What a frame's tests vouch for one value (since its latest call).
/// (Verified in `crate::entry`.)
#[derive(Clone, Debug)]
pub(crate) struct Vouched {
    /// The value.
    pub(crate) v: Value,
    /// Its bits when the latest test vouched.
    pub(crate) bits: u64,
    /// The unwatch epoch when a lifetime check on it passed.
    pub(crate) life: Option<u64>,
    /// The unwatch epoch when a `guard.watch` of it ran.
    pub(crate) watch: Option<u64>,
    /// An attribute op on it found it working on its own values array
    /// with room for its demand, and no word was written since.
    pub(crate) own: bool,
}

/// A param of an entry variant's frame that its caller vouched for.
#[derive(Clone, Debug)]
pub(crate) struct EntryClaim {
    /// The param.
    pub(crate) param: Value,
    /// The epoch of the test that vouched for its lifetime check, if the
    /// variant drops it.
    pub(crate) life: Option<u64>,
    /// The same for its `guard.watch`.
    pub(crate) watch: Option<u64>,
}

/// What the frame loop does after an instruction.
// `Call` carries a whole frame, which goes straight onto the frame stack:
// boxing it would cost an allocation per call.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Step {
    /// Set the instruction's result (if it has one) and go on.
    Set(u64),
    /// Go on with the next instruction (a branch has already moved the frame).
    Next,
    /// Push this frame and run it (a call).
    Call(Frame),
    /// The frame returns this value.
    Return(Option<u64>),
}

/// Where an instruction runs: the frames below the top one, the
/// function and the instruction itself.
pub(crate) struct Cx<'a, 'm> {
    /// The frames below the running one, outermost first.
    pub(crate) callers: &'a [Frame],
    /// The same, as IR frames for watchpoints (empty while they are off).
    pub(crate) watch: &'a [IrFrame<'m>],
    pub(crate) func: &'m Function,
    pub(crate) inst: &'m Inst,
    /// (block, inst index) of `inst`.
    pub(crate) at: (usize, usize),
}

impl Cx<'_, '_> {
    /// The names of value `v` and of the running block, for messages.
    pub(crate) fn names(&self, v: Value) -> (&str, &str) {
        let f = self.func;
        (
            f.values.get(v.0 as usize).map_or("?", |d| d.name.as_str()),
            f.blocks.get(self.at.0).map_or("?", |b| b.name.as_str()),
        )
    }
}

/// What would have been a crash in native code, at `loc` (its backtrace
/// is filled in where the frames are, [`Interpreter::call`]).
pub(crate) fn fault<T>(loc: SrcLoc, msg: impl Into<String>) -> Result<T, InterpError> {
    Err(InterpError::Fault {
        loc,
        msg: msg.into(),
        address: None,
        backtrace: Vec::new(),
    })
}

/// A wild access of `bytes` at `address` by the `load` or `store` (`what`)
/// at `loc`: where native code dies of SIGSEGV.
pub(crate) fn wild<T>(loc: SrcLoc, what: &str, bytes: u32, address: u64) -> Result<T, InterpError> {
    Err(InterpError::Fault {
        loc,
        msg: format!("{what} of {bytes} byte(s) at {address:#x} is outside every live heap block"),
        address: Some(address),
        backtrace: Vec::new(),
    })
}

impl<'m> Interpreter<'m> {
    /// A frame entering `func` with `args` (already canonical).
    pub(crate) fn new_frame(&self, func: FuncId, args: &[u64], ret_dst: Option<Value>) -> Frame {
        let f = self.m.func(func);
        let mut vals = vec![0u64; f.values.len()];
        for (p, a) in f.params.iter().zip(args) {
            vals[p.0 as usize] = *a;
        }
        Frame {
            func,
            block: 0,
            ip: 0,
            vals,
            stacks: Vec::new(),
            alloc_slot: HashMap::new(),
            areas: None,
            ret_dst,
            claimed: false,
            fixed: Vec::new(),
            fixed_words: Vec::new(),
            fixed_loop: None,
            fixed_exit: None,
            fixed_params: Vec::new(),
            raw_clean: Vec::new(),
            attr_clean: Vec::new(),
            loop_clean: Vec::new(),
            vouched: Vec::new(),
            entry_claims: Vec::new(),
            own_claims: Vec::new(),
        }
    }

    /// Moves `fr` to `dest`, passing the block arguments.
    pub(crate) fn branch(&self, fr: &mut Frame, func: &Function, dest: &BlockCall) {
        let Block(b) = dest.block;
        let target = &func.blocks[b as usize];
        let args: Vec<u64> = dest.args.iter().map(|a| fr.vals[a.0 as usize]).collect();
        for (p, a) in target.params.iter().zip(args) {
            fr.vals[p.0 as usize] = canon(func.ty(*p), a);
        }
        let from = fr.block as u32;
        fr.block = b as usize;
        fr.ip = 0;
        if self.raw_groups.is_some() {
            self.enter_loop_ranges(fr, func, from, dest);
        }
    }
}
