//! Golden codegen tests (issue 31): the exact Cranelift IR and machine
//! code of each guard kind, per check mode, for x86_64 and aarch64 — the
//! precise-output filetests of Cranelift, for guardlift's lowering.
//!
//! Each `tests/codegen/NAME.glir` is emitted in every [`VARIANTS`] entry
//! (checks and mode) as `emit --what clif` (x86_64) and `--what asm`
//! (x86_64, aarch64) print it; the output must equal
//! `tests/codegen/NAME.TARGET.WHAT`, one `=== VARIANT` section per variant.
//! After an intended codegen change, regenerate them with
//! `GUARDLIFT_BLESS=1 cargo test --release -p guardlift-jit --test codegen`
//! and review the diff: it is the change.
//!
//! docs/CODEGEN.md's object-file listings are sections of these files: a
//! listing preceded by `<!-- golden: FILE VARIANT -->` must equal that
//! section (blessing rewrites it too), so the document cannot drift from
//! the code. (The JIT's inline shadow paths there are read from the running
//! JIT with gdb and annotated by hand: `emit` shows the object-file form.)

use guardlift_instrument::{instrument, CheckSet};
use guardlift_jit::{emit_asm, emit_clif, EmitOptions, Target};
use guardlift_runtime::Mode;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// (name, checks, mode): every guard kind alone where it applies, all of
/// them in each mode, and none.
const VARIANTS: &[(&str, &str, Mode)] = &[
    ("plain", "", Mode::Abort),
    ("dict recover", "dict", Mode::Recover),
    ("bounds recover", "bounds", Mode::Recover),
    ("lifetime abort", "lifetime", Mode::Abort),
    ("clobber abort", "clobber", Mode::Abort),
    ("adstack abort", "adstack", Mode::Abort),
    (
        "all abort",
        "dict,adstack,clobber,bounds,lifetime",
        Mode::Abort,
    ),
    (
        "all recover",
        "dict,adstack,clobber,bounds,lifetime",
        Mode::Recover,
    ),
    (
        "all trap",
        "dict,adstack,clobber,bounds,lifetime",
        Mode::Trap,
    ),
];

/// (file suffix, target, what).
const OUTPUTS: &[(&str, Target, What)] = &[
    ("x86_64.clif", Target::X86_64, What::Clif),
    ("x86_64.asm", Target::X86_64, What::Asm),
    ("aarch64.asm", Target::Aarch64, What::Asm),
];

#[derive(Clone, Copy)]
enum What {
    Clif,
    Asm,
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/codegen")
}

fn bless() -> bool {
    std::env::var_os("GUARDLIFT_BLESS").is_some_and(|v| v != "0")
}

/// The golden text of one input for one output: a section per variant
/// (a variant that inserts no guard in this input is still listed: the
/// output must then equal the plain one, which the file shows).
fn golden(glir: &Path, target: Target, what: What) -> String {
    let text = std::fs::read_to_string(glir).expect("read input");
    let module =
        guardlift_ir::parse_and_verify(&text).unwrap_or_else(|e| panic!("{}: {e}", glir.display()));
    let mut out = String::new();
    for (name, checks, mode) in VARIANTS {
        let checks = if checks.is_empty() {
            CheckSet::NONE
        } else {
            CheckSet::parse(checks).expect("check list")
        };
        let m = instrument(&module, checks);
        let opts = EmitOptions {
            mode: *mode,
            ..Default::default()
        };
        let listing = match what {
            What::Clif => emit_clif(&m, target, &opts),
            What::Asm => emit_asm(&m, target, &opts),
        }
        .unwrap_or_else(|e| panic!("{} ({name}): {e}", glir.display()));
        let _ = writeln!(out, "=== {name}");
        out.push_str(listing.trim_end());
        out.push('\n');
    }
    out
}

/// The section `variant` of a golden file's text.
fn section<'a>(text: &'a str, variant: &str) -> Option<&'a str> {
    let head = format!("=== {variant}\n");
    let start = text.find(&head)? + head.len();
    let end = text[start..]
        .find("\n=== ")
        .map_or(text.len(), |e| start + e + 1);
    Some(&text[start..end])
}

/// The first line where `a` and `b` differ, for a failure message.
fn first_difference(a: &str, b: &str) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}:\n  expected: {x}\n  actual:   {y}", i + 1);
        }
    }
    format!(
        "lengths differ: expected {} lines, actual {}",
        a.lines().count(),
        b.lines().count()
    )
}

fn inputs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("tests/codegen")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "glir"))
        .collect();
    v.sort();
    v
}

#[test]
fn codegen_matches_the_golden_files() {
    let mut stale = Vec::new();
    let inputs = inputs();
    assert!(
        inputs.len() >= 4,
        "tests/codegen has {} inputs",
        inputs.len()
    );
    for glir in &inputs {
        for (suffix, target, what) in OUTPUTS {
            let path = glir.with_extension(suffix);
            let actual = golden(glir, *target, *what);
            if bless() {
                std::fs::write(&path, &actual).expect("write golden file");
                continue;
            }
            let expected = std::fs::read_to_string(&path).unwrap_or_default();
            if expected != actual {
                // Name the first variant that differs.
                let variant = VARIANTS
                    .iter()
                    .map(|v| v.0)
                    .find(|v| section(&expected, v) != section(&actual, v))
                    .unwrap_or("?");
                stale.push(format!(
                    "{} [{variant}]: {}",
                    path.display(),
                    first_difference(
                        section(&expected, variant).unwrap_or(""),
                        section(&actual, variant).unwrap_or("")
                    )
                ));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "codegen differs from the golden files (if intended: GUARDLIFT_BLESS=1 cargo test --release \
         -p guardlift-jit --test codegen, then review the diff):\n{}",
        stale.join("\n")
    );
}

/// `<!-- golden: FILE VARIANT -->` markers of docs/CODEGEN.md: the fenced
/// listing after each must be that section of the golden file.
#[test]
fn codegen_doc_listings_are_golden_sections() {
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/CODEGEN.md");
    let doc = std::fs::read_to_string(&doc_path).expect("docs/CODEGEN.md");
    let mut out = String::new();
    let mut rest = doc.as_str();
    let mut checked = 0;
    let mut wrong = Vec::new();
    const MARK: &str = "<!-- golden: ";
    while let Some(i) = rest.find(MARK) {
        let after = &rest[i + MARK.len()..];
        let end = after.find(" -->").expect("marker ends with -->");
        let spec = &after[..end];
        let (file, variant) = spec.split_once(' ').expect("marker: FILE VARIANT");
        let golden_text = std::fs::read_to_string(dir().join(file))
            .unwrap_or_else(|e| panic!("CODEGEN.md names {file}: {e}"));
        let want = section(&golden_text, variant)
            .unwrap_or_else(|| panic!("{file} has no section `{variant}`"));
        // The fence after the marker.
        let fence_open = i
            + MARK.len()
            + end
            + after[end..]
                .find("```\n")
                .expect("a listing after the marker");
        let body_start = fence_open + 4;
        let body_end = body_start + rest[body_start..].find("```\n").expect("listing closes");
        out.push_str(&rest[..body_start]);
        out.push_str(want);
        if &rest[body_start..body_end] != want {
            wrong.push(format!("{file} [{variant}]"));
        }
        out.push_str("```\n");
        rest = &rest[body_end + 4..];
        checked += 1;
    }
    out.push_str(rest);
    assert!(checked >= 4, "CODEGEN.md has {checked} golden listings");
    if bless() {
        std::fs::write(&doc_path, out).expect("write docs/CODEGEN.md");
        return;
    }
    assert!(
        wrong.is_empty(),
        "docs/CODEGEN.md listings differ from the golden files (GUARDLIFT_BLESS=1 regenerates them): {wrong:?}"
    );
}
