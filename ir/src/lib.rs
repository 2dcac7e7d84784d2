//! guardlift IR: the one representation a JIT emits its object-model and
//! adstack code through.
//!
//! - [`types`], [`inst`], [`module`]: the data model.
//! - [`builder`]: an API that infers types and verifies on `finish`.
//! - [`opcode`]: the opcode table and the one list of each form's operands.
//! - [`parse`] / [`print`](mod@print): the text format of `spec/IR.md` (round-trips).
//! - [`verify`]: types, SSA dominance, block params, calls, terminators,
//!   adstack handle rules, layout; errors carry `LINE:COL`. [`verified`]:
//!   a module with the verifier's word ([`Verified`]).
//! - [`analysis`]: the CFG (`flowgraph`, `dominator_tree`) and the
//!   analyses the engines share (adstack capacities, linking, [`elide`]:
//!   underflow checks that cannot fail; [`hoist`]: loops whose object
//!   tests run once per entry).
//!
//! This crate knows nothing of execution: it depends only on the runtime's
//! layout definitions.

pub mod analysis;
pub mod builder;
pub mod error;
pub mod inst;
pub mod literal;
pub mod module;
pub mod opcode;
pub mod parse;
pub mod print;
pub mod types;
pub mod verified;
pub mod verify;

pub use analysis::attrgroup;
pub use analysis::elide;
pub use analysis::hoist;
pub use analysis::looprange;
pub use analysis::rawgroup;

pub use error::{Diagnostic, ParseError, SourceError, VerifyErrors};
pub use inst::*;
pub use module::*;
pub use parse::parse_module;
pub use print::print_module;
pub use types::Type;
pub use verified::Verified;
pub use verify::verify_module;

/// Parses and verifies, the way every front door (CLI, API) does.
pub fn parse_and_verify(text: &str) -> Result<Module, SourceError> {
    let m = parse_module(text)?;
    verify_module(&m)?;
    Ok(m)
}

/// [`parse_and_verify`], the module carrying the verifier's word
/// ([`Verified`]: the JIT compiles it without verifying it again).
pub fn parse_verified(text: &str) -> Result<Verified, SourceError> {
    Ok(Verified::new(parse_module(text)?)?)
}
