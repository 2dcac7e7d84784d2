//! An interpreter fault placed at its IR instruction, rendered as native
//! code's fault handler renders a fault (spec §6.2: a wild access or the
//! depth limit is the SIGSEGV native code dies of, without a PC).

use guardlift_ir::Module;

/// An interpreter fault placed at its IR instruction.
#[derive(Debug)]
pub(crate) struct InterpFault {
    pub(crate) stack_overflow: bool,
    /// A fatal arithmetic fault (`div_by_zero`, `int_overflow`).
    pub(crate) arith: Option<guardlift_runtime::ReportKind>,
    pub(crate) function: String,
    pub(crate) line: u32,
    pub(crate) col: u32,
    pub(crate) op: &'static str,
    pub(crate) msg: String,
    /// A wild access's address (else the fault is no memory access).
    pub(crate) address: Option<u64>,
    /// What a host function of the model heap found (the fault is at the
    /// instruction that called it).
    pub(crate) host: Option<guardlift_runtime::fault::HostCallFault>,
    /// The IR frames outside the faulting one, innermost first.
    pub(crate) outer: Vec<String>,
}

impl InterpFault {
    /// The instruction on `loc`'s line (one instruction per line; of an
    /// instrumented access, the access, not the `guard.watch` put on its
    /// line before it: the last, as the JIT's code map has it) and its
    /// function; `backtrace` is the interpreter's, the site first.
    pub(crate) fn new(
        m: &Module,
        loc: guardlift_ir::SrcLoc,
        msg: String,
        address: Option<u64>,
        mut backtrace: Vec<String>,
    ) -> Self {
        let found = m.functions.iter().find_map(|f| {
            f.blocks
                .iter()
                .flat_map(|b| &b.insts)
                .rev()
                .find(|i| i.loc == loc)
                .map(|i| (f.name.clone(), i.kind.opcode()))
        });
        let (function, op) = found.unwrap_or_else(|| ("?".into(), "?"));
        if !backtrace.is_empty() {
            backtrace.remove(0);
        }
        InterpFault {
            stack_overflow: false,
            arith: None,
            function,
            line: loc.line,
            col: loc.col,
            op,
            msg,
            address,
            host: None,
            outer: backtrace,
        }
    }

    /// The report native code's fault handler prints for this fault: a
    /// wild access or the depth limit is the SIGSEGV native code dies of,
    /// without a PC (docs/INSTRUMENTATION.md, "Faults").
    pub(crate) fn report(&self) -> guardlift_runtime::fault::FaultReport<'_> {
        use guardlift_runtime::fault::{FaultCause, FaultReport, OuterFrames};
        let cause = match self.address {
            _ if let Some(k) = self.arith => FaultCause::Arith(k),
            _ if let Some(h) = &self.host => FaultCause::Host(h),
            _ if self.stack_overflow => FaultCause::Signal {
                signal: "SIGSEGV",
                address: None,
                pc: None,
                in_host: false,
            },
            Some(a) => FaultCause::Signal {
                signal: "SIGSEGV",
                address: Some(a as usize),
                pc: None,
                // A wild `call_indirect` faults at its target, outside IR
                // code, as native code does.
                in_host: self.op == "call_indirect",
            },
            None => FaultCause::Interp(&self.msg),
        };
        FaultReport {
            stack_overflow: self.stack_overflow,
            function: &self.function,
            line: self.line,
            col: self.col,
            op: self.op,
            cause,
            backtrace: guardlift_runtime::backtrace::enabled()
                .then_some(OuterFrames::Frames(&self.outer)),
        }
    }
}
