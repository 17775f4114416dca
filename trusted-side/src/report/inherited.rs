//! The review's "inherited" section: a re-dispatched job's worker started from another job's
//! gated checkpoint, and the reviewer must see which changes it inherited and from which job
//! (issue #40). The data ([`Inherited`]) is filled by `gate/inherit.rs` from the trusted side's
//! own copy of the patch; this module renders it for the terminal, Markdown and HTML.
//!
//! Guards against: worker-derived text (the inherited paths came from a hostile worker's
//! checkpoint, the refusal message may quote them) reaching any medium as anything but inert
//! text: every such string goes through [`airlock_core::text`] (`terminal`/`line`, `md_cell`,
//! `md_code`, `html`).
//! Does not check: anything; it renders what it is given.

use std::fmt::Write as _;

use airlock_core::digest::Sha256Digest;
use airlock_core::jobid::JobId;
use airlock_core::text;
use serde::Serialize;

/// What a re-dispatched job's worker started from: the old job's checkpoint patch, as the
/// trusted side's own copy of it reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Inherited {
    /// The job whose checkpoint the worker resumed from (the job record's `resumed_from`).
    pub from_job: JobId,
    /// The pinned SHA-256 of the inherited patch.
    pub patch_sha256: Sha256Digest,
    /// Its pinned size in bytes.
    pub patch_bytes: u64,
    /// Each inherited file, in patch order; empty when the patch was refused.
    pub files: Vec<InheritedFile>,
    /// Why the inherited patch could not be shown (the rule and the reason, one line), when
    /// it could not.
    pub refused: Option<String>,
}

/// One file the new worker inherited.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InheritedFile {
    /// Path in the repository (worker-derived text).
    pub path: String,
    /// `added`, `deleted`, `modified` or `mode-change`.
    pub kind: String,
    /// `+` lines inherited.
    pub lines_added: u64,
    /// `-` lines inherited.
    pub lines_removed: u64,
}

impl Inherited {
    /// `+` and `-` lines over every inherited file.
    pub fn totals(&self) -> (u64, u64) {
        self.files
            .iter()
            .fold((0, 0), |(a, r), f| (a + f.lines_added, r + f.lines_removed))
    }

    fn headline(&self) -> String {
        let (a, r) = self.totals();
        format!(
            "from job {} (checkpoint patch sha256:{}, {} bytes): {} file(s), +{a} -{r}",
            self.from_job,
            self.patch_sha256,
            self.patch_bytes,
            self.files.len()
        )
    }
}

/// The terminal lines (empty for a fresh job).
pub fn render_text(i: Option<&Inherited>) -> String {
    let Some(i) = i else {
        return String::new();
    };
    let mut s = String::new();
    let _ = writeln!(s, "inherited {}", i.headline());
    if let Some(why) = &i.refused {
        let _ = writeln!(s, "  not shown: {}", text::terminal(why, 400));
    }
    for f in &i.files {
        let _ = writeln!(
            s,
            "  {:<11} +{} -{}  {}",
            f.kind,
            f.lines_added,
            f.lines_removed,
            text::line(&f.path)
        );
    }
    s
}

/// The Markdown section (empty for a fresh job): a table of the inherited files.
pub fn render_md(i: Option<&Inherited>) -> String {
    let Some(i) = i else {
        return String::new();
    };
    let mut s = String::new();
    let _ = writeln!(s, "\n### Inherited changes\n");
    let _ = writeln!(
        s,
        "This job's worker started from the gated checkpoint of another job: {}. The diff below includes these changes.\n",
        text::md_code(&i.headline(), text::LINE_MAX)
    );
    if let Some(why) = &i.refused {
        let _ = writeln!(s, "Not shown: {}\n", text::md_code(why, 400));
    }
    if !i.files.is_empty() {
        let _ = writeln!(s, "| path | change | + | - |\n|---|---|---|---|");
        for f in &i.files {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                text::md_cell(&f.path, text::LINE_MAX),
                text::md_cell(&f.kind, 40),
                f.lines_added,
                f.lines_removed
            );
        }
    }
    s
}

/// The HTML section (empty for a fresh job).
pub fn render_html(i: Option<&Inherited>) -> String {
    let Some(i) = i else {
        return String::new();
    };
    let mut s = String::from("<section id=\"inherited\"><h2>Inherited changes</h2>\n");
    let _ = writeln!(
        s,
        "<p>This job's worker started from the gated checkpoint of another job: <code>{}</code>. The diff includes these changes.</p>",
        text::html(&i.headline(), text::LINE_MAX)
    );
    if let Some(why) = &i.refused {
        let _ = writeln!(
            s,
            "<p class=\"reject\">Not shown: <code>{}</code></p>",
            text::html(why, 400)
        );
    }
    if !i.files.is_empty() {
        s.push_str("<table><tr><th>path</th><th>change</th><th>+</th><th>-</th></tr>\n");
        for f in &i.files {
            let _ = writeln!(
                s,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                text::html(&f.path, text::LINE_MAX),
                text::html(&f.kind, 40),
                f.lines_added,
                f.lines_removed
            );
        }
        s.push_str("</table>\n");
    }
    s.push_str("</section>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hostile() -> Inherited {
        Inherited {
            from_job: JobId::parse("20260101T000000Z-00112233445566778899").unwrap(),
            patch_sha256: Sha256Digest::of_bytes(b"p"),
            patch_bytes: 1,
            files: vec![InheritedFile {
                path: "src/a|`</code><script>\u{1b}[31m\u{202e}.rs".into(),
                kind: "modified".into(),
                lines_added: 2,
                lines_removed: 1,
            }],
            refused: None,
        }
    }

    #[test]
    fn a_fresh_job_renders_nothing() {
        assert_eq!(render_text(None), "");
        assert_eq!(render_md(None), "");
        assert_eq!(render_html(None), "");
    }

    #[test]
    fn inherited_paths_are_inert_in_every_medium_and_the_old_job_is_named() {
        let i = hostile();
        let t = render_text(Some(&i));
        assert!(
            t.contains("inherited from job 20260101T000000Z-00112233445566778899"),
            "{t}"
        );
        assert!(t.contains("+2 -1"), "{t}");
        assert!(!t.contains('\u{1b}') && !t.contains('\u{202e}'), "{t}");
        let m = render_md(Some(&i));
        assert!(m.contains("### Inherited changes"), "{m}");
        assert!(m.contains("\\|"), "the cell's pipe is escaped: {m}");
        assert!(!m.contains('\u{1b}') && !m.contains('\u{202e}'), "{m}");
        let h = render_html(Some(&i));
        assert!(
            !h.contains("<script>") && !h.contains("</code><script"),
            "{h}"
        );
        assert!(!h.contains('\u{1b}') && !h.contains('\u{202e}'), "{h}");
        assert!(h.contains("20260101T000000Z-00112233445566778899"), "{h}");
    }
}
