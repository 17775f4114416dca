//! Step 10: classification and policy per changed path, and the dependencies that manifest
//! edits add.
//!
//! Guards against: a change to a risky path (CI, build, dependencies, agent instructions, …)
//! slipping into the ordinary queue: every changed path is classified (by name, and by the
//! content git produced when there is one) and the policy gives its verdict.
//! Does not check: what the code does; a `queue` decision means "ordinary review".

use std::collections::BTreeMap;

use airlock_core::diff::{FileKind, ParsedPatch};

use super::apply::AppliedFile;
use super::classify::classify_path;
use super::deps;
use super::policy::{Policy, Verdict};
use super::report::{ChangedFile, GateReport, Reason};
use crate::reasons::ReasonCode;

/// One policy reason per changed path, the changed-file table, new dependencies. The content
/// hint is the new content (added, modified) or the old one (deleted), when the apply step
/// produced them; for added files it can also be read from the patch itself.
pub fn decide_paths(
    patch: &ParsedPatch,
    files: &BTreeMap<String, AppliedFile>,
    policy: &Policy,
    report: &mut GateReport,
) {
    for fp in &patch.files {
        let applied = files.get(&fp.path);
        let from_patch;
        let hint: Option<&[u8]> = match (fp.kind, applied) {
            (FileKind::Deleted, Some(a)) => a.old.as_deref(),
            (_, Some(a)) => a.new.as_deref(),
            (FileKind::Added, None) => {
                from_patch = airlock_core::diff::apply_file(None, fp).ok().flatten();
                from_patch.as_deref()
            }
            _ => None,
        };
        let class = classify_path(&fp.path, hint);
        let decided = policy.decide_path(&fp.path, &class);
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
        if let Some(a) = applied {
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
