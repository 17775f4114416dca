//! Model drift: providers swap the model behind a name quietly. The gate compares the model a
//! job's worker reported with what the ledger recorded for earlier jobs that asked for the
//! same model, and raises `model-drift` the first time a new answer appears ("asked X,
//! answered Y for the first time; the last 12 jobs answered Z"). Its verdict is the policy's
//! `[models] drift` (default `human`). A repeated answer is not drift; neither is a job with
//! no history to compare with, nor an `unreported` model.
//!
//! Guards against: a silent swap going unnoticed, and worker-chosen text in the reason (the
//! names are shown through [`shown`]). The history is read only from a ledger that verifies in
//! full; when it cannot be read, the gate says so in a warning (the swap is then unchecked).
//! Does not check: that the reported name is true (it is the worker's claim).

use std::collections::{BTreeMap, HashMap};

use airlock_core::format::MODEL_UNREPORTED;
use airlock_core::jobid::JobId;
use airlock_core::keys::PublicKey;
use anyhow::Result;

use super::policy::Verdict;
use crate::ledger::{self, Event};
use crate::reasons::ReasonCode;
use crate::report::{shown, Reason};
use crate::store::Store;

/// How many earlier answers the reason summarises.
pub const RECENT_JOBS: usize = 12;

/// What earlier jobs were answered, per model requested: one answer per job (its first
/// fetch), in ledger order.
#[derive(Debug, Default)]
pub struct ModelHistory {
    answers: HashMap<String, Vec<String>>,
}

impl ModelHistory {
    /// Reads the history from the verified ledger, leaving out `except` (the job being gated).
    pub fn read(store: &Store, trusted: &PublicKey, except: &JobId) -> Result<ModelHistory> {
        let mut requested: HashMap<JobId, String> = HashMap::new();
        let mut answered: std::collections::HashSet<JobId> = Default::default();
        let mut history = ModelHistory::default();
        ledger::visit_verified(store, trusted, |_, entry| {
            if entry.job == *except {
                return;
            }
            match &entry.event {
                Event::Submit {
                    model_requested, ..
                } => {
                    requested
                        .entry(entry.job.clone())
                        .or_insert_with(|| model_requested.clone());
                }
                Event::Fetch { model_reported, .. } => {
                    if let Some(asked) = requested.get(&entry.job) {
                        if answered.insert(entry.job.clone()) {
                            history.record(asked, model_reported.as_str());
                        }
                    }
                }
                _ => {}
            }
        })?;
        Ok(history)
    }

    /// Adds one job's answer to `asked`.
    pub fn record(&mut self, asked: &str, reported: &str) {
        if reported != MODEL_UNREPORTED {
            self.answers
                .entry(asked.to_owned())
                .or_default()
                .push(reported.to_owned());
        }
    }

    /// `model-drift` with `verdict` when `reported` never answered `asked` before and earlier
    /// jobs did get an answer; `None` otherwise.
    pub fn check(&self, asked: &str, reported: &str, verdict: Verdict) -> Option<Reason> {
        if reported == MODEL_UNREPORTED {
            return None;
        }
        let earlier = self.answers.get(asked).filter(|a| !a.is_empty())?;
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
            shown(by_count[0].0)
        } else {
            by_count
                .iter()
                .map(|(m, n)| format!("{} ({n})", shown(m)))
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
                shown(asked),
                shown(reported)
            ),
        ))
    }
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
    fn no_history_unreported_and_other_requests_are_not_drift() {
        let mut h = ModelHistory::default();
        assert!(h.check("m", "m-1", Verdict::Human).is_none(), "no history");
        h.record("m", MODEL_UNREPORTED);
        assert!(h.check("m", "m-1", Verdict::Human).is_none(), "unreported");
        h.record("other", "o-1");
        assert!(h.check("m", "m-1", Verdict::Human).is_none());
        h.record("m", "m-1");
        h.record("m", "m-2\u{202e}");
        let r = h.check("m", "m-3", Verdict::Queue).unwrap();
        assert_eq!(r.verdict, Verdict::Queue);
        assert!(
            r.detail
                .contains("the last 2 jobs answered m-1 (1), m-2\\u{202e} (1)"),
            "{}",
            r.detail
        );
        assert!(h.check("m", MODEL_UNREPORTED, Verdict::Human).is_none());
    }
}
