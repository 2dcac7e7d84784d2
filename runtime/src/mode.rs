//! The check mode ([`Mode`]): a leaf of the module graph, so that
//! [`crate::options`] parses it without depending on [`crate::runtime`].

/// What a failed check does (spec §6).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Report, then abort the process.
    #[default]
    Abort,
    /// Record, apply the recover-mode effect, go on.
    Recover,
    /// A trapping instruction; the signal handler reports and aborts.
    Trap,
}

impl Mode {
    /// The mode's name in options and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Mode::Abort => "abort",
            Mode::Recover => "recover",
            Mode::Trap => "trap",
        }
    }
    /// The mode called `s`, if any.
    pub fn from_name(s: &str) -> Option<Self> {
        [Mode::Abort, Mode::Recover, Mode::Trap]
            .into_iter()
            .find(|m| m.name() == s)
    }
}
