//! The gate's result as data ([`GateReport`]) and its renderings: human text on stdout and
//! `--json` here; the review page for `--md` / `--html` (pull-request body, HTML file) in
//! [`page`] and [`html`], filled by `show.rs`.
//!
//! Guards against: worker-controlled text (model names, refused paths, dependency names)
//! reaching a terminal or a pull request as anything but inert text: every such string is
//! shown through [`airlock_core::text`] (invisible, bidi and control characters marked,
//! length capped, Markdown code spans and table cells no text can close or split).
//! Does not check: anything; the steps listed in `gate/run.rs` do.

pub mod comments;
pub mod html;
pub mod inherited;
pub mod mask;
pub mod page;
pub mod sarif;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use airlock_core::digest::Sha256Digest;
use airlock_core::jobid::{rfc3339_utc, JobId};
use airlock_core::text;
use anyhow::Result;
use serde::Serialize;

use airlock_core::format::EgressAttempt;

use crate::classify::Bucket;
use crate::gate::deps::NewDependency;
use crate::gate::policy::Verdict;
use crate::reasons::ReasonCode;
use crate::run_account::RunAccount;
use comments::GatedComment;

/// Version of the gate recorded in the ledger, the report and the review commit.
pub const GATE_VERSION: &str = concat!("airlock-gate ", env!("CARGO_PKG_VERSION"));

/// One reason contributing to the decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Reason {
    /// Stable kebab-case code.
    pub code: ReasonCode,
    /// What this reason asks for; the decision is the strictest over all reasons.
    pub verdict: Verdict,
    /// One line for people: what was seen and why it matters. Never a secret value.
    pub detail: String,
    /// The path concerned, when there is one.
    pub path: Option<String>,
    /// The rule id behind the reason, when there is one: a tar or diff rule (`tar.link`,
    /// `diff.git-dir`), a scanner rule, a classifier rule (`ci.github-workflow`).
    pub rule: Option<String>,
}

impl Reason {
    /// A reason without path or rule.
    pub fn new(code: ReasonCode, verdict: Verdict, detail: impl Into<String>) -> Reason {
        Reason {
            code,
            verdict,
            detail: detail.into(),
            path: None,
            rule: None,
        }
    }

    /// Sets the path.
    pub fn at(mut self, path: &str) -> Reason {
        self.path = Some(path.to_owned());
        self
    }

    /// Sets the rule id.
    pub fn rule(mut self, rule: impl Into<String>) -> Reason {
        self.rule = Some(rule.into());
        self
    }
}

/// One changed file as the gate saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChangedFile {
    /// Path in the repository.
    pub path: String,
    /// `added`, `deleted`, `modified` or `mode-change`.
    pub kind: &'static str,
    /// The classifier's bucket.
    pub bucket: Bucket,
    /// The classifier rule that decided the bucket.
    pub class_rule: &'static str,
    /// The policy's verdict for this path.
    pub verdict: Verdict,
    /// `+` lines.
    pub lines_added: u64,
    /// `-` lines.
    pub lines_removed: u64,
    /// Mode after the change when the patch sets one (`100644`, `100755`).
    pub new_mode: Option<&'static str>,
}

/// One row of the blast-radius table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlastRow {
    /// The bucket.
    pub bucket: Bucket,
    /// Files changed in it.
    pub files: u64,
    /// `+` lines.
    pub lines_added: u64,
    /// `-` lines.
    pub lines_removed: u64,
    /// Strictest path verdict in it.
    pub verdict: Verdict,
}

/// The generation bill of materials: what was asked, what came back, what judged it.
/// Fields are `None` when the gate stopped before learning them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Bom {
    /// SHA-256 of the prompt (from the signed job record).
    pub prompt_sha256: Option<Sha256Digest>,
    /// Model asked for (job record).
    pub model_requested: Option<String>,
    /// Model the generator reported (packet: a claim).
    pub model_reported: Option<String>,
    /// The packed revision (job record).
    pub revision: Option<String>,
    /// Bundle digest (job record).
    pub bundle_sha256: Option<Sha256Digest>,
    /// Artifact digest (verified against the job key's statement).
    pub artifact_sha256: Option<Sha256Digest>,
    /// `packet.json` digest.
    pub packet_sha256: Option<Sha256Digest>,
    /// `patch.diff` digest (recomputed by the gate).
    pub diff_sha256: Option<Sha256Digest>,
    /// Digest of the policy's canonical form.
    pub policy_sha256: Option<Sha256Digest>,
    /// [`GATE_VERSION`].
    pub gate_version: String,
    /// Sandbox the worker reports (packet: a claim).
    pub sandbox: Option<String>,
    /// Worker version (packet: a claim).
    pub worker_version: Option<String>,
    /// The worker's run id.
    pub run_id: Option<String>,
    /// When the artifact landed, unix seconds by the store's clock.
    pub landed_at: Option<u64>,
    /// Tokens in and out reported by the generator (claims).
    pub tokens: Option<(u64, u64)>,
}

/// Size of the change as the gate parsed it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ChangeStats {
    /// Files changed.
    pub files_changed: u64,
    /// `+` lines.
    pub lines_added: u64,
    /// `-` lines.
    pub lines_removed: u64,
}

/// The review branch written by `--review-branch`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReviewBranch {
    /// `airlock/<job>`.
    pub name: String,
    /// The commit it points at.
    pub commit: String,
    /// The packed revision (its parent).
    pub parent: String,
}

/// Everything the gate concluded about one job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GateReport {
    /// The job.
    pub job: JobId,
    /// The strictest verdict over `reasons` (`queue` when there are none).
    pub decision: Verdict,
    /// Every reason, in the order the checks ran.
    pub reasons: Vec<Reason>,
    /// Changed paths per bucket.
    pub buckets: BTreeMap<Bucket, Vec<String>>,
    /// Per-bucket counts.
    pub blast_radius: Vec<BlastRow>,
    /// Every changed file.
    pub files: Vec<ChangedFile>,
    /// Size of the change.
    pub stats: ChangeStats,
    /// Dependencies added (or changed) by manifest edits.
    pub new_dependencies: Vec<NewDependency>,
    /// The generation bill of materials.
    pub bom: Bom,
    /// The review branch, when one was written.
    pub review_branch: Option<ReviewBranch>,
    /// Policy rules that matched nothing (stale exceptions), and similar notes.
    pub warnings: Vec<String>,
    /// The egress log from the packet: every attempt through the worker's proxy (a claim).
    pub egress: Vec<EgressAttempt>,
    /// For a run that failed (non-zero exit, timeout, signal, or no change): the exit in
    /// words and the tail of `generator.log`; `null` otherwise.
    pub failed_run: Option<RunAccount>,
    /// The review comments that passed the gate (`gate/comments.rs`), in file order.
    pub comments: Vec<GatedComment>,
    /// For a re-dispatched job: the changes its worker inherited and from which job
    /// (`gate/inherit.rs`); `null` for a fresh job.
    pub inherited: Option<inherited::Inherited>,
}

impl GateReport {
    /// An empty report for `job` (decision `queue` until reasons are added).
    pub fn new(job: &JobId) -> GateReport {
        GateReport {
            job: job.clone(),
            decision: Verdict::Queue,
            reasons: Vec::new(),
            buckets: BTreeMap::new(),
            blast_radius: Vec::new(),
            files: Vec::new(),
            stats: ChangeStats::default(),
            new_dependencies: Vec::new(),
            bom: Bom {
                gate_version: GATE_VERSION.to_owned(),
                ..Bom::default()
            },
            review_branch: None,
            warnings: Vec::new(),
            egress: Vec::new(),
            failed_run: None,
            comments: Vec::new(),
            inherited: None,
        }
    }

    /// Adds a reason.
    pub fn push(&mut self, reason: Reason) {
        self.reasons.push(reason);
    }

    /// Adds reasons, in order.
    pub fn extend(&mut self, reasons: impl IntoIterator<Item = Reason>) {
        self.reasons.extend(reasons);
    }

    /// Recomputes the decision and the per-bucket views from `reasons` and `files`.
    pub fn conclude(&mut self) {
        self.decision = decide(&self.reasons);
        self.buckets.clear();
        let mut rows: BTreeMap<Bucket, BlastRow> = BTreeMap::new();
        for f in &self.files {
            self.buckets
                .entry(f.bucket)
                .or_default()
                .push(f.path.clone());
            let row = rows.entry(f.bucket).or_insert(BlastRow {
                bucket: f.bucket,
                files: 0,
                lines_added: 0,
                lines_removed: 0,
                verdict: Verdict::Queue,
            });
            row.files += 1;
            row.lines_added += f.lines_added;
            row.lines_removed += f.lines_removed;
            row.verdict = row.verdict.max(f.verdict);
        }
        self.blast_radius = rows.into_values().collect();
    }

    /// The first reason with the strictest verdict (what the ledger names for a reject).
    pub fn first_decisive(&self) -> Option<&Reason> {
        self.reasons.iter().find(|r| r.verdict == self.decision)
    }
}

/// The decision over a set of reasons: the strictest verdict, `queue` when there are none.
pub fn decide(reasons: &[Reason]) -> Verdict {
    reasons
        .iter()
        .map(|r| r.verdict)
        .max()
        .unwrap_or(Verdict::Queue)
}

fn opt_digest(d: &Option<Sha256Digest>) -> String {
    d.map_or_else(|| "-".to_owned(), |d| format!("sha256:{d}"))
}

fn opt_text(s: &Option<String>) -> String {
    s.as_deref().map_or_else(|| "-".to_owned(), text::line)
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Queue => "QUEUE",
        Verdict::Human => "HUMAN",
        Verdict::Reject => "REJECT",
    }
}

/// Exit code the CLI maps a decision to.
pub fn exit_code(v: Verdict) -> u8 {
    match v {
        Verdict::Queue => 0,
        Verdict::Human => 3,
        Verdict::Reject => 4,
    }
}

pub(crate) fn bom_rows(b: &Bom) -> Vec<(&'static str, String)> {
    vec![
        ("revision", opt_text(&b.revision)),
        ("prompt", opt_digest(&b.prompt_sha256)),
        ("model requested", opt_text(&b.model_requested)),
        ("model reported", opt_text(&b.model_reported)),
        ("bundle", opt_digest(&b.bundle_sha256)),
        ("artifact", opt_digest(&b.artifact_sha256)),
        ("packet", opt_digest(&b.packet_sha256)),
        ("diff", opt_digest(&b.diff_sha256)),
        ("policy", opt_digest(&b.policy_sha256)),
        ("gate", text::line(&b.gate_version)),
        ("sandbox", opt_text(&b.sandbox)),
        ("worker", opt_text(&b.worker_version)),
        ("run", opt_text(&b.run_id)),
        (
            "landed",
            b.landed_at.map_or_else(|| "-".to_owned(), rfc3339_utc),
        ),
        (
            "tokens",
            b.tokens
                .map_or_else(|| "-".to_owned(), |(i, o)| format!("{i} in, {o} out")),
        ),
    ]
}

/// Reasons worth listing one by one: everything except per-path `queue` reasons, which are
/// summarised by the blast-radius table.
fn notable(report: &GateReport) -> impl Iterator<Item = &Reason> {
    report
        .reasons
        .iter()
        .filter(|r| r.verdict != Verdict::Queue || r.path.is_none())
}

fn reason_line(r: &Reason) -> String {
    let mut line = format!("{:<7} {}", r.verdict.as_str(), r.code);
    if let Some(p) = &r.path {
        let _ = write!(line, "  {}", text::line(p));
    }
    let _ = write!(line, ": {}", text::terminal(&r.detail, 400));
    if let Some(rule) = &r.rule {
        if !r.detail.contains(rule.as_str()) {
            let _ = write!(line, " [{}]", text::line(rule));
        }
    }
    line
}

/// The line about queued paths left out of the reasons: "more" only when reasons were listed
/// above it.
fn quiet_paths_line(quiet: usize, nothing_listed: bool) -> String {
    if nothing_listed {
        format!("reasons: none to look at; {quiet} path(s) in queue buckets (see blast radius)")
    } else {
        format!("  ({quiet} more path(s) in queue buckets; see blast radius)")
    }
}

/// The human rendering.
pub fn render_text(report: &GateReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "job {}: {} (exit {})",
        report.job,
        verdict_word(report.decision),
        exit_code(report.decision)
    );
    let st = report.stats;
    let _ = writeln!(
        s,
        "  change    {} files, +{} -{}",
        st.files_changed, st.lines_added, st.lines_removed
    );
    s.push_str(&inherited::render_text(report.inherited.as_ref()));
    let listed: Vec<&Reason> = notable(report).collect();
    if !listed.is_empty() {
        let _ = writeln!(s, "reasons:");
        for r in &listed {
            let _ = writeln!(s, "  {}", reason_line(r));
        }
    }
    let quiet = report.reasons.len() - listed.len();
    if quiet > 0 {
        let _ = writeln!(s, "{}", quiet_paths_line(quiet, listed.is_empty()));
    }
    s.push_str(&comments::render_text(&report.comments));
    if !report.blast_radius.is_empty() {
        let _ = writeln!(s, "blast radius:");
        let _ = writeln!(
            s,
            "  {:<11} {:>5} {:>8} {:>8}  verdict",
            "bucket", "files", "+lines", "-lines"
        );
        for row in &report.blast_radius {
            let _ = writeln!(
                s,
                "  {:<11} {:>5} {:>8} {:>8}  {}",
                row.bucket.as_str(),
                row.files,
                row.lines_added,
                row.lines_removed,
                row.verdict
            );
        }
    }
    if !report.new_dependencies.is_empty() {
        let _ = writeln!(s, "new dependencies:");
        for d in &report.new_dependencies {
            let _ = writeln!(
                s,
                "  {} {} {} {} = {}  ({})",
                d.ecosystem,
                d.change.as_str(),
                text::line(&d.section),
                text::line(&d.name),
                text::line(&d.spec),
                text::line(&d.manifest)
            );
        }
    }
    let _ = writeln!(s, "bill of materials:");
    for (k, v) in bom_rows(&report.bom) {
        let _ = writeln!(s, "  {k:<16} {v}");
    }
    if !report.egress.is_empty() {
        let _ = writeln!(s, "egress (worker's proxy log):");
        for a in &report.egress {
            let _ = writeln!(s, "  {}", egress_line(a));
        }
    }
    if let Some(run) = &report.failed_run {
        let _ = writeln!(s, "generator: {}", run.exit);
        if !run.log_tail.is_empty() {
            let _ = writeln!(s, "generator.log (last {} lines):", run.log_tail.len());
            for l in &run.log_tail {
                let _ = writeln!(s, "  | {l}");
            }
        }
    }
    if let Some(b) = &report.review_branch {
        let _ = writeln!(s, "review branch: {} at {}", b.name, b.commit);
    }
    for w in &report.warnings {
        let _ = writeln!(s, "warning: {}", text::terminal(w, 400));
    }
    s
}

/// One egress attempt, inert, for the text report.
fn egress_line(a: &EgressAttempt) -> String {
    format!(
        "{} {}{}, {} B up, {} B down",
        text::line(&a.destination),
        if a.allowed { "allowed" } else { "refused" },
        a.reason
            .as_deref()
            .map_or_else(String::new, |r| format!(" ({})", text::line(r))),
        a.bytes_up,
        a.bytes_down
    )
}

/// Prints the report: pretty JSON on stdout with `json`, else the human text.
pub fn print(report: &GateReport, json: bool) -> Result<()> {
    if json {
        crate::output::print_json(report)?;
    } else {
        print!("{}", render_text(report));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> JobId {
        JobId::parse("20260101T000000Z-00112233445566778899").unwrap()
    }

    #[test]
    fn decision_is_the_strictest_reason_and_queue_when_none() {
        assert_eq!(decide(&[]), Verdict::Queue);
        let q = Reason::new(ReasonCode::SrcPathChanged, Verdict::Queue, "x");
        let h = Reason::new(ReasonCode::CiPathChanged, Verdict::Human, "x");
        let r = Reason::new(ReasonCode::ApplyFailed, Verdict::Reject, "x");
        assert_eq!(decide(std::slice::from_ref(&q)), Verdict::Queue);
        assert_eq!(decide(&[q.clone(), h.clone()]), Verdict::Human);
        assert_eq!(decide(&[h.clone(), r.clone(), q.clone()]), Verdict::Reject);
        assert_eq!(decide(&[r, h, q]), Verdict::Reject);
    }

    #[test]
    fn text_report_says_the_verdict_and_its_exit_code() {
        let mut r = GateReport::new(&job());
        r.push(
            Reason::new(ReasonCode::CiPathChanged, Verdict::Human, "ci path")
                .at(".github/workflows/ci.yml"),
        );
        r.conclude();
        assert_eq!(r.decision, Verdict::Human);
        let text = render_text(&r);
        assert!(text.contains("HUMAN (exit 3)"), "{text}");
    }

    #[test]
    fn json_report_names_buckets_in_kebab_case() {
        let mut r = GateReport::new(&job());
        r.files.push(ChangedFile {
            path: "src/a.rs".into(),
            kind: "added",
            bucket: Bucket::Src,
            class_rule: "src.rust",
            verdict: Verdict::Queue,
            lines_added: 1,
            lines_removed: 0,
            new_mode: Some("100644"),
        });
        r.conclude();
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["decision"], "queue");
        assert_eq!(v["buckets"]["src"][0], "src/a.rs");
        assert_eq!(v["bom"]["gate_version"], GATE_VERSION);
    }

    #[test]
    fn queued_paths_are_never_called_more_when_nothing_is_listed_above() {
        let mut only_queue = GateReport::new(&job());
        only_queue.push(
            Reason::new(ReasonCode::SrcPathChanged, Verdict::Queue, "src path").at("src/a.rs"),
        );
        let text = render_text(&only_queue);
        assert!(!text.contains("more path(s)"), "{text}");
        assert!(
            text.contains("reasons: none to look at; 1 path(s) in queue buckets"),
            "{text}"
        );
        let mut both = GateReport::new(&job());
        both.push(Reason::new(ReasonCode::CiPathChanged, Verdict::Human, "ci").at(".ci/run"));
        both.push(
            Reason::new(ReasonCode::SrcPathChanged, Verdict::Queue, "src path").at("src/a.rs"),
        );
        let text = render_text(&both);
        assert!(text.contains("reasons:\n"), "{text}");
        assert!(text.contains("(1 more path(s) in queue buckets"), "{text}");
    }
}
