//! [`Verified`]: a module the verifier accepted, kept unchanged since.
//!
//! Every front door verifies what it is given ([`crate::verify_module`]),
//! and the JIT's [`Jit::compile`] verifies again, since it takes any
//! [`Module`]. Verifying a big function is a pass of cache misses over all
//! of it (issue 33: 0.07 µs per instruction at 10^4, 0.16 at 10^6); a
//! pipeline that parses, verifies, instruments and compiles in one process
//! need not pay it twice. A [`Verified`] carries the verifier's word with
//! the module: it is only made by verifying ([`Verified::new`],
//! [`crate::parse_verified`]) or by a pass that keeps valid modules valid
//! and says so with `unsafe` ([`Verified::new_unchecked`]:
//! `guardlift_instrument::instrument_verified`), and it hands out no
//! `&mut Module`: [`Verified::into_module`] gives the module back, after
//! which it must be verified again to be a [`Verified`].
//!
//! [`Jit::compile`]: https://docs.rs/guardlift-jit

use crate::error::VerifyErrors;
use crate::module::Module;
use std::ops::Deref;

/// A module [`crate::verify_module`] accepted, unchanged since (module doc).
#[derive(Clone, Debug)]
pub struct Verified {
    module: Module,
}

impl Verified {
    /// Verifies `module`: the errors, or the module with the verifier's word.
    pub fn new(module: Module) -> Result<Verified, VerifyErrors> {
        crate::verify_module(&module)?;
        Ok(Verified { module })
    }

    /// `module` as verified, without verifying it: for passes that turn a
    /// [`Verified`] module into another one (instrumentation). Debug
    /// builds verify it anyway, and panic if it is not valid.
    ///
    /// # Safety
    /// `module` must pass [`crate::verify_module`]. The JIT compiles a
    /// [`Verified`] module without verifying it, and lowering an invalid one
    /// may emit code that reads or writes anywhere.
    pub unsafe fn new_unchecked(module: Module) -> Verified {
        #[cfg(debug_assertions)]
        if let Err(e) = crate::verify_module(&module) {
            panic!("Verified::new_unchecked of a module that does not verify: {e}");
        }
        Verified { module }
    }

    /// The module.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// The module, given back: changing it takes it out of [`Verified`].
    pub fn into_module(self) -> Module {
        self.module
    }
}

impl Deref for Verified {
    type Target = Module;

    fn deref(&self) -> &Module {
        &self.module
    }
}

impl AsRef<Module> for Verified {
    fn as_ref(&self) -> &Module {
        &self.module
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_module_that_verifies_is_verified() {
        let good = crate::parse_module(
            "fn @f() -> i64 {\nentry:\n    %x = iconst.i64 1\n    return %x\n}\n",
        )
        .expect("parses");
        let v = Verified::new(good.clone()).expect("verifies");
        assert_eq!(v.functions.len(), 1);
        assert_eq!(
            crate::print_module(&v.into_module()),
            crate::print_module(&good)
        );
        // A use before its definition parses but does not verify.
        let bad = crate::parse_module("fn @f() -> i64 {\nentry:\n    jump b\nb:\n    return %x\nc:\n    %x = iconst.i64 1\n    jump b\n}\n")
            .expect("parses");
        let e = Verified::new(bad).expect_err("does not verify");
        assert!(e.to_string().contains("%x"), "{e}");
        let e = crate::parse_verified("fn @f() -> i64 {\nentry:\n    jump b\nb:\n    return %x\nc:\n    %x = iconst.i64 1\n    jump b\n}\n")
            .expect_err("does not verify");
        assert!(e.to_string().contains("5:"), "{e}");
    }
}
