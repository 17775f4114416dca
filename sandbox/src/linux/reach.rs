//! Who can reach a path by the file modes alone: the check the preflight makes for the
//! generator's identity, and the helper's test for which readable roots it must bind in.
//!
//! Guards against: granting a readable root the sandbox identity could never open (a
//! virtualenv under a root worker's 0700 `/root`) and finding out only when the generator dies
//! of `EACCES` deep inside.
//! Does not check: ACLs, capabilities, or mount options (`noexec`); the exec or open error
//! still says so at run time.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// The identity the generator will run as (uid, primary gid, supplementary groups).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Who {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) groups: Vec<u32>,
}

/// Read permission.
pub(crate) const R: u32 = 4;
/// Execute (search, for a directory) permission.
pub(crate) const X: u32 = 1;

impl Who {
    /// The generator's identity for a worker running as `euid`/`egid`: a root worker's
    /// generator runs as `unprivileged` without groups; any other keeps the worker's.
    pub(crate) fn for_worker(
        euid: u32,
        egid: u32,
        groups: Vec<u32>,
        unprivileged: (u32, u32),
    ) -> Who {
        if euid == 0 {
            Who {
                uid: unprivileged.0,
                gid: unprivileged.1,
                groups: Vec::new(),
            }
        } else {
            Who {
                uid: euid,
                gid: egid,
                groups,
            }
        }
    }

    /// Whether the mode bits of `meta` give this identity every bit of `want` (`R`, `X`).
    pub(crate) fn may(&self, meta: &std::fs::Metadata, want: u32) -> bool {
        let mode = meta.mode();
        let bits = if meta.uid() == self.uid {
            mode >> 6
        } else if meta.gid() == self.gid || self.groups.contains(&meta.gid()) {
            mode >> 3
        } else {
            mode
        };
        bits & want == want
    }

    /// The first directory above `path` (from `/` down, excluding `path` itself) this
    /// identity cannot search, if any. Components are followed as the kernel would (links
    /// resolved by `metadata`).
    pub(crate) fn blocker(&self, path: &Path) -> Option<PathBuf> {
        let mut cur = PathBuf::new();
        let comps: Vec<Component<'_>> = path.components().collect();
        for c in comps.iter().take(comps.len().saturating_sub(1)) {
            cur.push(c);
            match std::fs::metadata(&cur) {
                Ok(m) if m.is_dir() && self.may(&m, X) => {}
                _ => return Some(cur),
            }
        }
        None
    }

    /// The first path from `from` (a directory the identity reaches) down to `path` that
    /// stops it: a directory it cannot search, or `path` itself lacking `want`. `path` must
    /// lie under `from`.
    pub(crate) fn denied_below(&self, from: &Path, path: &Path, want: u32) -> Option<PathBuf> {
        let rest = path.strip_prefix(from).ok()?;
        let mut cur = from.to_path_buf();
        let m = std::fs::metadata(&cur).ok()?;
        if cur != path && !self.may(&m, X) {
            return Some(cur);
        }
        let comps: Vec<Component<'_>> = rest.components().collect();
        for (i, c) in comps.iter().enumerate() {
            cur.push(c);
            let last = i + 1 == comps.len();
            let Ok(m) = std::fs::metadata(&cur) else {
                return Some(cur);
            };
            let need = if last { want } else { X };
            if !self.may(&m, need) {
                return Some(cur);
            }
        }
        if comps.is_empty() && !self.may(&m, want) {
            return Some(cur);
        }
        None
    }
}

/// The mode of `path` as `0755`-style text, for messages.
pub(crate) fn mode_of(path: &Path) -> String {
    std::fs::metadata(path).map_or_else(
        |_| "missing".into(),
        |m| format!("mode {:04o}", m.mode() & 0o7777),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn nobody() -> Who {
        Who {
            uid: 65534,
            gid: 65534,
            groups: Vec::new(),
        }
    }

    #[test]
    fn a_0700_directory_blocks_others_and_not_its_owner() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let venv = home.join("venv");
        std::fs::create_dir_all(&venv).unwrap();
        std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(nobody().blocker(&venv), Some(home.clone()));
        let me = std::fs::metadata(&home).unwrap();
        let owner = Who {
            uid: me.uid(),
            gid: me.gid(),
            groups: Vec::new(),
        };
        if me.uid() != 65534 {
            assert_eq!(owner.blocker(&venv), None);
        }
        // From the bind point down, the 0755 venv is open to anyone.
        std::fs::set_permissions(&venv, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(nobody().denied_below(&venv, &venv, X | R), None);
        std::fs::set_permissions(&venv, std::fs::Permissions::from_mode(0o750)).unwrap();
        assert_eq!(nobody().denied_below(&venv, &venv, X), Some(venv.clone()));
    }
}
