//! `GUARDLIFT_OPTIONS`: runtime options from the environment, in the style
//! of `ASAN_OPTIONS` — `key=value` pairs separated by `:` or `,`.
//!
//! Keys: `mode` (abort|recover|trap), `log_path` (append reports to this
//! file instead of stderr), `json` (a boolean: reports as JSON lines),
//! `report_limit` (per site and kind, how many occurrences reach the report
//! handler; counts stay exact; 0, the default, = no limit), `quarantine_mb`
//! (freed objects held before their memory is released, default 64), `watch`
//! (a watch SPEC, spec §6.1: `watch=object:3+5`, `watch=sample:8`,
//! `watch=recent`; the `:` inside the SPEC is not a separator).
//!
//! Booleans are `1`/`0`, `true`/`false`, `yes`/`no` or `on`/`off`, in any
//! case; an error lists exactly these. `backtrace` (a boolean: capture
//! backtraces of reports; default on). `host_stacks` (a boolean: record the
//! host's native stacks when it registers and frees objects; default off).
//!
//! Profilers and debuggers (booleans, default off; [`JitDebug`]): `perfmap`
//! (`/tmp/perf-PID.map` lines for `perf report`), `jitdump` (`jit-PID.dump`
//! for `perf inject --jit`), `gdb` (the GDB JIT interface: symbols, lines
//! and unwind info of JIT code).

use crate::mode::Mode;
use crate::watch::WatchSpec;

/// The environment variable read by [`Options::from_env`].
pub const ENV_VAR: &str = "GUARDLIFT_OPTIONS";

/// Parsed options; `None`/defaults where a key is absent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `mode=abort|recover|trap`.
    pub mode: Option<Mode>,
    /// `log_path=FILE`: append reports here instead of stderr.
    pub log_path: Option<String>,
    /// `json=BOOL`: reports as JSON lines.
    pub json: bool,
    /// `report_limit=N`: handler calls per site and kind (0: no limit).
    pub report_limit: u64,
    /// `watch=SPEC`: hardware watchpoints (spec §6.1).
    pub watch: Option<WatchSpec>,
    /// Megabytes of freed objects kept in quarantine (`None`: the default, 64).
    pub quarantine_mb: Option<u64>,
    /// `backtrace=0|1`; `None`: the default (on).
    pub backtrace: Option<bool>,
    /// `host_stacks=0|1`: record host objects' allocation and free stacks
    /// ([`crate::host_stack`]); `None`: the default (off).
    pub host_stacks: Option<bool>,
    /// `perfmap=`, `jitdump=`, `gdb=`: what the JIT tells profilers and
    /// debuggers about its code.
    pub jit_debug: JitDebug,
}

/// What the JIT publishes about the code it compiles, for profilers and
/// debuggers (the JIT's `debuginfo` module writes it; all off by default,
/// and then compiling costs nothing more).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct JitDebug {
    /// `perfmap=1`: a `/tmp/perf-PID.map` line per compiled function.
    pub perfmap: bool,
    /// `jitdump=1`: `jit-PID.dump` (in `$JITDUMPDIR` or the current
    /// directory) with the code and its `.glir` lines.
    pub jitdump: bool,
    /// `gdb=1`: an in-memory ELF per module with symbols, DWARF lines and
    /// unwind info, registered through the GDB JIT interface.
    pub gdb: bool,
}

impl JitDebug {
    /// Is anything on?
    pub fn any(self) -> bool {
        self.perfmap || self.jitdump || self.gdb
    }

    /// What either asks for.
    pub fn union(self, other: JitDebug) -> JitDebug {
        JitDebug {
            perfmap: self.perfmap || other.perfmap,
            jitdump: self.jitdump || other.jitdump,
            gdb: self.gdb || other.gdb,
        }
    }
}

/// A malformed options string.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{ENV_VAR}: {0}")]
pub struct OptionsError(pub String);

/// The spellings of a boolean option: true first, then false.
const BOOLS: [(&str, &str); 4] = [("1", "0"), ("true", "false"), ("yes", "no"), ("on", "off")];

fn parse_bool(k: &str, v: &str) -> Result<bool, OptionsError> {
    let l = v.to_ascii_lowercase();
    if let Some(b) = BOOLS
        .iter()
        .find_map(|&(t, f)| (l == t).then_some(true).or((l == f).then_some(false)))
    {
        return Ok(b);
    }
    let all: Vec<String> = BOOLS.iter().map(|(t, f)| format!("{t}/{f}")).collect();
    Err(OptionsError(format!(
        "{k}={v}: expected a boolean ({})",
        all.join(", ")
    )))
}

impl Options {
    /// Parses `key=value` pairs separated by `:` or `,`.
    pub fn parse(text: &str) -> Result<Options, OptionsError> {
        let mut o = Options::default();
        let mut pieces = text
            .split([':', ','])
            .map(str::trim)
            .filter(|p| !p.is_empty());
        while let Some(pair) = pieces.next() {
            // `watch=object:N` / `watch=sample:K`: the SPEC's own colon.
            let joined;
            let pair = match pair {
                "watch=object" | "watch=sample" => {
                    joined = format!("{pair}:{}", pieces.next().unwrap_or(""));
                    joined.as_str()
                }
                _ => pair,
            };
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| OptionsError(format!("`{pair}` is not key=value")))?;
            match k {
                "mode" => {
                    o.mode = Some(Mode::from_name(v).ok_or_else(|| {
                        OptionsError(format!("mode={v}: expected abort, recover or trap"))
                    })?)
                }
                "log_path" => o.log_path = Some(v.to_string()),
                "json" => o.json = parse_bool(k, v)?,
                "backtrace" => o.backtrace = Some(parse_bool(k, v)?),
                "host_stacks" => o.host_stacks = Some(parse_bool(k, v)?),
                "perfmap" => o.jit_debug.perfmap = parse_bool(k, v)?,
                "jitdump" => o.jit_debug.jitdump = parse_bool(k, v)?,
                "gdb" => o.jit_debug.gdb = parse_bool(k, v)?,
                "report_limit" => {
                    o.report_limit = v
                        .parse()
                        .map_err(|_| OptionsError(format!("report_limit={v}: expected a count")))?
                }
                "watch" => {
                    o.watch = Some(
                        WatchSpec::parse(v).map_err(|e| OptionsError(format!("watch={v}: {e}")))?,
                    )
                }
                "quarantine_mb" => {
                    o.quarantine_mb = Some(v.parse().map_err(|_| {
                        OptionsError(format!("quarantine_mb={v}: expected a size in megabytes"))
                    })?)
                }
                _ => return Err(OptionsError(format!("unknown option `{k}`"))),
            }
        }
        Ok(o)
    }

    /// Reads [`ENV_VAR`]; absent means defaults.
    pub fn from_env() -> Result<Options, OptionsError> {
        match std::env::var(ENV_VAR) {
            Ok(s) => Options::parse(&s),
            Err(std::env::VarError::NotPresent) => Ok(Options::default()),
            Err(_) => Err(OptionsError("not valid UTF-8".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_asan_style_options() {
        let o = Options::parse("mode=recover:log_path=/tmp/x.log,json=1:report_limit=3").unwrap();
        assert_eq!(o.mode, Some(Mode::Recover));
        assert_eq!(o.log_path.as_deref(), Some("/tmp/x.log"));
        assert!(o.json);
        assert_eq!(o.report_limit, 3);
        assert_eq!(Options::parse("").unwrap(), Options::default());
        assert!(Options::parse("mode=fast").is_err());
        assert!(Options::parse("bogus=1").is_err());
        assert!(Options::parse("json").is_err());
        assert_eq!(
            Options::parse("quarantine_mb=0").unwrap().quarantine_mb,
            Some(0)
        );
        assert!(Options::parse("quarantine_mb=lots").is_err());
        let o = Options::parse("mode=recover:watch=object:3+5:json=1").unwrap();
        assert_eq!(o.watch, Some(WatchSpec::Objects(vec![3, 5])));
        assert!(o.json);
        assert_eq!(
            Options::parse("watch=sample:8").unwrap().watch,
            Some(WatchSpec::Sample { k: 8, phase: None })
        );
        assert_eq!(
            Options::parse("watch=recent").unwrap().watch,
            Some(WatchSpec::Recent)
        );
        assert!(Options::parse("watch=object").is_err());
        assert!(Options::parse("watch=bogus").is_err());
    }

    #[test]
    fn profiler_and_debugger_options() {
        let d = Options::parse("perfmap=1:gdb=on").unwrap().jit_debug;
        assert_eq!(
            d,
            JitDebug {
                perfmap: true,
                jitdump: false,
                gdb: true
            }
        );
        assert!(d.any() && !JitDebug::default().any());
        assert!(Options::parse("jitdump=yes").unwrap().jit_debug.jitdump);
        let e = Options::parse("gdb=maybe").unwrap_err().to_string();
        assert!(e.contains("gdb=maybe: expected a boolean"), "{e}");
    }

    #[test]
    fn every_boolean_spelling_the_error_names_is_accepted() {
        for (v, want) in [
            ("yes", true),
            ("No", false),
            ("TRUE", true),
            ("off", false),
            ("1", true),
        ] {
            assert_eq!(
                Options::parse(&format!("json={v}")).unwrap().json,
                want,
                "{v}"
            );
        }
        let e = Options::parse("json=2").unwrap_err().to_string();
        assert!(!e.contains("0 or 1"), "{e}");
        // Every spelling the message lists parses.
        let list = e.split('(').nth(1).unwrap().trim_end_matches(')');
        for pair in list.split(", ") {
            let (t, f) = pair.split_once('/').unwrap();
            assert!(Options::parse(&format!("json={t}")).unwrap().json, "{t}");
            assert!(!Options::parse(&format!("json={f}")).unwrap().json, "{f}");
        }
        assert_eq!(Options::parse("report_limit=0").unwrap().report_limit, 0);
        assert_eq!(
            Options::parse("backtrace=0").unwrap().backtrace,
            Some(false)
        );
        assert_eq!(
            Options::parse("host_stacks=off").unwrap().host_stacks,
            Some(false)
        );
        assert!(Options::parse("host_stacks=2").is_err());
    }
}
