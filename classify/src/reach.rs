//! The tree layers of classification: what the packed tree says about a changed file
//! (placement rules are in `placement.rs`, the tree itself in `tree.rs`, which files are entry
//! points and what their text names in `entry.rs`). Reachability: the CI and build entry points
//! of the tree (workflows, GitLab/CircleCI/Azure/Drone/Buildkite/Travis files, Jenkinsfiles,
//! Makefiles, justfiles, `package.json` scripts, `tox.ini`, `noxfile.py`, `pyproject.toml`,
//! pre-commit, `mkdocs.yml`, `.bazelrc`) are read, and every repository file they name is
//! marked `ci` or `build`, with the entry point named; one level of indirection (what such a
//! file runs or sources) is followed.
//!
//! Guards against: a script a workflow runs hiding under a harmless name (`tools/check.sh`,
//! `src/release.py`), and hostile tree content: at most [`MAX_ENTRY_POINTS`] entry points and
//! [`MAX_READ_BYTES`] of each are read; only tokens that name an existing file count (so no
//! glob, variable or shell is evaluated), and nothing is executed. Bounded by the tree's size.
//! On return: for each changed path the tree raises, the bucket, rule id and the evidence.
//! What the entry points reach can be worked out once per revision ([`TreeReach`], kept in the
//! gate's index) and is then used only for a change that touches none of what it rests on.
//! Paths are read relative to the repository root, the naming file's directory and every
//! directory the file `cd`s into (`cd dev && pwsh ./gen.ps1`, `working-directory:`). Does not
//! follow: variables other than a leading `$VAR/` or `${…}/` prefix, a `cd` to a variable,
//! globs, remote actions and templates, a third level of indirection.

use std::collections::{BTreeMap, BTreeSet};

pub use crate::entry::entry_point;
use crate::entry::without_product_fields;
use crate::entry::{changed_into, config_reference, normalise, runnable, tokens};
use crate::tree::{dir_of, Paths};
pub use crate::tree::{Change, MemTree, Raised, Tree, TreeReach, MAX_READ_BYTES};
use crate::Bucket;

/// Largest number of entry points read.
pub const MAX_ENTRY_POINTS: usize = 4096;

/// Rule ids of the tree layers, with what each means (for the documentation test).
#[cfg_attr(
    not(test),
    allow(dead_code, reason = "read by tests and the documentation test")
)]
pub const RULES: &[(&str, &str)] = &[
    ("ci.reached", "named by a CI entry point (a workflow's `run:`/`uses: ./…`, a GitLab `script:`/`include:`, a Jenkinsfile `sh`, …), or by a file such an entry point runs"),
    ("build.reached", "named by a build entry point (a Makefile or justfile recipe, a `package.json` script, `tox.ini`, `noxfile.py`, `pyproject.toml`, pre-commit, MkDocs hooks, `.bazelrc`), or by a file such an entry point runs"),
    ("iac.helm-template", "under a `templates/` directory whose parent holds a `Chart.yaml`"),
    ("iac.package-file", "any other file inside a deploy package below the root: a directory holding a Helm `Chart.yaml`, or a Nomad Pack `metadata.hcl` with `variables.hcl` (applies to `src` and `other` only)"),
    ("iac.deploy-template", "a `.tpl`/`.tmpl`/`.gotmpl` file in a directory (or its parent) holding a deploy descriptor (`Chart.yaml`, `kustomization.yaml`, `*.tf`, `*.nomad`, a compose file)"),
];

impl TreeReach {
    /// What the entry points of `tree` reach, with no change.
    pub fn of_tree(tree: &dyn Tree) -> TreeReach {
        TreeReach::find(&[], tree, &Paths::new(tree, &[]))
    }

    /// Reads the entry points (the changed ones as changed) and what they name.
    fn find(changes: &[Change<'_>], tree: &dyn Tree, all: &Paths<'_>) -> TreeReach {
        let mut found = TreeReach::default();
        let changed: BTreeMap<&str, &Change<'_>> = changes.iter().map(|c| (c.path, c)).collect();
        // Entry points, CI first so a file reached by both is `ci`.
        let mut entries: Vec<(Bucket, &str)> = all
            .all()
            .into_iter()
            .filter_map(|p| entry_point(p).map(|b| (b, p)))
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
        for ((bucket, from), text) in entries.iter().zip(&texts) {
            let Some(text) = text else { continue };
            for p in found.named_by(from, text, all, true) {
                found
                    .level1
                    .entry(p)
                    .or_insert((*bucket, (*from).to_owned()));
            }
        }
        let scripts: Vec<String> = found
            .level1
            .keys()
            .filter(|p| entry_point(p).is_none())
            .cloned()
            .collect();
        let scripts: Vec<&str> = scripts.iter().map(String::as_str).collect();
        let texts = read(&scripts);
        for (script, text) in scripts.iter().zip(&texts) {
            let Some(text) = text else { continue };
            let Some((bucket, entry)) = found.level1.get(*script).cloned() else {
                continue;
            };
            for p in found.named_by(script, text, all, false) {
                // A file CI runs is `ci`, whatever build definition also names it.
                let ci_already = |m: &BTreeMap<String, (Bucket, String)>| {
                    m.get(&p).is_some_and(|(b, _)| *b == Bucket::Ci)
                };
                if ci_already(&found.level1) || ci_already(&found.level2) {
                    continue;
                }
                if bucket == Bucket::Ci || !found.level2.contains_key(&p) {
                    let why = format!("run by {script}, which {entry} runs");
                    found.level2.insert(p, (bucket, why));
                }
            }
        }
        found
    }

    /// Files named by `text` (the content of `from`) that can run there.
    fn named_by(&mut self, from: &str, text: &[u8], all: &Paths<'_>, level1: bool) -> Vec<String> {
        let text = String::from_utf8_lossy(&text[..text.len().min(MAX_READ_BYTES)]);
        let text = if from.rsplit('/').next() == Some("package.json") {
            without_product_fields(&text).map_or(text, Into::into)
        } else {
            text
        };
        let base = dir_of(from);
        let dirs = changed_into(&text);
        let mut out = BTreeSet::new();
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("paths:") || code.starts_with("paths-ignore:") {
                continue;
            }
            for t in tokens(line) {
                for p in self.resolve(&t, base, &dirs, line, all) {
                    if p == from {
                        continue;
                    }
                    let data = [".yml", ".yaml", ".json", ".jsonnet", ".libsonnet"]
                        .iter()
                        .any(|e| p.to_ascii_lowercase().ends_with(e));
                    let ok = if data {
                        level1 && config_reference(line)
                    } else {
                        runnable(&p, all.executable(&p))
                    };
                    if ok {
                        out.insert(p);
                    }
                }
            }
        }
        out.into_iter().collect()
    }

    /// Files of `all` a token names from a file in `base`: the file itself (root-, `base`- or
    /// `dirs`-relative), or every file under a directory a `uses:` line names. Each path tried
    /// is watched.
    fn resolve(
        &mut self,
        token: &str,
        base: &str,
        dirs: &[String],
        line: &str,
        all: &Paths<'_>,
    ) -> Vec<String> {
        let mut out = Vec::new();
        // The directories changed into only for what looks like a file (`./gen.ps1`,
        // `../tests/x.py`), not for every word of the text.
        let dirs = if token.contains(['/', '.']) {
            dirs
        } else {
            &[]
        };
        let bases = std::iter::once(base).chain(dirs.iter().map(String::as_str));
        let cands = std::iter::once(token.to_owned()).chain(bases.map(|b| format!("{b}/{token}")));
        for cand in cands {
            let Some(p) = normalise(&cand) else { continue };
            if all.contains(&p) {
                out.push(p.clone());
            } else if line.contains("uses:") {
                out.extend(
                    all.starting_with(&format!("{p}/"))
                        .into_iter()
                        .map(str::to_owned),
                );
                self.watched_dirs.insert(p.clone());
            }
            self.watched.insert(p);
            if !out.is_empty() {
                break;
            }
        }
        out
    }
}

/// What the tree says about each changed path, keyed by path. Only paths that the tree
/// raises are in the map; the caller decides whether a raise applies (never out of a riskier
/// bucket than the name's). What the entry points reach is read from the tree's own
/// [`TreeReach`] when it has one the change leaves as it is, else worked out here.
pub fn raise_by_tree(changes: &[Change<'_>], tree: &dyn Tree) -> BTreeMap<String, Raised> {
    let all = Paths::new(tree, changes);
    let mut out = crate::placement::placement(changes, &all);
    let found;
    let reach = match tree.reach() {
        Some(r) if r.holds_for(changes) => r,
        _ => {
            found = TreeReach::find(changes, tree, &all);
            &found
        }
    };
    for c in changes {
        let direct = reach
            .level1
            .get(c.path)
            .map(|(b, e)| (*b, format!("run by {e}")));
        let indirect = reach.level2.get(c.path).map(|(b, why)| (*b, why.clone()));
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
