//! Data-driven tests of the parser and the verifier, as Cranelift's
//! filetests and rust-analyzer's test data: each case is a `.glir` file
//! whose header announces the errors it must give.
//!
//! - `cases/parse/*.glir` must fail to parse, with the one error announced
//!   (the parser stops at the first);
//! - `cases/verify/*.glir` must parse and fail to verify, with exactly the
//!   errors announced (in any order; every error announced, every
//!   announcement met).
//!
//! The header is the file's leading comment lines; each expected error is
//!
//! ```text
//! ; error: LINE:COL: message
//! ```
//!
//! where LINE and COL count in the file itself (header included) and
//! `message` is a part of the diagnostic's message. Or, anywhere in the
//! file, a marker line under the line of the error, its `^` in the error's
//! column (a marker cannot point at column 1, where its `;` stands):
//!
//! ```text
//!     %x = iadd %a, %b
//! ;             ^ error: message
//! ``` The runner reads the
//! diagnostic's position and message, not its `Display` text, so how errors
//! are presented (a `FILE:`, an `error:` prefix) does not matter here.
//!
//! Rust tests stay for what text cannot express (modules built through the
//! API that the parser would never produce, robustness limits, round trips).

use guardlift_ir::{parse_module, verify_module, Diagnostic, ParseError};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One `; error: LINE:COL: message` announcement.
#[derive(Debug, Clone, PartialEq)]
struct Expected {
    line: u32,
    col: u32,
    msg: String,
}

impl Expected {
    fn matches(&self, d: &Diagnostic) -> bool {
        (d.loc.line, d.loc.col) == (self.line, self.col) && d.msg.contains(&self.msg)
    }
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.msg)
    }
}

/// The announcements of `text`: its header's `; error:` lines and its
/// `; ^ error:` markers; `Err` for a malformed one.
fn expectations(text: &str) -> Result<Vec<Expected>, String> {
    let mut out = Vec::new();
    let mut in_header = true;
    // The line a marker points into: the last line that is not a marker.
    let mut target = 0;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let bad = |want: &str| format!("line {n}: want `{want}`");
        let comment = line.strip_prefix(';');
        in_header &= comment.is_some();
        if let Some((col, rest)) = marker(line) {
            let msg = rest.trim();
            if msg.is_empty() || target == 0 {
                return Err(bad("; ^ error: message` under the line it points into"));
            }
            out.push(Expected {
                line: target,
                col,
                msg: msg.to_string(),
            });
            continue;
        }
        target = n as u32;
        let Some(rest) = comment
            .filter(|_| in_header)
            .and_then(|c| c.trim_start().strip_prefix("error:"))
        else {
            continue;
        };
        let mut parts = rest.trim_start().splitn(3, ':');
        let (Some(l), Some(c), Some(msg)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("; error: LINE:COL: message"));
        };
        let (Ok(line), Ok(col)) = (l.trim().parse(), c.trim().parse()) else {
            return Err(bad("; error: LINE:COL: message"));
        };
        let msg = msg.trim().to_string();
        if msg.is_empty() {
            return Err(bad("; error: LINE:COL: message"));
        }
        out.push(Expected { line, col, msg });
    }
    Ok(out)
}

/// A marker line `;   ^ error: message`: the (1-based) column of its `^`
/// and what follows `error:`.
fn marker(line: &str) -> Option<(u32, &str)> {
    let body = line.strip_prefix(';')?;
    let caret = body.trim_start().strip_prefix('^')?;
    let rest = caret.trim_start().strip_prefix("error:")?;
    let col = line.chars().position(|c| c == '^')? + 1;
    Some((col as u32, rest))
}

/// What is wrong with `got` against `want`, or `None`.
fn mismatch(want: &[Expected], got: &[Diagnostic]) -> Option<String> {
    let mut unmet: Vec<&Expected> = want.iter().collect();
    let mut unexpected = Vec::new();
    for d in got {
        match unmet.iter().position(|e| e.matches(d)) {
            Some(i) => {
                unmet.remove(i);
            }
            None => unexpected.push(d),
        }
    }
    if unmet.is_empty() && unexpected.is_empty() {
        return None;
    }
    let mut s = String::new();
    for e in unmet {
        let _ = writeln!(s, "  expected, not given: {e}");
    }
    for d in unexpected {
        let _ = writeln!(
            s,
            "  given, not expected: {}:{}: {}",
            d.loc.line, d.loc.col, d.msg
        );
    }
    Some(s)
}

/// The `.glir` files of `cases/<dir>`, sorted.
fn cases(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cases")
        .join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "glir"))
        .collect();
    v.sort();
    assert!(v.len() >= 10, "only {} cases in {}", v.len(), dir.display());
    v
}

/// Runs every case of `dir` through `run` (the diagnostics the text gives,
/// or `Err` for an outcome of the wrong kind) and fails listing every case
/// that did not give exactly its announced errors.
fn run_cases(dir: &str, run: impl Fn(&str) -> Result<Vec<Diagnostic>, String>) {
    let mut failures = Vec::new();
    for path in cases(dir) {
        let name = path.display();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = match expectations(&text) {
            Ok(w) if w.is_empty() => Err("no `; error:` line in the header".to_string()),
            other => other,
        };
        let outcome = want.and_then(|want| {
            let got = run(&text)?;
            mismatch(&want, &got).map_or(Ok(()), Err)
        });
        if let Err(e) = outcome {
            failures.push(format!("{name}:\n{e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn parse_error_cases() {
    run_cases("parse", |text| match parse_module(text) {
        Ok(_) => Err("  parsed without error".into()),
        Err(ParseError::Invalid(d)) => Ok(vec![d]),
        Err(e) => Err(format!("  {e}")),
    });
}

#[test]
fn verify_error_cases() {
    run_cases("verify", |text| {
        let m = parse_module(text).map_err(|e| format!("  does not parse: {e}"))?;
        match verify_module(&m) {
            Ok(()) => Err("  verifies without error".into()),
            Err(e) => Ok(e.0),
        }
    });
}

#[test]
fn headers_and_matching() {
    let text = "; what this case is about\n; error: 3:5: unknown value %x\n;error:1:1: b: c\nfn\n; error: 9:9: not header\n";
    let want = expectations(text).unwrap();
    assert_eq!(
        want,
        vec![
            Expected {
                line: 3,
                col: 5,
                msg: "unknown value %x".into()
            },
            Expected {
                line: 1,
                col: 1,
                msg: "b: c".into()
            },
        ]
    );
    let marked = "; error: 1:1: head\nfn @f() {\n    %x = iadd %a, %b\n;             ^ error: unknown value %a\n;                 ^ error: second\n}\n";
    assert_eq!(
        expectations(marked).unwrap(),
        vec![
            Expected {
                line: 1,
                col: 1,
                msg: "head".into()
            },
            Expected {
                line: 3,
                col: 15,
                msg: "unknown value %a".into()
            },
            Expected {
                line: 3,
                col: 19,
                msg: "second".into()
            },
        ],
        "markers point into the last line that is not a marker"
    );
    assert!(expectations("; ^ error: nothing above\n").is_err());
    assert!(expectations("fn\n; ^ error:\n").is_err());
    assert!(expectations("; error: 3: no column\n").is_err());
    assert!(expectations("; error: x:1: m\n").is_err());
    assert!(expectations("; error: 1:1:\n").is_err());
    let d = |line, col, msg: &str| Diagnostic {
        loc: guardlift_ir::SrcLoc::new(line, col),
        msg: msg.into(),
    };
    assert_eq!(
        mismatch(
            &want,
            &[d(3, 5, "error: unknown value %x here"), d(1, 1, "a b: c")]
        ),
        None
    );
    let m = mismatch(&want, &[d(3, 6, "unknown value %x")]).unwrap();
    assert!(
        m.contains("expected, not given: 3:5") && m.contains("expected, not given: 1:1"),
        "{m}"
    );
    assert!(m.contains("given, not expected: 3:6"), "{m}");
    let m = mismatch(
        &want[..1],
        &[d(3, 5, "unknown value %x"), d(3, 5, "unknown value %x")],
    )
    .unwrap();
    assert!(
        m.contains("given, not expected"),
        "each announcement meets one error: {m}"
    );
}
