//! The interpreter as an engine of a run: its errors become a run's
//! ending the way native code's faults do ([`InterpFault`]).

use crate::end::{Ending, FaultEnd, FaultSource};
use crate::error::ExecError;
use crate::interp_fault::InterpFault;
use guardlift_interp::{HostFn, InterpError, Interpreter};
use guardlift_ir::Module;
use guardlift_runtime::internals::*;
use guardlift_runtime::Runtime;
use std::collections::HashMap;
use std::sync::Arc;

fn fault(f: InterpFault) -> Ending {
    Ending::Fault(FaultEnd(FaultSource::Interp(Box::new(f))))
}

/// Runs `entry` on the interpreter with the host functions `hosts`.
pub(crate) fn execute(
    m: &Module,
    rt: Arc<Runtime>,
    entry: &str,
    args: &[u64],
    hosts: &HashMap<String, HostFn>,
) -> Result<Ending, ExecError> {
    let it = match Interpreter::new(m, rt.clone(), hosts) {
        Ok(it) => it,
        Err(InterpError::Link(d)) => return Err(ExecError::Diag(d)),
        Err(e) => return Err(ExecError::Plain(e.to_string())),
    };
    match it.call(entry, args) {
        Ok(v) => Ok(Ending::Returned(v)),
        Err(InterpError::Fault {
            loc,
            msg,
            address,
            backtrace,
        }) => Ok(fault(InterpFault::new(m, loc, msg, address, backtrace))),
        Err(InterpError::HostFault { loc, backtrace }) => {
            let host = rt.take_host_call_fault();
            let msg = host
                .as_ref()
                .map(|h| h.fault.to_string())
                .unwrap_or_default();
            Ok(fault(InterpFault {
                host,
                ..InterpFault::new(m, loc, msg, None, backtrace)
            }))
        }
        Err(InterpError::StackOverflow {
            loc,
            limit,
            backtrace,
        }) => {
            let msg = format!("call depth limit {limit} exceeded");
            Ok(fault(InterpFault {
                stack_overflow: true,
                ..InterpFault::new(m, loc, msg, None, backtrace)
            }))
        }
        Err(InterpError::Arith {
            loc,
            kind,
            backtrace,
        }) => {
            let msg = guardlift_runtime::fault::arith_message(kind).to_string();
            Ok(fault(InterpFault {
                arith: Some(kind),
                ..InterpFault::new(m, loc, msg, None, backtrace)
            }))
        }
        Err(InterpError::Aborted) => Ok(Ending::Fatal("aborted".into())),
        Err(InterpError::Link(d)) => Err(ExecError::Diag(d)),
        Err(e) => Err(ExecError::Plain(e.to_string())),
    }
}
