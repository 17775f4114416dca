//! Imports a gitleaks (v8) configuration file so teams can reuse their rules.
//!
//! Supported: `title`, `description`, `minVersion`; `[extend] useDefault` (airlock's
//! built-in rules stand in for gitleaks' defaults, with a warning) and `disabledRules`;
//! `[[rules]]` with `id`, `description`, `regex`, `secretGroup`, `entropy`, `path`,
//! `keywords`, `tags`, `[rules.allowlist]` and `[[rules.allowlists]]`; global
//! `[allowlist]` and `[[allowlists]]` (with `targetRules`). Allowlists support
//! `description`, `condition` (OR/AND), `regexTarget` (secret/match/line), `regexes`,
//! `stopwords` and `paths` (regexes, as in gitleaks).
//!
//! Guards against: settings silently dropped. Every field we do not apply (`commits`,
//! `[extend] path`/`url`, `skipReport`, `[[rules.required]]`, unknown keys) comes back as a
//! [`ConfigWarning`] naming the field; a regex the Rust engine cannot compile (look-around,
//! back-references) is an error naming the rule id.
//! Semantics: like gitleaks, a rule's regex runs over the whole file when any of its
//! keywords occurs anywhere in it (case-insensitive), or on every file if it has none; the
//! secret is `secretGroup`, else the first non-empty group, else the whole match.

use toml::{Table, Value};

use crate::engine::Scanner;
use crate::error::{ConfigWarning, ScanError};
use crate::rule::{Allowlist, Condition, Rule, RuleSource, Span, Target};

const FORMAT: &str = "gitleaks";

struct Ctx {
    warnings: Vec<ConfigWarning>,
}

impl Ctx {
    fn warn(&mut self, rule: Option<&str>, field: &str, message: impl Into<String>) {
        self.warnings.push(ConfigWarning {
            rule_id: rule.map(str::to_string),
            field: field.to_string(),
            message: message.into(),
        });
    }

    fn unknown(&mut self, rule: Option<&str>, prefix: &str, key: &str) {
        let field = if prefix.is_empty() {
            key.to_string()
        } else {
            format!("{prefix}.{key}")
        };
        self.warn(rule, &field, "not supported by airlock; ignored");
    }
}

fn bad(reason: impl Into<String>) -> ScanError {
    ScanError::Config {
        format: FORMAT,
        reason: reason.into(),
    }
}

fn want_str(v: &Value, field: &str) -> Result<String, ScanError> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| bad(format!("`{field}` must be a string")))
}

fn want_strs(v: &Value, field: &str) -> Result<Vec<String>, ScanError> {
    let arr = v
        .as_array()
        .ok_or_else(|| bad(format!("`{field}` must be an array of strings")))?;
    arr.iter().map(|x| want_str(x, field)).collect()
}

fn want_f64(v: &Value, field: &str) -> Result<f64, ScanError> {
    v.as_float()
        .or_else(|| v.as_integer().map(|i| i as f64))
        .ok_or_else(|| bad(format!("`{field}` must be a number")))
}

/// Parses one allowlist table. Returns it and, for global `[[allowlists]]`, its
/// `targetRules`.
fn parse_allowlist(
    ctx: &mut Ctx,
    rule: Option<&str>,
    prefix: &str,
    t: &Table,
    global: bool,
) -> Result<(Allowlist, Vec<String>), ScanError> {
    let mut al = Allowlist::default();
    let mut targets = Vec::new();
    for (k, v) in t {
        let field = format!("{prefix}.{k}");
        match k.as_str() {
            "description" => al.description = want_str(v, &field)?,
            "condition" => {
                al.condition = match want_str(v, &field)?.to_ascii_uppercase().as_str() {
                    "OR" | "" => Condition::Or,
                    "AND" => Condition::And,
                    other => {
                        return Err(bad(format!(
                            "`{field}`: unknown condition `{other}` (OR or AND)"
                        )))
                    }
                }
            }
            "regexTarget" => {
                al.regex_target = match want_str(v, &field)?.to_ascii_lowercase().as_str() {
                    "secret" | "" => Target::Secret,
                    "match" => Target::Match,
                    "line" => Target::Line,
                    other => return Err(bad(format!("`{field}`: unknown target `{other}`"))),
                }
            }
            "regexes" => al.regexes = want_strs(v, &field)?,
            "stopwords" => al.stopwords = want_strs(v, &field)?,
            "paths" => al.paths = want_strs(v, &field)?,
            "commits" => {
                if !want_strs(v, &field)?.is_empty() {
                    ctx.warn(rule, &field, "commit allowlists do not apply (airlock scans trees, not history); ignored");
                }
            }
            "targetRules" if global => targets = want_strs(v, &field)?,
            _ => ctx.unknown(rule, prefix, k),
        }
    }
    if al.condition == Condition::And && al.is_empty() {
        ctx.warn(rule, prefix, "allowlist has no criteria; it never matches");
    }
    Ok((al, targets))
}

fn parse_rule(ctx: &mut Ctx, t: &Table, index: usize) -> Result<Rule, ScanError> {
    let id = match t.get("id") {
        Some(v) => want_str(v, "rules.id")?,
        None => return Err(bad(format!("rules[{index}]: missing `id`"))),
    };
    let mut rule = Rule::new(id.clone(), String::new());
    rule.regex = None;
    rule.span = Span::File;
    rule.source = RuleSource::Gitleaks;
    for (k, v) in t {
        let field = format!("rules.{k}");
        match k.as_str() {
            "id" => {}
            "description" => rule.description = want_str(v, &field)?,
            "regex" => rule.regex = Some(want_str(v, &field)?),
            "secretGroup" => {
                let g = v.as_integer().ok_or_else(|| bad(format!("rule `{id}`: `secretGroup` must be an integer")))?;
                let g = usize::try_from(g).map_err(|_| bad(format!("rule `{id}`: `secretGroup` is negative")))?;
                rule.secret_group = (g > 0).then_some(g);
            }
            "entropy" => {
                let e = want_f64(v, &field)?;
                rule.entropy = (e > 0.0).then_some(e);
            }
            "path" => rule.path = Some(want_str(v, &field)?),
            "keywords" => rule.keywords = want_strs(v, &field)?,
            "tags" => rule.tags = want_strs(v, &field)?,
            "allowlist" => {
                let at = v.as_table().ok_or_else(|| bad(format!("rule `{id}`: `allowlist` must be a table")))?;
                let (al, _) = parse_allowlist(ctx, Some(&id), "rules.allowlist", at, false)?;
                rule.allowlists.push(al);
            }
            "allowlists" => {
                let arr = v.as_array().ok_or_else(|| bad(format!("rule `{id}`: `allowlists` must be an array of tables")))?;
                for a in arr {
                    let at = a.as_table().ok_or_else(|| bad(format!("rule `{id}`: `allowlists` entries must be tables")))?;
                    let (al, _) = parse_allowlist(ctx, Some(&id), "rules.allowlists", at, false)?;
                    rule.allowlists.push(al);
                }
            }
            "skipReport" => ctx.warn(Some(&id), &field, "not supported; the rule reports its findings"),
            "required" => ctx.warn(
                Some(&id),
                &field,
                "composite rules are not supported; the rule reports without its required companions",
            ),
            _ => ctx.unknown(Some(&id), "rules", k),
        }
    }
    if rule.regex.is_none() && rule.path.is_none() {
        return Err(ScanError::RuleInvalid {
            rule_id: id,
            reason: "neither `regex` nor `path` is set".into(),
        });
    }
    Ok(rule)
}

impl Scanner {
    /// A scanner from a gitleaks TOML config (see [`crate::gitleaks`] for what is
    /// supported). Returns warnings for every field not applied.
    pub fn from_gitleaks_toml(text: &str) -> Result<(Scanner, Vec<ConfigWarning>), ScanError> {
        if text.len() > crate::config::MAX_CONFIG_BYTES {
            return Err(bad(format!(
                "{} bytes, at most {}",
                text.len(),
                crate::config::MAX_CONFIG_BYTES
            )));
        }
        let doc: Table = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        let mut ctx = Ctx {
            warnings: Vec::new(),
        };
        let mut rules: Vec<Rule> = Vec::new();
        let mut global: Vec<Allowlist> = crate::builtin::default_global_allowlists();
        let mut targeted: Vec<(Allowlist, Vec<String>)> = Vec::new();
        let mut use_default = false;
        let mut disabled: Vec<String> = Vec::new();

        for (k, v) in &doc {
            match k.as_str() {
                "title" | "description" | "minVersion" => {}
                "extend" => {
                    let t = v
                        .as_table()
                        .ok_or_else(|| bad("`extend` must be a table"))?;
                    for (ek, ev) in t {
                        let field = format!("extend.{ek}");
                        match ek.as_str() {
                            "useDefault" => {
                                use_default = ev
                                    .as_bool()
                                    .ok_or_else(|| bad("`extend.useDefault` must be a boolean"))?;
                                if use_default {
                                    ctx.warn(None, &field, "airlock's built-in rules are used in place of gitleaks' default rules");
                                }
                            }
                            "disabledRules" => disabled = want_strs(ev, &field)?,
                            "path" | "url" => ctx.warn(
                                None,
                                &field,
                                "extending another config file is not supported; ignored",
                            ),
                            _ => ctx.unknown(None, "extend", ek),
                        }
                    }
                }
                "rules" => {
                    let arr = v
                        .as_array()
                        .ok_or_else(|| bad("`rules` must be an array of tables"))?;
                    for (i, r) in arr.iter().enumerate() {
                        let t = r
                            .as_table()
                            .ok_or_else(|| bad(format!("rules[{i}] must be a table")))?;
                        rules.push(parse_rule(&mut ctx, t, i)?);
                    }
                }
                "allowlist" => {
                    let t = v
                        .as_table()
                        .ok_or_else(|| bad("`allowlist` must be a table"))?;
                    global.push(parse_allowlist(&mut ctx, None, "allowlist", t, false)?.0);
                }
                "allowlists" => {
                    let arr = v
                        .as_array()
                        .ok_or_else(|| bad("`allowlists` must be an array of tables"))?;
                    for a in arr {
                        let t = a
                            .as_table()
                            .ok_or_else(|| bad("`allowlists` entries must be tables"))?;
                        let (al, targets) = parse_allowlist(&mut ctx, None, "allowlists", t, true)?;
                        if targets.is_empty() {
                            global.push(al);
                        } else {
                            targeted.push((al, targets));
                        }
                    }
                }
                _ => ctx.unknown(None, "", k),
            }
        }

        if use_default {
            let mut defaults = crate::builtin::default_rules();
            defaults.retain(|d| !rules.iter().any(|r| r.id == d.id));
            rules.splice(0..0, defaults);
        }
        for id in &disabled {
            let before = rules.len();
            rules.retain(|r| &r.id != id);
            if before == rules.len() {
                ctx.warn(
                    Some(id),
                    "extend.disabledRules",
                    "no such rule; nothing disabled",
                );
            }
        }
        for (al, targets) in targeted {
            for t in targets {
                match rules.iter_mut().find(|r| r.id == t) {
                    Some(r) => r.allowlists.push(al.clone()),
                    None => ctx.warn(
                        Some(&t),
                        "allowlists.targetRules",
                        "no such rule; allowlist not applied to it",
                    ),
                }
            }
        }
        rules.sort_by_key(|r| r.fallback);
        let scanner = Scanner::new(rules, global)?;
        Ok((scanner, ctx.warnings))
    }
}
