//! `airlock-scan` finds secrets (keys, tokens, passwords) in file contents, so that
//! `airlock pack` can refuse or redact them before source leaves trusted ground, and
//! `airlock gate` and `airlock scan` can check what comes back.
//!
//! A [`Scanner`] is a compiled rule set: built-in detectors ([`Scanner::with_default_rules`]),
//! optionally extended by an airlock TOML config or an imported gitleaks config. Each file
//! is scanned with one keyword pass (an Aho-Corasick automaton: a DFA, or for small inputs,
//! with [`Scanner::with_small_inputs`], an NFA that is quicker to build) and regexes only
//! around keyword hits; [`Scanner::scan_files_parallel`] spreads files over
//! all cores.
//!
//! Modules: [`rule`] (what a detector is), [`config`] (airlock's TOML), [`gitleaks`]
//! (import of a gitleaks config), [`sarif`] (SARIF 2.1.0 output), [`allow`] (built-in
//! allowlist checks), [`testgen`] (fake secrets and realistic files for tests and
//! benchmarks). The rule table is in `scan/RULES.md`.
//!
//! # Guarantees
//! - A [`Finding`] never holds the secret value: rule id, path, position, byte range and a
//!   short fingerprint. Its `Display` is `path:line: rule-id`.
//! - [`redact`] removes every byte of every finding's range and keeps the number of lines;
//!   the `[REDACTED:<rule>]` markers it writes are never reported by any rule.
//! - Every search is linear in the bytes searched (finite automata, capped regex sizes; the
//!   small-input keyword index compares at most the keywords sharing the input's next two
//!   bytes); hostile content cannot make a scan quadratic.
//! - Every byte is scanned whatever its form ([`Scanner::scan_content`]): text, then one
//!   level of decoded base64/percent-encoding and joined string literals; UTF-16 decoded;
//!   binary files and archives by their printable runs and their DER/keystore structure.
//!   Files over the size cap are reported as skipped, never silently passed.
//!
//! # Not guaranteed
//! - Detection is pattern-based: a secret of an unknown format with low entropy can be
//!   missed. No value is ever checked against a live service.
//! - The compressed members of an archive are not decompressed (see `scan/RULES.md`).
//!
//! # Example
//! ```
//! use airlock_scan::{redact, Scanner};
//!
//! let scanner = Scanner::with_default_rules()?;
//! // Assembled at run time so this file holds no token-shaped literal.
//! let token = format!("ghp_{}", "Zq4Lm8Tv2Rx6Wc0Yp3Jk7Hb1Nd5Gs9Fa2Qe4");
//! let text = format!("GITHUB_TOKEN={token}\nregion=eu-west-1\n");
//! let findings = scanner.scan(".env", text.as_bytes());
//! assert_eq!(findings[0].to_string(), ".env:1: github-pat-classic");
//! let clean = redact(text.as_bytes(), &findings);
//! assert_eq!(clean, b"GITHUB_TOKEN=[REDACTED:github-pat-classic]\nregion=eu-west-1\n");
//! assert!(scanner.scan(".env", &clean).is_empty());
//! # Ok::<(), airlock_scan::ScanError>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod allow;
mod builtin;
pub mod config;
pub mod content;
mod decode;
mod deep;
pub mod der;
mod engine;
mod error;
pub mod eval;
#[cfg(any(fuzzing, test))]
#[doc(hidden)]
pub mod fuzzing;
pub mod gitleaks;
mod keywords;
mod lazy_regex;
mod redact;
pub mod rule;
pub mod sarif;
mod split;
pub mod testgen;
mod work;

pub use config::MAX_CONFIG_BYTES;
pub use content::Form;
pub use deep::Scanned;
pub use engine::{
    is_binary, Finding, ScanReport, Scanner, SkipReason, SkippedFile, BINARY_SNIFF_BYTES,
    DEFAULT_MAX_FILE_BYTES, INLINE_ALLOW, WINDOW_BACK, WINDOW_FORWARD,
};
pub use error::{ConfigWarning, ScanError};
pub use lazy_regex::{MAX_REGEX_LEN, REGEX_SIZE_LIMIT};
pub use redact::{marker, redact};
pub use rule::{Allowlist, Check, Condition, Rule, RuleSource, Span, Target};

/// Version of this crate (for SARIF `tool.driver.version` and manifests).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
