//! Limits on everything that crosses the boundary, with documented defaults.
//!
//! Guards against: unbounded reads (bombs, endless streams) by giving every untrusted
//! [`Read`] a [`LimitedReader`] that fails loudly, where [`Read::take`] would silently
//! truncate and make an oversized input look complete.
//! On `Ok`: a [`LimitedReader`] returned at most `limit` bytes and its input ended there.
//! Does not check: what the bytes mean; each format applies its own rules.

use std::io::{self, Read};

use serde::{Deserialize, Serialize};

/// A limit was exceeded.
#[derive(Debug, thiserror::Error)]
#[error("{what}: too large (limit.{what}): limit {limit}, seen {seen}")]
pub struct LimitError {
    /// What was measured (e.g. `bundle-bytes`).
    pub what: &'static str,
    /// The limit.
    pub limit: u64,
    /// The value seen (at least; reading stops at the limit + 1).
    pub seen: u64,
}

/// Limits of one job, carried in the signed request so worker and gate agree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobLimits {
    /// Wall-clock seconds the generator may run before its process group is killed.
    pub wall_clock_secs: u64,
    /// Seconds between checkpoints while the generator runs.
    pub checkpoint_every_secs: u64,
    /// Files the diff may change (added, modified, deleted).
    pub max_changed_files: u64,
    /// Lines the diff may add plus remove.
    pub max_changed_lines: u64,
    /// Bytes of the compressed artifact.
    pub max_artifact_bytes: u64,
    /// Bytes of `generator.log` kept in the artifact.
    pub max_log_bytes: u64,
    /// Tokens (in + out) the generator may report using.
    pub max_tokens: u64,
    /// Whether the diff may contain binary files.
    pub allow_binary: bool,
    /// Bytes the generator may add under its workdir and private tmp (allocated blocks,
    /// counted from the generator's start). Absent in JSON: [`DEFAULT_MAX_DISK_BYTES`];
    /// omitted when it has that value, so one value has one encoding and requests that
    /// predate the field keep their bytes.
    #[serde(
        default = "default_max_disk_bytes",
        skip_serializing_if = "is_default_max_disk_bytes"
    )]
    pub max_disk_bytes: u64,
    /// Bytes of memory the generator's processes may hold together (a memory cgroup, where
    /// the worker can make one). Absent in JSON: [`DEFAULT_MAX_MEMORY_BYTES`]; omitted at
    /// that value, as `max_disk_bytes`.
    #[serde(
        default = "default_max_memory_bytes",
        skip_serializing_if = "is_default_max_memory_bytes"
    )]
    pub max_memory_bytes: u64,
}

/// Default per-run disk ceiling: 4 GiB. Room for a dependency install or a build in the
/// workdir (a `node_modules`, a virtualenv), while a runaway generator is stopped long before
/// it fills the disk of a typical small worker VM.
pub const DEFAULT_MAX_DISK_BYTES: u64 = 4 * 1024 * 1024 * 1024;

fn default_max_disk_bytes() -> u64 {
    DEFAULT_MAX_DISK_BYTES
}

fn is_default_max_disk_bytes(v: &u64) -> bool {
    *v == DEFAULT_MAX_DISK_BYTES
}

/// Default memory ceiling of the generator's processes together: 4 GiB. An agent CLI and a
/// test run or a build fit; a runaway generator is stopped before it pushes a small worker VM
/// into swap or its OOM killer.
pub const DEFAULT_MAX_MEMORY_BYTES: u64 = 4 * 1024 * 1024 * 1024;

fn default_max_memory_bytes() -> u64 {
    DEFAULT_MAX_MEMORY_BYTES
}

fn is_default_max_memory_bytes(v: &u64) -> bool {
    *v == DEFAULT_MAX_MEMORY_BYTES
}

impl Default for JobLimits {
    fn default() -> Self {
        JobLimits {
            wall_clock_secs: 15 * 60,
            checkpoint_every_secs: 30,
            max_changed_files: 200,
            max_changed_lines: 20_000,
            max_artifact_bytes: 16 * 1024 * 1024,
            max_log_bytes: 1024 * 1024,
            max_tokens: 2_000_000,
            allow_binary: false,
            max_disk_bytes: DEFAULT_MAX_DISK_BYTES,
            max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
        }
    }
}

/// One mebibyte, for readable defaults.
const MIB: u64 = 1024 * 1024;

/// Output a gzip stream may produce before the compression ratio is enforced.
///
/// Small archives can legitimately compress very well (a few headers and empty files), so the
/// ratio cap of [`TarLimits::max_compression_ratio`] applies only once the decompressed output
/// passes 1 MiB. A bomb gains nothing from this: 1 MiB is cheap to inflate.
pub const RATIO_GRACE_BYTES: u64 = MIB;

/// Longest component (bytes between two `/`) any path may have: Linux `NAME_MAX`.
pub const MAX_COMPONENT_BYTES: usize = 255;

/// Zero bytes tolerated after the end-of-archive marker of a tar stream (record padding).
///
/// GNU tar pads to 10 KiB records and `tar -b 2048` to 1 MiB; anything longer is treated as
/// trailing data (`tar.trailing-data`).
pub const MAX_TAR_PADDING_BYTES: u64 = MIB;

/// Limits of the safe tar reader (and of the writer, so that a packer fails early).
///
/// Two presets: [`TarLimits::bundle`] (generous; the bundle is signed by the trusted side but
/// still parsed defensively on the worker) and [`TarLimits::artifact`] (tight; the artifact
/// comes from a hostile worker). Every field is an inclusive maximum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TarLimits {
    /// Members (files and directories; long-name and pax headers do not count).
    pub max_entries: u64,
    /// Bytes of one member's content, checked from the header before the body is read and
    /// again while reading.
    pub max_entry_bytes: u64,
    /// Bytes of all members' content together.
    pub max_total_bytes: u64,
    /// Decompressed bytes per compressed byte consumed, enforced once the output passes
    /// [`RATIO_GRACE_BYTES`]. Deflate's best case is about 1032:1, so a cap of 200 stops
    /// zero-filled bombs early while real source trees (typically 3:1 to 20:1) pass.
    pub max_compression_ratio: u64,
    /// Bytes of one member path (after long-name or pax expansion).
    pub max_path_bytes: usize,
    /// Components of one member path.
    pub max_depth: usize,
}

impl TarLimits {
    /// Limits for a bundle (`manifest.json`, `request.json`, `files/...`).
    ///
    /// - `max_entries`: 200 000 members (a large monorepo checkout);
    /// - `max_entry_bytes`: 64 MiB per file (the packer skips larger files);
    /// - `max_total_bytes`: 2 GiB of content;
    /// - `max_compression_ratio`: 200:1 after the first MiB;
    /// - `max_path_bytes`: 1024 bytes (leaves room under Linux `PATH_MAX` = 4096 for the
    ///   destination directory);
    /// - `max_depth`: 64 components.
    pub fn bundle() -> Self {
        TarLimits {
            max_entries: 200_000,
            max_entry_bytes: 64 * MIB,
            max_total_bytes: 2048 * MIB,
            max_compression_ratio: 200,
            max_path_bytes: 1024,
            max_depth: 64,
        }
    }

    /// Limits for an artifact (`packet.json`, `patch.diff`, `review.md`, `generator.log`).
    ///
    /// - `max_entries`: 16 members (four names are allowed; room to report extras cleanly);
    /// - `max_entry_bytes`: 32 MiB per member;
    /// - `max_total_bytes`: 64 MiB of content;
    /// - `max_compression_ratio`: 200:1 after the first MiB;
    /// - `max_path_bytes`: 255 bytes;
    /// - `max_depth`: 4 components (artifact members sit at the top level).
    pub fn artifact() -> Self {
        TarLimits {
            max_entries: 16,
            max_entry_bytes: 32 * MIB,
            max_total_bytes: 64 * MIB,
            max_compression_ratio: 200,
            max_path_bytes: 255,
            max_depth: 4,
        }
    }

    /// Hard cap on the decompressed tar stream (headers, padding and content), and on the
    /// compressed input: a backstop behind the per-member checks and the ratio cap.
    ///
    /// It is `max_total_bytes` plus, per member, a header, block padding, one GNU long-name
    /// and one pax header of at most [`TarLimits::max_extension_bytes`], plus
    /// [`MAX_TAR_PADDING_BYTES`] of record padding and the end-of-archive blocks.
    pub fn max_stream_bytes(&self) -> u64 {
        const BLOCK: u64 = 512;
        let round = |n: u64| n.saturating_add(BLOCK - 1) / BLOCK * BLOCK;
        let per_entry = BLOCK // header
            .saturating_add(BLOCK) // padding of the body
            .saturating_add(BLOCK.saturating_add(round(self.max_extension_bytes())))
            .saturating_add(BLOCK.saturating_add(round(self.max_extension_bytes())));
        self.max_total_bytes
            .saturating_add(self.max_entries.saturating_mul(per_entry))
            .saturating_add(MAX_TAR_PADDING_BYTES)
            .saturating_add(2 * BLOCK)
    }

    /// Largest body of a GNU long-name or pax extended header: the longest path plus 1 KiB
    /// for the other pax records (`mtime`, `uid`, ...) and record framing.
    pub fn max_extension_bytes(&self) -> u64 {
        (self.max_path_bytes as u64).saturating_add(1024)
    }
}

impl LimitError {
    /// Wraps this error in an [`io::Error`] (kind `InvalidData`), so that a [`Read`] can
    /// return it and callers can get it back with [`LimitError::from_io`].
    pub fn into_io(self) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, self)
    }

    /// The [`LimitError`] inside an [`io::Error`] made by [`LimitError::into_io`] (for example
    /// returned by a [`LimitedReader`] deep inside a decoder), if there is one.
    pub fn from_io(err: &io::Error) -> Option<&LimitError> {
        err.get_ref()?.downcast_ref::<LimitError>()
    }
}

/// A reader that fails with [`LimitError`] once more than `limit` bytes are available.
///
/// Unlike [`Read::take`], which silently stops at the limit and makes an oversized input look
/// like a complete one, this reader yields at most `limit` bytes and then probes the inner
/// reader: end of input is a normal end, one more byte is an [`io::Error`] wrapping
/// `LimitError { what, limit, seen: limit + 1 }` (get it back with [`LimitError::from_io`]).
#[derive(Debug)]
pub struct LimitedReader<R> {
    inner: R,
    what: &'static str,
    limit: u64,
    read: u64,
}

impl<R: Read> LimitedReader<R> {
    /// Limits `inner` to `limit` bytes; `what` names the measured thing in the error
    /// (e.g. `artifact-bytes`).
    pub fn new(inner: R, what: &'static str, limit: u64) -> Self {
        LimitedReader {
            inner,
            what,
            limit,
            read: 0,
        }
    }

    /// Bytes returned so far.
    pub fn bytes_read(&self) -> u64 {
        self.read
    }

    /// The limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The inner reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The inner reader, mutably. Reading from it directly bypasses the limit.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The inner reader.
    pub fn into_inner(self) -> R {
        self.inner
    }

    fn too_large(&self) -> io::Error {
        LimitError {
            what: self.what,
            limit: self.limit,
            seen: self.limit.saturating_add(1),
        }
        .into_io()
    }
}

impl<R: Read> Read for LimitedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let left = self.limit.saturating_sub(self.read);
        if left == 0 {
            // At the limit: the input must end here.
            let mut probe = [0u8; 1];
            loop {
                match self.inner.read(&mut probe) {
                    Ok(0) => return Ok(0),
                    Ok(_) => return Err(self.too_large()),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            }
        }
        let max = usize::try_from(left).map_or(buf.len(), |l| l.min(buf.len()));
        let n = self.inner.read(&mut buf[..max])?;
        self.read = self.read.saturating_add(n as u64);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limited_reader_returns_too_large_instead_of_truncating() {
        let data = vec![7u8; 11];
        let mut r = LimitedReader::new(data.as_slice(), "test-bytes", 10);
        let mut out = Vec::new();
        let err = r.read_to_end(&mut out).unwrap_err();
        let le = LimitError::from_io(&err).expect("a LimitError inside");
        assert_eq!((le.what, le.limit, le.seen), ("test-bytes", 10, 11));
        assert_eq!(
            err.to_string(),
            "test-bytes: too large (limit.test-bytes): limit 10, seen 11"
        );
        // By contrast, `take` would have returned 10 bytes and Ok.
        assert_eq!(out.len(), 10);
    }

    #[test]
    fn limited_reader_accepts_input_of_exactly_the_limit() {
        let data = vec![1u8; 10];
        let mut r = LimitedReader::new(data.as_slice(), "test-bytes", 10);
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, data);
        assert_eq!(r.bytes_read(), 10);
    }

    #[test]
    fn limited_reader_with_zero_limit_accepts_only_empty_input() {
        let mut empty = LimitedReader::new(&b""[..], "x", 0);
        assert_eq!(empty.read(&mut [0u8; 4]).unwrap(), 0);
        let mut one = LimitedReader::new(&b"a"[..], "x", 0);
        assert!(LimitError::from_io(&one.read(&mut [0u8; 4]).unwrap_err()).is_some());
    }

    #[test]
    fn from_io_ignores_other_errors() {
        let e = io::Error::other("boom");
        assert!(LimitError::from_io(&e).is_none());
    }

    #[test]
    fn max_disk_bytes_is_optional_defaulted_and_omitted_at_its_default() {
        let d = JobLimits::default();
        let json = serde_json::to_string(&d).unwrap();
        assert!(!json.contains("max_disk_bytes"), "{json}");
        assert!(!json.contains("max_memory_bytes"), "{json}");
        let back: JobLimits = serde_json::from_str(&json).unwrap();
        assert_eq!(back.max_disk_bytes, DEFAULT_MAX_DISK_BYTES);
        assert_eq!(back.max_memory_bytes, DEFAULT_MAX_MEMORY_BYTES);
        let json = serde_json::to_string(&JobLimits {
            max_memory_bytes: 1 << 30,
            ..JobLimits::default()
        })
        .unwrap();
        assert!(json.contains("\"max_memory_bytes\":1073741824"), "{json}");
        let small = JobLimits {
            max_disk_bytes: 1 << 20,
            ..JobLimits::default()
        };
        let json = serde_json::to_string(&small).unwrap();
        assert!(json.contains("\"max_disk_bytes\":1048576"), "{json}");
        assert_eq!(serde_json::from_str::<JobLimits>(&json).unwrap(), small);
    }

    #[test]
    fn presets_are_ordered_and_stream_cap_covers_content() {
        for l in [TarLimits::bundle(), TarLimits::artifact()] {
            assert!(l.max_entry_bytes <= l.max_total_bytes);
            assert!(l.max_stream_bytes() > l.max_total_bytes);
            assert!(l.max_compression_ratio >= 2);
        }
        assert!(TarLimits::artifact().max_entries < TarLimits::bundle().max_entries);
    }
}
