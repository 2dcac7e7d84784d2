//! The chain of blocks that large-function tests compile (`jit/tests/big.rs`,
//! and `cli/tests/big_tier.rs`, which includes this file): depends on
//! nothing, so that any test crate can include it by path.

use std::fmt::Write as _;

/// Appends blocks `b0` … `b{n-1}` and `done` to `t`: block `i` adds
/// `%one` to its parameter `%v{i}` (giving `%w{i}`), then the lines
/// `extra(i)` gives, then passes the sum on to the next block (every
/// other block by a `brif` on `%w{i} < %lim` whose both edges go there);
/// `done` returns what it gets. The entry block before them defines
/// `%one` and `%lim` and jumps to `b0`.
pub fn push_chain(t: &mut String, n: usize, extra: impl Fn(usize) -> String) {
    for i in 0..n {
        let _ = writeln!(t, "b{i}(%v{i}: i64):\n    %w{i} = iadd %v{i}, %one");
        t.push_str(&extra(i));
        let next = if i + 1 == n {
            "done".to_string()
        } else {
            format!("b{}", i + 1)
        };
        if i % 2 == 0 {
            let _ = writeln!(t, "    %c{i} = icmp.slt %w{i}, %lim");
            let _ = writeln!(t, "    brif %c{i}, {next}(%w{i}), {next}(%v{i})");
        } else {
            let _ = writeln!(t, "    jump {next}(%w{i})");
        }
    }
    t.push_str("done(%r: i64):\n    return %r\n}\n");
}
