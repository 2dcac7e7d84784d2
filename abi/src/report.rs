//! Report kinds, their codes and trap codes, and the site descriptions
//! reports carry: what generated code, the runtime, the support library and
//! the CLI agree on.

use std::collections::BTreeMap;

/// First user trap code of trap mode: one code per [`ReportKind`] follows.
pub const TRAP_CODE_BASE: u8 = 0x60;

/// What a guard found wrong; `as u8` is its code.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReportKind {
    /// `dict`: a managed-dict word with an invalid tag.
    DictSlotTag,
    /// `adstack`: a push onto a full stack.
    AdstackOverflow,
    /// `adstack`: a pop, top or accumulate on an empty stack.
    AdstackUnderflow,
    /// `clobber`: a raw store over a watched dict slot.
    SlotClobber,
    /// `lifetime`: an access to a freed object (or to its memory).
    UseAfterFree,
    /// `lifetime`: `@obj_free` of an object already freed.
    DoubleFree,
    /// `lifetime`: `@obj_free` of something that is not an object the runtime allocated.
    InvalidFree,
    /// `bounds`: an attribute index at or past the values array's capacity.
    AttrOutOfBounds,
    /// A watched dict word written by foreign code or left malformed (spec §6.1).
    ForeignWrite,
    /// `bounds`: a raw load/store touching a redzone of the model heap.
    HeapOverflow,
    /// An integer division or remainder by zero (spec §3.1; always fatal).
    DivByZero,
    /// `sdiv` of the type's minimum by −1 (spec §3.1; always fatal).
    IntOverflow,
}

impl ReportKind {
    /// The name in reports (`dict_slot_tag`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            ReportKind::DictSlotTag => "dict_slot_tag",
            ReportKind::AdstackOverflow => "adstack_overflow",
            ReportKind::AdstackUnderflow => "adstack_underflow",
            ReportKind::SlotClobber => "slot_clobber",
            ReportKind::UseAfterFree => "use_after_free",
            ReportKind::DoubleFree => "double_free",
            ReportKind::InvalidFree => "invalid_free",
            ReportKind::AttrOutOfBounds => "attr_out_of_bounds",
            ReportKind::ForeignWrite => "foreign_write",
            ReportKind::HeapOverflow => "heap_overflow",
            ReportKind::DivByZero => "div_by_zero",
            ReportKind::IntOverflow => "int_overflow",
        }
    }
    /// Every kind, in code order.
    pub const ALL: [ReportKind; 12] = [
        ReportKind::DictSlotTag,
        ReportKind::AdstackOverflow,
        ReportKind::AdstackUnderflow,
        ReportKind::SlotClobber,
        ReportKind::UseAfterFree,
        ReportKind::DoubleFree,
        ReportKind::InvalidFree,
        ReportKind::AttrOutOfBounds,
        ReportKind::ForeignWrite,
        ReportKind::HeapOverflow,
        ReportKind::DivByZero,
        ReportKind::IntOverflow,
    ];
    /// Is this a `lifetime` kind (its reports name where the object was freed)?
    pub const fn is_lifetime(self) -> bool {
        matches!(
            self,
            ReportKind::UseAfterFree | ReportKind::DoubleFree | ReportKind::InvalidFree
        )
    }
    /// Is this a fatal arithmetic kind (`div_by_zero`, `int_overflow`:
    /// reported like `host_fault`, never recovered)?
    pub const fn is_arith(self) -> bool {
        matches!(self, ReportKind::DivByZero | ReportKind::IntOverflow)
    }
    /// The numeric code used by generated code and trap codes.
    pub const fn code(self) -> u8 {
        self as u8
    }
    /// The user trap code of this kind's trap instruction in trap mode
    /// (`TRAP_CODE_BASE + code()`; Cranelift's `TrapCode::user`).
    pub const fn trap_code(self) -> u8 {
        TRAP_CODE_BASE + self.code()
    }
    /// The kind whose trap instruction carries user trap code `c`.
    pub fn from_trap_code(c: u8) -> Option<Self> {
        c.checked_sub(TRAP_CODE_BASE).and_then(Self::from_code)
    }
    /// The kind with code `c`.
    pub fn from_code(c: u8) -> Option<Self> {
        ReportKind::ALL.get(c as usize).copied()
    }
}

/// Where a guard sits: the guarded op's function, source position and opcode.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SiteInfo {
    /// The IR function the op is in.
    pub function: String,
    /// 1-based source line of the op.
    pub line: u32,
    /// 1-based source column of the op.
    pub col: u32,
    /// The opcode (`load_attr`, `ad.push`, ...).
    pub op: String,
}

/// A module's sites by local id (sparse).
pub type ModuleSites = BTreeMap<u32, SiteInfo>;

/// `host_fault`: a fatal signal in generated code or a host function it
/// called, or a host slow path handed an impossible object (spec §6.2).
pub const HOST_FAULT: &str = "host_fault";
/// `stack_overflow`: recursion deeper than the stack allows (spec §6.2).
pub const STACK_OVERFLOW: &str = "stack_overflow";
/// The kinds of the reports no guard makes: the faults that end a run.
pub const FAULT_KINDS: [&str; 2] = [HOST_FAULT, STACK_OVERFLOW];

/// Every kind name a report can carry: the guards' kinds
/// ([`ReportKind::ALL`], in code order), then [`FAULT_KINDS`]. Derived, so
/// that a kind added to [`ReportKind`] is in every list made from this one
/// (the CLI's SARIF rules).
pub fn kind_names() -> impl Iterator<Item = &'static str> {
    ReportKind::ALL
        .into_iter()
        .map(ReportKind::name)
        .chain(FAULT_KINDS)
}

/// Most objects a deduplicated report lists in `objects` (spec §6); the
/// runtime's sink keeps this many (on the host and in the object targets'
/// runtime library alike).
pub const MAX_REPORT_OBJECTS: usize = 8;
