//! A blob's content read from the repository's working tree instead of git's object store, when
//! the file there provably is that blob: a regular file of the blob's size whose git object id
//! (SHA-1, or SHA-256 in a SHA-256 repository, of `blob <size>\0` and the content) is the
//! tree's. A pack of a checked-out revision then reads its files as files, and git inflates
//! only the blobs the working tree does not hold.
//!
//! Guards against: content other than the revision's (an edited, unstaged or filtered file has
//! another id, and its blob comes from git instead); a symbolic link anywhere in the path (the
//! directory is opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, the file with
//! `O_NOFOLLOW`); a device, FIFO or socket where the blob's file belongs (never opened: the
//! store's `beneath::open_regular`, an `fstatat` that follows no link first, the same inode
//! after the open); a file of another size, or one that grows while read (at most size + 1
//! bytes are read, and a longer file is not the blob).
//! Does not check: a SHA-1 collision planted in the working tree by someone who can write the
//! trusted host's repository (who could as well rewrite its object store, which git reads
//! without hashing again). Without `openat2` (Linux before 5.6, or a seccomp filter) the
//! working tree is not used.

use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

use crate::store::beneath::{open_regular, AtName};

/// A repository's working tree, opened once.
pub struct Worktree {
    root: OwnedFd,
}

/// The directory a read last opened, kept for the next file (a tree lists a directory's files
/// together).
#[derive(Default)]
pub struct DirCache {
    dir: Option<(String, OwnedFd)>,
}

impl Worktree {
    /// The working tree of the repository at `dir`, when `dir` is one's top (it holds `.git`)
    /// and the kernel has `openat2`.
    pub fn open(dir: &Path) -> Option<Worktree> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let root = rustix::fs::open(dir, flags, Mode::empty()).ok()?;
        rustix::fs::statat(&root, ".git", AtFlags::SYMLINK_NOFOLLOW).ok()?;
        let wt = Worktree { root };
        // Probes `openat2` on the root itself.
        wt.open_dir("").ok()?;
        Some(wt)
    }

    fn open_dir(&self, dir: &str) -> rustix::io::Result<OwnedFd> {
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let dir = if dir.is_empty() { "." } else { dir };
        rustix::fs::openat2(&self.root, dir, flags, Mode::empty(), resolve)
    }

    /// Reads `path` into `buf` when it is the blob `oid` of `size` bytes; `false` (and `buf`
    /// unspecified) when it is not, cannot be read, or is not a plain file beneath the root.
    pub fn read(
        &self,
        cache: &mut DirCache,
        path: &str,
        oid: &str,
        size: u64,
        buf: &mut Vec<u8>,
    ) -> bool {
        let Ok(len) = usize::try_from(size) else {
            return false;
        };
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        if !matches!(&cache.dir, Some((d, _)) if d == dir) {
            cache.dir = self.open_dir(dir).ok().map(|fd| (dir.to_owned(), fd));
        }
        let Some((_, dirfd)) = &cache.dir else {
            return false;
        };
        let Ok(AtName::Open(fd, st)) = open_regular(dirfd.as_fd(), name) else {
            return false;
        };
        if u64::try_from(st.st_size) != Ok(size) {
            return false;
        }
        buf.clear();
        buf.reserve_exact(len + 1);
        let read = std::fs::File::from(fd)
            .take(size + 1)
            .read_to_end(buf)
            .is_ok();
        read && buf.len() == len && blob_id_is(oid, buf)
    }
}

/// Whether `content` is the blob `oid` (40 hex digits: SHA-1; 64: SHA-256; lower case, as git
/// writes them).
pub fn blob_id_is(oid: &str, content: &[u8]) -> bool {
    let header = format!("blob {}\0", content.len());
    let id: Vec<u8> = match oid.len() {
        40 => {
            use sha1::Digest;
            let mut h = sha1::Sha1::new();
            h.update(header.as_bytes());
            h.update(content);
            h.finalize().to_vec()
        }
        64 => {
            use sha2::Digest;
            let mut h = sha2::Sha256::new();
            h.update(header.as_bytes());
            h.update(content);
            h.finalize().to_vec()
        }
        _ => return false,
    };
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let hex = id
        .iter()
        .flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
    oid.len() == id.len() * 2 && hex.eq(oid.bytes())
}

#[cfg(test)]
#[path = "worktree_tests.rs"]
mod tests;
