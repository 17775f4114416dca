//! The `file://` store's reads and small writes done in place with `std::fs`, on disk exactly
//! as `object_store`'s `LocalFileSystem` lays them out (the same paths, the same `<key>#<n>`
//! staging files, rename to overwrite, hard link to create once). Every other operation, and
//! any key this module does not accept, goes through `object_store`.
//!
//! Why: `LocalFileSystem` runs each call on tokio's blocking pool, and a gate makes about a
//! dozen small calls; the thread hand-offs cost more than the file operations.
//!
//! Guards against: the same as the store facade (capped reads, atomic publication, write-once
//! creates), plus a key that would mean something else on a file system: only keys whose
//! segments are non-empty, not `.` or `..`, and made of `[A-Za-z0-9._-]` are served here, so a
//! key never names a path outside the root or a staging file.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::ObjectInfo;

/// `root/key` when `key` is one this module serves (see the module doc).
pub(super) fn object_path(root: &Path, key: &str) -> Option<PathBuf> {
    let plain = !key.is_empty()
        && key.split('/').all(|seg| {
            !seg.is_empty()
                && seg != "."
                && seg != ".."
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        });
    plain.then(|| root.join(key))
}

/// The store's clock for a file: its status-change time (ctime), which the kernel sets to
/// "now" on every create, write, rename, link or `utimes`; a writer can move its mtime
/// anywhere, but not its ctime (short of the machine's clock). See FORMATS.md, "Store layout".
pub(super) fn landed_at(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    u64::try_from(meta.ctime()).unwrap_or(0)
}

/// [`landed_at`] of the object at `root/key`, when this module serves `key` and it exists.
pub(super) fn landed_at_key(root: &Path, key: &str) -> Option<u64> {
    let path = object_path(root, key)?;
    std::fs::symlink_metadata(path).ok().map(|m| landed_at(&m))
}

/// Streams the object at `path` (for `key`) into `out`, at most `max` bytes; `None` if absent
/// (a directory counts as absent, as in `object_store`).
pub(super) fn get_into(
    path: &Path,
    key: &str,
    max: u64,
    out: &mut dyn Write,
) -> Result<Option<ObjectInfo>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(None)
        }
        Err(e) => return Err(e).with_context(|| format!("{key}: read failed")),
    };
    let meta = file
        .metadata()
        .with_context(|| format!("{key}: read failed"))?;
    if meta.is_dir() {
        return Ok(None);
    }
    if meta.len() > max {
        bail!(
            "{key}: too large (store.too-large): limit {max} bytes, object is {}",
            meta.len()
        );
    }
    let last_modified = landed_at(&meta);
    // The file may grow after the metadata was read: the copy is capped on its own.
    let n = std::io::copy(&mut file.take(max + 1), out)
        .with_context(|| format!("{key}: read failed"))?;
    if n > max {
        bail!("{key}: too large (store.too-large): limit {max} bytes, read {n}");
    }
    Ok(Some(ObjectInfo {
        key: key.to_owned(),
        size: n,
        last_modified,
    }))
}

/// Writes `bytes` at `path` (for `key`) through a staging file: renamed over the object
/// (`create_only == false`) or hard-linked to it only if absent. `Ok(false)`: `create_only` and
/// the object exists.
pub(super) fn put(path: &Path, key: &str, bytes: &[u8], create_only: bool) -> Result<bool> {
    let (mut file, staging) = new_staged(path).with_context(|| format!("{key}: write failed"))?;
    let written = file.write_all(bytes);
    drop(file);
    let published = written.and_then(|()| {
        if create_only {
            std::fs::hard_link(&staging, path)
        } else {
            std::fs::rename(&staging, path)
        }
    });
    match published {
        Ok(()) => {
            if create_only {
                let _ = std::fs::remove_file(&staging);
            }
            Ok(true)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&staging);
            if create_only && e.kind() == ErrorKind::AlreadyExists {
                return Ok(false);
            }
            Err(e).with_context(|| format!("{key}: write failed"))
        }
    }
}

/// Rewrites the object at `path` (for `key`) in place with `bytes`, or creates it as
/// [`put`] does when absent. Not atomic: a reader may see a mix of the old and the new bytes,
/// so this is only for objects every reader verifies and can do without (the ledger's tail
/// hint). Why: replacing a file by rename frees the old one's blocks, which on a file system
/// mounted with `discard` waits for the device at every call; an overwrite in place frees
/// nothing. Never follows a symbolic link and never opens anything but a regular file (a
/// FIFO or device planted at `path` is refused, not waited on).
pub(super) fn overwrite(path: &Path, key: &str, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let opened = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let mut file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return put(path, key, bytes, false).map(drop),
        Err(e) => return Err(e).with_context(|| format!("{key}: write failed")),
    };
    let meta = file
        .metadata()
        .with_context(|| format!("{key}: write failed"))?;
    if !meta.is_file() {
        bail!("{key}: write failed: not a regular file");
    }
    file.write_all(bytes)
        .and_then(|()| file.set_len(bytes.len() as u64))
        .with_context(|| format!("{key}: write failed"))
}

/// A new staging file `<path>#<n>` (the first free `n` from 1), creating parent directories.
fn new_staged(path: &Path) -> std::io::Result<(File, PathBuf)> {
    let mut n = 1u32;
    let mut created_parents = false;
    loop {
        let mut staging = path.as_os_str().to_owned();
        staging.push(format!("#{n}"));
        let staging = PathBuf::from(staging);
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&staging)
        {
            Ok(f) => return Ok((f, staging)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists && n < 10_000 => n += 1,
            Err(e) if e.kind() == ErrorKind::NotFound && !created_parents => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                created_parents = true;
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use super::*;
    use object_store::ObjectStoreExt;

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
    fn absent_objects_and_directories_read_as_absent() {
        let (dir, store, _) = both();
        assert_eq!(store.get_bytes("records/nope.dsse.json", 10).unwrap(), None);
        assert_eq!(store.get_bytes("records/nope/deeper", 10).unwrap(), None);
        std::fs::create_dir_all(dir.path().join("inbox/j")).unwrap();
        assert_eq!(store.get_bytes("inbox/j", 10).unwrap(), None);
        // (oversized reads: `store::tests`, for this path and object_store's alike)
        store
            .put_bytes("drop/j/artifact.tar.gz", &[7u8; 100])
            .unwrap();
        // a file in the way of a parent directory is an error, not a silent success
        std::fs::write(dir.path().join("ledger"), b"x").unwrap();
        assert!(store
            .put_bytes("ledger/000000000001.dsse.json", b"e")
            .is_err());
        assert_eq!(listing(dir.path()), ["drop/j/artifact.tar.gz", "ledger"]);
    }

    #[test]
    fn only_plain_keys_take_the_fast_path() {
        let root = Path::new("/r");
        assert_eq!(
            object_path(root, "ledger/000000000001.dsse.json"),
            Some(PathBuf::from("/r/ledger/000000000001.dsse.json"))
        );
        for key in [
            "", "/abs", "a//b", "a/../b", "..", "./a", "a/", "a#1", "a b", "a/\u{e9}", "a\\b",
        ] {
            assert_eq!(object_path(root, key), None, "{key:?}");
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
