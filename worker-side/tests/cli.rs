//! CLI manners of the `airlock-worker` binary: `--help` teaches, usage errors exit 2, and a
//! run without a generator command is refused before anything happens.
//! (Also makes `cargo test --workspace` build the binary that `tests/` drives.)

use std::process::Command;

fn worker() -> Command {
    Command::new(env!("CARGO_BIN_EXE_airlock-worker"))
}

#[test]
fn help_names_the_commands_and_the_exit_codes() {
    let out = worker().arg("--help").output().expect("run airlock-worker");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for word in ["run", "watch", "Exit codes"] {
        assert!(
            text.contains(word),
            "--help does not mention {word}: {text}"
        );
    }
}

#[test]
fn run_without_a_generator_is_a_usage_error() {
    let out = worker()
        .args([
            "run",
            "--token-file",
            "/nonexistent",
            "--trusted-pub",
            "/nonexistent",
        ])
        .output()
        .expect("run airlock-worker");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
