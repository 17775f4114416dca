//! Command-line surface of `airlock` (clap derive): parses, converts each command's arguments
//! ([`args`]) into its options type in the library, and dispatches.

mod args;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use airlock::audit::AuditOptions;
use airlock::config::GlobalOptions;
use airlock::exit::Outcome;
use args::*;

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
    /// Disposable workers that get jobs through the store: enroll, revoke, status
    /// (docs/FLEET.md). `submit --fleet` queues a job for them; `watch` dispatches it.
    #[command(subcommand)]
    Fleet(FleetCommand),
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

impl GlobalArgs {
    fn options(&self) -> GlobalOptions {
        GlobalOptions {
            home: self.home.clone(),
            verbose: self.verbose,
            quiet: self.quiet,
        }
    }
}

impl PackInputs {
    fn options(self) -> airlock::pack::PackInputs {
        airlock::pack::PackInputs {
            limits: self.limits.to_job_limits(),
            repo: self.repo,
            rev: self.rev,
            prompt_file: self.prompt_file,
            model: self.model,
            repo_name: self.repo_name,
            include: self.include,
            exclude: self.exclude,
            redact: self.redact,
            max_file_bytes: self.max_file_bytes,
            egress: self.egress,
        }
    }
}

/// Runs the chosen command: each one's arguments become its own options type.
pub fn dispatch(cli: Cli) -> Result<Outcome> {
    let global = cli.global.options();
    match cli.command {
        Command::Init(a) => airlock::config::init(
            &global,
            &airlock::config::InitOptions {
                store: a.store,
                json: a.json,
            },
        ),
        Command::Pack(a) => airlock::pack::run(
            &global,
            &airlock::pack::PackCommandOptions {
                pack: a.pack.options(),
                out: a.out,
                json: a.json,
            },
        ),
        Command::Submit(a) => {
            let opts = airlock::submit::SubmitOptions {
                pack: a.pack.options(),
                ttl: a.ttl,
                token_out: a.token_out,
                print_token: a.print_token,
                json: a.json,
            };
            match a.fleet.fleet {
                true => airlock::fleet::submit(&global, &opts, a.fleet.label),
                false => airlock::submit::run(&global, &opts),
            }
        }
        Command::Fleet(cmd) => match cmd {
            FleetCommand::Enroll {
                name,
                worker_pub,
                out,
                ttl,
                heartbeat,
            } => airlock::fleet::enroll::run(
                &global,
                &airlock::fleet::enroll::EnrollOptions {
                    name,
                    worker_pub,
                    out,
                    ttl,
                    heartbeat,
                },
            ),
            FleetCommand::Revoke { name } => airlock::fleet::enroll::revoke(&global, &name),
            FleetCommand::Status { json } => airlock::fleet::status::run(&global, json),
        },
        Command::Resubmit(a) => airlock::resubmit::run(
            &global,
            &airlock::resubmit::ResubmitOptions {
                job: a.job,
                ttl: a.ttl,
                token_out: a.token_out,
                print_token: a.print_token,
                json: a.json,
            },
        ),
        Command::Fetch(a) => airlock::fetch::run(
            &global,
            &airlock::fetch::FetchOptions {
                job: a.job,
                checkpoint: a.checkpoint,
                json: a.json,
            },
        ),
        Command::Gate(a) => airlock::gate::command(
            &global,
            &airlock::gate::GateCommandOptions {
                job: a.job,
                repo: a.repo,
                policy: a.policy,
                review_branch: a.review_branch,
                json: a.json,
                md: a.md,
                html: a.html,
            },
        ),
        Command::Scan(a) => airlock::scan_cmd::run(
            &airlock::scan_cmd::ScanOptions {
                path: a.path,
                rev: a.rev,
                config: a.config,
                gitleaks_config: a.gitleaks_config,
                json: a.json,
                sarif: a.sarif,
                print_regex: a.print_regex,
            },
            global.quiet,
        ),
        Command::Classify(a) => {
            airlock::classify::run_classify(
                a.paths,
                a.json,
                a.policy.as_deref(),
                a.repo
                    .as_deref()
                    .map(|r| (r, a.rev.as_deref().unwrap_or("HEAD"))),
            )?;
            Ok(Outcome::Ok)
        }
        Command::Status(a) => airlock::status::run(
            &global,
            &airlock::status::StatusOptions {
                job: a.job,
                json: a.json,
            },
        ),
        Command::Gc(a) => airlock::gc::run(
            &global,
            &airlock::gc::GcOptions {
                older_than: a.older_than,
                dry_run: a.dry_run,
                json: a.json,
            },
        ),
        Command::Watch(a) => airlock::watch::run(
            &global,
            &airlock::watch::WatchOptions {
                jobs: a.jobs,
                once: a.once,
                max_jobs: a.max_jobs,
                poll_max: a.poll_max,
                repo: a.repo,
                policy: a.policy,
                review_branch: a.review_branch,
                json: a.json,
            },
        ),
        Command::Audit(cmd) => airlock::audit::run(
            &global,
            match cmd {
                AuditCommand::Verify { head, json } => AuditOptions::Verify { head, json },
                AuditCommand::Show { job, json } => AuditOptions::Show { job, json },
                AuditCommand::Export { since, out, json } => {
                    AuditOptions::Export { since, out, json }
                }
            },
        ),
        Command::Demo => airlock::demo::run(&global),
        Command::Approve(a) => {
            airlock::approve::run(&global, &a.options(), airlock::approve::Decision::Approve)
        }
        Command::Decline(a) => {
            airlock::approve::run(&global, &a.options(), airlock::approve::Decision::Decline)
        }
        Command::Show(a) => airlock::show::run(
            &global,
            &airlock::show::ShowOptions {
                job: a.job,
                html: a.html,
                md: a.md,
                json: a.json,
            },
        ),
        Command::Compare(a) => airlock::compare::run(
            &global,
            &airlock::compare::CompareOptions {
                job_a: a.job_a,
                job_b: a.job_b,
                json: a.json,
            },
        ),
    }
}

impl DecideArgs {
    fn options(self) -> airlock::approve::DecideOptions {
        airlock::approve::DecideOptions {
            job: self.job,
            note: self.note,
            by: self.by,
            json: self.json,
        }
    }
}

#[cfg(test)]
mod tests;
