//! The review report as data ([`ReviewPage`]: everything a person needs to decide, in the
//! order they need it) and its Markdown rendering for pull requests ([`render_md`]). The
//! HTML rendering is `html.rs`; `show.rs` fills the page from a gate report or from the
//! ledger and the kept artifact.
//!
//! Guards against: worker-controlled text becoming Markdown or HTML (every such string goes
//! through [`airlock_core::text`]: a code span, a table cell's code span whose `|` cannot split
//! the cell, or a fenced block whose fence no line of the text can close), and a
//! body GitHub refuses (the diff is cut to keep the whole under [`GITHUB_COMMENT_LIMIT`],
//! with a note saying so).
//! Does not check: anything; it renders what it is given.

use std::fmt::Write as _;

use serde::Serialize;

use airlock_core::text;

use super::comments::{self, GatedComment};

/// GitHub's limit on a comment or pull-request body, in characters.
pub const GITHUB_COMMENT_LIMIT: usize = 65_536;

/// Room kept under the limit for the parts after the diff and the truncation note.
const MD_TAIL_RESERVE: usize = 12_000;

/// One reason, as shown.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReasonView {
    /// Stable code.
    pub code: String,
    /// `queue`, `human`, `reject`.
    pub verdict: String,
    /// Path concerned.
    pub path: Option<String>,
    /// Rule id behind it.
    pub rule: Option<String>,
    /// What was seen.
    pub detail: String,
}

/// One line of a hunk with its numbers on each side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LineView {
    /// `+`, `-` or ` `.
    pub sign: char,
    /// Line number on the old side (context and removed lines).
    pub old: Option<u64>,
    /// Line number on the new side (context and added lines).
    pub new: Option<u64>,
    /// The text (as in the patch, untrusted).
    pub text: String,
}

/// One hunk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HunkView {
    /// `@@ -a,b +c,d @@`.
    pub header: String,
    /// Its lines.
    pub lines: Vec<LineView>,
}

/// One changed file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileView {
    /// Path (untrusted text).
    pub path: String,
    /// `added`, `deleted`, `modified`, `mode-change`.
    pub kind: String,
    /// Classifier bucket.
    pub bucket: String,
    /// Classifier rule.
    pub rule: String,
    /// The path's verdict.
    pub verdict: String,
    /// The reasons about this path (code: detail).
    pub reasons: Vec<String>,
    /// `+` lines.
    pub added: u64,
    /// `-` lines.
    pub removed: u64,
    /// The hunks.
    pub hunks: Vec<HunkView>,
}

/// One link of the chain of signatures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChainLink {
    /// What it is (`trusted key`, `bundle envelope`, …).
    pub what: String,
    /// Where it is (object key or path).
    pub location: String,
    /// Key id of the signer (or of the key itself for a key link).
    pub key_id: String,
    /// The digest it names or has.
    pub digest: String,
    /// `verified`, or why not.
    pub status: String,
}

/// The review report of one job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReviewPage {
    /// The job.
    pub job: String,
    /// `queue`, `human`, `reject`, or `not gated`.
    pub decision: String,
    /// Where the page was made from (`gate` or `ledger and kept artifact`).
    pub source: String,
    /// Every reason.
    pub reasons: Vec<ReasonView>,
    /// People's decisions (approve/decline), one line each.
    pub reviews: Vec<String>,
    /// Changed files.
    pub files: Vec<FileView>,
    /// Why the diff is not shown, when it is not.
    pub diff_note: Option<String>,
    /// The prompt.
    pub prompt: Option<String>,
    /// Model requested.
    pub model_requested: Option<String>,
    /// Model reported (a claim).
    pub model_reported: Option<String>,
    /// Tokens in and out (claims).
    pub tokens: Option<(u64, u64)>,
    /// Limits the worker hit.
    pub limits_hit: Vec<String>,
    /// The egress log, one line per attempt.
    pub egress: Vec<String>,
    /// For a failed run: how it ended, and the last lines of `generator.log`.
    pub failed_run: Option<(String, Vec<String>)>,
    /// Bill of materials rows.
    pub bom: Vec<(String, String)>,
    /// The chain of signatures, trusted key first.
    pub chain: Vec<ChainLink>,
    /// The review comments that passed the gate (shown beside their file's diff, or in their
    /// own section for files without one).
    pub comments: Vec<GatedComment>,
    /// For a re-dispatched job: the changes its worker inherited and from which job.
    pub inherited: Option<super::inherited::Inherited>,
}

impl ReviewPage {
    /// The comments on files that have no diff on this page.
    pub fn comments_elsewhere(&self) -> Vec<&GatedComment> {
        let paths: Vec<&str> = self.files.iter().map(|f| f.path.as_str()).collect();
        comments::elsewhere(&self.comments, &paths)
    }
}

impl ReviewPage {
    /// The key ids that signed something in the chain, each once, in chain order.
    pub fn signer_key_ids(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for l in &self.chain {
            if !l.key_id.is_empty() && !out.contains(&l.key_id.as_str()) {
                out.push(&l.key_id);
            }
        }
        out
    }
}

/// One file's diff as unified-diff text, each line cut at 2000 characters (made inert by
/// [`text::md_fence`], which holds it).
fn file_diff_text(f: &FileView) -> String {
    let mut t = String::new();
    for h in &f.hunks {
        let _ = writeln!(t, "{}", text::truncate(&h.header, 2000));
        for l in &h.lines {
            let _ = writeln!(t, "{}{}", l.sign, text::truncate(&l.text, 2000));
        }
    }
    t
}

/// The pull-request body: verdict and reasons first, then each file's diff in a collapsible
/// block, the prompt, the models and the signer key ids; under [`GITHUB_COMMENT_LIMIT`].
pub fn render_md(p: &ReviewPage) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## airlock: {} — job `{}`\n",
        p.decision.to_uppercase(),
        p.job
    );
    let _ = writeln!(s, "### Reasons\n");
    if p.reasons.is_empty() {
        let _ = writeln!(s, "None.");
    }
    for r in &p.reasons {
        let path = r
            .path
            .as_deref()
            .map(|x| format!(" {}", md_code(x)))
            .unwrap_or_default();
        let rule = r
            .rule
            .as_deref()
            .map(|x| format!(" ({})", md_code(x)))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "- **{}** {}{path}{rule}: {}",
            md_code(&r.verdict),
            md_code(&r.code),
            md_code(&r.detail)
        );
    }
    for r in &p.reviews {
        let _ = writeln!(s, "- {}", md_code(r));
    }
    s.push_str(&super::inherited::render_md(p.inherited.as_ref()));
    let elsewhere = p.comments_elsewhere();
    if !elsewhere.is_empty() {
        let _ = writeln!(s, "\n### Review comments\n");
        // Half the room at most, comment by comment: the diff and the tail keep theirs.
        let room = GITHUB_COMMENT_LIMIT.saturating_sub(MD_TAIL_RESERVE) / 2;
        let mut used = s.chars().count();
        let mut shown = 0;
        for c in &elsewhere {
            let block = comments::render_md(&[c]);
            let n = block.chars().count();
            if used + n > room {
                break;
            }
            s.push_str(&block);
            used += n;
            shown += 1;
        }
        if shown < elsewhere.len() {
            let _ = writeln!(
                s,
                "**Comments truncated:** {} more not shown to stay within GitHub's {GITHUB_COMMENT_LIMIT}-character limit; `airlock show {} --html FILE` shows every one.\n",
                elsewhere.len() - shown,
                p.job
            );
        }
    }
    let _ = writeln!(s, "\n### Changes\n");
    if let Some(n) = &p.diff_note {
        let _ = writeln!(s, "{}\n", md_code(n));
    }
    let budget = GITHUB_COMMENT_LIMIT.saturating_sub(MD_TAIL_RESERVE);
    let mut cut = 0usize;
    for f in &p.files {
        let summary = format!(
            "<details><summary>{} {} — {} ({}), {} — +{} −{}</summary>\n\n",
            html_inline(&f.path),
            html_inline(&f.kind),
            html_inline(&f.bucket),
            html_inline(&f.rule),
            html_inline(&f.verdict),
            f.added,
            f.removed
        );
        let mut block = summary;
        for r in &f.reasons {
            let _ = writeln!(block, "- {}", md_code(r));
        }
        block.push('\n');
        block.push_str(&text::md_fence(
            "diff",
            file_diff_text(f).trim_end_matches('\n'),
            usize::MAX,
        ));
        let on = comments::on(&p.comments, &f.path);
        if !on.is_empty() {
            block.push_str("\nReview comments:\n\n");
            block.push_str(&comments::render_md(&on));
        }
        block.push_str("\n</details>\n\n");
        if cut > 0 || s.chars().count() + block.chars().count() > budget {
            cut += 1;
            continue;
        }
        s.push_str(&block);
    }
    if cut > 0 {
        let _ = writeln!(
            s,
            "**Diff truncated:** {cut} file(s) not shown to stay within GitHub's {GITHUB_COMMENT_LIMIT}-character limit; `airlock show {} --html FILE` shows everything.\n",
            p.job
        );
    }
    let _ = writeln!(s, "### Prompt\n");
    match &p.prompt {
        Some(prompt) => s.push_str(&text::md_fence("text", prompt, 4000)),
        None => {
            let _ = writeln!(s, "(not recorded)");
        }
    }
    let _ = writeln!(
        s,
        "\n### Model\n\n- requested: {}\n- reported: {}",
        md_code(p.model_requested.as_deref().unwrap_or("-")),
        md_code(p.model_reported.as_deref().unwrap_or("-"))
    );
    if let Some((i, o)) = p.tokens {
        let _ = writeln!(s, "- tokens: {i} in, {o} out");
    }
    if !p.limits_hit.is_empty() {
        let list: Vec<String> = p.limits_hit.iter().map(|l| md_code(l)).collect();
        let _ = writeln!(s, "\n### Limits hit\n\n{}", list.join(", "));
    }
    if !p.egress.is_empty() {
        let _ = writeln!(s, "\n### Egress\n");
        for e in p.egress.iter().take(200) {
            let _ = writeln!(s, "- {}", md_code(e));
        }
    }
    if let Some((exit, tail)) = &p.failed_run {
        let _ = writeln!(s, "\n### Generator\n\nThe generator {}.\n", md_code(exit));
        if !tail.is_empty() {
            s.push_str(&text::md_fence("text", &tail.join("\n"), usize::MAX));
        }
    }
    let _ = writeln!(
        s,
        "\n### Blast radius\n\n| bucket | files | +lines | −lines |\n|---|---:|---:|---:|"
    );
    let mut rows: std::collections::BTreeMap<&str, (u64, u64, u64)> = Default::default();
    for f in &p.files {
        let r = rows.entry(f.bucket.as_str()).or_default();
        *r = (r.0 + 1, r.1 + f.added, r.2 + f.removed);
    }
    for (b, (n, a, d)) in &rows {
        let _ = writeln!(s, "| {} | {n} | {a} | {d} |", md_cell(b));
    }
    let _ = writeln!(s, "\n### Bill of materials\n\n| | |\n|---|---|");
    for (k, v) in &p.bom {
        let _ = writeln!(s, "| {} | {} |", md_cell(k), md_cell(v));
    }
    let _ = writeln!(s, "\n### Signatures\n");
    for l in &p.chain {
        let _ = writeln!(
            s,
            "- {}: key {} {} ({})",
            l.what,
            md_code(&l.key_id),
            md_code(&l.digest),
            md_code(&l.status)
        );
    }
    let ids = p.signer_key_ids();
    let _ = writeln!(
        s,
        "\nSigner key ids: {}",
        ids.iter()
            .map(|k| md_code(k))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if s.chars().count() > GITHUB_COMMENT_LIMIT {
        // The tail outgrew its reserve (a huge reason list): cut hard, on a char boundary.
        let keep: String = s.chars().take(GITHUB_COMMENT_LIMIT - 200).collect();
        s = format!("{keep}\n\n**Report truncated** to stay within GitHub's limit.\n");
    }
    s
}

/// One line of worker text as a Markdown code span.
fn md_code(s: &str) -> String {
    text::md_code(s, text::LINE_MAX)
}

/// One line of worker text as a code span inside a GFM table cell.
fn md_cell(s: &str) -> String {
    text::md_cell(s, text::LINE_MAX)
}

/// Text for HTML inside Markdown (a `<summary>`).
fn html_inline(s: &str) -> String {
    text::md_html(s, 300)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page_with_files(n: usize, lines: usize) -> ReviewPage {
        let hunk = HunkView {
            header: "@@ -1,0 +1,3 @@".into(),
            lines: (0..lines)
                .map(|i| LineView {
                    sign: '+',
                    old: None,
                    new: Some(i as u64 + 1),
                    text: format!("line {i} ``` </details> <script>x</script>"),
                })
                .collect(),
        };
        ReviewPage {
            job: "20260101T000000Z-00112233445566778899".into(),
            decision: "human".into(),
            reasons: vec![ReasonView {
                code: "ci-path-changed".into(),
                verdict: "human".into(),
                path: Some(".github/workflows/x.yml".into()),
                rule: None,
                detail: "ci path".into(),
            }],
            files: (0..n)
                .map(|i| FileView {
                    path: format!("src/f{i}.rs"),
                    kind: "modified".into(),
                    bucket: "src".into(),
                    rule: "src.rust".into(),
                    verdict: "queue".into(),
                    reasons: vec![],
                    added: lines as u64,
                    removed: 0,
                    hunks: vec![hunk.clone()],
                })
                .collect(),
            prompt: Some("add docs".into()),
            chain: vec![ChainLink {
                what: "trusted key".into(),
                location: ".airlock/trusted.pub".into(),
                key_id: "ab".repeat(32),
                digest: "-".into(),
                status: "verified".into(),
            }],
            ..ReviewPage::default()
        }
    }

    #[test]
    fn verdict_and_reasons_come_first_and_diffs_are_collapsible() {
        let md = render_md(&page_with_files(2, 3));
        let verdict = md.find("HUMAN").unwrap();
        let reasons = md.find("ci-path-changed").unwrap();
        let diff = md.find("<details>").unwrap();
        let prompt = md.find("### Prompt").unwrap();
        assert!(verdict < reasons && reasons < diff && diff < prompt, "{md}");
        assert_eq!(md.matches("<details>").count(), 2);
        // The fence outgrows the backticks inside; no line closes it early.
        assert!(md.contains("````diff"), "{md}");
        assert!(md.contains(&"ab".repeat(32)), "signer key id");
    }

    #[test]
    fn markdown_has_its_sections_and_quotes_worker_text_so_backticks_cannot_close_it() {
        let page = ReviewPage {
            model_reported: Some("evil`](http://x) <img src=x>".into()),
            bom: vec![("model reported".into(), "evil`](http://x)".into())],
            ..page_with_files(1, 2)
        };
        let md = render_md(&page);
        for want in [
            "### Bill of materials",
            "### Blast radius",
            "### Reasons",
            "| `src` | 1 | 2 | 0 |",
        ] {
            assert!(md.contains(want), "missing {want:?} in\n{md}");
        }
        assert!(
            md.contains("- reported: ``evil`](http://x) <img src=x>``"),
            "{md}"
        );
        assert!(
            md.contains("| `model reported` | ``evil`](http://x)`` |"),
            "{md}"
        );
    }

    #[test]
    fn a_thousand_large_comments_are_cut_under_githubs_limit_with_a_note() {
        let c = GatedComment {
            index: 1,
            path: "src/a.rs".into(),
            start_line: 1,
            end_line: 1,
            severity: airlock_core::format::Severity::Note,
            body: "b".repeat(16_000),
            suggestion: None,
            anchored_to: "revision".into(),
            withheld: false,
        };
        let page = ReviewPage {
            comments: vec![c; 1000],
            ..page_with_files(0, 0)
        };
        let md = render_md(&page);
        assert!(md.chars().count() <= GITHUB_COMMENT_LIMIT, "{}", md.len());
        assert!(md.contains("**Comments truncated:**"), "note missing");
        assert!(md.contains("### Signatures"), "the tail survives the cut");
    }

    #[test]
    fn a_huge_diff_is_cut_under_githubs_limit_with_a_note() {
        let md = render_md(&page_with_files(400, 60));
        assert!(md.chars().count() <= GITHUB_COMMENT_LIMIT, "{}", md.len());
        assert!(md.contains("**Diff truncated:**"), "note missing");
        assert!(md.contains("### Signatures"), "the tail survives the cut");
    }
}
