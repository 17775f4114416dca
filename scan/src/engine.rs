//! The scanner: checks rules once, compiles each regex on first use (`lazy_regex.rs`), then
//! finds secrets in file contents.
//!
//! Scanning one text (`deep.rs` decides which texts a file holds): (1) allowlisted
//! paths are skipped; (2) one Aho-Corasick pass over the bytes finds every rule keyword
//! (ASCII case-insensitive); (3) each rule with a keyword hit runs its regex only over the
//! windows around its hits (the hit's line, or a 64 KiB block for key blocks, or the whole
//! file for [`Span::File`] rules), never over files or lines without a hit; (4) each match
//! goes through entropy, the always-on redaction-marker check, the global and the rule's
//! allowlists, and the inline `airlock:allow` comment; (5) a fallback rule's finding is
//! dropped where another rule found the same bytes, and two findings of the same bytes
//! keep the first rule in order.
//!
//! Guards against: hostile file contents. Every search is linear in the bytes it covers
//! (finite automata, no backtracking), each byte is covered at most once per rule, regexes
//! are size-capped at compile time, and no index into the content is unchecked.
//! On return: findings are sorted by position, carry the secret's byte range, line and
//! column, and a fingerprint, never the value.
//! Does not check: files over the size cap (reported as skipped by
//! [`Scanner::scan_files_parallel`]); encodings (`deep.rs` decodes before calling here).

use std::fmt;
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind as AcMatchKind};
use globset::{Glob, GlobSet, GlobSetBuilder};
use regex_automata::Input;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::allow;
use crate::error::ScanError;
use crate::lazy_regex::{Checks, LazyRegex};
use crate::rule::{check_rule_id, Allowlist, Check, Condition, Rule, Span, Target};

/// Bytes before a keyword hit that a [`Span::Line`] or [`Span::Block`] window reaches back.
pub const WINDOW_BACK: usize = 1024;
/// Bytes after a keyword hit that a window reaches forward (still cut at the line end for
/// [`Span::Line`]).
pub const WINDOW_FORWARD: usize = 64 * 1024;
/// Default cap on one file's size in [`Scanner::scan_files_parallel`].
pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 << 20;
/// How much of a file [`is_binary`] looks at.
pub const BINARY_SNIFF_BYTES: usize = 8 * 1024;
/// How far from a match, at most, its "line" reaches for the inline comment and
/// line-targeted allowlists.
pub const LINE_CONTEXT: usize = 4096;
/// The inline comment that suppresses findings on its line.
pub const INLINE_ALLOW: &[u8] = b"airlock:allow";

/// True if `content` holds a NUL byte in its first 8 KiB (how git and ripgrep decide).
pub fn is_binary(content: &[u8]) -> bool {
    let head = content.get(..BINARY_SNIFF_BYTES).unwrap_or(content);
    memchr::memchr(0, head).is_some()
}

/// One secret found in one file. Holds where it is and a fingerprint, never the value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Finding {
    /// Id of the rule that found it.
    pub rule_id: String,
    /// Display path of the file.
    pub path: String,
    /// 1-based line of the first byte of the secret.
    pub line: u64,
    /// 1-based column of the first byte of the secret, in Unicode code points.
    pub column: u64,
    /// 1-based line of the last byte of the secret.
    pub end_line: u64,
    /// 1-based column just after the secret on `end_line`, in Unicode code points.
    pub end_column: u64,
    /// Byte offset of the secret in the content.
    pub start: usize,
    /// Byte offset just after the secret.
    pub end: usize,
    /// Short hex fingerprint of rule and value (see [`Scanner::with_fingerprint_salt`]).
    pub fingerprint: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.path, self.line, self.rule_id)
    }
}

/// Why a file was not scanned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "reason")]
pub enum SkipReason {
    /// Larger than the per-file cap.
    TooLarge {
        /// Size seen (at least `limit + 1` if the file grew while read).
        size: u64,
        /// The cap.
        limit: u64,
    },
    /// Matched a global path allowlist.
    PathAllowlisted,
    /// Not a regular file (directory, FIFO, device...).
    NotRegularFile,
}

/// A file that was not scanned, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFile {
    /// Display path.
    pub path: String,
    /// Why.
    #[serde(flatten)]
    pub reason: SkipReason,
}

impl fmt::Display for SkippedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            SkipReason::TooLarge { size, limit } => {
                write!(
                    f,
                    "{}: skipped: {size} bytes, over the {limit}-byte cap",
                    self.path
                )
            }
            SkipReason::PathAllowlisted => write!(f, "{}: skipped: path allowlisted", self.path),
            SkipReason::NotRegularFile => write!(f, "{}: skipped: not a regular file", self.path),
        }
    }
}

/// Result of [`Scanner::scan_files_parallel`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanReport {
    /// Every finding, in input file order, then by position.
    pub findings: Vec<Finding>,
    /// Files whose content was scanned.
    pub files_scanned: u64,
    /// Bytes scanned.
    pub bytes_scanned: u64,
    /// Files not scanned, in input order.
    pub skipped: Vec<SkippedFile>,
}

struct CompiledAllowlist {
    condition: Condition,
    target: Target,
    regexes: Vec<LazyRegex>,
    stopwords: Vec<Vec<u8>>,
    paths: Vec<LazyRegex>,
    globs: Option<GlobSet>,
    checks: Vec<Check>,
}

/// A rule's matchers. Regexes are checked when the scanner is built and compiled on first
/// use (see `lazy_regex.rs`).
struct CompiledRule {
    regex: Option<LazyRegex>,
    path: Option<LazyRegex>,
    context: Option<LazyRegex>,
    allowlists: Vec<CompiledAllowlist>,
    fallback: bool,
}

/// The keyword search, once built.
enum Prefilter {
    /// No rule has keywords.
    Empty,
    /// The noncontiguous NFA ([`Scanner::with_small_inputs`], or the DFA could not be built).
    Ready(AhoCorasick),
    /// The DFA, walked over four parts of a file at once.
    Dfa(Box<crate::keywords::Keywords>),
    /// Could not be built (cannot happen: the same keywords built at load time); every
    /// keyword rule then runs on the whole file.
    Broken,
}

/// A compiled rule set. Build once, share across threads (`Send + Sync`).
pub struct Scanner {
    rules: Vec<Rule>,
    compiled: Vec<CompiledRule>,
    /// Every distinct keyword (lowercase), the prefilter's patterns.
    keywords: Vec<String>,
    /// The keyword search, built on first use (see [`Scanner::with_small_inputs`]).
    prefilter: std::sync::OnceLock<Prefilter>,
    /// Search keywords with Aho-Corasick's noncontiguous NFA (quick to build, slower per
    /// byte) instead of its DFA.
    small_inputs: bool,
    /// Pattern id of the prefilter -> rules that have that keyword.
    keyword_rules: Vec<Vec<usize>>,
    /// Rules without keywords: run on every file.
    always: Vec<usize>,
    global: Vec<CompiledAllowlist>,
    global_source: Vec<Allowlist>,
    max_file_bytes: u64,
    inline_allow: bool,
    fingerprint_salt: Vec<u8>,
}

impl fmt::Debug for Scanner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scanner")
            .field("rules", &self.rules.len())
            .field("max_file_bytes", &self.max_file_bytes)
            .field("inline_allow", &self.inline_allow)
            .finish_non_exhaustive()
    }
}

fn compile_globs(context: &str, globs: &[String]) -> Result<Option<GlobSet>, ScanError> {
    if globs.is_empty() {
        return Ok(None);
    }
    let mut b = GlobSetBuilder::new();
    for g in globs {
        let glob = globset::GlobBuilder::new(g)
            .literal_separator(true)
            .build()
            .or_else(|_| Glob::new(g))
            .map_err(|e| ScanError::PathGlob {
                context: context.to_string(),
                glob: g.clone(),
                reason: e.to_string(),
            })?;
        b.add(glob);
    }
    b.build().map(Some).map_err(|e| ScanError::PathGlob {
        context: context.to_string(),
        glob: globs.join(", "),
        reason: e.to_string(),
    })
}

fn compile_allowlist(
    owner: &str,
    al: &Allowlist,
    checks: Checks,
) -> Result<CompiledAllowlist, ScanError> {
    let regexes = al
        .regexes
        .iter()
        .map(|r| LazyRegex::new(owner, "allowlist regex", r, checks))
        .collect::<Result<Vec<_>, _>>()?;
    let paths = al
        .paths
        .iter()
        .map(|r| LazyRegex::new(owner, "allowlist path regex", r, checks))
        .collect::<Result<Vec<_>, _>>()?;
    let ctx = if owner == "<global>" {
        "[allowlist]".to_string()
    } else {
        format!("rule `{owner}`")
    };
    Ok(CompiledAllowlist {
        condition: al.condition,
        target: al.regex_target,
        regexes,
        stopwords: al
            .stopwords
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| s.to_ascii_lowercase().into_bytes())
            .collect(),
        paths,
        globs: compile_globs(&ctx, &al.path_globs)?,
        checks: al.checks.clone(),
    })
}

impl CompiledAllowlist {
    fn has_path_criterion(&self) -> bool {
        !self.paths.is_empty() || self.globs.is_some()
    }

    fn path_matches(&self, path: &str) -> bool {
        // A regex that cannot be built matches nothing: the allowlist allows less.
        self.paths
            .iter()
            .any(|r| r.is_match(path.as_bytes()).unwrap_or(false))
            || self.globs.as_ref().is_some_and(|g| g.is_match(path))
    }

    /// True if only path criteria are set and one matches: the whole file is allowed.
    fn allows_whole_path(&self, path: &str) -> bool {
        let only_paths =
            self.regexes.is_empty() && self.stopwords.is_empty() && self.checks.is_empty();
        self.has_path_criterion()
            && (only_paths || self.condition == Condition::Or)
            && self.path_matches(path)
    }

    fn allows(&self, path: &str, cand: &Candidate<'_>) -> bool {
        let mut set = 0u32;
        let mut any = false;
        let mut all = true;
        let mut note = |m: bool| {
            set += 1;
            any |= m;
            all &= m;
        };
        if self.has_path_criterion() {
            note(self.path_matches(path));
        }
        if !self.regexes.is_empty() {
            let target = cand.target(self.target);
            note(
                self.regexes
                    .iter()
                    .any(|r| r.is_match(target).unwrap_or(false)),
            );
        }
        if !self.stopwords.is_empty() {
            let lower = cand.secret().to_ascii_lowercase();
            note(
                self.stopwords
                    .iter()
                    .any(|w| memchr::memmem::find(&lower, w).is_some()),
            );
        }
        if !self.checks.is_empty() {
            let (secret, name) = (cand.secret(), cand.name());
            note(
                self.checks
                    .iter()
                    .any(|c| allow::run_check(*c, secret, name)),
            );
        }
        match self.condition {
            Condition::Or => any,
            Condition::And => set > 0 && all,
        }
    }
}

/// A regex match under consideration.
struct Candidate<'a> {
    content: &'a [u8],
    m: (usize, usize),
    s: (usize, usize),
}

impl<'a> Candidate<'a> {
    fn secret(&self) -> &'a [u8] {
        self.content.get(self.s.0..self.s.1).unwrap_or_default()
    }
    fn name(&self) -> &'a [u8] {
        self.content.get(self.m.0..self.s.0).unwrap_or_default()
    }
    /// The line(s) holding the match, at most [`LINE_CONTEXT`] bytes either side of it
    /// (so a finding on a multi-megabyte minified line costs no more than any other).
    fn lines(&self) -> &'a [u8] {
        let lo = self.m.0.saturating_sub(LINE_CONTEXT);
        let hi = self
            .m
            .1
            .saturating_add(LINE_CONTEXT)
            .min(self.content.len());
        let before = self.content.get(lo..self.m.0).unwrap_or_default();
        let after = self.content.get(self.m.1..hi).unwrap_or_default();
        let ls = memchr::memrchr(b'\n', before).map_or(lo, |i| lo + i + 1);
        let le = memchr::memchr(b'\n', after).map_or(hi, |i| self.m.1 + i);
        self.content.get(ls..le).unwrap_or_default()
    }
    fn target(&self, t: Target) -> &'a [u8] {
        match t {
            Target::Secret => self.secret(),
            Target::Match => self.content.get(self.m.0..self.m.1).unwrap_or_default(),
            Target::Line => self.lines(),
        }
    }
}

/// Start of the line holding `start` and end (exclusive, before `\n`) of the line holding
/// `end`.
fn line_bounds(content: &[u8], start: usize, end: usize) -> (usize, usize) {
    let start = start.min(content.len());
    let end = end.max(start).min(content.len());
    let ls = memchr::memrchr(b'\n', content.get(..start).unwrap_or_default()).map_or(0, |i| i + 1);
    let le = memchr::memchr(b'\n', content.get(end..).unwrap_or_default())
        .map_or(content.len(), |i| end + i);
    (ls, le)
}

/// True if `[s, e)` lies inside a `[REDACTED:...]` marker already in the content.
fn inside_marker(content: &[u8], s: usize, e: usize) -> bool {
    const OPEN: &[u8] = b"[REDACTED:";
    let from = s.saturating_sub(OPEN.len() + 80);
    let Some(hay) = content.get(from..e.min(content.len())) else {
        return false;
    };
    let Some(i) = memchr::memmem::rfind(hay, OPEN) else {
        return false;
    };
    let open_at = from + i;
    let close = content
        .get(open_at..)
        .and_then(|rest| {
            memchr::memchr(
                b']',
                rest.get(..rest.len().min(OPEN.len() + 80))
                    .unwrap_or_default(),
            )
        })
        .map(|j| open_at + j + 1);
    match close {
        Some(c) => open_at < e && s < c,
        None => false,
    }
}

/// What a rule from outside (a config file, a caller) is checked for when it loads: a usable,
/// unique id, a regex or a path.
fn check_loaded_rule(
    rule: &Rule,
    seen: &mut std::collections::HashSet<String>,
) -> Result<(), ScanError> {
    check_rule_id(&rule.id).map_err(|reason| ScanError::RuleInvalid {
        rule_id: rule.id.clone(),
        reason,
    })?;
    if !seen.insert(rule.id.clone()) {
        return Err(ScanError::RuleInvalid {
            rule_id: rule.id.clone(),
            reason: "duplicate rule id".into(),
        });
    }
    if rule.regex.is_none() && rule.path.is_none() {
        return Err(ScanError::RuleInvalid {
            rule_id: rule.id.clone(),
            reason: "neither `regex` nor `path` is set".into(),
        });
    }
    Ok(())
}

struct Raw {
    rule: usize,
    start: usize,
    end: usize,
}

impl Scanner {
    /// The built-in rule set with the built-in global allowlist; its [`Scanner::rules`] carry
    /// their test templates (examples, false positives, samples).
    pub fn with_default_rules() -> Result<Scanner, ScanError> {
        // The built-in regexes are constants of this crate: tests parse and compile every
        // one of them (`builtin_rules_pass_the_full_check`, `every_builtin_regex_compiles`),
        // so loading skips the parse and each is compiled on first use; and they check
        // what a rule file is checked for on load (`builtin_rules_pass_the_full_check`).
        Scanner::build(
            crate::builtin::default_rules(),
            crate::builtin::default_global_allowlists(),
            Checks::BuiltIn,
        )
    }

    /// [`Scanner::with_default_rules`] without the rules' test templates
    /// (`builtin::default_detectors`): the same findings, for callers that only scan.
    pub fn with_default_detectors() -> Result<Scanner, ScanError> {
        Scanner::build(
            crate::builtin::default_detectors(),
            crate::builtin::default_global_allowlists(),
            Checks::BuiltIn,
        )
    }

    /// A scanner from explicit rules and global allowlists. Validates ids (unique,
    /// `[A-Za-z0-9._-]`, at most 64 bytes), parses every regex and compiles every glob, and
    /// checks that each rule has a regex or a path and that `secret_group` exists in its
    /// regex. Each regex is compiled on first use ([`Scanner::compile_all`] forces them).
    pub fn new(rules: Vec<Rule>, global: Vec<Allowlist>) -> Result<Scanner, ScanError> {
        Scanner::build(rules, global, Checks::Full)
    }

    fn build(
        rules: Vec<Rule>,
        global: Vec<Allowlist>,
        checks: Checks,
    ) -> Result<Scanner, ScanError> {
        let mut seen = std::collections::HashSet::new();
        let mut compiled = Vec::with_capacity(rules.len());
        let mut rules = rules;
        for rule in &mut rules {
            // The built-in rules are known to pass these (a test checks them).
            if checks == Checks::Full {
                check_loaded_rule(rule, &mut seen)?;
            }
            // The keyword search's form: lowercase, none empty, sorted, no duplicates.
            for k in &mut rule.keywords {
                k.make_ascii_lowercase();
            }
            rule.keywords.retain(|k| !k.is_empty());
            rule.keywords.sort();
            rule.keywords.dedup();
            let regex = match &rule.regex {
                Some(r) => Some(LazyRegex::new(&rule.id, "regex", r, checks)?),
                None => None,
            };
            let groups = regex.as_ref().and_then(LazyRegex::captures_len);
            if let (Some(groups), Some(g)) = (groups, rule.secret_group) {
                if g >= groups {
                    return Err(ScanError::RuleInvalid {
                        rule_id: rule.id.clone(),
                        reason: format!(
                            "secret group {g} does not exist (the regex has {} group(s))",
                            groups.saturating_sub(1)
                        ),
                    });
                }
            }
            let path = match &rule.path {
                Some(p) => Some(LazyRegex::new(&rule.id, "path", p, checks)?),
                None => None,
            };
            let context = match &rule.context {
                Some(c) => Some(LazyRegex::new(&rule.id, "context", c, checks)?),
                None => None,
            };
            let allowlists = rule
                .allowlists
                .iter()
                .map(|al| compile_allowlist(&rule.id, al, checks))
                .collect::<Result<Vec<_>, _>>()?;
            compiled.push(CompiledRule {
                regex,
                path,
                context,
                allowlists,
                fallback: rule.fallback,
            });
        }

        let mut patterns: Vec<String> = Vec::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
        let mut always = Vec::new();
        let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (ri, rule) in rules.iter().enumerate() {
            if rule.keywords.is_empty() || rule.regex.is_none() {
                always.push(ri);
                continue;
            }
            for k in &rule.keywords {
                let pid = *index.entry(k.as_str()).or_insert_with(|| {
                    patterns.push(k.clone());
                    keyword_rules.push(Vec::new());
                    patterns.len() - 1
                });
                if let Some(v) = keyword_rules.get_mut(pid) {
                    v.push(ri);
                }
            }
        }
        // Checked now for rules from outside (an automaton that cannot be built is a load
        // error), built for real on first use with the kind the caller chose.
        if !patterns.is_empty() && checks == Checks::Full {
            AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .kind(Some(AhoCorasickKind::NoncontiguousNFA))
                .build(&patterns)
                .map_err(|e| ScanError::RuleInvalid {
                    rule_id: "<keywords>".into(),
                    reason: format!("keyword automaton: {e}"),
                })?;
        }
        let global_compiled = global
            .iter()
            .map(|al| compile_allowlist("<global>", al, checks))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Scanner {
            rules,
            compiled,
            keywords: patterns,
            prefilter: std::sync::OnceLock::new(),
            small_inputs: false,
            keyword_rules,
            always,
            global: global_compiled,
            global_source: global,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            inline_allow: true,
            fingerprint_salt: Vec::new(),
        })
    }

    /// Searches keywords for small inputs (a diff's added lines, a prompt, a manifest
    /// rather than a tree) with the automaton that is quick to build (a noncontiguous NFA)
    /// rather than the one that is quick to run (a DFA). Same matches either way (a test
    /// compares them).
    pub fn with_small_inputs(mut self) -> Scanner {
        self.small_inputs = true;
        self
    }

    /// The keyword search, built on first use: a DFA for trees, the noncontiguous NFA with
    /// [`Scanner::with_small_inputs`] or if the DFA cannot be built.
    fn prefilter(&self) -> &Prefilter {
        self.prefilter.get_or_init(|| {
            if self.keywords.is_empty() {
                return Prefilter::Empty;
            }
            let nfa = || {
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .match_kind(AcMatchKind::Standard)
                    .kind(Some(AhoCorasickKind::NoncontiguousNFA))
                    .build(&self.keywords)
                    .map_or(Prefilter::Broken, Prefilter::Ready)
            };
            if self.small_inputs {
                return nfa();
            }
            crate::keywords::Keywords::build(&self.keywords)
                .map_or_else(nfa, |k| Prefilter::Dfa(Box::new(k)))
        })
    }

    /// Builds the keyword search now rather than on the first scan (e.g. on a thread of
    /// its own while the caller reads its input).
    pub fn warm_up(&self) {
        let _ = self.prefilter();
    }

    /// The rules, in priority order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Compiles every regex now (the scanner otherwise compiles each on first use) and
    /// returns the first that cannot be built: for tests and for checking a rule file up
    /// front. After `Ok`, no search can hit a build error.
    pub fn compile_all(&self) -> Result<(), ScanError> {
        let allowlists = self
            .compiled
            .iter()
            .flat_map(|c| c.allowlists.iter())
            .chain(self.global.iter());
        let in_allowlists = allowlists.flat_map(|al| al.regexes.iter().chain(al.paths.iter()));
        let in_rules = self
            .compiled
            .iter()
            .flat_map(|c| [&c.regex, &c.path, &c.context])
            .flatten();
        for lazy in in_rules.chain(in_allowlists) {
            lazy.get()?;
        }
        Ok(())
    }

    /// Every rule's regex, one per entry, each prefixed `(?-u)` (ASCII classes, like the
    /// scanner), for comparing with a plain regex tool in benchmarks (`rg -f FILE` ORs one
    /// pattern per line into one alternation). No keyword gating, allowlists or capture
    /// semantics: a baseline, not a substitute.
    pub fn regex_patterns(&self) -> Vec<String> {
        self.rules
            .iter()
            .filter_map(|r| r.regex.as_ref())
            .map(|r| format!("(?-u){r}"))
            .collect()
    }

    /// [`Scanner::regex_patterns`] as one alternation, `(?:(?-u)r1)|(?:(?-u)r2)|…`.
    pub fn regex_alternation(&self) -> String {
        let parts: Vec<String> = self
            .regex_patterns()
            .iter()
            .map(|r| format!("(?:{r})"))
            .collect();
        parts.join("|")
    }

    /// The global allowlists.
    pub fn global_allowlists(&self) -> &[Allowlist] {
        &self.global_source
    }

    /// Per-file size cap for [`Scanner::scan_files_parallel`] (default 16 MiB).
    pub fn with_max_file_bytes(mut self, max: u64) -> Scanner {
        self.max_file_bytes = max;
        self
    }

    /// The per-file size cap.
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_bytes
    }

    /// Whether an `airlock:allow` comment on a finding's line suppresses it (default on).
    /// Turn it off where the scanned text is not trusted to waive its own findings (the
    /// gate scanning a worker's diff).
    pub fn with_inline_allow(mut self, on: bool) -> Scanner {
        self.inline_allow = on;
        self
    }

    /// Mixes a salt into fingerprints. Fingerprints are the first 16 hex digits of
    /// SHA-256 over a domain tag, this salt, the rule id and the value: stable across runs
    /// (the same secret keeps its fingerprint), but without a salt a low-entropy value (a
    /// short password) can be confirmed by a dictionary attack on the fingerprint. Set a
    /// private salt where fingerprints are published.
    pub fn with_fingerprint_salt(mut self, salt: &[u8]) -> Scanner {
        self.fingerprint_salt = salt.to_vec();
        self
    }

    /// True if a global allowlist (path criteria only) covers the whole file.
    pub fn is_path_allowlisted(&self, path: &str) -> bool {
        self.global.iter().any(|g| g.allows_whole_path(path))
    }

    pub(crate) fn fingerprint(&self, rule_id: &str, secret: &[u8]) -> String {
        let mut h = Sha256::new();
        h.update(b"airlock-scan fingerprint v1\0");
        h.update((self.fingerprint_salt.len() as u64).to_be_bytes());
        h.update(&self.fingerprint_salt);
        h.update(rule_id.as_bytes());
        h.update([0u8]);
        h.update(secret);
        let d = h.finalize();
        hex::encode(d.get(..8).unwrap_or_default())
    }

    /// Scans one file's bytes in every form (the caller caps the size): the findings of
    /// [`Scanner::scan_content`]. Returns nothing for an allowlisted path.
    pub fn scan(&self, path: &str, content: &[u8]) -> Vec<Finding> {
        self.scan_content(path, content).findings
    }

    /// The patterns over `content` as it is (no decoding, no joining).
    pub(crate) fn scan_text(&self, path: &str, content: &[u8]) -> Vec<Finding> {
        crate::work::text(content.len());
        let n = self.rules.len();
        // Which rules apply to this path: None = not yet computed.
        let mut applies: Vec<Option<bool>> = vec![None; n];
        let mut check_applies = |ri: usize| -> bool {
            if let Some(Some(a)) = applies.get(ri) {
                return *a;
            }
            let a = match self.compiled.get(ri) {
                Some(c) => {
                    // A path regex that cannot be built counts as matching (fail closed).
                    c.path
                        .as_ref()
                        .is_none_or(|p| p.is_match(path.as_bytes()).unwrap_or(true))
                        && !c.allowlists.iter().any(|al| al.allows_whole_path(path))
                }
                None => false,
            };
            if let Some(slot) = applies.get_mut(ri) {
                *slot = Some(a);
            }
            a
        };

        let len = content.len();
        let mut whole = vec![false; n];
        let mut windows: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
        for &ri in &self.always {
            if check_applies(ri) {
                if let Some(w) = whole.get_mut(ri) {
                    *w = true;
                }
            }
        }
        let prefilter = self.prefilter();
        if let Prefilter::Broken = prefilter {
            // Fail closed: without the keyword pass, every rule runs on the whole file.
            for ri in 0..n {
                if check_applies(ri) {
                    if let Some(w) = whole.get_mut(ri) {
                        *w = true;
                    }
                }
            }
        }
        {
            let mut line: (usize, usize) = (usize::MAX, 0);
            // Each keyword hit opens a window for its rules (or marks a whole-file rule);
            // hits are streamed, never collected.
            let mut on_hit = |keyword: usize, s: usize, e: usize| {
                let Some(rules) = self.keyword_rules.get(keyword) else {
                    return;
                };
                for &ri in rules {
                    if whole.get(ri).copied().unwrap_or(true) || !check_applies(ri) {
                        continue;
                    }
                    let span = self.rules.get(ri).map_or(Span::File, |r| r.span);
                    if span == Span::File {
                        if let Some(w) = whole.get_mut(ri) {
                            *w = true;
                        }
                        continue;
                    }
                    if !(line.0 <= s && e <= line.1) {
                        line = line_bounds(content, s, e);
                    }
                    let ws = line.0.max(s.saturating_sub(WINDOW_BACK));
                    let we = match span {
                        // Include the line's `\n`: a regex may end on it.
                        Span::Line => (line.1 + 1).min(len).min(e.saturating_add(WINDOW_FORWARD)),
                        _ => len.min(e.saturating_add(WINDOW_FORWARD)),
                    };
                    let Some(list) = windows.get_mut(ri) else {
                        continue;
                    };
                    match list.last_mut() {
                        Some(last) if ws <= last.1 && we >= last.0 => {
                            last.0 = last.0.min(ws);
                            last.1 = last.1.max(we);
                        }
                        _ => list.push((ws, we)),
                    }
                }
            };
            match prefilter {
                Prefilter::Ready(ac) => {
                    for hit in ac.find_overlapping_iter(content) {
                        on_hit(hit.pattern().as_usize(), hit.start(), hit.end());
                    }
                }
                // Hits in no set order: windows are sorted when merged.
                Prefilter::Dfa(k) => k.each(content, on_hit),
                Prefilter::Empty | Prefilter::Broken => {}
            }
        }

        let mut raw: Vec<Raw> = Vec::new();
        for ri in 0..n {
            let is_whole = whole.get(ri).copied().unwrap_or(false);
            let list = windows.get_mut(ri).map(std::mem::take).unwrap_or_default();
            if !is_whole && list.is_empty() {
                continue;
            }
            let (Some(rule), Some(comp)) = (self.rules.get(ri), self.compiled.get(ri)) else {
                continue;
            };
            let Some(lazy) = &comp.regex else {
                // Path-only rule: the file itself is the finding.
                if is_whole {
                    raw.push(Raw {
                        rule: ri,
                        start: 0,
                        end: 0,
                    });
                }
                continue;
            };
            let regex = match lazy.get() {
                Ok(re) => re,
                Err(_) => {
                    // Fail closed: a rule that cannot run reports the file (its start).
                    raw.push(Raw {
                        rule: ri,
                        start: 0,
                        end: 0,
                    });
                    continue;
                }
            };
            let merged = if is_whole {
                vec![(0, len)]
            } else {
                merge_windows(list, len)
            };
            let mut context_ok: Option<bool> = None;
            for (ws, we) in merged {
                for caps in regex.captures_iter(Input::new(content).range(ws..we)) {
                    let Some(m) = caps.get_match() else { continue };
                    let secret = match rule.secret_group {
                        Some(g) => caps.get_group(g),
                        None => (1..caps.group_len())
                            .filter_map(|g| caps.get_group(g))
                            .find(|sp| !sp.is_empty())
                            .or(Some(m.span())),
                    };
                    let Some(secret) = secret else { continue };
                    if secret.is_empty() {
                        continue;
                    }
                    let cand = Candidate {
                        content,
                        m: (m.start(), m.end()),
                        s: (secret.start, secret.end),
                    };
                    if !self.keep(rule, comp, path, &cand) {
                        continue;
                    }
                    if let Some(ctx) = &comp.context {
                        let ok = *context_ok
                            .get_or_insert_with(|| ctx.is_match(content).unwrap_or(true));
                        if !ok {
                            continue;
                        }
                    }
                    raw.push(Raw {
                        rule: ri,
                        start: secret.start,
                        end: secret.end,
                    });
                }
            }
        }
        self.finish(path, content, raw)
    }

    /// Entropy, marker, allowlists, inline allow. True: report it.
    fn keep(&self, rule: &Rule, comp: &CompiledRule, path: &str, cand: &Candidate<'_>) -> bool {
        let secret = cand.secret();
        if let Some(min) = rule.entropy {
            if allow::shannon_entropy(secret) < min {
                return false;
            }
        }
        if allow::is_redaction_marker(secret) || inside_marker(cand.content, cand.s.0, cand.s.1) {
            return false;
        }
        if self.global.iter().any(|g| g.allows(path, cand)) {
            return false;
        }
        if comp.allowlists.iter().any(|al| al.allows(path, cand)) {
            return false;
        }
        if self.inline_allow && memchr::memmem::find(cand.lines(), INLINE_ALLOW).is_some() {
            return false;
        }
        true
    }

    fn finish(&self, path: &str, content: &[u8], mut raw: Vec<Raw>) -> Vec<Finding> {
        // Fallback findings yield to any other finding on overlapping bytes.
        let is_fallback = |r: &Raw| self.compiled.get(r.rule).is_some_and(|c| c.fallback);
        raw.sort_by_key(|r| (r.start, r.end, is_fallback(r), r.rule));
        raw.dedup_by(|b, a| a.start == b.start && a.end == b.end);
        let strong: Vec<(usize, usize)> = raw
            .iter()
            .filter(|r| !is_fallback(r))
            .map(|r| (r.start, r.end))
            .collect();
        let mut prefix_max_end = Vec::with_capacity(strong.len());
        let mut mx = 0;
        for &(_, e) in &strong {
            mx = mx.max(e);
            prefix_max_end.push(mx);
        }
        raw.retain(|r| {
            if !is_fallback(r) {
                return true;
            }
            let k = strong.partition_point(|&(s, _)| s < r.end.max(r.start + 1));
            !(k > 0 && prefix_max_end.get(k - 1).is_some_and(|&e| e > r.start))
        });

        let mut out = Vec::with_capacity(raw.len());
        // Running position: line number and code points since the line start, advanced
        // monotonically (findings are sorted), so many findings on one long line stay linear.
        let mut pos = 0usize;
        let mut line = 1u64;
        let mut chars_in_line = 0u64;
        for r in raw {
            let start = r.start.min(content.len());
            let end = r.end.clamp(start, content.len());
            if let Some(seg) = content.get(pos..start) {
                crate::work::walk(seg.len());
                match memchr::memrchr(b'\n', seg) {
                    Some(last) => {
                        line += memchr::memchr_iter(b'\n', seg).count() as u64;
                        chars_in_line = count_chars(seg.get(last + 1..).unwrap_or_default());
                    }
                    None => chars_in_line += count_chars(seg),
                }
                pos = start;
            }
            let column = 1 + chars_in_line;
            let body = content.get(start..end).unwrap_or_default();
            crate::work::walk(body.len());
            let (end_line, end_column) = match memchr::memrchr(b'\n', body) {
                Some(i) => (
                    line + memchr::memchr_iter(b'\n', body).count() as u64,
                    1 + count_chars(body.get(i + 1..).unwrap_or_default()),
                ),
                None => (line, column + count_chars(body)),
            };
            let rule_id = self
                .rules
                .get(r.rule)
                .map(|x| x.id.clone())
                .unwrap_or_default();
            let fingerprint = self.fingerprint(&rule_id, body);
            out.push(Finding {
                rule_id,
                path: path.to_string(),
                line,
                column,
                end_line,
                end_column,
                start,
                end,
                fingerprint,
            });
        }
        out
    }

    /// Scans files from disk on `threads` worker threads (0: one per core). Each file is
    /// read whole into a per-thread buffer if it is a regular file of at most
    /// [`Scanner::max_file_bytes`]; oversize files, non-regular files and
    /// globally allowlisted paths are reported in [`ScanReport::skipped`], never silently
    /// dropped. An unreadable file is an error (the scan would be incomplete).
    /// Paths are opened as given (symlinks followed); `files` carries (display path,
    /// path on disk).
    pub fn scan_files_parallel(
        &self,
        files: Vec<(String, PathBuf)>,
        threads: usize,
    ) -> Result<ScanReport, ScanError> {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            threads
        }
        .clamp(1, files.len().max(1));
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let files = &files;
        let outcomes: Vec<Vec<(usize, Outcome)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let mut buf = Vec::new();
                        let mut out = Vec::new();
                        while !stop.load(Ordering::Relaxed) {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some((display, disk)) = files.get(i) else {
                                break;
                            };
                            let o = self.scan_one_file(display, disk, &mut buf);
                            if matches!(o, Outcome::Error(_)) {
                                stop.store(true, Ordering::Relaxed);
                            }
                            out.push((i, o));
                        }
                        out
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| vec![(usize::MAX, Outcome::Panicked)])
                })
                .collect()
        });
        let mut all: Vec<(usize, Outcome)> = outcomes.into_iter().flatten().collect();
        all.sort_by_key(|(i, _)| *i);
        let mut report = ScanReport::default();
        for (_, o) in all {
            match o {
                Outcome::Scanned { findings, bytes } => {
                    report.files_scanned += 1;
                    report.bytes_scanned += bytes;
                    report.findings.extend(findings);
                }
                Outcome::Skipped(s) => report.skipped.push(s),
                Outcome::Error(e) => return Err(e),
                Outcome::Panicked => {
                    return Err(ScanError::Worker("a worker thread panicked".into()))
                }
            }
        }
        Ok(report)
    }

    fn scan_one_file(&self, display: &str, disk: &std::path::Path, buf: &mut Vec<u8>) -> Outcome {
        let skipped = |reason| {
            Outcome::Skipped(SkippedFile {
                path: display.to_string(),
                reason,
            })
        };
        if self.is_path_allowlisted(display) {
            return skipped(SkipReason::PathAllowlisted);
        }
        let io = |source| {
            Outcome::Error(ScanError::Io {
                path: disk.to_path_buf(),
                source,
            })
        };
        // Check the type before opening: opening a FIFO would block.
        let meta = match std::fs::metadata(disk) {
            Ok(m) => m,
            Err(e) => return io(e),
        };
        if !meta.is_file() {
            return skipped(SkipReason::NotRegularFile);
        }
        let limit = self.max_file_bytes;
        if meta.len() > limit {
            return skipped(SkipReason::TooLarge {
                size: meta.len(),
                limit,
            });
        }
        let file = match std::fs::File::open(disk) {
            Ok(f) => f,
            Err(e) => return io(e),
        };
        buf.clear();
        if let Err(e) = file.take(limit.saturating_add(1)).read_to_end(buf) {
            return io(e);
        }
        let size = buf.len() as u64;
        if size > limit {
            return skipped(SkipReason::TooLarge { size, limit });
        }
        Outcome::Scanned {
            findings: self.scan(display, buf),
            bytes: size,
        }
    }
}

enum Outcome {
    Scanned { findings: Vec<Finding>, bytes: u64 },
    Skipped(SkippedFile),
    Error(ScanError),
    Panicked,
}

fn merge_windows(mut list: Vec<(usize, usize)>, len: usize) -> Vec<(usize, usize)> {
    list.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(list.len());
    let mut covered = 0usize;
    for (s, e) in list {
        let (s, e) = (s.min(len), e.min(len));
        match out.last_mut() {
            Some(last) if s <= last.1.saturating_add(1) => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    for (s, e) in &out {
        covered += e - s;
    }
    // Many scattered windows: one pass over the file is cheaper than many searches.
    if covered.saturating_mul(2) > len && out.len() > 1 {
        return vec![(0, len)];
    }
    out
}

/// Unicode code points in `bytes` (UTF-8 continuation bytes are not counted; invalid
/// UTF-8 counts one per byte, near enough).
fn count_chars(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| (b & 0xC0) != 0x80).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_is_nul_in_first_8k() {
        assert!(is_binary(b"abc\0def"));
        assert!(!is_binary(b"plain text\n"));
        let mut late = vec![b'a'; BINARY_SNIFF_BYTES];
        late.push(0);
        assert!(!is_binary(&late));
    }

    #[test]
    fn marker_detection() {
        let c = b"x = [REDACTED:generic-secret-assignment] y";
        assert!(inside_marker(c, 14, 39));
        assert!(!inside_marker(c, 41, 42));
    }

    #[test]
    fn windows_merge_and_collapse() {
        assert_eq!(
            merge_windows(vec![(10, 20), (0, 5), (15, 30)], 1000),
            vec![(0, 5), (10, 30)]
        );
        assert_eq!(
            merge_windows(vec![(0, 300), (400, 800)], 1000),
            vec![(0, 1000)]
        );
    }
}
