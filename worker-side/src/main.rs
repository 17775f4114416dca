//! `airlock-worker`'s command line: parses the flags (`cli.rs`), runs the library's `run` or
//! `watch` (see the `airlock_worker` crate doc for what the worker guarantees) and maps the
//! result to an exit code.
#![deny(unsafe_code)]
#![deny(missing_docs)]

mod cli;

use std::process::ExitCode;

use airlock_worker::{generate, keygen, outcome, run, serve, watch};
use clap::Parser;

fn main() -> ExitCode {
    // The sandbox helper re-executes this binary; dispatch before anything else runs.
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(generate::HELPER_ARG)) {
        generate::helper_main();
    }
    let cli = cli::Cli::parse();
    init_logging(cli.verbose);
    let result = match cli.command {
        cli::Command::Run(args) => run::run_cli(&args.into()).map(|o| o.code()),
        cli::Command::Watch(args) => watch::watch(&args.into()).map(|()| outcome::EXIT_OK),
        cli::Command::Keygen(args) => keygen::keygen(&args.out).map(|public| {
            println!("{public}");
            eprintln!(
                "wrote {0}/worker.key (0600, keep it here) and {0}/worker.pub (give it to `airlock fleet enroll`)",
                args.out.display()
            );
            outcome::EXIT_OK
        }),
        cli::Command::Serve(args) => serve::serve(&args.into()).map(|()| outcome::EXIT_OK),
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
    let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::io::stderr().is_terminal();
    // `RUST_LOG` takes `target=level` directives (`tracing_subscriber::filter::Targets`);
    // without it, the level of -v is the subscriber's maximum (what `LevelFilter::current`
    // reports).
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(color)
        .with_target(false);
    match std::env::var("RUST_LOG")
        .ok()
        .and_then(|s| s.parse::<Targets>().ok())
    {
        Some(targets) => builder
            .with_max_level(LevelFilter::TRACE)
            .finish()
            .with(targets)
            .init(),
        None => builder.with_max_level(level).init(),
    }
}
