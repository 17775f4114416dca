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

#[test]
fn classify_says_when_only_path_rules_apply_and_rev_needs_repo() {
    let dir = std::env::temp_dir();
    let out = airlock()
        .current_dir(&dir)
        .args(["classify", "src/main.rs"])
        .output()
        .expect("run airlock");
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--repo DIR"), "{err}");
    let bad = airlock()
        .args(["classify", "--rev", "HEAD", "x"])
        .output()
        .expect("run airlock");
    assert_eq!(bad.status.code(), Some(2));
}
