//! The run under disk exhaustion: a reserve that keeps room to finish, and a watch that stops
//! the generator at the job's disk ceiling or when the work root's file system is full.
//!
//! Guards against: a generator that fills the disk and leaves the run unable to write its
//! artifact (the [`Reserve`], allocated for real at the start of the run and released only once
//! the generator is gone, holds the space the patch, the artifact and its packet need), and one
//! that writes more than the request's `max_disk_bytes` under its workdir and private tmp
//! ([`DiskWatch`], polled while it runs). Either way the generator is stopped and the packet
//! says `disk` in `limits_hit`. Also one that uses up the work root's inodes (a flood of empty
//! files: bytes stay low, yet nothing on the host can create a file any more): the watch reads
//! the file system's free inodes at every poll, stops the generator below [`FULL_BELOW_INODES`]
//! and the packet says `inodes`; the reserve holds [`RESERVE_INODES`] inodes too, so the run
//! can still write its artifact.
//!
//! Why polling: it needs nothing of the host (no quota support, no mount of a size-limited
//! tmpfs holding a copy of the tree in RAM) and works the same in both sandboxes. A burst
//! between two polls can overshoot the ceiling, at worst up to a full disk, and a full disk is
//! what the reserve is for.
//!
//! Does not check: bytes below a directory a generator running as the worker's own user made
//! unreadable to it (the full-disk check still stops it); usage of other processes on the same
//! file system, which shows only as a full disk.

use std::cell::Cell;
use std::collections::HashSet;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use airlock_core::limits::JobLimits;
use anyhow::{bail, Result};

/// The `limits_hit` entry for a run stopped by its disk ceiling or a full disk.
pub const DISK: &str = "disk";

/// The `limits_hit` entry for a run stopped because the work root's inodes ran out.
pub const INODES: &str = "inodes";

/// Free inodes on the work root's file system below which it counts as out of inodes (only
/// on a file system with a fixed inode count: `f_files` 0 means none, as on btrfs).
pub const FULL_BELOW_INODES: u64 = 64;

/// Inodes the reserve holds (empty files beside the reserve file): the patch, the artifact,
/// its packet and the `before` copies of small edits need a few.
pub const RESERVE_INODES: usize = 32;

/// Free bytes on the work root's file system below which the disk counts as full: less than
/// this cannot hold a useful write, and a generator refused with `ENOSPC` leaves about zero.
const FULL_BELOW_BYTES: u64 = 64 * 1024;

/// Least time between two walks of the workdir and tmp.
const WALK_EVERY: Duration = Duration::from_secs(1);

/// A walk may take at most this share of the time (1/N): a large tree is walked less often.
const WALK_SHARE: u32 = 10;

/// Entries looked at by one walk (a lower bound past it).
const MAX_WALK_ENTRIES: u64 = 500_000;

/// Name of the reserve file in the run directory.
const RESERVE_FILE: &str = "disk-reserve";

/// Bytes the reserve holds: twice the artifact cap (the patch file, then the artifact that
/// carries it), the log as the artifact carries it, and 1 MiB for the packet, the tar headers
/// and the `before` copies of small edits.
pub fn reserve_bytes(limits: &JobLimits) -> u64 {
    const MIB: u64 = 1024 * 1024;
    limits
        .max_artifact_bytes
        .saturating_mul(2)
        .saturating_add(limits.max_log_bytes.min(32 * MIB))
        .saturating_add(MIB)
}

/// Space held for the end of the run: a file in the run directory whose blocks are allocated
/// (`fallocate`, not a sparse file), removed by [`Reserve::release`] or when dropped.
pub struct Reserve {
    path: Option<PathBuf>,
    inodes: Vec<PathBuf>,
}

impl Reserve {
    /// Allocates `bytes` in `dir` (`worker.disk-reserve` if the file system cannot hold them:
    /// the run could not be sure to finish, so it does not start).
    pub fn allocate(dir: &Path, bytes: u64) -> Result<Reserve> {
        let path = dir.join(RESERVE_FILE);
        let file = std::fs::File::options()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| {
                anyhow::anyhow!(
                    "{}: cannot create the disk reserve ({e}) (worker.disk-reserve)",
                    path.display()
                )
            })?;
        let mut reserve = Reserve {
            path: Some(path),
            inodes: Vec::new(),
        };
        // Mode 0: allocate and extend, so the blocks are really taken from the file system.
        if let Err(e) = rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, bytes)
        {
            let free = free_bytes(dir).map_or("unknown".to_owned(), |f| f.to_string());
            bail!(
                "{}: cannot reserve {bytes} bytes to finish the run ({e}; {free} bytes free) (worker.disk-reserve): give a --work-root with more room, or submit the job with a smaller --max-artifact-bytes",
                dir.display()
            );
        }
        for i in 1..=RESERVE_INODES {
            let p = dir.join(format!("{RESERVE_FILE}.{i}"));
            std::fs::File::options()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&p)
                .map_err(|e| {
                    anyhow::anyhow!(
                        "{}: cannot reserve {RESERVE_INODES} inodes to finish the run ({e}) (worker.disk-reserve)",
                        dir.display()
                    )
                })?;
            reserve.inodes.push(p);
        }
        Ok(reserve)
    }

    /// Gives the space and the inodes back (before the artifact is written).
    pub fn release(&mut self) -> Result<()> {
        if let Some(p) = self.path.take() {
            std::fs::remove_file(&p)
                .map_err(|e| anyhow::anyhow!("{}: cannot release: {e}", p.display()))?;
        }
        for p in self.inodes.drain(..) {
            std::fs::remove_file(&p)
                .map_err(|e| anyhow::anyhow!("{}: cannot release: {e}", p.display()))?;
        }
        Ok(())
    }
}

impl Drop for Reserve {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// Free bytes for an unprivileged writer on the file system holding `path`.
pub fn free_bytes(path: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(path).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

/// Free inodes for an unprivileged creator on the file system holding `path`; `None` where
/// the file system has no fixed count (`f_files` 0) or cannot say.
pub fn free_inodes(path: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(path).ok()?;
    (s.f_files > 0).then_some(s.f_favail)
}

/// Why the watch stopped the generator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskHit {
    /// It added more than the ceiling under its workdir and tmp.
    Ceiling {
        /// Bytes added since it started.
        added: u64,
        /// `max_disk_bytes`.
        limit: u64,
    },
    /// The work root's file system is full.
    Full {
        /// Bytes left.
        free: u64,
    },
    /// The work root's file system is out of inodes.
    Inodes {
        /// Inodes left.
        free: u64,
    },
}

impl DiskHit {
    /// The `limits_hit` entry: [`INODES`] for inodes, else [`DISK`].
    pub fn limit_name(&self) -> &'static str {
        match self {
            DiskHit::Inodes { .. } => INODES,
            _ => DISK,
        }
    }
}

impl std::fmt::Display for DiskHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DiskHit::Ceiling { added, limit } => write!(
                f,
                "the generator wrote {added} bytes under its workdir and tmp, over the job's disk limit of {limit} bytes"
            ),
            DiskHit::Full { free } => write!(
                f,
                "the work root's file system is full ({free} bytes left)"
            ),
            DiskHit::Inodes { free } => write!(
                f,
                "the work root's file system is out of inodes ({free} left)"
            ),
        }
    }
}

/// Watches the generator's disk use: the file system's free space at every poll (cheap), the
/// bytes under the workdir and tmp at most every [`WALK_EVERY`] (a walk).
pub struct DiskWatch {
    fs_path: PathBuf,
    dirs: Vec<PathBuf>,
    baseline: u64,
    limit: u64,
    next_walk: Cell<Instant>,
}

impl DiskWatch {
    /// Starts watching: `fs_path` is on the work root's file system; `dirs` are counted
    /// against `limit` from what they hold now.
    pub fn start(fs_path: &Path, dirs: &[&Path], limit: u64) -> DiskWatch {
        let dirs: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
        let baseline = usage(&dirs);
        DiskWatch {
            fs_path: fs_path.to_owned(),
            dirs,
            baseline,
            limit,
            next_walk: Cell::new(Instant::now() + WALK_EVERY),
        }
    }

    /// A poll while the generator runs: the free space now, the bytes under the dirs when a
    /// walk is due.
    pub fn poll(&self) -> Option<DiskHit> {
        self.full().or_else(|| {
            let now = Instant::now();
            (now >= self.next_walk.get()).then(|| self.over()).flatten()
        })
    }

    /// The last look once the generator is gone: it may have hit either between two polls.
    pub fn last_look(&self) -> Option<DiskHit> {
        self.full().or_else(|| self.over())
    }

    fn full(&self) -> Option<DiskHit> {
        if let Some(free) = free_inodes(&self.fs_path) {
            if free < FULL_BELOW_INODES {
                return Some(DiskHit::Inodes { free });
            }
        }
        let free = free_bytes(&self.fs_path)?;
        (free < FULL_BELOW_BYTES).then_some(DiskHit::Full { free })
    }

    fn over(&self) -> Option<DiskHit> {
        let t = Instant::now();
        let added = usage(&self.dirs).saturating_sub(self.baseline);
        let took = t.elapsed();
        self.next_walk
            .set(Instant::now() + WALK_EVERY.max(took * WALK_SHARE));
        (added > self.limit).then_some(DiskHit::Ceiling {
            added,
            limit: self.limit,
        })
    }
}

/// Bytes allocated to everything below `dirs` (links not followed; a file with several links
/// counted once).
pub fn usage(dirs: &[PathBuf]) -> u64 {
    let mut total: u64 = 0;
    let mut seen: u64 = 0;
    let mut linked: HashSet<(u64, u64)> = HashSet::new();
    let mut stack: Vec<PathBuf> = dirs.to_vec();
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            seen += 1;
            if seen > MAX_WALK_ENTRIES {
                return total;
            }
            // `DirEntry::metadata` does not follow a link.
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else if m.nlink() > 1 && !linked.insert((m.dev(), m.ino())) {
                continue;
            }
            total = total.saturating_add(m.blocks().saturating_mul(512));
        }
    }
    total
}

/// Whether `err` comes from a full file system or quota (`ENOSPC`, `EDQUOT`) anywhere in its
/// chain.
pub fn is_out_of_space(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
            .is_some_and(|n| n == libc::ENOSPC || n == libc::EDQUOT)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allocated(p: &Path) -> u64 {
        std::fs::metadata(p).unwrap().blocks() * 512
    }

    #[test]
    fn the_reserve_is_really_allocated_and_released_leaving_nothing() {
        let d = tempfile::tempdir().unwrap();
        let bytes = 3 * 1024 * 1024;
        let mut r = Reserve::allocate(d.path(), bytes).unwrap();
        let file = d.path().join(RESERVE_FILE);
        // Allocated blocks, not a sparse file of that length.
        assert!(allocated(&file) >= bytes, "{} allocated", allocated(&file));
        r.release().unwrap();
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        r.release().unwrap();
        // Dropped without release: gone too.
        drop(Reserve::allocate(d.path(), 4096).unwrap());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_reserve_the_file_system_cannot_hold_is_refused_and_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let e = Reserve::allocate(d.path(), u64::MAX / 4)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("worker.disk-reserve"), "{e}");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn usage_counts_allocated_bytes_once_per_inode_and_not_through_links() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        std::fs::create_dir(&a).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("big"), vec![7u8; 1 << 20]).unwrap();
        let before = usage(std::slice::from_ref(&a));
        std::fs::write(a.join("f"), vec![1u8; 256 * 1024]).unwrap();
        std::fs::hard_link(a.join("f"), a.join("g")).unwrap();
        std::os::unix::fs::symlink(outside.path(), a.join("l")).unwrap();
        // A sparse file of 1 GiB allocates next to nothing.
        std::fs::File::create(a.join("sparse"))
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let added = usage(std::slice::from_ref(&a)) - before;
        assert!((256 * 1024..512 * 1024).contains(&added), "{added}");
    }

    #[test]
    fn the_watch_trips_on_bytes_added_over_the_ceiling_not_on_what_was_there() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path().join("work");
        std::fs::create_dir(&w).unwrap();
        std::fs::write(w.join("packed"), vec![1u8; 1 << 20]).unwrap();
        let watch = DiskWatch::start(d.path(), &[&w], 512 * 1024);
        assert_eq!(watch.last_look(), None);
        std::fs::write(w.join("new"), vec![2u8; 1 << 20]).unwrap();
        match watch.last_look() {
            Some(DiskHit::Ceiling { added, limit }) => {
                assert!(added >= 1 << 20 && limit == 512 * 1024, "{added}")
            }
            other => panic!("{other:?}"),
        }
        // Not due yet: the poll does not walk again within WALK_EVERY.
        assert_eq!(watch.poll(), None);
    }

    #[test]
    fn the_reserve_holds_inodes_and_gives_them_back() {
        let d = tempfile::tempdir().unwrap();
        let mut r = Reserve::allocate(d.path(), 4096).unwrap();
        assert_eq!(
            std::fs::read_dir(d.path()).unwrap().count(),
            1 + RESERVE_INODES
        );
        r.release().unwrap();
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn an_inode_hit_is_named_inodes_and_a_byte_hit_disk() {
        assert_eq!(DiskHit::Inodes { free: 3 }.limit_name(), INODES);
        assert_eq!(DiskHit::Full { free: 3 }.limit_name(), DISK);
        assert!(DiskHit::Inodes { free: 3 }
            .to_string()
            .contains("out of inodes"));
        // This file system has room: no hit.
        let d = tempfile::tempdir().unwrap();
        assert_eq!(
            DiskWatch::start(d.path(), &[d.path()], u64::MAX).last_look(),
            None
        );
    }

    #[test]
    fn out_of_space_is_found_anywhere_in_the_chain() {
        let e = anyhow::Error::from(std::io::Error::from_raw_os_error(libc::ENOSPC))
            .context("patch.diff: cannot write");
        assert!(is_out_of_space(&e));
        let e = anyhow::Error::from(std::io::Error::from_raw_os_error(libc::EACCES));
        assert!(!is_out_of_space(&e));
    }
}
