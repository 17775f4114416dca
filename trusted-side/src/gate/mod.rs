//! The gate hop: judges a worker's artifact after fetch and decides `queue`, `human` or
//! `reject`, with reasons. Entry points: [`run_gate`] and [`print`](fn@print); the steps are listed in
//! `run.rs`, one module per step.
pub mod apply;
pub mod bundle;
pub mod checks;
pub mod comments;
pub mod decide;
pub mod deps;
pub mod drift;
pub mod index;
pub mod inherit;
pub mod parse;
pub mod policy;
pub mod record;
pub mod review;
pub mod run;
pub mod scan;

pub use crate::report::{print, GateReport};
pub use run::{run_gate, GateOptions};

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::config::GlobalOptions;
use crate::exit::Outcome;
use crate::report::Reason;

/// Why the checks stopped before the end.
#[derive(Debug)]
pub enum Stop {
    /// A reject that ends the checks (steps 2–4).
    Reject(Reason),
    /// The gate could not decide (exit 1).
    Error(anyhow::Error),
}

impl From<anyhow::Error> for Stop {
    fn from(e: anyhow::Error) -> Stop {
        Stop::Error(e)
    }
}

/// What `airlock gate` is asked to do.
#[derive(Debug, Clone)]
pub struct GateCommandOptions {
    /// The job id.
    pub job: String,
    /// The local repository holding the packed revision.
    pub repo: PathBuf,
    /// Policy file; `None`: the built-in policy.
    pub policy: Option<PathBuf>,
    /// Commit the patched tree on `refs/heads/airlock/<job>`.
    pub review_branch: bool,
    /// Print the report as JSON.
    pub json: bool,
    /// Also write a pull-request body (Markdown) here.
    pub md: Option<PathBuf>,
    /// Also write the review report as one self-contained HTML file here.
    pub html: Option<PathBuf>,
    /// Also write the review comments as SARIF 2.1.0 here.
    pub sarif: Option<PathBuf>,
    /// Also write the comments as a GitHub pull-request review payload here.
    pub github_review: Option<PathBuf>,
}

/// `airlock gate JOB`: exit 0 queue, 3 human, 4 reject.
pub fn run(global: &GlobalOptions, args: &GateCommandOptions) -> Result<Outcome> {
    use policy::Verdict;
    let home = crate::config::Home::load(&global.home)?;
    let key = home.signing_key()?;
    let store = home.open_store()?;
    let job = airlock_core::jobid::JobId::parse(&args.job)?;
    let repo = crate::config::absolute(&args.repo)?;
    let opts = GateOptions::new(repo, args.policy.as_deref(), args.review_branch)?;
    let report = run_gate(&home, &store, &key, &job, &opts)?;
    print(&report, args.json)?;
    if args.html.is_some() || args.md.is_some() {
        crate::show::write_after_gate(
            &home,
            &store,
            &report,
            args.html.as_deref(),
            args.md.as_deref(),
        )?;
    }
    if let Some(path) = &args.sarif {
        let log = serde_json::to_vec_pretty(&crate::report::sarif::of_comments(&report))?;
        std::fs::write(path, log)
            .with_context(|| format!("{}: cannot write the SARIF file", path.display()))?;
    }
    if let Some(path) = &args.github_review {
        let payload = crate::report::comments::github_review(&report);
        std::fs::write(path, serde_json::to_vec_pretty(&payload)?)
            .with_context(|| format!("{}: cannot write the review payload", path.display()))?;
    }
    Ok(match report.decision {
        Verdict::Queue => Outcome::Ok,
        Verdict::Human => Outcome::Human,
        Verdict::Reject => Outcome::Reject,
    })
}

/// Test helper shared by the crate's unit tests (gate, pack cache).
#[cfg(test)]
pub(crate) mod test_git {
    use std::path::Path;
    use std::process::Command;

    /// Runs `git -C dir args` with a fixed identity and no user or system config; panics with
    /// git's stderr on failure; returns stdout, trimmed.
    pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}
