//! `run --link LIB.so` on the host engines (spec §7): the shared libraries
//! are read (`guardlift_aot::library`: the one decision of which library
//! provides an extern, shared with the object targets), loaded with
//! `dlopen`, and every extern of the module that is not a built-in takes
//! the address of its name in the first library (command-line order) that
//! defines it. The JIT gets the addresses as host symbols, as an embedder
//! gives them; the interpreter gets a host function per extern that calls
//! the address natively (`native`). The libraries stay loaded as long as
//! the [`Libraries`] value, which the run keeps beyond the compiled code
//! and the interpreter.

use crate::native::NativeSig;
use guardlift_aot::library::{self, SharedLibrary};
use guardlift_interp::HostFn;
use guardlift_ir::{Diagnostic, Module};
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::Arc;

/// One library loaded with `dlopen`.
struct Loaded {
    lib: SharedLibrary,
    handle: *mut libc::c_void,
}

/// The loaded libraries; unloaded on drop.
pub struct Libraries {
    loaded: Vec<Loaded>,
}

/// The last `dlerror()` message.
fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until
    // the next dl* call on this thread; it is copied at once.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown error".into()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

impl Libraries {
    /// Reads and loads `given` (in order): an error naming the file
    /// (`LIB: error: ...`) when one is missing, is no ELF shared library,
    /// is built for another architecture or `dlopen` refuses it.
    pub fn open(given: &[String]) -> Result<Libraries, guardlift_aot::AotError> {
        let mut loaded = Vec::with_capacity(given.len());
        for lib in library::read_all(given, guardlift_jit::Target::Host)? {
            let cannot = |msg: String| guardlift_aot::AotError::Library {
                path: lib.given.clone(),
                msg,
            };
            let path = CString::new(lib.path.as_os_str().as_encoded_bytes())
                .map_err(|_| cannot("the path has a NUL byte".into()))?;
            // SAFETY: loading a library runs its initialisers: what `--link`
            // asks for (the user's code, trusted as the program itself is).
            let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            if handle.is_null() {
                return Err(cannot(format!("cannot load the library: {}", dl_error())));
            }
            loaded.push(Loaded { lib, handle });
        }
        Ok(Libraries { loaded })
    }

    /// The address of every extern of `m` that is not a built-in and that
    /// a library defines (the first one on the command line), by name.
    /// Externs no library has are left to the engines' link error.
    pub fn resolve(&self, m: &Module) -> HashMap<String, usize> {
        let mut out = HashMap::new();
        let libs: Vec<SharedLibrary> = self.loaded.iter().map(|l| l.lib.clone()).collect();
        for e in &m.externs {
            // A built-in name is never taken from a library (a bad built-in
            // signature stays the engines' error).
            if !matches!(e.resolve_builtin(), Ok(None)) {
                continue;
            }
            let Some(p) = library::provider(&libs, &e.name) else {
                continue;
            };
            let Some(l) = self.loaded.iter().find(|l| l.lib.path == p.path) else {
                continue;
            };
            let Ok(name) = CString::new(e.name.as_str()) else {
                continue;
            };
            // SAFETY: `l.handle` is a live handle from dlopen; the name is
            // NUL-terminated.
            let addr = unsafe { libc::dlsym(l.handle, name.as_ptr()) };
            if !addr.is_null() {
                out.insert(e.name.clone(), addr as usize);
            }
        }
        out
    }

    /// The interpreter's host functions for the externs `resolve` found: each
    /// calls its address with the extern's signature; a signature the
    /// interpreter cannot call natively is a link error at the extern.
    pub fn host_fns(
        m: &Module,
        addrs: &HashMap<String, usize>,
    ) -> Result<HashMap<String, HostFn>, Diagnostic> {
        let mut out = HashMap::new();
        for e in &m.externs {
            let Some(&addr) = addrs.get(&e.name) else {
                continue;
            };
            let sig = NativeSig::new(&e.params, e.ret).map_err(|why| {
                Diagnostic::new(
                    e.loc,
                    format!("cannot call @{} from the interpreter: {why}", e.name),
                )
            })?;
            let f: HostFn = Arc::new(move |args: &[u64]| {
                // SAFETY: `addr` is the library's definition of the extern's
                // name, called with the extern's signature: the declaration
                // is the user's promise of the C function's type (as for the
                // JIT, which calls it with the same signature). The library
                // stays loaded while the interpreter runs (`Libraries`
                // outlives it in `run`). A fault in it is reported at the IR
                // call (`native_fault`).
                crate::native_fault::guarded(|| unsafe { sig.call(addr, args) })
            });
            out.insert(e.name.clone(), f);
        }
        Ok(out)
    }
}

impl Drop for Libraries {
    fn drop(&mut self) {
        for l in self.loaded.drain(..).rev() {
            // SAFETY: a handle from dlopen, closed once; nothing compiled
            // or interpreted that calls into it is left (the run drops its
            // engines first).
            unsafe { libc::dlclose(l.handle) };
        }
    }
}
