//! The secret scan of the text a worker returns beside its patch: `generator.log` and
//! `review.md`, whole (each is at most one artifact member, `TarLimits::artifact`).
//!
//! Guards against: a generator that prints a credential into its log or review, which the
//! terminal, the review pages, a pull-request body and the ledger would otherwise publish. A
//! finding names the member, the line and the detector's rule id, never the value; the gate
//! rejects the job (`secret-in-worker-text`) and the log's tail is withheld from every output.
//! Does not check: the patch's added lines (`gate/scan.rs`, the same scanner) or the job's
//! minted model key in any encoding (`key_leak.rs`).

use anyhow::{Context, Result};

/// The artifact members scanned here.
pub const SCANNED_MEMBERS: [&str; 2] = ["generator.log", "review.md"];

/// What the log's tail becomes when the log holds a finding.
pub const WITHHELD_TAIL: &[u8] =
    b"[generator.log withheld: it holds a secret finding (secret-in-worker-text)]\n";

/// One finding: where, and which detector; never the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerTextFinding {
    /// The artifact member (`generator.log` or `review.md`).
    pub member: String,
    /// 1-based line in the member.
    pub line: u64,
    /// The detector's rule id.
    pub rule: String,
}

/// The scanner for worker output: the built-in detectors, inline allow comments ignored (the
/// worker wrote them). The gate's added-line scan uses the same one. Built once per process
/// and shared (its rules are the built-in ones, and each regex is compiled on first use): a
/// watch gating job after job compiled the same regexes again for every scan of every job.
pub fn scanner() -> Result<&'static airlock_scan::Scanner> {
    static SCANNER: std::sync::OnceLock<airlock_scan::Scanner> = std::sync::OnceLock::new();
    if let Some(s) = SCANNER.get() {
        return Ok(s);
    }
    let scanner = airlock_scan::Scanner::with_default_detectors()
        .context("secret scanner rules")?
        .with_inline_allow(false)
        .with_small_inputs();
    Ok(SCANNER.get_or_init(|| scanner))
}

/// Scans each kept member, one finding per (member, line, rule).
pub fn scan(texts: &[(String, Vec<u8>)]) -> Result<Vec<WorkerTextFinding>> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let scanner = scanner()?;
    let mut out: Vec<WorkerTextFinding> = Vec::new();
    for (member, bytes) in texts {
        for f in scanner.scan(member, bytes) {
            let finding = WorkerTextFinding {
                member: member.clone(),
                line: f.line,
                rule: f.rule_id.clone(),
            };
            if !out.contains(&finding) {
                out.push(finding);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_in_the_log_is_found_by_line_and_rule_never_by_value() {
        let key = ["AKIA", "Q7RZ", "4MX2", "NV5W", "LT3K"].concat();
        let log = format!("step 1\nexport AWS_ACCESS_KEY_ID={key}\n");
        let found = scan(&[("generator.log".into(), log.into_bytes())]).unwrap();
        assert!(!found.is_empty(), "no finding");
        assert!(found
            .iter()
            .all(|f| f.member == "generator.log" && f.line == 2));
        assert!(found.iter().all(|f| !f.rule.contains(&key)));
    }

    #[test]
    fn plain_text_has_no_finding() {
        let found = scan(&[("review.md".into(), b"Looks fine.\n".to_vec())]).unwrap();
        assert!(found.is_empty(), "{found:?}");
    }
}
