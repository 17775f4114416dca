//! Regexes checked when a rule set loads and compiled on first use.
//!
//! Compiling a rule set of a hundred regexes (Thompson NFA, one-pass DFA, literal
//! prefilters) costs tens of milliseconds, paid by every `airlock pack`, `gate` and `scan`,
//! although most rules never see a keyword hit in a given tree. A [`LazyRegex`] checks its
//! pattern at load time the cheap way (length cap, parse to HIR with the scanner's syntax
//! settings: syntax errors, nesting depth, capture groups), so a broken rule file is still
//! refused when it loads, and builds the matcher the first time a search needs it (at most
//! once; threads that race wait for the first).
//!
//! Guards against: a pattern that parses but whose compiled form exceeds
//! [`crate::REGEX_SIZE_LIMIT`], the only error left for first use. [`LazyRegex::get`]
//! returns it, and every caller in the engine fails closed: a rule whose regex cannot be
//! built reports the file (a finding at its start), an allowlist whose regex cannot be
//! built allows nothing, a path or context condition that cannot be built counts as met.
//! [`crate::Scanner::compile_all`] builds everything up front, for tests and config checks.

use std::sync::OnceLock;

use regex_automata::meta::{self, Regex};
use regex_automata::util::syntax;
use regex_automata::MatchKind;

use crate::error::ScanError;

/// Compiled size cap of one regex (as `regex`'s default).
pub const REGEX_SIZE_LIMIT: usize = 10 << 20;
/// Longest accepted regex source, in bytes.
pub const MAX_REGEX_LEN: usize = 16 * 1024;

/// The scanner's regex syntax: byte-oriented (`utf8(false)`), ASCII or Unicode classes,
/// nesting capped at 64.
pub(crate) fn syntax_config(unicode: bool) -> syntax::Config {
    syntax::Config::new()
        .utf8(false)
        .unicode(unicode)
        .nest_limit(64)
}

/// Compiles one regex with the scanner's settings: byte-oriented (matches any bytes),
/// ASCII classes (`\w`, `\b`, `(?i)` as in Go's RE2, which gitleaks uses), size-capped.
/// Falls back to Unicode classes if the pattern needs them (`\pL`).
pub(crate) fn compile_regex(rule_id: &str, what: &str, pattern: &str) -> Result<Regex, ScanError> {
    if pattern.len() > MAX_REGEX_LEN {
        return Err(ScanError::RuleRegex {
            rule_id: rule_id.to_string(),
            what: what.to_string(),
            reason: format!("{} bytes long, at most {MAX_REGEX_LEN}", pattern.len()),
        });
    }
    let build = |unicode: bool| {
        meta::Builder::new()
            .syntax(syntax_config(unicode))
            .configure(
                meta::Config::new()
                    .match_kind(MatchKind::LeftmostFirst)
                    .utf8_empty(false)
                    .nfa_size_limit(Some(REGEX_SIZE_LIMIT))
                    .hybrid_cache_capacity(2 << 20),
            )
            .build(pattern)
            .map_err(|e| e.to_string())
    };
    build(false)
        .or_else(|_| build(true))
        .map_err(|reason| ScanError::RuleRegex {
            rule_id: rule_id.to_string(),
            what: what.to_string(),
            reason,
        })
}

/// How much a rule set is checked when it loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Checks {
    /// Every pattern parsed now (rules from a config file or a caller).
    Full,
    /// The crate's own constants: tests parse and compile each one, loading skips the parse.
    BuiltIn,
}

/// A validated pattern, compiled on first use.
pub(crate) struct LazyRegex {
    owner: String,
    what: &'static str,
    pattern: String,
    /// Known once parsed (not for [`Checks::BuiltIn`]).
    captures_len: Option<usize>,
    compiled: OnceLock<Result<Regex, String>>,
}

impl LazyRegex {
    /// Checks `pattern` (length, syntax, nesting) without compiling it, unless `checks` is
    /// [`Checks::BuiltIn`]. `owner` (a rule id or `<global>`) and `what` (`regex`, `path`, ...)
    /// name it in errors.
    pub(crate) fn new(
        owner: &str,
        what: &'static str,
        pattern: &str,
        checks: Checks,
    ) -> Result<LazyRegex, ScanError> {
        let error = |reason: String| ScanError::RuleRegex {
            rule_id: owner.to_string(),
            what: what.to_string(),
            reason,
        };
        if pattern.len() > MAX_REGEX_LEN {
            return Err(error(format!(
                "{} bytes long, at most {MAX_REGEX_LEN}",
                pattern.len()
            )));
        }
        if checks == Checks::BuiltIn {
            return Ok(LazyRegex {
                owner: owner.to_string(),
                what,
                pattern: pattern.to_string(),
                captures_len: None,
                compiled: OnceLock::new(),
            });
        }
        // As `compile_regex`: ASCII classes first, Unicode classes if the pattern needs them.
        let hir = match syntax::parse_with(pattern, &syntax_config(false)) {
            Ok(hir) => hir,
            Err(_) => syntax::parse_with(pattern, &syntax_config(true))
                .map_err(|e| error(e.to_string()))?,
        };
        Ok(LazyRegex {
            owner: owner.to_string(),
            what,
            pattern: pattern.to_string(),
            captures_len: Some(hir.properties().explicit_captures_len() + 1),
            compiled: OnceLock::new(),
        })
    }

    /// Capture groups, counting the implicit group 0 (as `Regex::captures_len`), when the
    /// pattern was parsed at load time.
    pub(crate) fn captures_len(&self) -> Option<usize> {
        self.captures_len
    }

    /// The compiled regex, built now if this is the first use.
    pub(crate) fn get(&self) -> Result<&Regex, ScanError> {
        let built = self.compiled.get_or_init(|| {
            compile_regex(&self.owner, self.what, &self.pattern).map_err(|e| match e {
                ScanError::RuleRegex { reason, .. } => reason,
                other => other.to_string(),
            })
        });
        built.as_ref().map_err(|reason| ScanError::RuleRegex {
            rule_id: self.owner.clone(),
            what: self.what.to_string(),
            reason: reason.clone(),
        })
    }

    /// `Some(is_match)`, or `None` if the regex cannot be built (the caller fails closed).
    pub(crate) fn is_match(&self, haystack: &[u8]) -> Option<bool> {
        self.get().ok().map(|re| re.is_match(haystack))
    }
}
