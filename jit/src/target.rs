//! Targets and the Cranelift ISA settings every engine here uses.

use crate::error::JitError;
use cranelift_codegen::isa::{self, OwnedTargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use std::fmt;

/// Where code runs: the host (JIT), or an explicit architecture (Linux ELF).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Target {
    #[default]
    Host,
    X86_64,
    Aarch64,
    /// RV64GC (`riscv64gc-unknown-linux-gnu`, LP64D).
    Riscv64,
}

impl Target {
    /// Accepts `host`, `x86_64`, `aarch64`, `riscv64` (also `riscv64gc`) and
    /// the triples `x86_64-unknown-linux-gnu` / `aarch64-unknown-linux-gnu` /
    /// `riscv64gc-unknown-linux-gnu`.
    pub fn parse(s: &str) -> Result<Target, JitError> {
        match s {
            "host" | "native" => Ok(Target::Host),
            "x86_64" | "x86-64" | "x86_64-unknown-linux-gnu" => Ok(Target::X86_64),
            "aarch64" | "arm64" | "aarch64-unknown-linux-gnu" => Ok(Target::Aarch64),
            "riscv64" | "riscv64gc" | "riscv64gc-unknown-linux-gnu" => Ok(Target::Riscv64),
            _ => Err(JitError::Target(s.to_string())),
        }
    }

    /// The name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Target::Host => "host",
            Target::X86_64 => "x86_64",
            Target::Aarch64 => "aarch64",
            Target::Riscv64 => "riscv64",
        }
    }

    /// The explicit target this host is, if it is one of them.
    pub fn host_arch() -> Option<Target> {
        if cfg!(target_arch = "x86_64") {
            Some(Target::X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(Target::Aarch64)
        } else if cfg!(target_arch = "riscv64") {
            Some(Target::Riscv64)
        } else {
            None
        }
    }

    /// Does code for this target run on this host?
    pub fn is_native(self) -> bool {
        self == Target::Host || Target::host_arch() == Some(self)
    }

    /// The target triple (the host's own for [`Target::Host`]).
    pub fn triple(self) -> String {
        match self {
            Target::Host => match cranelift_native::builder() {
                Ok(b) => b.triple().to_string(),
                Err(_) => "unknown".to_string(),
            },
            Target::X86_64 => "x86_64-unknown-linux-gnu".to_string(),
            Target::Aarch64 => "aarch64-unknown-linux-gnu".to_string(),
            Target::Riscv64 => "riscv64gc-unknown-linux-gnu".to_string(),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Cranelift's optimization level.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum OptLevel {
    None,
    #[default]
    Speed,
    SpeedAndSize,
}

impl OptLevel {
    pub fn name(self) -> &'static str {
        match self {
            OptLevel::None => "none",
            OptLevel::Speed => "speed",
            OptLevel::SpeedAndSize => "speed_and_size",
        }
    }
}

fn set(b: &mut settings::Builder, name: &str, value: &str) -> Result<(), JitError> {
    b.set(name, value)
        .map_err(|e| JitError::Codegen(format!("setting {name}={value}: {e}")))
}

/// The RISC-V extensions code for [`Target::Riscv64`] may use: RV64GC
/// (I, M, A, F, D, Zicsr, Zifencei, and C as Zca + Zcd), the baseline of
/// Debian's `riscv64` port (its cross libc is built for it) and of every
/// RISC-V Linux distribution, which qemu-riscv64's default CPU implements.
/// Cranelift requires G; C is not on by default and is set here. Nothing
/// beyond the baseline (Zba/Zbb/Zbs bit manipulation, Zicond, V vectors,
/// Zfa) is enabled: the objects must run on any RV64GC Linux machine.
pub const RISCV64_EXTENSIONS: &[&str] = &[
    "has_m",
    "has_a",
    "has_f",
    "has_d",
    "has_zicsr",
    "has_zifencei",
    "has_c",
];

fn riscv64_baseline(b: &mut isa::Builder) -> Result<(), JitError> {
    for ext in RISCV64_EXTENSIONS {
        b.enable(ext)
            .map_err(|e| JitError::Codegen(format!("riscv64 setting {ext}: {e}")))?;
    }
    for ext in [
        "has_v",
        "has_zba",
        "has_zbb",
        "has_zbc",
        "has_zbs",
        "has_zbkb",
        "has_zicond",
        "has_zfa",
        "has_zcb",
    ] {
        b.set(ext, "false")
            .map_err(|e| JitError::Codegen(format!("riscv64 setting {ext}: {e}")))?;
    }
    Ok(())
}

/// Builds the ISA for `target`. `pic` must be false for the JIT.
///
/// Settings: the optimization level; Cranelift's verifier in debug builds;
/// inline stack probes (adstack frames can be large).
pub(crate) fn build_isa(
    target: Target,
    opt: OptLevel,
    pic: bool,
) -> Result<OwnedTargetIsa, JitError> {
    build_isa_verified(target, opt, pic, cfg!(debug_assertions))
}

/// [`build_isa`] with Cranelift's verifier on or off whatever the build profile.
pub(crate) fn build_isa_verified(
    target: Target,
    opt: OptLevel,
    pic: bool,
    verifier: bool,
) -> Result<OwnedTargetIsa, JitError> {
    let mut fb = settings::builder();
    set(&mut fb, "opt_level", opt.name())?;
    set(&mut fb, "is_pic", if pic { "true" } else { "false" })?;
    set(
        &mut fb,
        "enable_verifier",
        if verifier { "true" } else { "false" },
    )?;
    set(&mut fb, "enable_probestack", "true")?;
    set(&mut fb, "probestack_strategy", "inline")?;
    // Libcalls (none expected) must not assume they are within near range.
    set(&mut fb, "use_colocated_libcalls", "false")?;
    let flags = settings::Flags::new(fb);
    let mut builder = match target {
        Target::Host => {
            cranelift_native::builder().map_err(|e| JitError::Target(format!("host ({e})")))?
        }
        Target::X86_64 | Target::Aarch64 | Target::Riscv64 => isa::lookup_by_name(&target.triple())
            .map_err(|e| JitError::Target(format!("{} ({e})", target.name())))?,
    };
    if target == Target::Riscv64 {
        riscv64_baseline(&mut builder)?;
    }
    builder
        .finish(flags)
        .map_err(|e| JitError::Codegen(format!("building the {target} ISA: {e}")))
}
