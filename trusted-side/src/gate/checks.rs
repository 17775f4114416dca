//! The gate's checks that need neither the store nor git: each takes parsed, untrusted input
//! (the worker's patch and packet) plus trusted context (the signed record, the bundle's
//! manifest) and returns reasons.
//!
//! Guards against, one check each:
//! - edits to paths the worker never saw ([`check_paths`]: `path-not-packed`, e.g. `.env`),
//!   new files on deny-listed paths (`denied-path-added`), on paths that already exist or
//!   collide with one on a case-insensitive file system (`path-collision`), new top-level
//!   trees (`new-directory`), files made executable (`mode-change-executable`);
//! - hunks whose old side covers a line redacted at pack time ([`check_redacted`]);
//! - a packet that disagrees with the diff or the record, or says the run was partial,
//!   unsandboxed or hit a limit ([`check_packet`]);
//! - an empty change passed on to git as if it were a patch ([`check_no_change`]: `no-change`).
//!
//! On return: reasons only; nothing here fails, writes or reads files.
//! Does not check: that the patch applies (`apply.rs` does, with real git), secrets
//! (`scan.rs`), classification (the policy does).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use airlock_core::diff::{self, FileKind, FileMode, ParsedPatch};
use airlock_core::format::{JobRecord, Packet, MODEL_UNREPORTED};
use airlock_core::paths::collision_key;

use super::policy::Verdict;
use crate::classify::tree::Listing;
use crate::pack::select::{Selector, Verdict as PackVerdict};
use crate::reasons::ReasonCode;
use airlock_core::text;

use crate::report::Reason;

/// Path checks of step 5 (see the module doc). `deny` is the pack deny-list selector; it is
/// needed only when the patch adds files (an added path checked without it is refused: fail
/// closed), so a gate that sees no new file need not build it. Lookups are binary searches in
/// the packed listing; only an added path makes the collision keys of the whole tree worth
/// computing.
pub fn check_paths(patch: &ParsedPatch, packed: &Listing, deny: Option<&Selector>) -> Vec<Reason> {
    let mut out = Vec::new();
    let adds = patch.files.iter().any(|f| f.kind == FileKind::Added);
    let (folded, folded_dirs) = if adds {
        collision_keys(packed)
    } else {
        Default::default()
    };
    let is_dir = |d: &str| d.is_empty() || !packed.starting_with(&format!("{d}/")).is_empty();
    let mut new_dirs_reported: BTreeSet<String> = BTreeSet::new();
    for fp in &patch.files {
        let path = fp.path.as_str();
        match fp.kind {
            FileKind::Modified | FileKind::Deleted | FileKind::ModeChange => {
                if packed.get(path).is_none() {
                    out.push(
                        Reason::new(
                            ReasonCode::PathNotPacked,
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
                            ReasonCode::DeniedPathAdded,
                            Verdict::Reject,
                            format!("new file on a deny-listed path ({rule}): such files never cross the valve"),
                        )
                        .at(path)
                        .rule(rule),
                    ),
                    Some(_) => {}
                    None => out.push(
                        Reason::new(
                            ReasonCode::DeniedPathAdded,
                            Verdict::Reject,
                            "new file, and the deny-list was not loaded to check it",
                        )
                        .at(path),
                    ),
                }
                if packed.get(path).is_some() {
                    out.push(
                        Reason::new(
                            ReasonCode::PathCollision,
                            Verdict::Reject,
                            "added, but the path exists in the bundle",
                        )
                        .at(path),
                    );
                } else if let Some(other) = folded.get(&collision_key(path)) {
                    out.push(
                        Reason::new(
                            ReasonCode::PathCollision,
                            Verdict::Reject,
                            format!(
                                "added path is the same file as packed {} on a case-insensitive or normalising file system",
                                text::line(other)
                            ),
                        )
                        .at(path),
                    );
                } else if is_dir(path) || folded_dirs.contains(&collision_key(path)) {
                    out.push(
                        Reason::new(
                            ReasonCode::PathCollision,
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
                    if packed.get(anc).is_some() || folded.contains_key(&collision_key(anc)) {
                        out.push(
                            Reason::new(
                                ReasonCode::PathCollision,
                                Verdict::Reject,
                                format!("added below {}, which is a packed file", text::line(anc)),
                            )
                            .at(path),
                        );
                        break;
                    }
                }
                let parent = path.rfind('/').map_or("", |i| &path[..i]);
                if !is_dir(parent) {
                    // Report the outermost directory that is new, once.
                    let mut top = parent;
                    let mut probe = parent;
                    while let Some(i) = probe.rfind('/') {
                        probe = &probe[..i];
                        if is_dir(probe) {
                            break;
                        }
                        top = probe;
                    }
                    if new_dirs_reported.insert(top.to_owned()) {
                        out.push(
                            Reason::new(
                                ReasonCode::NewDirectory,
                                Verdict::Human,
                                format!(
                                    "creates directory {}/, which is not in the packed tree",
                                    text::line(top)
                                ),
                            )
                            .at(path),
                        );
                    }
                }
            }
        }
        if let Some(r) = mode_reason(fp, packed) {
            out.push(r);
        }
    }
    out
}

/// The collision keys of every packed file (with the file) and of every packed directory.
fn collision_keys(packed: &Listing) -> (HashMap<String, &str>, HashSet<String>) {
    let files = packed
        .iter()
        .map(|f| (collision_key(&f.path), f.path.as_str()))
        .collect();
    let mut dirs = HashSet::from([""]);
    for f in packed.iter() {
        let mut p = f.path.as_str();
        while let Some(i) = p.rfind('/') {
            p = &p[..i];
            if !dirs.insert(p) {
                break;
            }
        }
    }
    (files, dirs.into_iter().map(collision_key).collect())
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
fn mode_reason(fp: &diff::FilePatch, packed: &Listing) -> Option<Reason> {
    if fp.new_mode != Some(FileMode::Executable) {
        return None;
    }
    let was_exec = fp.old_mode == Some(FileMode::Executable)
        || packed.get(&fp.path).is_some_and(|f| f.executable);
    if fp.kind != FileKind::Added && was_exec {
        return None;
    }
    let what = if fp.kind == FileKind::Added {
        "new file is executable (100755)"
    } else {
        "file made executable (100644 -> 100755)"
    };
    Some(Reason::new(ReasonCode::ModeChangeExecutable, Verdict::Human, what).at(&fp.path))
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
                        ReasonCode::RedactedLineTouched,
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

/// How the generator ended, in words ("exited with status 7"), never Rust debug text.
fn exit_in_words(exit: &airlock_core::format::ExitInfo) -> String {
    use airlock_core::format::ExitKind;
    match (&exit.kind, exit.code) {
        (ExitKind::Exited, Some(c)) => format!("exited with status {c}"),
        (ExitKind::Signaled, Some(s)) => format!("was killed by signal {s}"),
        (ExitKind::Timeout, _) => "was killed at the wall clock".to_owned(),
        (ExitKind::Running, _) => "was still running".to_owned(),
        (ExitKind::NotStarted, _) => "never started".to_owned(),
        _ => "ended without a status".to_owned(),
    }
}

/// The model request meaning "nothing specific" (`airlock submit` without `--model`).
pub const MODEL_UNSPECIFIED: &str = airlock_core::model::MODEL_UNSPECIFIED;

/// Rule id of a final artifact whose packet says `exit.kind` `running` (`packet-mismatch`,
/// reject): only a checkpoint is written while the generator runs.
pub const RULE_EXIT_RUNNING: &str = "packet.exit-running";

/// Rule id of a `refused[].reason` outside [`REFUSED_REASONS`] (`worker-refused-paths`, human).
pub const RULE_REFUSED_REASON: &str = "packet.refused-reason";

/// The closed set of `refused[].reason` (docs/FORMATS.md, packet table): the diff writer's
/// rule ids for a path it leaves out.
pub const REFUSED_REASONS: &[&str] = &[
    "diff.symlink",
    "diff.special-file",
    "diff.unreadable",
    "diff.binary",
    "diff.collision",
    "diff.abs-path",
    "diff.parent-dir",
    "diff.git-dir",
    "diff.quoted-path",
    "diff.path",
];

/// Step 11 (and the packet half of step 6): what the packet says about the run.
///
/// - counts or `model_requested` that disagree with the parsed diff or the record:
///   `packet-mismatch`, reject (the packet is signed; a signed lie is hostile);
/// - `partial: true`: `partial-result`, **human** (the worker did not finish cleanly: the diff
///   is real and verified but may be incomplete; a person decides whether it is useful, and it
///   can never be queued as if finished);
/// - `sandbox: none`: `unsandboxed`, human (the generator had the worker's network and files);
/// - `limits_hit` non-empty: `worker-limit-hit`, human (the diff may be cut short; `disk`
///   is said in words with the job's disk limit);
/// - model reported does not answer the model requested (both specific: reported, and not
///   `unspecified`; [`airlock_core::model::answers`]: the same name or a dated snapshot of
///   it): `model-mismatch`, **human** (another model did the work than the one asked for);
/// - refused paths: `worker-refused-paths`, queue (recorded).
pub fn check_packet(packet: &Packet, record: &JobRecord, patch: &ParsedPatch) -> Vec<Reason> {
    use airlock_core::format::ExitKind;
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
            ReasonCode::PacketMismatch,
            Verdict::Reject,
            format!(
                "packet claims {} files +{} -{}, the diff has {} files +{} -{}",
                claimed.0, claimed.1, claimed.2, counts.0, counts.1, counts.2
            ),
        ));
    }
    if packet.model_requested != record.model_requested {
        out.push(Reason::new(
            ReasonCode::PacketMismatch,
            Verdict::Reject,
            format!(
                "packet says model {} was requested; the job record says {}",
                text::line(&packet.model_requested),
                text::line(&record.model_requested)
            ),
        ));
    }
    let clean_exit = packet.exit.kind == ExitKind::Exited && packet.exit.code == Some(0);
    if packet.exit.kind == ExitKind::Running {
        // `running` is a checkpoint's value: a final artifact whose generator is still running
        // is a signed contradiction (a checkpoint passed off as the result).
        let mut r = Reason::new(
            ReasonCode::PacketMismatch,
            Verdict::Reject,
            "packet says exit.kind running, a checkpoint's value, in the final artifact: a final artifact is written after the generator ended",
        );
        r.rule = Some(RULE_EXIT_RUNNING.to_owned());
        out.push(r);
    } else if packet.partial || !clean_exit {
        // Killed, timed out, never started or a non-zero exit is a partial result whatever
        // the `partial` flag says: it is never queued as if finished.
        out.push(Reason::new(
            ReasonCode::PartialResult,
            Verdict::Human,
            format!(
                "the worker's final artifact is {} (the generator {}); the diff may be incomplete",
                if packet.partial {
                    "marked partial"
                } else {
                    "from a generator that did not exit 0"
                },
                exit_in_words(&packet.exit)
            ),
        ));
    }
    if packet.sandbox == "none" {
        out.push(Reason::new(
            ReasonCode::Unsandboxed,
            Verdict::Human,
            "the generator ran without a sandbox (--unsafe-no-sandbox)",
        ));
    }
    if !packet.limits_hit.is_empty() {
        let list: Vec<String> = packet
            .limits_hit
            .iter()
            .take(20)
            .map(|l| {
                // An entry this version does not list (a newer worker's) still counts as a
                // hit, said as unknown (docs/FORMATS.md, "Closed sets").
                if airlock_core::format::LIMITS_HIT_VALUES.contains(&l.as_str()) {
                    text::line(l)
                } else {
                    format!(
                        "{} (unknown to airlock {})",
                        text::line(l),
                        airlock_core::VERSION
                    )
                }
            })
            .collect();
        // Out of disk is said in words: it is the one limit a reviewer cannot guess from the
        // diff (the worker may have kept only an empty patch to drop anything at all).
        let disk = if packet.limits_hit.iter().any(|l| l == "disk") {
            format!(
                "the worker ran out of disk (limit {} bytes, or a full disk): the diff may be cut short or empty; ",
                record.limits.max_disk_bytes
            )
        } else {
            String::new()
        };
        out.push(Reason::new(
            ReasonCode::WorkerLimitHit,
            Verdict::Human,
            format!("{disk}the worker hit limit(s): {}", list.join(", ")),
        ));
    }
    let reported = packet.model_reported.as_str();
    let asked = record.model_requested.as_str();
    if reported != MODEL_UNREPORTED
        && asked != MODEL_UNSPECIFIED
        && !airlock_core::model::answers(asked, reported)
    {
        out.push(Reason::new(
            ReasonCode::ModelMismatch,
            Verdict::Human,
            format!(
                "model requested {}, reported {}",
                text::line(&record.model_requested),
                text::line(reported)
            ),
        ));
    }
    let unknown: Vec<String> = packet
        .refused
        .iter()
        .filter(|r| !REFUSED_REASONS.contains(&r.reason.as_str()))
        .take(10)
        .map(|r| format!("{} ({})", text::line(&r.path), text::line(&r.reason)))
        .collect();
    if !unknown.is_empty() {
        // `refused[].reason` is a closed set: a reason this version does not list is a worker
        // saying something the gate cannot interpret, so a person reads it.
        let mut r = Reason::new(
            ReasonCode::WorkerRefusedPaths,
            Verdict::Human,
            format!(
                "path(s) left out of the diff for a reason this version does not list: {}",
                unknown.join(", ")
            ),
        );
        r.rule = Some(RULE_REFUSED_REASON.to_owned());
        out.push(r);
    }
    if !packet.refused.is_empty() {
        let list: Vec<String> = packet
            .refused
            .iter()
            .take(10)
            .map(|r| format!("{} ({})", text::line(&r.path), text::line(&r.reason)))
            .collect();
        out.push(Reason::new(
            ReasonCode::WorkerRefusedPaths,
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
            ReasonCode::NoChange,
            Verdict::Reject,
            "the generator changed no file, so there is nothing to review (the generator log's tail is below when the artifact has one)",
        )
    })
}

#[cfg(test)]
#[path = "checks_tests.rs"]
mod tests;
