//! The `report` target: a review page built from hostile worker text (a unified diff, file
//! paths, model names, the prompt, the generator log's tail, reasons' details, egress lines,
//! bill-of-materials values, signature statuses) through the HTML report ([`html::render`])
//! and the Markdown report ([`render_md`]).
//!
//! The page's "inherited" section (a resumed job's inherited paths, the refusal message) takes
//! fields too.
//!
//! Input: text. Lines before a line `=== diff` are fields, handed out in turn to the page's
//! worker-controlled strings (the prompt and the log tail take them all); the lines after it
//! are a unified diff: `+++ b/PATH` starts a file, `@@` a hunk, each other line is a hunk line
//! with its first character as the sign. Every string is put on the page between two
//! [`MARKER`]s, and cut to [`MAX_FIELD`] characters so that no renderer cut removes them.
//! Invariants asserted:
//! - HTML: no `<script` (any case) beyond the template's own count, no raw bidi control
//!   ([`BIDI`]) anywhere, and no `<` from the input unescaped (the marker never appears);
//! - Markdown: no raw bidi control anywhere; every marker lies inside a code span or a fenced
//!   block the renderer opened (so input never closes the span or fence it is in), except in a
//!   file's `<summary>` line, where the input is HTML-escaped (no marker at all).

use crate::report::html;
use crate::report::inherited::{Inherited, InheritedFile};
use crate::report::page::{
    render_md, ChainLink, FileView, HunkView, LineView, ReasonView, ReviewPage,
};

/// Put before and after every input string: a `<` that must never survive unescaped in HTML.
pub const MARKER: &str = "<zz";

/// Characters of input per string, at most (below the renderers' own cuts).
pub const MAX_FIELD: usize = 150;

/// Bidirectional controls that must never appear raw in either report.
pub const BIDI: &[char] = &[
    '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}',
    '\u{2069}', '\u{200e}', '\u{200f}', '\u{061c}',
];

/// Files of a page, at most.
const MAX_FILES: usize = 16;

/// How big the page got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The page has at least one hunk line.
    WithDiff,
    /// No diff lines.
    NoDiff,
}

/// `s` cut to [`MAX_FIELD`] characters, between markers.
fn field(s: &str) -> String {
    let cut: String = s.chars().take(MAX_FIELD).collect();
    format!("{MARKER}{cut}{MARKER}")
}

/// Fields handed out in turn: the next one, or a fixed one when the input has none.
struct Fields<'a> {
    all: Vec<&'a str>,
    next: usize,
}

impl Fields<'_> {
    fn take(&mut self) -> String {
        if self.all.is_empty() {
            return field("");
        }
        let s = self.all[self.next % self.all.len()];
        self.next += 1;
        field(s)
    }
}

fn parse_diff(diff: &str, fields: &mut Fields<'_>) -> Vec<FileView> {
    let mut files: Vec<FileView> = Vec::new();
    let (mut old, mut new) = (1u64, 1u64);
    for line in diff.lines() {
        if let Some(path) = line.strip_prefix("+++ ") {
            if files.len() == MAX_FILES {
                break;
            }
            let path = path.strip_prefix("b/").unwrap_or(path);
            files.push(FileView {
                path: field(path),
                kind: "modified".into(),
                bucket: "src".into(),
                rule: "src.code".into(),
                verdict: "queue".into(),
                reasons: vec![fields.take()],
                added: 0,
                removed: 0,
                hunks: Vec::new(),
            });
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if line.starts_with("@@") {
            file.hunks.push(HunkView {
                header: format!("@@ -{old},0 +{new},0 @@"),
                lines: Vec::new(),
            });
            continue;
        }
        let Some(hunk) = file.hunks.last_mut() else {
            continue;
        };
        let mut chars = line.chars();
        let sign = chars.next().unwrap_or(' ');
        let text = field(chars.as_str());
        let (o, n) = match sign {
            '+' => {
                file.added += 1;
                new += 1;
                (None, Some(new - 1))
            }
            '-' => {
                file.removed += 1;
                old += 1;
                (Some(old - 1), None)
            }
            _ => {
                old += 1;
                new += 1;
                (Some(old - 1), Some(new - 1))
            }
        };
        hunk.lines.push(LineView {
            sign: if matches!(sign, '+' | '-') { sign } else { ' ' },
            old: o,
            new: n,
            text,
        });
    }
    files
}

/// Builds the page of an input (see the module doc).
pub fn page(data: &[u8]) -> ReviewPage {
    let text = String::from_utf8_lossy(data);
    let (head, diff) = match text.split_once("\n=== diff\n") {
        Some((h, d)) => (h, d),
        None => (text.as_ref(), ""),
    };
    let mut f = Fields {
        all: head.lines().collect(),
        next: 0,
    };
    let files = parse_diff(diff, &mut f);
    let all_lines: Vec<String> = f.all.iter().map(|l| field(l)).collect();
    ReviewPage {
        job: "20260101T000000Z-00112233445566778899".into(),
        decision: "human".into(),
        source: "gate".into(),
        reasons: vec![ReasonView {
            code: "ci-path-changed".into(),
            verdict: "human".into(),
            path: Some(f.take()),
            rule: Some(f.take()),
            detail: f.take(),
        }],
        reviews: vec![f.take()],
        files,
        diff_note: Some(f.take()),
        prompt: Some(all_lines.join("\n")),
        model_requested: Some(f.take()),
        model_reported: Some(f.take()),
        tokens: Some((12, 34)),
        limits_hit: vec![f.take()],
        egress: vec![f.take()],
        failed_run: Some((f.take(), all_lines.clone())),
        bom: vec![("model reported".into(), f.take())],
        chain: vec![ChainLink {
            what: "bundle envelope".into(),
            location: f.take(),
            key_id: f.take(),
            digest: f.take(),
            status: f.take(),
        }],
        comments: vec![crate::report::comments::GatedComment {
            index: 1,
            path: f.take(),
            start_line: 1,
            end_line: 2,
            severity: airlock_core::format::Severity::Warning,
            body: f.take(),
            suggestion: Some(f.take()),
            anchored_to: "revision".into(),
            withheld: false,
        }],
        inherited: Some(Inherited {
            from_job: airlock_core::jobid::JobId::new(1_767_225_600, [0x99; 10]),
            patch_sha256: airlock_core::digest::Sha256Digest::of_bytes(data),
            patch_bytes: data.len() as u64,
            files: vec![InheritedFile {
                path: f.take(),
                kind: "modified".into(),
                lines_added: 1,
                lines_removed: 0,
            }],
            refused: Some(f.take()),
        }),
    }
}

/// Occurrences of `<script`, any case.
fn scripts(html: &str) -> usize {
    html.to_ascii_lowercase().matches("<script").count()
}

/// The template's own `<script` count: a page of benign fields.
fn template_scripts() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| scripts(&html::render(&page(b"x\n=== diff\n+++ b/x\n@@\n+x\n"))))
}

fn check_html(html: &str) {
    assert_eq!(
        scripts(html),
        template_scripts(),
        "a <script from the input survived in the HTML"
    );
    assert!(!html.contains(BIDI), "a raw bidi control in the HTML");
    assert!(
        !html.contains(MARKER),
        "a `<` from the input is unescaped in the HTML"
    );
}

/// Byte ranges of `md` that are code: fenced blocks (a line opening with three or more
/// backticks, closed by a line of at least as many) and inline code spans (a backtick run
/// closed by the next run of the same length on the line), as CommonMark reads them.
pub fn code_ranges(md: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut fence: Option<(usize, usize)> = None; // (backticks, start of the block's text)
    let mut at = 0;
    for line in md.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let body = line.trim_end_matches('\n');
        let ticks = body.len() - body.trim_start_matches('`').len();
        if let Some((n, from)) = fence {
            if ticks >= n && body[ticks..].trim().is_empty() {
                out.push((from, start));
                fence = None;
            }
            continue;
        }
        if ticks >= 3 && !body[ticks..].contains('`') {
            fence = Some((ticks, at));
            continue;
        }
        let b = body.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'`' {
                i += 1;
                continue;
            }
            let run = b[i..].iter().take_while(|&&c| c == b'`').count();
            let open_end = i + run;
            let mut j = open_end;
            let mut closed = None;
            while j < b.len() {
                if b[j] == b'`' {
                    let r = b[j..].iter().take_while(|&&c| c == b'`').count();
                    if r == run {
                        closed = Some(j);
                        break;
                    }
                    j += r;
                } else {
                    j += 1;
                }
            }
            match closed {
                Some(j) => {
                    out.push((start + open_end, start + j));
                    i = j + run;
                }
                None => i = open_end,
            }
        }
    }
    if let Some((_, from)) = fence {
        out.push((from, md.len()));
    }
    out
}

fn check_md(md: &str) {
    assert!(!md.contains(BIDI), "a raw bidi control in the Markdown");
    let code = code_ranges(md);
    let mut at = 0;
    for line in md.split_inclusive('\n') {
        let start = at;
        at += line.len();
        if line.starts_with("<details><summary>") {
            assert!(
                !line.contains(MARKER),
                "a `<` from the input is unescaped in a <summary>: {line:?}"
            );
            let inner = line
                .trim_end()
                .trim_start_matches("<details><summary>")
                .trim_end_matches("</summary>");
            assert!(
                !inner.contains(['<', '>', '`']),
                "markup from the input in a <summary>: {line:?}"
            );
            continue;
        }
        for (i, _) in line.match_indices(MARKER) {
            let (s, e) = (start + i, start + i + MARKER.len());
            assert!(
                code.iter().any(|&(a, b)| a <= s && e <= b),
                "input outside its code span or fence at byte {s}: {line:?}"
            );
        }
    }
}

/// The `report` target: renders the page of `data` as HTML and Markdown, checks both.
pub fn report(data: &[u8]) -> Outcome {
    let p = page(data);
    check_html(&html::render(&p));
    check_md(&render_md(&p));
    if p.files
        .iter()
        .any(|f| f.hunks.iter().any(|h| !h.lines.is_empty()))
    {
        Outcome::WithDiff
    } else {
        Outcome::NoDiff
    }
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
