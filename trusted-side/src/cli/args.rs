//! Each command's arguments as clap parses them (plain comments, not doc comments: clap
//! would read those as help; each command's help is its `Command` variant's doc comment).
//! Beside each, its conversion into the command's options type in the library
//! (`From<XArgs> for XOptions`), so adding a flag is one field here, one there, one line in
//! the conversion; `cli.rs` dispatches one line per command.

use std::path::PathBuf;

use airlock::approve::Decision;

pub use super::fleet_args::{FleetCommand, FleetSubmitArgs};
pub use super::limit_args::LimitArgs;
use clap::{Args, Subcommand};

// `airlock approve` / `airlock decline` (a plain comment: see `Command`)
#[derive(Debug, Args)]
pub struct DecideArgs {
    /// The job id.
    pub job: String,
    /// Why (required for decline; recorded in the ledger, readable by everyone who can
    /// read the store: never put a secret here).
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// Who is deciding (default: the OS user, $USER).
    #[arg(long, value_name = "NAME")]
    pub by: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

impl DecideArgs {
    /// The options of `approve` (`Decision::Approve`) or `decline`.
    pub fn decide(self, decision: Decision) -> airlock::approve::DecideOptions {
        airlock::approve::DecideOptions {
            decision,
            job: self.job,
            note: self.note,
            by: self.by,
            json: self.json,
        }
    }
}

// `airlock show` (a plain comment: see `Command`)
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The job id.
    pub job: String,
    /// Write the review report as one self-contained HTML file (no script, no remote load).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write a pull-request body (Markdown) to FILE.
    #[arg(long, value_name = "FILE")]
    pub md: Option<PathBuf>,
    /// Print the report data as JSON.
    #[arg(long)]
    pub json: bool,
}

impl From<ShowArgs> for airlock::show::ShowOptions {
    fn from(a: ShowArgs) -> Self {
        Self {
            job: a.job,
            html: a.html,
            md: a.md,
            json: a.json,
        }
    }
}

// `airlock compare` (a plain comment: see `Command`)
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The first job id.
    pub job_a: String,
    /// The second job id.
    pub job_b: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

impl From<CompareArgs> for airlock::compare::CompareOptions {
    fn from(a: CompareArgs) -> Self {
        Self {
            job_a: a.job_a,
            job_b: a.job_b,
            json: a.json,
        }
    }
}

// `airlock gate` (a plain comment, as on every command's arguments: see `Command`)
#[derive(Debug, Args)]
pub struct GateArgs {
    /// The job id.
    pub job: String,
    /// The local repository holding the packed revision.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Policy file (TOML, see docs/CLASSIFY.md); default: the built-in policy.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Commit the patched tree on refs/heads/airlock/<job> (based on the packed revision,
    /// with bill-of-materials trailers). Never moves HEAD or touches the working tree.
    #[arg(long)]
    pub review_branch: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write a pull-request body (Markdown) to FILE: verdict and reasons, each file's
    /// diff in a collapsible block, prompt, model, signer key ids (cut to fit GitHub's limit).
    #[arg(long, value_name = "FILE")]
    pub md: Option<PathBuf>,
    /// Also write the review report as one self-contained HTML file (no script, no remote
    /// load) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write the job's review comments as SARIF 2.1.0 to FILE (GitHub code scanning).
    #[arg(long, value_name = "FILE")]
    pub sarif: Option<PathBuf>,
    /// Also write the comments as a GitHub pull-request review payload to FILE (post-review.sh).
    #[arg(long, value_name = "FILE")]
    pub github_review: Option<PathBuf>,
}

impl From<GateArgs> for airlock::gate::GateCommandOptions {
    fn from(a: GateArgs) -> Self {
        Self {
            job: a.job,
            repo: a.repo,
            policy: a.policy,
            review_branch: a.review_branch,
            json: a.json,
            md: a.md,
            html: a.html,
            sarif: a.sarif,
            github_review: a.github_review,
        }
    }
}

// `airlock scan` (a plain comment, as on every command's arguments: see `Command`)
#[derive(Debug, Args)]
pub struct ScanArgs {
    /// A directory or file (default: the current directory); with --rev, the repository.
    pub path: Option<PathBuf>,
    /// Scan this git revision's tree instead of the files on disk.
    #[arg(long)]
    pub rev: Option<String>,
    /// Rules and allowlists from an airlock scanner config (TOML; extends the built-ins).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Import a gitleaks config (unsupported fields are reported, not ignored).
    #[arg(long, value_name = "FILE")]
    pub gitleaks_config: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write SARIF 2.1.0 to FILE (for code-scanning UIs).
    #[arg(long, value_name = "FILE")]
    pub sarif: Option<PathBuf>,
    /// Print every rule's regex, one per line (`rg -f` input, for comparing with other
    /// tools), and exit.
    #[arg(long, hide = true)]
    pub print_regex: bool,
}

impl From<ScanArgs> for airlock::scan_cmd::ScanOptions {
    fn from(a: ScanArgs) -> Self {
        Self {
            path: a.path,
            rev: a.rev,
            config: a.config,
            gitleaks_config: a.gitleaks_config,
            json: a.json,
            sarif: a.sarif,
            print_regex: a.print_regex,
        }
    }
}

// `airlock classify` (a plain comment, as on every command's arguments: see `Command`)
#[derive(Debug, Args)]
pub struct ClassifyArgs {
    /// Paths to classify; read from stdin (one per line) when none are given.
    pub paths: Vec<String>,
    /// Policy file (TOML); default: the built-in policy.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Repository whose committed tree the content and reachability layers read, as the gate
    /// does; without it, only the path rules (and a file's content under the current
    /// directory) apply.
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Revision of --repo to read (default: HEAD).
    #[arg(long, value_name = "REV", requires = "repo")]
    pub rev: Option<String>,
}

impl From<ClassifyArgs> for airlock::classify_cmd::ClassifyOptions {
    fn from(a: ClassifyArgs) -> Self {
        Self {
            paths: a.paths,
            policy: a.policy,
            json: a.json,
            repo: a.repo,
            rev: a.rev,
        }
    }
}

// `airlock status` (a plain comment, as on every command's arguments: see `Command`)
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Only this job.
    pub job: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

impl From<StatusArgs> for airlock::status::StatusOptions {
    fn from(a: StatusArgs) -> Self {
        Self {
            job: a.job,
            json: a.json,
        }
    }
}

// `airlock gc` (a plain comment, as on every command's arguments: see `Command`)
#[derive(Debug, Args)]
pub struct GcArgs {
    /// Only jobs submitted at least this long ago: 90s, 20m, 1h, 7d.
    #[arg(long, default_value = "1d")]
    pub older_than: String,
    /// List what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

impl From<GcArgs> for airlock::gc::GcOptions {
    fn from(a: GcArgs) -> Self {
        Self {
            older_than: a.older_than,
            dry_run: a.dry_run,
            json: a.json,
        }
    }
}

// `airlock watch` (a plain comment, as on every command's arguments: see `Command`)
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Gate at most this many jobs at once.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub jobs: usize,
    /// Process what has landed, then exit (exit 1 if a job could not be gated).
    #[arg(long)]
    pub once: bool,
    /// Exit after gating this many jobs.
    #[arg(long, value_name = "N")]
    pub max_jobs: Option<u64>,
    /// Longest wait between two listings of a remote store (the first is 0.5 s, doubling
    /// while nothing lands); on file:// stores, how often to rescan besides notifications.
    #[arg(long, default_value = "30s", value_name = "DUR")]
    pub poll_max: String,
    /// The local repository holding the packed revisions.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Policy file (TOML, see docs/CLASSIFY.md); default: the built-in policy.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Commit each result on refs/heads/airlock/<job> (as `airlock gate --review-branch`).
    #[arg(long)]
    pub review_branch: bool,
    /// Print each report as JSON (one document per job).
    #[arg(long)]
    pub json: bool,
}

impl From<WatchArgs> for airlock::watch::WatchOptions {
    fn from(a: WatchArgs) -> Self {
        Self {
            jobs: a.jobs,
            once: a.once,
            max_jobs: a.max_jobs,
            poll_max: a.poll_max,
            repo: a.repo,
            policy: a.policy,
            review_branch: a.review_branch,
            json: a.json,
        }
    }
}

/// `airlock audit …`.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Verify every entry's signature (trusted key only) and the hash chain; names the
    /// first broken entry and exits 4 if any. Pass --head SEQ:SHA256 (printed by an
    /// earlier verify) to also detect a truncated tail. A ledger that verifies also leaves
    /// its model history in the home, so later gates read only the entries after it (run it
    /// regularly on a host that gates).
    Verify {
        /// A head pinned earlier.
        #[arg(long, value_name = "SEQ:SHA256")]
        head: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The generation bill of materials of one job: prompt, models asked and reported,
    /// digests, decision and reasons.
    Show {
        /// The job id.
        job: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write every envelope of the selected jobs (bundle, job record, artifact, first-fetch
    /// record, ledger entries) as in-toto JSON lines, for verification offline with standard
    /// tools (docs/AUDIT.md). Works after `airlock gc`: gc never deletes envelopes.
    Export {
        /// Only jobs submitted on or after this date (YYYY-MM-DD, UTC).
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        /// Where to write the lines (conventionally *.intoto.jsonl).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
}

impl From<AuditCommand> for airlock::audit::AuditOptions {
    fn from(a: AuditCommand) -> Self {
        match a {
            AuditCommand::Verify { head, json } => Self::Verify { head, json },
            AuditCommand::Show { job, json } => Self::Show { job, json },
            AuditCommand::Export { since, out, json } => Self::Export { since, out, json },
        }
    }
}

// `airlock init` (a plain comment, as on every command's arguments: see `Command`)
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Object store URL: file:///abs/dir, s3://bucket/prefix, gs://…, az://…, memory://.
    /// Default: a store directory inside the home directory.
    #[arg(long)]
    pub store: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

impl From<InitArgs> for airlock::init::InitOptions {
    fn from(a: InitArgs) -> Self {
        Self {
            store: a.store,
            json: a.json,
        }
    }
}

// What to pack: shared by `pack` and `submit` (a plain comment: see `Command`)
#[derive(Debug, Args)]
pub struct PackInputs {
    /// The git repository to pack.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// The revision to pack (any commit-ish). Its tree is read, never the working tree.
    #[arg(long, default_value = "HEAD")]
    pub rev: String,
    /// File holding the prompt for the generator (UTF-8).
    #[arg(long)]
    pub prompt_file: PathBuf,
    /// The model to ask for (recorded in the request and, later, the packet).
    #[arg(long, default_value = "unspecified")]
    pub model: String,
    /// Name recorded for the repository (default: the directory name).
    #[arg(long)]
    pub repo_name: Option<String>,
    /// Only pack paths matching one of these globs (repeatable). Never re-admits a denied path.
    #[arg(long = "include", value_name = "GLOB")]
    pub include: Vec<String>,
    /// Also leave out paths matching these globs (repeatable).
    #[arg(long = "exclude", value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Replace each secret found with [REDACTED:<rule>] (recorded in the manifest) instead of
    /// refusing the pack.
    #[arg(long)]
    pub redact: bool,
    /// Files larger than this are left out (rule pack.too-large).
    #[arg(long, default_value_t = 8 * 1024 * 1024, value_name = "BYTES")]
    pub max_file_bytes: u64,
    /// Let the generator reach HOST:PORT through the worker's egress proxy (repeatable), e.g.
    /// `--egress api.openai.com:443`. Recorded in the signed request; the worker logs every
    /// attempt into the packet. Default: no network at all.
    #[arg(long = "egress", value_name = "HOST:PORT", value_parser = super::egress_arg::parse_egress)]
    pub egress: Vec<airlock_core::format::EgressRule>,
    #[command(flatten)]
    pub limits: LimitArgs,
}

impl From<PackInputs> for airlock::pack::PackInputs {
    fn from(a: PackInputs) -> Self {
        Self {
            limits: a.limits.into(),
            repo: a.repo,
            rev: a.rev,
            prompt_file: a.prompt_file,
            model: a.model,
            repo_name: a.repo_name,
            include: a.include,
            exclude: a.exclude,
            redact: a.redact,
            max_file_bytes: a.max_file_bytes,
            egress: a.egress,
        }
    }
}

// `airlock pack` (a plain comment, as on every command's arguments: see `Command`)
#[derive(Debug, Args)]
pub struct PackArgs {
    #[command(flatten)]
    pub pack: PackInputs,
    /// Output directory for bundle.tar.gz and bundle.dsse.json (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

impl From<PackArgs> for airlock::pack::PackCommandOptions {
    fn from(a: PackArgs) -> Self {
        Self {
            pack: a.pack.into(),
            out: a.out,
            json: a.json,
        }
    }
}

// `airlock submit` (a plain comment, as on every command's arguments: see `Command`)
#[derive(Debug, Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub pack: PackInputs,
    /// How long the job token (and every URL in it) stays valid: 90s, 20m, 1h (max 24h).
    #[arg(long, default_value = "20m")]
    pub ttl: String,
    /// Also write the token to this file (created new, mode 0600), e.g. a worker's
    /// tickets/ directory.
    #[arg(long, value_name = "FILE")]
    pub token_out: Option<PathBuf>,
    /// Print the token (a bearer secret carrying the job's model key, if one is minted); by
    /// default it is printed only in text, without --token-out, when it carries no model key.
    #[arg(long)]
    pub print_token: bool,
    /// Print the result as JSON (the token only with --print-token).
    #[arg(long)]
    pub json: bool,
    /// `change` (a diff; may also comment) or `review` (comments only: docs/GENERATORS.md).
    #[arg(long, default_value = "change", value_name = "KIND")]
    pub kind: airlock_core::format::JobKind,
    #[command(flatten)]
    pub fleet: FleetSubmitArgs,
}

impl From<SubmitArgs> for airlock::submit::SubmitOptions {
    fn from(a: SubmitArgs) -> Self {
        Self {
            pack: a.pack.into(),
            ttl: a.ttl,
            token_out: a.token_out,
            print_token: a.print_token,
            json: a.json,
            kind: a.kind,
            fleet: a.fleet.fleet,
            label: a.fleet.label,
        }
    }
}

// `airlock resubmit` (a plain comment, as on every command's arguments: see `Command`)
#[derive(Debug, Args)]
pub struct ResubmitArgs {
    /// The job to dispatch again.
    pub job: String,
    /// How long the new token (and every URL in it) stays valid: 90s, 20m, 1h (max 24h).
    /// Default: the original job's token lifetime.
    #[arg(long)]
    pub ttl: Option<String>,
    /// Also write the new token to this file (created new, mode 0600).
    #[arg(long, value_name = "FILE")]
    pub token_out: Option<PathBuf>,
    /// Print the new token (see `submit --print-token`).
    #[arg(long)]
    pub print_token: bool,
    /// Print the result as JSON (the token only with --print-token).
    #[arg(long)]
    pub json: bool,
}

impl From<ResubmitArgs> for airlock::resubmit::ResubmitOptions {
    fn from(a: ResubmitArgs) -> Self {
        Self {
            job: a.job,
            ttl: a.ttl,
            token_out: a.token_out,
            print_token: a.print_token,
            json: a.json,
        }
    }
}

// `airlock fetch` (a plain comment, as on every command's arguments: see `Command`)
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// The job id.
    pub job: String,
    /// Fetch and verify the last checkpoint instead of the final artifact (partial).
    #[arg(long)]
    pub checkpoint: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

impl From<FetchArgs> for airlock::fetch::FetchOptions {
    fn from(a: FetchArgs) -> Self {
        Self {
            job: a.job,
            checkpoint: a.checkpoint,
            json: a.json,
        }
    }
}
