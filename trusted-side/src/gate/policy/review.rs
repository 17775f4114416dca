//! `[review]`: the verdicts of a job's review comments (`gate/comments.rs`).
//!
//! Guards against: a policy that means the same thing getting another digest (the section
//! joins the canonical form only when it differs from the default), and unknown keys
//! (refused, like every section).

use serde::{Deserialize, Serialize};

use super::Verdict;

/// `[review]` as written: every key optional, unknown keys refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReviewFile {
    comments: Option<Verdict>,
    error: Option<Verdict>,
    refused: Option<Verdict>,
}

/// The verdicts of the review reasons.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ReviewVerdicts {
    /// `review-comments` (the comments that anchored); default `queue`.
    pub comments: Verdict,
    /// `review-error` (a review job's comment of severity `error`); default `human`.
    pub error: Verdict,
    /// `comment-refused` (a comment that does not anchor or breaks a rule); default `human`.
    pub refused: Verdict,
}

impl Default for ReviewVerdicts {
    fn default() -> ReviewVerdicts {
        ReviewVerdicts {
            comments: Verdict::Queue,
            error: Verdict::Human,
            refused: Verdict::Human,
        }
    }
}

impl ReviewVerdicts {
    /// The defaults with what `file` sets.
    pub(super) fn from_file(file: &ReviewFile) -> ReviewVerdicts {
        let d = ReviewVerdicts::default();
        ReviewVerdicts {
            comments: file.comments.unwrap_or(d.comments),
            error: file.error.unwrap_or(d.error),
            refused: file.refused.unwrap_or(d.refused),
        }
    }

    /// For the canonical form: `None` at the default.
    pub(super) fn canonical(self) -> Option<ReviewVerdicts> {
        (self != ReviewVerdicts::default()).then_some(self)
    }
}
