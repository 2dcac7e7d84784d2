//! Calls: entering an IR function (with the depth limit that stands for
//! native stack overflow), extern calls to the built-ins of the runtime or
//! the embedder's host functions, and the lifetime-checked object
//! built-ins (`obj_new`/`obj_free` with a guard).

use crate::frame::{fault, Cx, Frame, Step};
use crate::values::{canon, f64v};
use crate::{ExternImpl, InterpError, Interpreter};
use guardlift_ir::{Callee, CheckKind, ExternId, FuncId, InstKind, ObjCall};
use guardlift_runtime::abi;
use guardlift_runtime::internals::*;

impl<'m> Interpreter<'m> {
    /// Runs a `call` of the top frame `fr`.
    pub(crate) fn exec_call(&self, fr: &Frame, cx: &Cx<'_, 'm>) -> Result<Step, InterpError> {
        let inst = cx.inst;
        let InstKind::Call { callee, args } = &inst.kind else {
            return Err(InterpError::Internal {
                loc: inst.loc,
                msg: format!("{} is not a call", inst.kind.opcode()),
            });
        };
        let argv: Vec<u64> = args.iter().map(|a| fr.val(*a)).collect();
        let eid = match callee {
            Callee::Func(fid) => return self.enter(*fid, &argv, cx),
            Callee::Extern(eid) => *eid,
        };
        let arg0 = argv.first().copied().unwrap_or(0);
        let r = match (inst.site, self.m.obj_call(&inst.kind)) {
            (Some(s), Some(ObjCall::New)) => self.rt.obj_new_at(arg0 as i64, self.site_base + s.0),
            (Some(s), Some(ObjCall::Free)) => {
                self.go_on(self.with_bt(cx.callers, || {
                    self.rt.obj_free_at(arg0, self.site_base + s.0)
                }))?;
                0
            }
            (Some(s), Some(ObjCall::Dictify))
                if self.m.inst_checks(inst).contains(CheckKind::Lifetime) =>
            {
                self.rt.obj_dictify_at(arg0, self.site_base + s.0);
                0
            }
            _ => self.with_frames(cx.watch, cx.func, inst, || {
                self.in_host_call(cx, eid, || self.call_extern(eid, &argv))
            }),
        };
        Ok(match self.m.ext(eid).ret {
            Some(rt) => Step::Set(canon(rt, r)),
            None => Step::Next,
        })
    }

    /// Runs `f`, the call of extern `eid` by the instruction of `cx`; when
    /// `eid` is an embedder's host function, with the call published for
    /// [`host_call_site`].
    fn in_host_call<R>(&self, cx: &Cx<'_, 'm>, eid: ExternId, f: impl FnOnce() -> R) -> R {
        if !matches!(self.externs[eid.0 as usize], ExternImpl::Host(_)) {
            return f();
        }
        let site = || HostCallSite {
            function: cx.func.name.clone(),
            loc: cx.inst.loc,
            op: cx.inst.kind.opcode(),
            outer: self.call_frames(cx.callers),
        };
        struct Restore(Option<*const SiteFn>);
        impl Drop for Restore {
            fn drop(&mut self) {
                HOST_CALL.with(|h| h.set(self.0));
            }
        }
        let short: *const (dyn Fn() -> HostCallSite + '_) = &site;
        // SAFETY: only the lifetime is erased; the pointer is read only
        // while `f` runs (`Restore` takes it out again, also on unwinding).
        let ptr: *const SiteFn = unsafe { std::mem::transmute(short) };
        let _restore = Restore(HOST_CALL.with(|h| h.replace(Some(ptr))));
        f()
    }

    /// Calls extern `eid` with raw-bit arguments `a`; its raw-bit result
    /// (0 for void).
    fn call_extern(&self, eid: ExternId, a: &[u64]) -> u64 {
        let g = |i: usize| a.get(i).copied().unwrap_or(0);
        let b = match &self.externs[eid.0 as usize] {
            ExternImpl::Host(h) => return h(a),
            ExternImpl::Builtin(b) => b,
        };
        let rt = &self.rt;
        match b.name {
            "obj_new" => return rt.obj_new(g(0) as i64),
            "load_attr_slow" => return rt.load_attr_slow(g(0), g(1) as u32) as u64,
            // The same functions the JIT calls, so results agree bit for bit.
            "sin" => return abi::gl_sin(f64v(g(0))).to_bits(),
            "cos" => return abi::gl_cos(f64v(g(0))).to_bits(),
            "exp" => return abi::gl_exp(f64v(g(0))).to_bits(),
            "log" => return abi::gl_log(f64v(g(0))).to_bits(),
            "pow" => return abi::gl_pow(f64v(g(0)), f64v(g(1))).to_bits(),
            "fmod" => return abi::gl_fmod(f64v(g(0)), f64v(g(1))).to_bits(),
            "obj_dictify" => rt.obj_dictify(g(0)),
            "obj_free" => rt.obj_free(g(0)),
            "fault_clear_lsb" => rt.fault_clear_lsb(g(0)),
            "store_attr_slow" => rt.store_attr_slow(g(0), g(1) as u32, g(2) as i64),
            "print_i64" => rt.print_i64(g(0) as i64),
            "print_f64" => rt.print_f64(f64v(g(0))),
            _ => {}
        }
        0
    }

    /// A call of IR function `fid` with `argv` by the instruction of `cx`:
    /// its frame, or `stack_overflow` past the depth limit.
    fn enter(&self, fid: FuncId, argv: &[u64], cx: &Cx<'_, 'm>) -> Result<Step, InterpError> {
        let inst = cx.inst;
        if cx.callers.len() + 1 >= self.max_depth {
            return Err(InterpError::StackOverflow {
                loc: inst.loc,
                limit: self.max_depth,
                backtrace: Vec::new(),
            });
        }
        let g = self.m.func(fid);
        let argv: Vec<u64> = g
            .params
            .iter()
            .zip(argv)
            .map(|(p, a)| canon(g.ty(*p), *a))
            .collect();
        Ok(Step::Call(self.new_frame(fid, &argv, inst.result)))
    }

    /// Runs a `call_indirect` of the top frame `fr`: the target is what
    /// `func_addr` gave (an IR function or an extern, with the signature
    /// written on the call); anything else is a wild call, the fault native
    /// code dies of at this site.
    pub(crate) fn exec_call_indirect(
        &self,
        fr: &Frame,
        cx: &Cx<'_, 'm>,
    ) -> Result<Step, InterpError> {
        let inst = cx.inst;
        let InstKind::CallIndirect { target, args, sig } = &inst.kind else {
            return Err(InterpError::Internal {
                loc: inst.loc,
                msg: format!("{} is not call_indirect", inst.kind.opcode()),
            });
        };
        let t = fr.val(*target);
        let argv: Vec<u64> = args.iter().map(|a| fr.val(*a)).collect();
        let wild = || {
            Err(InterpError::Fault {
                loc: inst.loc,
                msg: format!("call_indirect to {t:#x}, which is no function"),
                address: Some(t),
                backtrace: Vec::new(),
            })
        };
        let (params, ret, callee) = match token_callee(t) {
            Some(Callee::Func(fid)) if (fid.0 as usize) < self.m.functions.len() => {
                let g = self.m.func(fid);
                (g.param_types(), g.ret, Callee::Func(fid))
            }
            Some(Callee::Extern(eid)) if (eid.0 as usize) < self.m.externs.len() => {
                let e = self.m.ext(eid);
                (e.params.clone(), e.ret, Callee::Extern(eid))
            }
            _ => return wild(),
        };
        let same = params.len() == sig.params.len()
            && params
                .iter()
                .zip(&sig.params)
                .all(|(a, b)| a.compatible(*b))
            && match (ret, sig.ret) {
                (Some(a), Some(b)) => a.compatible(b),
                (None, None) => true,
                _ => false,
            };
        if !same {
            // Native code would run the callee with the wrong registers:
            // undefined, refused here.
            return fault(
                inst.loc,
                format!("call_indirect with a signature that is not its target's ({t:#x})"),
            );
        }
        match callee {
            Callee::Func(fid) => self.enter(fid, &argv, cx),
            Callee::Extern(eid) => {
                let r = self.with_frames(cx.watch, cx.func, inst, || {
                    self.in_host_call(cx, eid, || self.call_extern(eid, &argv))
                });
                Ok(match sig.ret {
                    Some(rt) => Step::Set(canon(rt, r)),
                    None => Step::Next,
                })
            }
        }
    }
}

/// The IR call of an embedder's host function running on this thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCallSite {
    /// The calling function.
    pub function: String,
    /// The call's position.
    pub loc: guardlift_ir::SrcLoc,
    /// Its opcode (`call`, `call_indirect`).
    pub op: &'static str,
    /// The IR calls outside it, innermost first, as backtraces print them.
    pub outer: Vec<String>,
}

type SiteFn = dyn Fn() -> HostCallSite + 'static;

thread_local! {
    /// The host call running on this thread (see [`host_call_site`]).
    static HOST_CALL: std::cell::Cell<Option<*const SiteFn>> = const { std::cell::Cell::new(None) };
}

/// The IR call through which this thread is running an embedder's host
/// function (a [`crate::HostFn`]), if it is: for an embedder whose host
/// function calls native code to report a fault in it at that call, as the
/// JIT's fault handler does (`guardlift run --link` on the interpreter).
/// Called on the faulting thread, outside the signal handler (it allocates).
pub fn host_call_site() -> Option<HostCallSite> {
    let p = HOST_CALL.with(|h| h.get())?;
    // SAFETY: published by `in_host_call` for exactly the extent of the
    // host call, which is still running on this thread (its frames are
    // below ours), so what the closure borrows is alive.
    Some(unsafe { (*p)() })
}

/// What `func_addr` gives in the interpreter, which has no native code: a
/// token naming the function, at an address no native code can have (not
/// canonical on x86_64 or aarch64), so that a native call of it faults.
pub(crate) fn func_token(c: Callee) -> u64 {
    match c {
        Callee::Func(f) => FUNC_TOKEN | f.0 as u64,
        Callee::Extern(e) => FUNC_TOKEN | EXTERN_TOKEN | e.0 as u64,
    }
}

const FUNC_TOKEN: u64 = 0xfff1_0000_0000_0000;
const EXTERN_TOKEN: u64 = 1 << 32;

/// The function a [`func_token`] names.
fn token_callee(t: u64) -> Option<Callee> {
    if t & 0xffff_0000_0000_0000 != FUNC_TOKEN || t & 0x0000_fffe_0000_0000 != 0 {
        return None;
    }
    let i = t as u32;
    Some(if t & EXTERN_TOKEN != 0 {
        Callee::Extern(ExternId(i))
    } else {
        Callee::Func(FuncId(i))
    })
}
