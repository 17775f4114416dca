//! CLI manners of the `airlock` binary: `--help` teaches, usage errors exit 2.
//! (Also makes `cargo test --workspace` build the binary that `tests/` drives.)

use std::process::Command;

fn airlock() -> Command {
    Command::new(env!("CARGO_BIN_EXE_airlock"))
}

#[test]
fn help_lists_every_hop_and_the_exit_codes() {
    let out = airlock().arg("--help").output().expect("run airlock");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for word in [
        "init",
        "pack",
        "submit",
        "fetch",
        "gate",
        "classify",
        "status",
        "gc",
        "audit",
        "demo",
        "scan",
        "watch",
        "Exit codes",
    ] {
        assert!(
            text.contains(word),
            "--help does not mention {word}: {text}"
        );
    }
}

#[test]
fn usage_errors_exit_2() {
    let none = airlock().output().expect("run airlock");
    assert_eq!(none.status.code(), Some(2));
    let bad = airlock()
        .args(["gate", "--no-such-flag"])
        .output()
        .expect("run airlock");
    assert_eq!(bad.status.code(), Some(2));
}
