//! A memory ceiling for the generator's processes together: a memory cgroup of the run's
//! own, created beneath the worker's cgroup (v1 `memory.limit_in_bytes`, or v2 `memory.max`,
//! swap held to the same ceiling where the kernel accounts it), the helper moved in before it
//! starts anything (so every process of the sandbox is born inside), read for OOM kills while
//! and after the run, removed when the run is over.
//!
//! Guards against: a generator that starts N processes, each under its own `RLIMIT_AS`,
//! holding N times that between them, until the host swaps or its OOM killer picks a process
//! outside the sandbox (the worker, the proxy).
//! Where no memory cgroup can be made (no memory controller mounted or delegated, a read-only
//! cgroup file system as inside most containers, a worker without the right to write there)
//! the run goes on without the ceiling and says why ([`crate::MemoryCeiling::Unenforced`]):
//! the per-process `RLIMIT_AS` still holds. Does not guard against: kernel memory the cgroup
//! does not charge, and a worker killed outright leaves the empty cgroup directory behind.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The cgroup file-system layout that holds the memory controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// One run's memory cgroup. Removed on drop (once its processes are gone).
#[derive(Debug)]
pub(crate) struct MemoryCgroup {
    dir: PathBuf,
    version: Version,
    bytes: u64,
}

/// Why a run has no memory cgroup.
#[derive(Debug)]
pub(crate) enum NoCgroup {
    /// None can be made on this host (the reason); nothing was left behind.
    Unavailable(String),
    /// One was made but the sandbox could not be moved into it: the run must not start.
    NotJoined(String),
}

impl MemoryCgroup {
    /// Creates the run's cgroup with `bytes` as its ceiling
    /// and moves `pid` into it.
    pub(crate) fn create(bytes: u64, pid: libc::pid_t) -> Result<MemoryCgroup, NoCgroup> {
        Self::make(bytes).map_err(NoCgroup::Unavailable)?.join(pid)
    }

    fn join(self, pid: libc::pid_t) -> Result<MemoryCgroup, NoCgroup> {
        match self.write("cgroup.procs", &pid.to_string()) {
            Ok(()) => Ok(self),
            Err(e) => Err(NoCgroup::NotJoined(format!(
                "cannot move the sandbox into {}: {e}",
                self.dir.display()
            ))),
        }
    }

    fn make(bytes: u64) -> Result<MemoryCgroup, String> {
        let pid = std::process::id();
        let own = fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
        let mounts = fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
        let (parent, version) = memory_dir(&own, &mounts)
            .ok_or("no memory cgroup controller is mounted for this process")?;
        // Named after the supervisor and a counter: one supervisor may run several sandboxes.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = parent.join(format!("airlock-sandbox-{pid}-{n}"));
        // A directory left by a worker killed outright, whose pid came round again.
        let _ = fs::remove_dir(&dir);
        fs::create_dir(&dir)
            .map_err(|e| format!("cannot create the cgroup {}: {e}", dir.display()))?;
        let cg = MemoryCgroup {
            dir,
            version,
            bytes,
        };
        cg.limit(bytes)?;
        Ok(cg)
    }

    fn limit(&self, bytes: u64) -> Result<(), String> {
        let (memory, swap, swap_value) = match self.version {
            // v1 counts memory and swap together in `memsw` (present with swap accounting).
            Version::V1 => (
                "memory.limit_in_bytes",
                "memory.memsw.limit_in_bytes",
                bytes,
            ),
            Version::V2 => ("memory.max", "memory.swap.max", 0),
        };
        if !self.dir.join(memory).exists() {
            return Err(format!(
                "the memory controller is not enabled for {}",
                self.dir.display()
            ));
        }
        self.write(memory, &bytes.to_string())
            .map_err(|e| format!("cannot set {memory} in {}: {e}", self.dir.display()))?;
        // Best effort: without swap accounting the kernel has no such file.
        let _ = self.write(swap, &swap_value.to_string());
        Ok(())
    }

    fn write(&self, file: &str, value: &str) -> std::io::Result<()> {
        fs::write(self.dir.join(file), value)
    }

    /// The ceiling, in bytes.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Processes the kernel's OOM killer has killed in this cgroup so far.
    pub(crate) fn oom_kills(&self) -> u64 {
        let file = match self.version {
            Version::V1 => "memory.oom_control",
            Version::V2 => "memory.events",
        };
        fs::read_to_string(self.dir.join(file))
            .ok()
            .and_then(|s| counter(&s, "oom_kill"))
            .unwrap_or(0)
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // The last processes may take a moment to leave after they are reaped.
        let deadline = Instant::now() + Duration::from_secs(2);
        while fs::remove_dir(&self.dir).is_err() && self.dir.exists() {
            if Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// `name N` in a flat-keyed cgroup file.
fn counter(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse().ok())?
    })
}

/// The directory of this process's memory cgroup, from `/proc/self/cgroup` and
/// `/proc/self/mountinfo`: the v1 memory hierarchy when one is mounted (hybrid hosts keep
/// the controller there), else the v2 unified one.
fn memory_dir(own: &str, mounts: &str) -> Option<(PathBuf, Version)> {
    let mut v1 = None;
    let mut v2 = None;
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.is_empty() {
            v2 = Some(path);
        } else if controllers.split(',').any(|c| c == "memory") {
            v1 = Some(path);
        }
    }
    for line in mounts.lines() {
        let Some((fields, after)) = line.split_once(" - ") else {
            continue;
        };
        let fields: Vec<&str> = fields.split(' ').collect();
        let after: Vec<&str> = after.split(' ').collect();
        let (Some(root), Some(point), Some(fstype)) = (fields.get(3), fields.get(4), after.first())
        else {
            continue;
        };
        // Escaped names (`\040`) are not cgroup mounts this code makes sense of.
        if point.contains('\\') || root.contains('\\') {
            continue;
        }
        let supers = after.get(2).copied().unwrap_or("");
        let wanted = match *fstype {
            "cgroup" if supers.split(',').any(|o| o == "memory") => v1.map(|p| (p, Version::V1)),
            "cgroup2" if v1.is_none() => v2.map(|p| (p, Version::V2)),
            _ => None,
        };
        if let Some((path, version)) = wanted {
            let rel = Path::new(path).strip_prefix(root).ok()?;
            return Some((Path::new(point).join(rel), version));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID_CGROUP: &str = "9:name=systemd:/\n4:memory:/process_api/a4\n0::/\n";
    const HYBRID_MOUNTS: &str = "\
30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime shared:5 - cgroup cgroup rw,cpu
33 25 0:29 / /sys/fs/cgroup/memory rw,relatime shared:8 - cgroup cgroup rw,memory
38 25 0:34 / /sys/fs/cgroup/unified rw,relatime shared:13 - cgroup2 cgroup2 rw
";

    #[test]
    fn a_hybrid_host_keeps_memory_in_its_v1_hierarchy() {
        assert_eq!(
            memory_dir(HYBRID_CGROUP, HYBRID_MOUNTS),
            Some((
                PathBuf::from("/sys/fs/cgroup/memory/process_api/a4"),
                Version::V1
            ))
        );
    }

    #[test]
    fn a_unified_host_uses_v2_and_a_namespaced_root_is_stripped() {
        let own = "0::/system.slice/worker.service\n";
        let mounts = "27 22 0:25 /system.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            memory_dir(own, mounts),
            Some((PathBuf::from("/sys/fs/cgroup/worker.service"), Version::V2))
        );
    }

    #[test]
    fn no_memory_controller_is_none() {
        let mounts = "30 25 0:26 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
        assert_eq!(memory_dir("4:cpu:/x\n", mounts), None);
    }

    #[test]
    fn oom_kill_counters_are_read_from_either_file() {
        assert_eq!(
            counter("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", "oom_kill"),
            Some(3)
        );
        assert_eq!(
            counter(
                "low 0\nhigh 0\nmax 9\noom 2\noom_kill 1\noom_group_kill 0\n",
                "oom_kill"
            ),
            Some(1)
        );
        assert_eq!(counter("oom 2\n", "oom_kill"), None);
    }
}
