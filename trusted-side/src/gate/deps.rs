//! New dependencies added by a diff's manifest edits, listed by name for the gate report.
//!
//! The gate has both sides of every changed file (the old blob from the packed revision and
//! the new content after exact application), so each supported manifest is parsed twice and
//! the dependency tables compared: a name present only in the new file is `added`, a name
//! whose requirement text changed is `changed` (a switch from a registry version to a git URL
//! is as interesting as a new name).
//!
//! Supported (by file name, at any depth): `package.json` (npm: `dependencies`,
//! `devDependencies`, `peerDependencies`, `optionalDependencies`), `Cargo.toml` (cargo:
//! `[dependencies]`, `[dev-dependencies]`, `[build-dependencies]`, their `[target.*.…]` forms
//! and `[workspace.dependencies]`), `requirements*.txt` and `requirements*.in` (pypi: one
//! requirement per line; `-r`/`-e`/`--option` lines are skipped), `pyproject.toml` (pypi:
//! `[project] dependencies`, `[project.optional-dependencies]`, `[dependency-groups]`,
//! `[tool.poetry.*dependencies]`), `go.mod` (go: `require` and `replace`, single-line and block
//! forms).
//!
//! Guards against: a dependency slipped into a manifest edit going unnamed in the report.
//! Inputs are untrusted (the new side comes from the worker): JSON and TOML go through serde
//! with the sizes the caller already capped; line formats are split by hand, no regex.
//! On `Ok`: every added or changed dependency of the supported sections, in file order of
//! sections, then name order.
//! Does not check: lockfiles (their changes already make the `deps` bucket), transitive
//! dependencies, whether a name is typo-squatted, or ecosystems not listed above.

use std::collections::BTreeMap;

use serde::Serialize;

/// Largest manifest parsed (bytes, per side); larger files are reported as unparsed.
pub const MAX_MANIFEST_BYTES: usize = 4 * 1024 * 1024;

/// Whether a dependency is new or its requirement changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DepChange {
    /// The name is not in the old file's section.
    Added,
    /// The name was there; its requirement text differs.
    Changed,
}

impl DepChange {
    /// `added` or `changed`.
    pub fn as_str(self) -> &'static str {
        match self {
            DepChange::Added => "added",
            DepChange::Changed => "changed",
        }
    }
}

/// One new or changed dependency.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NewDependency {
    /// The manifest file (path in the repository).
    pub manifest: String,
    /// `npm`, `cargo`, `pypi` or `go`.
    pub ecosystem: &'static str,
    /// The section (`dependencies`, `dev-dependencies`, `require`, …).
    pub section: String,
    /// The dependency's name as written (pypi names normalised per PEP 503).
    pub name: String,
    /// The requirement as written (version, URL, table), cut to 200 characters.
    pub spec: String,
    /// Added or changed.
    pub change: DepChange,
}

/// Why a manifest could not be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: cannot list dependencies (deps.unparsed): {reason}")]
pub struct DepsError {
    /// The manifest.
    pub path: String,
    /// Why (parser category, never file content).
    pub reason: String,
}

/// Which manifest format a path is, if any.
fn ecosystem_of(path: &str) -> Option<Format> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let lower = name.to_ascii_lowercase();
    match name {
        "package.json" => Some(Format::Npm),
        "Cargo.toml" => Some(Format::Cargo),
        "pyproject.toml" => Some(Format::Pyproject),
        "go.mod" => Some(Format::GoMod),
        _ if lower.starts_with("requirements")
            && (lower.ends_with(".txt") || lower.ends_with(".in")) =>
        {
            Some(Format::Requirements)
        }
        _ => None,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Npm,
    Cargo,
    Requirements,
    Pyproject,
    GoMod,
}

impl Format {
    fn ecosystem(self) -> &'static str {
        match self {
            Format::Npm => "npm",
            Format::Cargo => "cargo",
            Format::Requirements | Format::Pyproject => "pypi",
            Format::GoMod => "go",
        }
    }
}

/// section -> name -> spec.
type Table = BTreeMap<String, BTreeMap<String, String>>;

/// The dependencies `new` adds or changes relative to `old` (`None`: the file does not exist on
/// that side). Returns an empty list for paths that are not supported manifests and for deleted
/// files.
pub fn new_dependencies(
    path: &str,
    old: Option<&[u8]>,
    new: Option<&[u8]>,
) -> Result<Vec<NewDependency>, DepsError> {
    let Some(format) = ecosystem_of(path) else {
        return Ok(Vec::new());
    };
    let Some(new) = new else {
        return Ok(Vec::new());
    };
    let err = |reason: String| DepsError {
        path: path.to_owned(),
        reason,
    };
    let new_table = parse(format, new).map_err(err)?;
    // An unparsable old side (rare: it is the packed revision) counts as empty, so everything
    // in the new file is listed.
    let old_table = old.and_then(|o| parse(format, o).ok()).unwrap_or_default();
    let mut out = Vec::new();
    for (section, deps) in &new_table {
        let before = old_table.get(section);
        for (name, spec) in deps {
            let change = match before.and_then(|b| b.get(name)) {
                None => DepChange::Added,
                Some(old_spec) if old_spec != spec => DepChange::Changed,
                Some(_) => continue,
            };
            out.push(NewDependency {
                manifest: path.to_owned(),
                ecosystem: format.ecosystem(),
                section: section.clone(),
                name: name.clone(),
                spec: cut(spec),
                change,
            });
        }
    }
    Ok(out)
}

fn cut(s: &str) -> String {
    if s.chars().count() <= 200 {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(199).collect();
        t.push('…');
        t
    }
}

fn parse(format: Format, bytes: &[u8]) -> Result<Table, String> {
    if bytes.len() > MAX_MANIFEST_BYTES {
        return Err(format!("larger than {MAX_MANIFEST_BYTES} bytes"));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_owned())?;
    match format {
        Format::Npm => parse_package_json(text),
        Format::Cargo => parse_cargo_toml(text),
        Format::Requirements => Ok(parse_requirements(text)),
        Format::Pyproject => parse_pyproject(text),
        Format::GoMod => Ok(parse_go_mod(text)),
    }
}

const NPM_SECTIONS: [&str; 4] = [
    "dependencies",
    "devDependencies",
    "peerDependencies",
    "optionalDependencies",
];

fn parse_package_json(text: &str) -> Result<Table, String> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("invalid JSON at line {} column {}", e.line(), e.column()))?;
    let mut out = Table::new();
    for section in NPM_SECTIONS {
        if let Some(map) = v.get(section).and_then(|s| s.as_object()) {
            let deps = out.entry(section.to_owned()).or_default();
            for (name, spec) in map {
                deps.insert(name.clone(), json_spec(spec));
            }
        }
    }
    Ok(out)
}

fn json_spec(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn toml_spec(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string().trim().to_owned(),
    }
}

const CARGO_SECTIONS: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];

fn parse_cargo_toml(text: &str) -> Result<Table, String> {
    let v: toml::Table = toml::from_str(text).map_err(|e| toml_reason(&e))?;
    let mut out = Table::new();
    let mut add = |section: String, table: &toml::Table| {
        let deps = out.entry(section).or_default();
        for (name, spec) in table {
            let shown = match spec.get("package").and_then(|p| p.as_str()) {
                Some(real) if real != name => format!("{name} (package {real})"),
                _ => name.clone(),
            };
            deps.insert(shown, toml_spec(spec));
        }
    };
    for section in CARGO_SECTIONS {
        if let Some(t) = v.get(section).and_then(|s| s.as_table()) {
            add(section.to_owned(), t);
        }
    }
    if let Some(targets) = v.get("target").and_then(|t| t.as_table()) {
        for (cfg, body) in targets {
            for section in CARGO_SECTIONS {
                if let Some(t) = body.get(section).and_then(|s| s.as_table()) {
                    add(format!("target.{cfg}.{section}"), t);
                }
            }
        }
    }
    if let Some(t) = v
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(|d| d.as_table())
    {
        add("workspace.dependencies".to_owned(), t);
    }
    Ok(out)
}

fn toml_reason(e: &toml::de::Error) -> String {
    // toml's message quotes the offending line; keep only the position.
    match e.span() {
        Some(span) => format!("invalid TOML at byte {}", span.start),
        None => "invalid TOML".to_owned(),
    }
}

/// PEP 503 normalisation: lowercase, runs of `-`, `_`, `.` become one `-`.
fn pep503(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut sep = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            sep = true;
        } else {
            if sep && !out.is_empty() {
                out.push('-');
            }
            sep = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// Splits a PEP 508 requirement into (normalised name, the rest trimmed). `None` when the
/// line does not start with a name.
fn pep508(req: &str) -> Option<(String, String)> {
    let req = req.trim();
    let end = req
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(req.len());
    let name = req.get(..end)?;
    if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return None;
    }
    let rest = req.get(end..).unwrap_or_default().trim();
    Some((pep503(name), rest.to_owned()))
}

fn parse_requirements(text: &str) -> Table {
    let mut deps = BTreeMap::new();
    for line in text.lines() {
        // A comment starts at `#` at the line start or after whitespace.
        let mut body = line;
        if let Some(i) = line
            .char_indices()
            .find(|&(i, c)| c == '#' && (i == 0 || line[..i].ends_with([' ', '\t'])))
            .map(|(i, _)| i)
        {
            body = &line[..i];
        }
        let body = body.trim();
        if body.is_empty() || body.starts_with('-') {
            continue;
        }
        if let Some((name, rest)) = pep508(body) {
            deps.insert(name, rest);
        }
    }
    let mut out = Table::new();
    if !deps.is_empty() {
        out.insert("requirements".to_owned(), deps);
    }
    out
}

fn pep508_list(arr: &[toml::Value]) -> BTreeMap<String, String> {
    arr.iter()
        .filter_map(|v| v.as_str())
        .filter_map(pep508)
        .collect()
}

fn parse_pyproject(text: &str) -> Result<Table, String> {
    let v: toml::Table = toml::from_str(text).map_err(|e| toml_reason(&e))?;
    let mut out = Table::new();
    if let Some(project) = v.get("project") {
        if let Some(arr) = project.get("dependencies").and_then(|d| d.as_array()) {
            out.insert("project.dependencies".to_owned(), pep508_list(arr));
        }
        if let Some(extras) = project
            .get("optional-dependencies")
            .and_then(|d| d.as_table())
        {
            for (extra, list) in extras {
                if let Some(arr) = list.as_array() {
                    out.insert(
                        format!("project.optional-dependencies.{extra}"),
                        pep508_list(arr),
                    );
                }
            }
        }
    }
    if let Some(groups) = v.get("dependency-groups").and_then(|g| g.as_table()) {
        for (group, list) in groups {
            if let Some(arr) = list.as_array() {
                out.insert(format!("dependency-groups.{group}"), pep508_list(arr));
            }
        }
    }
    if let Some(poetry) = v
        .get("tool")
        .and_then(|t| t.get("poetry"))
        .and_then(|p| p.as_table())
    {
        let mut add = |section: String, t: &toml::Table| {
            let deps: BTreeMap<String, String> = t
                .iter()
                .filter(|(name, _)| name.as_str() != "python")
                .map(|(name, spec)| (pep503(name), toml_spec(spec)))
                .collect();
            out.insert(section, deps);
        };
        for section in ["dependencies", "dev-dependencies"] {
            if let Some(t) = poetry.get(section).and_then(|d| d.as_table()) {
                add(format!("tool.poetry.{section}"), t);
            }
        }
        if let Some(groups) = poetry.get("group").and_then(|g| g.as_table()) {
            for (group, body) in groups {
                if let Some(t) = body.get("dependencies").and_then(|d| d.as_table()) {
                    add(format!("tool.poetry.group.{group}.dependencies"), t);
                }
            }
        }
    }
    Ok(out)
}

fn parse_go_mod(text: &str) -> Table {
    let mut out = Table::new();
    let mut block: Option<&'static str> = None;
    for raw in text.lines() {
        let line = raw.split("//").next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        if let Some(kind) = block {
            if line == ")" {
                block = None;
            } else {
                go_entry(&mut out, kind, line);
            }
            continue;
        }
        let (kind, rest) = if let Some(r) = line.strip_prefix("require") {
            ("require", r)
        } else if let Some(r) = line.strip_prefix("replace") {
            ("replace", r)
        } else {
            continue;
        };
        if !rest.starts_with([' ', '\t', '(']) {
            continue; // `requirements` or another word that merely starts with the keyword
        }
        let rest = rest.trim();
        if rest == "(" {
            block = Some(kind);
        } else if !rest.is_empty() {
            go_entry(&mut out, kind, rest);
        }
    }
    out
}

fn go_entry(out: &mut Table, kind: &'static str, line: &str) {
    let mut parts = line.split_whitespace();
    let Some(module) = parts.next() else {
        return;
    };
    let spec: Vec<&str> = parts.collect();
    out.entry(kind.to_owned())
        .or_default()
        .insert(module.to_owned(), spec.join(" "));
}

#[cfg(test)]
#[path = "deps_tests.rs"]
mod tests;
