//! Rule and allowlist descriptions: plain data, compiled by [`crate::Scanner`].
//!
//! A [`Rule`] is what a security team reads and writes (id, regex, keywords, examples);
//! nothing here touches scanned bytes.

use serde::{Deserialize, Serialize};

use crate::testgen::Sample;

/// How much of a file around a keyword hit a rule's regex is run on.
///
/// Keywords of built-in rules always lie inside the text the regex matches, so the regex
/// only needs to see the neighbourhood of each hit. Rules whose keyword can be anywhere in
/// the file (imported gitleaks rules, rules that need file context) use [`Span::File`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Span {
    /// The line holding the keyword (at most 1 KiB before it and 64 KiB after it).
    Line,
    /// From the start of the keyword's line up to 64 KiB after the keyword, across lines
    /// (multi-line key blocks).
    Block,
    /// The whole file, once, if any keyword occurs anywhere in it.
    File,
}

/// Which text an allowlist regex is matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Target {
    /// The secret (the capture group).
    #[default]
    Secret,
    /// The whole regex match.
    Match,
    /// The line(s) holding the match.
    Line,
}

/// How the criteria of one allowlist combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Condition {
    /// The finding is allowed if any criterion matches.
    #[default]
    Or,
    /// The finding is allowed only if every criterion that is set matches.
    And,
}

/// Built-in allowlist checks that are code rather than a regex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// Placeholders: `${VAR}`, `{{ x }}`, `<your-token>`, `changeme`, `xxxx…`, `****`,
    /// documented example values (`…EXAMPLE…`), `your_api_key_here`, one repeated
    /// character, `12345678`. Applies to secrets up to 512 bytes (a long key block is
    /// never treated as a placeholder because of a few letters in its body).
    Placeholder,
    /// Known public values: lockfile integrity hashes (`sha512-…`), SSH public key blobs
    /// (`AAAAB3NzaC1yc2E…`), base64-encoded PEM certificates and public keys.
    KnownPublic,
    /// A hex digest (32/40/64/96/128 hex digits) or a UUID, unless the name in the match
    /// says secret, password, token, private, credential, auth or api/access key.
    DigestOrUuid,
    /// Every part between separators (`_ - . / :` …) is a plain word or number
    /// (`user_profile_12345`, `my-tls-secret`): a name, not a random value.
    WordLike,
    /// Like [`Check::WordLike`], but only for values of two or more parts (so a password
    /// such as `Summer2024!` is still reported).
    WordLikeMulti,
    /// A dotted identifier or member access (`self.password`, `config.api_key`).
    DottedIdentifier,
}

/// Rules under which a finding is dropped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Allowlist {
    /// Why this allowlist exists.
    #[serde(default)]
    pub description: String,
    /// How the criteria below combine.
    #[serde(default)]
    pub condition: Condition,
    /// Text the `regexes` are matched against.
    #[serde(default)]
    pub regex_target: Target,
    /// Regexes (Rust `regex` syntax).
    #[serde(default)]
    pub regexes: Vec<String>,
    /// Case-insensitive substrings of the secret.
    #[serde(default)]
    pub stopwords: Vec<String>,
    /// Regexes on the file path (gitleaks semantics).
    #[serde(default)]
    pub paths: Vec<String>,
    /// Globs on the file path (`docs/**`, `**/*.snap`).
    #[serde(default)]
    pub path_globs: Vec<String>,
    /// Built-in checks.
    #[serde(default)]
    pub checks: Vec<Check>,
}

impl Allowlist {
    /// True if no criterion is set (such an allowlist never matches).
    pub fn is_empty(&self) -> bool {
        self.regexes.is_empty()
            && self.stopwords.is_empty()
            && self.paths.is_empty()
            && self.path_globs.is_empty()
            && self.checks.is_empty()
    }
}

/// Where a rule comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleSource {
    /// Shipped with airlock.
    Builtin,
    /// From an airlock TOML config.
    Config,
    /// Imported from a gitleaks config.
    Gitleaks,
}

/// One detector.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rule {
    /// Stable id, kebab-case (`aws-access-key-id`). Appears in findings and in
    /// `[REDACTED:<id>]` markers.
    pub id: String,
    /// What it finds, one line.
    pub description: String,
    /// Lower-case keywords; the regex runs only where one occurs (case-insensitive).
    /// Empty: the regex runs on every file.
    pub keywords: Vec<String>,
    /// The regex (Rust `regex` syntax, RE2-compatible). `None` for a path-only rule,
    /// which reports every file whose path matches `path`.
    pub regex: Option<String>,
    /// Capture group holding the secret. `None`: the first non-empty group, or the whole
    /// match if the regex has no group (gitleaks semantics).
    pub secret_group: Option<usize>,
    /// Minimum Shannon entropy (bits per byte) of the secret.
    pub entropy: Option<f64>,
    /// Regex on the file path: the rule applies only to matching paths.
    pub path: Option<String>,
    /// Regex that must also match somewhere in the file (e.g. `kind: Secret`).
    pub context: Option<String>,
    /// How much text around a keyword the regex sees.
    pub span: Span,
    /// A fallback rule is reported only where no other rule found the same bytes.
    pub fallback: bool,
    /// Rule-specific allowlists.
    pub allowlists: Vec<Allowlist>,
    /// Free-form tags (from gitleaks configs).
    pub tags: Vec<String>,
    /// True-positive example templates (see [`crate::testgen`]); each must be found.
    pub examples: Vec<String>,
    /// False-positive example templates; none may be reported by this rule.
    pub false_positives: Vec<String>,
    /// How to embed a random instance in a realistic file (corpus tests, benchmarks).
    pub sample: Option<Sample>,
    /// Origin.
    pub source: RuleSource,
}

impl Rule {
    /// A rule with the given id and regex and every other field empty/default
    /// (span [`Span::File`], no keywords: the regex runs on every file).
    pub fn new(id: impl Into<String>, regex: impl Into<String>) -> Rule {
        Rule {
            id: id.into(),
            description: String::new(),
            keywords: Vec::new(),
            regex: Some(regex.into()),
            secret_group: None,
            entropy: None,
            path: None,
            context: None,
            span: Span::File,
            fallback: false,
            allowlists: Vec::new(),
            tags: Vec::new(),
            examples: Vec::new(),
            false_positives: Vec::new(),
            sample: None,
            source: RuleSource::Config,
        }
    }
}

/// Returns the reason if `id` is not usable as a rule id: it must be 1..=64 bytes of
/// `[A-Za-z0-9._-]`, so that `[REDACTED:<id>]` and `path:line: <id>` stay unambiguous.
pub fn check_rule_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("empty id".into());
    }
    if id.len() > 64 {
        return Err(format!("id is {} bytes, at most 64", id.len()));
    }
    if let Some(c) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "id contains {c:?}; allowed: letters, digits, `.`, `_`, `-`"
        ));
    }
    Ok(())
}
