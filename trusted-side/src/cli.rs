//! Command-line surface of `airlock` (clap derive) and dispatch to the hops.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use crate::exit::Outcome;

/// airlock: run code-generating agents on untrusted machines without trusting them.
///
/// A one-way valve with four hops: pack (here) -> generate (airlock-worker, untrusted) ->
/// fetch (here) -> gate (here). Files cross the boundary; credentials never do.
///
/// Exit codes: 0 ok (gate: queue), 1 error, 2 usage, 3 needs a human, 4 rejected/refused.
#[derive(Debug, Parser)]
#[command(name = "airlock", version, about, long_about)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command takes.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Directory holding config.toml and the trusted keypair.
    #[arg(long, global = true, env = "AIRLOCK_HOME", default_value = ".airlock")]
    pub home: PathBuf,
    /// More logging on stderr (-v info, -vv debug). RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors on stderr; no progress bars.
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

/// The commands. Each one's help is its variant's doc comment: the arguments' structs carry
/// plain comments, which clap does not read (a test checks every command's help).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create config.toml and the trusted ed25519 keypair in the home directory (.airlock/).
    ///
    /// The private key is written with mode 0600; commands refuse to load it if it becomes
    /// readable by group or others. The store defaults to a local directory beside the config
    /// (file://…/.airlock/store): no server and no account needed.
    Init(InitArgs),
    /// Pack a git revision into a redacted, signed bundle, offline.
    ///
    /// Reads the tree of the revision (never the working tree), drops deny-listed paths
    /// (.git/, .env*, *.pem, *.key, id_rsa*, secrets/, node_modules/, ... see `docs/`),
    /// scans every packed file for secrets and refuses on any finding unless --redact is
    /// given, then scans the finished bundle again. Writes DIR/bundle.tar.gz and
    /// DIR/bundle.dsse.json atomically.
    Pack(PackArgs),
    /// Pack, upload the bundle to the store's inbox, write the signed job record, and mint a
    /// job token: the only thing a worker needs (and all it gets).
    ///
    /// The token holds URLs for exactly this job's objects (GET bundle, PUT drop objects),
    /// a per-job signing key and the limits, expiring after --ttl. It is a bearer secret:
    /// hand it to one worker (e.g. --token-out into its tickets/ directory).
    Submit(SubmitArgs),
    /// Dispatch a job's bundle and request again under a new job (new job key, new token,
    /// new model key), e.g. after its worker was preempted; the ledger records it as a
    /// re-dispatch of JOB. The old job's token stays valid until it expires.
    Resubmit(ResubmitArgs),
    /// Download a job's artifact and verify it: the job key from the signed record, the
    /// binding to the job's bundle, digests, and that it landed before the token expired.
    ///
    /// --checkpoint fetches the last checkpoint instead (a preempted or still running job):
    /// verified the same way, kept as checkpoint.tar.gz, always PARTIAL; the gate never
    /// reads it.
    Fetch(FetchArgs),
    /// Judge a job's artifact: verify (fetching it if needed), safe unpack, strict diff
    /// parse, apply check against the packed revision with real git (never touching your
    /// checkout), secret scan of added lines, blast-radius classification, policy.
    ///
    /// Exit 0 queue, 3 needs a human, 4 reject. Nothing is ever applied to your branch;
    /// --review-branch commits the result on airlock/<job> for review.
    Gate(GateArgs),
    /// Scan files (a directory, a file, or a git revision with --rev) for secrets, with the
    /// engine pack and gate use. Findings print `path:line: rule` and a short fingerprint,
    /// never the value. Exit 0 clean, 4 findings.
    Scan(ScanArgs),
    /// What the gate would say about these paths under the policy (paths from stdin if none).
    Classify(ClassifyArgs),
    /// Every job's state, read from the store alone: packed, running, landed, gated, expired.
    Status(StatusArgs),
    /// Delete the payloads (bundle, checkpoint and artifact tarballs) of gated or expired
    /// jobs; envelopes, records and the ledger stay, so every signature still verifies.
    Gc(GcArgs),
    /// Fetch and gate artifacts as they land (notify on file:// stores, listing with backoff
    /// on remote ones), a few at a time. A job already gated (per the ledger) is never gated
    /// again, so a restarted watch picks up where it stopped.
    Watch(WatchArgs),
    /// Run the whole valve on an example, with no setup: three jobs through the real worker
    /// (queue, human, reject), in a fresh temp dir. Needs airlock-worker beside this binary.
    Demo,
    /// Check or read the signed, hash-chained audit ledger.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Record that a person approves a gated job's artifact: a signed ledger entry (who,
    /// when, the artifact digest, the trusted key). Refused (exit 4) for a job the gate
    /// rejected, one never gated, and one whose artifact changed since it was gated.
    Approve(DecideArgs),
    /// Record that a person declines a gated job's artifact, saying why (--note is
    /// required): a signed ledger entry, as for approve.
    Decline(DecideArgs),
    /// Show a job already gated, from the ledger and the artifact kept in the home: the
    /// review report as text, or as one self-contained HTML file (--html) or Markdown (--md).
    Show(ShowArgs),
    /// Compare two jobs (e.g. a job and its re-dispatch): same bundle and request? models
    /// reported, token counts, and the difference between their patches. The tool for
    /// replaying a past job to catch a silent model swap.
    Compare(CompareArgs),
}

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

// `airlock status` (a plain comment, as on every command's arguments: see `Command`)
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Only this job.
    pub job: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
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

/// `airlock audit …`.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Verify every entry's signature (trusted key only) and the hash chain; names the
    /// first broken entry and exits 4 if any. Pass --head SEQ:SHA256 (printed by an
    /// earlier verify) to also detect a truncated tail.
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
    #[arg(long = "egress", value_name = "HOST:PORT", value_parser = parse_egress)]
    pub egress: Vec<airlock_core::format::EgressRule>,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// `HOST:PORT` -> an egress rule: the host lowercased, then held to `request.egress` (a DNS
/// name of `a-z 0-9 . -`, at most 253 bytes, no wildcard) and a port from 1 to 65535.
fn parse_egress(s: &str) -> Result<airlock_core::format::EgressRule, String> {
    let (host, port) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("{s:?}: expected HOST:PORT (request.egress)"))?;
    let host = host.to_ascii_lowercase();
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| format!("{s:?}: port must be 1 to 65535 (request.egress)"))?;
    let ok = !host.is_empty()
        && host.len() <= 253
        && host
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-');
    if !ok {
        return Err(format!(
            "{s:?}: host must be a DNS name of a-z 0-9 . - (no wildcard, at most 253 bytes) \
             (request.egress)"
        ));
    }
    Ok(airlock_core::format::EgressRule { host, port })
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
    /// Print the result as JSON (includes the token).
    #[arg(long)]
    pub json: bool,
}

// `airlock resubmit` (a plain comment, as on every command's arguments: see `Command`)
#[derive(Debug, Args)]
pub struct ResubmitArgs {
    /// The job to dispatch again.
    pub job: String,
    /// How long the new token (and every URL in it) stays valid: 90s, 20m, 1h (max 24h).
    #[arg(long, default_value = "20m")]
    pub ttl: String,
    /// Also write the new token to this file (created new, mode 0600).
    #[arg(long, value_name = "FILE")]
    pub token_out: Option<PathBuf>,
    /// Print the result as JSON (includes the token).
    #[arg(long)]
    pub json: bool,
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

// The job's limits, recorded in the signed request; the worker and the gate enforce them.
// (A plain comment: see `Command`.)
#[derive(Debug, Args, Clone)]
pub struct LimitArgs {
    /// Wall-clock seconds the generator may run before its whole process tree is killed.
    #[arg(long, default_value_t = 900, value_name = "SECS")]
    pub wall_clock_secs: u64,
    /// Seconds between checkpoints while the generator runs.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub checkpoint_secs: u64,
    /// Files the diff may change.
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub max_changed_files: u64,
    /// Lines the diff may add plus remove.
    #[arg(long, default_value_t = 20_000, value_name = "N")]
    pub max_changed_lines: u64,
    /// Bytes of the compressed artifact.
    #[arg(long, default_value_t = 16 * 1024 * 1024, value_name = "BYTES")]
    pub max_artifact_bytes: u64,
    /// Bytes of generator output kept in generator.log.
    #[arg(long, default_value_t = 1024 * 1024, value_name = "BYTES")]
    pub max_log_bytes: u64,
    /// Tokens (in + out) the generator may report using.
    #[arg(long, default_value_t = 2_000_000, value_name = "N")]
    pub max_tokens: u64,
    /// Bytes the generator may write under its workdir and private tmp; past it (or on a full
    /// disk) the worker stops it and drops a partial artifact saying `disk`.
    #[arg(long, default_value_t = airlock_core::limits::DEFAULT_MAX_DISK_BYTES, value_name = "BYTES")]
    pub max_disk_bytes: u64,
}

impl LimitArgs {
    /// The limits as recorded in the request.
    pub fn to_job_limits(&self) -> airlock_core::limits::JobLimits {
        airlock_core::limits::JobLimits {
            wall_clock_secs: self.wall_clock_secs,
            checkpoint_every_secs: self.checkpoint_secs,
            max_changed_files: self.max_changed_files,
            max_changed_lines: self.max_changed_lines,
            max_artifact_bytes: self.max_artifact_bytes,
            max_log_bytes: self.max_log_bytes,
            max_tokens: self.max_tokens,
            allow_binary: false,
            max_disk_bytes: self.max_disk_bytes,
        }
    }
}

/// Runs the chosen command.
pub fn dispatch(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::Init(args) => crate::config::init(&cli.global, &args),
        Command::Pack(args) => crate::pack::run(&cli.global, &args),
        Command::Submit(args) => crate::submit::run(&cli.global, &args),
        Command::Resubmit(args) => crate::resubmit::run(&cli.global, &args),
        Command::Fetch(args) => crate::fetch::run(&cli.global, &args),
        Command::Gate(args) => gate(&cli.global, &args),
        Command::Scan(args) => crate::scan_cmd::run(&args, cli.global.quiet),
        Command::Classify(args) => {
            crate::gate::classify::run_classify(
                args.paths,
                args.json,
                args.policy.as_deref(),
                args.repo
                    .as_deref()
                    .map(|r| (r, args.rev.as_deref().unwrap_or("HEAD"))),
            )?;
            Ok(Outcome::Ok)
        }
        Command::Status(args) => crate::status::run(&cli.global, &args),
        Command::Gc(args) => crate::gc::run(&cli.global, &args),
        Command::Watch(args) => crate::watch::run(&cli.global, &args),
        Command::Audit(cmd) => audit(&cli.global, cmd),
        Command::Demo => crate::demo::run(&cli.global),
        Command::Approve(args) => {
            crate::approve::run(&cli.global, &args, crate::approve::Decision::Approve)
        }
        Command::Decline(args) => {
            crate::approve::run(&cli.global, &args, crate::approve::Decision::Decline)
        }
        Command::Show(args) => crate::show::run(&cli.global, &args),
        Command::Compare(args) => crate::compare::run(&cli.global, &args),
    }
}

fn gate(global: &GlobalArgs, args: &GateArgs) -> Result<Outcome> {
    use crate::gate::policy::Verdict;
    let home = crate::config::Home::load(&global.home)?;
    let key = home.signing_key()?;
    let store = home.open_store()?;
    let job = airlock_core::jobid::JobId::parse(&args.job)?;
    let repo = crate::config::absolute(&args.repo)?;
    let opts = crate::gate::GateOptions::new(repo, args.policy.as_deref(), args.review_branch)?;
    let report = crate::gate::run_gate(&home, &store, &key, &job, &opts)?;
    crate::gate::print(&report, args.json, None)?;
    if args.html.is_some() || args.md.is_some() {
        crate::show::write_after_gate(
            &home,
            &store,
            &report,
            args.html.as_deref(),
            args.md.as_deref(),
        )?;
    }
    Ok(match report.decision {
        Verdict::Queue => Outcome::Ok,
        Verdict::Human => Outcome::Human,
        Verdict::Reject => Outcome::Reject,
    })
}

fn audit(global: &GlobalArgs, cmd: AuditCommand) -> Result<Outcome> {
    let home = crate::config::Home::load(&global.home)?;
    let trusted = home.public_key()?;
    let store = home.open_store()?;
    match cmd {
        AuditCommand::Verify { head, json } => {
            let result = match head {
                Some(h) => {
                    let pin: crate::ledger::LedgerHead = h
                        .parse()
                        .map_err(|e| anyhow::anyhow!("--head {h:?}: {e}"))?;
                    crate::ledger::verify_pinned(&store, &trusted, &pin)
                }
                None => crate::ledger::verify(&store, &trusted),
            };
            match result {
                Ok(report) => {
                    if json {
                        crate::output::print_json(&report)?;
                    } else {
                        println!("{report}");
                    }
                    Ok(Outcome::Ok)
                }
                Err(e) => match e.downcast_ref::<crate::ledger::LedgerError>() {
                    Some(crate::ledger::LedgerError::Broken(b)) => {
                        if json {
                            crate::output::print_json(b)?;
                        }
                        Err(crate::exit::Refused(format!("ledger broken: {b}")).into())
                    }
                    _ => Err(e),
                },
            }
        }
        AuditCommand::Show { job, json } => {
            let job = airlock_core::jobid::JobId::parse(&job)?;
            let bom = crate::ledger::show_job(&store, &trusted, &job)?;
            if json {
                crate::output::print_json(&bom)?;
            } else {
                println!("{bom}");
            }
            Ok(Outcome::Ok)
        }
        AuditCommand::Export { since, out, json } => {
            crate::audit_export::run(&home, &store, &trusted, since.as_deref(), &out, json)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Each command's help starts with its variant's doc comment (see [`Command`]).
    const ABOUT: &[(&[&str], &str)] = &[
        (
            &["init"],
            "Create config.toml and the trusted ed25519 keypair",
        ),
        (
            &["pack"],
            "Pack a git revision into a redacted, signed bundle",
        ),
        (&["submit"], "Pack, upload the bundle to the store's inbox"),
        (&["resubmit"], "Dispatch a job's bundle and request again"),
        (&["fetch"], "Download a job's artifact and verify it"),
        (&["gate"], "Judge a job's artifact"),
        (
            &["scan"],
            "Scan files (a directory, a file, or a git revision",
        ),
        (&["classify"], "What the gate would say about these paths"),
        (&["status"], "Every job's state, read from the store alone"),
        (
            &["gc"],
            "Delete the payloads (bundle, checkpoint and artifact tarballs)",
        ),
        (&["watch"], "Fetch and gate artifacts as they land"),
        (&["demo"], "Run the whole valve on an example"),
        (
            &["audit"],
            "Check or read the signed, hash-chained audit ledger",
        ),
        (&["audit", "verify"], "Verify every entry's signature"),
        (
            &["audit", "show"],
            "The generation bill of materials of one job",
        ),
        (
            &["audit", "export"],
            "Write every envelope of the selected jobs",
        ),
        (&["approve"], "Record that a person approves"),
        (&["decline"], "Record that a person declines"),
        (&["show"], "Show a job already gated"),
        (&["compare"], "Compare two jobs"),
    ];

    #[test]
    fn every_command_keeps_its_help() {
        let mut cmd = Cli::command();
        cmd.build();
        cmd.clone().debug_assert();
        let mut seen = 0;
        for (path, about) in ABOUT {
            let mut sub = &cmd;
            for name in *path {
                sub = sub.find_subcommand(name).unwrap();
            }
            let short = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            assert!(short.starts_with(about), "{path:?}: about is {short:?}");
            assert!(
                sub.get_arguments().count() > 3,
                "{path:?}: arguments not built"
            );
            seen += 1;
        }
        let top: Vec<&str> = cmd
            .get_subcommands()
            .map(|c| c.get_name())
            .filter(|n| *n != "help")
            .collect();
        assert_eq!(
            top.len() + 3,
            seen,
            "a command is missing from ABOUT: {top:?}"
        );

        let cli = Cli::try_parse_from([
            "airlock", "--home", "h", "gate", "JOB", "--repo", "r", "--json",
        ])
        .unwrap();
        match cli.command {
            Command::Gate(args) => {
                assert!(args.json);
                assert_eq!(args.repo, PathBuf::from("r"));
            }
            other => panic!("parsed as {other:?}"),
        }
        assert_eq!(cli.global.home, PathBuf::from("h"));
        let err = Cli::try_parse_from(["airlock", "gate", "JOB", "--bogus"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::UnknownArgument);
    }
}
