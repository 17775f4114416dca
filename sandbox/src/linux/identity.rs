//! Who the generator runs as.
//!
//! A non-root worker's generator keeps the worker's uid and gid. A root worker's generator
//! runs as `spec.unprivileged_id` (default `nobody:nogroup`): the kernel exempts root from
//! `RLIMIT_NPROC` (so a fork bomb would go uncapped) and root owns most files. The root
//! worker first hands the workdir and the private tmp to that identity.
//!
//! Guards against: a root generator; following links while handing over the tree (`lchown`,
//! no descent into symlinks or other filesystems). Entries that already belong to the identity
//! are left untouched (no `lchown`: their ctime keeps meaning "last changed").
//! On `Ok`: the workdir and private tmp (and everything below them) belong to the identity,
//! and every directory above them is searchable by it.
//! Does not check: that the generator program is readable by the identity (the exec error
//! says so).

use std::os::unix::fs::{lchown, MetadataExt};
use std::path::Path;

use super::sys;
use crate::spec::SandboxSpec;

/// The identity the generator runs as.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Identity {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    /// The helper runs as root and must switch to `uid`/`gid`.
    pub(crate) switch_from_root: bool,
}

/// Decides the identity and, for a root worker, hands the writable roots to it.
pub(crate) fn prepare(spec: &SandboxSpec) -> Result<Identity, String> {
    let euid = sys::geteuid();
    if euid != 0 {
        return Ok(Identity {
            uid: euid,
            gid: sys::getegid(),
            switch_from_root: false,
        });
    }
    let (uid, gid) = spec.unprivileged_id;
    for root in [&spec.workdir, &spec.private_tmp] {
        hand_over(root, uid, gid)?;
        searchable_above(root, uid, gid)?;
    }
    Ok(Identity {
        uid,
        gid,
        switch_from_root: true,
    })
}

/// `lchown`s `root` and everything below it, without following symlinks or leaving the
/// filesystem of `root`.
fn hand_over(root: &Path, uid: u32, gid: u32) -> Result<(), String> {
    let top = std::fs::symlink_metadata(root).map_err(|e| format!("{}: {e}", root.display()))?;
    if !top.is_dir() {
        return Err(format!("{}: not a directory", root.display()));
    }
    let dev = top.dev();
    let mut stack = vec![root.to_path_buf()];
    lchown(root, Some(uid), Some(gid)).map_err(|e| format!("chown {}: {e}", root.display()))?;
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
            let path = entry.path();
            let meta =
                std::fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            if meta.dev() != dev {
                continue;
            }
            // Already handed over (the worker's unpack does so as it writes each file): leave
            // it, so that its ctime still says when it was last changed.
            if meta.uid() != uid || meta.gid() != gid {
                lchown(&path, Some(uid), Some(gid))
                    .map_err(|e| format!("chown {}: {e}", path.display()))?;
            }
            if meta.is_dir() {
                stack.push(path);
            }
        }
    }
    Ok(())
}

/// Every ancestor of `root` must be searchable (`x`) by `uid`/`gid`.
fn searchable_above(root: &Path, uid: u32, gid: u32) -> Result<(), String> {
    let canonical = std::fs::canonicalize(root).map_err(|e| format!("{}: {e}", root.display()))?;
    for dir in canonical.ancestors().skip(1) {
        let m = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mode = m.mode();
        let ok = mode & 0o001 != 0
            || (m.uid() == uid && mode & 0o100 != 0)
            || (m.gid() == gid && mode & 0o010 != 0);
        if !ok {
            return Err(format!(
                "{} (mode {:04o}) is not searchable by the sandbox identity {uid}:{gid}, so it \
                 could not reach {}; make the directories above the workdir and private tmp \
                 searchable (e.g. 0711) or run the worker as a non-root user",
                dir.display(),
                mode & 0o7777,
                root.display()
            ));
        }
    }
    Ok(())
}
