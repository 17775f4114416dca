use airlock_sandbox::{ExitStatus, Mode, SandboxKind};

use crate::support::*;

crate::in_both_modes!(
    status_shows_no_new_privs_no_capabilities_and_seccomp,
    generator_is_not_root,
    cannot_signal_processes_outside,
    cannot_ptrace_a_sibling,
    cannot_create_namespaces,
);

fn status_of_self(f: &Fixture, mode: Mode) -> String {
    let (o, log) = f.run(&f.sh(mode, "cat /proc/self/status")).unwrap();
    assert!(o.status.success(), "{log}");
    log
}

fn field<'a>(status: &'a str, name: &str) -> &'a str {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no {name} in\n{status}"))
}

fn status_shows_no_new_privs_no_capabilities_and_seccomp(mode: Mode) {
    let f = Fixture::new();
    let st = status_of_self(&f, mode);
    assert_eq!(field(&st, "NoNewPrivs"), "1");
    assert_eq!(field(&st, "CapEff"), "0000000000000000");
    assert_eq!(field(&st, "CapPrm"), "0000000000000000");
    assert_eq!(field(&st, "CapInh"), "0000000000000000");
    assert_eq!(field(&st, "CapAmb"), "0000000000000000");
    assert_eq!(field(&st, "Seccomp"), "2");
    if mode == Mode::Namespaces || sys_is_root() {
        // The bounding set can be emptied with CAP_SETPCAP (inside the user namespace, or
        // as a root worker before dropping to the sandbox identity).
        assert_eq!(field(&st, "CapBnd"), "0000000000000000");
    }
}

fn sys_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

fn generator_is_not_root(mode: Mode) {
    let f = Fixture::new();
    let st = status_of_self(&f, mode);
    for id in ["Uid", "Gid"] {
        let ids: Vec<&str> = field(&st, id).split_whitespace().collect();
        assert!(ids.iter().all(|i| *i != "0"), "{id}: {ids:?}");
    }
    if sys_is_root() {
        assert_eq!(
            field(&st, "Groups"),
            "",
            "a root worker's supplementary groups leaked"
        );
    }
}

/// The supervisor (this test process) cannot be signalled from inside, though in the
/// fallback it is visible and, when not root, has the same uid.
fn cannot_signal_processes_outside(mode: Mode) {
    let f = Fixture::new();
    let me = std::process::id();
    let code = format!(
        r#"
import os, sys
try:
    os.kill({me}, 0)
except OSError as e:
    print("blocked:", e)
    sys.exit(3)
print("SIGNALLED")
"#
    );
    f.expect_blocked(&f.python(mode, &code), "signal to the supervisor");
}

fn cannot_ptrace_a_sibling(mode: Mode) {
    let f = Fixture::new();
    let code = r#"
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
r = libc.ptrace(16, child, 0, 0)  # PTRACE_ATTACH
err = ctypes.get_errno()
os.kill(child, 9)
print("ptrace ->", r, "errno", err)
sys.exit(0 if r == 0 else 3)
"#;
    f.expect_blocked(&f.python(mode, code), "ptrace");
}

fn cannot_create_namespaces(mode: Mode) {
    let f = Fixture::new();
    let code = r#"
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
r = libc.unshare(CLONE_NEWUSER | CLONE_NEWNET)
print("unshare ->", r, "errno", ctypes.get_errno())
sys.exit(0 if r == 0 else 3)
"#;
    f.expect_blocked(&f.python(mode, code), "unshare");
}

/// Namespace mode: the generator is pid 2 under its own init, sees only its own processes,
/// its own hostname, and no network interface but a loopback that is down.
#[test]
fn namespaces_isolate_pids_hostname_and_network() {
    let Some(mode) = require(Mode::Namespaces) else {
        return;
    };
    let f = Fixture::new();
    let code = r#"
import os, socket
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
print("pid", os.getpid())
print("pids", pids)
print("host", socket.gethostname())
print("dev", open("/proc/net/dev").read().split("\n")[2:])
"#;
    let (o, log) = f.run(&f.python(mode, code)).unwrap();
    assert_eq!(o.status, ExitStatus::Exited(0), "{log}");
    assert_eq!(o.sandbox, SandboxKind::Namespaces);
    assert!(log.contains("pid 2\n"), "{log}");
    assert!(log.contains("pids [1, 2]\n"), "{log}");
    assert!(log.contains("host airlock\n"), "{log}");
    let dev_line = log.lines().find(|l| l.starts_with("dev ")).unwrap();
    assert!(
        dev_line.contains("lo:") && dev_line.matches(':').count() == 1,
        "{dev_line}"
    );
}

/// The fallback has no pid namespace: the generator cannot leave the process group that
/// the wall clock kills.
#[test]
fn fallback_pins_the_process_group() {
    let Some(mode) = require(Mode::LandlockSeccomp) else {
        return;
    };
    let f = Fixture::new();
    let code = r#"
import os, sys
for name, call in [("setsid", os.setsid), ("setpgid", lambda: os.setpgid(0, 0))]:
    try:
        call()
        print("ESCAPED via", name)
        sys.exit(0)
    except OSError as e:
        print(name, "blocked:", e)
sys.exit(3)
"#;
    let log = f.expect_blocked(&f.python(mode, code), "leaving the process group");
    assert!(!log.contains("ESCAPED"), "{log}");
}

/// Namespace mode: the generator's mount table lists its own root and what it is granted
/// (the readable roots, the program, the workdir and private tmp, the device files, /proc),
/// nothing else of the host's: every mount point of the host outside those (here `/sys`,
/// `/run`, the host's `/tmp`, the test's own directories) is absent, and paths the host has
/// but the sandbox does not grant do not exist at all.
#[test]
fn namespaces_show_only_the_granted_paths_in_the_mount_table() {
    let Some(mode) = require(Mode::Namespaces) else {
        return;
    };
    let f = Fixture::new();
    let code = r#"
import os
for line in open("/proc/self/mountinfo"):
    print("mount", line.split(" - ")[0].split()[4])
for p in ["/sys", "/run", "/var", "/home", "/root", "/boot", "/srv"]:
    print("exists", p, os.path.lexists(p))
try:
    for name in os.listdir("/"):
        print("top", name)
except OSError as e:
    print("listing the root refused", e.errno)
for dev in ["/dev/random", "/dev/urandom", "/dev/zero", "/dev/full"]:
    print("read", dev, len(open(dev, "rb").read(8)))
open("/dev/null", "w").write("x")
try:
    print("LISTED /dev", len(os.listdir("/dev")))
except OSError as e:
    print("listing /dev refused", e.errno)
for p in ["/planted", "/usr/planted", "/proc/planted", "/dev/shm/planted"]:
    try:
        open(p, "w").close()
        print("WROTE", p)
    except OSError as e:
        print("refused", p, e.errno)
"#;
    let spec = f.python(mode, code);
    let (o, log) = f.run(&spec).unwrap();
    assert_eq!(o.status, ExitStatus::Exited(0), "{log}");
    let granted: Vec<String> = spec
        .readable
        .iter()
        .chain([&spec.workdir, &spec.private_tmp, &spec.program])
        .map(|p| p.display().to_string())
        .chain(
            airlock_sandbox::READ_WRITE_DEVICES
                .iter()
                .map(|d| d.to_string()),
        )
        .chain(["/proc".to_owned(), "/dev".to_owned()])
        .collect();
    let points: Vec<&str> = log
        .lines()
        .filter_map(|l| l.strip_prefix("mount "))
        .collect();
    assert!(points.len() > 2, "{log}");
    for point in &points {
        let ok = *point == "/"
            || granted
                .iter()
                .any(|g| point == g || point.starts_with(&format!("{g}/")));
        assert!(
            ok,
            "BREACH: the host's mount point {point} is visible\n{log}"
        );
    }
    // The host has these mount points; none of them is in the sandbox's table.
    for host in ["/sys", "/run", "/sys/fs/cgroup", "/var/lib/docker"] {
        assert!(!points.contains(&host), "BREACH: {host} is visible\n{log}");
    }
    for p in ["/sys", "/run", "/var", "/home", "/root", "/boot", "/srv"] {
        assert!(
            log.contains(&format!("exists {p} False")),
            "BREACH: {p} exists in the sandbox\n{log}"
        );
    }
    // Listing the root is refused (landlock); where it is not, the root holds the first
    // component of each granted path, nothing else.
    for top in log.lines().filter_map(|l| l.strip_prefix("top ")) {
        let ok = granted.iter().any(|g| g.split('/').nth(1) == Some(top));
        assert!(ok, "BREACH: /{top} is in the sandbox's root\n{log}");
    }
    assert!(
        !log.contains("WROTE"),
        "BREACH: wrote outside the workdir\n{log}"
    );
    assert_eq!(
        log.lines().filter(|l| l.starts_with("refused /")).count(),
        4,
        "{log}"
    );
    // /dev is bound whole, but only its granted device files open (landlock): no listing.
    assert!(log.contains("listing /dev refused"), "BREACH: {log}");
    // The granted device files still work.
    for dev in ["/dev/random", "/dev/urandom", "/dev/zero", "/dev/full"] {
        assert!(log.contains(&format!("read {dev} 8\n")), "{dev}: {log}");
    }
}
