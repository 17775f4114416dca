//! `airlock`: the trusted side of airlock. Packs a redacted, signed bundle of a git revision,
//! and (in later hops) submits it, fetches the worker's artifact and gates it.
//!
//! # Guarantees
//! - Never packs a deny-listed path; refuses (or, with `--redact`, redacts and records) any
//!   secret its scanner finds, then scans the finished bundle again.
//! - Writes outputs atomically: on any error nothing half-written is left behind.
//! - Exit codes are decided in one place ([`exit`]): 0 ok/queue, 1 error, 2 usage,
//!   3 needs a human, 4 rejected/refused.
//!
//! # Not guaranteed
//! - That the scanner finds every secret: it is a second line behind the deny-list, not a proof.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod approve;
mod audit;
mod audit_export;
mod cli;
mod compare;
mod config;
mod demo;
mod exit;
mod fetch;
mod gate;
mod gc;
mod git;
mod ledger;
mod model_key;
mod output;
mod pack;
mod reasons;
mod resubmit;
mod run_account;
mod scan_cmd;
mod show;
mod status;
mod store;
mod submit;
#[cfg(test)]
mod test_artifact;
mod watch;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    output::quiet_on_closed_stdout();
    let cli = cli::Cli::parse();
    output::init_logging(cli.global.verbose, cli.global.quiet);
    match cli::dispatch(cli) {
        Ok(code) => code.into(),
        Err(err) => exit::report(&err),
    }
}
