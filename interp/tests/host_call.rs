//! `host_call_site`: while an embedder's host function runs, the
//! interpreter publishes the IR call that entered it (function, position,
//! opcode, the calls outside it), for a host that reports a fault in native
//! code at that call (`guardlift run --link`), through `call` and
//! `call_indirect`; outside a host call there is none.

use guardlift_interp::{host_call_site, HostCallSite, HostFn, Interpreter};
use guardlift_ir::parse_and_verify;
use guardlift_runtime::{Mode, Runtime, RuntimeConfig};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const PROGRAM: &str = "\
extern fn @probe(i64) -> i64
extern fn @sin(f64) -> f64
fn @inner(%x: i64) -> i64 {
entry:
    %r = call @probe(%x)
    %f = func_addr @probe
    %s = call_indirect %f(%r) : (i64) -> i64
    return %s
}
fn @main(%x: i64) -> i64 {
entry:
    %y = fconst.f64 0.5
    %z = call @sin(%y)
    %r = call @inner(%x)
    return %r
}
";

#[test]
fn a_host_function_sees_the_ir_call_that_entered_it() {
    let m = parse_and_verify(PROGRAM).unwrap_or_else(|e| panic!("{}", e.with_file("host_call")));
    let rt = Runtime::new(RuntimeConfig {
        layout: m.layout,
        mode: Mode::Recover,
        abort_process: false,
        capture_output: true,
    });
    let seen: Arc<Mutex<Vec<Option<HostCallSite>>>> = Arc::default();
    let log = seen.clone();
    let probe: HostFn = Arc::new(move |a: &[u64]| {
        log.lock().unwrap().push(host_call_site());
        a[0] + 1
    });
    let hosts: HashMap<String, HostFn> = [("probe".to_string(), probe)].into();
    let it = Interpreter::new(&m, rt, &hosts).unwrap();
    assert!(host_call_site().is_none());
    assert_eq!(it.call("main", &[5]).unwrap(), Some(7));
    assert!(
        host_call_site().is_none(),
        "published after the call returned"
    );
    let outer = vec!["@main 14:5 (call)".to_string()];
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            Some(HostCallSite {
                function: "inner".into(),
                loc: guardlift_ir::SrcLoc { line: 5, col: 5 },
                op: "call",
                outer: outer.clone(),
            }),
            Some(HostCallSite {
                function: "inner".into(),
                loc: guardlift_ir::SrcLoc { line: 7, col: 5 },
                op: "call_indirect",
                outer,
            }),
        ]
    );
}
