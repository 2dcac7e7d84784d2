//! Tidy: the conventions of the code base, checked rather than hoped for
//! (issue 14 item 7).
//!
//! - every `.rs` file under a workspace crate's `src/` starts with a `//!`
//!   header saying what the module owns;
//! - no such file over [`MAX_FILE_LINES`] lines and no function in one over
//!   [`MAX_FN_LINES`] lines, unless the file's `//!` header has a line
//!   starting `tidy: long because` that says why;
//! - `docs/ARCHITECTURE.md`'s code map names every workspace crate, and every
//!   file or directory it names exists;
//! - every workspace member takes its lints from the workspace
//!   (`[lints] workspace = true`).
//!
//! Functions are found by a small lexer that knows Rust's comments, strings
//! (plain, byte, raw) and char literals versus lifetimes, so braces inside
//! them do not count (no `syn`: its line numbers need proc-macro2's
//! `span-locations`, which would rebuild every proc macro of the
//! workspace). The lexer has its own tests below.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Longest source file without a written reason.
const MAX_FILE_LINES: usize = 1000;
/// Longest function (from its `fn` line to its closing brace) without a
/// written reason.
const MAX_FN_LINES: usize = 150;
/// The marker of a written reason, at the start of a `//!` line.
const LONG_REASON: &str = "tidy: long because";
/// Files the code map names that the build generates (not in the tree).
const GENERATED: &[&str] = &["gl_traps.c"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The workspace members (directories), from the root `Cargo.toml`.
fn members() -> Vec<String> {
    let toml = read(&root().join("Cargo.toml"));
    let start = toml.find("members").expect("root Cargo.toml has members");
    let open = start + toml[start..].find('[').expect("members = [");
    let close = open + toml[open..].find(']').expect("members = [...]");
    toml[open + 1..close]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

/// Every `.rs` file under `dir`, recursively, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.map(|e| e.expect("dir entry").path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every `.rs` file under the `src/` of a workspace member.
fn src_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for m in members() {
        rust_files(&root().join(&m).join("src"), &mut out);
    }
    assert!(out.len() > 20, "found only {} source files", out.len());
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// The `//!` lines at the top of `text` (after blank lines and `#![…]`).
fn header(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| l.trim().is_empty() || l.starts_with("#!["))
        .take_while(|l| l.starts_with("//!"))
        .collect()
}

fn has_long_reason(text: &str) -> bool {
    header(text).iter().any(|l| {
        l.trim_start_matches("//!")
            .trim_start()
            .starts_with(LONG_REASON)
    })
}

#[test]
fn src_files_have_module_headers() {
    let missing: Vec<String> = src_files()
        .iter()
        .filter(|p| header(&read(p)).is_empty())
        .map(|p| rel(p))
        .collect();
    assert!(
        missing.is_empty(),
        "these files have no `//!` header saying what the module owns:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn no_long_files_without_reason() {
    let long: Vec<String> = src_files()
        .iter()
        .filter_map(|p| {
            let text = read(p);
            let n = text.lines().count();
            (n > MAX_FILE_LINES && !has_long_reason(&text))
                .then(|| format!("{} ({n} lines)", rel(p)))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_FILE_LINES} lines: split them by concern, or say why in a `//! {LONG_REASON} …` header line:\n  {}",
        long.join("\n  ")
    );
}

#[test]
fn no_long_functions_without_reason() {
    let mut long = Vec::new();
    for p in src_files() {
        let text = read(&p);
        if has_long_reason(&text) {
            continue;
        }
        for f in functions(&text) {
            if f.lines() > MAX_FN_LINES {
                long.push(format!(
                    "{}:{} fn {} ({} lines)",
                    rel(&p),
                    f.start,
                    f.name,
                    f.lines()
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines: split them, or say why in a `//! {LONG_REASON} …` header line:\n  {}",
        long.join("\n  ")
    );
}

#[test]
fn workspace_members_use_workspace_lints() {
    let missing: Vec<String> = members()
        .into_iter()
        .filter(|m| {
            let toml = read(&root().join(m).join("Cargo.toml"));
            !has_workspace_lints(&toml)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "these members' Cargo.toml lack `[lints]\\nworkspace = true`:\n  {}",
        missing.join("\n  ")
    );
}

/// `[lints]` followed (before the next table) by `workspace = true`.
fn has_workspace_lints(toml: &str) -> bool {
    let mut in_lints = false;
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            in_lints = line == "[lints]";
        } else if in_lints && line.replace(' ', "") == "workspace=true" {
            return true;
        }
    }
    false
}

// ---------------------------------------------------------------------------
// The code map of docs/ARCHITECTURE.md.

/// The code map: from `## Code map` to the next `## ` heading.
fn code_map() -> String {
    let doc = read(&root().join("docs/ARCHITECTURE.md"));
    let start = doc
        .find("\n## Code map")
        .expect("ARCHITECTURE.md has a `## Code map`");
    let rest = &doc[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    rest[..end].to_string()
}

/// The code map's sections: (the directory of its `### \`dir/\`` heading, its text).
fn sections(map: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in map.lines() {
        if let Some(h) = line.strip_prefix("### ") {
            let dir = backticked(h).into_iter().next().unwrap_or_default();
            out.push((dir.trim_end_matches('/').to_string(), String::new()));
        } else if let Some((_, text)) = out.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    out
}

/// The `` `…` `` spans of `text`.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Whether a backticked token names a file or directory: a path with a
/// `/`, or a file name with a source or doc extension.
fn names_path(tok: &str) -> bool {
    const EXTS: &[&str] = &[".rs", ".c", ".h", ".md", ".toml", ".glir"];
    let plain = tok
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
    plain
        && !tok.starts_with("..")
        && !tok.starts_with('.')
        && !GENERATED.contains(&tok)
        && (tok.contains('/') || EXTS.iter().any(|e| tok.ends_with(e)))
}

#[test]
fn code_map_names_every_crate() {
    let map = code_map();
    let named: Vec<String> = sections(&map).into_iter().map(|(d, _)| d).collect();
    let missing: Vec<String> = members()
        .into_iter()
        .filter(|m| !named.contains(m))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md's code map has no `### `dir/`` section for: {}",
        missing.join(", ")
    );
}

#[test]
fn code_map_paths_exist() {
    let root = root();
    let mut missing = Vec::new();
    let mut checked = 0;
    for (dir, text) in sections(&code_map()) {
        for tok in backticked(&text).into_iter().filter(|t| names_path(t)) {
            checked += 1;
            let crate_dir = root.join(&dir);
            let candidates = [
                crate_dir.join("src").join(&tok),
                crate_dir.join("tests").join(&tok),
                crate_dir.join(&tok),
                root.join(&tok),
            ];
            // A file of a module directory (`trap/scratch.rs`, named
            // `scratch.rs` in a list under `trap/`) is found in the crate's
            // source tree.
            let in_src_tree = || {
                let mut files = Vec::new();
                rust_files(&crate_dir.join("src"), &mut files);
                files.iter().any(|p| p.ends_with(&tok))
            };
            if !candidates.iter().any(|c| c.exists()) && !in_src_tree() {
                missing.push(format!("`{tok}` (section `{dir}/`)"));
            }
        }
    }
    assert!(checked > 30, "checked only {checked} paths of the code map");
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md's code map names paths that do not exist (looked in the crate's source tree, under \
         <crate>/src/, <crate>/tests/, <crate>/ and the root):\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn code_map_path_tokens() {
    assert!(names_path("layout.rs"));
    assert!(names_path("tests/programs/"));
    assert!(names_path("tests/data/deref.c"));
    assert!(!names_path("gl_traps.c"));
    assert!(!names_path("../shared"));
    assert!(!names_path("corpus/<target>/"));
    assert!(!names_path("abi::gl_sin"));
    assert!(!names_path("SrcLoc"));
    assert!(!names_path(".so"));
    let s = sections("### `ir/` (crate `guardlift-ir`)\n- `parse.rs` — x\n### `docs/`\n`IR.md`\n");
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].0, "ir");
    assert_eq!(backticked(&s[0].1), vec!["parse.rs"]);
    assert_eq!(s[1].0, "docs");
    assert!(has_workspace_lints(
        "[package]\nname = \"x\"\n\n[lints]\nworkspace = true\n"
    ));
    assert!(!has_workspace_lints(
        "[lints.rust]\nmissing_docs = \"warn\"\n"
    ));
    assert!(!has_workspace_lints(
        "[lints]\n[dependencies]\nworkspace = true\n"
    ));
}

// ---------------------------------------------------------------------------
// The lexer: functions and their extent.

/// A function found in a source file.
#[derive(Debug, PartialEq)]
struct FnSpan {
    name: String,
    /// 1-based line of `fn`.
    start: usize,
    /// 1-based line of its closing brace.
    end: usize,
}

impl FnSpan {
    fn lines(&self) -> usize {
        self.end - self.start + 1
    }
}

/// The code of `text` with comments, strings and char literals blanked
/// (newlines kept, so positions keep their line), as chars.
fn code_only(text: &str) -> Vec<char> {
    let s: Vec<char> = text.chars().collect();
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    // Blanks s[from..to] into `out`, keeping newlines.
    let blank = |out: &mut Vec<char>, s: &[char], from: usize, to: usize| {
        for &c in &s[from..to.min(s.len())] {
            out.push(if c == '\n' { '\n' } else { ' ' });
        }
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        let prev_ident = i > 0 && ident(s[i - 1]);
        let end = if c == '/' && next == Some('/') {
            (i..s.len()).find(|&j| s[j] == '\n').unwrap_or(s.len())
        } else if c == '/' && next == Some('*') {
            block_comment_end(&s, i)
        } else if c == '"' {
            string_end(&s, i + 1)
        } else if !prev_ident
            && (c == 'r' || (c == 'b' && next == Some('r')))
            && raw_start(&s, i).is_some()
        {
            raw_start(&s, i).map_or(i + 1, |(open, hashes)| raw_end(&s, open, hashes))
        } else if c == '\'' {
            char_end(&s, i)
        } else {
            out.push(c);
            i += 1;
            continue;
        };
        blank(&mut out, &s, i, end);
        i = end;
    }
    out
}

/// The end (exclusive) of the block comment at `i` (they nest).
fn block_comment_end(s: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < s.len() {
        if s[i] == '/' && s.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    s.len()
}

/// The end (exclusive) of a string whose body starts at `i`.
fn string_end(s: &[char], mut i: usize) -> usize {
    while i < s.len() {
        match s[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    s.len()
}

/// At `r"`, `r#"`, `br"`…: the index of the opening quote and the number of `#`.
fn raw_start(s: &[char], i: usize) -> Option<(usize, usize)> {
    let mut j = if s[i] == 'b' { i + 2 } else { i + 1 };
    let hashes = s[j..].iter().take_while(|&&c| c == '#').count();
    j += hashes;
    (s.get(j) == Some(&'"')).then_some((j, hashes))
}

/// The end (exclusive) of a raw string opened at `open` with `hashes` `#`.
fn raw_end(s: &[char], open: usize, hashes: usize) -> usize {
    let mut i = open + 1;
    while i < s.len() {
        if s[i] == '"'
            && s[i + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == '#')
                .count()
                == hashes
        {
            return i + 1 + hashes;
        }
        i += 1;
    }
    s.len()
}

/// The end (exclusive) of a char literal at `i`, or `i + 1` for a lifetime.
fn char_end(s: &[char], i: usize) -> usize {
    match (s.get(i + 1), s.get(i + 2)) {
        (Some('\\'), _) => (i + 2..s.len())
            .find(|&j| s[j] == '\'' && j > i + 2)
            .map_or(s.len(), |j| j + 1),
        (Some(_), Some('\'')) => i + 3,
        _ => i + 1,
    }
}

/// Every `fn name … { … }` of `text` with a body (declarations ending in
/// `;` are not functions here), nested ones included.
fn functions(text: &str) -> Vec<FnSpan> {
    let code = code_only(text);
    let line_at: Vec<usize> = code
        .iter()
        .scan(1, |line, &c| {
            let here = *line;
            if c == '\n' {
                *line += 1;
            }
            Some(here)
        })
        .collect();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    for i in 0..code.len() {
        let is_fn = code[i..].starts_with(&['f', 'n'])
            && (i == 0 || !ident(code[i - 1]))
            && code.get(i + 2).is_some_and(|c| c.is_whitespace());
        if !is_fn {
            continue;
        }
        let mut j = i + 2;
        while j < code.len() && code[j].is_whitespace() {
            j += 1;
        }
        let name: String = code[j..].iter().take_while(|&&c| ident(c)).collect();
        if name.is_empty() {
            continue;
        }
        if let Some(close) = body_end(&code, j) {
            out.push(FnSpan {
                name,
                start: line_at[i],
                end: line_at[close],
            });
        }
    }
    out
}

/// From a function's name at `j`: the `}` closing its body, or `None` when
/// a `;` comes first (a declaration).
fn body_end(code: &[char], j: usize) -> Option<usize> {
    let mut parens = 0i32;
    let mut k = j;
    let open = loop {
        match code.get(k)? {
            '(' | '[' | '<' => parens += 1,
            ')' | ']' => parens -= 1,
            '>' if code.get(k.wrapping_sub(1)) != Some(&'-') => parens -= 1,
            ';' if parens <= 0 => return None,
            '{' if parens <= 0 => break k,
            _ => {}
        }
        k += 1;
    };
    let mut depth = 0;
    for (k, &c) in code.iter().enumerate().skip(open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

#[test]
fn lexer_blanks_comments_strings_and_chars() {
    let src = "a // { x\nb /* { /* } */ } */ c \"{\\\"}\" r#\"}\"# 'x' '{' '\\'' 'a: d";
    let code: String = code_only(src).into_iter().collect();
    assert_eq!(code.len(), src.chars().count(), "positions are kept");
    assert!(!code.contains(['{', '}', 'x']), "{code:?}");
    assert!(code.contains("a: d"), "a lifetime's name is code: {code:?}");
    assert!(code.contains('\n'));
    assert!(code.contains(" c "));
    let bytes: String = code_only("br\"{\" b\"}\" z").into_iter().collect();
    assert!(!bytes.contains(['{', '}']), "{bytes:?}");
    assert_eq!(bytes.split_whitespace().collect::<Vec<_>>(), vec!["b", "z"]);
}

#[test]
fn lexer_finds_functions_and_their_extent() {
    let src = r#"//! x
fn one() {
    let s = "}}}";
    let c = '}';
}

impl<'a> T<'a> {
    pub(crate) fn two<F: Fn(u8) -> u8>(&self, f: F) -> Vec<u8>
    where
        F: Copy,
    {
        // }
        fn inner() {}
        vec![f(1)]
    }
}

trait U {
    fn decl(&self) -> u8;
    fn with_default(&self) -> u8 { 1 }
}
type P = fn(u8) -> u8;
"#;
    let fns = functions(src);
    let got: Vec<(&str, usize, usize)> = fns
        .iter()
        .map(|f| (f.name.as_str(), f.start, f.end))
        .collect();
    assert_eq!(
        got,
        vec![
            ("one", 2, 5),
            ("two", 8, 15),
            ("inner", 13, 13),
            ("with_default", 20, 20),
        ]
    );
    assert_eq!(fns[1].lines(), 8);
}

#[test]
fn long_reason_is_read_from_the_header_only() {
    assert!(has_long_reason(
        "//! A.\n//!\n//! tidy: long because one table.\nfn x() {}\n"
    ));
    assert!(!has_long_reason("//! A.\n\n// tidy: long because no.\n"));
    assert!(!has_long_reason(
        "//! A.\nfn x() {}\n//! tidy: long because late\n"
    ));
    assert_eq!(
        header("#![allow(x)]\n//! A\n//! B\nuse y;\n"),
        vec!["//! A", "//! B"]
    );
}

/// The mutation runs' patches (fuzz/mutants/, fuzz/README.md "Mutation
/// score") still apply to the tree: a patch that rotted would silently
/// measure nothing. `git apply --check` changes no file.
#[test]
fn mutant_patches_apply() {
    let dir = root().join("fuzz/mutants");
    let mut patches: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "patch"))
        .collect();
    patches.sort();
    assert!(patches.len() >= 6, "the mutants: {patches:?}");
    for p in patches {
        let o = std::process::Command::new("git")
            .current_dir(root())
            .args(["apply", "--check"])
            .arg(&p)
            .output()
            .expect("git (needed by this test: apt-get install git)");
        assert!(
            o.status.success(),
            "{} no longer applies: regenerate it against the tree\n{}",
            rel(&p),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// `Runtime`'s inherent methods are the embedder API (issue 32): what an
/// interpreter embedding guardlift calls. Everything else the engines use
/// lives in the `guardlift_runtime::internals` traits. A new inherent `pub
/// fn` is a decision about the embedder API: add it here on purpose.
#[test]
fn runtime_embedder_api_is_the_inherent_surface() {
    const EMBEDDER_API: &[&str] = &[
        "try_new",
        "new",
        "layout",
        "mode",
        "configure",
        "close_log",
        "jit_debug",
        "set_jit_debug",
        "set_report_handler",
        "flush_reports",
        "take_reports",
        "peek_reports",
        "register_object",
        "register_object_from",
        "object_freed",
        "object_freed_from",
        "set_host_stacks",
        "object_record",
        "bind_attr_slow_paths",
        "take_output",
        "enable_watch",
        "watch_status",
    ];
    let mut found = Vec::new();
    for p in src_files() {
        if !rel(&p).starts_with("runtime/src/") {
            continue;
        }
        let text = read(&p);
        let mut inside = false;
        for line in text.lines() {
            if line == "impl Runtime {" {
                inside = true;
            } else if inside && line == "}" {
                inside = false;
            } else if inside {
                if let Some(rest) = line.strip_prefix("    pub fn ") {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    found.push((name, rel(&p)));
                }
            }
        }
    }
    let extra: Vec<_> = found
        .iter()
        .filter(|(n, _)| !EMBEDDER_API.contains(&n.as_str()))
        .collect();
    assert!(
        extra.is_empty(),
        "inherent `pub fn`s of Runtime outside the embedder API (move them to a \
         `guardlift_runtime::internals` trait, or add them to EMBEDDER_API on purpose): {extra:?}"
    );
    let missing: Vec<_> = EMBEDDER_API
        .iter()
        .filter(|n| !found.iter().any(|(f, _)| f == *n))
        .collect();
    assert!(
        missing.is_empty(),
        "embedder API methods not found: {missing:?}"
    );
}

/// The top-level modules of a crate's `src/` (a file or a directory) and,
/// for each, the sibling modules its code names (`crate::m`, `use crate::{m,
/// ..}`; comments and doc links do not count).
fn module_graph(src: &Path) -> std::collections::BTreeMap<String, BTreeSet<String>> {
    let mut text_of = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap_or_else(|e| panic!("{}: {e}", src.display())) {
        let p = entry.expect("a directory entry").path();
        let name = p
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("")
            .to_string();
        let text = if p.is_dir() {
            let mut files = Vec::new();
            rust_files(&p, &mut files);
            files.iter().map(|f| read(f)).collect::<Vec<_>>().join("\n")
        } else if p.extension().is_some_and(|x| x == "rs") && name != "lib" && name != "main" {
            read(&p)
        } else {
            continue;
        };
        let code: String = text
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        text_of.insert(name, code);
    }
    let names: BTreeSet<String> = text_of.keys().cloned().collect();
    let ident = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    text_of
        .iter()
        .map(|(m, code)| {
            let mut deps = BTreeSet::new();
            for (i, _) in code.match_indices("crate::") {
                let rest = &code[i + "crate::".len()..];
                if let Some(group) = rest.strip_prefix('{') {
                    let group = group.split('}').next().unwrap_or("");
                    deps.extend(group.split(',').map(ident));
                } else {
                    deps.insert(ident(rest));
                }
            }
            deps.retain(|d| names.contains(d) && d != m);
            (m.clone(), deps)
        })
        .collect()
}

/// The modules of `graph` that lie on a cycle.
fn modules_on_cycles(graph: &std::collections::BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    // A module is on a cycle when it can reach itself.
    let reaches = |from: &str, to: &str| {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&str> = graph[from].iter().map(String::as_str).collect();
        while let Some(m) = todo.pop() {
            if m == to {
                return true;
            }
            if seen.insert(m) {
                todo.extend(graph[m].iter().map(String::as_str));
            }
        }
        false
    };
    graph.keys().filter(|m| reaches(m, m)).cloned().collect()
}

/// Issue 31: no circle between the modules of a crate (`interp`'s adstack
/// buffer and frames, `ir`'s opcode table and instructions, its module and
/// analyses used each other). `runtime` is layered at a finer grain
/// (`trap::scratch` sits below `runtime`, the trap handler above; its
/// `lib.rs` lists the levels), so it is checked module by module there.
#[test]
fn no_module_cycles_inside_a_crate() {
    let mut bad = Vec::new();
    for krate in members() {
        if krate == "runtime" {
            continue;
        }
        let src = root().join(&krate).join("src");
        if !src.is_dir() {
            continue;
        }
        let on_cycles = modules_on_cycles(&module_graph(&src));
        if !on_cycles.is_empty() {
            bad.push(format!("{krate}: {on_cycles:?}"));
        }
    }
    assert!(
        bad.is_empty(),
        "modules that use each other (move the shared piece down): {bad:?}"
    );
}

#[test]
fn module_graph_sees_a_cycle() {
    let dir = std::env::temp_dir().join(format!("guardlift-tidy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("a.rs"), "use crate::b::X; // crate::c\n").expect("write");
    std::fs::write(dir.join("b.rs"), "use crate::{a, c};\n").expect("write");
    std::fs::write(dir.join("c.rs"), "/// [`crate::a`]\nfn f() {}\n").expect("write");
    let g = module_graph(&dir);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(
        modules_on_cycles(&g),
        vec!["a".to_string(), "b".to_string()]
    );
}

/// Every path a doc names with a `/` (`cli/src/run.rs`, `tests/programs/`)
/// exists: from the root, from a crate's directory or its `src/`, or as
/// the end of a path in the tree (issue 31: stale references survived in
/// TARGETS, INSTRUMENTATION and EMBEDDING after files moved).
/// Paths the docs name in other projects' trees.
const EXTERNAL: &[&str] = &["src/ion/moves.rs"];

#[test]
fn doc_paths_exist() {
    let root = root();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.push(root.join("README.md"));
    docs.sort();
    let mut all_files = Vec::new();
    for m in members() {
        rust_files(&root.join(&m), &mut all_files);
    }
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in &docs {
        for tok in backticked(&read(doc)) {
            // A path: it has a `/`, and ends in a source or doc extension
            // or a `/` (not `adstack.push/pop`, `0/0`, `/tmp/perf-PID.map`).
            const EXTS: &[&str] = &[".rs", ".c", ".h", ".md", ".toml", ".glir", ".patch", "/"];
            if !names_path(&tok)
                || !tok.contains('/')
                || tok.starts_with('/')
                || !EXTS.iter().any(|e| tok.ends_with(e))
                || EXTERNAL.contains(&tok.as_str())
            {
                continue;
            }
            checked += 1;
            let t = tok.trim_end_matches('/');
            let found = root.join(t).exists()
                || root.join("../shared").join(t).exists()
                || members().iter().any(|m| {
                    root.join(m).join(t).exists() || root.join(m).join("src").join(t).exists()
                })
                || all_files.iter().any(|p| p.ends_with(t));
            if !found {
                missing.push(format!("{}: `{tok}`", rel(doc)));
            }
        }
    }
    assert!(checked > 100, "checked only {checked} paths in docs/");
    assert!(
        missing.is_empty(),
        "docs name paths that do not exist (fix the reference, or the file moved):\n  {}",
        missing.join("\n  ")
    );
}
