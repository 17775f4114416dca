//! Command-line surface of `airlock` (clap derive): parses, converts each command's arguments
//! ([`args`]) into its options type in the library, and dispatches.

mod args;
mod egress_arg;
mod fleet_args;
mod limit_args;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

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
    /// given (a redacted file, the manifest and the request are scanned again as written).
    /// Writes DIR/bundle.tar.gz and DIR/bundle.dsse.json atomically. What each file's scan
    /// and compression produced is kept in HOME/cache/pack/, so a new revision scans only what
    /// changed (AIRLOCK_PACK_CACHE=off: no cache).
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

/// Runs the chosen command: one line each, its arguments converted into its options type.
pub fn dispatch(cli: Cli) -> Result<Outcome> {
    use airlock::approve::Decision;
    let g = cli.global.options();
    match cli.command {
        Command::Init(a) => airlock::init::run(&g, &a.into()),
        Command::Pack(a) => airlock::pack::run(&g, &a.into()),
        Command::Submit(a) if a.fleet.fleet => airlock::fleet::submit(&g, &a.into()),
        Command::Submit(a) => airlock::submit::run(&g, &a.into()),
        Command::Resubmit(a) => airlock::resubmit::run(&g, &a.into()),
        Command::Fetch(a) => airlock::fetch::run(&g, &a.into()),
        Command::Gate(a) => airlock::gate::run(&g, &a.into()),
        Command::Scan(a) => airlock::scan_cmd::run(&g, &a.into()),
        Command::Classify(a) => airlock::classify_cmd::run(&g, &a.into()),
        Command::Status(a) => airlock::status::run(&g, &a.into()),
        Command::Gc(a) => airlock::gc::run(&g, &a.into()),
        Command::Watch(a) => airlock::watch::run(&g, &a.into()),
        Command::Audit(a) => airlock::audit::run(&g, &a.into()),
        Command::Fleet(a) => airlock::fleet::run(&g, &a.into()),
        Command::Demo => airlock::demo::run(&g),
        Command::Approve(a) => airlock::approve::run(&g, &a.decide(Decision::Approve)),
        Command::Decline(a) => airlock::approve::run(&g, &a.decide(Decision::Decline)),
        Command::Show(a) => airlock::show::run(&g, &a.into()),
        Command::Compare(a) => airlock::compare::run(&g, &a.into()),
    }
}

#[cfg(test)]
mod tests;
