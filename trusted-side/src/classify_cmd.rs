//! `airlock classify`'s options and entry point: the dry run of the gate's classifier and
//! policy over some paths (the work is `classify::run_classify`).
//!
//! Guards against: nothing beyond what `classify::command` guards against; this module only
//! gives the command the same shape as every other (`run(&GlobalOptions, &Options)`).

use std::path::PathBuf;

use anyhow::Result;

use crate::config::GlobalOptions;
use crate::exit::Outcome;

/// What `airlock classify` is asked to do.
#[derive(Debug, Clone)]
pub struct ClassifyOptions {
    /// Paths to classify; read from stdin (one per line) when empty.
    pub paths: Vec<String>,
    /// Policy file; `None`: the built-in policy.
    pub policy: Option<PathBuf>,
    /// Print JSON.
    pub json: bool,
    /// Repository whose committed tree the content and reachability layers read.
    pub repo: Option<PathBuf>,
    /// Revision of `repo` to read (default: HEAD).
    pub rev: Option<String>,
}

/// `airlock classify`: exit 0 (the verdicts are the output, not the exit code).
pub fn run(_global: &GlobalOptions, args: &ClassifyOptions) -> Result<Outcome> {
    let repo = args
        .repo
        .as_deref()
        .map(|r| (r, args.rev.as_deref().unwrap_or("HEAD")));
    crate::classify::run_classify(args.paths.clone(), args.json, args.policy.as_deref(), repo)?;
    Ok(Outcome::Ok)
}
