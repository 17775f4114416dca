//! Review comments as every output shows them: the terminal lines here; `page.rs` and
//! `html.rs` put them beside their file's diff; `sarif.rs` writes them as SARIF results.
//!
//! Guards against: a comment's worker text (path, body, suggestion) reaching a terminal as
//! anything but inert text: every string goes through [`airlock_core::text`], the one text
//! module (controls, bidi and invisible characters marked, cut at a visible marker).
//! Does not check: anchors or secrets (`gate/comments.rs` did; a body with a finding is
//! already withheld).

use std::fmt::Write as _;

use airlock_core::format::Severity;
use airlock_core::text;
use serde::Serialize;

/// What a withheld body reads.
pub const WITHHELD_BODY: &str =
    "[comment withheld: it holds a secret finding (secret-in-worker-text)]";
/// Characters of a body shown in the terminal.
pub const TERMINAL_BODY_MAX: usize = 400;

/// A comment that passed the gate, as every output shows it (through `airlock_core::text`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GatedComment {
    /// Its line in `comments.jsonl` (1-based).
    pub index: usize,
    /// The file.
    pub path: String,
    /// First line (1-based).
    pub start_line: u64,
    /// Last line (inclusive).
    pub end_line: u64,
    /// `note`, `warning` or `error`.
    pub severity: Severity,
    /// The body (untrusted Markdown; [`WITHHELD_BODY`] when it held a secret).
    pub body: String,
    /// Replacement text for the range (untrusted; never applied).
    pub suggestion: Option<String>,
    /// `change` when anchored to the changed file, `revision` for the packed revision.
    pub anchored_to: &'static str,
    /// Whether the body and suggestion were withheld (a secret finding).
    pub withheld: bool,
}

/// The terminal lines of the comments: `severity path:start[-end]: body` (one inert line each).
pub fn render_text(comments: &[GatedComment]) -> String {
    let mut s = String::new();
    if comments.is_empty() {
        return s;
    }
    let _ = writeln!(s, "comments:");
    for c in comments {
        let _ = writeln!(
            s,
            "  {:<7} {}:{}: {}",
            c.severity.as_str(),
            text::line(&c.path),
            lines(c),
            text::terminal(&c.body, TERMINAL_BODY_MAX)
        );
        if let Some(sug) = &c.suggestion {
            let _ = writeln!(
                s,
                "          suggestion: {}",
                text::terminal(sug, TERMINAL_BODY_MAX)
            );
        }
    }
    s
}

/// `12` or `12-14`.
pub fn lines(c: &GatedComment) -> String {
    if c.start_line == c.end_line {
        c.start_line.to_string()
    } else {
        format!("{}-{}", c.start_line, c.end_line)
    }
}

/// Whether a comment's severity is at least `s`.
pub fn at_least(c: &GatedComment, s: Severity) -> bool {
    c.severity >= s
}
