//! Deterministic tar.gz writer: the same members in give the same bytes out.
//!
//! Guards against: nondeterminism (timestamps, owners, modes, gzip header fields, member
//! order), and writing an archive our own reader would refuse (bad paths, duplicates, case or
//! normalisation collisions, limits, a reader yielding a different size than declared).
//! On `Ok` from [`DeterministicTarWriter::finish`]: the output is a single gzip member (mtime
//! 0, no file name, OS 255, level 6) holding GNU tar headers with mtime 0, uid/gid 0, empty
//! user and group names, mode 0644/0755 (files) or 0755 (directories), members in strictly
//! ascending byte order of their paths, long paths as GNU long-name headers, and the two
//! end-of-archive blocks.
//! Does not check: content; the packer scans and redacts before writing.

use std::io::{self, Read, Write};

use flate2::write::GzEncoder;
use flate2::{Compression, GzBuilder};

use super::names::NameSet;
use super::{TarError, TarRule};
use crate::limits::TarLimits;
use crate::paths::check_relative_path;

/// Writes a deterministic tar.gz, refusing anything the safe reader would refuse.
///
/// ```
/// use airlock_core::tar::DeterministicTarWriter;
/// let mut w = DeterministicTarWriter::new(Vec::new());
/// w.append_file("files/a.txt", false, 2, &b"hi"[..]).unwrap();
/// w.append_file("manifest.json", false, 2, &b"{}"[..]).unwrap();
/// let bytes = w.finish().unwrap();
/// assert_eq!(&bytes[..2], &[0x1f, 0x8b]);
/// ```
pub struct DeterministicTarWriter<W: Write> {
    builder: Option<tar::Builder<GzEncoder<W>>>,
    limits: TarLimits,
    names: NameSet,
    last: Option<String>,
    entries: u64,
    total_bytes: u64,
    failed: bool,
}

impl<W: Write> DeterministicTarWriter<W> {
    /// A writer with [`TarLimits::bundle`] limits.
    pub fn new(w: W) -> Self {
        Self::with_limits(w, TarLimits::bundle())
    }

    /// A writer that refuses to exceed `limits` (entries, member and total size, path length
    /// and depth), so that a packer fails early with the reader's rule ids.
    pub fn with_limits(w: W, limits: TarLimits) -> Self {
        let gz = GzBuilder::new()
            .mtime(0)
            .operating_system(255)
            .write(w, Compression::new(6));
        DeterministicTarWriter {
            builder: Some(tar::Builder::new(gz)),
            limits,
            names: NameSet::new(),
            last: None,
            entries: 0,
            total_bytes: 0,
            failed: false,
        }
    }

    /// Appends a regular file of exactly `size` bytes read from `reader`, mode 0755 if
    /// `executable` else 0644.
    ///
    /// Errors (and the writer is then unusable): a path rule (`tar.parent-dir`...), a path
    /// not strictly after the previous one (`tar.out-of-order`), a duplicate or collision,
    /// a limit, or `reader` yielding fewer or more than `size` bytes (`tar.size-mismatch`).
    pub fn append_file(
        &mut self,
        path: &str,
        executable: bool,
        size: u64,
        reader: impl Read,
    ) -> Result<(), TarError> {
        let r = self.append(path, false, executable, size, reader);
        self.failed |= r.is_err();
        r
    }

    /// Appends a directory entry (mode 0755). Parents need not be listed explicitly.
    pub fn append_dir(&mut self, path: &str) -> Result<(), TarError> {
        let r = self.append(path, true, true, 0, io::empty());
        self.failed |= r.is_err();
        r
    }

    /// Writes the end-of-archive blocks and the gzip trailer, returning the output.
    pub fn finish(mut self) -> Result<W, TarError> {
        if self.failed {
            return Err(poisoned());
        }
        let builder = self.builder.take().ok_or_else(poisoned)?;
        let gz = builder
            .into_inner()
            .map_err(|e| TarError::io(None, "finish tar stream", e))?;
        gz.finish()
            .map_err(|e| TarError::io(None, "finish gzip stream", e))
    }

    fn append(
        &mut self,
        path: &str,
        is_dir: bool,
        executable: bool,
        size: u64,
        reader: impl Read,
    ) -> Result<(), TarError> {
        if self.failed {
            return Err(poisoned());
        }
        let limits = &self.limits;
        check_relative_path(path, limits.max_path_bytes, limits.max_depth)
            .map_err(|e| TarError::from_path(path, &e))?;
        if let Some(last) = &self.last {
            if path.as_bytes() <= last.as_bytes() {
                return Err(TarError::member_rejected(
                    path,
                    TarRule::OutOfOrder,
                    format!(
                        "members must be appended in strictly ascending byte order; previous was {:?}",
                        crate::paths::display_cut(last)
                    ),
                ));
            }
        }
        let entries = self.entries.saturating_add(1);
        if entries > limits.max_entries {
            return Err(TarError::too_large(
                Some(path),
                TarRule::TooManyEntries,
                limits.max_entries,
                entries,
            ));
        }
        if size > limits.max_entry_bytes {
            return Err(TarError::too_large(
                Some(path),
                TarRule::EntryTooLarge,
                limits.max_entry_bytes,
                size,
            ));
        }
        let total = self.total_bytes.saturating_add(size);
        if total > limits.max_total_bytes {
            return Err(TarError::too_large(
                Some(path),
                TarRule::TotalTooLarge,
                limits.max_total_bytes,
                total,
            ));
        }
        self.names
            .insert(path, is_dir)
            .map_err(|(rule, reason)| TarError::member_rejected(path, rule, reason))?;

        let mut header = tar::Header::new_gnu();
        header.set_entry_type(if is_dir {
            tar::EntryType::Directory
        } else {
            tar::EntryType::Regular
        });
        header.set_mode(if executable { 0o755 } else { 0o644 });
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_size(size);
        let name = if is_dir {
            format!("{path}/")
        } else {
            path.to_owned()
        };
        let mut exact = ExactReader {
            inner: reader,
            remaining: size,
            mismatch: None,
        };
        let builder = self.builder.as_mut().ok_or_else(poisoned)?;
        if let Err(e) = builder.append_data(&mut header, &name, &mut exact) {
            return Err(match exact.mismatch {
                Some(reason) => TarError::member_rejected(path, TarRule::SizeMismatch, reason),
                None => TarError::io(Some(path), "write member", e),
            });
        }
        self.entries = entries;
        self.total_bytes = total;
        self.last = Some(path.to_owned());
        Ok(())
    }
}

fn poisoned() -> TarError {
    TarError::io(
        None,
        "write",
        io::Error::other("the writer failed earlier; its output is incomplete"),
    )
}

/// Yields exactly `remaining` bytes of `inner`, failing if it has fewer or more.
struct ExactReader<R> {
    inner: R,
    remaining: u64,
    mismatch: Option<String>,
}

impl<R: Read> Read for ExactReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.remaining == 0 {
            let mut probe = [0u8; 1];
            let n = loop {
                match self.inner.read(&mut probe) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    r => break r?,
                }
            };
            if n == 0 {
                return Ok(0);
            }
            let why = "the reader yielded more bytes than the declared size".to_owned();
            self.mismatch = Some(why.clone());
            return Err(io::Error::new(io::ErrorKind::InvalidData, why));
        }
        let max = usize::try_from(self.remaining).map_or(buf.len(), |r| r.min(buf.len()));
        let n = self.inner.read(&mut buf[..max])?;
        if n == 0 {
            let why = format!(
                "the reader ended {} bytes short of the declared size",
                self.remaining
            );
            self.mismatch = Some(why.clone());
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, why));
        }
        self.remaining -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut w = DeterministicTarWriter::new(Vec::new());
        w.append_dir("files").unwrap();
        w.append_file("files/a.sh", true, 3, &b"#!x"[..]).unwrap();
        let long = format!("files/{}/f.txt", "d".repeat(150));
        w.append_file(&long, false, 5, &b"hello"[..]).unwrap();
        w.append_file("manifest.json", false, 2, &b"{}"[..])
            .unwrap();
        w.finish().unwrap()
    }

    #[test]
    fn same_input_gives_identical_bytes() {
        assert_eq!(sample(), sample());
    }

    #[test]
    fn gzip_header_has_no_mtime_and_no_name() {
        let b = sample();
        assert_eq!(&b[..4], &[0x1f, 0x8b, 8, 0]); // FLG = 0: no FNAME, no FEXTRA
        assert_eq!(&b[4..8], &[0, 0, 0, 0]); // MTIME
        assert_eq!(b[9], 255); // OS unknown
    }

    #[test]
    fn refuses_out_of_order_and_duplicate_paths() {
        let mut w = DeterministicTarWriter::new(Vec::new());
        w.append_file("files/b", false, 0, io::empty()).unwrap();
        let e = w.append_file("files/a", false, 0, io::empty()).unwrap_err();
        assert_eq!(e.rule(), TarRule::OutOfOrder);
        // The writer is poisoned after an error.
        let e = w.append_file("files/c", false, 0, io::empty()).unwrap_err();
        assert_eq!(e.rule(), TarRule::Io);
        assert!(w.finish().is_err());

        let mut w = DeterministicTarWriter::new(Vec::new());
        w.append_file("files/b", false, 0, io::empty()).unwrap();
        let e = w.append_file("files/b", false, 0, io::empty()).unwrap_err();
        assert_eq!(e.rule(), TarRule::OutOfOrder);
    }

    #[test]
    fn refuses_bad_paths_and_collisions() {
        let mut w = DeterministicTarWriter::new(Vec::new());
        let e = w.append_file("../x", false, 0, io::empty()).unwrap_err();
        assert_eq!(e.rule().id(), "tar.parent-dir");
        let mut w = DeterministicTarWriter::new(Vec::new());
        let e = w
            .append_file("files/.git/config", false, 0, io::empty())
            .unwrap_err();
        assert_eq!(e.rule().id(), "tar.git-dir");
        let mut w = DeterministicTarWriter::new(Vec::new());
        w.append_file("files/README", false, 0, io::empty())
            .unwrap();
        let e = w
            .append_file("files/readme", false, 0, io::empty())
            .unwrap_err();
        assert_eq!(e.rule(), TarRule::Collision);
        let mut w = DeterministicTarWriter::new(Vec::new());
        w.append_file("files/a", false, 0, io::empty()).unwrap();
        let e = w
            .append_file("files/a/b", false, 0, io::empty())
            .unwrap_err();
        assert_eq!(e.rule(), TarRule::Collision);
    }

    #[test]
    fn refuses_reader_shorter_or_longer_than_declared() {
        let mut w = DeterministicTarWriter::new(Vec::new());
        let e = w.append_file("a", false, 5, &b"abc"[..]).unwrap_err();
        assert_eq!(e.rule(), TarRule::SizeMismatch);
        let mut w = DeterministicTarWriter::new(Vec::new());
        let e = w.append_file("a", false, 2, &b"abc"[..]).unwrap_err();
        assert_eq!(e.rule(), TarRule::SizeMismatch);
    }

    #[test]
    fn enforces_limits_when_writing() {
        let limits = TarLimits {
            max_entries: 1,
            max_entry_bytes: 4,
            max_total_bytes: 4,
            ..TarLimits::artifact()
        };
        let mut w = DeterministicTarWriter::with_limits(Vec::new(), limits.clone());
        let e = w.append_file("a", false, 5, &b"abcde"[..]).unwrap_err();
        assert_eq!(e.rule(), TarRule::EntryTooLarge);
        let mut w = DeterministicTarWriter::with_limits(Vec::new(), limits);
        w.append_file("a", false, 1, &b"a"[..]).unwrap();
        let e = w.append_file("b", false, 1, &b"b"[..]).unwrap_err();
        assert_eq!(e.rule(), TarRule::TooManyEntries);
    }
}
