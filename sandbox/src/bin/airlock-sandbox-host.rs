//! A minimal host for the sandbox helper, used by this crate's tests: the shape every host
//! binary (the worker) follows. `main` hands over to [`airlock_sandbox::child_main`] before
//! doing anything else (no threads, no logging set up), when called with the hidden
//! subcommand.
//!
//! Tests also use it as a stand-alone supervisor (`__supervise SPEC.json LOG`: spawn the
//! spec, print `started <pid>`, wait), so that they can kill a supervisor and watch what
//! becomes of its sandbox.

use std::io::Write;

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).map(|a| a.as_os_str()) == Some(airlock_sandbox::HELPER_SUBCOMMAND.as_ref()) {
        airlock_sandbox::child_main();
    }
    if args.get(1).is_some_and(|a| a == "__supervise") && args.len() == 4 {
        std::process::exit(match supervise(&args[2], &args[3]) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("airlock-sandbox-host: {e}");
                1
            }
        });
    }
    eprintln!(
        "airlock-sandbox-host: test host; run by airlock-sandbox's tests as `{}`",
        airlock_sandbox::HELPER_SUBCOMMAND
    );
    std::process::exit(2);
}

fn supervise(
    spec: &std::ffi::OsStr,
    log: &std::ffi::OsStr,
) -> Result<(), Box<dyn std::error::Error>> {
    let spec: airlock_sandbox::SandboxSpec = serde_json::from_slice(&std::fs::read(spec)?)?;
    let sink = airlock_sandbox::LogSink {
        path: log.into(),
        max_bytes: 1 << 20,
    };
    let exe = std::env::current_exe()?;
    let mut running =
        airlock_sandbox::spawn(&exe, &[airlock_sandbox::HELPER_SUBCOMMAND], &spec, &sink)?;
    let mut out = std::io::stdout();
    writeln!(out, "started {} {}", running.id(), running.sandbox())?;
    out.flush()?;
    let outcome = running.wait()?;
    writeln!(out, "ended {:?}", outcome.status)?;
    Ok(())
}
