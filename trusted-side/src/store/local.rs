//! The `file://` store's reads and small writes done in place, on disk exactly as
//! `object_store`'s `LocalFileSystem` lays them out (the same paths, the same `<key>#<n>`
//! staging files, rename to overwrite, hard link to create once), every path opened beneath
//! the root without following a link (`beneath.rs`).
//!
//! Why in place: `LocalFileSystem` runs each call on tokio's blocking pool, and a gate makes
//! about a dozen small calls; the thread hand-offs cost more than the file operations. Why not
//! `LocalFileSystem` at all for reads, lists and deletes: it follows links, and a worker writes
//! its own drop directory on a shared file system.
//!
//! Guards against: the same as the store facade (capped reads, atomic publication, write-once
//! creates), plus a key that would mean something else on a file system: only keys whose
//! segments are non-empty, not `.` or `..`, and made of `[A-Za-z0-9._-]` are served, so a key
//! never names a path outside the root or a staging file; and links, devices and FIFOs planted
//! in the store (`store.link`, `store.not-file`).

use std::fs::File;
use std::io::{Read, Write};

use anyhow::{bail, Result};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::beneath::{self, BeneathError, Root};
use super::ObjectInfo;

/// Streams the object at `key` into `out`, at most `max` bytes; `None` if absent. A link, a
/// directory, a device or a FIFO at `key` is refused.
pub(super) fn get_into(
    root: &Root,
    key: &str,
    max: u64,
    out: &mut dyn Write,
) -> Result<Option<ObjectInfo>> {
    let Some((file, st)) = root.open_file(key)? else {
        return Ok(None);
    };
    let len = st.st_size.max(0) as u64;
    if len > max {
        bail!("{key}: too large (store.too-large): limit {max} bytes, object is {len}");
    }
    let last_modified = beneath::ctime(&st);
    // The file may grow after the metadata was read: the copy is capped on its own.
    let n = std::io::copy(&mut file.take(max + 1), out)
        .map_err(|e| anyhow::anyhow!("{key}: read failed: {e}"))?;
    if n > max {
        bail!("{key}: too large (store.too-large): limit {max} bytes, read {n}");
    }
    Ok(Some(ObjectInfo {
        key: key.to_owned(),
        size: n,
        last_modified,
    }))
}

fn werr(key: &str, e: impl Into<std::io::Error>) -> anyhow::Error {
    anyhow::Error::new(BeneathError::Io {
        key: key.to_owned(),
        op: "write",
        source: e.into(),
    })
}

/// Writes `bytes` at `key` through a staging file in the same directory: renamed over the
/// object (`create_only == false`) or hard-linked to it only if absent. `Ok(false)`:
/// `create_only` and the object exists.
pub(super) fn put(root: &Root, key: &str, bytes: &[u8], create_only: bool) -> Result<bool> {
    let Some((dir, name)) = root.parent(key, true)? else {
        bail!("{key}: write failed: parent directory vanished");
    };
    let (file, staging) = new_staged(&dir, name).map_err(|e| werr(key, e))?;
    let mut file = File::from(file);
    let written = file.write_all(bytes);
    drop(file);
    let published = match written {
        Ok(()) if create_only => rustix::fs::linkat(&dir, &staging, &dir, name, AtFlags::empty()),
        Ok(()) => rustix::fs::renameat(&dir, &staging, &dir, name),
        Err(e) => Err(Errno::from_io_error(&e).unwrap_or(Errno::IO)),
    };
    match published {
        Ok(()) => {
            if create_only {
                let _ = rustix::fs::unlinkat(&dir, &staging, AtFlags::empty());
            }
            Ok(true)
        }
        Err(e) => {
            let _ = rustix::fs::unlinkat(&dir, &staging, AtFlags::empty());
            if create_only && e == Errno::EXIST {
                return Ok(false);
            }
            Err(werr(key, e))
        }
    }
}

/// Rewrites the object at `key` in place with `bytes`, or creates it as [`put`] does when
/// absent. Not atomic: a reader may see a mix of the old and the new bytes, so this is only
/// for objects every reader verifies and can do without (the ledger's tail hint). Why:
/// replacing a file by rename frees the old one's blocks, which on a file system mounted with
/// `discard` waits for the device at every call; an overwrite in place frees nothing. Never
/// follows a symbolic link and never opens anything but a regular file (a FIFO or device
/// planted at `key` is refused, not waited on).
pub(super) fn overwrite(root: &Root, key: &str, bytes: &[u8]) -> Result<()> {
    let Some((dir, name)) = root.parent(key, true)? else {
        bail!("{key}: write failed: parent directory vanished");
    };
    let flags =
        OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(&dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return put(root, key, bytes, false).map(drop),
        Err(e) => return Err(werr(key, e)),
    };
    let st = rustix::fs::fstat(&fd).map_err(|e| werr(key, e))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        bail!("{key}: write failed: not a regular file (store.not-file)");
    }
    let mut file = File::from(fd);
    file.write_all(bytes)
        .and_then(|()| file.set_len(bytes.len() as u64))
        .map_err(|e| werr(key, e))
}

/// A new staging file `<name>#<n>` in `dir` (the first free `n` from 1).
fn new_staged(
    dir: &std::os::fd::OwnedFd,
    name: &str,
) -> Result<(std::os::fd::OwnedFd, String), Errno> {
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut n = 1u32;
    loop {
        let staging = format!("{name}#{n}");
        match rustix::fs::openat(dir, staging.as_str(), flags, Mode::from_raw_mode(0o666)) {
            Ok(f) => return Ok((f, staging)),
            Err(Errno::EXIST) if n < 10_000 => n += 1,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use object_store::ObjectStoreExt;
    use std::path::{Path, PathBuf};

    /// A `file://` store (fast path) and `object_store`'s own `LocalFileSystem` on one root.
    fn both() -> (
        tempfile::TempDir,
        Store,
        object_store::local::LocalFileSystem,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let url = airlock_core::fileurl::path_to_file_url(dir.path()).unwrap();
        let store = Store::open(&url).unwrap();
        let fs = object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap();
        (dir, store, fs)
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn listing(dir: &Path) -> Vec<String> {
        let mut out: Vec<String> = walk(dir)
            .into_iter()
            .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
            .collect();
        out.sort();
        out
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
        out
    }

    #[test]
    fn writes_are_read_back_by_object_store_and_the_reverse() {
        let (dir, store, fs) = both();
        let rt = rt();
        store
            .put_bytes("ledger/000000000001.dsse.json", b"one")
            .unwrap();
        assert!(store.put_new("records/j.dsse.json", b"first").unwrap());
        assert!(!store.put_new("records/j.dsse.json", b"second").unwrap());
        let got = rt
            .block_on(async {
                fs.get(&"records/j.dsse.json".into())
                    .await
                    .unwrap()
                    .bytes()
                    .await
            })
            .unwrap();
        assert_eq!(&got[..], b"first");
        let meta = rt
            .block_on(fs.head(&"ledger/000000000001.dsse.json".into()))
            .unwrap();
        let (bytes, info) = store
            .get_bytes_info("ledger/000000000001.dsse.json", 100)
            .unwrap()
            .unwrap();
        assert_eq!(bytes, b"one");
        assert_eq!(info.size, meta.size);
        assert_eq!(info.last_modified as i64, meta.last_modified.timestamp());
        // object_store writes, the fast path reads
        rt.block_on(fs.put(&"drop/j/artifact.dsse.json".into(), b"env".to_vec().into()))
            .unwrap();
        assert_eq!(
            store.get_bytes("drop/j/artifact.dsse.json", 10).unwrap(),
            Some(b"env".to_vec())
        );
        // no staging file is left behind, and object_store lists exactly the three objects
        assert_eq!(
            listing(dir.path()),
            [
                "drop/j/artifact.dsse.json",
                "ledger/000000000001.dsse.json",
                "records/j.dsse.json"
            ]
        );
        assert_eq!(store.list("").unwrap().len(), 3);
    }

    #[test]
    fn absent_objects_read_as_absent_and_directories_are_refused() {
        let (dir, store, _) = both();
        assert_eq!(store.get_bytes("records/nope.dsse.json", 10).unwrap(), None);
        assert_eq!(store.get_bytes("records/nope/deeper", 10).unwrap(), None);
        std::fs::create_dir_all(dir.path().join("inbox/j")).unwrap();
        let err = store.get_bytes("inbox/j", 10).unwrap_err();
        assert!(format!("{err:#}").contains("store.not-file"), "{err:#}");
        // (oversized reads: `store::tests`, for this path and object_store's alike)
        store
            .put_bytes("drop/j/artifact.tar.gz", &[7u8; 100])
            .unwrap();
        // a file in the way of a parent directory is an error, not a silent success
        std::fs::write(dir.path().join("ledger"), b"x").unwrap();
        assert!(store
            .put_bytes("ledger/000000000001.dsse.json", b"e")
            .is_err());
        std::fs::remove_dir(dir.path().join("inbox/j")).unwrap();
        std::fs::remove_dir(dir.path().join("inbox")).unwrap();
        assert_eq!(listing(dir.path()), ["drop/j/artifact.tar.gz", "ledger"]);
    }

    #[test]
    fn writes_never_go_through_a_planted_directory_link() {
        let (dir, store, _) = both();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("records")).unwrap();
        let err = store.put_new("records/j.dsse.json", b"x").unwrap_err();
        assert!(format!("{err:#}").contains("store.link"), "{err:#}");
        let err = store.put_bytes("records/j.dsse.json", b"x").unwrap_err();
        assert!(format!("{err:#}").contains("store.link"), "{err:#}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn only_plain_keys_are_served() {
        assert_eq!(
            super::super::beneath::segments("ledger/000000000001.dsse.json"),
            Some(vec!["ledger", "000000000001.dsse.json"])
        );
        let (_dir, store, _) = both();
        for key in [
            "", "/abs", "a//b", "a/../b", "..", "./a", "a/", "a#1", "a b", "a/\u{e9}", "a\\b",
        ] {
            assert_eq!(super::super::beneath::segments(key), None, "{key:?}");
            let err = store.get_bytes(key, 10).unwrap_err();
            assert!(
                format!("{err:#}").contains("store.name"),
                "{key:?}: {err:#}"
            );
        }
    }

    #[test]
    fn a_hint_is_rewritten_in_place_created_when_absent_and_exact_when_shorter() {
        use std::os::unix::fs::MetadataExt;
        let (dir, store, fs) = both();
        store
            .put_hint("ledger.tail", b"a longer first copy")
            .unwrap();
        let inode = std::fs::metadata(dir.path().join("ledger.tail"))
            .unwrap()
            .ino();
        store.put_hint("ledger.tail", b"short").unwrap();
        let path = dir.path().join("ledger.tail");
        assert_eq!(std::fs::read(&path).unwrap(), b"short");
        // The same file (no rename), and object_store reads exactly the new bytes.
        assert_eq!(std::fs::metadata(&path).unwrap().ino(), inode);
        let got = rt()
            .block_on(async { fs.get(&"ledger.tail".into()).await.unwrap().bytes().await })
            .unwrap();
        assert_eq!(&got[..], b"short");
        assert_eq!(listing(dir.path()), ["ledger.tail"]);
    }

    #[test]
    fn a_hint_is_never_written_through_a_planted_link_fifo_or_directory() {
        let (dir, store, _fs) = both();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("victim");
        std::fs::write(&target, b"keep me").unwrap();
        let path = dir.path().join("ledger.tail");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let err = store.put_hint("ledger.tail", b"entry").unwrap_err();
        assert!(
            format!("{err:#}").contains("ledger.tail: write failed"),
            "{err:#}"
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
        assert!(std::fs::symlink_metadata(&path).unwrap().is_symlink());
        // A FIFO is refused at once (no reader: the open does not wait for one).
        std::fs::remove_file(&path).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
        let err = store.put_hint("ledger.tail", b"entry").unwrap_err();
        assert!(
            format!("{err:#}").contains("ledger.tail: write failed"),
            "{err:#}"
        );
        // A directory is not a file either.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let err = store.put_hint("ledger.tail", b"entry").unwrap_err();
        assert!(
            format!("{err:#}").contains("ledger.tail: write failed"),
            "{err:#}"
        );
        assert_eq!(std::fs::read_dir(&path).unwrap().count(), 0);
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
    }
}
