//! Readable roots a root worker's generator could not otherwise reach (a virtualenv under a
//! 0700 `/root`), bound into the sandbox's own mount namespace at the same path; the host's
//! files and modes are left as they are.
//!
//! How: the helper, still root in the host's user namespace, moves into a mount namespace of
//! its own (mounts made private first, so nothing propagates back to the host), opens each
//! such root, covers the first directory that stops the sandbox identity (`/root`) with a
//! small tmpfs (0755), makes the path down to the root inside it, and binds the open root
//! there (`MS_BIND | MS_REC` from `/proc/self/fd/N`). The sandbox's own user and mount
//! namespaces are made after this, as a copy in which these mounts are locked; the
//! landlock+seccomp fallback inherits them as they are.
//!
//! Guards against: `chmod`ing the host's home to let `nobody` in, and exposing anything
//! else under the covered directory: the tmpfs hides the rest of `/root` from the generator.
//! Mounts made in the helper's namespace never propagate back (mounts are private first).
//! Does not check: what is inside a root (the preflight checks that the identity can read
//! what the generator runs; landlock still grants read and execute only).

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::reach::Who;
use super::sys;
use crate::spec::SandboxSpec;

/// tmpfs options of a covering directory: tiny, only ever holding the path skeleton.
const COVER_OPTIONS: &std::ffi::CStr = c"mode=0755,size=64k,nr_inodes=4096";

/// One readable root to bind in.
pub(crate) struct Bind {
    target: PathBuf,
    is_dir: bool,
    /// The first directory above `target` the identity cannot search, seen from the host
    /// (inside the user namespace an unmapped owner reads as the overflow uid, which is
    /// `nobody`'s: the modes can no longer be judged there).
    blocker: PathBuf,
}

/// Every existing readable root that `who` cannot reach through the host's directories,
/// judged in the host's namespaces (inside a user namespace an unmapped owner reads as the
/// overflow uid, which is `nobody`'s).
pub(crate) fn unreachable(spec: &SandboxSpec, who: &Who) -> Vec<Bind> {
    let mut out = Vec::new();
    let mut roots: Vec<&PathBuf> = spec.readable.iter().collect();
    roots.sort();
    roots.dedup();
    for root in roots {
        let Ok(meta) = std::fs::metadata(root) else {
            continue;
        };
        let Some(blocker) = who.blocker(root) else {
            continue;
        };
        out.push(Bind {
            target: root.clone(),
            is_dir: meta.is_dir(),
            blocker,
        });
    }
    out
}

fn cpath(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("{}: NUL in path", p.display()))
}

/// In the helper (root, host user namespace): a mount namespace of its own, then for each
/// root: the blocking directory covered with a tmpfs, the path down to the root made, the
/// root bound there. Nothing to do for no roots.
pub(crate) fn apply(binds: &[Bind]) -> Result<(), String> {
    if binds.is_empty() {
        return Ok(());
    }
    sys::unshare(libc::CLONE_NEWNS).map_err(|e| format!("unshare(mount): {e}"))?;
    sys::mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE)
        .map_err(|e| format!("make mounts private: {e}"))?;
    // Opened before anything is covered: a cover hides the path that led to the root.
    let mut fds = Vec::with_capacity(binds.len());
    for b in binds {
        let file = std::fs::File::options()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
            .open(&b.target)
            .map_err(|e| format!("open readable root {}: {e}", b.target.display()))?;
        fds.push(OwnedFd::from(file));
    }
    let mut covers: Vec<PathBuf> = Vec::new();
    let mut bound: Vec<&Path> = Vec::new();
    for (b, fd) in binds.iter().zip(&fds) {
        // Reached through a root bound in already (sorted: parents come first).
        if bound.iter().any(|t| b.target.starts_with(t)) {
            continue;
        }
        // Under a tmpfs already: the path down to the target is ours to make.
        if !covers.iter().any(|c| b.blocker.starts_with(c)) {
            sys::mount_data(
                Some(c"tmpfs"),
                &cpath(&b.blocker)?,
                Some(c"tmpfs"),
                libc::MS_NOSUID | libc::MS_NODEV,
                Some(COVER_OPTIONS),
            )
            .map_err(|e| format!("cover {} with a tmpfs: {e}", b.blocker.display()))?;
            covers.push(b.blocker.clone());
        }
        let Some(cover) = covers
            .iter()
            .filter(|c| b.target.starts_with(c))
            .max_by_key(|c| c.as_os_str().len())
        else {
            return Err(format!(
                "{}: no covering tmpfs above it",
                b.target.display()
            ));
        };
        skeleton(cover, &b.target, b.is_dir)?;
        let source = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        sys::mount(
            Some(&cpath(&source)?),
            &cpath(&b.target)?,
            None,
            libc::MS_BIND | libc::MS_REC,
        )
        .map_err(|e| format!("bind {} in: {e}", b.target.display()))?;
        bound.push(&b.target);
    }
    Ok(())
}

/// Makes the directories from `cover` down to `target` (and `target`: a directory, or an
/// empty file to bind a file onto) inside the tmpfs.
fn skeleton(cover: &Path, target: &Path, is_dir: bool) -> Result<(), String> {
    let rest = target
        .strip_prefix(cover)
        .map_err(|_| format!("{}: outside {}", target.display(), cover.display()))?;
    let mut cur = cover.to_path_buf();
    let comps: Vec<_> = rest.components().collect();
    for (i, c) in comps.iter().enumerate() {
        cur.push(c);
        let last = i + 1 == comps.len();
        let made = if last && !is_dir {
            std::fs::File::options()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o644)
                .open(&cur)
                .map(drop)
        } else {
            match std::fs::DirBuilder::new().mode(0o755).create(&cur) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                other => other,
            }
        };
        made.map_err(|e| format!("make {} in the covering tmpfs: {e}", cur.display()))?;
    }
    Ok(())
}
