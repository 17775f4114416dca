use airlock_sandbox::{ExitStatus, LimitHit, MemoryCeiling, Mode};

use crate::support::*;

crate::in_both_modes!(
    caps_a_fork_bomb,
    caps_a_memory_hog,
    holds_processes_together_to_the_memory_ceiling,
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

/// Three processes, each well under its own address-space limit, holding 3 x 96 MiB against
/// a ceiling of 160 MiB for the sandbox together: the kernel kills one at the ceiling, the
/// outcome says so, and the run's cgroup is gone afterwards.
fn holds_processes_together_to_the_memory_ceiling(mode: Mode) {
    let f = Fixture::new();
    let token = format!("3600.{}", nonce());
    let code = format!(
        r#"
import os, sys, time
kids = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        hold = "x" * (96 << 20)  # written, so every page is charged
        print("child", i, "holds", len(hold), flush=True)
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
    time.sleep(0.5)
killed = 0
for pid in kids:
    _, st = os.waitpid(pid, 0)
    if os.WIFSIGNALED(st) and os.WTERMSIG(st) == 9:
        killed += 1
print("killed", killed, flush=True)
os.execv("/bin/sleep", ["sleep", "{token}"])
"#
    );
    let mut spec = f.python(mode, &code);
    spec.rlimits.address_space_bytes = Some(1 << 30);
    spec.memory_bytes = Some(160 << 20);
    let (mut running, log) = f.start(&spec).unwrap();
    // The supervisor's view while it runs: an OOM kill is seen without waiting for the end.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while running.memory_oom_kills() == 0 && std::time::Instant::now() < deadline {
        if running
            .wait_timeout(std::time::Duration::from_millis(100))
            .unwrap()
            .is_some()
        {
            break;
        }
    }
    let seen_while_running = running.memory_oom_kills();
    running.kill_group().unwrap();
    let o = running.wait().unwrap();
    let log = std::fs::read_to_string(log).unwrap_or_default();
    match &o.memory {
        MemoryCeiling::Unenforced { reason } => {
            return skip(&format!("no memory cgroup on this host: {reason}"));
        }
        MemoryCeiling::Enforced { bytes, oom_kills } => {
            assert_eq!(*bytes, 160 << 20);
            assert!(
                *oom_kills > 0 && seen_while_running > 0,
                "BREACH: 288 MiB held under a 160 MiB ceiling\n{log}"
            );
        }
        MemoryCeiling::NotAsked => panic!("the ceiling was asked for: {o:?}"),
    }
    assert!(o.memory.hit());
    assert_eq!(processes_with(&token), Vec::<u32>::new());
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let dir = own
        .lines()
        .find_map(|l| {
            l.split_once(":memory:")
                .map(|(_, p)| format!("/sys/fs/cgroup/memory{p}"))
        })
        .or_else(|| {
            own.lines()
                .find_map(|l| l.strip_prefix("0::").map(|p| format!("/sys/fs/cgroup{p}")))
        })
        .unwrap();
    let left: Vec<_> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("airlock-sandbox-{}-", std::process::id()))
        })
        .collect();
    assert!(left.is_empty(), "cgroups left behind: {left:?} ({own})");
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
