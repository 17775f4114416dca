//! `airlock pack`: the command around [`super::pack_bundle`]: its options, the key and cache
//! from the home, and the summary it prints.
//!
//! Guards against: nothing beyond [`super::pack_bundle`]; it only reads the home and prints.

use std::path::PathBuf;

use airlock_core::format::Request;
use anyhow::Result;

use super::{cache, new_job_id, pack_bundle, read_prompt, PackOptions, PackSummary};
use crate::config::{GlobalOptions, Home};
use crate::exit::Outcome;

/// What to pack: shared by `airlock pack` and `airlock submit`.
#[derive(Debug, Clone)]
pub struct PackInputs {
    /// The git repository to pack.
    pub repo: PathBuf,
    /// The revision to pack (any commit-ish). Its tree is read, never the working tree.
    pub rev: String,
    /// File holding the prompt for the generator (UTF-8).
    pub prompt_file: PathBuf,
    /// The model to ask for.
    pub model: String,
    /// Name recorded for the repository (`None`: the directory name).
    pub repo_name: Option<String>,
    /// Only pack paths matching one of these globs.
    pub include: Vec<String>,
    /// Also leave out paths matching these globs.
    pub exclude: Vec<String>,
    /// Replace each secret found with `[REDACTED:<rule>]` instead of refusing the pack.
    pub redact: bool,
    /// Files larger than this are left out (rule pack.too-large).
    pub max_file_bytes: u64,
    /// Where the generator may connect through the worker's egress proxy.
    pub egress: Vec<airlock_core::format::EgressRule>,
    /// The job's limits, recorded in the signed request.
    pub limits: airlock_core::limits::JobLimits,
}

/// What `airlock pack` is asked to do.
#[derive(Debug, Clone)]
pub struct PackCommandOptions {
    /// What to pack.
    pub pack: PackInputs,
    /// Output directory for bundle.tar.gz and bundle.dsse.json (created if missing).
    pub out: PathBuf,
    /// Print the summary as JSON.
    pub json: bool,
}

/// `airlock pack`.
pub fn run(global: &GlobalOptions, args: &PackCommandOptions) -> Result<Outcome> {
    let (json, out) = (args.json, &args.out);
    let args = &args.pack;
    let prompt = read_prompt(&args.prompt_file)?;
    let repo_dir = crate::config::absolute(&args.repo)?;
    let repo_name = match &args.repo_name {
        Some(n) => n.clone(),
        None => repo_dir
            .file_name()
            .map_or_else(|| "repo".to_owned(), |n| n.to_string_lossy().into_owned()),
    };
    let home = Home::load(&global.home)?;
    let key = home.signing_key()?;
    let opts = PackOptions {
        repo: &repo_dir,
        rev: &args.rev,
        repo_name,
        request: Request {
            limits: args.limits.clone(),
            egress: args.egress.clone(),
            ..Request::new(prompt, args.model.clone())
        },
        include: &args.include,
        exclude: &args.exclude,
        redact: args.redact,
        max_file_bytes: args.max_file_bytes,
        job: new_job_id()?,
        quiet: global.quiet || json,
        cache_dir: cache::dir(&home.dir),
        durable: true,
    };
    let summary = pack_bundle(&opts, &key, out)?;
    if json {
        crate::output::print_json(&summary)?;
    } else {
        print_summary(&summary);
    }
    Ok(Outcome::Ok)
}

fn print_summary(s: &PackSummary) {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!("packed {} for job {}", &s.revision, s.job);
    println!("  tree      {}", s.tree);
    println!("  files     {} ({:.1} MiB)", s.files, mib(s.bytes));
    let skipped: u64 = s.skipped.values().sum();
    let rules: Vec<String> = s.skipped.iter().map(|(r, n)| format!("{r} {n}")).collect();
    println!("  skipped   {skipped} ({})", rules.join(", "));
    let redacted: u64 = s.redacted.values().sum();
    if redacted > 0 {
        let rules: Vec<String> = s.redacted.iter().map(|(r, n)| format!("{r} {n}")).collect();
        println!(
            "  redacted  {redacted} value(s) in {} file(s) ({})",
            s.redacted_files,
            rules.join(", ")
        );
    } else {
        println!("  redacted  0");
    }
    println!(
        "  bundle    {} ({:.1} MiB) sha256:{}",
        s.bundle_path.display(),
        mib(s.bundle_bytes),
        s.bundle_sha256
    );
    println!(
        "  envelope  {} (signed by {})",
        s.envelope_path.display(),
        &s.key_id
    );
}
