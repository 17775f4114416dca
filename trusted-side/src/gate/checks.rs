//! The gate's checks that need neither the store nor git: each takes parsed, untrusted input
//! (the worker's patch and packet) plus trusted context (the signed record, the bundle's
//! manifest) and returns reasons.
//!
//! Guards against, one check each:
//! - a fetch refusal or a diff rule turning into a vague failure ([`fetch_refusal`],
//!   [`diff_refusal`] keep the rule id);
//! - edits to paths the worker never saw ([`check_paths`]: `path-not-packed`, e.g. `.env`),
//!   new files on deny-listed paths (`denied-path-added`), on paths that already exist or
//!   collide with one on a case-insensitive file system (`path-collision`), new top-level
//!   trees (`new-directory`), files made executable (`mode-change-executable`);
//! - hunks whose old side covers a line redacted at pack time ([`check_redacted`]);
//! - secrets in added lines ([`scan_added_lines`]: `path:line: rule`, never the value);
//! - a packet that disagrees with the diff or the record, or says the run was partial,
//!   unsandboxed or hit a limit ([`check_packet`]);
//! - an empty change passed on to git as if it were a patch ([`check_no_change`]: `no-change`).
//!
//! On return: reasons only; nothing here fails, writes or reads files.
//! Does not check: that the patch applies (`review.rs` does, with real git), classification
//! (the policy does).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use airlock_core::diff::{self, DiffError, FileKind, FileMode, ParsedPatch};
use airlock_core::format::{JobRecord, Manifest, Packet, MODEL_UNREPORTED};
use airlock_core::paths::collision_key;

use super::policy::{ReasonCode, Verdict};
use super::report::{shown, Reason};
use crate::fetch::FetchRefused;
use crate::pack::select::{Selector, Verdict as PackVerdict};

/// Reason codes the gate adds to the policy's [`super::policy::REASON_CODES`] (which it also
/// uses: `apply-failed`, `diff-refused`, `secret-in-added-line`, …) and to the fetch refusal
/// codes it passes through (`artifact-signature`, `artifact-replay`, …; see [`FETCH_CODES`]).
pub mod code {
    /// The bundle in the inbox does not hash to the record's digest (store tampering).
    pub const BUNDLE_DIGEST: &str = "bundle-digest-mismatch";
    /// The bundle or its manifest is unreadable (safe reader or format rule).
    pub const BUNDLE_REFUSED: &str = "bundle-refused";
    /// The artifact has no `patch.diff`.
    pub const ARTIFACT_INCOMPLETE: &str = "artifact-incomplete";
    /// `patch.diff` does not hash to the packet's `diff_sha256`.
    pub const DIFF_DIGEST: &str = "diff-digest-mismatch";
    /// A modified, deleted or mode-changed path is not in the bundle: the worker never saw it.
    pub const PATH_NOT_PACKED: &str = "path-not-packed";
    /// An added path is on the pack deny-list (`.env`, `*.pem`, `secrets/`, …).
    pub const DENIED_PATH_ADDED: &str = "denied-path-added";
    /// An added path already exists, collides with a packed path on a case-insensitive or
    /// normalising file system, or runs through a packed file as if it were a directory.
    pub const PATH_COLLISION: &str = "path-collision";
    /// An added path creates a directory that is not in the packed tree.
    pub const NEW_DIRECTORY: &str = "new-directory";
    /// The packet disagrees with the diff (counts) or the record (model requested).
    pub const PACKET_MISMATCH: &str = "packet-mismatch";
    /// The worker ran the generator without a sandbox.
    pub const UNSANDBOXED: &str = "unsandboxed";
    /// The worker hit a limit (wall clock, changed files, tokens, …): the diff may be cut short.
    pub const WORKER_LIMIT_HIT: &str = "worker-limit-hit";
    /// The model reported differs from the model requested (recorded, `queue`); never when
    /// nothing specific was requested (`unspecified`).
    pub const MODEL_MISMATCH: &str = "model-mismatch";
    /// The model reported answers this model request for the first time in the ledger
    /// (`[models] drift` in the policy, default `human`; see `drift.rs`).
    pub const MODEL_DRIFT: &str = "model-drift";
    /// The generator left files the worker could not put in a diff (links, binaries, …;
    /// recorded, `queue`).
    pub const WORKER_REFUSED_PATHS: &str = "worker-refused-paths";
    /// A dependency manifest in the diff could not be parsed to list new dependencies.
    pub const DEPS_UNPARSED: &str = "deps-unparsed";
    /// The patch changes nothing: there is nothing to review (`reject`).
    pub const NO_CHANGE: &str = "no-change";

    /// Every code above, for uniqueness tests and documentation.
    #[allow(dead_code)] // read by the uniqueness test and kept as the documented list
    pub const ALL: &[&str] = &[
        BUNDLE_DIGEST,
        BUNDLE_REFUSED,
        ARTIFACT_INCOMPLETE,
        DIFF_DIGEST,
        PATH_NOT_PACKED,
        DENIED_PATH_ADDED,
        PATH_COLLISION,
        NEW_DIRECTORY,
        PACKET_MISMATCH,
        UNSANDBOXED,
        WORKER_LIMIT_HIT,
        MODEL_MISMATCH,
        MODEL_DRIFT,
        WORKER_REFUSED_PATHS,
        DEPS_UNPARSED,
        NO_CHANGE,
    ];
}

/// The refusal codes of `fetch` that the gate passes through as `reject` reasons.
pub const FETCH_CODES: &[&str] = &[
    "artifact-too-large",
    "artifact-signature",
    "artifact-statement",
    "artifact-replay",
    "artifact-digest",
    "artifact-late",
    "artifact-early",
    "packet-digest",
    "packet-binding",
    "artifact-tar",
    "packet-format",
    "artifact-swapped",
    "artifact-changed-locally",
];

/// Most secret findings listed one by one; the rest are counted in one more reason.
pub const MAX_SECRET_REASONS: usize = 50;

/// A fetch refusal as a `reject` reason with the fetch's code. For `artifact-tar` the tar rule
/// id (`tar.link`, …) is recovered from the message into [`Reason::rule`].
pub fn fetch_refusal(r: &FetchRefused) -> Reason {
    let mut reason = Reason::new(r.code, Verdict::Reject, r.detail.clone());
    if let Some(rule) = rule_in_message(&r.detail) {
        reason = reason.rule(rule);
    }
    reason
}

/// The last `rejected (<rule>)` in a tar or format message. The member name printed earlier in
/// the message is the worker's, so the last occurrence (ours) is the one to trust.
fn rule_in_message(msg: &str) -> Option<String> {
    let start = msg.rfind("rejected (")? + "rejected (".len();
    let rest = msg.get(start..)?;
    let end = rest.find(')')?;
    let rule = rest.get(..end)?;
    let ok = !rule.is_empty()
        && rule.len() <= 64
        && rule.contains('.')
        && rule
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-');
    ok.then(|| rule.to_owned())
}

/// A strict-parser refusal of `patch.diff`, as a reject:
/// `diff.binary` → `binary-patch-refused`; `diff.mode` naming a symlink → `mode-change-symlink`;
/// every other rule (`diff.git-dir`, `diff.parent-dir`, `diff.abs-path`, …) → `diff-refused`.
/// The rule id is kept in [`Reason::rule`].
pub fn diff_refusal(e: &DiffError) -> Reason {
    let rule = e.rule();
    let text = e.to_string();
    let code = match rule {
        diff::rule::BINARY => ReasonCode::BinaryPatchRefused,
        diff::rule::MODE if text.contains("(symlink)") => ReasonCode::ModeChangeSymlink,
        _ => ReasonCode::DiffRefused,
    };
    let section = match e {
        DiffError::Rejected { section, .. } if section != "-" => Some(section.clone()),
        _ => None,
    };
    let mut reason =
        Reason::new(code.code(), Verdict::Reject, format!("patch.diff: {text}")).rule(rule);
    reason.path = section;
    reason
}

/// Every directory of the packed tree (all proper ancestors of packed files), `""` for the top.
pub fn packed_dirs(manifest: &Manifest) -> HashSet<String> {
    let mut dirs = HashSet::new();
    dirs.insert(String::new());
    for f in &manifest.files {
        let mut p = f.path.as_str();
        while let Some(i) = p.rfind('/') {
            p = &p[..i];
            if !dirs.insert(p.to_owned()) {
                break;
            }
        }
    }
    dirs
}

/// Path checks of step 5 (see the module doc). `deny` is the pack deny-list selector; it is
/// needed only when the patch adds files (an added path checked without it is refused: fail
/// closed), so a gate that sees no new file need not build it.
pub fn check_paths(
    patch: &ParsedPatch,
    manifest: &Manifest,
    deny: Option<&Selector>,
) -> Vec<Reason> {
    let mut out = Vec::new();
    let dirs = packed_dirs(manifest);
    let mut folded: HashMap<String, &str> = HashMap::new();
    for f in &manifest.files {
        folded.insert(collision_key(&f.path), &f.path);
    }
    let folded_dirs: HashSet<String> = dirs.iter().map(|d| collision_key(d)).collect();
    let mut new_dirs_reported: BTreeSet<String> = BTreeSet::new();
    for fp in &patch.files {
        let path = fp.path.as_str();
        match fp.kind {
            FileKind::Modified | FileKind::Deleted | FileKind::ModeChange => {
                if manifest.file(path).is_none() {
                    out.push(
                        Reason::new(
                            code::PATH_NOT_PACKED,
                            Verdict::Reject,
                            format!(
                                "the patch {} a path that was not in the bundle: the worker never saw it",
                                verb(fp.kind)
                            ),
                        )
                        .at(path),
                    );
                }
            }
            FileKind::Added => {
                match deny.map(|d| d.verdict(path)) {
                    Some(PackVerdict::Skip(rule)) => out.push(
                        Reason::new(
                            code::DENIED_PATH_ADDED,
                            Verdict::Reject,
                            format!("new file on a deny-listed path ({rule}): such files never cross the valve"),
                        )
                        .at(path)
                        .rule(rule),
                    ),
                    Some(_) => {}
                    None => out.push(
                        Reason::new(
                            code::DENIED_PATH_ADDED,
                            Verdict::Reject,
                            "new file, and the deny-list was not loaded to check it",
                        )
                        .at(path),
                    ),
                }
                if manifest.file(path).is_some() {
                    out.push(
                        Reason::new(
                            code::PATH_COLLISION,
                            Verdict::Reject,
                            "added, but the path exists in the bundle",
                        )
                        .at(path),
                    );
                } else if let Some(other) = folded.get(&collision_key(path)) {
                    out.push(
                        Reason::new(
                            code::PATH_COLLISION,
                            Verdict::Reject,
                            format!(
                                "added path is the same file as packed {} on a case-insensitive or normalising file system",
                                shown(other)
                            ),
                        )
                        .at(path),
                    );
                } else if dirs.contains(path) || folded_dirs.contains(&collision_key(path)) {
                    out.push(
                        Reason::new(
                            code::PATH_COLLISION,
                            Verdict::Reject,
                            "added file where the bundle has a directory",
                        )
                        .at(path),
                    );
                }
                // A packed file used as a directory (`src/lib.rs/x`).
                let mut anc = path;
                while let Some(i) = anc.rfind('/') {
                    anc = &anc[..i];
                    if manifest.file(anc).is_some() || folded.contains_key(&collision_key(anc)) {
                        out.push(
                            Reason::new(
                                code::PATH_COLLISION,
                                Verdict::Reject,
                                format!("added below {}, which is a packed file", shown(anc)),
                            )
                            .at(path),
                        );
                        break;
                    }
                }
                let parent = path.rfind('/').map_or("", |i| &path[..i]);
                if !dirs.contains(parent) {
                    // Report the outermost directory that is new, once.
                    let mut top = parent;
                    let mut probe = parent;
                    while let Some(i) = probe.rfind('/') {
                        probe = &probe[..i];
                        if dirs.contains(probe) {
                            break;
                        }
                        top = probe;
                    }
                    if new_dirs_reported.insert(top.to_owned()) {
                        out.push(
                            Reason::new(
                                code::NEW_DIRECTORY,
                                Verdict::Human,
                                format!(
                                    "creates directory {}/, which is not in the packed tree",
                                    shown(top)
                                ),
                            )
                            .at(path),
                        );
                    }
                }
            }
        }
        if let Some(r) = mode_reason(fp, manifest) {
            out.push(r);
        }
    }
    out
}

fn verb(kind: FileKind) -> &'static str {
    match kind {
        FileKind::Added => "adds",
        FileKind::Deleted => "deletes",
        FileKind::Modified => "modifies",
        FileKind::ModeChange => "changes the mode of",
    }
}

/// `mode-change-executable` (human) when a file becomes executable: a new file with mode
/// 100755, or an existing non-executable file given 100755.
fn mode_reason(fp: &diff::FilePatch, manifest: &Manifest) -> Option<Reason> {
    if fp.new_mode != Some(FileMode::Executable) {
        return None;
    }
    let was_exec = fp.old_mode == Some(FileMode::Executable)
        || manifest.file(&fp.path).is_some_and(|f| f.executable());
    if fp.kind != FileKind::Added && was_exec {
        return None;
    }
    let what = if fp.kind == FileKind::Added {
        "new file is executable (100755)"
    } else {
        "file made executable (100644 -> 100755)"
    };
    Some(
        Reason::new(
            ReasonCode::ModeChangeExecutable.code(),
            Verdict::Human,
            what,
        )
        .at(&fp.path),
    )
}

/// Redacted lines per path: the manifest's redaction records plus every line of a packed file
/// that holds a redaction marker (multi-line secrets are recorded by their first line only).
pub type RedactedLines = BTreeMap<String, BTreeSet<u64>>;

/// Step 7: a hunk whose old side (context or removed lines) covers a redacted line is a reject
/// (`redacted-line-touched`): the worker saw a marker there, not the real line, so the change
/// cannot be meant for the real content, and applying it could move or drop the secret.
pub fn check_redacted(patch: &ParsedPatch, redacted: &RedactedLines) -> Vec<Reason> {
    let mut out = Vec::new();
    for fp in &patch.files {
        let Some(lines) = redacted.get(&fp.path) else {
            continue;
        };
        for (n, h) in fp.hunks.iter().enumerate() {
            if h.old_len == 0 {
                continue;
            }
            let first = h.old_first();
            let last = first.saturating_add(h.old_len - 1);
            let removed: BTreeSet<u64> = removed_old_lines(h).collect();
            if let Some(line) = lines.range(first..=last).next() {
                let how = if removed.contains(line) {
                    "removes or replaces"
                } else {
                    "has as context"
                };
                out.push(
                    Reason::new(
                        ReasonCode::RedactedLineTouched.code(),
                        Verdict::Reject,
                        format!(
                            "hunk {} (old lines {first}-{last}) {how} line {line}, which was redacted at pack time",
                            n + 1
                        ),
                    )
                    .at(&fp.path),
                );
            }
        }
    }
    out
}

fn removed_old_lines(h: &diff::Hunk) -> impl Iterator<Item = u64> + '_ {
    let mut old = h.old_first();
    h.lines.iter().filter_map(move |l| match l.kind {
        diff::LineKind::Context => {
            old = old.saturating_add(1);
            None
        }
        diff::LineKind::Removed => {
            let n = old;
            old = old.saturating_add(1);
            Some(n)
        }
        diff::LineKind::Added => None,
    })
}

/// Step 9: scans each file's added lines (joined with `\n`) and maps findings back to new-side
/// line numbers. One `secret-in-added-line` reject per finding, `path:line: rule`, up to
/// [`MAX_SECRET_REASONS`], then one reason counting the rest.
pub fn scan_added_lines(scanner: &airlock_scan::Scanner, patch: &ParsedPatch) -> Vec<Reason> {
    let mut out = Vec::new();
    let mut more = 0usize;
    for fp in &patch.files {
        let lines: Vec<(u64, &str)> = fp.added_lines().collect();
        if lines.is_empty() {
            continue;
        }
        let mut text = String::new();
        for (_, t) in &lines {
            text.push_str(t);
            text.push('\n');
        }
        let mut seen: HashSet<(u64, String)> = HashSet::new();
        for f in scanner.scan(&fp.path, text.as_bytes()) {
            let idx = usize::try_from(f.line.saturating_sub(1)).unwrap_or(usize::MAX);
            let line = lines.get(idx).map_or(0, |(n, _)| *n);
            if !seen.insert((line, f.rule_id.clone())) {
                continue;
            }
            if out.len() >= MAX_SECRET_REASONS {
                more += 1;
                continue;
            }
            out.push(
                Reason::new(
                    ReasonCode::SecretInAddedLine.code(),
                    Verdict::Reject,
                    format!("{}:{line}: {}", fp.path, f.rule_id),
                )
                .at(&fp.path)
                .rule(f.rule_id.clone()),
            );
        }
    }
    if more > 0 {
        out.push(Reason::new(
            ReasonCode::SecretInAddedLine.code(),
            Verdict::Reject,
            format!("{more} more secret finding(s) not listed"),
        ));
    }
    out
}

/// The model request meaning "nothing specific" (`airlock submit` without `--model`).
pub const MODEL_UNSPECIFIED: &str = "unspecified";

/// Step 11 (and the packet half of step 6): what the packet says about the run.
///
/// - counts or `model_requested` that disagree with the parsed diff or the record:
///   `packet-mismatch`, reject (the packet is signed; a signed lie is hostile);
/// - `partial: true`: `partial-result`, **human** (the worker did not finish cleanly: the diff
///   is real and verified but may be incomplete; a person decides whether it is useful, and it
///   can never be queued as if finished);
/// - `sandbox: none`: `unsandboxed`, human (the generator had the worker's network and files);
/// - `limits_hit` non-empty: `worker-limit-hit`, human (the diff may be cut short);
/// - model reported differs from requested (both specific: reported, and not
///   `unspecified`): `model-mismatch`, **queue**:
///   recorded in the report, the ledger and the review commit, not a decision by itself
///   (providers name models inconsistently; policy cannot tighten it yet);
/// - refused paths: `worker-refused-paths`, queue (recorded).
pub fn check_packet(packet: &Packet, record: &JobRecord, patch: &ParsedPatch) -> Vec<Reason> {
    let mut out = Vec::new();
    let counts = (
        patch.files_changed(),
        patch.lines_added(),
        patch.lines_removed(),
    );
    let claimed = (
        packet.files_changed,
        packet.lines_added,
        packet.lines_removed,
    );
    if counts != claimed {
        out.push(Reason::new(
            code::PACKET_MISMATCH,
            Verdict::Reject,
            format!(
                "packet claims {} files +{} -{}, the diff has {} files +{} -{}",
                claimed.0, claimed.1, claimed.2, counts.0, counts.1, counts.2
            ),
        ));
    }
    if packet.model_requested != record.model_requested {
        out.push(Reason::new(
            code::PACKET_MISMATCH,
            Verdict::Reject,
            format!(
                "packet says model {} was requested; the job record says {}",
                shown(&packet.model_requested),
                shown(&record.model_requested)
            ),
        ));
    }
    if packet.partial {
        out.push(Reason::new(
            ReasonCode::PartialResult.code(),
            Verdict::Human,
            format!(
                "the worker marked its final artifact partial (generator {:?}, code {:?}); the diff may be incomplete",
                packet.exit.kind, packet.exit.code
            ),
        ));
    }
    if packet.sandbox == "none" {
        out.push(Reason::new(
            code::UNSANDBOXED,
            Verdict::Human,
            "the generator ran without a sandbox (--unsafe-no-sandbox)",
        ));
    }
    if !packet.limits_hit.is_empty() {
        let list: Vec<String> = packet
            .limits_hit
            .iter()
            .take(20)
            .map(|l| shown(l))
            .collect();
        out.push(Reason::new(
            code::WORKER_LIMIT_HIT,
            Verdict::Human,
            format!("the worker hit limit(s): {}", list.join(", ")),
        ));
    }
    let reported = packet.model_reported.as_str();
    let asked = record.model_requested.as_str();
    if reported != MODEL_UNREPORTED && asked != MODEL_UNSPECIFIED && reported != asked {
        out.push(Reason::new(
            code::MODEL_MISMATCH,
            Verdict::Queue,
            format!(
                "model requested {}, reported {}",
                shown(&record.model_requested),
                shown(reported)
            ),
        ));
    }
    if !packet.refused.is_empty() {
        let list: Vec<String> = packet
            .refused
            .iter()
            .take(10)
            .map(|r| format!("{} ({})", shown(&r.path), shown(&r.reason)))
            .collect();
        out.push(Reason::new(
            code::WORKER_REFUSED_PATHS,
            Verdict::Queue,
            format!(
                "{} path(s) left out of the diff by the worker: {}{}",
                packet.refused.len(),
                list.join(", "),
                if packet.refused.len() > 10 {
                    ", …"
                } else {
                    ""
                }
            ),
        ));
    }
    out
}

/// An empty change, answered before anything else looks at it: `reject` with `no-change`
/// and one plain sentence, instead of git's "No valid patches in input".
pub fn check_no_change(patch: &ParsedPatch) -> Option<Reason> {
    patch.files.is_empty().then(|| {
        Reason::new(
            code::NO_CHANGE,
            Verdict::Reject,
            "the generator changed no file, so there is nothing to review (the generator log's tail is below when the artifact has one)",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_core::diff::{parse_patch, DiffLimits};
    use airlock_core::digest::Sha256Digest;
    use airlock_core::format::{FileEntry, Packer, Redaction, Source};

    fn manifest(files: &[(&str, &str)]) -> Manifest {
        let mut files: Vec<FileEntry> = files
            .iter()
            .map(|(p, m)| FileEntry {
                path: (*p).into(),
                size: 1,
                mode: (*m).into(),
                sha256: Sha256Digest::of_bytes(b""),
            })
            .collect();
        files.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        Manifest {
            format: airlock_core::format::MANIFEST_FORMAT.into(),
            packer: Packer {
                name: "airlock".into(),
                version: "0".into(),
            },
            source: Source {
                repo: "r".into(),
                revision: "0".repeat(40),
                tree: "0".repeat(40),
            },
            request_sha256: Sha256Digest::of_bytes(b""),
            files,
            redactions: Vec::<Redaction>::new(),
            skipped: BTreeMap::new(),
        }
    }

    fn patch(text: &str) -> ParsedPatch {
        parse_patch(text.as_bytes(), &DiffLimits::default()).unwrap()
    }

    fn modify(path: &str) -> String {
        format!("diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n")
    }

    fn add(path: &str, mode: &str) -> String {
        format!("diff --git a/{path} b/{path}\nnew file mode {mode}\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n")
    }

    fn codes(rs: &[Reason]) -> Vec<(&'static str, Verdict, Option<String>)> {
        rs.iter()
            .map(|r| (r.code, r.verdict, r.path.clone()))
            .collect()
    }

    fn deny() -> Selector {
        Selector::new(&[], &[]).unwrap()
    }

    #[test]
    fn gate_codes_are_unique_kebab_and_distinct_from_policy_and_fetch_codes() {
        let mut seen = HashSet::new();
        for c in code::ALL
            .iter()
            .chain(super::super::policy::REASON_CODES)
            .chain(FETCH_CODES)
        {
            assert!(
                c.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{c}"
            );
            assert!(seen.insert(*c), "duplicate reason code {c}");
        }
    }

    #[test]
    fn modifying_a_path_the_worker_never_saw_is_rejected_as_not_packed() {
        let m = manifest(&[("src/lib.rs", "0644")]);
        let p = patch(&(modify(".env") + &modify("src/lib.rs")));
        assert_eq!(
            codes(&check_paths(&p, &m, Some(&deny()))),
            vec![(code::PATH_NOT_PACKED, Verdict::Reject, Some(".env".into()))]
        );
    }

    #[test]
    fn adding_a_deny_listed_file_is_rejected() {
        let m = manifest(&[("src/lib.rs", "0644")]);
        for path in [
            "src/.env.local",
            "src/server.pem",
            "src/secrets/x.txt",
            "src/ID_RSA",
        ] {
            let rs = check_paths(&patch(&add(path, "100644")), &m, Some(&deny()));
            assert!(
                rs.iter()
                    .any(|r| r.code == code::DENIED_PATH_ADDED && r.verdict == Verdict::Reject),
                "{path}: {rs:?}"
            );
        }
    }

    #[test]
    fn adding_over_an_existing_or_case_colliding_path_is_a_collision() {
        let m = manifest(&[("src/lib.rs", "0644"), ("docs/Guide.md", "0644")]);
        for path in [
            "src/lib.rs",
            "SRC/lib.rs",
            "docs/guide.md",
            "src/lib.rs/x.rs",
            "src",
        ] {
            let rs = check_paths(&patch(&add(path, "100644")), &m, Some(&deny()));
            assert!(
                rs.iter().any(|r| r.code == code::PATH_COLLISION),
                "{path}: {rs:?}"
            );
        }
    }

    #[test]
    fn new_file_in_existing_directory_or_top_level_is_fine_new_tree_needs_a_human() {
        let m = manifest(&[("src/a/lib.rs", "0644")]);
        assert!(check_paths(&patch(&add("src/a/new.rs", "100644")), &m, Some(&deny())).is_empty());
        assert!(check_paths(&patch(&add("src/new.rs", "100644")), &m, Some(&deny())).is_empty());
        assert!(check_paths(&patch(&add("NOTES.md", "100644")), &m, Some(&deny())).is_empty());
        let rs = check_paths(
            &patch(&(add("tools/gen/a.py", "100644") + &add("tools/gen/b.py", "100644"))),
            &m,
            Some(&deny()),
        );
        assert_eq!(
            codes(&rs),
            vec![(
                code::NEW_DIRECTORY,
                Verdict::Human,
                Some("tools/gen/a.py".into())
            )],
            "one reason per new top directory"
        );
        assert!(rs[0].detail.contains("tools/"), "{}", rs[0].detail);
    }

    #[test]
    fn making_a_file_executable_needs_a_human() {
        let m = manifest(&[("run.sh", "0644"), ("bin/tool", "0755")]);
        let chmod = "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n";
        assert_eq!(
            codes(&check_paths(&patch(chmod), &m, Some(&deny()))),
            vec![(
                "mode-change-executable",
                Verdict::Human,
                Some("run.sh".into())
            )]
        );
        let rs = check_paths(&patch(&add("new.sh", "100755")), &m, Some(&deny()));
        assert_eq!(
            codes(&rs),
            vec![(
                "mode-change-executable",
                Verdict::Human,
                Some("new.sh".into())
            )]
        );
        let unexec = "diff --git a/bin/tool b/bin/tool\nold mode 100755\nnew mode 100644\n";
        assert!(check_paths(&patch(unexec), &m, Some(&deny())).is_empty());
    }

    #[test]
    fn without_the_deny_list_an_added_file_is_refused() {
        let m = manifest(&[("src/lib.rs", "0644")]);
        let rs = check_paths(&patch(&add("src/new.rs", "100644")), &m, None);
        assert!(
            rs.iter()
                .any(|r| r.code == code::DENIED_PATH_ADDED && r.verdict == Verdict::Reject),
            "{rs:?}"
        );
    }

    #[test]
    fn hunks_covering_redacted_lines_are_rejected_removed_or_context() {
        let text = "diff --git a/cfg.py b/cfg.py\n--- a/cfg.py\n+++ b/cfg.py\n@@ -3,3 +3,3 @@\n a\n-b\n+B\n c\n";
        let p = patch(text);
        let mut red = RedactedLines::new();
        red.insert("cfg.py".into(), BTreeSet::from([4]));
        let rs = check_redacted(&p, &red);
        assert_eq!(
            codes(&rs),
            vec![(
                "redacted-line-touched",
                Verdict::Reject,
                Some("cfg.py".into())
            )]
        );
        assert!(
            rs[0].detail.contains("removes or replaces line 4"),
            "{}",
            rs[0].detail
        );
        red.insert("cfg.py".into(), BTreeSet::from([5]));
        let rs = check_redacted(&p, &red);
        assert!(
            rs[0].detail.contains("has as context line 5"),
            "{}",
            rs[0].detail
        );
        // Lines outside the hunk's old range, or another file: fine.
        red.insert("cfg.py".into(), BTreeSet::from([2, 6]));
        assert!(check_redacted(&p, &red).is_empty());
        let mut other = RedactedLines::new();
        other.insert("other.py".into(), BTreeSet::from([4]));
        assert!(check_redacted(&p, &other).is_empty());
    }

    #[test]
    fn pure_insertion_next_to_a_redacted_line_is_not_touching_it() {
        let text =
            "diff --git a/cfg.py b/cfg.py\n--- a/cfg.py\n+++ b/cfg.py\n@@ -4,0 +5 @@\n+new\n";
        let mut red = RedactedLines::new();
        red.insert("cfg.py".into(), BTreeSet::from([4, 5]));
        assert!(check_redacted(&patch(text), &red).is_empty());
    }

    #[test]
    fn secret_scan_names_path_line_and_rule_never_the_value() {
        let key = format!("AKIA{}", "Q7RZ4MX2NV5WLT3K");
        let text = format!(
            "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -10,2 +10,4 @@\n x\n+y = 1\n+aws_access_key_id = \"{key}\"\n-z\n+w\n"
        );
        let scanner = airlock_scan::Scanner::with_default_rules()
            .unwrap()
            .with_inline_allow(false);
        let rs = scan_added_lines(&scanner, &patch(&text));
        assert!(!rs.is_empty(), "the planted key was not found");
        assert!(rs
            .iter()
            .all(|r| r.code == "secret-in-added-line" && r.verdict == Verdict::Reject));
        assert!(
            rs[0].detail.starts_with("src/a.py:12: "),
            "{}",
            rs[0].detail
        );
        assert!(rs.iter().all(|r| !r.detail.contains(&key)), "{rs:?}");
    }

    #[test]
    fn inline_allow_comment_in_the_diff_does_not_waive_a_finding() {
        let key = format!("ghp_{}", "x7Kp2Lq9Wm4Rt6Yz8Nb3Vc5Hd1Jf0Gs2Ae4U");
        let text = format!("diff --git a/a.py b/a.py\nnew file mode 100644\n--- /dev/null\n+++ b/a.py\n@@ -0,0 +1 @@\n+t = \"{key}\"  # airlock:allow\n");
        let scanner = airlock_scan::Scanner::with_default_rules()
            .unwrap()
            .with_inline_allow(false);
        assert!(!scan_added_lines(&scanner, &patch(&text)).is_empty());
    }

    #[test]
    fn fetch_refusal_keeps_the_code_and_recovers_the_tar_rule_not_the_members() {
        let r = FetchRefused {
            code: "artifact-tar",
            detail:
                "artifact.tar.gz: member \"x: rejected (tar.fake)\": rejected (tar.link): a link"
                    .into(),
        };
        let reason = fetch_refusal(&r);
        assert_eq!(
            (reason.code, reason.verdict),
            ("artifact-tar", Verdict::Reject)
        );
        assert_eq!(reason.rule.as_deref(), Some("tar.link"));
        let r = FetchRefused {
            code: "artifact-signature",
            detail: "artifact.dsse.json: bad signature".into(),
        };
        assert_eq!(fetch_refusal(&r).rule, None);
    }

    #[test]
    fn diff_refusals_map_binary_and_symlink_to_their_own_codes() {
        let bin =
            "diff --git a/a.bin b/a.bin\nnew file mode 100644\nGIT binary patch\nliteral 1\nAQ\n\n";
        let e = parse_patch(bin.as_bytes(), &DiffLimits::default()).unwrap_err();
        assert_eq!(diff_refusal(&e).code, "binary-patch-refused");
        let link = "diff --git a/l b/l\nold mode 100644\nnew mode 120000\n";
        let e = parse_patch(link.as_bytes(), &DiffLimits::default()).unwrap_err();
        let r = diff_refusal(&e);
        assert_eq!(
            (r.code, r.rule.as_deref()),
            ("mode-change-symlink", Some("diff.mode"))
        );
        let git = modify(".git/config");
        let e = parse_patch(git.as_bytes(), &DiffLimits::default()).unwrap_err();
        let r = diff_refusal(&e);
        assert_eq!(
            (r.code, r.rule.as_deref()),
            ("diff-refused", Some("diff.git-dir"))
        );
        let up = modify("../x");
        let e = parse_patch(up.as_bytes(), &DiffLimits::default()).unwrap_err();
        assert_eq!(diff_refusal(&e).rule.as_deref(), Some("diff.parent-dir"));
    }

    fn record() -> JobRecord {
        JobRecord {
            format: airlock_core::format::JOB_RECORD_FORMAT.into(),
            job: airlock_core::jobid::JobId::parse("20260101T000000Z-00112233445566778899")
                .unwrap(),
            job_public_key: "ab".repeat(32),
            bundle_sha256: Sha256Digest::of_bytes(b"b"),
            request_sha256: Sha256Digest::of_bytes(b"r"),
            prompt_sha256: Sha256Digest::of_bytes(b"p"),
            model_requested: "model-a".into(),
            revision: "0".repeat(40),
            issued_at: 1,
            expires_at: 2,
            limits: airlock_core::limits::JobLimits::default(),
        }
    }

    fn packet(p: &ParsedPatch) -> Packet {
        Packet {
            format: airlock_core::format::PACKET_FORMAT.into(),
            job: record().job,
            run_id: "0123456789abcdef".into(),
            bundle_sha256: Sha256Digest::of_bytes(b"b"),
            model_requested: "model-a".into(),
            model_reported: "model-a".into(),
            tokens_in: None,
            tokens_out: None,
            diff_sha256: Sha256Digest::of_bytes(b""),
            files_changed: p.files_changed(),
            lines_added: p.lines_added(),
            lines_removed: p.lines_removed(),
            refused: Vec::new(),
            limits_hit: Vec::new(),
            exit: airlock_core::format::ExitInfo {
                kind: airlock_core::format::ExitKind::Exited,
                code: Some(0),
            },
            timings: airlock_core::format::Timings {
                started_at_ms: 0,
                finished_at_ms: 0,
                generator_ms: 0,
            },
            worker_version: "0".into(),
            sandbox: "namespaces+landlock+seccomp".into(),
            egress: Vec::new(),
            partial: false,
        }
    }

    #[test]
    fn honest_finished_sandboxed_packet_adds_nothing() {
        let p = patch(&modify("a.txt"));
        assert!(check_packet(&packet(&p), &record(), &p).is_empty());
    }

    #[test]
    fn packet_lying_about_counts_or_the_requested_model_is_rejected() {
        let p = patch(&modify("a.txt"));
        let mut k = packet(&p);
        k.lines_added = 0;
        assert_eq!(
            codes(&check_packet(&k, &record(), &p)),
            vec![(code::PACKET_MISMATCH, Verdict::Reject, None)]
        );
        let mut k = packet(&p);
        k.model_requested = "cheap-model".into();
        assert_eq!(
            codes(&check_packet(&k, &record(), &p)),
            vec![(code::PACKET_MISMATCH, Verdict::Reject, None)]
        );
    }

    #[test]
    fn partial_unsandboxed_and_limit_hit_runs_need_a_human() {
        let p = patch(&modify("a.txt"));
        let mut k = packet(&p);
        k.partial = true;
        k.sandbox = "none".into();
        k.limits_hit = vec!["wall-clock".into()];
        let got = codes(&check_packet(&k, &record(), &p));
        assert_eq!(
            got,
            vec![
                ("partial-result", Verdict::Human, None),
                (code::UNSANDBOXED, Verdict::Human, None),
                (code::WORKER_LIMIT_HIT, Verdict::Human, None),
            ]
        );
    }

    #[test]
    fn model_swap_and_refused_paths_are_recorded_not_decisive() {
        let p = patch(&modify("a.txt"));
        let mut k = packet(&p);
        k.model_reported = "model-b\x1b[2J".into();
        k.refused = vec![airlock_core::format::RefusedPath {
            path: "link".into(),
            reason: "diff.symlink".into(),
        }];
        let rs = check_packet(&k, &record(), &p);
        assert_eq!(
            codes(&rs),
            vec![
                (code::MODEL_MISMATCH, Verdict::Queue, None),
                (code::WORKER_REFUSED_PATHS, Verdict::Queue, None)
            ]
        );
        assert!(!rs[0].detail.contains('\x1b'), "{}", rs[0].detail);
        k.refused.clear();
        k.model_reported = MODEL_UNREPORTED.into();
        assert!(check_packet(&k, &record(), &p).is_empty());
    }

    #[test]
    fn no_model_mismatch_when_nothing_specific_was_asked() {
        let p = patch(&modify("a.txt"));
        let mut rec = record();
        rec.model_requested = MODEL_UNSPECIFIED.into();
        let mut k = packet(&p);
        k.model_requested = MODEL_UNSPECIFIED.into();
        k.model_reported = "example-model-2026-02".into();
        assert!(check_packet(&k, &rec, &p).is_empty());
    }

    #[test]
    fn an_empty_patch_is_a_no_change_reject_and_a_real_one_is_not() {
        let p = ParsedPatch::default();
        let r = check_no_change(&p).expect("a reason");
        assert_eq!((r.code, r.verdict), (code::NO_CHANGE, Verdict::Reject));
        assert!(check_packet(&packet(&p), &record(), &p).is_empty());
        let one = parse_patch(
            b"diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n",
            &DiffLimits::default(),
        )
        .unwrap();
        assert!(check_no_change(&one).is_none());
    }
}
