//! The smallest end-to-end check: compile `@add` and call it safely.

mod common;
use common::*;

#[test]
fn add_two() {
    let m =
        jit("fn @add(%a: i64, %b: i64) -> i64 {\nentry:\n    %c = iadd %a, %b\n    return %c\n}\n");
    let f = m.safe_func::<(i64, i64), i64>("add").unwrap();
    assert_eq!(f.call((2, 3)), 5);
    assert_eq!(call(&m, "add", &[7, u64::MAX]), Some(6));
}
