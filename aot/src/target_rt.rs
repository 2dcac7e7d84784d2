//! Finding and checking the target runtime library,
//! `libguardlift_target_rt.a` (crate `aot/rt`, `guardlift-target-rt`),
//! that object targets link (docs/TARGETS.md, "One runtime"):
//! `guardlift run --target x86_64|aarch64` finds and checks it here.
//!
//! [`find`] looks, for a target's triple, in this order and takes the
//! first place that names a file, with no fallback past it:
//!
//! 1. `GUARDLIFT_TARGET_RT_<ARCH>` (`ARCH`: `X86_64`, `AARCH64`) when set:
//!    that file, and only it;
//! 2. next to the running executable in cargo's layout: for
//!    `target/release/guardlift`, `target/release/libguardlift_target_rt.a`
//!    for the host's own triple, `target/<triple>/release/...` for another
//!    (what `scripts/build-target-rt ARCH` builds);
//! 3. `$GUARDLIFT_CACHE_DIR/rt/<triple>/libguardlift_target_rt.a`.
//!
//! [`check`] refuses a file that is not an `ar` archive, whose
//! `gl_rt_abi` (found through the archive's symbol index, read from the
//! defining ELF member's section) is missing or differs from this build's
//! [`guardlift_abi::ABI_STAMP`], or whose code is for another
//! architecture. Every refusal is a [`TargetRtError`] naming the command
//! that builds the right one, `scripts/build-target-rt ARCH`.

use guardlift_abi::{ABI_STAMP, STAMP_SYMBOL};
use guardlift_jit::Target;
use object::read::archive::ArchiveFile;
use object::{Object, ObjectSection, ObjectSymbol};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The library's file name (cargo's name for the staticlib).
pub const LIB_NAME: &str = "libguardlift_target_rt.a";

/// The command that builds the library for an architecture (from the
/// repository's root).
pub const BUILD_SCRIPT: &str = "scripts/build-target-rt";

/// Why there is no usable target runtime library.
#[derive(Debug, thiserror::Error)]
pub enum TargetRtError {
    /// No library in any place [`find`] looks.
    #[error(
        "--target {arch} needs the guardlift runtime for {triple} ({LIB_NAME}), \
         not found (looked in: {}): run {BUILD_SCRIPT} {arch}",
        list(.searched)
    )]
    Missing {
        /// The architecture (`x86_64`, `aarch64`).
        arch: &'static str,
        /// Its triple.
        triple: String,
        /// Where it was looked for, in order.
        searched: Vec<PathBuf>,
    },
    /// A host that is none of the architectures the library is built for.
    #[error("--target {0} has no guardlift runtime library (x86_64 and aarch64 only)")]
    Unsupported(&'static str),
    /// The file cannot be read.
    #[error("cannot read the guardlift runtime {}: {source}: run {BUILD_SCRIPT} {arch}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The architecture it was wanted for.
        arch: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Not a static library holding `gl_rt_abi` for this architecture.
    #[error("{} is not the guardlift runtime for {arch}: {why}: run {BUILD_SCRIPT} {arch}", .path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The architecture it was wanted for.
        arch: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// Built from another version of the contract.
    #[error(
        "{} is stale: its ABI stamp is {found:016x}, this guardlift's is \
         {expected:016x}: run {BUILD_SCRIPT} {arch}",
        .path.display()
    )]
    Stale {
        /// The file.
        path: PathBuf,
        /// The architecture it was wanted for.
        arch: &'static str,
        /// Its `gl_rt_abi`.
        found: u64,
        /// [`ABI_STAMP`].
        expected: u64,
    },
}

fn list(paths: &[PathBuf]) -> String {
    let v: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    v.join(", ")
}

/// A checked library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetRt {
    /// The archive to link.
    pub path: PathBuf,
    /// Its triple.
    pub triple: String,
    /// Its `gl_rt_abi` (equal to [`ABI_STAMP`]).
    pub stamp: u64,
}

/// The architecture of a target the library exists for (`Host` resolved).
fn arch_of(target: Target) -> Result<Target, TargetRtError> {
    let t = match target {
        Target::Host => Target::host_arch().ok_or(TargetRtError::Unsupported("host"))?,
        t => t,
    };
    match t {
        Target::X86_64 | Target::Aarch64 => Ok(t),
        other => Err(TargetRtError::Unsupported(other.name())),
    }
}

/// The environment variable that names the library for `target`.
pub fn env_var(target: Target) -> String {
    format!("GUARDLIFT_TARGET_RT_{}", target.name().to_ascii_uppercase())
}

/// Where [`find`] looks, in order, given the environment variable's value,
/// the running executable and the cache directory (pure, for tests): the
/// variable alone when it is set; else cargo's layout next to `exe`, then
/// the cache.
pub fn candidates(
    target: Target,
    env: Option<OsString>,
    exe: Option<&Path>,
    cache: Option<&Path>,
) -> Result<Vec<PathBuf>, TargetRtError> {
    let t = arch_of(target)?;
    if let Some(p) = env {
        return Ok(vec![PathBuf::from(p)]);
    }
    let triple = t.triple();
    let mut out = Vec::new();
    // target/<profile>/guardlift (a test binary: target/<profile>/deps/x).
    let dir = exe.and_then(Path::parent).map(|d| match d.file_name() {
        Some(n) if n == "deps" => d.parent().unwrap_or(d),
        _ => d,
    });
    if let Some(dir) = dir {
        if t.is_native() {
            out.push(dir.join(LIB_NAME));
        } else if let (Some(mut top), Some(profile)) = (dir.parent(), dir.file_name()) {
            // An executable built with an explicit `--target` lives in
            // target/<its triple>/<profile>: the target directory is above.
            if top
                .file_name()
                .is_some_and(|n| n.to_string_lossy().contains("-linux-"))
            {
                top = top.parent().unwrap_or(top);
            }
            out.push(top.join(&triple).join(profile).join(LIB_NAME));
        }
    }
    if let Some(c) = cache {
        out.push(c.join("rt").join(&triple).join(LIB_NAME));
    }
    Ok(out)
}

/// The library for `target`, found as the module header says and checked
/// ([`check`]); the first place that has a file decides.
pub fn find(target: Target) -> Result<TargetRt, TargetRtError> {
    let t = arch_of(target)?;
    check(&locate(t)?, t)
}

/// Where [`find`] finds the library for `target`, unchecked: the first
/// place that has a file.
pub fn locate(target: Target) -> Result<PathBuf, TargetRtError> {
    let t = arch_of(target)?;
    let exe = std::env::current_exe().ok();
    let cache = std::env::var_os("GUARDLIFT_CACHE_DIR").map(PathBuf::from);
    let searched = candidates(
        t,
        std::env::var_os(env_var(t)),
        exe.as_deref(),
        cache.as_deref(),
    )?;
    match searched.iter().find(|p| p.exists()) {
        Some(p) => Ok(p.clone()),
        None => Err(TargetRtError::Missing {
            arch: t.name(),
            triple: t.triple(),
            searched,
        }),
    }
}

/// Checks that `path` is the library for `target` built from this
/// contract: an archive whose symbol index names `gl_rt_abi`, defined in
/// an ELF member for the target's architecture, equal to [`ABI_STAMP`].
pub fn check(path: &Path, target: Target) -> Result<TargetRt, TargetRtError> {
    let t = arch_of(target)?;
    let arch = t.name();
    let data = std::fs::read(path).map_err(|source| TargetRtError::Io {
        path: path.to_path_buf(),
        arch,
        source,
    })?;
    let invalid = |why: String| TargetRtError::Invalid {
        path: path.to_path_buf(),
        arch,
        why,
    };
    let found = read_stamp(&data, t).map_err(invalid)?;
    if found != ABI_STAMP {
        return Err(TargetRtError::Stale {
            path: path.to_path_buf(),
            arch,
            found,
            expected: ABI_STAMP,
        });
    }
    Ok(TargetRt {
        path: path.to_path_buf(),
        triple: t.triple(),
        stamp: found,
    })
}

/// `gl_rt_abi` of the archive `data` for `target`: the symbol index gives
/// the member; the member's symbol gives section and offset; the value is
/// a `u64` in the member's byte order.
fn read_stamp(data: &[u8], target: Target) -> Result<u64, String> {
    let archive = ArchiveFile::parse(data).map_err(|e| format!("not an ar archive ({e})"))?;
    let symbols = archive
        .symbols()
        .map_err(|e| format!("a bad symbol index ({e})"))?
        .ok_or("an archive without a symbol index")?;
    let mut member = None;
    for s in symbols {
        let s = s.map_err(|e| format!("a bad symbol index ({e})"))?;
        if s.name() == STAMP_SYMBOL.as_bytes() {
            member = Some(s.offset());
            break;
        }
    }
    let member = member.ok_or_else(|| format!("no {STAMP_SYMBOL} in its symbol index"))?;
    let bytes = archive
        .member(member)
        .and_then(|m| m.data(data))
        .map_err(|e| format!("a bad member ({e})"))?;
    let file = object::File::parse(bytes).map_err(|e| format!("a bad object member ({e})"))?;
    let want = match target {
        Target::Aarch64 => object::Architecture::Aarch64,
        _ => object::Architecture::X86_64,
    };
    if file.architecture() != want {
        return Err(format!(
            "its code is for {:?}, not {}",
            file.architecture(),
            target.name()
        ));
    }
    let sym = file
        .symbol_by_name(STAMP_SYMBOL)
        .filter(|s| s.is_definition())
        .ok_or_else(|| format!("its member does not define {STAMP_SYMBOL}"))?;
    let section = sym
        .section_index()
        .and_then(|i| file.section_by_index(i).ok())
        .ok_or_else(|| format!("{STAMP_SYMBOL} has no section"))?;
    let contents = section
        .data()
        .map_err(|e| format!("{STAMP_SYMBOL}'s section cannot be read ({e})"))?;
    let at = sym.address().wrapping_sub(section.address());
    let word = usize::try_from(at)
        .ok()
        .and_then(|at| contents.get(at..at.checked_add(8)?))
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
        .ok_or_else(|| format!("{STAMP_SYMBOL} is outside its section"))?;
    Ok(if file.is_little_endian() {
        u64::from_le_bytes(word)
    } else {
        u64::from_be_bytes(word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("guardlift-target-rt-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d.join(name)
    }

    #[test]
    fn places_follow_the_environment_then_cargo_then_the_cache() {
        let exe = Path::new("/w/target/release/guardlift");
        let cache = Path::new("/c");
        let host = Target::host_arch().unwrap();
        let other = if host == Target::X86_64 {
            Target::Aarch64
        } else {
            Target::X86_64
        };
        let p = candidates(host, None, Some(exe), Some(cache)).unwrap();
        assert_eq!(
            p,
            [
                PathBuf::from("/w/target/release").join(LIB_NAME),
                PathBuf::from("/c/rt").join(host.triple()).join(LIB_NAME),
            ]
        );
        // A test binary (target/release/deps/x) looks in target/release.
        let t = Path::new("/w/target/release/deps/aot-1234");
        let p = candidates(other, None, Some(t), None).unwrap();
        let cross = format!("/w/target/{}/release/{LIB_NAME}", other.triple());
        assert_eq!(p, [PathBuf::from(&cross)]);
        // An executable of an explicit `--target` build.
        let own = format!("/w/target/{}/release/guardlift", host.triple());
        let p = candidates(other, None, Some(Path::new(&own)), None).unwrap();
        assert_eq!(p, [PathBuf::from(&cross)]);
        // The variable alone, when set.
        let p = candidates(other, Some("/x.a".into()), Some(exe), Some(cache)).unwrap();
        assert_eq!(p, [PathBuf::from("/x.a")]);
        assert_eq!(env_var(Target::Aarch64), "GUARDLIFT_TARGET_RT_AARCH64");
    }

    #[test]
    fn a_missing_library_names_the_script() {
        let e = TargetRtError::Missing {
            arch: "aarch64",
            triple: Target::Aarch64.triple(),
            searched: vec![PathBuf::from("/nowhere/lib.a")],
        };
        let text = e.to_string();
        assert!(
            text.contains("run scripts/build-target-rt aarch64"),
            "{text}"
        );
        assert!(text.contains("aarch64-unknown-linux-gnu") && text.contains("/nowhere/lib.a"));
        let missing = tmp("absent.a");
        let e = check(&missing, Target::X86_64).unwrap_err();
        assert!(matches!(e, TargetRtError::Io { .. }), "{e}");
        assert!(
            e.to_string().contains("scripts/build-target-rt x86_64"),
            "{e}"
        );
    }

    #[test]
    fn garbage_and_empty_archives_are_refused() {
        let junk = tmp("junk.a");
        std::fs::write(&junk, b"this is not an archive at all").unwrap();
        let e = check(&junk, Target::X86_64).unwrap_err();
        assert!(matches!(e, TargetRtError::Invalid { .. }), "{e}");
        assert!(e.to_string().contains("not an ar archive"), "{e}");
        assert!(
            e.to_string()
                .ends_with("run scripts/build-target-rt x86_64"),
            "{e}"
        );
        // A well-formed archive without the stamp.
        let empty = tmp("empty.a");
        std::fs::write(&empty, b"!<arch>\n").unwrap();
        let e = check(&empty, Target::Aarch64).unwrap_err();
        assert!(matches!(e, TargetRtError::Invalid { .. }), "{e}");
        assert!(e.to_string().contains("aarch64"), "{e}");
        std::fs::remove_file(junk).unwrap();
        std::fs::remove_file(empty).unwrap();
    }
}
