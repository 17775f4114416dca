use airlock_sandbox::{spawn, Mode, HELPER_SUBCOMMAND};

use crate::support::*;

/// A spec that would expose the token is refused before any process or log exists.
#[test]
fn refuses_a_token_under_a_readable_root_before_starting() {
    let f = Fixture::new();
    let marker = f.work.join("started");
    let mut spec = f.sh(Mode::Auto, &format!("touch '{}'", marker.display()));
    let token = f.path("job.token");
    std::fs::write(&token, "secret").unwrap();
    spec.readable.push(f.dir.path().to_path_buf());
    spec.secret_paths = vec![token];
    let sink = f.log_sink(100);
    let err = spawn(host(), &[HELPER_SUBCOMMAND], &spec, &sink).unwrap_err();
    assert_eq!(err.rule(), "sandbox.spec.secret-reachable", "{err}");
    assert!(!marker.exists());
    assert!(!sink.path.exists());
}

#[test]
fn refuses_a_relative_workdir_before_starting() {
    let f = Fixture::new();
    let mut spec = f.sh(Mode::Auto, "true");
    spec.workdir = "work".into();
    let err = spawn(host(), &[HELPER_SUBCOMMAND], &spec, &f.log_sink(100)).unwrap_err();
    assert_eq!(err.rule(), "sandbox.spec.relative-path");
}

/// The host binary, called without the hidden subcommand, is not a sandbox.
#[test]
fn host_binary_without_subcommand_refuses() {
    let out = std::process::Command::new(host()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
