//! Targets, the Cranelift ISA settings every engine here uses, and the
//! compile tier of each function (full optimization, or the linear-time
//! settings of a big function: docs/CODEGEN.md, "Tiering").

use crate::error::JitError;
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::isa::{self, OwnedTargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_module::{FuncId as ClFuncId, Module, ModuleError, ModuleReloc};
use std::fmt;

/// Where code runs: the host (JIT), or an explicit architecture (Linux ELF).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Target {
    /// The machine the JIT runs on.
    #[default]
    Host,
    /// x86-64 System V (Linux).
    X86_64,
    /// AArch64 (Linux, AAPCS64).
    Aarch64,
}

impl Target {
    /// Accepts `host`, `x86_64`, `aarch64` and the triples
    /// `x86_64-unknown-linux-gnu` / `aarch64-unknown-linux-gnu`.
    pub fn parse(s: &str) -> Result<Target, JitError> {
        match s {
            "host" | "native" => Ok(Target::Host),
            "x86_64" | "x86-64" | "x86_64-unknown-linux-gnu" => Ok(Target::X86_64),
            "aarch64" | "arm64" | "aarch64-unknown-linux-gnu" => Ok(Target::Aarch64),
            _ => Err(JitError::Target(s.to_string())),
        }
    }

    /// The name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Target::Host => "host",
            Target::X86_64 => "x86_64",
            Target::Aarch64 => "aarch64",
        }
    }

    /// The explicit target this host is, if it is one of them.
    pub fn host_arch() -> Option<Target> {
        if cfg!(target_arch = "x86_64") {
            Some(Target::X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(Target::Aarch64)
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
    /// No optimization.
    None,
    /// Optimize for speed.
    #[default]
    Speed,
    /// Optimize for speed and size.
    SpeedAndSize,
}

impl OptLevel {
    /// The name on the command line.
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
        .map_err(|e| JitError::module(format!("setting {name}={value}"), ModuleError::Flag(e)))
}

/// How Cranelift compiles one function.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Tier {
    /// The requested [`OptLevel`] and the backtracking register allocator:
    /// every function of at most [`BIG_FUNCTION_INSTS`] instructions.
    Optimized,
    /// A bigger function: `opt_level=none` and the single-pass register
    /// allocator, whose time is linear in the function's size. (The
    /// backtracking allocator's move insertion is quadratic in a function
    /// with many block parameters and values; see docs/CODEGEN.md.)
    Big,
}

/// Functions with more guardlift IR instructions than this (counted after
/// instrumentation, as compiled) are compiled at [`Tier::Big`].
pub const BIG_FUNCTION_INSTS: usize = 10_000;

impl Tier {
    /// The tier of `f`: decided per function, from its instruction count
    /// alone, the same on every engine and target.
    pub fn of(f: &guardlift_ir::Function) -> Tier {
        Tier::of_insts(f.inst_count())
    }

    /// The tier of a function of `insts` instructions ([`Tier::of`]).
    pub fn of_insts(insts: usize) -> Tier {
        if insts > BIG_FUNCTION_INSTS {
            Tier::Big
        } else {
            Tier::Optimized
        }
    }

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Optimized => "optimized",
            Tier::Big => "big",
        }
    }

    fn regalloc(self) -> &'static str {
        match self {
            Tier::Optimized => "backtracking",
            Tier::Big => "single_pass",
        }
    }
}

/// The ISAs of a module's functions: the module's own (for
/// [`Tier::Optimized`]) and, built when the first big function comes, the
/// one of [`Tier::Big`], with the module's own code model and verifier
/// setting.
pub(crate) struct TierIsas {
    target: Target,
    big: Option<OwnedTargetIsa>,
}

impl TierIsas {
    /// The tiers of a module for `target`.
    pub(crate) fn new(target: Target) -> TierIsas {
        TierIsas { target, big: None }
    }

    /// The ISA that compiles functions of `tier` in a module whose own
    /// ISA is `module_isa`; `None` for the module's own.
    fn isa(
        &mut self,
        module_isa: &dyn isa::TargetIsa,
        tier: Tier,
    ) -> Result<Option<&OwnedTargetIsa>, JitError> {
        if tier == Tier::Optimized {
            return Ok(None);
        }
        if self.big.is_none() {
            let flags = module_isa.flags();
            self.big = Some(build_isa(&IsaSpec {
                target: self.target,
                opt: OptLevel::None,
                tier,
                code: match flags.is_pic() {
                    true => CodeModel::Pic,
                    false => CodeModel::Absolute,
                },
                verifier: match flags.enable_verifier() {
                    true => Verifier::On,
                    false => Verifier::Off,
                },
            })?);
        }
        Ok(self.big.as_ref())
    }

    /// Compiles `ctx.func` (function `id` of `m`, IR function `@name`) at
    /// `tier` and defines it in `m`; `ctx.compiled_code()` is its code afterwards.
    pub(crate) fn define<M: Module>(
        &mut self,
        m: &mut M,
        id: ClFuncId,
        ctx: &mut Context,
        tier: Tier,
        name: &str,
    ) -> Result<(), JitError> {
        let Some(isa) = self.isa(m.isa(), tier)? else {
            return m
                .define_function(id, ctx)
                .map_err(|e| JitError::module(format!("@{name}"), e));
        };
        let align = ctx
            .compile(&**isa, &mut ControlPlane::default())
            .map_err(|e| JitError::cranelift(format!("@{name}"), e.inner))?
            .buffer
            .alignment as u64;
        let code = ctx
            .compiled_code()
            .ok_or_else(|| JitError::Internal(format!("@{name}: no compiled code")))?;
        let relocs: Vec<ModuleReloc> = code
            .buffer
            .relocs()
            .iter()
            .map(|r| ModuleReloc::from_mach_reloc(r, &ctx.func, id))
            .collect();
        m.define_function_bytes(id, align, code.buffer.data(), &relocs)
            .map_err(|e| JitError::module(format!("@{name}"), e))
    }

    /// Compiles `ctx.func` (IR function `@name`) at `tier` with
    /// `module_isa` as the module's own ISA.
    pub(crate) fn compile<'c>(
        &mut self,
        module_isa: &dyn isa::TargetIsa,
        ctx: &'c mut Context,
        tier: Tier,
        name: &str,
    ) -> Result<&'c cranelift_codegen::CompiledCode, JitError> {
        let isa: &dyn isa::TargetIsa = match self.isa(module_isa, tier)? {
            Some(i) => &**i,
            None => module_isa,
        };
        ctx.compile(isa, &mut ControlPlane::default())
            .map_err(|e| JitError::cranelift(format!("@{name}"), e.inner))
    }
}

/// How generated code refers to addresses.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum CodeModel {
    /// Absolute addresses, patched where the code lands (the JIT).
    Absolute,
    /// Position-independent code: calls and data through the GOT/PLT
    /// (object files).
    Pic,
}

/// Cranelift's verifier on every compiled function.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Verifier {
    /// On in debug builds only.
    #[default]
    Profile,
    /// On, whatever the build profile.
    On,
    /// Off, whatever the build profile.
    Off,
}

impl Verifier {
    /// `None`: [`Verifier::Profile`]; `Some(on)`: on or off (as
    /// `CompileOptions::verifier` says).
    pub(crate) fn from_option(on: Option<bool>) -> Verifier {
        match on {
            None => Verifier::Profile,
            Some(true) => Verifier::On,
            Some(false) => Verifier::Off,
        }
    }

    fn enabled(self) -> bool {
        match self {
            Verifier::Profile => cfg!(debug_assertions),
            Verifier::On => true,
            Verifier::Off => false,
        }
    }
}

/// What [`build_isa`] builds: an ISA for `target` and functions of `tier`.
#[derive(Copy, Clone, Debug)]
pub(crate) struct IsaSpec {
    /// The architecture.
    pub(crate) target: Target,
    /// The optimization level asked for (`none` at [`Tier::Big`] whatever it says).
    pub(crate) opt: OptLevel,
    /// The tier of the functions it compiles.
    pub(crate) tier: Tier,
    /// Absolute (the JIT) or position-independent (object files).
    pub(crate) code: CodeModel,
    /// Cranelift's verifier.
    pub(crate) verifier: Verifier,
}

/// Builds the ISA `spec` describes.
///
/// Settings: the optimization level (`none` at [`Tier::Big`]) and register
/// allocator of the tier; Cranelift's verifier as `spec.verifier` says;
/// inline stack probes (adstack frames can be large); NaN canonicalization
/// (spec §3's canonical NaN results).
pub(crate) fn build_isa(spec: &IsaSpec) -> Result<OwnedTargetIsa, JitError> {
    let IsaSpec {
        target,
        opt,
        tier,
        code,
        verifier,
    } = *spec;
    let mut fb = settings::builder();
    let opt = match tier {
        Tier::Optimized => opt,
        Tier::Big => OptLevel::None,
    };
    set(&mut fb, "opt_level", opt.name())?;
    set(&mut fb, "regalloc_algorithm", tier.regalloc())?;
    let pic = code == CodeModel::Pic;
    set(&mut fb, "is_pic", if pic { "true" } else { "false" })?;
    let verify = verifier.enabled();
    set(
        &mut fb,
        "enable_verifier",
        if verify { "true" } else { "false" },
    )?;
    set(&mut fb, "enable_probestack", "true")?;
    set(&mut fb, "probestack_strategy", "inline")?;
    // Libcalls (none expected) must not assume they are within near range.
    set(&mut fb, "use_colocated_libcalls", "false")?;
    // Spec §3: a NaN result of fadd fsub fmul fdiv fmin fmax fsqrt fpromote
    // fdemote is the canonical quiet NaN on every target (the interpreter agrees).
    set(&mut fb, "enable_nan_canonicalization", "true")?;
    // Every function keeps a frame record: the fault, trap and arithmetic
    // fault paths walk them (and `get_frame_pointer`, which the fatal
    // division path passes to the runtime, requires it).
    set(&mut fb, "preserve_frame_pointers", "true")?;
    let flags = settings::Flags::new(fb);
    let builder = match target {
        Target::Host => {
            cranelift_native::builder().map_err(|e| JitError::Target(format!("host ({e})")))?
        }
        Target::X86_64 | Target::Aarch64 => isa::lookup_by_name(&target.triple())
            .map_err(|e| JitError::Target(format!("{} ({e})", target.name())))?,
    };
    builder
        .finish(flags)
        .map_err(|e| JitError::cranelift(format!("building the {target} ISA"), e))
}

/// An empty x86_64 object module, verifier on (for the tests of the
/// compile driver and of the lowering).
#[cfg(test)]
pub(crate) fn test_object_module() -> cranelift_object::ObjectModule {
    let isa = build_isa(&IsaSpec {
        target: Target::X86_64,
        opt: OptLevel::Speed,
        tier: Tier::Optimized,
        code: CodeModel::Pic,
        verifier: Verifier::On,
    })
    .expect("isa");
    let ob =
        cranelift_object::ObjectBuilder::new(isa, "t", cranelift_module::default_libcall_names())
            .expect("object builder");
    cranelift_object::ObjectModule::new(ob)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_codegen::settings::{OptLevel as ClOpt, RegallocAlgorithm};

    /// The big tier's ISA keeps the module ISA's code model and verifier
    /// setting (an object file verified as it compiles verifies its big
    /// functions too); the optimized tier is the module's own ISA.
    #[test]
    fn the_big_tier_keeps_the_modules_code_model_and_verifier() {
        for (code, verifier) in [
            (CodeModel::Pic, Verifier::On),
            (CodeModel::Absolute, Verifier::Off),
            (CodeModel::Pic, Verifier::Off),
            (CodeModel::Absolute, Verifier::On),
        ] {
            let module = build_isa(&IsaSpec {
                target: Target::X86_64,
                opt: OptLevel::Speed,
                tier: Tier::Optimized,
                code,
                verifier,
            })
            .unwrap();
            let mut tiers = TierIsas::new(Target::X86_64);
            assert!(tiers.isa(&*module, Tier::Optimized).unwrap().is_none());
            let big = tiers.isa(&*module, Tier::Big).unwrap().unwrap();
            let what = format!("{code:?}, {verifier:?}");
            assert_eq!(big.flags().is_pic(), code == CodeModel::Pic, "{what}");
            assert_eq!(
                big.flags().enable_verifier(),
                verifier == Verifier::On,
                "{what}"
            );
            assert_eq!(big.flags().opt_level(), ClOpt::None, "{what}");
        }
    }

    /// The big tier's settings are the linear-time ones on every target,
    /// whatever level was asked for; the optimized tier keeps the request.
    #[test]
    fn tier_settings() {
        for target in [Target::X86_64, Target::Aarch64] {
            let spec = |tier| IsaSpec {
                target,
                opt: OptLevel::Speed,
                tier,
                code: CodeModel::Pic,
                verifier: Verifier::Profile,
            };
            let big = build_isa(&spec(Tier::Big)).unwrap();
            assert_eq!(big.flags().opt_level(), ClOpt::None, "{target}");
            assert_eq!(
                big.flags().regalloc_algorithm(),
                RegallocAlgorithm::SinglePass,
                "{target}"
            );
            let opt = build_isa(&spec(Tier::Optimized)).unwrap();
            assert_eq!(opt.flags().opt_level(), ClOpt::Speed, "{target}");
            assert_eq!(
                opt.flags().regalloc_algorithm(),
                RegallocAlgorithm::Backtracking,
                "{target}"
            );
        }
    }
}
