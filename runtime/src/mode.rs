//! The check mode ([`Mode`]), defined by the contract crate
//! (`guardlift-abi`): a leaf of the module graph, so that
//! [`crate::options`] parses it without depending on [`crate::runtime`].

pub use guardlift_abi::Mode;
