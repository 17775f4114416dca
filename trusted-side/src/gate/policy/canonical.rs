//! The policy's canonical form, hashed by [`super::Policy::digest`] for the ledger.
//!
//! Guards against: two files that mean the same thing getting different digests (fixed key
//! order, defaults filled in), and a digest that changes for policies written before a new
//! section (sections at their default are left out).

use serde::Serialize;

use super::{PolicyLimits, ReviewVerdicts, Verdict};

/// The canonical serialization hashed by [`Policy::digest`]: fixed key order, defaults
/// filled in, so two files that mean the same thing have the same digest.
#[derive(Serialize)]
pub(super) struct Canonical<'a> {
    pub(super) format: &'static str,
    pub(super) buckets: CanonicalBuckets,
    pub(super) limits: PolicyLimits,
    pub(super) paths: Vec<CanonicalRule<'a>>,
    /// Only when not the default, so that policies written before `[models]` keep their digest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) models: Option<CanonicalModels>,
    /// Only when not the default (policies written before `[review]` keep their digest).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) review: Option<ReviewVerdicts>,
}

#[derive(Serialize)]
pub(super) struct CanonicalModels {
    pub(super) drift: Verdict,
}

#[derive(Serialize)]
pub(super) struct CanonicalBuckets {
    pub(super) ci: Verdict,
    pub(super) iac: Verdict,
    pub(super) deps: Verdict,
    pub(super) build: Verdict,
    pub(super) governance: Verdict,
    pub(super) agent: Verdict,
    pub(super) src: Verdict,
    pub(super) tests: Verdict,
    pub(super) docs: Verdict,
    pub(super) other: Verdict,
}

#[derive(Serialize)]
pub(super) struct CanonicalRule<'a> {
    pub(super) glob: &'a str,
    pub(super) verdict: Verdict,
    pub(super) reason: &'a str,
}
