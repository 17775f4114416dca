//! A minimal host for the sandbox helper, used by this crate's tests: the shape every host
//! binary (the worker) follows. `main` hands over to [`airlock_sandbox::child_main`] before
//! doing anything else (no threads, no logging set up), when called with the hidden
//! subcommand.

fn main() {
    if std::env::args_os().nth(1).as_deref() == Some(airlock_sandbox::HELPER_SUBCOMMAND.as_ref()) {
        airlock_sandbox::child_main();
    }
    eprintln!(
        "airlock-sandbox-host: test host; run by airlock-sandbox's tests as `{}`",
        airlock_sandbox::HELPER_SUBCOMMAND
    );
    std::process::exit(2);
}
