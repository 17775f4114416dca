//! System V IPC never crosses a job's edge (the campaign's finding 2): in the fallback every
//! SysV call is refused (the objects would live in the host's IPC namespace, outlive the job
//! and be read by the next); in namespace mode the generator has an IPC namespace of its own,
//! sees none of the host's objects and leaves none behind.

use airlock_sandbox::Mode;

use crate::support::*;

crate::in_both_modes!(sysv_ipc_neither_outlives_the_job_nor_reaches_the_hosts);

/// A host shared-memory segment (mode 0666, so only the sandbox can keep the generator
/// from it), removed when dropped.
struct HostSegment {
    key: i32,
    id: i32,
}

impl HostSegment {
    fn create(key: i32) -> HostSegment {
        // SAFETY: plain syscall with no pointer arguments.
        let id = unsafe { libc::shmget(key, 4096, libc::IPC_CREAT | libc::IPC_EXCL | 0o666) };
        assert!(id >= 0, "shmget: {}", std::io::Error::last_os_error());
        HostSegment { key, id }
    }
}

impl Drop for HostSegment {
    fn drop(&mut self) {
        // SAFETY: IPC_RMID takes no buffer.
        unsafe { libc::shmctl(self.id, libc::IPC_RMID, std::ptr::null_mut()) };
    }
}

/// `(kind, key)` of every SysV object in the host's IPC namespace.
fn host_objects() -> Vec<(&'static str, i32)> {
    let mut found = Vec::new();
    for kind in ["shm", "msg", "sem"] {
        let text = std::fs::read_to_string(format!("/proc/sysvipc/{kind}")).unwrap();
        for line in text.lines().skip(1) {
            if let Some(k) = line.split_whitespace().next().and_then(|k| k.parse().ok()) {
                found.push((kind, k));
            }
        }
    }
    found
}

/// The probe: tries to reach the host's segment by key and by id (exit 0: a breach), then
/// creates one object of each kind under its own keys and leaves them behind on purpose.
const PY_SYSV: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
host_key, host_id, own = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def err():
    return os.strerror(ctypes.get_errno())
reached = False
r = libc.shmget(host_key, 0, 0)
print("shmget(host key) ->", r, err())
reached |= r >= 0
p = libc.shmat(host_id, None, 0)
print("shmat(host id) ->", p, err())
reached |= p not in (None, ctypes.c_void_p(-1).value)
made = []
for what, r in (
    ("shm", libc.shmget(own, 1 << 20, 0o1666)),
    ("msg", libc.msgget(own + 1, 0o1666)),
    ("sem", libc.semget(own + 2, 1, 0o1666)),
):
    print(what, "get(own key) ->", r, err())
    if r >= 0:
        made.append(what)
print("MADE", made)
print("REACHED" if reached else "host objects out of reach")
sys.exit(0 if reached else 3)
"#;

fn sysv_ipc_neither_outlives_the_job_nor_reaches_the_hosts(mode: Mode) {
    // Keys of this process and call: the two modes' tests run side by side.
    static CALL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
    let call = CALL.fetch_add(1, std::sync::atomic::Ordering::Relaxed) & 0xf;
    let base = 0x1000_0000 | (std::process::id() as i32 & 0xf_ffff) << 8 | call << 4;
    let host = HostSegment::create(base);
    let own = base + 4;
    let f = Fixture::new();
    let mut spec = f.python(mode, PY_SYSV);
    spec.args
        .extend([host.key, host.id, own].map(|n| n.to_string().into()));
    let log = f.expect_blocked(&spec, "SysV IPC");
    assert!(log.contains("host objects out of reach"), "{log}");
    match mode {
        // Refused outright, creation included.
        Mode::LandlockSeccomp => assert!(log.contains("MADE []"), "{log}"),
        // Its own namespace: creating works, and dies with the namespace.
        _ => assert!(log.contains("MADE ['shm', 'msg', 'sem']"), "{log}"),
    }
    let left: Vec<_> = host_objects()
        .into_iter()
        .filter(|(_, k)| (own..own + 3).contains(k))
        .collect();
    assert!(
        left.is_empty(),
        "left on the host after the job: {left:?}\n{log}"
    );
}
