//! Errors and warnings of the scanner: rule compilation, configuration, file I/O.
//!
//! Messages name the rule id, the config field or the file, and the reason. They never
//! carry a scanned value: the only text from a scanned file that can reach a message is
//! its path.

use std::fmt;
use std::path::PathBuf;

/// Everything that can stop a scanner from being built or a scan from completing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScanError {
    /// A rule's regex (or path regex, allowlist regex) does not compile with the Rust
    /// `regex` engine (RE2 syntax: no look-around, no back-references).
    #[error("rule `{rule_id}`: {what} does not compile (scan.rule-regex): {reason}")]
    RuleRegex {
        /// Rule id, or `<global>` for a global allowlist.
        rule_id: String,
        /// Which regex: `regex`, `path`, `allowlist regex`, ...
        what: String,
        /// The compiler's message.
        reason: String,
    },
    /// A rule is malformed (bad id, duplicate id, no regex and no path, bad group...).
    #[error("rule `{rule_id}`: invalid (scan.rule-invalid): {reason}")]
    RuleInvalid {
        /// Rule id as given (may be empty).
        rule_id: String,
        /// What is wrong.
        reason: String,
    },
    /// A rule's own example did not behave as declared (a true-positive example that
    /// is not found, or a false-positive example that is).
    #[error("rule `{rule_id}`: {kind} example #{index} {reason} (scan.rule-example)")]
    RuleExample {
        /// Rule id.
        rule_id: String,
        /// `true-positive` or `false-positive`.
        kind: &'static str,
        /// 0-based index in the rule's list.
        index: usize,
        /// What went wrong.
        reason: String,
    },
    /// A glob in a path allowlist does not parse.
    #[error("{context}: path glob `{glob}` is invalid (scan.path-glob): {reason}")]
    PathGlob {
        /// Where the glob comes from (`[allowlist]`, `rule x`).
        context: String,
        /// The glob.
        glob: String,
        /// Parser message.
        reason: String,
    },
    /// The configuration file is not valid TOML or does not match the format.
    #[error("{format} config: {reason} (scan.config)")]
    Config {
        /// `airlock` or `gitleaks`.
        format: &'static str,
        /// Parser message (names the field and the line).
        reason: String,
    },
    /// A file could not be opened or read.
    #[error("{}: cannot read (scan.io): {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A worker thread panicked (a bug): the scan result would be incomplete.
    #[error("scan worker failed (scan.worker): {0}")]
    Worker(String),
}

/// Something in a configuration file that was not applied as written. Returned next to
/// the scanner so callers can print it; never silently dropped.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ConfigWarning {
    /// Rule the warning is about, if any.
    pub rule_id: Option<String>,
    /// The config field, dotted (`rules.allowlists.commits`, `extend.path`).
    pub field: String,
    /// What happened to it.
    pub message: String,
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.rule_id {
            Some(id) => write!(f, "rule `{id}`: field `{}`: {}", self.field, self.message),
            None => write!(f, "field `{}`: {}", self.field, self.message),
        }
    }
}
