//! `airlock`: the trusted side's command line. Parses the arguments ([`cli`]), hands each
//! command its options type from the `airlock` library, and maps the result to the documented
//! exit codes (0 ok/queue, 1 error, 2 usage, 3 needs a human, 4 rejected/refused).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod cli;

use std::process::ExitCode;

use airlock::{exit, output};
use clap::Parser;

/// The static musl build's allocator: musl's own is slow for a process that builds many small
/// objects at once (the gate compiles the classification table's globs), and a gate paid for
/// it in a benchmark (docs/PERFORMANCE.md). dlmalloc is pure Rust and needs no `unsafe` here;
/// glibc builds keep glibc's allocator.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

fn main() -> ExitCode {
    output::quiet_on_closed_stdout();
    let cli = cli::Cli::parse();
    output::init_logging(cli.global.verbose, cli.global.quiet);
    match cli::dispatch(cli) {
        Ok(code) => code.into(),
        Err(err) => exit::report(&err),
    }
}
