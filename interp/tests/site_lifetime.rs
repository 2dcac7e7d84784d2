//! Issue 13 (7, 2): an interpreter's sites leave the runtime with it, and
//! huge site ids are stored sparsely.

use guardlift_interp::Interpreter;
use guardlift_ir::parse_module;
use guardlift_runtime::internals::*;
use guardlift_runtime::{Mode, Runtime, RuntimeConfig};
use std::collections::HashMap;

const GUARDED: &str = r#"
extern fn @obj_new(i64) -> ptr
fn @main(%n: i64) -> i64 {
entry:
    %o = call @obj_new(%n)
    %v = iconst.i64 41
    guard.store_attr %o, 0, %v !site(4294967295, 6:5)
    %r = guard.load_attr %o, 0 !site(0, 7:5)
    return %r
}
"#;

#[test]
fn interpreters_unregister_their_sites() {
    let rt = Runtime::new(RuntimeConfig {
        mode: Mode::Recover,
        ..Default::default()
    });
    let module = parse_module(GUARDED).unwrap();
    assert_eq!(module.sites.len(), 2);
    for _ in 0..100 {
        let it = Interpreter::new(&module, rt.clone(), &HashMap::new()).unwrap();
        assert_eq!(it.call("main", &[1]).unwrap(), Some(41));
        assert_eq!(rt.site_count(), 2);
        // No room for a second copy beside ids up to u32::MAX: a link error
        // at the largest site, not a 2^32-entry table.
        match Interpreter::new(&module, rt.clone(), &HashMap::new()) {
            Err(guardlift_interp::InterpError::Link(d)) => {
                assert_eq!((d.loc.line, d.loc.col), (6, 5), "{d}")
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("two modules spanning every id fit"),
        }
    }
    assert_eq!(rt.site_count(), 0);
}
