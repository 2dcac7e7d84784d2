//! [`Mode`]: what a failed check does, as the runtime, the lowering and the
//! object paths' support library name it.

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
    /// Every mode.
    pub const ALL: [Mode; 3] = [Mode::Abort, Mode::Recover, Mode::Trap];

    /// The name on the command line and in `GUARDLIFT_OPTIONS`.
    pub const fn name(self) -> &'static str {
        match self {
            Mode::Abort => "abort",
            Mode::Recover => "recover",
            Mode::Trap => "trap",
        }
    }

    /// The mode called `s`.
    pub fn from_name(s: &str) -> Option<Self> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
    }
}
