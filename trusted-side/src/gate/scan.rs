//! Step 9: the secret scan of the patch's added lines, with the same detectors as pack.
//!
//! Guards against: a generator writing a credential into the code (`secret-in-added-line`,
//! reject), and a report that would repeat it: a reason names the path, the new-side line and
//! the detector's rule id, never the value. Inline allow comments in the diff do not count:
//! the worker wrote them.
//! Does not check: removed or context lines (they were in the packed tree, scanned by pack).

use std::collections::HashSet;

use airlock_core::diff::ParsedPatch;
use anyhow::Result;

use super::policy::Verdict;
use crate::reasons::ReasonCode;
use crate::report::Reason;

/// Most secret findings listed one by one; the rest are counted in one more reason.
pub const MAX_SECRET_REASONS: usize = 50;

/// The scanner for added lines: the built-in detectors, inline allow comments ignored.
pub fn scanner() -> Result<&'static airlock_scan::Scanner> {
    crate::fetch::worker_text::scanner()
}

/// One `secret-in-worker-text` reject per finding in the worker's log or review,
/// `member:line: rule`, never the value.
pub fn worker_text_reasons(
    findings: &[crate::fetch::worker_text::WorkerTextFinding],
) -> Vec<Reason> {
    findings
        .iter()
        .take(MAX_SECRET_REASONS)
        .map(|f| {
            Reason::new(
                ReasonCode::SecretInWorkerText,
                Verdict::Reject,
                format!("{}:{}: {}", f.member, f.line, f.rule),
            )
            .rule(f.rule.clone())
        })
        .collect()
}

/// Scans each file's added lines (joined with `\n`) and maps findings back to new-side
/// line numbers. One `secret-in-added-line` reject per finding, `path:line: rule`, up to
/// [`MAX_SECRET_REASONS`], then one reason counting the rest.
pub fn scan_added_lines(scanner: &airlock_scan::Scanner, patch: &ParsedPatch) -> Vec<Reason> {
    let mut out = Vec::new();
    let mut more = 0usize;
    for fp in &patch.files {
        let lines: Vec<(u64, &str)> = fp.added_lines().collect();
        if lines.is_empty() {
            continue;
        }
        let mut text = String::new();
        for (_, t) in &lines {
            text.push_str(t);
            text.push('\n');
        }
        let mut seen: HashSet<(u64, String)> = HashSet::new();
        for f in scanner.scan(&fp.path, text.as_bytes()) {
            let idx = usize::try_from(f.line.saturating_sub(1)).unwrap_or(usize::MAX);
            let line = lines.get(idx).map_or(0, |(n, _)| *n);
            if !seen.insert((line, f.rule_id.clone())) {
                continue;
            }
            if out.len() >= MAX_SECRET_REASONS {
                more += 1;
                continue;
            }
            out.push(
                Reason::new(
                    ReasonCode::SecretInAddedLine,
                    Verdict::Reject,
                    format!("{}:{line}: {}", fp.path, f.rule_id),
                )
                .at(&fp.path)
                .rule(f.rule_id.clone()),
            );
        }
    }
    if more > 0 {
        out.push(Reason::new(
            ReasonCode::SecretInAddedLine,
            Verdict::Reject,
            format!("{more} more secret finding(s) not listed"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_core::diff::{parse_patch, DiffLimits};

    fn patch(text: &str) -> ParsedPatch {
        parse_patch(text.as_bytes(), &DiffLimits::default()).unwrap()
    }

    #[test]
    fn secret_scan_names_path_line_and_rule_never_the_value() {
        let key = format!("AKIA{}", "Q7RZ4MX2NV5WLT3K");
        let text = format!(
            "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -10,2 +10,4 @@\n x\n+y = 1\n+aws_access_key_id = \"{key}\"\n-z\n+w\n"
        );
        let scanner = airlock_scan::Scanner::with_default_rules()
            .unwrap()
            .with_inline_allow(false);
        let rs = scan_added_lines(&scanner, &patch(&text));
        assert!(!rs.is_empty(), "the planted key was not found");
        assert!(rs
            .iter()
            .all(|r| r.code == ReasonCode::SecretInAddedLine && r.verdict == Verdict::Reject));
        assert!(
            rs[0].detail.starts_with("src/a.py:12: "),
            "{}",
            rs[0].detail
        );
        assert!(rs.iter().all(|r| !r.detail.contains(&key)), "{rs:?}");
    }

    #[test]
    fn inline_allow_comment_in_the_diff_does_not_waive_a_finding() {
        let key = format!("ghp_{}", "x7Kp2Lq9Wm4Rt6Yz8Nb3Vc5Hd1Jf0Gs2Ae4U");
        let text = format!("diff --git a/a.py b/a.py\nnew file mode 100644\n--- /dev/null\n+++ b/a.py\n@@ -0,0 +1 @@\n+t = \"{key}\"  # airlock:allow\n");
        let scanner = airlock_scan::Scanner::with_default_rules()
            .unwrap()
            .with_inline_allow(false);
        assert!(!scan_added_lines(&scanner, &patch(&text)).is_empty());
    }
}
