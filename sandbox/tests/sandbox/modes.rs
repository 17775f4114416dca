use airlock_sandbox::{spawn, Mode, SandboxError, SandboxKind, HELPER_SUBCOMMAND};

use crate::support::*;

#[test]
fn auto_prefers_namespaces_and_says_which_ran() {
    let f = Fixture::new();
    let (o, _) = f.run(&f.sh(Mode::Auto, "true")).unwrap();
    match mode_available(Mode::Namespaces) {
        Ok(()) => {
            assert_eq!(o.sandbox, SandboxKind::Namespaces);
            assert_eq!(o.sandbox.as_str(), "namespaces+landlock+seccomp");
            assert_eq!(o.fallback_reason, None);
        }
        Err(why) => {
            assert_eq!(o.sandbox, SandboxKind::LandlockSeccomp);
            assert!(o.fallback_reason.is_some());
            skip(&format!("namespaces unavailable, auto fell back: {why}"));
        }
    }
}

#[test]
fn forced_fallback_says_landlock_seccomp() {
    let Some(mode) = require(Mode::LandlockSeccomp) else {
        return;
    };
    let f = Fixture::new();
    let (o, _) = f.run(&f.sh(mode, "true")).unwrap();
    assert_eq!(o.sandbox, SandboxKind::LandlockSeccomp);
    assert_eq!(o.sandbox.as_str(), "landlock+seccomp");
}

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

/// A root worker whose workdir sits below a directory the sandbox identity cannot search
/// is told so, and nothing runs.
#[test]
fn root_worker_refuses_an_unreachable_workdir() {
    use std::os::unix::fs::PermissionsExt;
    if !std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
    {
        println!("not root: nothing to hand over");
        return;
    }
    let f = Fixture::new();
    std::fs::set_permissions(f.dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let marker = f.work.join("started");
    for mode in [Mode::Namespaces, Mode::LandlockSeccomp] {
        let err = f
            .run(&f.sh(mode, &format!("touch '{}'", marker.display())))
            .unwrap_err();
        assert!(
            matches!(&err, SandboxError::Layer { layer, .. } if layer == "identity"),
            "{err}"
        );
        assert!(err.to_string().contains("not searchable"), "{err}");
    }
    assert!(!marker.exists());
}

/// The host binary, called without the hidden subcommand, is not a sandbox.
#[test]
fn host_binary_without_subcommand_refuses() {
    let out = std::process::Command::new(host()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
