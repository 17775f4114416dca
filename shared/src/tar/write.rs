//! Deterministic tar.gz writer: the same members in give the same bytes out.
//!
//! Guards against: nondeterminism (timestamps, owners, modes, gzip header fields, member
//! order), and writing an archive our own reader would refuse (bad paths, duplicates, case or
//! normalisation collisions, limits, a reader yielding a different size than declared).
//! On `Ok` from [`DeterministicTarWriter::finish`]: the output is a single gzip member (mtime
//! 0, no file name, OS 255, level 6) holding GNU tar headers with mtime 0, uid/gid 0, empty
//! user and group names, mode 0644/0755 (files) or 0755 (directories), members in strictly
//! ascending byte order of their paths (a directory's without a trailing `/`), long paths as
//! GNU long-name headers, and the two end-of-archive blocks.
//! Does not check: content; the packer scans and redacts before writing.

use std::io::{self, Read, Write};

use flate2::{Compress, Compression, FlushCompress, Status};

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
    builder: Option<tar::Builder<Gzip<W>>>,
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
        let gz = Gzip::new(w, 0, 0, 0);
        Self::from_gzip(gz, limits)
    }

    /// A writer with [`TarLimits::bundle`] limits that deflates at zlib `level` (0-9) until its
    /// first [`DeterministicTarWriter::cut`] (a packer's group of files; see docs/FORMATS.md).
    pub fn with_level(w: W, level: u32) -> Self {
        let mut gz = Gzip::new(w, 0, 0, 0);
        gz.z = Compress::new(Compression::new(level.min(9)), false);
        Self::from_gzip(gz, TarLimits::bundle())
    }

    fn from_gzip(gz: Gzip<W>, limits: TarLimits) -> Self {
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

    /// Ends the deflate stream's current block at a byte boundary and restarts the compressor
    /// with a fresh state, so that what follows compresses independently of what came before
    /// (still one gzip member: a sync flush, then a reset). Returns where the stream stands.
    ///
    /// The compressed bytes written so far after the 10-byte gzip header
    /// ([`GZIP_HEADER`]) can later be continued with [`DeterministicTarWriter::resume`]: a
    /// packer reuses the members of one revision across bundles that differ only after the cut,
    /// and both routes give the same bytes.
    pub fn cut(&mut self) -> Result<Cut, TarError> {
        if self.failed {
            return Err(poisoned());
        }
        let builder = self.builder.as_mut().ok_or_else(poisoned)?;
        let r = builder.get_mut().cut();
        self.failed |= r.is_err();
        r.map_err(|e| TarError::io(None, "cut gzip stream", e))
    }

    /// A writer continuing a stream whose start `w` already holds: the gzip header
    /// ([`GZIP_HEADER`]) and the `cut.compressed_bytes` bytes an earlier writer wrote up to its
    /// [`DeterministicTarWriter::cut`] (a packer writes its groups of files straight to the
    /// bundle, some reused from an earlier pack), holding `members` (each path, whether it is
    /// a directory, and its size, in the order written). The members are checked again exactly
    /// as [`DeterministicTarWriter::append_file`] checks them (path rules, order, collisions,
    /// limits); the caller vouches that the bytes are what that writer wrote for them (e.g. by
    /// a digest taken then). What follows deflates at zlib `level` (0-9).
    pub fn resume<'a>(
        w: W,
        limits: TarLimits,
        cut: &Cut,
        level: u32,
        members: impl IntoIterator<Item = (&'a str, bool, u64)>,
    ) -> Result<Self, TarError> {
        let mut gz = Gzip::new(w, cut.crc32, cut.tar_bytes, cut.compressed_bytes);
        gz.header_pending = false;
        gz.z = Compress::new(Compression::new(level.min(9)), false);
        let mut w = Self::from_gzip(gz, limits);
        for (path, is_dir, size) in members {
            w.account(path, is_dir, size)?;
        }
        Ok(w)
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

    /// Checks a member against the rules and limits and records it (name set, order, counts).
    fn account(&mut self, path: &str, is_dir: bool, size: u64) -> Result<(), TarError> {
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
        self.entries = entries;
        self.total_bytes = total;
        match &mut self.last {
            // One allocation for the writer, not one a member.
            Some(last) => {
                last.clear();
                last.push_str(path);
            }
            None => self.last = Some(path.to_owned()),
        }
        Ok(())
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
        self.account(path, is_dir, size)?;

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
        // A directory's name has no trailing `/` (its type says what it is): `path/` would be
        // one byte over the limit at the longest path the reader accepts.
        let name = path;
        let mut exact = ExactReader {
            inner: reader,
            remaining: size,
            mismatch: None,
        };
        let builder = self.builder.as_mut().ok_or_else(poisoned)?;
        if let Err(e) = builder.append_data(&mut header, name, &mut exact) {
            return Err(match exact.mismatch {
                Some(reason) => TarError::member_rejected(path, TarRule::SizeMismatch, reason),
                None => TarError::io(Some(path), "write member", e),
            });
        }
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

/// The gzip header every writer emits: no name, no extra, MTIME 0, XFL 0, OS 255.
pub const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// Zlib level of every writer.
const LEVEL: u32 = 6;

/// Where a [`DeterministicTarWriter`] stood at a [`DeterministicTarWriter::cut`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// CRC-32 of the tar bytes so far.
    pub crc32: u32,
    /// Tar (uncompressed) bytes so far.
    pub tar_bytes: u64,
    /// Deflate bytes written so far, after the gzip header; the stream ends on a byte boundary
    /// there and nothing after it refers back.
    pub compressed_bytes: u64,
}

/// A single-member gzip writer (RFC 1952) over a raw deflate stream, which can end a block at
/// a byte boundary and restart the compressor fresh ([`Gzip::cut`]) or start from the state of
/// such a cut. Without a cut its output is that of `flate2`'s `GzEncoder` at the same level.
struct Gzip<W: Write> {
    out: W,
    z: Compress,
    crc: u32,
    tar_bytes: u64,
    compressed_bytes: u64,
    buf: Vec<u8>,
    header_pending: bool,
}

impl<W: Write> Gzip<W> {
    /// Starts at a cut (`0, 0, 0` for a fresh stream). The header and any replayed prefix are
    /// the caller's; a fresh stream (`compressed_bytes` 0) writes the header itself.
    fn new(out: W, crc: u32, tar_bytes: u64, compressed_bytes: u64) -> Self {
        Gzip {
            out,
            z: Compress::new(Compression::new(LEVEL), false),
            crc,
            tar_bytes,
            compressed_bytes,
            buf: Vec::with_capacity(64 * 1024),
            header_pending: true,
        }
    }

    fn header(&mut self) -> io::Result<()> {
        if self.header_pending {
            self.header_pending = false;
            self.out.write_all(&GZIP_HEADER)?;
        }
        Ok(())
    }

    /// Deflates `input` with `flush`, writing everything produced.
    fn deflate(&mut self, mut input: &[u8], flush: FlushCompress) -> io::Result<()> {
        self.header()?;
        loop {
            self.buf.clear();
            let before = self.z.total_in();
            let status = self
                .z
                .compress_vec(input, &mut self.buf, flush)
                .map_err(io::Error::other)?;
            let used = usize::try_from(self.z.total_in() - before).map_err(io::Error::other)?;
            input = &input[used..];
            self.out.write_all(&self.buf)?;
            self.compressed_bytes += self.buf.len() as u64;
            let room_left = self.buf.len() < self.buf.capacity();
            let done = match flush {
                FlushCompress::Finish => status == Status::StreamEnd,
                _ => input.is_empty() && room_left,
            };
            if done {
                return Ok(());
            }
            if used == 0 && self.buf.is_empty() && status == Status::BufError {
                return Err(io::Error::other("deflate made no progress"));
            }
        }
    }

    fn cut(&mut self) -> io::Result<Cut> {
        self.deflate(&[], FlushCompress::Sync)?;
        self.z = Compress::new(Compression::new(LEVEL), false);
        Ok(Cut {
            crc32: self.crc,
            tar_bytes: self.tar_bytes,
            compressed_bytes: self.compressed_bytes,
        })
    }

    fn finish(mut self) -> io::Result<W> {
        self.deflate(&[], FlushCompress::Finish)?;
        self.out.write_all(&self.crc.to_le_bytes())?;
        // ISIZE: the length modulo 2^32 (RFC 1952).
        self.out
            .write_all(&((self.tar_bytes & 0xffff_ffff) as u32).to_le_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> Write for Gzip<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.deflate(data, FlushCompress::None)?;
        self.crc = zlib_rs::crc32::crc32(self.crc, data);
        self.tar_bytes += data.len() as u64;
        Ok(data.len())
    }

    /// Flushes the sink only: a deflate flush here would make the output depend on when the
    /// tar builder flushes.
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
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
    fn matches_the_formats_example_byte_for_byte() {
        // docs/FORMATS.md, "Writing": the same bytes as flate2's GzEncoder at level 6.
        let mut w = DeterministicTarWriter::new(Vec::new());
        w.append_file("files/hello.txt", false, 6, &b"hello\n"[..])
            .unwrap();
        w.append_file("files/run.sh", true, 10, &b"#!/bin/sh\n"[..])
            .unwrap();
        let b = w.finish().unwrap();
        assert_eq!(b.len(), 140);
        assert_eq!(
            crate::digest::Sha256Digest::of_bytes(&b).to_string(),
            "116556db88648a94ca716e01b3a2493b3161f9eadf1af53aa2689c9e4ce7e06e"
        );
    }

    /// Members before the cut, and the bundle tail after it.
    fn cut_sample(tail: &[u8]) -> (Vec<u8>, Cut) {
        let mut w = DeterministicTarWriter::new(Vec::new());
        w.append_file("files/a.txt", false, 3000, &[b'a'; 3000][..])
            .unwrap();
        w.append_file("files/b/c.sh", true, 5, &b"#!x\n\n"[..])
            .unwrap();
        let cut = w.cut().unwrap();
        w.append_file("manifest.json", false, tail.len() as u64, tail)
            .unwrap();
        (w.finish().unwrap(), cut)
    }

    #[test]
    fn a_resumed_stream_equals_the_uncut_route_and_reads_back() {
        let (whole, cut) = cut_sample(b"{\"x\":1}");
        let start = GZIP_HEADER.len();
        let prefix = &whole[start..start + cut.compressed_bytes as usize];
        let members = [("files/a.txt", false, 3000), ("files/b/c.sh", false, 5)];
        let mut w =
            DeterministicTarWriter::resume(started(prefix), TarLimits::bundle(), &cut, 6, members)
                .unwrap();
        w.append_file("manifest.json", false, 7, &b"{\"x\":1}"[..])
            .unwrap();
        let resumed = w.finish().unwrap();
        assert_eq!(resumed, whole);
        // Another tail after the same prefix: a valid archive with the new content.
        let (other, cut2) = cut_sample(b"{\"x\":22}");
        assert_eq!(cut2, cut);
        assert_eq!(
            &other[..start + prefix.len()],
            &whole[..start + prefix.len()]
        );
        let mut seen = Vec::new();
        crate::tar::read_members(
            &other[..],
            &TarLimits::bundle(),
            &crate::tar::AllowedNames::Bundle,
            |m, r| {
                let mut buf = Vec::new();
                r.read_to_end(&mut buf)?;
                seen.push((m.path.clone(), buf.len()));
                Ok(())
            },
        )
        .unwrap();
        let names: Vec<&str> = seen.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(names, ["files/a.txt", "files/b/c.sh", "manifest.json"]);
        assert_eq!(seen[2].1, 8);
    }

    #[test]
    fn resume_checks_the_members_again() {
        let (whole, cut) = cut_sample(b"{}");
        let prefix = &whole[GZIP_HEADER.len()..GZIP_HEADER.len() + cut.compressed_bytes as usize];
        // Out of order, and a later member colliding with a resumed one: refused as if appended.
        let members = [("files/b", false, 1u64), ("files/a", false, 1)];
        let e =
            DeterministicTarWriter::resume(started(prefix), TarLimits::bundle(), &cut, 6, members)
                .err()
                .unwrap();
        assert_eq!(e.rule(), TarRule::OutOfOrder);
        let members = [("files/README", false, 1u64)];
        let mut w =
            DeterministicTarWriter::resume(started(prefix), TarLimits::bundle(), &cut, 6, members)
                .unwrap();
        let e = w
            .append_file("files/readme", false, 0, io::empty())
            .unwrap_err();
        assert_eq!(e.rule(), TarRule::Collision);
    }

    /// An output holding the gzip header and `prefix`, as a packer writes it before resuming.
    fn started(prefix: &[u8]) -> Vec<u8> {
        let mut out = GZIP_HEADER.to_vec();
        out.extend_from_slice(prefix);
        out
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
