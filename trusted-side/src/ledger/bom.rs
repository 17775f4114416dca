//! The generation bill of materials of one job, assembled from its verified ledger entries:
//! what was asked (prompt, model, revision, bundle), what came back (artifact, packet, model
//! reported), what the gate decided and why, and what was refused.
//!
//! Guards against: terminal injection when printing. Text recorded in the ledger can come
//! from the worker (model reported, run id, reject details quoting member names); the
//! human form escapes control and bidirectional-override characters. `--json` output is
//! plain JSON (escaped by the encoder).

use std::fmt;

use airlock_core::digest::Sha256Digest;
use airlock_core::jobid::{rfc3339_utc, JobId};
use airlock_core::text;
use serde::Serialize;

use super::entry::{Event, GatedFile, LedgerEntry};
use super::VerifyReport;

/// A `submit` entry's fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubmitRecord {
    /// SHA-256 of the prompt.
    pub prompt_sha256: Sha256Digest,
    /// The prompt as packed.
    pub prompt: String,
    /// The model asked for.
    pub model_requested: String,
    /// The packed revision.
    pub revision: String,
    /// SHA-256 of `bundle.tar.gz`.
    pub bundle_sha256: Sha256Digest,
    /// SHA-256 of `request.json`.
    pub request_sha256: Sha256Digest,
    /// Token expiry, unix seconds.
    pub expires_at: u64,
    /// Fingerprint of the job's scoped model key, if one was minted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_key_fingerprint: Option<String>,
    /// The job this one dispatched again, if it is a re-dispatch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redispatch_of: Option<airlock_core::jobid::JobId>,
    /// The checkpoint it resumed from (job, inherited patch digest and size), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<airlock_core::format::ResumedFrom>,
}

/// A `fetch` entry's fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FetchRecord {
    /// SHA-256 of `artifact.tar.gz`.
    pub artifact_sha256: Sha256Digest,
    /// SHA-256 of `packet.json`.
    pub packet_sha256: Sha256Digest,
    /// The model the worker reported.
    pub model_reported: String,
    /// Whether the artifact was partial.
    pub partial: bool,
    /// The worker's run id.
    pub run_id: String,
}

/// A `gate` entry's fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateRecord {
    /// `queue`, `human` or `reject`.
    pub decision: String,
    /// The reasons.
    pub reasons: Vec<String>,
    /// SHA-256 of the policy's canonical form.
    pub policy_sha256: Sha256Digest,
    /// The gate's version.
    pub gate_version: String,
    /// SHA-256 of the gated artifact.
    pub artifact_sha256: Sha256Digest,
    /// SHA-256 of `patch.diff`.
    pub diff_sha256: Sha256Digest,
    /// Each changed file as the gate classified it (empty in older entries).
    pub files: Vec<GatedFile>,
}

/// A `reject` entry's fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RejectRecord {
    /// `fetch` or `gate`.
    pub stage: String,
    /// The refusal's rule id.
    pub reason_code: String,
    /// The refusal message.
    pub detail: String,
}

/// An `approve` or `decline` entry's fields: a person's decision on a gated artifact.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReviewRecord {
    /// `approve` or `decline`.
    pub decision: &'static str,
    /// Who decided.
    pub by: String,
    /// Their note.
    pub note: String,
    /// Key id of the trusted key that signed the entry.
    pub trusted_key_id: String,
    /// The artifact decided on.
    pub artifact_sha256: Sha256Digest,
    /// The gate entry decided on.
    pub gate_entry: u64,
}

/// One event with its place in the ledger.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stamped<T> {
    /// Entry number.
    pub seq: u64,
    /// The entry's `at`, unix seconds.
    pub at: u64,
    /// The event's fields.
    #[serde(flatten)]
    pub event: T,
}

/// What the ledger says about one job. Built only from a ledger that verified in full.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BillOfMaterials {
    /// The job.
    pub job: JobId,
    /// The submit entry (the first, if there were several: see `notes`).
    pub submit: Option<Stamped<SubmitRecord>>,
    /// Every fetch, in ledger order (the first artifact wins; later ones are refused).
    pub fetches: Vec<Stamped<FetchRecord>>,
    /// Every gate decision, in ledger order; the last is the current one.
    pub gates: Vec<Stamped<GateRecord>>,
    /// Every refused artifact, in ledger order.
    pub rejects: Vec<Stamped<RejectRecord>>,
    /// Every approve or decline, in ledger order; the last is the current one.
    pub reviews: Vec<Stamped<ReviewRecord>>,
    /// The current decision: the last gate's, if any.
    pub decision: Option<String>,
    /// The entry numbers about this job.
    pub entries: Vec<u64>,
    /// Anomalies worth a look (e.g. two submits for one job).
    pub notes: Vec<String>,
    /// The verification the bill was built from (entries, head).
    pub ledger: VerifyReport,
}

impl BillOfMaterials {
    pub(super) fn from_entries(
        job: JobId,
        entries: Vec<(u64, LedgerEntry)>,
        ledger: VerifyReport,
    ) -> BillOfMaterials {
        let mut bom = BillOfMaterials {
            job,
            submit: None,
            fetches: Vec::new(),
            gates: Vec::new(),
            rejects: Vec::new(),
            reviews: Vec::new(),
            decision: None,
            entries: entries.iter().map(|(s, _)| *s).collect(),
            notes: Vec::new(),
            ledger,
        };
        for (seq, entry) in entries {
            let at = entry.at;
            let kind = entry.event.kind();
            match entry.event {
                Event::Submit {
                    prompt_sha256,
                    prompt,
                    model_requested,
                    bundle_sha256,
                    request_sha256,
                    revision,
                    expires_at,
                    model_key_fingerprint,
                    redispatch_of,
                    resumed_from,
                } => {
                    if let Some(first) = &bom.submit {
                        bom.notes.push(format!(
                            "job submitted again in entry {seq} (first in entry {}); showing the first",
                            first.seq
                        ));
                    } else {
                        let event = SubmitRecord {
                            prompt_sha256,
                            prompt,
                            model_requested,
                            revision,
                            bundle_sha256,
                            request_sha256,
                            expires_at,
                            model_key_fingerprint,
                            redispatch_of,
                            resumed_from,
                        };
                        bom.submit = Some(Stamped { seq, at, event });
                    }
                }
                Event::Fetch {
                    artifact_sha256,
                    packet_sha256,
                    model_reported,
                    partial,
                    run_id,
                } => {
                    let event = FetchRecord {
                        artifact_sha256,
                        packet_sha256,
                        model_reported,
                        partial,
                        run_id,
                    };
                    bom.fetches.push(Stamped { seq, at, event });
                }
                Event::Gate {
                    decision,
                    reasons,
                    policy_sha256,
                    gate_version,
                    artifact_sha256,
                    diff_sha256,
                    files,
                } => {
                    let event = GateRecord {
                        decision,
                        reasons,
                        policy_sha256,
                        gate_version,
                        artifact_sha256,
                        diff_sha256,
                        files,
                    };
                    bom.gates.push(Stamped { seq, at, event });
                }
                Event::Reject {
                    stage,
                    reason_code,
                    detail,
                } => {
                    let event = RejectRecord {
                        stage,
                        reason_code,
                        detail,
                    };
                    bom.rejects.push(Stamped { seq, at, event });
                }
                Event::Approve {
                    by,
                    note,
                    trusted_key_id,
                    artifact_sha256,
                    gate_entry,
                }
                | Event::Decline {
                    by,
                    note,
                    trusted_key_id,
                    artifact_sha256,
                    gate_entry,
                } => {
                    let event = ReviewRecord {
                        decision: kind,
                        by,
                        note,
                        trusted_key_id,
                        artifact_sha256,
                        gate_entry,
                    };
                    bom.reviews.push(Stamped { seq, at, event });
                }
            }
        }
        if bom.submit.is_none() {
            bom.notes
                .push("no submit entry for this job in the ledger".to_owned());
        }
        let artifacts: std::collections::BTreeSet<Sha256Digest> = bom
            .fetches
            .iter()
            .map(|f| f.event.artifact_sha256)
            .collect();
        if artifacts.len() > 1 {
            bom.notes.push(format!(
                "{} different artifacts were fetched for this job",
                artifacts.len()
            ));
        }
        bom.decision = bom.gates.last().map(|g| g.event.decision.clone());
        bom
    }
}

fn when(at: u64) -> String {
    rfc3339_utc(at)
}

impl fmt::Display for BillOfMaterials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "generation bill of materials: job {}", self.job)?;
        let head = self
            .ledger
            .head
            .map(|h| h.to_string())
            .unwrap_or_else(|| "-".into());
        writeln!(
            f,
            "  ledger          {} entries verified, head {head}; this job: entries {}",
            self.ledger.entries,
            self.entries
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )?;
        writeln!(
            f,
            "  decision        {}",
            self.decision
                .as_deref()
                .map(text::line)
                .unwrap_or_else(|| "(not gated)".into())
        )?;
        if let Some(s) = &self.submit {
            let e = &s.event;
            writeln!(f, "\nsubmit (entry {}, {})", s.seq, when(s.at))?;
            writeln!(f, "  model requested {}", text::line(&e.model_requested))?;
            writeln!(f, "  revision        {}", text::line(&e.revision))?;
            writeln!(f, "  bundle sha256   {}", e.bundle_sha256)?;
            writeln!(f, "  request sha256  {}", e.request_sha256)?;
            writeln!(f, "  token expires   {}", when(e.expires_at))?;
            writeln!(f, "  prompt sha256   {}", e.prompt_sha256)?;
            if let Some(fp) = &e.model_key_fingerprint {
                writeln!(f, "  model key       {}", text::line(fp))?;
            }
            if let Some(of) = &e.redispatch_of {
                writeln!(f, "  re-dispatch of  {of}")?;
            }
            if let Some(r) = &e.resumed_from {
                writeln!(
                    f,
                    "  resumed from    {} (inherited patch sha256:{}, {} bytes)",
                    r.job, r.patch_sha256, r.patch_bytes
                )?;
            }
            writeln!(f, "  prompt:")?;
            for line in e.prompt.lines() {
                writeln!(f, "    | {}", text::line(line))?;
            }
        }
        for x in &self.fetches {
            let e = &x.event;
            writeln!(f, "\nfetch (entry {}, {})", x.seq, when(x.at))?;
            writeln!(f, "  artifact sha256 {}", e.artifact_sha256)?;
            writeln!(f, "  packet sha256   {}", e.packet_sha256)?;
            writeln!(f, "  model reported  {}", text::line(&e.model_reported))?;
            writeln!(f, "  run id          {}", text::line(&e.run_id))?;
            writeln!(f, "  partial         {}", e.partial)?;
        }
        for x in &self.gates {
            let e = &x.event;
            writeln!(f, "\ngate (entry {}, {})", x.seq, when(x.at))?;
            writeln!(f, "  decision        {}", text::line(&e.decision))?;
            writeln!(f, "  artifact sha256 {}", e.artifact_sha256)?;
            writeln!(f, "  diff sha256     {}", e.diff_sha256)?;
            writeln!(f, "  policy sha256   {}", e.policy_sha256)?;
            writeln!(f, "  gate version    {}", text::line(&e.gate_version))?;
            if e.reasons.is_empty() {
                writeln!(f, "  reasons         (none)")?;
            } else {
                writeln!(f, "  reasons:")?;
                for r in &e.reasons {
                    writeln!(f, "    - {}", text::line(r))?;
                }
            }
        }
        for x in &self.rejects {
            let e = &x.event;
            writeln!(
                f,
                "\nreject at {} (entry {}, {})",
                text::line(&e.stage),
                x.seq,
                when(x.at)
            )?;
            writeln!(f, "  rule            {}", text::line(&e.reason_code))?;
            writeln!(f, "  detail          {}", text::line(&e.detail))?;
        }
        for x in &self.reviews {
            let e = &x.event;
            writeln!(
                f,
                "\n{} by {} (entry {}, {})",
                if e.decision == "approve" {
                    "approved"
                } else {
                    "declined"
                },
                text::line(&e.by),
                x.seq,
                when(x.at)
            )?;
            writeln!(f, "  artifact sha256 {}", e.artifact_sha256)?;
            writeln!(f, "  gate entry      {}", e.gate_entry)?;
            writeln!(
                f,
                "  signed by       trusted key {}",
                text::line(&e.trusted_key_id)
            )?;
            for line in e.note.lines() {
                writeln!(f, "  note            {}", text::line(line))?;
            }
        }
        for n in &self.notes {
            writeln!(f, "\nnote: {n}")?;
        }
        Ok(())
    }
}
