//! The worker's per-run directories: one fresh directory per run under a base directory,
//! removed on every exit path; leftovers of earlier runs (a reclaimed host, a `kill -9`)
//! removed at start.
//!
//! Guards against: runs leaking bundle contents onto a reused host, one run reading another's
//! files (everything but the workdir and the private tmp stays 0700; names are unguessable),
//! removing a live run's directory (each run holds an exclusive lock on `<run>/.lock` for its
//! whole life; the kernel drops it when the process dies, even on `kill -9`, so a recycled
//! pid cannot keep a dead run's directory alive nor make a live one look dead), cleanup
//! following a link out of the base directory (links are removed, never followed; the base
//! itself must be a real directory we own), and a tree too deep to remove by path or with one
//! descriptor per level (see `remove`).
//!
//! Placement: the base directory is marked as the top of directory hierarchies
//! ([`airlock_core::spread`]), best effort, so each run directory lands in an ext4 block group
//! of its own rather than where every earlier run's files were just deleted.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context, Result};

const RUN_PREFIX: &str = "run-";

/// The default base directory: `$XDG_RUNTIME_DIR/airlock-worker`, else `/tmp/airlock-worker-<uid>`.
pub fn default_root() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("airlock-worker");
    }
    let uid = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(0);
    std::env::temp_dir().join(format!("airlock-worker-{uid}"))
}

/// Creates (or checks) the base directory: a real directory, owned by us. One it creates gets
/// mode 0711 (traversable, not listable: the sandboxed generator must be able to reach its
/// own workdir by path, and nothing else). An existing one keeps the mode its owner gave it
/// (the worker never changes a directory it did not make) and is refused if others may
/// write in it.
pub fn prepare_root(root: &Path) -> Result<()> {
    match std::fs::symlink_metadata(root) {
        Ok(m) => {
            if !m.is_dir() {
                bail!(
                    "{}: work root is not a directory (or is a link)",
                    root.display()
                );
            }
            let me = std::fs::metadata("/proc/self")
                .map(|m| m.uid())
                .unwrap_or(0);
            if m.uid() != me {
                bail!("{}: work root is owned by another user", root.display());
            }
            if m.mode() & 0o022 != 0 {
                bail!(
                    "{}: work root is writable by group or others (mode {:o}): run `chmod go-w` on it, or give a new directory",
                    root.display(),
                    m.mode() & 0o7777
                );
            }
        }
        Err(_) => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o711)
                .create(root)
                .with_context(|| format!("{}: cannot create work root", root.display()))?;
            std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o711))?;
        }
    }
    spread_runs(root);
    Ok(())
}

/// Marks `root` `FS_TOPDIR_FL` ([`airlock_core::spread`]); failures are ignored (the flag only
/// changes where new directories are placed).
fn spread_runs(root: &Path) {
    match airlock_core::spread::spread_children(root) {
        Ok(airlock_core::spread::Spread::Marked) => {}
        Ok(airlock_core::spread::Spread::Unsupported) => {
            tracing::debug!("work root: no top-directory flag here")
        }
        Err(e) => tracing::debug!("work root: cannot open to set the top-directory flag: {e}"),
    }
}

/// Name of the lock file inside each run directory.
const LOCK_FILE: &str = ".lock";

/// Whether the run that made `dir` is still alive.
///
/// The lock decides: held means alive, free means dead. A directory without a lock file is
/// either a run that died between `mkdir` and taking its lock, or one that is just starting:
/// then the pid in its name decides (`run-<pid>-<id>`).
fn run_alive(dir: &Path, name: &str) -> bool {
    let lock = dir.join(LOCK_FILE);
    if std::fs::symlink_metadata(&lock).is_ok_and(|m| m.is_file()) {
        return match std::fs::File::open(&lock) {
            Ok(f) => match f.try_lock() {
                Ok(()) => false,
                Err(std::fs::TryLockError::WouldBlock) => true,
                // Cannot tell: leave it.
                Err(std::fs::TryLockError::Error(_)) => true,
            },
            Err(_) => true,
        };
    }
    let pid = name
        .strip_prefix(RUN_PREFIX)
        .and_then(|rest| rest.split('-').next())
        .unwrap_or("");
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && Path::new("/proc").join(pid).exists()
}

/// Removes per-run directories left by runs that are gone. Returns how many.
pub fn remove_leftovers(root: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(RUN_PREFIX) || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if run_alive(&e.path(), name) {
            continue;
        }
        match remove_all(&e.path()) {
            Ok(()) => {
                tracing::info!(dir = %e.path().display(), "removed a leftover run directory");
                removed += 1;
            }
            Err(err) => {
                tracing::warn!(dir = %e.path().display(), "cannot remove a leftover run directory: {err}")
            }
        }
    }
    removed
}

/// One run's directory, locked while it lives, removed when dropped.
pub struct RunDir {
    path: PathBuf,
    /// Holds the exclusive lock on `<path>/.lock` (close-on-exec: never inherited).
    _lock: std::fs::File,
}

impl RunDir {
    /// Creates `root/run-<pid>-<run_id>` with mode 0711 (traversable only; everything in it
    /// but the workdir and the private tmp stays 0700) and takes its lock.
    pub fn create(root: &Path, run_id: &str) -> Result<RunDir> {
        let path = root.join(format!("{RUN_PREFIX}{}-{run_id}", std::process::id()));
        std::fs::DirBuilder::new()
            .mode(0o711)
            .create(&path)
            .with_context(|| format!("{}: cannot create run directory", path.display()))?;
        let locked = (|| -> Result<std::fs::File> {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o711))?;
            let lock = std::fs::File::options()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path.join(LOCK_FILE))?;
            lock.try_lock()
                .map_err(|e| anyhow::anyhow!("cannot lock the run directory: {e}"))?;
            Ok(lock)
        })();
        match locked {
            Ok(lock) => Ok(RunDir { path, _lock: lock }),
            Err(e) => {
                let _ = remove_all(&path);
                Err(e.context(format!("{}: cannot set up run directory", path.display())))
            }
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let t = std::time::Instant::now();
        if let Err(e) = remove_all(&self.path) {
            tracing::warn!(dir = %self.path.display(), "cannot remove run directory: {e}");
        }
        tracing::debug!(ms = t.elapsed().as_millis() as u64, "step clean up");
    }
}

/// Removes a tree: in parallel by path first (fast on a wide tree); if that fails (a
/// directory the generator made 0500, a tree deeper than `PATH_MAX` or than the open-files
/// limit), what is left goes through [`crate::remove::remove_tree`]: descriptor-relative, a
/// bounded number of descriptors, directories made writable again, links never followed.
pub fn remove_all(path: &Path) -> std::io::Result<()> {
    if remove_in_parallel(path).is_ok() || std::fs::symlink_metadata(path).is_err() {
        return Ok(());
    }
    crate::remove::remove_tree(path)
}

/// Threads that remove one tree. Removal mostly waits: on a filesystem mounted with `discard`
/// and no journal, ext4 discards every freed block run synchronously (every directory, and
/// every file whose data was written back), so several waits overlap.
const REMOVE_THREADS: usize = 8;

/// Fewest directories of one level removed on helper threads: a narrower level is removed in
/// the calling thread. A thread costs its stack's mapping, faults and unmapping, which for the
/// few directories of a small run (a fleet's trivial jobs) was more than the removal itself.
const PARALLEL_FROM: usize = 8;

/// Removes the directory `root` and everything below it, level by level: the files of every
/// directory of one level (several directories at once), then the directories, deepest level
/// first. Links are removed, never followed (`DirEntry::file_type` does not follow them).
/// Holds the paths of directories only, not of files.
fn remove_in_parallel(root: &Path) -> std::io::Result<()> {
    let mut levels: Vec<Vec<PathBuf>> = vec![vec![root.to_owned()]];
    while let Some(level) = levels.last() {
        let below = for_each_parallel(level, |dir| {
            let mut subdirs = Vec::new();
            for e in std::fs::read_dir(dir)? {
                let e = e?;
                if e.file_type()?.is_dir() {
                    subdirs.push(e.path());
                } else {
                    std::fs::remove_file(e.path())?;
                }
            }
            Ok(subdirs)
        })?;
        if below.is_empty() {
            break;
        }
        levels.push(below);
    }
    while let Some(level) = levels.pop() {
        for_each_parallel(&level, |dir| std::fs::remove_dir(dir).map(|()| Vec::new()))?;
    }
    Ok(())
}

/// Runs `f` on every item on up to [`REMOVE_THREADS`] threads (in this thread alone for fewer
/// than [`PARALLEL_FROM`] items, or if no thread can be had) and gathers what it returns; the
/// first error wins.
fn for_each_parallel<F>(items: &[PathBuf], f: F) -> std::io::Result<Vec<PathBuf>>
where
    F: Fn(&Path) -> std::io::Result<Vec<PathBuf>> + Sync,
{
    use std::sync::atomic::AtomicUsize;
    let next = AtomicUsize::new(0);
    let work = || -> std::io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
            out.extend(f(item)?);
        }
        Ok(out)
    };
    let threads = REMOVE_THREADS.min(items.len());
    if items.len() < PARALLEL_FROM {
        return work();
    }
    std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads)
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
            .collect();
        let mut out = work();
        for h in helpers {
            let theirs = h
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("a removal thread panicked")));
            match (&mut out, theirs) {
                (Ok(all), Ok(more)) => all.extend(more),
                (Ok(_), Err(e)) => out = Err(e),
                (Err(_), _) => {}
            }
        }
        out
    })
}

/// A flag set by SIGTERM, SIGINT or SIGHUP; long waits poll it and unwind (running every
/// `Drop`, so the run directory goes).
#[derive(Clone)]
pub struct Termination(Arc<AtomicBool>);

impl Termination {
    /// Installs the handlers.
    pub fn install() -> Result<Termination> {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGHUP,
        ] {
            signal_hook::flag::register(sig, Arc::clone(&flag))
                .context("cannot install signal handler")?;
        }
        Ok(Termination(flag))
    }

    /// Whether a termination signal arrived.
    pub fn requested(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn a_live_runs_locked_dir_is_kept_even_under_a_dead_pid() {
        let r = root();
        let live = RunDir::create(r.path(), "00112233aabbccdd").unwrap();
        // Rename it under a pid that cannot exist: the lock, not the pid, decides.
        let renamed = r.path().join("run-99999999-00112233aabbccdd");
        std::fs::rename(live.path(), &renamed).unwrap();
        assert_eq!(remove_leftovers(r.path()), 0);
        assert!(renamed.exists());
        drop(live);
    }

    #[test]
    fn a_dead_runs_dir_is_removed_even_under_a_live_pid() {
        let r = root();
        // Our own pid is alive, but nobody holds the lock: a recycled pid.
        let dir = r
            .path()
            .join(format!("run-{}-deadbeefdeadbeef", std::process::id()));
        std::fs::create_dir_all(dir.join("work/ro")).unwrap();
        std::fs::write(dir.join(LOCK_FILE), b"").unwrap();
        std::fs::set_permissions(dir.join("work/ro"), std::fs::Permissions::from_mode(0o500))
            .unwrap();
        assert_eq!(remove_leftovers(r.path()), 1);
        assert!(!dir.exists());
    }

    #[test]
    fn without_a_lock_file_the_pid_decides_and_other_entries_stay() {
        let r = root();
        let dead = r.path().join("run-99999999-0123456789abcdef");
        let live = r
            .path()
            .join(format!("run-{}-0123456789abcdef", std::process::id()));
        let other = r.path().join("not-a-run");
        for d in [&dead, &live, &other] {
            std::fs::create_dir(d).unwrap();
        }
        assert_eq!(remove_leftovers(r.path()), 1);
        assert!(!dead.exists() && live.exists() && other.exists());
    }

    #[test]
    fn removal_takes_wide_deep_trees_and_never_follows_links() {
        let r = root();
        let outside = r.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep.txt"), b"keep").unwrap();
        let t = r.path().join("tree");
        for i in 0..20 {
            std::fs::create_dir_all(t.join(format!("d{i}/e/f"))).unwrap();
            std::fs::write(t.join(format!("d{i}/e/f/x")), b"x").unwrap();
            std::fs::write(t.join(format!("d{i}/y")), b"y").unwrap();
        }
        std::os::unix::fs::symlink(&outside, t.join("d0/e/link")).unwrap();
        std::os::unix::fs::symlink(&outside, t.join("top-link")).unwrap();
        std::os::unix::fs::symlink(outside.join("keep.txt"), t.join("file-link")).unwrap();
        remove_all(&t).unwrap();
        assert!(!t.exists());
        assert_eq!(std::fs::read(outside.join("keep.txt")).unwrap(), b"keep");
    }

    #[test]
    fn the_work_root_is_marked_top_of_hierarchy_where_the_filesystem_takes_the_flag() {
        use rustix::fs::{ioctl_getflags, ioctl_setflags, IFlags};
        let r = root();
        let wr = r.path().join("wr");
        prepare_root(&wr).unwrap();
        let dir = std::fs::File::open(&wr).unwrap();
        let Ok(flags) = ioctl_getflags(&dir) else {
            // tmpfs has no inode flags (and no block groups to spread runs over).
            assert!(
                std::env::var_os("CI").is_none(),
                "SKIPPED in CI (a skip is a failure here): {} has no inode flags",
                wr.display()
            );
            println!(
                "SKIPPED: {} has no inode flags (TMPDIR on tmpfs?)",
                wr.display()
            );
            return;
        };
        if !flags.contains(IFlags::TOPDIR) {
            // Then it must be a filesystem that refuses the flag.
            assert!(
                ioctl_setflags(&dir, flags | IFlags::TOPDIR).is_err(),
                "prepare_root left the flag unset where it can be set"
            );
        }
    }

    #[test]
    fn a_run_dir_goes_when_dropped() {
        let r = root();
        let d = RunDir::create(r.path(), "0011223344556677").unwrap();
        let p = d.path().to_owned();
        std::fs::create_dir_all(p.join("work/a")).unwrap();
        drop(d);
        assert!(!p.exists());
    }
}
