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
use serde::{Deserialize, Serialize};

/// What a withheld body reads.
pub const WITHHELD_BODY: &str =
    "[comment withheld: it holds a secret finding (secret-in-worker-text)]";
/// Characters of a body shown in the terminal.
pub const TERMINAL_BODY_MAX: usize = 400;

/// A comment that passed the gate, as every output shows it (through `airlock_core::text`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    pub anchored_to: String,
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

/// Characters of a body or suggestion shown on a page.
pub const PAGE_BODY_MAX: usize = 16_384;

/// The comments as Markdown (a pull-request body): per comment a line with its severity and
/// place in code spans, then its body (and suggestion) in fenced blocks no line can close, so
/// no link, image or HTML of the worker's becomes live.
pub fn render_md(comments: &[&GatedComment]) -> String {
    let mut s = String::new();
    for c in comments {
        let _ = writeln!(
            s,
            "**{}** {}:{}\n",
            text::md_code(c.severity.as_str(), 16),
            text::md_code(&c.path, text::LINE_MAX),
            lines(c)
        );
        s.push_str(&text::md_fence("text", &c.body, PAGE_BODY_MAX));
        if let Some(sug) = &c.suggestion {
            let _ = writeln!(s, "\nSuggested replacement:\n");
            s.push_str(&text::md_fence("text", sug, PAGE_BODY_MAX));
        }
        s.push('\n');
    }
    s
}

/// The payload of a GitHub pull-request review (`POST /repos/O/R/pulls/N/reviews`): `event`
/// `COMMENT`, `commit_id` the packed revision, a summary `body`, and one line comment per
/// comment (`path`, `line`, `start_line` for a range, `side` `RIGHT`) whose body is
/// [`render_md`]'s: the worker's Markdown inside a fence, so nothing of it goes live on GitHub.
/// `headings` (not part of GitHub's API: the poster drops it) holds each comment's place as
/// inert Markdown, for a poster that must fold comments GitHub refuses into the body.
pub fn github_review(report: &super::GateReport) -> serde_json::Value {
    let comments: Vec<serde_json::Value> = report
        .comments
        .iter()
        .map(|c| {
            let mut v = serde_json::json!({
                "path": c.path,
                "line": c.end_line,
                "side": "RIGHT",
                "body": render_md(&[c]),
            });
            if c.start_line != c.end_line {
                v["start_line"] = c.start_line.into();
                v["start_side"] = "RIGHT".into();
            }
            v
        })
        .collect();
    let headings: Vec<String> = report
        .comments
        .iter()
        .map(|c| format!("{}:{}", text::md_code(&c.path, text::LINE_MAX), lines(c)))
        .collect();
    serde_json::json!({
        "commit_id": report.bom.revision,
        "event": "COMMENT",
        "body": format!(
            "airlock review of job `{}`: {} ({} comment(s) that passed the gate). The comments are a worker's text, shown as text.",
            report.job,
            report.decision,
            report.comments.len()
        ),
        "comments": comments,
        "headings": headings,
    })
}

/// The comments as HTML: a list, each comment's place in `<code>`, its body and suggestion in
/// `<pre>`, every string escaped ([`text::html`], [`text::html_block`]); classes from a fixed
/// vocabulary only.
pub fn render_html(comments: &[&GatedComment]) -> String {
    let mut s = String::from("<ul class=\"comments\">\n");
    for c in comments {
        let class = match c.severity {
            Severity::Note => "c-note",
            Severity::Warning => "c-warning",
            Severity::Error => "c-error",
        };
        let _ = write!(
            s,
            "<li class=\"comment {class}\"><b>{}</b> <code>{}:{}</code><pre>{}</pre>",
            c.severity.as_str(),
            text::html(&c.path, text::LINE_MAX),
            lines(c),
            text::html_block(&c.body, PAGE_BODY_MAX)
        );
        if let Some(sug) = &c.suggestion {
            let _ = write!(
                s,
                "<p>suggested replacement:</p><pre class=\"suggestion\">{}</pre>",
                text::html_block(sug, PAGE_BODY_MAX)
            );
        }
        s.push_str("</li>\n");
    }
    s.push_str("</ul>\n");
    s
}

/// The comments on `path`.
pub fn on<'a>(comments: &'a [GatedComment], path: &str) -> Vec<&'a GatedComment> {
    comments.iter().filter(|c| c.path == path).collect()
}

/// The comments on none of `paths` (files without a diff on the page).
pub fn elsewhere<'a>(comments: &'a [GatedComment], paths: &[&str]) -> Vec<&'a GatedComment> {
    comments
        .iter()
        .filter(|c| !paths.contains(&c.path.as_str()))
        .collect()
}
