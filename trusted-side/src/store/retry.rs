//! Retries of the trusted side's store requests, bounded, and the one outcome a retry cannot
//! settle by itself: a create-if-absent whose answer was lost.
//!
//! Guards against: a transient store failure (5xx, 429, a timeout, a reset connection) failing
//! `fetch`, `gate`, `watch` or a ledger append that one more try would finish; retrying for
//! minutes (object_store's default gives up after 10 retries or 3 minutes: [`config`] bounds
//! it to [`MAX_RETRIES`] retries within [`RETRY_TIMEOUT`]); and a conditional create
//! (`If-None-Match: *`) whose request the store applied but whose answer never came back.
//! Retrying such a create (object_store retries it on a 5xx itself) gets `412`/`AlreadyExists` for an object that is our own: taken as
//! "someone else wrote it", the ledger would append the same event twice. [`create`] reads the
//! object back and compares it with what it meant to write: the same bytes are ours (success),
//! other bytes are someone else's (the conflict it is), none means the write never happened
//! (try again).
//!
//! Who retries what: object_store's HTTP client retries every request on 5xx, 429 and
//! connection failures, idempotent ones (GET, HEAD, LIST, DELETE, overwriting PUT) also on
//! timeouts, and resumes an interrupted GET body (same ETag). This module only configures that
//! bound and settles creates. `file://` and `memory://` stores never see a network fault.
//! Does not check: what the bytes mean (callers verify signatures and digests).

use std::time::Duration;

use anyhow::{Context, Result};
use object_store::{BackoffConfig, RetryConfig};

/// Retries per request after the first attempt (5xx, 429, connection errors, timeouts of
/// idempotent requests).
pub const MAX_RETRIES: usize = 5;
/// No retry starts after this long since the first attempt.
pub const RETRY_TIMEOUT: Duration = Duration::from_secs(30);
/// Attempts of one create whose outcome stayed unknown (each one's retries come on top).
pub const CREATE_ATTEMPTS: u32 = 3;

/// The retry policy every remote store is built with: exponential backoff from 100 ms, doubling
/// up to 4 s (with object_store's jitter), at most [`MAX_RETRIES`] retries within
/// [`RETRY_TIMEOUT`].
pub fn config() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(4),
            base: 2.0,
        },
        max_retries: MAX_RETRIES,
        retry_timeout: RETRY_TIMEOUT,
    }
}

/// What a failed create may have done.
#[derive(Debug, PartialEq, Eq)]
enum Failure {
    /// The store says the object exists (`412`, `409`): whose it is must be read.
    Exists,
    /// No answer, or a server error after the retries: the write may or may not have landed.
    Unknown,
    /// A definite refusal (403, 400, …): nothing was written.
    Refused,
}

fn classify(e: &object_store::Error) -> Failure {
    match e {
        object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. } => {
            Failure::Exists
        }
        // Transport errors and statuses object_store gave up on (its HTTP error type is not
        // public): the write may have landed. Reading back settles it either way.
        object_store::Error::Generic { .. } => Failure::Unknown,
        _ => Failure::Refused,
    }
}

/// Writes `bytes` at `key` only if absent, settling lost answers: `Ok(true)` when the object
/// now holds exactly `bytes` because of this call (its first attempt, or an earlier attempt
/// whose answer was lost), `Ok(false)` when it holds someone else's bytes. `put` is one
/// conditional create; `read` reads the object back (`None`: absent).
pub fn create(
    key: &str,
    bytes: &[u8],
    mut put: impl FnMut() -> std::result::Result<(), object_store::Error>,
    mut read: impl FnMut() -> Result<Option<Vec<u8>>>,
) -> Result<bool> {
    let mut backoff = Duration::from_millis(200);
    let mut last = None;
    for attempt in 1..=CREATE_ATTEMPTS {
        let err = match put() {
            Ok(()) => return Ok(true),
            Err(e) => e,
        };
        match classify(&err) {
            Failure::Refused => return Err(err).with_context(|| format!("{key}: write failed")),
            Failure::Exists | Failure::Unknown => {}
        }
        // Whose object is it, if any? A read that fails leaves the outcome unknown.
        match read() {
            Ok(Some(found)) if found == bytes => {
                if attempt > 1 || classify(&err) == Failure::Exists {
                    tracing::info!("{key}: create answered {err}; the object holds our bytes: an earlier attempt landed");
                }
                return Ok(true);
            }
            Ok(Some(_)) => return Ok(false),
            Ok(None) => {}
            Err(e) => tracing::warn!("{key}: cannot read back after a failed create: {e:#}"),
        }
        tracing::warn!(
            "{key}: create attempt {attempt}/{CREATE_ATTEMPTS} failed, outcome unknown: {err}"
        );
        last = Some(err);
        if attempt < CREATE_ATTEMPTS {
            std::thread::sleep(backoff);
            backoff *= 2;
        }
    }
    let why = last.map_or_else(String::new, |e| e.to_string());
    anyhow::bail!(
        "{key}: write failed (store.unavailable): gave up after {CREATE_ATTEMPTS} attempts \
         with the outcome unknown: {why}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exists() -> object_store::Error {
        object_store::Error::AlreadyExists {
            path: "k".into(),
            source: "412".into(),
        }
    }

    fn generic() -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: "connection reset".into(),
        }
    }

    #[test]
    fn a_lost_answer_then_412_on_our_own_bytes_is_success() {
        // The first attempt landed but its answer was lost; the retry meets our own object.
        let mut calls = 0;
        let ok = create(
            "ledger/000000000002.dsse.json",
            b"mine",
            || {
                calls += 1;
                Err(if calls == 1 { generic() } else { exists() })
            },
            || Ok(Some(b"mine".to_vec())),
        )
        .unwrap();
        assert!(ok);
        assert_eq!(calls, 1, "settled by reading back, no second write");
    }

    #[test]
    fn exists_with_someone_elses_bytes_is_the_conflict() {
        let ok = create(
            "k",
            b"mine",
            || Err(exists()),
            || Ok(Some(b"theirs".to_vec())),
        )
        .unwrap();
        assert!(!ok);
    }

    #[test]
    fn unknown_outcome_and_absent_object_writes_again() {
        let mut calls = 0;
        let ok = create(
            "k",
            b"mine",
            || {
                calls += 1;
                if calls < 3 {
                    Err(generic())
                } else {
                    Ok(())
                }
            },
            || Ok(None),
        )
        .unwrap();
        assert!(ok);
        assert_eq!(calls, 3);
    }

    #[test]
    fn gives_up_with_one_line_naming_the_key_and_the_rule() {
        let err = create("records/j.dsse.json", b"x", || Err(generic()), || Ok(None))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("records/j.dsse.json") && err.contains("store.unavailable"),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn a_definite_refusal_is_not_retried() {
        let mut calls = 0;
        let err = create(
            "k",
            b"x",
            || {
                calls += 1;
                Err(object_store::Error::PermissionDenied {
                    path: "k".into(),
                    source: "403".into(),
                })
            },
            || panic!("no read after a refusal"),
        );
        assert!(err.is_err());
        assert_eq!(calls, 1);
    }
}
