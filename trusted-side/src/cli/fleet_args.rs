//! The fleet's arguments: `submit --fleet [--label L]` and `airlock fleet enroll|revoke|status`
//! (plain comments on the structs: see `Command`), each with its conversion into the fleet's
//! options.

use std::path::PathBuf;

use clap::{Args, Subcommand};

// `submit --fleet [--label L]` (a plain comment: see `Command`)
#[derive(Debug, Args)]
pub struct FleetSubmitArgs {
    /// Queue the job for the fleet: `airlock watch` seals its token to an idle, compatible
    /// enrolled worker and drops it in that worker's mailbox (docs/FLEET.md). The token is
    /// kept in .airlock/fleet/queue/ (0600), never printed.
    #[arg(long)]
    pub fleet: bool,
    /// With --fleet: only a worker whose heartbeat claims label L gets the job.
    #[arg(long, value_name = "L", requires = "fleet")]
    pub label: Option<String>,
}

/// `airlock fleet …`.
#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Enrol a worker: write a signed enrolment holding presigned URLs for that worker's own
    /// mailbox slots and heartbeat under fleet/NAME/ in the store, and nothing else. Copy it
    /// to the worker; `airlock watch` renews it (sealed to the worker's key) at half its
    /// lifetime.
    Enroll {
        /// The worker's name: 1 to 40 of [a-z0-9-].
        name: String,
        /// The worker's public key (`airlock-worker keygen --out DIR` wrote DIR/worker.pub).
        #[arg(long, value_name = "FILE")]
        worker_pub: PathBuf,
        /// Where to write the enrolment (created new, 0600).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Lifetime of its URLs (1m..7d); with short-lived cloud credentials, at most theirs.
        #[arg(long, default_value = "1h")]
        ttl: String,
        /// How often the worker writes its heartbeat; it is lost after 4 missed ones.
        #[arg(long, default_value = "5s")]
        heartbeat: String,
    },
    /// Revoke a worker: no more tickets or renewals, a signed revocation in its mailbox (it
    /// exits when it reads it), and `airlock watch` re-dispatches what it held.
    Revoke {
        /// The worker.
        name: String,
    },
    /// Each worker: mark (ready, busy, lost, skipped, revoked), its claimed version, state,
    /// job and labels (the worker's own words), last heartbeat, jobs done and failed.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

impl From<FleetCommand> for airlock::fleet::FleetOptions {
    fn from(a: FleetCommand) -> Self {
        match a {
            FleetCommand::Enroll {
                name,
                worker_pub,
                out,
                ttl,
                heartbeat,
            } => Self::Enroll(airlock::fleet::enroll::EnrollOptions {
                name,
                worker_pub,
                out,
                ttl,
                heartbeat,
            }),
            FleetCommand::Revoke { name } => Self::Revoke { name },
            FleetCommand::Status { json } => Self::Status { json },
        }
    }
}
