use std::time::{Duration, Instant};

use airlock_sandbox::{ExitStatus, LimitHit, Mode, SandboxError, SandboxKind};

use crate::support::*;

const MODES: [Mode; 3] = [Mode::Unsandboxed, Mode::Namespaces, Mode::LandlockSeccomp];

fn modes() -> impl Iterator<Item = Mode> {
    MODES.into_iter().filter(|m| require(*m).is_some())
}

#[test]
fn reports_exit_code_and_signal() {
    for mode in modes() {
        let f = Fixture::new();
        let (o, _) = f.run(&f.sh(mode, "exit 3")).unwrap();
        assert_eq!(o.status, ExitStatus::Exited(3), "{mode:?}");
        let (o, _) = f.run(&f.sh(mode, "kill -TERM $$")).unwrap();
        assert_eq!(o.status, ExitStatus::Signaled(libc::SIGTERM), "{mode:?}");
        assert_eq!(o.limit_hit, None);
    }
}

#[test]
fn unsandboxed_mode_says_none() {
    let f = Fixture::new();
    let (o, log) = f.run(&f.sh(Mode::Unsandboxed, "echo ran")).unwrap();
    assert_eq!(o.sandbox, SandboxKind::None);
    assert_eq!(o.sandbox.as_str(), "none");
    assert_eq!(log, "ran\n");
}

#[test]
fn stdout_and_stderr_share_one_log() {
    for mode in modes() {
        let f = Fixture::new();
        let (o, log) = f
            .run(&f.sh(mode, "echo out; echo err >&2; echo out2"))
            .unwrap();
        assert!(o.status.success());
        assert_eq!(log, "out\nerr\nout2\n", "{mode:?}");
        assert!(!o.log_truncated);
        assert_eq!(o.log_bytes, log.len() as u64);
    }
}

#[test]
fn caps_a_log_flood_without_blocking_the_generator() {
    for mode in modes() {
        let f = Fixture::new();
        let sink = f.log_sink(1000);
        // 8 MiB of output, far beyond the pipe buffer: the generator must still finish.
        let spec = f.sh(mode, "head -c 8388608 /dev/zero; echo done >&2; exit 4");
        let mut r =
            airlock_sandbox::spawn(host(), &[airlock_sandbox::HELPER_SUBCOMMAND], &spec, &sink)
                .unwrap();
        let o = r.wait_until(Instant::now() + SAFETY_DEADLINE).unwrap();
        assert_eq!(o.status, ExitStatus::Exited(4), "{mode:?}");
        assert!(o.log_truncated, "{mode:?}");
        assert_eq!(o.log_bytes, 1000);
        assert_eq!(std::fs::metadata(&sink.path).unwrap().len(), 1000);
    }
}

#[test]
fn refuses_to_overwrite_an_existing_log() {
    let f = Fixture::new();
    let sink = f.log_sink(100);
    std::fs::write(&sink.path, "earlier").unwrap();
    let err = airlock_sandbox::spawn(
        host(),
        &[airlock_sandbox::HELPER_SUBCOMMAND],
        &f.sh(Mode::Unsandboxed, "true"),
        &sink,
    )
    .unwrap_err();
    assert!(matches!(err, SandboxError::Io { .. }), "{err}");
    assert_eq!(std::fs::read_to_string(&sink.path).unwrap(), "earlier");
}

#[test]
fn missing_program_is_an_exec_error_before_anything_runs() {
    for mode in modes() {
        let f = Fixture::new();
        let err = f
            .run(&f.spec(mode, "airlock-no-such-generator", &[]))
            .unwrap_err();
        assert!(matches!(err, SandboxError::Exec { .. }), "{mode:?}: {err}");
        assert_eq!(err.rule(), "sandbox.exec");
    }
}

/// The environment holds exactly the spec's variables: a canary in the supervisor's own
/// environment (set by re-running this test in a child process) is absent inside.
#[test]
fn environment_holds_only_the_spec_env() {
    const CANARY: &str = "AIRLOCK_TEST_CLOUD_SECRET";
    if std::env::var_os(CANARY).is_none() {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "runner::environment_holds_only_the_spec_env",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CANARY, "canary-value-must-not-leak")
            .status()
            .unwrap();
        assert!(status.success(), "the re-run with the canary failed");
        return;
    }
    for mode in modes() {
        let f = Fixture::new();
        let mut spec = f.python(
            mode,
            "import os, json; json.dump(dict(os.environ), open('env.json', 'w'))",
        );
        spec.env.push(("ALLOWED_ONE".into(), "yes".into()));
        let (o, log) = f.run(&spec).unwrap();
        assert!(o.status.success(), "{mode:?}: {log}");
        let got: std::collections::BTreeMap<String, String> =
            serde_json::from_slice(&std::fs::read(f.work.join("env.json")).unwrap()).unwrap();
        let want: std::collections::BTreeMap<String, String> = spec.env.iter().cloned().collect();
        assert_eq!(got, want, "{mode:?}");
        assert!(!got.values().any(|v| v.contains("canary-value")));
    }
}

/// A generator that starts a sleeping child and sleeps past the deadline: both are killed
/// (in namespace mode the child even leaves the process group with `setsid`).
#[test]
fn wall_clock_kills_the_generator_and_its_children() {
    for mode in modes() {
        let f = Fixture::new();
        let token = nonce();
        let child = format!("3600.{token}1");
        let escapee = format!("3600.{token}2");
        let main = format!("3600.{token}3");
        let setsid = if mode == Mode::Namespaces {
            "setsid "
        } else {
            ""
        };
        let script = format!(
            "sleep {child} & {setsid}sleep {escapee} & echo $! > child.pid; exec sleep {main}"
        );
        let (mut r, _) = f.start(&f.sh(mode, &script)).unwrap();
        // Wait (bounded) until the children exist; no assertion depends on timing.
        let until = Instant::now() + SAFETY_DEADLINE;
        let running = |t: &str| processes_with(t).len() == 1;
        while !(f.work.join("child.pid").exists()
            && running(&main)
            && running(&child)
            && running(&escapee))
        {
            assert!(
                r.wait_timeout(Duration::from_millis(5)).unwrap().is_none(),
                "{mode:?}: ended early"
            );
            assert!(Instant::now() < until, "{mode:?}: children never started");
        }
        let o = r.wait_until(Instant::now()).unwrap();
        assert_eq!(o.status, ExitStatus::TimedOut, "{mode:?}");
        assert_eq!(o.limit_hit, Some(LimitHit::WallClock));
        for t in [&child, &escapee, &main] {
            assert_eq!(
                processes_with(t),
                Vec::<u32>::new(),
                "{mode:?}: survivor {t}"
            );
        }
    }
}

/// When the generator's main process exits, what it left running in the background dies.
#[test]
fn background_processes_die_with_the_generator() {
    for mode in modes() {
        let f = Fixture::new();
        let token = format!("3600.{}", nonce());
        let (o, _) = f
            .run(&f.sh(mode, &format!("sleep {token} & exit 0")))
            .unwrap();
        assert!(o.status.success());
        assert_eq!(processes_with(&token), Vec::<u32>::new(), "{mode:?}");
    }
}

#[test]
fn kill_group_and_drop_leave_no_process_behind() {
    for mode in modes() {
        let f = Fixture::new();
        let token = format!("3600.{}", nonce());
        let script = format!("sleep {token} & exec sleep {token}");
        let (mut r, _) = f.start(&f.sh(mode, &script)).unwrap();
        r.kill_group().unwrap();
        let o = r.wait().unwrap();
        assert_eq!(o.status, ExitStatus::Signaled(libc::SIGKILL), "{mode:?}");
        assert_eq!(processes_with(&token), Vec::<u32>::new(), "{mode:?}");

        let token = format!("3600.{}", nonce());
        let script = format!("sleep {token} & exec sleep {token}");
        let (r, _) = f.start(&f.sh(mode, &script)).unwrap();
        drop(r);
        assert_eq!(
            processes_with(&token),
            Vec::<u32>::new(),
            "{mode:?}: after drop"
        );
    }
}

#[test]
fn wait_timeout_returns_none_while_running_then_the_same_outcome() {
    let f = Fixture::new();
    let (mut r, _) = f.start(&f.sh(Mode::Unsandboxed, "exit 5")).unwrap();
    let o = r.wait().unwrap();
    assert_eq!(o.status, ExitStatus::Exited(5));
    assert_eq!(r.wait_timeout(Duration::ZERO).unwrap(), Some(o.clone()));
    let (mut r, _) = f
        .start(&f.sh(Mode::Unsandboxed, "exec sleep 3600"))
        .unwrap();
    assert_eq!(r.wait_timeout(Duration::ZERO).unwrap(), None);
    r.kill_group().unwrap();
    assert_eq!(
        r.wait().unwrap().status,
        ExitStatus::Signaled(libc::SIGKILL)
    );
}

crate::in_both_modes!(killing_the_supervisor_kills_the_whole_sandbox);

/// A worker killed with `kill -9` runs no cleanup: the sandbox itself must take the
/// generator and everything it forked down with it (namespace mode: the pid namespace's
/// init dies with its parents; fallback: the guard sees the supervisor's channel close and
/// kills the process group, which the generator cannot leave).
fn killing_the_supervisor_kills_the_whole_sandbox(mode: Mode) {
    use std::io::BufRead;
    let f = Fixture::new();
    let tag = format!("airlock-orphan-{}", nonce());
    let code = r#"
import os, sys, time
if os.fork() == 0:
    if os.fork() == 0:
        time.sleep(600)
    time.sleep(600)
time.sleep(600)
"#;
    let mut spec = f.python(mode, code);
    spec.args.push(tag.clone().into());
    let spec_file = f.path("spec.json");
    std::fs::write(&spec_file, serde_json::to_vec(&spec).unwrap()).unwrap();
    let mut supervisor = std::process::Command::new(host())
        .arg("__supervise")
        .arg(&spec_file)
        .arg(f.path("generator.log"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(supervisor.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("started "), "supervisor said {line:?}");
    let until = Instant::now() + SAFETY_DEADLINE;
    while processes_with(&tag).len() < 3 {
        assert!(Instant::now() < until, "the generator tree never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    supervisor.kill().unwrap(); // SIGKILL: nothing of the supervisor runs afterwards.
    supervisor.wait().unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while !processes_with(&tag).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survivors = processes_with(&tag);
    for pid in &survivors {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(
        survivors.is_empty(),
        "{mode:?}: sandbox processes outlived their supervisor: {survivors:?}"
    );
}
