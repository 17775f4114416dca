//! The `file://` store's root is a boundary: every path under it is opened from a descriptor of
//! the root without following a link, and what is read, hashed, listed or deleted is the file
//! that descriptor names.
//!
//! Guards against: a worker that writes its own drop directory (`drop/<job>/`) on a shared file
//! system making that directory, a directory inside it, or a drop object a symbolic link, so
//! that `gc` deletes files outside the store, `fetch` hashes a file only the trusted user can
//! read into the ledger, or `status`/`watch`/`audit export` learn that such a file exists.
//! Directories are opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` where the kernel
//! has it (Linux 5.6), else by a walk of `openat(O_NOFOLLOW | O_DIRECTORY)` one component at a
//! time; a file is opened from its directory's descriptor with `O_NOFOLLOW | O_NONBLOCK` after an
//! `fstatat` without following says it is a regular file, and its `fstat` must name the same
//! inode. A link is refused as `store.link`; a device, FIFO, socket or directory where a file
//! belongs as `store.not-file`; a name that is not a plain key segment as `store.name`. None of
//! these messages says anything about what the link points to.
//! Does not check: hard links (the kernel's `protected_hardlinks`, on by default, keeps a worker
//! from linking a file it cannot already write), or what the bytes mean.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat};
use rustix::io::Errno;

/// Directories a listing descends at most (the layout has three levels).
const MAX_DEPTH: usize = 8;
/// Entries a listing returns at most (files plus refusals): a worker cannot make `gc` or
/// `status` walk an unbounded tree.
const MAX_ENTRIES: usize = 1_000_000;

/// A path under the root the store refuses to use.
#[derive(Debug, thiserror::Error)]
#[error("{key}: refused ({rule}): {why}")]
pub struct Refused {
    /// The store key (or the key prefix of a directory).
    pub key: String,
    /// `store.link`, `store.not-file` or `store.name`.
    pub rule: &'static str,
    /// What was found, never where a link points.
    pub why: &'static str,
}

/// A store-boundary error: refused, or an I/O error on an accepted path.
#[derive(Debug, thiserror::Error)]
pub enum BeneathError {
    /// The path is a link, not a file, or not a plain name.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// The operation failed on a path the store accepts.
    #[error("{key}: {op} failed: {source}")]
    Io {
        /// The store key.
        key: String,
        /// `read`, `write`, `list`, `delete`.
        op: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
}

fn link(key: &str) -> Refused {
    Refused {
        key: key.to_owned(),
        rule: "store.link",
        why: "a symbolic link inside the store; links are never followed",
    }
}

fn not_file(key: &str, dir_expected: bool) -> Refused {
    Refused {
        key: key.to_owned(),
        rule: "store.not-file",
        why: if dir_expected {
            "not a directory where the store keeps a directory"
        } else {
            "a directory, device, FIFO or socket where the store keeps a file"
        },
    }
}

fn io(key: &str, op: &'static str, e: impl Into<std::io::Error>) -> BeneathError {
    BeneathError::Io {
        key: key.to_owned(),
        op,
        source: e.into(),
    }
}

/// The segments of `key` when every one is non-empty, not `.`/`..`, and made of
/// `[A-Za-z0-9._-]` (so a key never names a staging file `<key>#<n>` or leaves the root).
pub fn segments(key: &str) -> Option<Vec<&str>> {
    let segs: Vec<&str> = key.split('/').collect();
    let plain = !key.is_empty() && segs.iter().all(|s| plain_segment(s.as_bytes()));
    plain.then_some(segs)
}

fn plain_segment(s: &[u8]) -> bool {
    !s.is_empty()
        && s != b"."
        && s != b".."
        && s.iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Set once `openat2` answered that this kernel (or its seccomp filter) lacks it.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// The store root, opened once (it is the trusted configuration's own path: links in it are
/// the operator's and are followed, as any configured path is).
pub struct Root {
    fd: OwnedFd,
    /// Whether to try `openat2` (tests turn it off to exercise the walk).
    openat2: bool,
}

impl Root {
    /// Opens the root directory.
    pub fn open(path: &Path) -> std::io::Result<Root> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Root { fd, openat2: true })
    }

    #[cfg(test)]
    pub(super) fn without_openat2(mut self) -> Root {
        self.openat2 = false;
        self
    }

    /// Opens the directory `segs` (relative to the root; empty = the root itself) without
    /// following a link; `Ok(None)` when a component is absent. With `create`, absent
    /// components are made (`mkdirat`, never through a link).
    fn dir(&self, key: &str, segs: &[&str], create: bool) -> Result<Option<OwnedFd>, BeneathError> {
        if segs.is_empty() {
            return rustix::io::fcntl_dupfd_cloexec(&self.fd, 0)
                .map(Some)
                .map_err(|e| io(key, "open", e));
        }
        if self.openat2 && !NO_OPENAT2.load(Ordering::Relaxed) {
            let resolve =
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
            match rustix::fs::openat2(&self.fd, segs.join("/"), DIR_FLAGS, Mode::empty(), resolve) {
                Ok(fd) => return Ok(Some(fd)),
                Err(Errno::NOENT) if !create => return Ok(None),
                Err(Errno::NOSYS | Errno::PERM | Errno::INVAL | Errno::TOOBIG) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                }
                // A link, a file in the way, an absent component to create: the walk says which.
                Err(_) => {}
            }
        }
        let mut cur =
            rustix::io::fcntl_dupfd_cloexec(&self.fd, 0).map_err(|e| io(key, "open", e))?;
        for (i, seg) in segs.iter().enumerate() {
            let here = segs[..=i].join("/");
            let next = match rustix::fs::openat(&cur, *seg, DIR_FLAGS, Mode::empty()) {
                Ok(fd) => fd,
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&cur, *seg, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(io(&here, "write", e)),
                    }
                    match rustix::fs::openat(&cur, *seg, DIR_FLAGS, Mode::empty()) {
                        Ok(fd) => fd,
                        Err(e) => return Err(classify(cur.as_fd(), seg, &here, true, e)),
                    }
                }
                Err(Errno::NOENT) => return Ok(None),
                Err(e) => return Err(classify(cur.as_fd(), seg, &here, true, e)),
            };
            cur = next;
        }
        Ok(Some(cur))
    }

    /// Opens the regular file at `key` for reading; `Ok(None)` if absent.
    pub fn open_file(&self, key: &str) -> Result<Option<(File, Stat)>, BeneathError> {
        let (dir, name) = match self.parent(key, false)? {
            Some(p) => p,
            None => return Ok(None),
        };
        match open_regular(dir.as_fd(), name) {
            Ok(AtName::Absent) => Ok(None),
            Ok(AtName::Open(fd, st)) => Ok(Some((File::from(fd), st))),
            Ok(AtName::Other(st)) => Err(check_file(key, &st)
                .err()
                .unwrap_or_else(|| not_file(key, false))
                .into()),
            // Swapped between the look and the open: whatever it is now, it is not what was
            // checked.
            Ok(AtName::Swapped) => Err(not_file(key, false).into()),
            Err(AtError::Stat(e) | AtError::Fstat(e)) => Err(io(key, "read", e)),
            Err(AtError::Open(e)) => Err(classify(dir.as_fd(), name, key, false, e)),
        }
    }

    /// What `fstatat` without following says about the file at `key`; `Ok(None)` if absent.
    pub fn stat_file(&self, key: &str) -> Result<Option<Stat>, BeneathError> {
        let Some((dir, name)) = self.parent(key, false)? else {
            return Ok(None);
        };
        match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => {
                check_file(key, &st)?;
                Ok(Some(st))
            }
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(io(key, "read", e)),
        }
    }

    /// Removes the regular file at `key` (absent is fine). Only ever a name in a directory
    /// opened beneath the root: nothing outside can be reached.
    pub fn delete(&self, key: &str) -> Result<(), BeneathError> {
        let Some((dir, name)) = self.parent(key, false)? else {
            return Ok(());
        };
        match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => check_file(key, &st)?,
            Err(Errno::NOENT) => return Ok(()),
            Err(e) => return Err(io(key, "delete", e)),
        }
        match rustix::fs::unlinkat(&dir, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(io(key, "delete", e)),
        }
    }

    /// The directory holding `key` (created with `create`) and the key's last segment.
    pub fn parent<'k>(
        &self,
        key: &'k str,
        create: bool,
    ) -> Result<Option<(OwnedFd, &'k str)>, BeneathError> {
        let segs = segments(key).ok_or_else(|| Refused {
            key: key.to_owned(),
            rule: "store.name",
            why: "not a plain store key",
        })?;
        let (name, dirs) = segs.split_last().ok_or_else(|| not_file(key, false))?;
        Ok(self.dir(key, dirs, create)?.map(|d| (d, *name)))
    }

    /// Every regular file under `prefix` (a key prefix ending in `/`, or empty), and every path
    /// refused on the way (links, devices, odd names), without following any link. Staging
    /// files (`<name>#<n>`) are skipped, as `object_store` does.
    pub fn list(&self, prefix: &str) -> Result<Listing, BeneathError> {
        let mut out = Listing::default();
        let trimmed = prefix.trim_end_matches('/');
        let segs = if trimmed.is_empty() {
            Vec::new()
        } else {
            segments(trimmed).ok_or_else(|| Refused {
                key: trimmed.to_owned(),
                rule: "store.name",
                why: "not a plain store key",
            })?
        };
        match self.dir(trimmed, &segs, false) {
            Ok(Some(fd)) => walk(fd, trimmed, 0, &mut out)?,
            Ok(None) => {}
            // A prefix that is itself a link or a file: nothing under it is the store's.
            Err(BeneathError::Refused(r)) => out.refused.push(r),
            Err(e) => return Err(e),
        }
        out.files.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}

/// What [`Root::list`] found.
#[derive(Debug, Default)]
pub struct Listing {
    /// Key, size, store time (ctime) of each regular file.
    pub files: Vec<(String, u64, u64)>,
    /// Paths refused, with their rule.
    pub refused: Vec<Refused>,
}

fn walk(dir: OwnedFd, prefix: &str, depth: usize, out: &mut Listing) -> Result<(), BeneathError> {
    let mut entries = rustix::fs::Dir::read_from(&dir).map_err(|e| io(prefix, "list", e))?;
    for entry in entries.by_ref() {
        if out.files.len() + out.refused.len() >= MAX_ENTRIES {
            return Err(io(
                prefix,
                "list",
                std::io::Error::other("more entries than a store listing reads"),
            ));
        }
        let entry = entry.map_err(|e| io(prefix, "list", e))?;
        let raw = entry.file_name().to_bytes();
        if raw == b"." || raw == b".." {
            continue;
        }
        let shown = String::from_utf8_lossy(raw);
        let key = if prefix.is_empty() {
            shown.to_string()
        } else {
            format!("{prefix}/{shown}")
        };
        if let Some(stem) = staging_stem(raw) {
            if plain_segment(stem) {
                continue;
            }
        }
        if !plain_segment(raw) {
            out.refused.push(Refused {
                key,
                rule: "store.name",
                why: "a name that is not a plain store key segment",
            });
            continue;
        }
        let st = match rustix::fs::statat(&dir, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(io(&key, "list", e)),
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => {
                out.files.push((key, st.st_size.max(0) as u64, ctime(&st)));
            }
            FileType::Directory if depth < MAX_DEPTH => {
                match rustix::fs::openat(&dir, entry.file_name(), DIR_FLAGS, Mode::empty()) {
                    Ok(sub) => walk(sub, &key, depth + 1, out)?,
                    Err(Errno::NOENT) => {}
                    Err(e) => out.refused.push(
                        match classify(
                            dir.as_fd(),
                            std::str::from_utf8(raw).unwrap_or(""),
                            &key,
                            true,
                            e,
                        ) {
                            BeneathError::Refused(r) => r,
                            other => return Err(other),
                        },
                    ),
                }
            }
            FileType::Symlink => out.refused.push(link(&key)),
            _ => out.refused.push(not_file(&key, false)),
        }
    }
    Ok(())
}

/// `name` without a `#<digits>` staging suffix, when it has one.
fn staging_stem(name: &[u8]) -> Option<&[u8]> {
    let hash = name.iter().rposition(|&b| b == b'#')?;
    let digits = &name[hash + 1..];
    (!digits.is_empty() && digits.iter().all(u8::is_ascii_digit)).then(|| &name[..hash])
}

/// The store's clock for a file: its status-change time (see `local::landed_at`).
pub fn ctime(st: &Stat) -> u64 {
    u64::try_from(st.st_ctime).unwrap_or(0)
}

/// What [`open_regular`] found at a name.
pub(crate) enum AtName {
    /// Nothing.
    Absent,
    /// Something other than a regular file (a link, a directory, a device, a FIFO...), never
    /// opened: what `fstatat` without following (or the opened file's `fstat`) says of it.
    Other(Stat),
    /// A regular file when looked at, another inode once opened.
    Swapped,
    /// The regular file, opened for reading, and its `fstat`.
    Open(OwnedFd, Stat),
}

/// Which step of [`open_regular`] failed.
pub(crate) enum AtError {
    Stat(Errno),
    Open(Errno),
    Fstat(Errno),
}

/// Opens the regular file `name` in `dir` for reading without following a link and without
/// ever opening anything else: an `fstatat` that follows no link must say it is a regular
/// file, the open is `O_NOFOLLOW | O_NONBLOCK`, and the opened file's `fstat` must name the
/// same inode. `name` is one component (the caller opened `dir` beneath its root).
pub(crate) fn open_regular(dir: BorrowedFd<'_>, name: &str) -> Result<AtName, AtError> {
    let before = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(AtName::Absent),
        Err(e) => return Err(AtError::Stat(e)),
    };
    if FileType::from_raw_mode(before.st_mode) != FileType::RegularFile {
        return Ok(AtName::Other(before));
    }
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(AtName::Absent),
        Err(e) => return Err(AtError::Open(e)),
    };
    let st = rustix::fs::fstat(&fd).map_err(AtError::Fstat)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Ok(AtName::Other(st));
    }
    if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino) {
        return Ok(AtName::Swapped);
    }
    Ok(AtName::Open(fd, st))
}

fn check_file(key: &str, st: &Stat) -> Result<(), Refused> {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => Ok(()),
        FileType::Symlink => Err(link(key)),
        _ => Err(not_file(key, false)),
    }
}

/// Turns a failed open of `name` in `dir` into a refusal naming what is there.
fn classify(
    dir: BorrowedFd<'_>,
    name: &str,
    key: &str,
    dir_expected: bool,
    e: Errno,
) -> BeneathError {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => match FileType::from_raw_mode(st.st_mode) {
            FileType::Symlink => link(key).into(),
            FileType::Directory if dir_expected => io(key, "open", e),
            FileType::Directory => not_file(key, false).into(),
            _ if dir_expected => not_file(key, true).into(),
            _ => not_file(key, false).into(),
        },
        Err(_) => io(key, "open", e),
    }
}

#[cfg(test)]
#[path = "beneath_tests.rs"]
mod tests;
