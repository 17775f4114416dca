//! Secret values are never published: every rendering of worker text that a report, `show` or
//! `compare` prints (the patch's lines, the generator log's tail, egress lines) is scanned with
//! the gate's detectors first, and each line a finding covers is replaced whole by
//! `[secret masked: RULE, fingerprint FP]` (continuation lines of a multi-line value by
//! `[secret masked]`).
//!
//! Guards against: a rejected job (`secret-in-added-line`) publishing the very credential it
//! was rejected for, in a pull-request body, an HTML page or a terminal. The finding (path,
//! line, rule id) stays visible in the reasons; the fingerprint (the scanner's short hash of
//! rule and value) lets a person match findings without seeing the value.
//! Does not check: secrets the detectors do not know (the scanner's own limits).

use airlock_core::diff::FilePatch;
use anyhow::Result;

/// The line shown instead of the first line of a finding.
pub fn masked(rule: &str, fingerprint: &str) -> String {
    format!("[secret masked: {rule}, fingerprint {fingerprint}]")
}

/// The line shown instead of each further line of a multi-line finding.
pub const MASKED_MORE: &str = "[secret masked]";

/// Masks, in place, every line of `lines` that a finding of the gate's scanner covers (the
/// lines are scanned together, joined by `\n`, as `what`).
pub fn mask_lines(scanner: &airlock_scan::Scanner, what: &str, lines: &mut [String]) {
    if lines.is_empty() {
        return;
    }
    let text = lines.join("\n");
    for f in scanner.scan(what, text.as_bytes()) {
        let first = usize::try_from(f.line.saturating_sub(1)).unwrap_or(usize::MAX);
        let last = usize::try_from(f.end_line.saturating_sub(1)).unwrap_or(usize::MAX);
        for i in first..=last.max(first) {
            let Some(line) = lines.get_mut(i) else {
                break;
            };
            *line = if i == first {
                masked(&f.rule_id, &f.fingerprint)
            } else if line.starts_with("[secret masked: ") {
                continue;
            } else {
                MASKED_MORE.to_owned()
            };
        }
    }
}

/// Masks, in place, the lines of every hunk of `files` (added, removed and context alike) that
/// hold a secret, file by file.
pub fn mask_patch(scanner: &airlock_scan::Scanner, files: &mut [FilePatch]) {
    for fp in files {
        let mut lines: Vec<String> = fp
            .hunks
            .iter()
            .flat_map(|h| h.lines.iter().map(|l| l.text.clone()))
            .collect();
        mask_lines(scanner, &fp.path, &mut lines);
        let mut it = lines.into_iter();
        for h in &mut fp.hunks {
            for l in &mut h.lines {
                if let Some(t) = it.next() {
                    l.text = t;
                }
            }
        }
    }
}

/// The scanner the masks use: the one the gate rejects with (`fetch::worker_text::scanner`),
/// so what rejects a job is what is masked in its reports.
pub fn scanner() -> Result<&'static airlock_scan::Scanner> {
    crate::fetch::worker_text::scanner()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Built from parts so no scanner of this repository flags the test itself.
    const AWS: &str = concat!("AKIA", "R2VQ6ZK4MX7NW3LT");
    const GH: &str = concat!("ghp_", "R8mZq3Vt7Kx2Lp9Wn4Hc6Yb1Jd5Gf0Su8Ea3");

    #[test]
    fn lines_holding_an_aws_key_id_or_a_github_token_are_masked_whole() {
        let s = scanner().unwrap();
        let mut lines = vec![
            "let ok = 1;".to_owned(),
            format!("let key = \"{AWS}\";"),
            format!("token={GH}"),
        ];
        mask_lines(s, "x.rs", &mut lines);
        assert_eq!(lines[0], "let ok = 1;");
        for l in &lines[1..] {
            assert!(l.starts_with("[secret masked: "), "{l}");
            assert!(l.contains(", fingerprint "), "{l}");
            assert!(!l.contains(AWS) && !l.contains(GH), "{l}");
        }
    }
}
