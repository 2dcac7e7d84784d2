//! Shared libraries a program is linked with (`run --link LIB.so`, spec
//! §7): what architecture each is built for and which symbols it defines,
//! read from its ELF header and dynamic symbol table. Every engine and
//! target decides from this one reading whether a library provides an
//! extern (the first library on the command line that defines the name),
//! so the host JIT, the interpreter and the object targets agree on what
//! links; the host engines then take the address from the loaded library,
//! the object targets hand the libraries to the linker.

use crate::AotError;
use guardlift_jit::Target;
use object::{Object, ObjectKind, ObjectSymbol};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// A shared library as read from its file.
#[derive(Clone, Debug)]
pub struct SharedLibrary {
    /// The path as given (for messages).
    pub given: String,
    /// The absolute path (what the linker and the loader are given).
    pub path: PathBuf,
    /// The architecture it is built for (`None`: one guardlift has no target for).
    pub arch: Option<Target>,
    /// The ELF machine as a name (for messages).
    pub machine: String,
    /// The global symbols it defines (functions and data), by name.
    defined: HashSet<String>,
}

/// A library error: `LIB: error: MSG` on the command line.
fn bad(given: &str, msg: impl std::fmt::Display) -> AotError {
    AotError::Library {
        path: given.to_string(),
        msg: msg.to_string(),
    }
}

impl SharedLibrary {
    /// Reads the library at `given`: an ELF shared object, else an error
    /// naming the file.
    pub fn read(given: &str) -> Result<SharedLibrary, AotError> {
        let path = std::fs::canonicalize(Path::new(given))
            .map_err(|e| bad(given, format!("cannot open the library: {e}")))?;
        let data = std::fs::read(&path)
            .map_err(|e| bad(given, format!("cannot read the library: {e}")))?;
        let file = object::File::parse(&*data)
            .map_err(|e| bad(given, format!("not an ELF shared library ({e})")))?;
        if file.format() != object::BinaryFormat::Elf || file.kind() != ObjectKind::Dynamic {
            return Err(bad(given, "not an ELF shared library"));
        }
        let (arch, machine) = match file.architecture() {
            object::Architecture::X86_64 => (Some(Target::X86_64), "x86_64".to_string()),
            object::Architecture::Aarch64 => (Some(Target::Aarch64), "aarch64".to_string()),
            other => (None, format!("{other:?}").to_ascii_lowercase()),
        };
        let defined = file
            .dynamic_symbols()
            .filter(|s| s.is_definition() && s.is_global())
            .filter_map(|s| s.name().ok().map(str::to_string))
            .collect();
        Ok(SharedLibrary {
            given: given.to_string(),
            path,
            arch,
            machine,
            defined,
        })
    }

    /// Whether it defines the global symbol `name`.
    pub fn defines(&self, name: &str) -> bool {
        self.defined.contains(name)
    }

    /// An error unless it is built for `target` (an explicit architecture;
    /// `Host` is this machine's).
    pub fn check_arch(&self, target: Target) -> Result<(), AotError> {
        let want = match target {
            Target::Host => Target::host_arch(),
            t => Some(t),
        };
        if want.is_some() && self.arch == want {
            return Ok(());
        }
        let want = want.map_or("this host", Target::name);
        Err(bad(
            &self.given,
            format!("a library for {}, not {want}", self.machine),
        ))
    }
}

/// The first of `libs` (command-line order) that defines `name`.
pub fn provider<'a>(libs: &'a [SharedLibrary], name: &str) -> Option<&'a SharedLibrary> {
    libs.iter().find(|l| l.defines(name))
}

/// Reads every library of `given` and checks it is built for `target`.
pub fn read_all(given: &[String], target: Target) -> Result<Vec<SharedLibrary>, AotError> {
    given
        .iter()
        .map(|g| {
            let l = SharedLibrary::read(g)?;
            l.check_arch(target)?;
            Ok(l)
        })
        .collect()
}
