use airlock_sandbox::{ExitStatus, LimitHit, Mode};

use crate::support::*;

crate::in_both_modes!(
    caps_a_fork_bomb,
    caps_a_memory_hog,
    kills_a_cpu_spinner_and_says_cpu_secs,
    caps_file_size_and_says_file_size,
    caps_open_files,
);

/// A bounded fork bomb (at most 300 sleeping children) against a limit of 64 processes:
/// forking must fail before the 64th child, the host is unaffected, and every child dies
/// with the run.
fn caps_a_fork_bomb(mode: Mode) {
    let f = Fixture::new();
    let token = format!("3600.{}", nonce());
    let code = format!(
        r#"
import os, sys, time
n = 0
try:
    for _ in range(300):
        pid = os.fork()
        if pid == 0:
            os.execv("/bin/sleep", ["sleep", "{token}"])
        n += 1
except OSError as e:
    print("fork refused after", n, "children:", e)
    sys.exit(7)
print("FORKED", n)
"#
    );
    let mut spec = f.python(mode, &code);
    spec.rlimits.processes = Some(64);
    let (o, log) = f.run(&spec).unwrap();
    assert_eq!(
        o.status,
        ExitStatus::Exited(7),
        "BREACH: the fork bomb was not capped\n{log}"
    );
    let n: u32 = log
        .split_whitespace()
        .nth(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{log}"));
    assert!(n < 64, "{n} children under a limit of 64: {log}");
    assert_eq!(
        processes_with(&token),
        Vec::<u32>::new(),
        "children survived the run"
    );
}

/// Allocating 2 GiB under a 256 MiB address-space limit fails inside; the host survives.
fn caps_a_memory_hog(mode: Mode) {
    let f = Fixture::new();
    let code = r#"
import sys
try:
    hog = bytearray(2 << 30)
except MemoryError:
    print("allocation refused")
    sys.exit(7)
print("ALLOCATED", len(hog))
"#;
    let mut spec = f.python(mode, code);
    spec.rlimits.address_space_bytes = Some(256 << 20);
    let (o, log) = f.run(&spec).unwrap();
    assert_eq!(
        o.status,
        ExitStatus::Exited(7),
        "BREACH: the memory hog was not capped\n{log}"
    );
    assert!(log.contains("allocation refused"), "{log}");
}

fn kills_a_cpu_spinner_and_says_cpu_secs(mode: Mode) {
    let f = Fixture::new();
    let mut spec = f.sh(mode, "while :; do :; done");
    spec.rlimits.cpu_secs = Some(1);
    let (o, _) = f.run(&spec).unwrap();
    assert_eq!(o.status, ExitStatus::Signaled(libc::SIGXCPU));
    assert_eq!(o.limit_hit, Some(LimitHit::CpuSecs));
    assert_eq!(o.limit_hit.map(LimitHit::as_str), Some("cpu-secs"));
}

fn caps_file_size_and_says_file_size(mode: Mode) {
    let f = Fixture::new();
    let mut spec = f.sh(mode, "exec head -c 4194304 /dev/zero > big");
    spec.rlimits.file_size_bytes = Some(1 << 20);
    let (o, _) = f.run(&spec).unwrap();
    assert_eq!(o.status, ExitStatus::Signaled(libc::SIGXFSZ));
    assert_eq!(o.limit_hit, Some(LimitHit::FileSize));
    assert_eq!(
        std::fs::metadata(f.work.join("big")).unwrap().len(),
        1 << 20
    );
}

fn caps_open_files(mode: Mode) {
    let f = Fixture::new();
    let code = r#"
import sys
fds = []
try:
    for i in range(1000):
        fds.append(open("/dev/null"))
except OSError as e:
    print("open refused after", len(fds), e)
    sys.exit(7)
print("OPENED", len(fds))
"#;
    let mut spec = f.python(mode, code);
    spec.rlimits.open_files = Some(32);
    let (o, log) = f.run(&spec).unwrap();
    assert_eq!(o.status, ExitStatus::Exited(7), "{log}");
}
