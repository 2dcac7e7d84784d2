//! `GUARDLIFT_OPTIONS`: runtime options from the environment, in the style
//! of `ASAN_OPTIONS` — `key=value` pairs separated by `:` or `,`.
//!
//! Keys: `mode` (abort|recover|trap), `log_path` (append reports to this
//! file instead of stderr), `json` (0|1: reports as JSON lines),
//! `report_limit` (per site and kind, how many occurrences reach the report
//! handler; counts stay exact; 0 = no limit), `backtrace` (0|1: capture
//! backtraces of reports; default 1).

use crate::runtime::Mode;

/// The environment variable read by [`Options::from_env`].
pub const ENV_VAR: &str = "GUARDLIFT_OPTIONS";

/// Parsed options; `None`/defaults where a key is absent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    pub mode: Option<Mode>,
    pub log_path: Option<String>,
    pub json: bool,
    pub report_limit: u64,
    /// `backtrace=0|1`; `None`: the default (on).
    pub backtrace: Option<bool>,
}

/// A malformed options string.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{ENV_VAR}: {0}")]
pub struct OptionsError(pub String);

fn parse_bool(k: &str, v: &str) -> Result<bool, OptionsError> {
    match v {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(OptionsError(format!("{k}={v}: expected 0 or 1"))),
    }
}

impl Options {
    /// Parses `key=value` pairs separated by `:` or `,`.
    pub fn parse(text: &str) -> Result<Options, OptionsError> {
        let mut o = Options::default();
        for pair in text
            .split([':', ','])
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
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
                "report_limit" => {
                    o.report_limit = v
                        .parse()
                        .map_err(|_| OptionsError(format!("report_limit={v}: expected a count")))?
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
            Options::parse("backtrace=0").unwrap().backtrace,
            Some(false)
        );
    }
}
