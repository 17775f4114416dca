//! `airlock-worker`: the untrusted hop. A job token and a bundle in, one signed artifact out.
//!
//! The worker holds nothing but its token: no store credentials, no git, no cloud SDK. It
//! verifies everything it is given against the pinned trusted public key before it runs the
//! generator, runs the generator confined (see `airlock-sandbox`), computes the diff itself,
//! and signs the artifact with the per-job key from the token.
//!
//! # Guarantees
//! - Nothing runs unless the token, the bundle digest and the bundle's signature verify.
//! - The generator sees a cleared environment (explicit `--pass-env` allowlist only).
//! - The per-run directory is removed on every exit path, including SIGTERM/SIGINT.
//! - Exit codes (see `outcome`): 0 artifact dropped, 1 error or refusal (nothing dropped),
//!   2 usage, 3 the generator failed (partial artifact dropped), 4 the job was already
//!   finished (nothing ran), 5 the generator changed nothing (empty artifact dropped).
//!
//! # Not guaranteed
//! - That a host compromised before the run did not tamper with the worker binary itself:
//!   the trusted side verifies everything the worker returns and trusts none of it.
#![deny(unsafe_code)]
#![deny(missing_docs)]

mod artifact;
mod cli;
mod disk;
mod generate;
mod gitignore;
mod home;
mod outcome;
mod readable;
mod run;
mod transfer;
mod tree;
mod watch;
mod workspace;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // The sandbox helper re-executes this binary; dispatch before anything else runs.
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(generate::HELPER_ARG)) {
        generate::helper_main();
    }
    let cli = cli::Cli::parse();
    init_logging(cli.verbose);
    let result = match cli.command {
        cli::Command::Run(args) => run::run_cli(&args).map(|o| o.code()),
        cli::Command::Watch(args) => watch::watch(&args).map(|()| outcome::EXIT_OK),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) if err.downcast_ref::<run::AlreadyFinished>().is_some() => {
            eprintln!("error: {err}");
            ExitCode::from(outcome::EXIT_FINISHED)
        }
        Err(err) => {
            eprintln!("error: {}", airlock_core::error::one_line(err.as_ref()));
            ExitCode::from(outcome::EXIT_ERROR)
        }
    }
}

fn init_logging(verbose: u8) {
    use std::io::IsTerminal;
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let level = match verbose {
        0 => LevelFilter::WARN,
        1 => LevelFilter::INFO,
        _ => LevelFilter::DEBUG,
    };
    // `RUST_LOG` takes `target=level` directives (`tracing_subscriber::filter::Targets`).
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|s| s.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(level));
    let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::io::stderr().is_terminal();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(color)
        .with_target(false)
        .finish()
        .with(filter)
        .init();
}
