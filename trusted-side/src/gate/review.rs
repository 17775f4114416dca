//! Step 13: writes the optional review branch `airlock/<job>`, without touching the user's
//! checkout, HEAD, index or other branches.
//!
//! How (plumbing, through [`crate::git::Git`]): the apply is repeated in a temporary index,
//! this time into the repository's own object store; `git write-tree` must give the tree the
//! check gave; then `git commit-tree` (fixed identity, dates = the store's landing time, no
//! signing) and `git update-ref refs/heads/airlock/<job> <new> <expected old>`. It refuses
//! when that branch is checked out in any worktree.
//!
//! Guards against: commit trailers forged through worker-controlled text ([`trailer_value`]),
//! moving a checked-out branch, a review commit that differs from what was checked (the tree
//! comparison).
//! Does not check: the patch (the checks and `apply.rs` did).

use anyhow::{bail, Context, Result};
use std::path::Path;

use super::policy::Verdict;
use crate::fetch::Fetched;
use crate::git::{is_full_oid, Git};
use crate::report::{GateReport, Reason, GATE_VERSION};

/// What goes into the review commit.
#[derive(Debug, Clone)]
pub struct ReviewCommit<'a> {
    /// The job id (branch `airlock/<job>`).
    pub job: &'a str,
    /// Parent: the packed revision.
    pub revision: &'a str,
    /// The tree the check produced; the review apply must give the same.
    pub expected_tree: &'a str,
    /// The patch.
    pub patch_bytes: &'a [u8],
    /// Commit message subject and body (without trailers).
    pub message: String,
    /// Trailers, in order.
    pub trailers: Vec<(&'static str, String)>,
    /// Author and committer date, unix seconds.
    pub date_unix: u64,
}

/// The review commit of a concluded report: subject, the notable reasons, and the trailers.
pub fn review_commit<'a>(
    report: &GateReport,
    fetched: &'a Fetched,
    patch_bytes: &'a [u8],
    expected_tree: &'a str,
) -> ReviewCommit<'a> {
    let st = report.stats;
    let record = &fetched.record;
    let mut message = format!(
        "airlock: job {} ({})\n\nGenerated on an untrusted worker; gated by {GATE_VERSION}: {} files, +{} -{}.\n",
        record.job, report.decision, st.files_changed, st.lines_added, st.lines_removed
    );
    let notable: Vec<&Reason> = report
        .reasons
        .iter()
        .filter(|r| r.verdict != Verdict::Queue)
        .take(20)
        .collect();
    if !notable.is_empty() {
        message.push('\n');
        for r in notable {
            let path = r
                .path
                .as_deref()
                .map(|p| format!(" {p}"))
                .unwrap_or_default();
            message.push_str(&format!("- {} {}{path}\n", r.verdict, r.code));
        }
    }
    ReviewCommit {
        job: record.job.as_str(),
        revision: &record.revision,
        expected_tree,
        patch_bytes,
        message,
        trailers: vec![
            ("Airlock-Job", record.job.to_string()),
            ("Airlock-Bundle", format!("sha256:{}", record.bundle_sha256)),
            (
                "Airlock-Artifact",
                format!("sha256:{}", fetched.artifact_sha256),
            ),
            ("Airlock-Model-Requested", record.model_requested.clone()),
            (
                "Airlock-Model-Reported",
                fetched.packet.model_reported.clone(),
            ),
            ("Airlock-Decision", report.decision.to_string()),
            ("Airlock-Gate-Version", GATE_VERSION.to_owned()),
        ],
        date_unix: fetched.landed_at,
    }
}

/// Makes worker-controlled text safe as a commit trailer value: one line, printable ASCII
/// (anything else becomes `?`), at most 200 characters. A model name holding a newline cannot
/// add a trailer of its own.
pub fn trailer_value(s: &str) -> String {
    let v: String = s
        .chars()
        .take(200)
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect();
    let v = v.trim().to_owned();
    if v.is_empty() {
        "-".to_owned()
    } else {
        v
    }
}

/// Commits the patched tree on `refs/heads/airlock/<job>` with the revision as parent.
/// Returns (branch name, commit id). Never moves HEAD, never touches the working tree or the
/// real index; refuses if the branch is checked out in any worktree.
pub fn write_review_branch(
    repo: &Path,
    job_dir: &Path,
    c: &ReviewCommit<'_>,
) -> Result<(String, String)> {
    let branch = format!("airlock/{}", c.job);
    let full_ref = format!("refs/heads/{branch}");
    let plain = Git::new(repo);
    let worktrees = plain.run(&["worktree", "list", "--porcelain", "-z"], None)?;
    let checked_out = worktrees
        .split(|b| *b == 0)
        .any(|rec| rec == format!("branch {full_ref}").as_bytes());
    if checked_out {
        bail!("{branch} is checked out in a worktree: switch away from it before gating with --review-branch");
    }
    let dir = tempfile::Builder::new()
        .prefix(".review-")
        .tempdir_in(job_dir)
        .with_context(|| format!("{}: cannot create a scratch directory", job_dir.display()))?;
    let git = Git::new(repo).with_index(dir.path().join("index"));
    git.run(&["read-tree", c.revision], None)?;
    if !c.patch_bytes.is_empty() {
        let apply = [
            "apply",
            "--cached",
            "--whitespace=nowarn",
            "--no-recount",
            "-",
        ];
        git.run(&apply, Some(c.patch_bytes))?;
    }
    let tree = git.run_line(&["write-tree"])?;
    if tree != c.expected_tree {
        bail!(
            "review apply gave tree {tree}, the check gave {}: refusing to commit",
            c.expected_tree
        );
    }
    let mut message = c.message.trim_end().to_owned();
    message.push_str("\n\n");
    for (k, v) in &c.trailers {
        message.push_str(&format!("{k}: {}\n", trailer_value(v)));
    }
    let date = format!("@{} +0000", c.date_unix);
    // commit-tree takes its identity and dates from the environment only.
    let commit = git
        .with_env("GIT_AUTHOR_NAME", "airlock")
        .with_env("GIT_AUTHOR_EMAIL", "airlock@localhost")
        .with_env("GIT_COMMITTER_NAME", "airlock")
        .with_env("GIT_COMMITTER_EMAIL", "airlock@localhost")
        .with_env("GIT_AUTHOR_DATE", &date)
        .with_env("GIT_COMMITTER_DATE", &date);
    let args = [
        "commit-tree",
        "--no-gpg-sign",
        &tree,
        "-p",
        c.revision,
        "-F",
        "-",
    ];
    let out = commit.run(&args, Some(message.as_bytes()))?;
    let commit = String::from_utf8_lossy(&out).trim().to_owned();
    if !is_full_oid(&commit) {
        bail!("git commit-tree printed no commit id");
    }
    let old = plain
        .run_line(&["rev-parse", "--verify", "-q", &full_ref])
        .unwrap_or_else(|_| "0".repeat(commit.len()));
    let log = format!("airlock gate {}", c.job);
    plain.run(&["update-ref", "-m", &log, &full_ref, &commit, &old], None)?;
    Ok((branch, commit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailer_values_cannot_carry_newlines_or_controls() {
        assert_eq!(
            trailer_value("gpt-x\nAirlock-Decision: queue"),
            "gpt-x?Airlock-Decision: queue"
        );
        assert_eq!(trailer_value("\u{202e}m\x1b"), "?m?");
        assert_eq!(trailer_value("  "), "-");
        assert_eq!(trailer_value(&"a".repeat(300)).len(), 200);
    }
}
