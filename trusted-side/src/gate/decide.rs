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
use crate::classify::classify_change;
use crate::classify::reach::Change;
use crate::classify::tree::Tree;
use crate::reasons::ReasonCode;
use crate::report::{ChangedFile, GateReport, Reason};

/// One policy reason per changed path, the changed-file table, new dependencies. Each path is
/// classified by its name, its content (the new content for added and modified files, the old
/// one for deleted files, when the apply step produced them; an added file's can also be read
/// from the patch; when the apply check failed, the packed file with the patch applied in
/// memory, or as packed) and the packed `tree` (what its entry points run).
pub fn decide_paths(
    patch: &ParsedPatch,
    files: &BTreeMap<String, AppliedFile>,
    policy: &Policy,
    tree: &dyn Tree,
    report: &mut GateReport,
) {
    // When the apply check failed there is no applied file: the packed content (the file as
    // the worker received it) with the patch applied in memory, or as packed when the patch
    // does not apply to it, still says what the file is.
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
    let hints: Vec<Option<Vec<u8>>> = patch
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
        .collect();
    let changes: Vec<Change<'_>> = patch
        .files
        .iter()
        .zip(&hints)
        .map(|(fp, hint)| Change {
            path: &fp.path,
            new: hint.as_deref(),
            executable: fp.new_mode == Some(FileMode::Executable),
        })
        .collect();
    for (fp, c) in patch.files.iter().zip(classify_change(&changes, tree)) {
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
