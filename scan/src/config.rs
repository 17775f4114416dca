//! airlock's scanner configuration (TOML): the built-in rules plus extra rules,
//! disabled rules and allowlists.
//!
//! ```toml
//! [scan]
//! use_default_rules = true          # default
//! disabled_rules = ["jwt"]
//! max_file_bytes = 16777216
//! inline_allow = true
//!
//! [allowlist]                       # global; `paths` are globs
//! paths = ["docs/examples/**", "**/*.snap"]
//! stopwords = ["notasecret"]
//!
//! [[rules]]
//! id = "acme-api-key"
//! description = "ACME API key"
//! regex = '''\b(acme_[a-z0-9]{32})\b'''
//! keywords = ["acme_"]
//! entropy = 3.0
//! scope = "line"                    # line | block | file (default: file)
//! examples = ["key = acme_{{l:32}}"]        # each must be found (checked at load)
//! false_positives = ["key = acme_<key>"]    # none may be found
//! [[rules.allowlists]]
//! regexes = ['''^acme_test''']
//! ```
//!
//! Guards against: silently ignored settings (unknown fields are errors: this is our
//! format, one strict way), rules that do not do what their examples say, oversized
//! configs. On `Ok`: every rule compiled and every example checked.
//! Does not check: that a regex is a good detector; examples are the author's claim.

use serde::Deserialize;

use crate::engine::Scanner;
use crate::error::{ConfigWarning, ScanError};
use crate::rule::{Allowlist, Check, Condition, Rule, RuleSource, Span, Target};
use crate::testgen::{render, split_path, Rng};

/// Largest accepted config file, in bytes.
pub const MAX_CONFIG_BYTES: usize = 1 << 20;

/// Seed used to render rule examples when a config is loaded.
const EXAMPLE_SEED: u64 = 0xC0FF_EE00;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    scan: ScanSection,
    #[serde(default)]
    allowlist: Option<AllowlistConfig>,
    #[serde(default)]
    allowlists: Vec<AllowlistConfig>,
    #[serde(default)]
    rules: Vec<RuleConfig>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScanSection {
    #[serde(default = "yes")]
    use_default_rules: bool,
    #[serde(default)]
    disabled_rules: Vec<String>,
    #[serde(default)]
    max_file_bytes: Option<u64>,
    #[serde(default = "yes")]
    inline_allow: bool,
}

impl Default for ScanSection {
    fn default() -> Self {
        ScanSection {
            use_default_rules: true,
            disabled_rules: Vec::new(),
            max_file_bytes: None,
            inline_allow: true,
        }
    }
}

fn yes() -> bool {
    true
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AllowlistConfig {
    #[serde(default)]
    description: String,
    #[serde(default)]
    condition: Condition,
    #[serde(default)]
    regex_target: Target,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    /// Globs.
    #[serde(default)]
    paths: Vec<String>,
    /// Regexes on the path.
    #[serde(default)]
    path_regexes: Vec<String>,
    #[serde(default)]
    checks: Vec<Check>,
}

impl From<AllowlistConfig> for Allowlist {
    fn from(a: AllowlistConfig) -> Allowlist {
        Allowlist {
            description: a.description,
            condition: a.condition,
            regex_target: a.regex_target,
            regexes: a.regexes,
            stopwords: a.stopwords,
            paths: a.path_regexes,
            path_globs: a.paths,
            checks: a.checks,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleConfig {
    id: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    regex: Option<String>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    secret_group: Option<usize>,
    #[serde(default)]
    entropy: Option<f64>,
    /// Globs: the rule applies only to matching paths.
    #[serde(default)]
    paths: Vec<String>,
    /// Regex on the path (alternative to `paths`).
    #[serde(default)]
    path_regex: Option<String>,
    #[serde(default)]
    context: Option<String>,
    #[serde(default)]
    scope: Option<Span>,
    #[serde(default)]
    fallback: bool,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    examples: Vec<String>,
    #[serde(default)]
    false_positives: Vec<String>,
    #[serde(default)]
    allowlists: Vec<AllowlistConfig>,
}

/// Turns path globs into one path regex (globset's translation).
pub(crate) fn globs_to_regex(rule_id: &str, globs: &[String]) -> Result<Option<String>, ScanError> {
    if globs.is_empty() {
        return Ok(None);
    }
    let mut parts = Vec::with_capacity(globs.len());
    for g in globs {
        let glob = globset::GlobBuilder::new(g)
            .literal_separator(true)
            .build()
            .map_err(|e| ScanError::PathGlob {
                context: format!("rule `{rule_id}`"),
                glob: g.clone(),
                reason: e.to_string(),
            })?;
        parts.push(format!("(?:{})", glob.regex()));
    }
    Ok(Some(parts.join("|")))
}

/// Renders each example of each rule in `ids` and checks it against the finished scanner:
/// every true-positive example must be found by its rule, no false positive may be.
pub(crate) fn check_examples(scanner: &Scanner, ids: &[String]) -> Result<(), ScanError> {
    for rule in scanner.rules().iter().filter(|r| ids.contains(&r.id)) {
        let default_path = rule_example_path(rule);
        for (index, ex) in rule.examples.iter().enumerate() {
            let (p, ex) = split_path(ex);
            let path = p.map_or_else(|| default_path.clone(), str::to_string);
            let text = render(ex, &mut Rng::new(EXAMPLE_SEED)).text;
            if !scanner
                .scan(&path, text.as_bytes())
                .iter()
                .any(|f| f.rule_id == rule.id)
            {
                return Err(ScanError::RuleExample {
                    rule_id: rule.id.clone(),
                    kind: "true-positive",
                    index,
                    reason: "is not found".into(),
                });
            }
        }
        for (index, ex) in rule.false_positives.iter().enumerate() {
            let (p, ex) = split_path(ex);
            let path = p.map_or_else(|| default_path.clone(), str::to_string);
            let text = render(ex, &mut Rng::new(EXAMPLE_SEED)).text;
            if scanner
                .scan(&path, text.as_bytes())
                .iter()
                .any(|f| f.rule_id == rule.id)
            {
                return Err(ScanError::RuleExample {
                    rule_id: rule.id.clone(),
                    kind: "false-positive",
                    index,
                    reason: "is reported".into(),
                });
            }
        }
    }
    Ok(())
}

/// A path that a path-restricted rule applies to, for its examples: found by trying a few
/// typical names; `example.txt` otherwise.
fn rule_example_path(rule: &Rule) -> String {
    let Some(p) = &rule.path else {
        return "example.txt".into();
    };
    let Ok(re) = crate::lazy_regex::compile_regex(&rule.id, "path", p) else {
        return "example.txt".into();
    };
    const CANDIDATES: &[&str] = &[
        "example.txt",
        ".env",
        "config/example.env",
        "config.yaml",
        "config.json",
        "settings.py",
        "config.js",
        "main.tf",
        "example.conf",
        ".npmrc",
        ".pypirc",
        "example.properties",
        "example.xml",
        "example.ini",
    ];
    CANDIDATES
        .iter()
        .find(|c| re.is_match(c.as_bytes()))
        .map_or_else(|| "example.txt".into(), |c| (*c).to_string())
}

impl Scanner {
    /// A scanner from airlock's TOML config (see [`crate::config`]): the built-in rules
    /// (unless `use_default_rules = false`) minus `disabled_rules`, plus the config's rules
    /// and allowlists. A config rule with the id of a built-in one replaces it (warning).
    /// Unknown fields are errors; each rule's examples are checked.
    pub fn from_config_toml(text: &str) -> Result<(Scanner, Vec<ConfigWarning>), ScanError> {
        if text.len() > MAX_CONFIG_BYTES {
            return Err(ScanError::Config {
                format: "airlock",
                reason: format!("{} bytes, at most {MAX_CONFIG_BYTES}", text.len()),
            });
        }
        let cfg: ConfigFile = toml::from_str(text).map_err(|e| ScanError::Config {
            format: "airlock",
            reason: e.to_string(),
        })?;
        let mut warnings = Vec::new();
        let mut rules = if cfg.scan.use_default_rules {
            crate::builtin::default_rules()
        } else {
            Vec::new()
        };
        for id in &cfg.scan.disabled_rules {
            let before = rules.len();
            rules.retain(|r| &r.id != id);
            if rules.len() == before {
                warnings.push(ConfigWarning {
                    rule_id: Some(id.clone()),
                    field: "scan.disabled_rules".into(),
                    message: "no such rule; nothing disabled".into(),
                });
            }
        }
        let mut config_ids = Vec::new();
        for rc in cfg.rules {
            let mut path = rc.path_regex.clone();
            if let Some(globs) = globs_to_regex(&rc.id, &rc.paths)? {
                path = Some(match path {
                    Some(p) => format!("(?:{p})|{globs}"),
                    None => globs,
                });
            }
            let rule = Rule {
                id: rc.id.clone(),
                description: rc.description,
                keywords: rc.keywords,
                regex: rc.regex,
                secret_group: rc.secret_group,
                entropy: rc.entropy,
                path,
                context: rc.context,
                span: rc.scope.unwrap_or(Span::File),
                fallback: rc.fallback,
                allowlists: rc.allowlists.into_iter().map(Allowlist::from).collect(),
                tags: rc.tags,
                examples: rc.examples,
                false_positives: rc.false_positives,
                sample: None,
                source: RuleSource::Config,
            };
            if let Some(existing) = rules.iter_mut().find(|r| r.id == rule.id) {
                if existing.source == RuleSource::Builtin {
                    warnings.push(ConfigWarning {
                        rule_id: Some(rule.id.clone()),
                        field: "rules.id".into(),
                        message: "replaces the built-in rule with the same id".into(),
                    });
                    *existing = rule;
                    config_ids.push(rc.id);
                    continue;
                }
                return Err(ScanError::RuleInvalid {
                    rule_id: rule.id,
                    reason: "duplicate rule id".into(),
                });
            }
            rules.push(rule);
            config_ids.push(rc.id);
        }
        // Fallback rules stay last so that specific rules keep priority.
        rules.sort_by_key(|r| r.fallback);
        let mut global = crate::builtin::default_global_allowlists();
        global.extend(
            cfg.allowlist
                .into_iter()
                .chain(cfg.allowlists)
                .map(Allowlist::from),
        );
        let mut scanner = Scanner::new(rules, global)?.with_inline_allow(cfg.scan.inline_allow);
        if let Some(max) = cfg.scan.max_file_bytes {
            scanner = scanner.with_max_file_bytes(max);
        }
        check_examples(&scanner, &config_ids)?;
        Ok((scanner, warnings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_translation_matches_like_globset() {
        let re = globs_to_regex("r", &["**/*.env".into(), "docs/**".into()])
            .unwrap()
            .unwrap();
        let re = crate::lazy_regex::compile_regex("r", "path", &re).unwrap();
        assert!(re.is_match(b"app/prod.env"));
        assert!(re.is_match(b"docs/a/b.md"));
        assert!(!re.is_match(b"src/main.rs"));
    }
}
