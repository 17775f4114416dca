//! Step 11b: the job's review comments (`comments.jsonl`), checked like code, and the verdict
//! of a review job.
//!
//! Each comment must parse under the format's rules (`airlock_core::format::parse_comments`:
//! path rules, sizes, counts, closed severities) and anchor to an existing path and line range:
//! of the changed file after the patch when a change job changed that path, else of the packed
//! revision (a path the bundle's listing holds, read from the repository at the revision). Its
//! body and suggestion go through the secret scanner.
//!
//! Guards against: comments on paths outside the packed tree (`..`, absolute, `.git/`, not
//! packed), on lines past the end of the file, oversized or too many comments (each refused by
//! a `comment-refused` reason naming it, verdict `human`; the rest of the review survives), a
//! secret in a body or suggestion (`secret-in-worker-text`, reject; the body is withheld from
//! every output, its value never shown), and a review job that changed files
//! (`review-edited-files`, reject, whether the diff carries the edits or the worker left them
//! out). A review job with comments is judged by them, not as `no-change`: `review-comments`
//! (queue), and `review-error` (human) when a comment has severity `error`.
//! Does not check: how comments are shown; every rendering goes through `airlock_core::text`.

use std::collections::{BTreeMap, BTreeSet};

use airlock_core::format::{parse_comments, Comment, JobKind, Severity};

use super::apply::AppliedFile;
use super::policy::{ReviewVerdicts, Verdict};
use crate::classify::tree::Listing;
use crate::reasons::ReasonCode;
use crate::report::comments::{GatedComment, WITHHELD_BODY};
use crate::report::{GateReport, Reason};

/// Comment refusals listed one by one; the rest are counted in one more reason.
pub const MAX_REFUSED_REASONS: usize = 50;
/// Bytes of a commented file the gate reads to count its lines (at most eight are held at
/// once).
pub const MAX_ANCHOR_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Reads files by path: their bytes, or `None` (not a blob, too large, unreadable).
pub type ReadFiles<'a> = dyn Fn(&[&str]) -> Vec<Option<Vec<u8>>> + 'a;

/// The files comments may anchor to: the packed listing, the repository at the revision, and
/// (in a change job) both sides of every changed file.
pub struct Anchors<'a> {
    /// The packed tree's listing.
    pub listing: &'a Listing,
    /// Reads packed files (`None`: unreadable): the repository at the revision.
    pub read: &'a ReadFiles<'a>,
    /// The changed files, after the patch.
    pub changed: Option<&'a BTreeMap<String, AppliedFile>>,
}

/// What the job is and how its comments are judged.
#[derive(Clone, Copy, Debug)]
pub struct Judging {
    /// The job's kind (from the signed job record).
    pub kind: JobKind,
    /// Whether the artifact's diff changes nothing.
    pub patch_empty: bool,
    /// The policy's verdicts (`[review]`).
    pub verdicts: ReviewVerdicts,
}

/// Checks `member` (the artifact's `comments.jsonl`, if any) and adds the comments and the
/// reasons to `report`.
pub fn check(
    member: Option<&[u8]>,
    packet: &airlock_core::format::Packet,
    how: Judging,
    anchors: Option<&Anchors<'_>>,
    scanner: &airlock_scan::Scanner,
    report: &mut GateReport,
) {
    let Judging {
        kind,
        patch_empty,
        verdicts,
    } = how;
    let mut reasons = Vec::new();
    if kind == JobKind::Review && (!patch_empty || packet.review_edits > 0) {
        let n = report.stats.files_changed.max(packet.review_edits);
        reasons.push(Reason::new(
            ReasonCode::ReviewEditedFiles,
            Verdict::Reject,
            format!("a review job may not change files: its generator changed {n} file(s)"),
        ));
    }
    let parsed = parse_comments(member.unwrap_or_default());
    let mut refused: Vec<Reason> = parsed
        .refused
        .iter()
        .map(|e| refusal(verdicts, e.to_string(), e.rule, None))
        .collect();
    if packet.comments_refused > 0 {
        refused.push(refusal(
            verdicts,
            format!(
                "the worker refused {} comment(s) (malformed, oversized, past the count cap, or a comment file that is not a regular file); see generator.log",
                packet.comments_refused
            ),
            "comments.worker-refused",
            None,
        ));
    }
    let lines = line_counts(&parsed.kept, anchors);
    let mut kept = Vec::new();
    for (index, c) in parsed.kept {
        let (start, end) = c.range();
        match anchor(&c, end, &lines, anchors) {
            Ok(anchored_to) => kept.push(gated(index, c, start, end, anchored_to)),
            Err((rule, why)) => refused.push(refusal(
                verdicts,
                format!("comments.jsonl:{index}: lines {start}..{end}: {why} ({rule})"),
                rule,
                Some(&c.path),
            )),
        }
    }
    let secrets = scan(scanner, &mut kept);
    summarise(kind, &kept, verdicts, &mut reasons);
    let more = refused.len().saturating_sub(MAX_REFUSED_REASONS);
    refused.truncate(MAX_REFUSED_REASONS);
    report.extend(reasons);
    report.extend(refused);
    if more > 0 {
        report.push(refusal(
            verdicts,
            format!("{more} more comment(s) refused"),
            "comments.more",
            None,
        ));
    }
    report.extend(secrets);
    report.comments = kept;
}

/// What the gate keeps of the comments in the job directory, for `airlock show`.
pub const KEPT_FILE: &str = "gated-comments.json";
/// Largest kept file read back.
const MAX_KEPT_BYTES: u64 = 64 * 1024 * 1024;

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Kept {
    artifact_sha256: airlock_core::digest::Sha256Digest,
    comments: Vec<GatedComment>,
}

/// Writes the gated comments of the artifact `artifact_sha256` into `job_dir` (a temporary
/// file renamed over the old one), so that `show` lists what the gate judged; without
/// comments, nothing is written (and an older file goes).
pub fn keep(
    job_dir: &std::path::Path,
    artifact_sha256: airlock_core::digest::Sha256Digest,
    comments: &[GatedComment],
) -> anyhow::Result<()> {
    if comments.is_empty() {
        return match std::fs::remove_file(job_dir.join(KEPT_FILE)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        };
    }
    let kept = Kept {
        artifact_sha256,
        comments: comments.to_vec(),
    };
    let tmp = job_dir.join(format!("{KEPT_FILE}.tmp"));
    std::fs::write(&tmp, serde_json::to_vec(&kept)?)?;
    std::fs::rename(&tmp, job_dir.join(KEPT_FILE))?;
    Ok(())
}

/// The comments the gate kept for the artifact `judged` (none when the file is missing, is
/// for another artifact, or does not parse).
pub fn kept(
    job_dir: &std::path::Path,
    judged: airlock_core::digest::Sha256Digest,
) -> Vec<GatedComment> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    let read = std::fs::File::open(job_dir.join(KEPT_FILE))
        .and_then(|f| f.take(MAX_KEPT_BYTES).read_to_end(&mut bytes));
    match (read, serde_json::from_slice::<Kept>(&bytes)) {
        (Ok(_), Ok(k)) if k.artifact_sha256 == judged => k.comments,
        _ => Vec::new(),
    }
}

/// Removes `no-change` from a review job that has comments: it is judged by them.
pub fn review_is_not_no_change(kind: JobKind, report: &mut GateReport) {
    if kind == JobKind::Review && !report.comments.is_empty() {
        report.reasons.retain(|r| r.code != ReasonCode::NoChange);
    }
}

fn refusal(v: ReviewVerdicts, detail: String, rule: &str, path: Option<&str>) -> Reason {
    let r = Reason::new(ReasonCode::CommentRefused, v.refused, detail).rule(rule);
    match path {
        Some(p) => r.at(p),
        None => r,
    }
}

fn gated(index: usize, c: Comment, start: u64, end: u64, to: &'static str) -> GatedComment {
    GatedComment {
        index,
        path: c.path,
        start_line: start,
        end_line: end,
        severity: c.severity,
        body: c.body,
        suggestion: c.suggestion,
        anchored_to: to.to_owned(),
        withheld: false,
    }
}

/// Lines of every packed file a comment names that no change replaced (one batched read).
fn line_counts(
    comments: &[(usize, Comment)],
    anchors: Option<&Anchors<'_>>,
) -> BTreeMap<String, Option<u64>> {
    let Some(a) = anchors else {
        return BTreeMap::new();
    };
    let wanted: BTreeSet<&str> = comments
        .iter()
        .map(|(_, c)| c.path.as_str())
        .filter(|p| a.changed.is_none_or(|ch| !ch.contains_key(*p)))
        .filter(|p| a.listing.get(p).is_some())
        .collect();
    let wanted: Vec<&str> = wanted.into_iter().collect();
    // A few files at a time, each dropped once counted: at most READ_BATCH files of
    // MAX_ANCHOR_FILE_BYTES are held, whatever the comments name.
    let mut out = BTreeMap::new();
    for batch in wanted.chunks(READ_BATCH) {
        for (p, bytes) in batch.iter().zip((a.read)(batch)) {
            out.insert((*p).to_owned(), bytes.map(|b| count_lines(&b)));
        }
    }
    out
}

/// Files read at once to count their lines.
const READ_BATCH: usize = 8;

/// Lines of a file: `\n`-terminated lines, plus a last one without.
pub fn count_lines(bytes: &[u8]) -> u64 {
    let n = memchr::memchr_iter(b'\n', bytes).count() as u64;
    n + u64::from(bytes.last().is_some_and(|b| *b != b'\n'))
}

/// Where the comment anchors, or `(rule, why)`.
fn anchor(
    c: &Comment,
    end: u64,
    lines: &BTreeMap<String, Option<u64>>,
    anchors: Option<&Anchors<'_>>,
) -> Result<&'static str, (&'static str, String)> {
    let Some(a) = anchors else {
        return Err((
            "comments.unanchored",
            "the gate could not read the packed revision".into(),
        ));
    };
    let (count, to) = match a.changed.and_then(|ch| ch.get(&c.path)) {
        Some(f) => match &f.new {
            Some(after) => (count_lines(after), "change"),
            None => return Err(("comments.unanchored", "the change deletes this file".into())),
        },
        None => match lines.get(&c.path) {
            Some(Some(n)) => (*n, "revision"),
            Some(None) => {
                return Err((
                    "comments.unanchored",
                    "the packed file could not be read at the revision".into(),
                ))
            }
            None => {
                return Err((
                    "comments.unanchored",
                    "no such file in the packed revision".into(),
                ))
            }
        },
    };
    if end > count {
        return Err((
            "comments.past-end",
            format!("past the end of the file ({count} line(s))"),
        ));
    }
    Ok(to)
}

/// Scans bodies and suggestions; withholds those with a finding. One reject per finding,
/// `comments.jsonl:N (path): rule`, never the value.
fn scan(scanner: &airlock_scan::Scanner, kept: &mut [GatedComment]) -> Vec<Reason> {
    let mut out = Vec::new();
    for c in kept.iter_mut() {
        let mut rules = BTreeSet::new();
        for text in std::iter::once(&c.body).chain(c.suggestion.as_ref()) {
            for f in scanner.scan("comments.jsonl", text.as_bytes()) {
                rules.insert(f.rule_id.clone());
            }
        }
        if rules.is_empty() {
            continue;
        }
        c.body = WITHHELD_BODY.to_owned();
        c.suggestion = None;
        c.withheld = true;
        for rule in rules {
            out.push(
                Reason::new(
                    ReasonCode::SecretInWorkerText,
                    Verdict::Reject,
                    format!(
                        "comments.jsonl:{}: a comment's body or suggestion: {rule}",
                        c.index
                    ),
                )
                .at(&c.path)
                .rule(rule),
            );
        }
    }
    out
}

/// `review-comments` (queue) with the counts, and for a review job `review-error` (human)
/// when a comment has severity `error`.
fn summarise(kind: JobKind, kept: &[GatedComment], v: ReviewVerdicts, reasons: &mut Vec<Reason>) {
    if kept.is_empty() {
        return;
    }
    let count = |s: Severity| kept.iter().filter(|c| c.severity == s).count();
    let (e, w, n) = (
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Note),
    );
    reasons.push(Reason::new(
        ReasonCode::ReviewComments,
        v.comments,
        format!(
            "{} comment(s): {e} error, {w} warning, {n} note",
            kept.len()
        ),
    ));
    if kind == JobKind::Review && e > 0 {
        reasons.push(Reason::new(
            ReasonCode::ReviewError,
            v.error,
            format!("{e} comment(s) of severity error: a person reads the review"),
        ));
    }
}

#[cfg(test)]
#[path = "comments_tests.rs"]
mod tests;
