//! `comments.jsonl`: the review comments a generator returns, one JSON object per line, read
//! by the worker from the generator's file and by the gate from the artifact member.
//!
//! Guards against: a comment file that is not UTF-8 JSON Lines, oversized bodies and
//! suggestions, too many comments (each refused by its line number, the rest survive), paths
//! that leave the tree (`/x`, `..`, `.git/`, controls: the `path.*` rules), line numbers that
//! are zero, reversed or span more than [`MAX_COMMENT_SPAN`] lines, severities outside the
//! closed set, and unknown members (`format.unknown-member`).
//! On `Ok`: each comment kept is well formed. Whether its path and lines exist in the packed
//! revision or the changed file is the gate's to check (`trusted-side/src/gate/comments.rs`).
//! Does not check: secrets in bodies (the gate's scanner) nor how text is shown
//! (`crate::text`).

use serde::{Deserialize, Serialize};

use crate::paths::check_relative_path;

/// The version of the comments member (named in the job token's `formats` claim by a trusted
/// side that reads it; a worker writes the member only then).
pub const COMMENTS_FORMAT: &str = "airlock.comments/v1";
/// The artifact member holding the comments.
pub const COMMENTS_MEMBER: &str = "comments.jsonl";
/// Comments kept per job; the rest are refused (`comments.too-many`).
pub const MAX_COMMENTS: usize = 1000;
/// Bytes of one comment's `body` (`comments.body-size`).
pub const MAX_COMMENT_BODY_BYTES: usize = 16 * 1024;
/// Bytes of one comment's `suggestion` (`comments.suggestion-size`).
pub const MAX_SUGGESTION_BYTES: usize = 16 * 1024;
/// Bytes of one JSON line (`comments.line-size`): a body and a suggestion at their caps,
/// JSON-escaped, fit.
pub const MAX_COMMENT_LINE_BYTES: usize = 200 * 1024;
/// Bytes of the whole file the generator writes, and of the member (`comments.too-large`).
pub const MAX_COMMENTS_BYTES: u64 = 4 * 1024 * 1024;
/// Lines one comment may span (`end_line - start_line + 1`, `comments.range`).
pub const MAX_COMMENT_SPAN: u64 = 10_000;
/// Bytes of a comment's path and its depth (as the diff's path rules).
const MAX_PATH_BYTES: usize = 1024;
const MAX_DEPTH: usize = 64;

/// How much a comment matters (a closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// For information.
    Note,
    /// Worth a look.
    Warning,
    /// A problem: a review job with one goes to a person (`review-error`).
    Error,
}

impl Severity {
    /// As written: `note`, `warning`, `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One review comment, anchored to a path and a line range. Closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Comment {
    /// The file, relative to the repository root.
    pub path: String,
    /// The line (1-based); or give `start_line` and `end_line`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// First line of the range (1-based, with `end_line`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// Last line of the range (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
    /// How much it matters.
    pub severity: Severity,
    /// The comment (Markdown, untrusted: shown only through `crate::text`).
    pub body: String,
    /// Replacement text for the range (untrusted; never applied by airlock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

impl Comment {
    /// The line range `(start, end)`, inclusive. Only meaningful after [`parse_comments`].
    pub fn range(&self) -> (u64, u64) {
        match (self.line, self.start_line, self.end_line) {
            (Some(l), _, _) => (l, l),
            (None, Some(s), Some(e)) => (s, e),
            _ => (0, 0),
        }
    }
}

/// A comment refused, by its line in the file (1-based); never quotes the body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("comments.jsonl:{index}: {reason} ({rule})")]
pub struct CommentError {
    /// The line of the file (the comment's number).
    pub index: usize,
    /// Rule id (`comments.json`, `comments.body-size`, `path.parent-dir`, ...).
    pub rule: &'static str,
    /// Why, with limits and values seen.
    pub reason: String,
}

/// The comments of one file: those kept, with their line numbers, and those refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedComments {
    /// Well-formed comments, at most [`MAX_COMMENTS`], with their line in the file.
    pub kept: Vec<(usize, Comment)>,
    /// Refused lines, in order.
    pub refused: Vec<CommentError>,
}

/// Reads JSON Lines: each non-empty line one comment. A file over [`MAX_COMMENTS_BYTES`] is
/// refused whole (one error at line 0); blank lines are skipped; lines past the
/// [`MAX_COMMENTS`]th kept comment are refused as one `comments.too-many` error naming the
/// count.
pub fn parse_comments(bytes: &[u8]) -> ParsedComments {
    let mut out = ParsedComments::default();
    if bytes.len() as u64 > MAX_COMMENTS_BYTES {
        out.refused.push(CommentError {
            index: 0,
            rule: "comments.too-large",
            reason: format!(
                "the comments file is over its cap: limit {MAX_COMMENTS_BYTES} bytes, seen {}",
                bytes.len()
            ),
        });
        return out;
    }
    let mut extra = 0usize;
    let mut first_extra = 0usize;
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let index = i + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if out.kept.len() >= MAX_COMMENTS {
            if extra == 0 {
                first_extra = index;
            }
            extra += 1;
            continue;
        }
        match parse_comment(index, line) {
            Ok(c) => out.kept.push((index, c)),
            Err(e) => out.refused.push(e),
        }
    }
    if extra > 0 {
        out.refused.push(CommentError {
            index: first_extra,
            rule: "comments.too-many",
            reason: format!(
                "{extra} comment(s) from here on refused: limit {MAX_COMMENTS} comments per job"
            ),
        });
    }
    out
}

/// Parses and checks one line.
pub fn parse_comment(index: usize, line: &[u8]) -> Result<Comment, CommentError> {
    let err = |rule: &'static str, reason: String| CommentError {
        index,
        rule,
        reason,
    };
    if line.len() > MAX_COMMENT_LINE_BYTES {
        return Err(err(
            "comments.line-size",
            format!(
                "line over its cap: limit {MAX_COMMENT_LINE_BYTES} bytes, seen {}",
                line.len()
            ),
        ));
    }
    let text =
        std::str::from_utf8(line).map_err(|_| err("comments.utf8", "not UTF-8".to_owned()))?;
    let c: Comment = serde_json::from_str(text).map_err(|e| {
        let f = super::from_serde("comments.jsonl", &e);
        err(f.rule(), f.to_string())
    })?;
    check_comment(&c).map_err(|(rule, reason)| err(rule, reason))?;
    Ok(c)
}

/// The rules of one comment beyond its JSON shape: `(rule, reason)` of the first broken.
pub fn check_comment(c: &Comment) -> Result<(), (&'static str, String)> {
    check_relative_path(&c.path, MAX_PATH_BYTES, MAX_DEPTH).map_err(|e| {
        (
            e.rule().id(),
            format!(
                "path {}: {}",
                super::shown_value(&c.path),
                e.rule().reason()
            ),
        )
    })?;
    let (start, end) = match (c.line, c.start_line, c.end_line) {
        (Some(l), None, None) => (l, l),
        (None, Some(s), Some(e)) => (s, e),
        _ => {
            return Err((
                "comments.range",
                "give `line`, or `start_line` and `end_line` (not both forms)".to_owned(),
            ))
        }
    };
    if start == 0 || end < start || end - start >= MAX_COMMENT_SPAN {
        return Err((
            "comments.range",
            format!(
                "lines {start}..{end}: lines count from 1, the range may not be reversed or span more than {MAX_COMMENT_SPAN} lines"
            ),
        ));
    }
    if c.body.trim().is_empty() || c.body.len() > MAX_COMMENT_BODY_BYTES {
        return Err((
            "comments.body-size",
            format!(
                "body must be 1 to {MAX_COMMENT_BODY_BYTES} bytes, seen {}",
                c.body.len()
            ),
        ));
    }
    if let Some(s) = &c.suggestion {
        if s.len() > MAX_SUGGESTION_BYTES {
            return Err((
                "comments.suggestion-size",
                format!(
                    "suggestion over its cap: limit {MAX_SUGGESTION_BYTES} bytes, seen {}",
                    s.len()
                ),
            ));
        }
    }
    Ok(())
}

/// The member's bytes: one compact JSON object per line, in order, each ending in `\n`.
pub fn to_jsonl<'a>(comments: impl IntoIterator<Item = &'a Comment>) -> Vec<u8> {
    let mut out = Vec::new();
    for c in comments {
        // Serialising a plain struct of strings and integers cannot fail.
        if let Ok(line) = serde_json::to_vec(c) {
            out.extend_from_slice(&line);
            out.push(b'\n');
        }
    }
    out
}

#[cfg(test)]
#[path = "comments_tests.rs"]
mod tests;
