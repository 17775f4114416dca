//! Model drift: providers swap the model behind a name quietly. The gate compares the model a
//! job's worker reported with the answers of earlier jobs that asked for the same model AND
//! that a person approved (`airlock approve`, not declined since), and raises `model-drift`
//! the first time a new answer appears ("asked X, answered Y for the first time; the last 12
//! jobs answered Z"). When no approved job asked for X yet, the answer is not a baseline:
//! `model-unseen` sends it to a person. Both take the policy's `[models] drift` verdict
//! (default `human`). A previously approved answer is not drift; an `unreported` model, a
//! request for no model in particular (`unspecified`) and, while no approved job asked for
//! X, an answer that is X itself are not checked here.
//!
//! Guards against: a worker bootstrapping the history (the first worker to answer a new name
//! used to set the baseline, and the next honest answer was flagged): only runs a person
//! approved feed it. And worker-chosen text in the reason (names shown through
//! [`airlock_core::text`]). The history is read only from verified ledger entries; when it
//! cannot be read, the gate says so in a warning (the swap is then unchecked).
//!
//! Reading every entry makes each gate slower than the last (one read and one signature check
//! per entry, one GET per entry on a cloud store). So `airlock audit verify`, after a full
//! verification, keeps what the ledger says of models in the trusted home
//! (`cache/model-history.json`) with the entry it was read through, and a gate reads on from
//! there: only the entries appended since, each verified. `airlock watch` keeps it too (read on
//! from the kept entry in the same way), after each pass that gated a job asking for a model,
//! and after a pass at most every `watch::KEEP_HISTORY_EVERY` otherwise (the gates of jobs that
//! ask for no model read no history). The kept
//! entry must still hash the same, else the gate reads the whole ledger. The gate itself never
//! writes it: a gate writes nothing outside its job directory. A gate of a job that reported
//! no model, or asked for none in particular, reads no history at all.
//! Does not check: that the reported name is true (it is the worker's claim).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use airlock_core::format::MODEL_UNREPORTED;
use airlock_core::jobid::JobId;
use airlock_core::keys::PublicKey;
use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::checks::MODEL_UNSPECIFIED;
use super::policy::Verdict;
use crate::ledger::{self, Event, LedgerEntry, LedgerHead};
use crate::reasons::ReasonCode;
use airlock_core::text;

use crate::report::Reason;
use crate::store::Store;

/// Where the fold is kept, under the trusted home.
pub const CACHE_FILE: &str = "cache/model-history.json";

/// What the ledger says of models, through entry `through_seq` (whose bytes hash to
/// `through_sha256`): each job's model request until its first fetch, and the answers of first
/// fetches in ledger order.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Fold {
    through_seq: u64,
    through_sha256: Option<airlock_core::digest::Sha256Digest>,
    /// Jobs submitted and not fetched yet: the model each asked for.
    requested: HashMap<String, String>,
    /// Jobs whose first fetch was folded.
    answered: HashSet<String>,
    /// (job, model asked, model reported) of each first fetch.
    answers: Vec<(String, String, String)>,
    /// Jobs whose last review decision is an approval. `None` in a fold kept before approvals
    /// were folded: such a fold is set aside and the ledger read again.
    #[serde(default)]
    approved: Option<HashSet<String>>,
}

impl Fold {
    fn add(&mut self, entry: &LedgerEntry) {
        let job = entry.job.as_str();
        match &entry.event {
            Event::Submit {
                model_requested, ..
            } if !self.answered.contains(job) => {
                self.requested
                    .entry(job.to_owned())
                    .or_insert_with(|| model_requested.clone());
            }
            Event::Fetch { model_reported, .. } => {
                if let Some(asked) = self.requested.remove(job) {
                    self.answered.insert(job.to_owned());
                    self.answers
                        .push((job.to_owned(), asked, model_reported.clone()));
                }
            }
            Event::Approve { .. } => {
                self.approved
                    .get_or_insert_with(HashSet::new)
                    .insert(job.to_owned());
            }
            Event::Decline { .. } => {
                self.approved.get_or_insert_with(HashSet::new).remove(job);
            }
            _ => {}
        }
    }

    /// The fold kept under `home` read on to the ledger's end; the whole ledger when none is
    /// kept or reading on fails (the kept entry changed or is gone).
    fn read_on(store: &Store, trusted: &PublicKey, home: &Path) -> Result<Fold> {
        let path = home.join(CACHE_FILE);
        let kept = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Fold>(&b).ok())
            .filter(|f| f.approved.is_some());
        match kept.map(|f| f.extend(store, trusted)) {
            Some(Ok(fold)) => Ok(fold),
            Some(Err(e)) => {
                tracing::info!(
                    "{}: set aside, the ledger is read again ({e:#})",
                    path.display()
                );
                Fold::default().extend(store, trusted)
            }
            None => Fold::default().extend(store, trusted),
        }
    }

    /// Folds the entries after the kept one (all of them without one).
    fn extend(mut self, store: &Store, trusted: &PublicKey) -> Result<Fold> {
        self.approved.get_or_insert_with(HashSet::new);
        let through = self.through_sha256.map(|sha256| LedgerHead {
            seq: self.through_seq,
            sha256,
        });
        let report = match &through {
            Some(head) => ledger::visit_verified_after(store, trusted, head, |_, e| self.add(e))?,
            None => ledger::visit_verified(store, trusted, |_, e| self.add(e))?,
        };
        if let Some(head) = report.head {
            self.through_seq = head.seq;
            self.through_sha256 = Some(head.sha256);
        }
        Ok(self)
    }
}

/// How many earlier answers the reason summarises.
pub const RECENT_JOBS: usize = 12;

/// What earlier approved jobs were answered, per model requested: one answer per job (its
/// first fetch), in ledger order.
#[derive(Debug, Default)]
pub struct ModelHistory {
    answers: HashMap<String, Vec<String>>,
}

impl ModelHistory {
    /// Reads the history of approved jobs from the verified ledger, leaving out `except` (the
    /// job being gated):
    /// the entries after the fold [`keep`] left under `home`, or all of them when there is
    /// none or its last entry changed or is gone.
    pub fn read(
        store: &Store,
        trusted: &PublicKey,
        home: &Path,
        except: &JobId,
    ) -> Result<ModelHistory> {
        let fold = Fold::read_on(store, trusted, home)?;
        let mut history = ModelHistory::default();
        let approved = fold.approved.unwrap_or_default();
        for (job, asked, reported) in &fold.answers {
            if job != except.as_str() && approved.contains(job) {
                history.record(asked, reported);
            }
        }
        Ok(history)
    }

    /// Adds one approved job's answer to `asked`.
    pub fn record(&mut self, asked: &str, reported: &str) {
        if reported != MODEL_UNREPORTED {
            self.answers
                .entry(asked.to_owned())
                .or_default()
                .push(reported.to_owned());
        }
    }

    /// Whether [`Self::check`] can say anything of this pair: not for an `unreported` answer
    /// nor an `unspecified` request, so the gate reads no history for them.
    pub fn checks(asked: &str, reported: &str) -> bool {
        reported != MODEL_UNREPORTED && asked != MODEL_UNSPECIFIED
    }

    /// With `verdict`: `model-drift` when `reported` never answered `asked` in an approved job
    /// and other answers did; `model-unseen` when no approved job asked for `asked` yet;
    /// `None` when an approved job got this answer, when nothing was reported or asked for, and
    /// when, with no approved history, the answer is the name asked for or a dated snapshot of
    /// it.
    pub fn check(&self, asked: &str, reported: &str, verdict: Verdict) -> Option<Reason> {
        if !Self::checks(asked, reported) {
            return None;
        }
        let Some(earlier) = self.answers.get(asked).filter(|a| !a.is_empty()) else {
            if airlock_core::model::answers(asked, reported) {
                // The name the person asked for, or a dated snapshot of it (docs/FORMATS.md,
                // "Model names"): nothing to trust or distrust beyond the request, and it feeds
                // no history until a person approves the job.
                return None;
            }
            return Some(Reason::new(
                ReasonCode::ModelUnseen,
                verdict,
                format!(
                    "asked {}, answered {}: no job a person approved asked for {} before, so \
                     this answer is not a baseline",
                    text::line(asked),
                    text::line(reported),
                    text::line(asked)
                ),
            ));
        };
        if earlier.iter().any(|a| a == reported) {
            return None;
        }
        let recent = &earlier[earlier.len().saturating_sub(RECENT_JOBS)..];
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for a in recent {
            *counts.entry(a.as_str()).or_default() += 1;
        }
        let mut by_count: Vec<(&str, usize)> = counts.into_iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let answered = if by_count.len() == 1 {
            text::line(by_count[0].0)
        } else {
            by_count
                .iter()
                .map(|(m, n)| format!("{} ({n})", text::line(m)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let jobs = match recent.len() {
            1 => "the last job".to_owned(),
            n => format!("the last {n} jobs"),
        };
        Some(Reason::new(
            ReasonCode::ModelDrift,
            verdict,
            format!(
                "asked {}, answered {} for the first time; {jobs} answered {answered}",
                text::line(asked),
                text::line(reported)
            ),
        ))
    }
}

/// Keeps the fold of the whole ledger under `home` for later gates (run by `airlock audit
/// verify` once the ledger verified): written next to its place and renamed there, so a gate
/// reads the old fold or the new one.
pub fn keep(store: &Store, trusted: &PublicKey, home: &Path) -> Result<()> {
    let fold = Fold::read_on(store, trusted, home)?;
    let path = home.join(CACHE_FILE);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer(&mut tmp, &fold)?;
    tmp.persist(&path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_new_answer_is_drift_and_a_repeated_one_is_not() {
        let mut h = ModelHistory::default();
        for _ in 0..14 {
            h.record("example-model", "example-model-2026-01");
        }
        let r = h
            .check("example-model", "example-model-2026-02", Verdict::Human)
            .expect("a new answer is drift");
        assert_eq!(r.code, ReasonCode::ModelDrift);
        assert_eq!(r.verdict, Verdict::Human);
        assert_eq!(
            r.detail,
            "asked example-model, answered example-model-2026-02 for the first time; the last \
             12 jobs answered example-model-2026-01"
        );
        assert!(h
            .check("example-model", "example-model-2026-01", Verdict::Human)
            .is_none());
        h.record("example-model", "example-model-2026-02");
        assert!(
            h.check("example-model", "example-model-2026-02", Verdict::Human)
                .is_none(),
            "the second time is not news"
        );
    }

    #[test]
    fn no_approved_history_is_unseen_and_unreported_is_not_checked() {
        let mut h = ModelHistory::default();
        let unseen = h.check("m", "m-1", Verdict::Human).expect("no history");
        assert_eq!(unseen.code, ReasonCode::ModelUnseen);
        assert_eq!(unseen.verdict, Verdict::Human);
        assert_eq!(
            unseen.detail,
            "asked m, answered m-1: no job a person approved asked for m before, so this \
             answer is not a baseline"
        );
        assert!(h.check("m", MODEL_UNREPORTED, Verdict::Human).is_none());
        assert!(h.check(MODEL_UNSPECIFIED, "m-1", Verdict::Human).is_none());
        assert!(
            h.check("m", "m", Verdict::Human).is_none(),
            "the name asked for"
        );
        h.record("m", MODEL_UNREPORTED);
        assert_eq!(
            h.check("m", "m-1", Verdict::Human).unwrap().code,
            ReasonCode::ModelUnseen,
            "an unreported answer is no baseline"
        );
        h.record("other", "o-1");
        assert_eq!(
            h.check("m", "m-1", Verdict::Human).unwrap().code,
            ReasonCode::ModelUnseen
        );
        h.record("m", "m-1");
        h.record("m", "m-2\u{202e}");
        let r = h.check("m", "m-3", Verdict::Queue).unwrap();
        assert_eq!(r.verdict, Verdict::Queue);
        assert!(
            r.detail
                .contains("the last 2 jobs answered m-1 (1), m-2<U+202E> (1)"),
            "{}",
            r.detail
        );
        assert!(h.check("m", MODEL_UNREPORTED, Verdict::Human).is_none());
    }
}
