//! Step 13: writes the optional review branch `airlock/<job>`, without touching the user's
//! checkout, HEAD, index or other branches.
//!
//! How (plumbing, through `git::Git`): the apply is repeated with `git apply
//! --cached` in a temporary index read from the revision, into the repository's own object
//! store; `git diff-index` must show exactly the checked paths, each with the content and mode
//! the check produced (`apply.rs`); then `git write-tree`, `git commit-tree` (fixed identity,
//! dates = the store's landing time, no signing) and `git update-ref refs/heads/airlock/<job>
//! <new> <expected old>`. It refuses when that branch is checked out in any worktree.
//!
//! Guards against: commit trailers forged through worker-controlled text ([`trailer_value`]),
//! moving a checked-out branch, a review commit that differs from what was checked (the
//! comparison with the checked files).
//! Does not check: the patch (the checks and `apply.rs` did).

use airlock_core::text;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::Path;

use super::apply::{AppliedFile, MAX_BLOB_BYTES};
use super::policy::Verdict;
use crate::fetch::Fetched;
use crate::git::{is_full_oid, Git};
use crate::report::{GateReport, Reason, GATE_VERSION};
#[cfg(test)]
use airlock_core::diff::FileMode;

/// What goes into the review commit.
#[derive(Debug, Clone)]
pub struct ReviewCommit<'a> {
    /// The job id (branch `airlock/<job>`).
    pub job: &'a str,
    /// Parent: the packed revision.
    pub revision: &'a str,
    /// Both sides of each file as the check applied them; the review apply must give the same.
    pub checked: &'a BTreeMap<String, AppliedFile>,
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
    checked: &'a BTreeMap<String, AppliedFile>,
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
                .map(|p| format!(" {}", text::line(p)))
                .unwrap_or_default();
            message.push_str(&format!("- {} {}{path}\n", r.verdict, r.code));
        }
    }
    ReviewCommit {
        job: record.job.as_str(),
        revision: &record.revision,
        checked,
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

/// Worker-controlled text as a commit trailer value: one line ([`text::trailer`]: newlines and
/// every other invisible or control character marked), at most 200 characters, `-` when
/// blank. A model name holding a newline cannot add a trailer of its own.
pub fn trailer_value(s: &str) -> String {
    let v = text::trailer(s.trim(), 200);
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
    if let Err(why) = same_as_checked(&git, c) {
        bail!("the review apply differs from the check ({why}): refusing to commit");
    }
    let tree = git.run_line(&["write-tree"])?;
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

/// Git's index must differ from the revision in exactly the checked paths, each with the
/// checked content and mode.
fn same_as_checked(git: &Git, c: &ReviewCommit<'_>) -> Result<(), String> {
    let args = [
        "diff-index",
        "--cached",
        "-z",
        "--no-renames",
        "--no-abbrev",
        "--raw",
        c.revision,
    ];
    let raw = git.run(&args, None).map_err(|e| e.to_string())?;
    let changed = parse_raw_diff(&raw)?;
    if !changed.keys().eq(c.checked.keys()) {
        return Err("other paths changed".to_owned());
    }
    let requests: Vec<&str> = changed.values().map(|(_, oid)| oid.as_str()).collect();
    let blobs = git
        .cat_file(&requests, MAX_BLOB_BYTES)
        .map_err(|e| e.to_string())?;
    for (((path, (mode, _)), blob), file) in changed.iter().zip(blobs).zip(c.checked.values()) {
        let (content, want_mode) = match (&file.new, file.new_mode) {
            (Some(new), Some(m)) => (Some(new), m.as_str()),
            _ => (None, "000000"),
        };
        if mode != want_mode || blob.map(|b| b.data).as_ref() != content {
            return Err(text::line(path).to_string());
        }
    }
    Ok(())
}

/// `git diff-index --raw -z` records, `:<old mode> <new mode> <old oid> <new oid> <status>\0<path>\0`,
/// as path -> (new mode, new oid).
fn parse_raw_diff(raw: &[u8]) -> Result<BTreeMap<String, (String, String)>, String> {
    let mut out = BTreeMap::new();
    let mut parts = raw.split(|b| *b == 0);
    while let Some(meta) = parts.next() {
        if meta.is_empty() {
            continue;
        }
        let meta = std::str::from_utf8(meta).map_err(|_| "malformed git record".to_owned())?;
        let f: Vec<&str> = meta.strip_prefix(':').unwrap_or("").split(' ').collect();
        let [_, new_mode, _, new_oid, _] = f.as_slice() else {
            return Err("malformed git record".to_owned());
        };
        let path = parts.next().ok_or("git record without a path")?;
        let path = String::from_utf8(path.to_vec()).map_err(|_| "path is not UTF-8".to_owned())?;
        out.insert(path, ((*new_mode).to_owned(), (*new_oid).to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_diff_records_parse() {
        let raw = b":100644 100755 aaaa bbbb M\0src/a b.rs\0:000000 100644 0000 cccc A\0new\0";
        let m = parse_raw_diff(raw).unwrap();
        assert_eq!(m["src/a b.rs"], ("100755".to_owned(), "bbbb".to_owned()));
        assert_eq!(m["new"].1, "cccc");
        assert!(parse_raw_diff(b":100644 x\0p\0").is_err());
    }

    #[test]
    fn trailer_values_cannot_carry_newlines_or_controls() {
        assert_eq!(
            trailer_value("gpt-x\nAirlock-Decision: queue"),
            "gpt-x<U+000A>Airlock-Decision: queue"
        );
        assert_eq!(trailer_value("\u{202e}m\x1b"), "<U+202E>m<U+001B>");
        assert_eq!(trailer_value("  "), "-");
        assert!(trailer_value(&"a".repeat(300)).ends_with("…[100 more characters]"));
    }

    #[test]
    fn the_review_commits_only_what_the_check_applied() {
        use crate::gate::test_git::git;
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("a.txt"), "old\n").unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-qm", "x"]);
        let rev = git(&repo, &["rev-parse", "HEAD"]);
        let patch =
            b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n";
        let checked_as = |new: &[u8], mode: FileMode| {
            let file = AppliedFile {
                old: Some(b"old\n".to_vec()),
                new: Some(new.to_vec()),
                new_mode: Some(mode),
            };
            BTreeMap::from([("a.txt".to_owned(), file)])
        };
        let commit = |checked| ReviewCommit {
            job: "j1",
            revision: &rev,
            checked,
            patch_bytes: patch,
            message: "m".to_owned(),
            trailers: Vec::new(),
            date_unix: 0,
        };
        let wrongs = [
            checked_as(b"other\n", FileMode::Regular),
            checked_as(b"new\n", FileMode::Executable),
            BTreeMap::new(),
        ];
        for wrong in &wrongs {
            let err = write_review_branch(&repo, t.path(), &commit(wrong)).unwrap_err();
            assert!(err.to_string().contains("differs from the check"), "{err}");
        }
        assert!(git(&repo, &["branch", "--list", "airlock/*"]).is_empty());
        let right = checked_as(b"new\n", FileMode::Regular);
        let (branch, id) = write_review_branch(&repo, t.path(), &commit(&right)).unwrap();
        assert_eq!(branch, "airlock/j1");
        assert_eq!(git(&repo, &["show", &format!("{id}:a.txt")]), "new");
    }
}
