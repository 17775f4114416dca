//! The tree layers of classification: what the packed tree says about a changed file
//! (placement rules are in `placement.rs`, the tree itself in `tree.rs`). Reachability: the CI
//! and build entry points of the tree (workflows, GitLab/CircleCI/Azure/Drone/Buildkite/Travis
//! files, Jenkinsfiles, Makefiles, justfiles, `package.json` scripts, `tox.ini`, `noxfile.py`,
//! `pyproject.toml`, pre-commit) are read, and every repository file they name is marked `ci`
//! or `build`, with the entry point named; one level of indirection (what such a file runs or
//! sources) is followed.
//!
//! Guards against: a script a workflow runs hiding under a harmless name (`tools/check.sh`,
//! `src/release.py`), and hostile tree content: at most [`MAX_ENTRY_POINTS`] entry points and
//! [`MAX_READ_BYTES`] of each are read; only tokens that name an existing file count (so no
//! glob, variable or shell is evaluated), and nothing is executed. Bounded by the tree's size.
//! On return: for each changed path the tree raises, the bucket, rule id and the evidence.
//! Does not follow: `cd` or `working-directory:` (paths are read relative to the repository
//! root and to the naming file's directory), variables other than a leading `$VAR/` or `${…}/`
//! prefix, globs, remote actions and templates, a third level of indirection.

use std::collections::{BTreeMap, BTreeSet};

pub use super::tree::{MemTree, Tree};
use super::Bucket;

/// Largest number of entry points read.
pub const MAX_ENTRY_POINTS: usize = 4096;
/// Bytes of each entry point or named script that are read.
pub const MAX_READ_BYTES: usize = 256 * 1024;

/// What the tree says about one changed path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Raised {
    /// The bucket.
    pub bucket: Bucket,
    /// Rule id: `ci.reached`, `build.reached`, `iac.helm-template`, `iac.deploy-template`.
    pub rule: &'static str,
    /// The evidence: `run by .github/workflows/test.yml`.
    pub because: String,
    /// Placement only: applies to `src` and `other` like content, not to `tests` or `docs`.
    pub weak: bool,
}

/// Rule ids of the tree layers, with what each means (for the documentation test).
#[cfg_attr(
    not(test),
    allow(dead_code, reason = "read by tests and the documentation test")
)]
pub const RULES: &[(&str, &str)] = &[
    ("ci.reached", "named by a CI entry point (a workflow's `run:`/`uses: ./…`, a GitLab `script:`/`include:`, a Jenkinsfile `sh`, …), or by a file such an entry point runs"),
    ("build.reached", "named by a build entry point (a Makefile or justfile recipe, a `package.json` script, `tox.ini`, `noxfile.py`, `pyproject.toml`, pre-commit), or by a file such an entry point runs"),
    ("iac.helm-template", "under a `templates/` directory whose parent holds a `Chart.yaml`"),
    ("iac.package-file", "any other file inside a deploy package below the root: a directory holding a Helm `Chart.yaml`, or a Nomad Pack `metadata.hcl` with `variables.hcl` (applies to `src` and `other` only)"),
    ("iac.deploy-template", "a `.tpl`/`.tmpl`/`.gotmpl` file in a directory (or its parent) holding a deploy descriptor (`Chart.yaml`, `kustomization.yaml`, `*.tf`, `*.nomad`, a compose file)"),
];

/// A changed file: its path and new content (`None` when deleted or unknown).
#[derive(Clone, Copy, Debug)]
pub struct Change<'a> {
    /// Repository-relative path.
    pub path: &'a str,
    /// Content after the change.
    pub new: Option<&'a [u8]>,
    /// Executable after the change.
    pub executable: bool,
}

/// The kind of entry point `path` is, if any: CI definitions are `ci`, build definitions
/// `build`.
pub fn entry_point(path: &str) -> Option<Bucket> {
    let p = path.to_ascii_lowercase();
    let (dirs, name) = match p.rsplit_once('/') {
        Some((dirs, name)) => (dirs.split('/').collect::<Vec<_>>(), name),
        None => (Vec::new(), p.as_str()),
    };
    let yaml = name.ends_with(".yml") || name.ends_with(".yaml");
    // A directory at the root or below any directory: its components appear, in order,
    // among the path's directories.
    let under = |dir: &[&str]| dirs.windows(dir.len()).any(|w| w == dir);
    let ci = (under(&[".github", "workflows"]) && yaml)
        || matches!(name, "action.yml" | "action.yaml")
        || name.ends_with("gitlab-ci.yml")
        || name.ends_with("gitlab-ci.yaml")
        || (under(&[".gitlab", "ci"]) && yaml)
        || under(&[".circleci"])
        || (name.starts_with("azure-pipelines") && yaml)
        || under(&[".azure-pipelines"])
        || p.starts_with("eng/pipelines/")
        || name.starts_with("jenkinsfile")
        || name.ends_with(".jenkinsfile")
        || matches!(
            name,
            ".drone.yml"
                | ".drone.yaml"
                | ".travis.yml"
                | "bitbucket-pipelines.yml"
                | ".woodpecker.yml"
                | ".cirrus.yml"
                | "appveyor.yml"
                | ".appveyor.yml"
                | "cloudbuild.yaml"
                | "cloudbuild.yml"
                | "buildspec.yml"
                | "codefresh.yml"
        )
        || (under(&[".buildkite"]) && yaml)
        || (under(&[".woodpecker"]) && yaml)
        || (under(&[".gitea", "workflows"]) && yaml)
        || (under(&[".forgejo", "workflows"]) && yaml)
        || (under(&[".tekton"]) && yaml)
        || matches!(name, ".zuul.yaml" | ".zuul.yml" | "zuul.yaml")
        || under(&["zuul.d"])
        || p.starts_with("ci/")
        || under(&[".ci"])
        || under(&["scripts", "ci"])
        || under(&[".github", "scripts"]);
    if ci {
        return Some(Bucket::Ci);
    }
    let fixture = [
        "node_modules",
        "vendor",
        "testdata",
        "fixtures",
        "__fixtures__",
    ]
    .iter()
    .any(|d| dirs.contains(d));
    let build = !fixture
        && (matches!(
            name,
            "makefile"
                | "gnumakefile"
                | "justfile"
                | ".justfile"
                | "package.json"
                | "tox.ini"
                | "noxfile.py"
                | "pyproject.toml"
                | "taskfile.yml"
                | "taskfile.yaml"
                | "rakefile"
                | ".pre-commit-config.yaml"
                | "lefthook.yml"
                | "makefile.am"
        ) || name.ends_with(".mk")
            || under(&[".husky"]));
    build.then_some(Bucket::Build)
}

/// Whether a file named `path` can run when named by an entry point: executable files and
/// scripts by extension, not data or prose (`LICENSE` named by a release workflow is packed, not
/// run).
fn runnable(path: &str, executable: bool) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let Some((_, ext)) = name.rsplit_once('.') else {
        return executable;
    };
    executable
        || matches!(
            ext,
            "sh" | "bash"
                | "zsh"
                | "ksh"
                | "fish"
                | "ps1"
                | "psm1"
                | "bat"
                | "cmd"
                | "py"
                | "rb"
                | "pl"
                | "pm"
                | "js"
                | "mjs"
                | "cjs"
                | "ts"
                | "mts"
                | "cts"
                | "php"
                | "lua"
                | "groovy"
                | "star"
                | "mk"
                | "make"
                | "tcl"
                | "r"
                | "go"
                | "awk"
                | "sed"
        )
}

/// Whether a YAML/JSON file named on `line` is read as CI configuration there (an include, a
/// template, a local action, a config or values file).
fn config_reference(line: &str) -> bool {
    [
        "include", "local:", "template", "extends", "uses:", "run:", "-f ", "--file", "--config",
        "--values", "config:", "playbook",
    ]
    .iter()
    .any(|k| line.contains(k))
}

/// Normalises `a/./b/../c` to `a/c`; `None` when it leaves the repository.
fn normalise(path: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            c => out.push(c),
        }
    }
    (!out.is_empty()).then(|| out.join("/"))
}

/// Path-like tokens of one line: split on shell and YAML punctuation, a leading variable
/// prefix (`$X/`, `${{ … }}/`, `$(CURDIR)/`) dropped, dotted Python modules (`-m a.b`) read as
/// `a/b.py` too.
fn tokens(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for raw in line.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '\'' | '"' | '`' | '(' | ';' | '|' | '&' | '<' | '>' | ',' | '[' | ']' | '='
            )
    }) {
        let mut t = raw;
        if let Some(i) = t.rfind("}/").or_else(|| t.rfind(")/")) {
            t = &t[i + 2..];
        } else if t.starts_with('$') {
            t = t.find('/').map_or("", |i| &t[i + 1..]);
        }
        let t = t.trim_end_matches([':', ')', '}', '\\']);
        if t.is_empty() || t.contains("://") || t.len() > 512 {
            continue;
        }
        out.push(t.to_owned());
        let module = t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
        if module && t.contains('.') && !t.ends_with(".py") {
            out.push(format!("{}.py", t.replace('.', "/")));
            out.push(format!("{}/__main__.py", t.replace('.', "/")));
        }
    }
    out
}

/// The directory of `path` (`""` at the root).
pub(crate) fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Files of `all` a token names from a file in `base`: the file itself (root- or
/// `base`-relative), or every file under a directory a `uses:` line names.
fn resolve(token: &str, base: &str, line: &str, all: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    for cand in [token.to_owned(), format!("{base}/{token}")] {
        let Some(p) = normalise(&cand) else { continue };
        if all.contains(&p) {
            out.push(p);
        } else if line.contains("uses:") {
            let prefix = format!("{p}/");
            out.extend(
                all.range(prefix.clone()..)
                    .take_while(|f| f.starts_with(&prefix))
                    .cloned(),
            );
        }
        if !out.is_empty() {
            break;
        }
    }
    out
}

/// Files named by `text` (the content of `from`) that can run there.
fn named_by(
    from: &str,
    text: &[u8],
    all: &BTreeSet<String>,
    exec: &BTreeSet<&str>,
    level1: bool,
) -> Vec<String> {
    let text = String::from_utf8_lossy(&text[..text.len().min(MAX_READ_BYTES)]);
    let base = dir_of(from);
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("paths:") || code.starts_with("paths-ignore:") {
            continue;
        }
        for t in tokens(line) {
            for p in resolve(&t, base, line, all) {
                if p == from {
                    continue;
                }
                let data = [".yml", ".yaml", ".json", ".jsonnet", ".libsonnet"]
                    .iter()
                    .any(|e| p.to_ascii_lowercase().ends_with(e));
                let ok = if data {
                    level1 && config_reference(line)
                } else {
                    runnable(&p, exec.contains(p.as_str()))
                };
                if ok {
                    out.insert(p);
                }
            }
        }
    }
    out.into_iter().collect()
}

/// What the tree says about each changed path, keyed by path. Only paths that the tree
/// raises are in the map; the caller decides whether a raise applies (never out of a riskier
/// bucket than the name's).
pub fn raise_by_tree(changes: &[Change<'_>], tree: &dyn Tree) -> BTreeMap<String, Raised> {
    let mut all: BTreeSet<String> = tree.files().iter().map(|f| f.path.clone()).collect();
    all.extend(
        changes
            .iter()
            .filter(|c| c.new.is_some())
            .map(|c| c.path.to_owned()),
    );
    let exec: BTreeSet<&str> = tree
        .files()
        .iter()
        .filter(|f| f.executable)
        .map(|f| f.path.as_str())
        .chain(changes.iter().filter(|c| c.executable).map(|c| c.path))
        .collect();
    let changed: BTreeMap<&str, &Change<'_>> = changes.iter().map(|c| (c.path, c)).collect();
    let mut out = super::placement::placement(changes, &all);

    // Entry points, CI first so a file reached by both is `ci`.
    let mut entries: Vec<(Bucket, &str)> = all
        .iter()
        .filter_map(|p| entry_point(p).map(|b| (b, p.as_str())))
        .collect();
    entries.sort_by_key(|(b, _)| usize::from(*b != Bucket::Ci));
    entries.truncate(MAX_ENTRY_POINTS);
    let read = |paths: &[&str]| -> Vec<Option<Vec<u8>>> {
        let from_tree: Vec<&str> = paths
            .iter()
            .copied()
            .filter(|p| !changed.contains_key(p))
            .collect();
        let mut tree_read = from_tree
            .iter()
            .copied()
            .zip(tree.read(&from_tree))
            .collect::<BTreeMap<_, _>>();
        paths
            .iter()
            .map(|p| match changed.get(p) {
                Some(c) => c.new.map(|n| n[..n.len().min(MAX_READ_BYTES)].to_vec()),
                None => tree_read.remove(p).flatten(),
            })
            .collect()
    };
    let entry_paths: Vec<&str> = entries.iter().map(|(_, p)| *p).collect();
    // Also read a changed entry point's old content (a deletion keeps what it ran in view).
    let texts = read(&entry_paths);
    let mut level1: BTreeMap<String, (Bucket, String)> = BTreeMap::new();
    for ((bucket, from), text) in entries.iter().zip(&texts) {
        let Some(text) = text else { continue };
        for p in named_by(from, text, &all, &exec, true) {
            level1.entry(p).or_insert((*bucket, (*from).to_owned()));
        }
    }
    let scripts: Vec<&str> = level1
        .keys()
        .map(String::as_str)
        .filter(|p| entry_point(p).is_none())
        .collect();
    let texts = read(&scripts);
    let mut level2: BTreeMap<String, (Bucket, String)> = BTreeMap::new();
    for (script, text) in scripts.iter().zip(&texts) {
        let (Some(text), Some((bucket, entry))) = (text, level1.get(*script)) else {
            continue;
        };
        for p in named_by(script, text, &all, &exec, false) {
            // A file CI runs is `ci`, whatever build definition also names it.
            let ci_already = |m: &BTreeMap<String, (Bucket, String)>| {
                m.get(&p).is_some_and(|(b, _)| *b == Bucket::Ci)
            };
            if ci_already(&level1) || ci_already(&level2) {
                continue;
            }
            if *bucket == Bucket::Ci || !level2.contains_key(&p) {
                level2.insert(p, (*bucket, format!("run by {script}, which {entry} runs")));
            }
        }
    }
    for c in changes {
        let direct = level1.get(c.path).map(|(b, e)| (*b, format!("run by {e}")));
        let indirect = level2.get(c.path).map(|(b, why)| (*b, why.clone()));
        let hit = match (direct, indirect) {
            (Some(d), Some(i)) if d.0 != Bucket::Ci && i.0 == Bucket::Ci => Some(i),
            (Some(d), _) => Some(d),
            (None, i) => i,
        };
        if let Some((bucket, because)) = hit {
            let rule = if bucket == Bucket::Ci {
                "ci.reached"
            } else {
                "build.reached"
            };
            out.insert(
                c.path.to_owned(),
                Raised {
                    bucket,
                    rule,
                    because,
                    weak: false,
                },
            );
        }
    }
    out
}

#[cfg(test)]
#[path = "reach_tests.rs"]
mod tests;
