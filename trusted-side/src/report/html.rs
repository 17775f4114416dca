//! The review report as one self-contained HTML file: [`render`] is a pure function from a
//! [`ReviewPage`] to the page's text. Readable offline, with nothing that needs a script:
//! verdict and reasons first, then each changed file with its bucket, rule, reasons and hunks
//! (with line numbers), the prompt, models, limits hit, egress log, the generator log's tail
//! for a failed run, the bill of materials and the chain of signatures.
//!
//! Guards against: worker-controlled text (diffs, paths, model names, logs) acting as markup
//! or script. Every string goes through [`airlock_core::text`]: `& < > " '` become entities, so `<script>`,
//! `</pre>`, attribute break-outs and `javascript:` URLs are inert text (no string is ever put
//! in an attribute or a URL); control characters and bidirectional controls (U+202A-U+202E,
//! U+2066-U+2069, and the other invisible format characters) are replaced by a visible,
//! marked `<U+202E>` token (one set for every output: [`airlock_core::text::is_hidden`]), so a reviewer sees them instead of reading reordered text. The
//! page's Content-Security-Policy forbids every script, remote load, form and frame: even
//! markup that slipped through could not run or fetch anything.
//! Does not check: anything; it renders what it is given.

use std::fmt::Write as _;

use super::comments::GatedComment;
use super::page::{FileView, ReviewPage};

/// The page's Content-Security-Policy: nothing but its own inline style and `data:` images.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
                       base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:75em;padding:0 1em;color:#1b1b1b}\
h1{margin:.2em 0}.verdict{display:inline-block;padding:.1em .5em;border-radius:.3em;color:#fff}\
.v-queue{background:#2e7d32}.v-human{background:#b26a00}.v-reject{background:#b71c1c}.v-not-gated{background:#555}\
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.15em .5em;text-align:left;vertical-align:top}\
table.diff{width:100%;font:12px/1.35 ui-monospace,monospace}table.diff td{border:none;padding:0 .4em;white-space:pre-wrap;word-break:break-all}\
td.ln{color:#888;text-align:right;width:4em;user-select:none}tr.add td.code{background:#e6ffed}tr.del td.code{background:#ffeef0}\
tr.hunk td{background:#f1f8ff;color:#555}pre{background:#f6f8fa;padding:.6em;white-space:pre-wrap;word-break:break-all}\
mark.ctl{background:#ffd54f;color:#000;border:1px solid #c00;font-weight:bold}code{font-family:ui-monospace,monospace}\
section{margin:1.2em 0}.file{border:1px solid #ddd;padding:.5em;margin:.8em 0}\
li.comment{margin:.4em 0}li.c-error b{color:#b71c1c}li.c-warning b{color:#b26a00}";

/// One line of worker text as HTML (every invisible or control character, newline included,
/// a visible mark).
fn text(s: &str) -> String {
    airlock_core::text::html(s, usize::MAX)
}

/// Worker text for a `<pre>` block: as [`text`], keeping newlines and tabs.
fn block(s: &str) -> String {
    airlock_core::text::html_block(s, usize::MAX)
}

/// A class name from a fixed vocabulary (never from untrusted text).
fn verdict_class(v: &str) -> &'static str {
    match v {
        "queue" => "v-queue",
        "human" => "v-human",
        "reject" => "v-reject",
        _ => "v-not-gated",
    }
}

fn num(n: Option<u64>) -> String {
    n.map_or_else(String::new, |n| n.to_string())
}

fn file_section(s: &mut String, i: usize, f: &FileView, comments: &[GatedComment]) {
    let _ = writeln!(
        s,
        "<div class=\"file\" id=\"file-{i}\"><h3><code>{}</code></h3>\n<p>{} · bucket <b>{}</b> · rule <code>{}</code> · verdict <span class=\"verdict {}\">{}</span> · +{} −{}</p>",
        text(&f.path),
        text(&f.kind),
        text(&f.bucket),
        text(&f.rule),
        verdict_class(&f.verdict),
        text(&f.verdict),
        f.added,
        f.removed
    );
    if !f.reasons.is_empty() {
        s.push_str("<ul>");
        for r in &f.reasons {
            let _ = write!(s, "<li>{}</li>", text(r));
        }
        s.push_str("</ul>\n");
    }
    if f.hunks.is_empty() {
        s.push_str("<p>(no hunks: a mode change, an empty file, or the diff is not available)</p>");
    } else {
        s.push_str("<table class=\"diff\">\n");
        for h in &f.hunks {
            let _ = writeln!(
                s,
                "<tr class=\"hunk\"><td class=\"ln\"></td><td class=\"ln\"></td><td class=\"code\">{}</td></tr>",
                text(&h.header)
            );
            for l in &h.lines {
                let class = match l.sign {
                    '+' => "add",
                    '-' => "del",
                    _ => "ctx",
                };
                let _ = writeln!(
                    s,
                    "<tr class=\"{class}\"><td class=\"ln\">{}</td><td class=\"ln\">{}</td><td class=\"code\">{}{}</td></tr>",
                    num(l.old),
                    num(l.new),
                    l.sign,
                    text(&l.text)
                );
            }
        }
        s.push_str("</table>\n");
    }
    let on = super::comments::on(comments, &f.path);
    if !on.is_empty() {
        s.push_str("<h4>Review comments</h4>\n");
        s.push_str(&super::comments::render_html(&on));
    }
    s.push_str("</div>\n");
}

/// The whole page. Pure: the same page data gives the same bytes.
pub fn render(p: &ReviewPage) -> String {
    let mut s = String::with_capacity(16 * 1024);
    let verdict = p.decision.to_uppercase();
    let _ = writeln!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>airlock review: {} — {}</title>\n<style>{STYLE}</style></head><body>",
        text(&p.job),
        text(&verdict)
    );
    let _ = writeln!(
        s,
        "<header><h1>Verdict: <span id=\"verdict\" class=\"verdict {}\">{}</span></h1>\n<p>job <code>{}</code> · from {}</p></header>",
        verdict_class(&p.decision),
        text(&verdict),
        text(&p.job),
        text(&p.source)
    );

    s.push_str("<section id=\"reasons\"><h2>Reasons</h2>\n");
    if p.reasons.is_empty() {
        s.push_str("<p>None.</p>\n");
    } else {
        s.push_str("<table><tr><th>verdict</th><th>code</th><th>path</th><th>rule</th><th>detail</th></tr>\n");
        for r in &p.reasons {
            let _ = writeln!(
                s,
                "<tr class=\"reason\"><td><span class=\"verdict {}\">{}</span></td><td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>",
                verdict_class(&r.verdict),
                text(&r.verdict),
                text(&r.code),
                text(r.path.as_deref().unwrap_or("")),
                text(r.rule.as_deref().unwrap_or("")),
                text(&r.detail)
            );
        }
        s.push_str("</table>\n");
    }
    s.push_str("</section>\n");
    s.push_str(&super::inherited::render_html(p.inherited.as_ref()));

    let elsewhere = p.comments_elsewhere();
    if !elsewhere.is_empty() {
        let _ = writeln!(
            s,
            "<section id=\"comments\"><h2>Review comments ({})</h2>",
            elsewhere.len()
        );
        s.push_str(&super::comments::render_html(&elsewhere));
        s.push_str("</section>\n");
    }

    s.push_str("<section id=\"reviews\"><h2>People's decisions</h2>\n");
    if p.reviews.is_empty() {
        s.push_str(
            "<p>None recorded (<code>airlock approve</code> / <code>airlock decline</code>).</p>\n",
        );
    } else {
        s.push_str("<ul>");
        for r in &p.reviews {
            let _ = write!(s, "<li>{}</li>", text(r));
        }
        s.push_str("</ul>\n");
    }
    s.push_str("</section>\n");

    let _ = writeln!(
        s,
        "<section id=\"files\"><h2>Changed files ({})</h2>",
        p.files.len()
    );
    if let Some(n) = &p.diff_note {
        let _ = writeln!(s, "<p><b>{}</b></p>", text(n));
    }
    if !p.files.is_empty() {
        s.push_str("<table><tr><th>path</th><th>change</th><th>bucket</th><th>rule</th><th>verdict</th><th>+</th><th>−</th></tr>\n");
        for f in &p.files {
            let _ = writeln!(
                s,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                text(&f.path),
                text(&f.kind),
                text(&f.bucket),
                text(&f.rule),
                text(&f.verdict),
                f.added,
                f.removed
            );
        }
        s.push_str("</table>\n");
    }
    for (i, f) in p.files.iter().enumerate() {
        file_section(&mut s, i, f, &p.comments);
    }
    s.push_str("</section>\n");

    s.push_str("<section id=\"prompt\"><h2>Prompt</h2>\n");
    match &p.prompt {
        Some(t) => {
            let _ = writeln!(s, "<pre>{}</pre>", block(t));
        }
        None => s.push_str("<p>(not recorded)</p>\n"),
    }
    s.push_str("</section>\n");

    let _ = writeln!(
        s,
        "<section id=\"model\"><h2>Model</h2><table><tr><th>requested</th><td><code>{}</code></td></tr><tr><th>reported (worker's claim)</th><td><code>{}</code></td></tr><tr><th>tokens</th><td>{}</td></tr></table></section>",
        text(p.model_requested.as_deref().unwrap_or("-")),
        text(p.model_reported.as_deref().unwrap_or("-")),
        p.tokens
            .map_or_else(|| "-".to_owned(), |(i, o)| format!("{i} in, {o} out"))
    );

    s.push_str("<section id=\"limits\"><h2>Limits hit</h2>\n");
    if p.limits_hit.is_empty() {
        s.push_str("<p>None.</p>\n");
    } else {
        s.push_str("<ul>");
        for l in &p.limits_hit {
            let _ = write!(s, "<li><code>{}</code></li>", text(l));
        }
        s.push_str("</ul>\n");
    }
    s.push_str("</section>\n");

    s.push_str("<section id=\"egress\"><h2>Egress log</h2>\n");
    if p.egress.is_empty() {
        s.push_str("<p>No connection attempts recorded.</p>\n");
    } else {
        let _ = writeln!(s, "<pre>{}</pre>", block(&p.egress.join("\n")));
    }
    s.push_str("</section>\n");

    if let Some((exit, tail)) = &p.failed_run {
        let _ = writeln!(
            s,
            "<section id=\"log\"><h2>Generator: {}</h2><pre>{}</pre></section>",
            text(exit),
            block(&tail.join("\n"))
        );
    }

    s.push_str("<section id=\"bom\"><h2>Bill of materials</h2><table>\n");
    for (k, v) in &p.bom {
        let _ = writeln!(
            s,
            "<tr><th>{}</th><td><code>{}</code></td></tr>",
            text(k),
            text(v)
        );
    }
    s.push_str("</table></section>\n");

    s.push_str("<section id=\"chain\"><h2>Chain of signatures</h2>\n<ol>\n");
    for l in &p.chain {
        let _ = writeln!(
            s,
            "<li class=\"link\"><b>{}</b> <code>{}</code><br>key id <code>{}</code><br>digest <code>{}</code><br>{}</li>",
            text(&l.what),
            text(&l.location),
            text(&l.key_id),
            text(&l.digest),
            text(&l.status)
        );
    }
    s.push_str("</ol></section>\n</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::page::{HunkView, LineView, ReasonView};

    fn hostile_page() -> ReviewPage {
        let evil = "<script>document.title='pwned'</script></pre>\"><img src=x onerror=alert(1)> <a href=\"javascript:alert(1)\">x</a> abc\u{202e}cba\u{2066}z\u{1b}[2J";
        ReviewPage {
            job: "20260101T000000Z-00112233445566778899".into(),
            decision: "human".into(),
            reasons: vec![ReasonView {
                code: "ci-path-changed".into(),
                verdict: "human".into(),
                path: Some(evil.into()),
                rule: None,
                detail: evil.into(),
            }],
            files: vec![FileView {
                path: evil.into(),
                kind: "added".into(),
                bucket: "ci".into(),
                rule: "ci.x".into(),
                verdict: "human".into(),
                reasons: vec![evil.into()],
                added: 1,
                removed: 0,
                hunks: vec![HunkView {
                    header: "@@ -0,0 +1 @@".into(),
                    lines: vec![LineView {
                        sign: '+',
                        old: None,
                        new: Some(1),
                        text: evil.into(),
                    }],
                }],
            }],
            prompt: Some(evil.into()),
            model_reported: Some(evil.into()),
            ..ReviewPage::default()
        }
    }

    #[test]
    fn hostile_text_is_inert_and_controls_are_visible() {
        let html = render(&hostile_page());
        assert!(!html.contains("<script"), "a script tag survived");
        assert!(!html.contains("<img"), "an img tag survived");
        assert!(!html.contains("<a "), "a link survived");
        assert!(!html.contains("\"><img"), "an attribute break-out survived");
        assert!(html.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));
        assert!(
            !html.contains('\u{202e}') && !html.contains('\u{2066}') && !html.contains('\u{1b}')
        );
        assert!(html.contains("&lt;U+202E&gt;") && html.contains("&lt;U+2066&gt;"));
        assert!(html.contains("&lt;U+001B&gt;"));
        assert!(html.contains("&lt;script&gt;document.title"));
        assert_eq!(
            html.matches("</pre>").count(),
            html.matches("<pre>").count()
        );
        assert!(html.contains(CSP));
        let title = html.find("<title>").unwrap();
        let verdict = html.find("id=\"verdict\"").unwrap();
        let reasons = html.find("id=\"reasons\"").unwrap();
        let files = html.find("id=\"files\"").unwrap();
        assert!(title < verdict && verdict < reasons && reasons < files);
    }

    #[test]
    fn rendering_is_pure() {
        assert_eq!(render(&hostile_page()), render(&hostile_page()));
    }
}
