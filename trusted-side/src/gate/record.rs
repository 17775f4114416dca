//! Step 14: the gate's one ledger append.
//!
//! Entries, in order: `fetch` when the fetch verified an artifact; `gate` when a patch was
//! read (naming the artifact's and the diff's sha256 and every reason); `reject` for a
//! rejection, naming the first rejecting reason's code and its stage (`fetch` for a fetch
//! refusal, `gate` otherwise). All go in one `ledger::append_all`, consecutive unless
//! another host appends in between.
//!
//! Guards against: a verdict without a record. An error after the fetch still records the
//! fetch ([`fetch_alone`]).
//! Does not check: anything; the ledger module signs and chains.

use airlock_core::digest::Sha256Digest;
use airlock_core::jobid::JobId;
use airlock_core::keys::SigningKey;
use anyhow::Result;

use super::policy::Verdict;
use crate::fetch::Fetched;
use crate::ledger::entry::MAX_TEXT_BYTES;
use crate::ledger::{self, Event, GatedFile};
use crate::report::{GateReport, GATE_VERSION};
use crate::store::Store;

/// Where the gate appends: the store, the trusted key, the job, the gate's clock.
#[derive(Clone, Copy)]
pub struct Ledger<'a> {
    /// The store holding `ledger/`.
    pub store: &'a Store,
    /// The trusted key that signs entries.
    pub key: &'a SigningKey,
    /// The job the entries are about.
    pub job: &'a JobId,
    /// The gate's clock, unix seconds.
    pub now: u64,
}

/// Appends the entries of the module doc for a concluded `report`: `fetched` when the fetch
/// verified an artifact, `diff_sha256` when a patch was read.
pub fn append(
    to: Ledger<'_>,
    report: &GateReport,
    fetched: Option<&Fetched>,
    diff_sha256: Option<Sha256Digest>,
) -> Result<()> {
    let mut events: Vec<Event> = fetched.iter().map(|f| f.ledger_event()).collect();
    if let (Some(f), Some(diff_sha256)) = (fetched, diff_sha256) {
        let reasons = report
            .reasons
            .iter()
            .map(|r| match &r.path {
                Some(p) => format!("{} {}: {}", r.code, p, r.detail),
                None => format!("{}: {}", r.code, r.detail),
            })
            // Each reason is one inert line (`text::detail`): a path or detail carrying worker
            // text writes no control, invisible or bidirectional character into the ledger.
            .map(|line| airlock_core::text::detail(&line, MAX_TEXT_BYTES))
            .collect();
        events.push(Event::Gate {
            decision: report.decision.to_string(),
            reasons,
            policy_sha256: report
                .bom
                .policy_sha256
                .unwrap_or_else(|| Sha256Digest::of_bytes(b"")),
            gate_version: GATE_VERSION.to_owned(),
            artifact_sha256: f.artifact_sha256,
            diff_sha256,
            files: report
                .files
                .iter()
                .map(|c| GatedFile {
                    path: c.path.clone(),
                    bucket: c.bucket.to_string(),
                    rule: c.class_rule.to_owned(),
                    verdict: c.verdict.to_string(),
                })
                .collect(),
        });
    }
    if report.decision == Verdict::Reject {
        if let Some(r) = report.first_decisive() {
            let detail = match &r.rule {
                Some(rule) => format!("[{rule}] {}", r.detail),
                None => r.detail.clone(),
            };
            // One inert line, as every refusal's detail (`airlock_core::text::detail`).
            let detail = airlock_core::text::detail(&detail, MAX_TEXT_BYTES);
            events.push(Event::Reject {
                stage: r.code.stage().as_str().to_owned(),
                reason_code: r.code.code().to_owned(),
                detail,
            });
        }
    }
    ledger::append_all(to.store, to.key, to.job, events, to.now)?;
    Ok(())
}

/// Records the fetch alone, when the gate stopped with an error after it (logged, not
/// returned: the gate's own error is the one to report).
pub fn fetch_alone(to: Ledger<'_>, fetched: &Fetched) {
    if let Err(e) = ledger::append(to.store, to.key, to.job, fetched.ledger_event(), to.now) {
        tracing::error!("ledger: the fetch of job {} is not recorded: {e:#}", to.job);
    }
}
