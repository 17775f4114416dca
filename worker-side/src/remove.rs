//! Removes a directory tree a generator wrote, whatever its depth, with a bounded number of
//! open descriptors and without following a link.
//!
//! Guards against: a tree deeper than the worker's open-files limit (a recursive removal
//! holds one descriptor per level and fails with `EMFILE`, leaving the run directory and up
//! to its disk limit behind) or than `PATH_MAX` (a removal by path fails with
//! `ENAMETOOLONG`); links (every directory is opened relative to its parent's descriptor with
//! `O_NOFOLLOW | O_DIRECTORY`, a link is unlinked, never opened); directories the generator
//! made unreadable or unwritable to the worker's own uid (made 0700 when refused, then
//! retried).
//!
//! How the depth stays bounded: at most [`WINDOW`] directories are open at once; a
//! subdirectory found at that depth is moved (`renameat`, never replacing anything) to the
//! top of the tree under a fresh name and removed from there later. Each move takes
//! [`WINDOW`] levels off a chain, so the work stays linear in the size of the tree.
//!
//! On `Ok`: the tree is gone. Does not handle: mount points inside the tree (a generator
//! cannot mount); a tree on two file systems (`EXDEV` is returned).

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{self as rfs, AtFlags, Dir, FileType, Mode, OFlags, RenameFlags, CWD};

/// Directories open at once below the tree's top (the descriptors it holds, plus two).
pub const WINDOW: usize = 64;

fn io_err(e: rustix::io::Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

/// Opens the directory `name` in `parent` without following a link; a directory refused for
/// its mode is made 0700 (it is the worker's own, or the worker is root) and opened again.
fn open_dir(parent: &OwnedFd, name: &CStr) -> rustix::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rfs::openat(parent, name, flags, Mode::empty()) {
        Err(rustix::io::Errno::ACCESS) => {
            rfs::chmodat(parent, name, Mode::from_raw_mode(0o700), AtFlags::empty())?;
            rfs::openat(parent, name, flags, Mode::empty())
        }
        r => r,
    }
}

/// `unlinkat`, making `dir` 0700 first when it refuses for its mode.
fn unlink(dir: &OwnedFd, name: &CStr, flags: AtFlags) -> rustix::io::Result<()> {
    match rfs::unlinkat(dir, name, flags) {
        Err(rustix::io::Errno::ACCESS | rustix::io::Errno::PERM) => {
            rfs::fchmod(dir, Mode::from_raw_mode(0o700))?;
            rfs::unlinkat(dir, name, flags)
        }
        r => r,
    }
}

/// Unlinks every entry of `dir` that is not a directory and returns the name of the first
/// subdirectory, if any (a link to a directory is a link: unlinked).
fn next_subdir(dir: &OwnedFd) -> rustix::io::Result<Option<CString>> {
    let mut entries = Dir::read_from(dir)?;
    while let Some(e) = entries.read() {
        let e = e?;
        let name = e.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        let is_dir = match e.file_type() {
            FileType::Directory => true,
            FileType::Unknown => rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Directory),
            _ => false,
        };
        if is_dir {
            return Ok(Some(name.to_owned()));
        }
        unlink(dir, name, AtFlags::empty())?;
    }
    Ok(None)
}

/// Empties the directory `top` (keeps `top` itself).
fn empty(top: &OwnedFd) -> rustix::io::Result<()> {
    // `path[i]` is an open directory and `names[i]` the name of `path[i + 1]` in it.
    let mut path: Vec<OwnedFd> = vec![rustix::io::dup(top)?];
    let mut names: Vec<CString> = Vec::new();
    let mut moved: u64 = 0;
    while let Some(cur) = path.last() {
        match next_subdir(cur)? {
            Some(sub) if path.len() >= WINDOW => {
                // Too deep to open: move it to the top and take it on from there.
                loop {
                    moved += 1;
                    let flat = CString::new(format!(".airlock-flat-{moved}"))
                        .map_err(|_| rustix::io::Errno::INVAL)?;
                    match rfs::renameat_with(cur, &sub, top, &flat, RenameFlags::NOREPLACE) {
                        Err(rustix::io::Errno::EXIST) => continue,
                        r => break r?,
                    }
                }
            }
            Some(sub) => {
                let fd = match open_dir(cur, &sub) {
                    Ok(fd) => fd,
                    // Replaced by a link or a file since it was read: not a directory to enter.
                    Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
                        unlink(cur, &sub, AtFlags::empty())?;
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                names.push(sub);
                path.push(fd);
            }
            None => {
                drop(path.pop());
                if let (Some(parent), Some(name)) = (path.last(), names.pop()) {
                    unlink(parent, &name, AtFlags::REMOVEDIR)?;
                }
            }
        }
    }
    Ok(())
}

/// Removes the directory at `path` and everything below it (see the module header). A link
/// at `path` itself is refused (`ELOOP`/`ENOTDIR`), not followed.
pub fn remove_tree(path: &Path) -> io::Result<()> {
    let (parent, name) = match (path.parent(), path.file_name()) {
        (Some(p), Some(n)) => (p, n),
        _ => return Err(io::Error::from(io::ErrorKind::InvalidInput)),
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let parent = rfs::openat(
        CWD,
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io_err)?;
    let name = c_name(name)?;
    let top = open_dir(&parent, &name).map_err(io_err)?;
    empty(&top).map_err(io_err)?;
    drop(top);
    unlink(&parent, &name, AtFlags::REMOVEDIR).map_err(io_err)
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Builds a chain of `depth` directories named `d` below `top` with `mkdirat`, a file and
    /// a link out of the tree at every 100th level; returns nothing (the path is too long).
    fn chain(top: &Path, depth: usize, outside: &Path) {
        let mut cur =
            rfs::openat(CWD, top, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        for i in 0..depth {
            rfs::mkdirat(&cur, "d", Mode::from_raw_mode(0o755)).unwrap();
            if i % 100 == 0 {
                let f = rfs::openat(
                    &cur,
                    "f",
                    OFlags::CREATE | OFlags::WRONLY,
                    Mode::from_raw_mode(0o644),
                )
                .unwrap();
                rustix::io::write(&f, b"x").unwrap();
                rfs::symlinkat(outside, &cur, "link").unwrap();
            }
            cur =
                rfs::openat(&cur, "d", OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        }
    }

    #[test]
    fn a_5000_deep_tree_goes_and_nothing_outside_is_touched() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), b"k").unwrap();
        let top = d.path().join("run");
        std::fs::create_dir(&top).unwrap();
        chain(&top, 5000, outside.path());
        remove_tree(&top).unwrap();
        assert!(!top.exists());
        assert_eq!(std::fs::read(outside.path().join("keep")).unwrap(), b"k");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn directories_made_unreadable_and_unwritable_are_removed() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path().join("run");
        std::fs::create_dir_all(top.join("a/b")).unwrap();
        std::fs::write(top.join("a/b/f"), b"x").unwrap();
        std::fs::set_permissions(top.join("a/b"), std::fs::Permissions::from_mode(0o500)).unwrap();
        std::fs::set_permissions(top.join("a"), std::fs::Permissions::from_mode(0o000)).unwrap();
        remove_tree(&top).unwrap();
        assert!(!top.exists());
    }

    #[test]
    fn a_link_at_the_top_is_refused_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), b"k").unwrap();
        let link = d.path().join("run");
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();
        assert!(remove_tree(&link).is_err());
        assert!(outside.path().join("keep").exists());
    }

    #[test]
    fn a_wide_and_deep_tree_with_a_window_of_moves_is_removed() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let top = d.path().join("run");
        std::fs::create_dir(&top).unwrap();
        for i in 0..5 {
            let branch = top.join(format!("b{i}"));
            std::fs::create_dir(&branch).unwrap();
            chain(&branch, 3 * WINDOW + i, outside.path());
        }
        remove_tree(&top).unwrap();
        assert!(!top.exists());
    }
}
