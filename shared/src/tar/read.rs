//! Reads and unpacks a tar.gz from an untrusted source (an artifact from the worker, or a
//! bundle on the worker: verified, but still parsed defensively).
//!
//! Guards against: traversal, absolute paths, links (symbolic, hard, pax `linkpath`, GNU long
//! link, a link field on a file), devices, FIFOs, sparse files, unknown entry types and pax
//! keys, setuid/setgid/sticky modes, duplicate, colliding or unlisted members, too many or too
//! large members, gzip bombs (ratio measured against compressed bytes consumed), trailing
//! data after the end-of-archive blocks or after the gzip stream (including a concatenated
//! gzip member), truncation anywhere. Every header is checked before its body is read.
//! On `Ok` from [`read_members`]: every member was a regular file or directory with an allowed,
//! checked, unique name, within limits, each body exactly its declared size, the gzip CRC
//! matched and nothing followed. On `Ok` from [`unpack_into`]: additionally every member is a
//! regular file (mode 0644/0755) or directory (0755) inside the new `dest` (0700), and nothing
//! else was created. On `Err`, [`unpack_into`] has removed `dest` entirely.
//! Does not check: signatures or digests (verify before calling), member content, and that
//! required members are present (the caller checks [`ReadSummary::members`]).

use std::collections::HashSet;
use std::fs::{self, DirBuilder, OpenOptions, Permissions};
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use flate2::bufread::GzDecoder;

use super::names::NameSet;
use super::{TarError, TarRule};
use crate::limits::{
    LimitError, LimitedReader, TarLimits, MAX_TAR_PADDING_BYTES, RATIO_GRACE_BYTES,
};
use crate::paths::{check_relative_path, display_cut};

/// The members an artifact may hold (DESIGN: exactly these; `packet.json` and `patch.diff`
/// are required, which the caller checks).
pub const ARTIFACT_MEMBERS: [&str; 5] = [
    "packet.json",
    "patch.diff",
    "review.md",
    "generator.log",
    "comments.jsonl",
];

/// Regular files allowed at the top of a bundle.
pub const BUNDLE_TOP_FILES: [&str; 2] = ["manifest.json", "request.json"];

/// The directory of a bundle holding the redacted tree; anything below it is allowed.
pub const BUNDLE_FILES_DIR: &str = "files";

const BLOCK: u64 = 512;
const WHAT_COMPRESSED: &str = "tar-compressed-bytes";
const WHAT_STREAM: &str = "tar-stream-bytes";
const WHAT_RATIO: &str = "compression-ratio";
const WHAT_MEMBER: &str = "member-bytes";
const WHAT_EXTENSION: &str = "extension-header-bytes";

/// Which member names an archive may hold (`tar.unlisted-member` otherwise).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedNames {
    /// Exactly these regular files at the top level, no directories (an artifact).
    Exact(Vec<String>),
    /// `manifest.json`, `request.json`, the `files` directory and anything below `files/`.
    Bundle,
}

impl AllowedNames {
    /// The artifact's members: [`ARTIFACT_MEMBERS`].
    pub fn artifact() -> Self {
        AllowedNames::exact(ARTIFACT_MEMBERS)
    }

    /// Exactly these regular files.
    pub fn exact<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        AllowedNames::Exact(names.into_iter().map(Into::into).collect())
    }

    /// Whether a member `path` (without trailing `/`) of `kind` is allowed.
    pub fn allows(&self, path: &str, kind: MemberKind) -> bool {
        match self {
            AllowedNames::Exact(names) => {
                kind == MemberKind::File && names.iter().any(|n| n == path)
            }
            AllowedNames::Bundle => {
                let below_files = path
                    .strip_prefix(BUNDLE_FILES_DIR)
                    .is_some_and(|rest| rest.starts_with('/'));
                match kind {
                    MemberKind::File => BUNDLE_TOP_FILES.contains(&path) || below_files,
                    MemberKind::Dir => path == BUNDLE_FILES_DIR || below_files,
                }
            }
        }
    }
}

/// What a member is (nothing else is ever accepted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
}

/// A member that passed every header check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Relative path, checked by [`check_relative_path`], without trailing `/`.
    pub path: String,
    /// Content bytes (0 for directories).
    pub size: u64,
    /// Whether the header mode had an execute bit (files only; directories say `false`).
    pub executable: bool,
    /// File or directory.
    pub kind: MemberKind,
}

/// What [`read_members`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadSummary {
    /// Every member in archive order.
    pub members: Vec<Member>,
    /// Sum of member sizes.
    pub total_bytes: u64,
    /// Bytes of the decompressed tar stream (headers, padding, end blocks included).
    pub tar_bytes: u64,
    /// Bytes of the gzip stream.
    pub compressed_bytes: u64,
}

/// What [`unpack_into`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnpackSummary {
    /// The destination, created by this call.
    pub dest: PathBuf,
    /// Regular files written.
    pub files: u64,
    /// Directories created below `dest` (explicit members and implicit parents).
    pub dirs: u64,
    /// What the reader saw.
    pub read: ReadSummary,
}

/// Streams a tar.gz, checks every header before its body, and hands each member with a
/// reader over exactly its content to `visit`.
///
/// The visitor may read all, part or none of the body; the rest is read and discarded (and
/// still counted against the limits). A read error inside the visitor is reported with its
/// own rule (`tar.ratio`, `tar.truncated`...) even if the visitor turned it into another error.
///
/// Errors carry the label [`super::DEFAULT_LABEL`]; name the archive with
/// [`TarError::with_label`].
///
/// ```
/// use airlock_core::limits::TarLimits;
/// use airlock_core::tar::{read_members, AllowedNames, DeterministicTarWriter};
/// let mut w = DeterministicTarWriter::new(Vec::new());
/// w.append_file("packet.json", false, 2, &b"{}"[..]).unwrap();
/// let tgz = w.finish().unwrap();
/// let mut names = Vec::new();
/// let summary = read_members(&tgz[..], &TarLimits::artifact(), &AllowedNames::artifact(), |m, r| {
///     let mut body = String::new();
///     r.read_to_string(&mut body)?;
///     names.push((m.path.clone(), body));
///     Ok(())
/// }).unwrap();
/// assert_eq!(names, [("packet.json".to_owned(), "{}".to_owned())]);
/// assert_eq!(summary.total_bytes, 2);
/// ```
pub fn read_members<R: Read>(
    tar_gz: R,
    limits: &TarLimits,
    allowed: &AllowedNames,
    mut visit: impl FnMut(&Member, &mut dyn Read) -> Result<(), TarError>,
) -> Result<ReadSummary, TarError> {
    let cap = limits.max_stream_bytes();
    let mut stream = Stream::new(tar_gz, cap, limits.max_compression_ratio);
    let mut walk = Walk {
        limits,
        allowed,
        names: NameSet::new(),
        members: Vec::new(),
        total: 0,
        data_end: 0,
    };
    let walked = {
        let mut archive = tar::Archive::new(&mut stream);
        walk.run(&mut archive, &mut visit)
    };
    if let Err(raw) = walked {
        return Err(match raw {
            Raw::Tar(e) => e,
            Raw::Io { err, member } => stream.classify(&err, member.as_deref()),
        });
    }
    stream.check_end(walk.data_end)?;
    Ok(ReadSummary {
        members: walk.members,
        total_bytes: walk.total,
        tar_bytes: stream.out,
        compressed_bytes: stream.compressed_consumed(),
    })
}

/// Unpacks a tar.gz into `dest`, which must not exist; it is created with mode 0700.
///
/// Directories are created one level at a time (mode 0755, never following a link: each is
/// made by this call inside a directory made by this call), files with `create_new` and mode
/// 0644 or 0755 set on the open handle; no setuid, setgid or sticky bit, no owner or time from
/// the archive. On any error `dest` is removed entirely (if that fails too, the error is
/// [`TarError::Cleanup`] and names `dest`).
pub fn unpack_into<R: Read>(
    tar_gz: R,
    dest: &Path,
    limits: &TarLimits,
    allowed: &AllowedNames,
) -> Result<UnpackSummary, TarError> {
    if let Err(e) = DirBuilder::new().mode(0o700).create(dest) {
        return Err(if e.kind() == io::ErrorKind::AlreadyExists {
            TarError::archive(
                TarRule::DestExists,
                format!("destination {} already exists", dest.display()),
            )
        } else {
            TarError::io(None, format!("create destination {}", dest.display()), e)
        });
    }
    let mut unpacker = Unpacker {
        dest,
        created: HashSet::new(),
        files: 0,
        dirs: 0,
    };
    let result = fs::set_permissions(dest, Permissions::from_mode(0o700))
        .map_err(|e| TarError::io(None, format!("chmod destination {}", dest.display()), e))
        .and_then(|()| read_members(tar_gz, limits, allowed, |m, r| unpacker.write(m, r)));
    match result {
        Ok(read) => Ok(UnpackSummary {
            dest: dest.to_owned(),
            files: unpacker.files,
            dirs: unpacker.dirs,
            read,
        }),
        Err(e) => match fs::remove_dir_all(dest) {
            Ok(()) => Err(e),
            Err(source) => Err(TarError::Cleanup {
                dest: dest.to_owned(),
                source,
                cause: Box::new(e),
            }),
        },
    }
}

/// Writes members below a destination made by this unpack.
struct Unpacker<'a> {
    dest: &'a Path,
    /// Relative directories this unpack created (bounded by members x depth).
    created: HashSet<String>,
    files: u64,
    dirs: u64,
}

impl Unpacker<'_> {
    fn write(&mut self, m: &Member, body: &mut dyn Read) -> Result<(), TarError> {
        for (i, _) in m.path.match_indices('/') {
            self.ensure_dir(&m.path[..i], &m.path)?;
        }
        match m.kind {
            MemberKind::Dir => self.ensure_dir(&m.path, &m.path),
            MemberKind::File => {
                let target = self.dest.join(&m.path);
                let mode = if m.executable { 0o755 } else { 0o644 };
                // `create_new` (O_CREAT | O_EXCL) never follows a link at the last component;
                // every parent was created by this unpack.
                let mut file = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(mode)
                    .open(&target)
                    .map_err(|e| self.open_error(&m.path, e))?;
                io::copy(body, &mut file)
                    .map_err(|e| TarError::io(Some(&m.path), "write file", e))?;
                file.set_permissions(Permissions::from_mode(mode))
                    .map_err(|e| TarError::io(Some(&m.path), "chmod file", e))?;
                self.files += 1;
                Ok(())
            }
        }
    }

    fn ensure_dir(&mut self, rel: &str, member: &str) -> Result<(), TarError> {
        if self.created.contains(rel) {
            return Ok(());
        }
        let dir = self.dest.join(rel);
        DirBuilder::new()
            .mode(0o755)
            .create(&dir)
            .map_err(|e| self.open_error(member, e))?;
        // Explicit: neither the umask nor a setgid parent decides the mode.
        fs::set_permissions(&dir, Permissions::from_mode(0o755))
            .map_err(|e| TarError::io(Some(member), "chmod directory", e))?;
        self.created.insert(rel.to_owned());
        self.dirs += 1;
        Ok(())
    }

    fn open_error(&self, member: &str, e: io::Error) -> TarError {
        if e.kind() == io::ErrorKind::AlreadyExists {
            // The name checks make this unreachable on a case-sensitive file system; on a
            // folding one it is the collision the checks exist for.
            TarError::member_rejected(
                member,
                TarRule::Collision,
                "the path already exists in the destination",
            )
        } else {
            TarError::io(Some(member), "create", e)
        }
    }
}

/// An error inside the walk, before we can look at the stream again to classify it.
enum Raw {
    Tar(TarError),
    Io {
        err: io::Error,
        member: Option<String>,
    },
}

impl From<TarError> for Raw {
    fn from(e: TarError) -> Self {
        Raw::Tar(e)
    }
}

/// The first failure of the decompressed stream, kept so that it is reported with its rule
/// however the `tar` crate or a visitor passed it on, and so that the stream stays failed.
#[derive(Debug, Clone)]
enum Failure {
    Limit {
        what: &'static str,
        limit: u64,
        seen: u64,
    },
    Gzip {
        kind: io::ErrorKind,
        message: String,
    },
}

impl Failure {
    fn to_io(&self) -> io::Error {
        match self {
            Failure::Limit { what, limit, seen } => LimitError {
                what,
                limit: *limit,
                seen: *seen,
            }
            .into_io(),
            Failure::Gzip { kind, message } => io::Error::new(*kind, message.clone()),
        }
    }
}

/// Decompressed bytes decoded ahead of the `tar` crate's reads. Its reads are small (a
/// 512-byte header, a visitor's buffer, a 32-byte end-of-file probe), and each decoder call
/// has a fixed cost (and checksums under 64 bytes take a slow path), so the decoder fills
/// this instead; the limits are still checked on every decoded byte.
const DECODED_BUFFER_BYTES: usize = 32 * 1024;

/// The gzip decoder plus the checks on its output: stream cap, compression ratio, EOF.
struct Stream<R: Read> {
    gz: GzDecoder<BufReader<LimitedReader<R>>>,
    /// Decompressed bytes handed out (the `tar` crate reads exactly what it needs, so this is
    /// its position in the tar stream).
    out: u64,
    /// Decompressed bytes out of the decoder (`out` plus what is still buffered): what the
    /// stream cap and the compression ratio are checked against.
    produced: u64,
    cap: u64,
    ratio: u64,
    eof: bool,
    failure: Option<Failure>,
    /// Decoded bytes not yet handed out: `decoded[start..end]`.
    decoded: Box<[u8]>,
    start: usize,
    end: usize,
    /// The stream cap, when the decoder's last output crossed it: reported once the bytes
    /// before it (those still buffered) are handed out, so that the `tar` crate meets it at the
    /// same stream position (and so in the same member) as without the buffer.
    pending: Option<Failure>,
}

impl<R: Read> Stream<R> {
    /// A decoder of the gzip stream `tar_gz` that hands out at most `cap` bytes and refuses
    /// more than `ratio` decoded bytes per compressed byte (after [`RATIO_GRACE_BYTES`]).
    fn new(tar_gz: R, cap: u64, ratio: u64) -> Stream<R> {
        let compressed =
            LimitedReader::new(tar_gz, WHAT_COMPRESSED, cap.saturating_add(1024 * 1024));
        Stream {
            gz: GzDecoder::new(BufReader::with_capacity(64 * 1024, compressed)),
            out: 0,
            produced: 0,
            cap,
            ratio,
            eof: false,
            failure: None,
            decoded: vec![0u8; DECODED_BUFFER_BYTES].into_boxed_slice(),
            start: 0,
            end: 0,
            pending: None,
        }
    }

    /// Compressed bytes the decoder has actually consumed (read minus still buffered).
    fn compressed_consumed(&self) -> u64 {
        let buffered = self.gz.get_ref();
        buffered
            .get_ref()
            .bytes_read()
            .saturating_sub(buffered.buffer().len() as u64)
    }

    fn fail(&mut self, f: Failure) -> io::Error {
        let e = f.to_io();
        self.failure.get_or_insert(f);
        e
    }

    /// Turns an I/O error seen while walking into a rule.
    fn classify(&self, err: &io::Error, member: Option<&str>) -> TarError {
        let limit = match &self.failure {
            Some(Failure::Limit { what, limit, seen }) => Some((*what, *limit, *seen)),
            _ => LimitError::from_io(err).map(|l| (l.what, l.limit, l.seen)),
        };
        if let Some((what, limit, seen)) = limit {
            let rule = match what {
                WHAT_RATIO => TarRule::Ratio,
                WHAT_MEMBER => TarRule::EntryTooLarge,
                WHAT_EXTENSION => TarRule::Header,
                _ => TarRule::TotalTooLarge,
            };
            return TarError::too_large(member, rule, limit, seen);
        }
        if let Some(Failure::Gzip { kind, message }) = &self.failure {
            return if *kind == io::ErrorKind::UnexpectedEof {
                TarError::archive(
                    TarRule::Truncated,
                    format!("the gzip stream ends early: {message}"),
                )
            } else {
                TarError::archive(TarRule::Gzip, format!("not a valid gzip stream: {message}"))
            };
        }
        let where_ = member.map_or_else(String::new, |m| format!(" (in or after member {m:?})"));
        if self.eof {
            TarError::archive(
                TarRule::Truncated,
                format!("the tar stream ends early{where_}: {err}"),
            )
        } else {
            TarError::archive(
                TarRule::Header,
                format!("malformed tar stream{where_}: {err}"),
            )
        }
    }

    /// After the `tar` crate saw the first end-of-archive block: the second block must
    /// follow, then only zero padding, then the end of the gzip member, then nothing.
    fn check_end(&mut self, data_end: u64) -> Result<(), TarError> {
        if self.out == data_end {
            return Err(TarError::archive(
                TarRule::Truncated,
                "the end-of-archive blocks are missing",
            ));
        }
        if self.out != data_end.saturating_add(BLOCK) {
            return Err(TarError::archive(
                TarRule::Header,
                format!(
                    "the tar stream stopped at byte {} where a header was expected at {data_end}",
                    self.out
                ),
            ));
        }
        let mut zeros = 0u64;
        let mut buf = [0u8; 8192];
        loop {
            let n = match self.read(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.classify(&e, None)),
            };
            if n == 0 {
                break;
            }
            if buf[..n].iter().any(|&b| b != 0) {
                return Err(TarError::archive(
                    TarRule::TrailingData,
                    "non-zero bytes follow the end-of-archive marker",
                ));
            }
            zeros += n as u64;
            if zeros > MAX_TAR_PADDING_BYTES {
                return Err(TarError::archive(
                    TarRule::TrailingData,
                    format!(
                        "more than {MAX_TAR_PADDING_BYTES} bytes of padding follow the end-of-archive marker"
                    ),
                ));
            }
        }
        if zeros < BLOCK {
            return Err(TarError::archive(
                TarRule::Truncated,
                "the second end-of-archive block is missing",
            ));
        }
        // The decoder has verified the gzip trailer (CRC and length); nothing may follow it.
        let rest = match self.gz.get_mut().fill_buf() {
            Ok(rest) => rest,
            Err(e) => return Err(self.classify(&e, None)),
        };
        if !rest.is_empty() {
            let reason = if rest.starts_with(&[0x1f, 0x8b]) {
                "a second gzip member follows the first (concatenated gzip)"
            } else {
                "bytes follow the end of the gzip stream"
            };
            return Err(TarError::archive(TarRule::TrailingData, reason));
        }
        Ok(())
    }
}

impl<R: Read> Read for Stream<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(f) = &self.failure {
            return Err(f.to_io());
        }
        if buf.is_empty() {
            return Ok(0);
        }
        if self.start == self.end {
            if let Some(f) = self.pending.take() {
                return Err(self.fail(f));
            }
            if buf.len() >= self.decoded.len() {
                // A read as large as the buffer is decoded straight into the caller's buffer.
                let n = self.decode(Target::Caller(buf))?;
                return self.hand_out(n);
            }
            self.end = self.decode(Target::Buffer)?;
            self.start = 0;
            if self.end == 0 {
                return self.hand_out(0);
            }
        }
        let n = buf.len().min(self.end - self.start);
        buf[..n].copy_from_slice(&self.decoded[self.start..self.start + n]);
        self.start += n;
        self.hand_out(n)
    }
}

/// Where [`Stream::decode`] puts its output.
enum Target<'a> {
    /// The stream's own buffer (`decoded`, empty when called).
    Buffer,
    /// The caller's buffer, at least as large as the stream's.
    Caller(&'a mut [u8]),
}

impl<R: Read> Stream<R> {
    /// Counts `n` bytes handed out; none handed out is the end of the stream, or the limit
    /// the decoder's last output crossed.
    fn hand_out(&mut self, n: usize) -> io::Result<usize> {
        if n == 0 {
            if let Some(f) = self.pending.take() {
                return Err(self.fail(f));
            }
        }
        self.out = self.out.saturating_add(n as u64);
        Ok(n)
    }

    /// One call of the decoder, with the checks on what it produced: returns how many bytes
    /// may be handed out. Crossing the stream cap is left in `pending` (the bytes up to the cap
    /// are returned); a compression ratio over the limit or a decoder error fails the stream.
    fn decode(&mut self, target: Target<'_>) -> io::Result<usize> {
        let buf: &mut [u8] = match target {
            Target::Buffer => &mut self.decoded,
            Target::Caller(b) => b,
        };
        let n = match self.gz.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Err(e),
            Err(e) => {
                let f = match LimitError::from_io(&e) {
                    Some(l) => Failure::Limit {
                        what: l.what,
                        limit: l.limit,
                        seen: l.seen,
                    },
                    None => Failure::Gzip {
                        kind: e.kind(),
                        message: e.to_string(),
                    },
                };
                return Err(self.fail(f));
            }
        };
        if n == 0 {
            self.eof = true;
        }
        let before = self.produced;
        self.produced = self.produced.saturating_add(n as u64);
        if self.produced > self.cap {
            self.pending = Some(Failure::Limit {
                what: WHAT_STREAM,
                limit: self.cap,
                seen: self.produced,
            });
            // Only the bytes up to the cap are handed out.
            return Ok(usize::try_from(self.cap.saturating_sub(before)).map_or(n, |ok| ok.min(n)));
        }
        if self.produced > RATIO_GRACE_BYTES {
            let consumed = self.compressed_consumed().max(1);
            if self.produced > self.ratio.saturating_mul(consumed) {
                // A bomb is refused as soon as it shows (the decoded bytes are dropped).
                let f = Failure::Limit {
                    what: WHAT_RATIO,
                    limit: self.ratio,
                    seen: self.produced / consumed,
                };
                return Err(self.fail(f));
            }
        }
        Ok(n)
    }
}

/// The body reader handed to a visitor; remembers its first error so that the walk reports
/// it with its rule whatever the visitor turned it into.
struct MemberReader<R> {
    inner: LimitedReader<R>,
    failed: Option<io::Error>,
}

impl<R: Read> Read for MemberReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Err(e) if e.kind() != io::ErrorKind::Interrupted => {
                if self.failed.is_none() {
                    self.failed = Some(match LimitError::from_io(&e) {
                        Some(l) => LimitError {
                            what: l.what,
                            limit: l.limit,
                            seen: l.seen,
                        }
                        .into_io(),
                        None => io::Error::new(e.kind(), e.to_string()),
                    });
                }
                Err(e)
            }
            r => r,
        }
    }
}

/// Pax records we accept; all are ignored except `path` (we never apply owners or times).
const PAX_IGNORED_KEYS: [&str; 7] = ["mtime", "atime", "ctime", "uid", "gid", "uname", "gname"];

/// Parses a pax extended header strictly: `"<len> <key>=<value>\n"` records filling the body.
/// Returns the `path` value, if any.
fn parse_pax(mut data: &[u8]) -> Result<Option<Vec<u8>>, (TarRule, String)> {
    let bad = |why: &str| (TarRule::Pax, format!("malformed pax header: {why}"));
    let mut path = None;
    while !data.is_empty() {
        let sp = data
            .iter()
            .take(20)
            .position(|&b| b == b' ')
            .ok_or_else(|| bad("record length"))?;
        let digits = &data[..sp];
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return Err(bad("record length"));
        }
        let len: usize = std::str::from_utf8(digits)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("record length"))?;
        if len < sp + 3 || len > data.len() || data[len - 1] != b'\n' {
            return Err(bad("record length"));
        }
        let record = &data[sp + 1..len - 1];
        data = &data[len..];
        let eq = record
            .iter()
            .position(|&b| b == b'=')
            .ok_or_else(|| bad("record without `=`"))?;
        let (key, value) = (&record[..eq], &record[eq + 1..]);
        let key = std::str::from_utf8(key).map_err(|_| bad("key is not UTF-8"))?;
        match key {
            "path" => {
                if path.replace(value.to_vec()).is_some() {
                    return Err(bad("two `path` records"));
                }
            }
            "linkpath" => {
                return Err((
                    TarRule::Link,
                    "pax `linkpath` record (a link target)".to_owned(),
                ))
            }
            "size" => {
                return Err((
                    TarRule::Pax,
                    "pax `size` record overriding the header size".to_owned(),
                ))
            }
            k if k.starts_with("GNU.sparse.") => {
                return Err((TarRule::Sparse, format!("pax sparse-file record {k:?}")))
            }
            k if PAX_IGNORED_KEYS.contains(&k) => {}
            k => {
                return Err((
                    TarRule::Pax,
                    format!("unsupported pax key {:?}", display_cut(k)),
                ))
            }
        }
    }
    Ok(path)
}

fn round_up(n: u64) -> u64 {
    n.saturating_add(BLOCK - 1) / BLOCK * BLOCK
}

/// `tar.nul-padding`: "A name, link name or prefix field that ends before its last byte MUST
/// end with a NUL followed only by NULs." Readers that stop at the first NUL and readers that
/// do not would otherwise see two names in one field. Returns the broken field's name.
fn nul_padding_broken(header: &tar::Header) -> Option<&'static str> {
    let old = header.as_old();
    let mut fields: Vec<(&'static str, &[u8])> =
        vec![("name", &old.name[..]), ("link name", &old.linkname[..])];
    // Only ustar has a prefix; GNU keeps access/change times and offsets in those bytes.
    if let Some(ustar) = header.as_ustar() {
        fields.push(("prefix", &ustar.prefix[..]));
    }
    fields.into_iter().find_map(|(what, bytes)| {
        let end = bytes.iter().position(|&b| b == 0)?;
        bytes[end..].iter().any(|&b| b != 0).then_some(what)
    })
}

/// The state of one walk over the raw entries.
struct Walk<'a> {
    limits: &'a TarLimits,
    allowed: &'a AllowedNames,
    names: NameSet,
    members: Vec<Member>,
    total: u64,
    /// Where the next header must start (end of the last body, rounded to a block).
    data_end: u64,
}

impl Walk<'_> {
    fn run<S: Read>(
        &mut self,
        archive: &mut tar::Archive<S>,
        visit: &mut dyn FnMut(&Member, &mut dyn Read) -> Result<(), TarError>,
    ) -> Result<(), Raw> {
        // Raw mode: we see GNU long-name and pax headers ourselves, bound them, and apply no
        // pax `size` override or sparse map the `tar` crate would otherwise apply.
        let entries = archive
            .entries()
            .map_err(|err| Raw::Io { err, member: None })?
            .raw(true);
        let mut long_name: Option<Vec<u8>> = None;
        let mut pax_seen = false;
        let mut pax_path: Option<Vec<u8>> = None;
        for entry in entries {
            let mut entry = entry.map_err(|err| Raw::Io { err, member: None })?;
            let size = entry.size();
            self.data_end = entry.raw_file_position().saturating_add(round_up(size));
            let header = entry.header().clone();
            let header_name = String::from_utf8_lossy(&header.path_bytes()).into_owned();
            let reject = |rule: TarRule, reason: &str| {
                Raw::Tar(TarError::member_rejected(&header_name, rule, reason))
            };
            if header.as_ustar().is_none() && header.as_gnu().is_none() {
                return Err(reject(TarRule::Header, "not a ustar or GNU tar header"));
            }
            if let Some(field) = nul_padding_broken(&header) {
                return Err(reject(
                    TarRule::NulPadding,
                    &format!("bytes after the NUL that ends the {field} field"),
                ));
            }
            let flag = header.as_old().linkflag[0];
            match flag {
                b'L' => {
                    if long_name.is_some() {
                        return Err(reject(
                            TarRule::Header,
                            "two GNU long-name headers in a row",
                        ));
                    }
                    let max = self.limits.max_path_bytes as u64;
                    if size > max.saturating_add(1) {
                        return Err(TarError::too_large(
                            Some(&header_name),
                            TarRule::Path(crate::paths::PathRule::TooLong),
                            max,
                            size.saturating_sub(1),
                        )
                        .into());
                    }
                    let mut name = read_extension(&mut entry, size, &header_name)?;
                    // GNU writes the name and one NUL; any other NUL is caught by the path rules.
                    if name.last() == Some(&0) {
                        name.pop();
                    }
                    long_name = Some(name);
                    continue;
                }
                b'x' => {
                    if pax_seen {
                        return Err(reject(TarRule::Header, "two pax headers in a row"));
                    }
                    let max = self.limits.max_extension_bytes();
                    if size > max {
                        return Err(TarError::too_large(
                            Some(&header_name),
                            TarRule::Pax,
                            max,
                            size,
                        )
                        .into());
                    }
                    let body = read_extension(&mut entry, size, &header_name)?;
                    pax_path = parse_pax(&body).map_err(|(rule, why)| reject(rule, &why))?;
                    pax_seen = true;
                    continue;
                }
                b'K' => {
                    return Err(reject(
                        TarRule::Link,
                        "GNU long link-name header (a link target)",
                    ))
                }
                b'g' => return Err(reject(TarRule::EntryType, "pax global header")),
                _ => {}
            }

            // A real member: every check below happens before its body is read.
            let count = (self.members.len() as u64).saturating_add(1);
            if count > self.limits.max_entries {
                return Err(TarError::too_large(
                    Some(&header_name),
                    TarRule::TooManyEntries,
                    self.limits.max_entries,
                    count,
                )
                .into());
            }
            let name_bytes = match (long_name.take(), pax_path.take()) {
                (Some(_), Some(_)) => {
                    return Err(reject(
                        TarRule::Header,
                        "both a GNU long name and a pax path describe this member",
                    ))
                }
                (Some(n), None) | (None, Some(n)) => n,
                (None, None) => header.path_bytes().into_owned(),
            };
            pax_seen = false;
            let name = String::from_utf8(name_bytes).map_err(|e| {
                Raw::Tar(TarError::member_rejected(
                    &String::from_utf8_lossy(e.as_bytes()),
                    TarRule::NonUtf8,
                    "member name is not valid UTF-8",
                ))
            })?;
            let member_reject = |rule: TarRule, reason: &str| {
                Raw::Tar(TarError::member_rejected(&name, rule, reason))
            };
            let kind = match flag {
                b'0' => MemberKind::File,
                b'5' => MemberKind::Dir,
                b'1' => return Err(member_reject(TarRule::Hardlink, "hard link")),
                b'2' => return Err(member_reject(TarRule::Link, "symbolic link")),
                b'3' => return Err(member_reject(TarRule::Device, "character device")),
                b'4' => return Err(member_reject(TarRule::Device, "block device")),
                b'6' => return Err(member_reject(TarRule::Fifo, "FIFO")),
                b'S' => return Err(member_reject(TarRule::Sparse, "GNU sparse file")),
                b'7' => return Err(member_reject(TarRule::EntryType, "contiguous file")),
                b'\0' => {
                    return Err(member_reject(
                        TarRule::EntryType,
                        "pre-POSIX entry type NUL",
                    ))
                }
                b => {
                    return Err(member_reject(
                        TarRule::EntryType,
                        &format!("unsupported entry type {:?}", char::from(b)),
                    ))
                }
            };
            if header.link_name_bytes().is_some() {
                return Err(member_reject(
                    TarRule::Link,
                    "a file or directory header carries a link target",
                ));
            }
            let path = match kind {
                MemberKind::Dir => name.strip_suffix('/').unwrap_or(&name),
                MemberKind::File => &name,
            };
            check_relative_path(path, self.limits.max_path_bytes, self.limits.max_depth)
                .map_err(|e| Raw::Tar(TarError::from_path(&name, &e)))?;
            let mode = header
                .mode()
                .map_err(|_| member_reject(TarRule::Header, "invalid mode field"))?;
            if mode & 0o7000 != 0 {
                return Err(member_reject(
                    TarRule::Mode,
                    &format!("mode {mode:o} has a setuid, setgid or sticky bit"),
                ));
            }
            if kind == MemberKind::Dir && size != 0 {
                return Err(member_reject(TarRule::Header, "a directory with content"));
            }
            if !self.allowed.allows(path, kind) {
                return Err(member_reject(
                    TarRule::UnlistedMember,
                    match kind {
                        MemberKind::File => "not an allowed member of this archive",
                        MemberKind::Dir => "not an allowed directory in this archive",
                    },
                ));
            }
            if size > self.limits.max_entry_bytes {
                return Err(TarError::too_large(
                    Some(path),
                    TarRule::EntryTooLarge,
                    self.limits.max_entry_bytes,
                    size,
                )
                .into());
            }
            let total = self.total.saturating_add(size);
            if total > self.limits.max_total_bytes {
                return Err(TarError::too_large(
                    Some(path),
                    TarRule::TotalTooLarge,
                    self.limits.max_total_bytes,
                    total,
                )
                .into());
            }
            self.names
                .insert(path, kind == MemberKind::Dir)
                .map_err(|(rule, why)| member_reject(rule, &why))?;
            let member = Member {
                path: path.to_owned(),
                size,
                executable: kind == MemberKind::File && mode & 0o111 != 0,
                kind,
            };

            let mut body = MemberReader {
                inner: LimitedReader::new(&mut entry, WHAT_MEMBER, size),
                failed: None,
            };
            let visited = visit(&member, &mut body);
            let drained = visited.and_then(|()| {
                io::copy(&mut body, &mut io::sink())
                    .map(drop)
                    .map_err(|e| TarError::io(Some(path), "read member", e))
            });
            if let Some(err) = body.failed.take() {
                return Err(Raw::Io {
                    err,
                    member: Some(member.path),
                });
            }
            drained?;
            let got = body.inner.bytes_read();
            if got != size {
                return Err(Raw::Tar(TarError::member_rejected(
                    path,
                    TarRule::Truncated,
                    format!("the archive ends inside this member: {got} of {size} bytes"),
                )));
            }
            self.total = total;
            self.members.push(member);
        }
        if long_name.is_some() || pax_seen {
            return Err(Raw::Tar(TarError::archive(
                TarRule::Truncated,
                "the archive ends after a long-name or pax header that describes no member",
            )));
        }
        Ok(())
    }
}

/// Reads a (bounded) GNU long-name or pax header body.
fn read_extension<S: Read>(
    entry: &mut tar::Entry<'_, S>,
    size: u64,
    header_name: &str,
) -> Result<Vec<u8>, Raw> {
    let mut body = Vec::new();
    LimitedReader::new(entry, WHAT_EXTENSION, size)
        .read_to_end(&mut body)
        .map_err(|err| Raw::Io {
            err,
            member: Some(header_name.to_owned()),
        })?;
    if body.len() as u64 != size {
        return Err(Raw::Tar(TarError::member_rejected(
            header_name,
            TarRule::Truncated,
            "the archive ends inside an extension header",
        )));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_names_artifact_and_bundle() {
        let a = AllowedNames::artifact();
        assert!(a.allows("packet.json", MemberKind::File));
        assert!(!a.allows("packet.json", MemberKind::Dir));
        assert!(!a.allows("Packet.json", MemberKind::File));
        assert!(!a.allows("files/x", MemberKind::File));
        let b = AllowedNames::Bundle;
        assert!(b.allows("manifest.json", MemberKind::File));
        assert!(b.allows("files", MemberKind::Dir));
        assert!(b.allows("files/a/b", MemberKind::File));
        assert!(!b.allows("files", MemberKind::File));
        assert!(!b.allows("filesx/a", MemberKind::File));
        assert!(!b.allows("other.json", MemberKind::File));
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap()
    }

    /// Reads `stream` to its end or first error with reads of the given sizes, in turn.
    fn read_in_steps<R: Read>(
        stream: &mut Stream<R>,
        steps: &[usize],
    ) -> (Vec<u8>, Option<io::Error>) {
        let mut got = Vec::new();
        let mut buf = vec![0u8; steps.iter().copied().max().unwrap_or(1)];
        for step in steps.iter().cycle() {
            match stream.read(&mut buf[..*step]) {
                Ok(0) => return (got, None),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => return (got, Some(e)),
            }
        }
        unreachable!()
    }

    /// Pseudo-random bytes that deflate only a little (the ratio limit stays out of the way).
    fn noise(len: usize) -> Vec<u8> {
        let mut x: u32 = 0x9e37_79b9;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn the_decoded_buffer_hands_out_every_byte_in_order_whatever_the_read_sizes() {
        let data = noise(3 * DECODED_BUFFER_BYTES + 777);
        let gz = gzip(&data);
        for steps in [
            &[1usize][..],
            &[512],
            &[32, 8192, 3],
            &[DECODED_BUFFER_BYTES],
            &[DECODED_BUFFER_BYTES + 1, 5],
            &[100_000],
        ] {
            let mut stream = Stream::new(&gz[..], u64::MAX / 4, 200);
            let (got, err) = read_in_steps(&mut stream, steps);
            assert!(err.is_none(), "steps {steps:?}: {err:?}");
            assert!(got == data, "steps {steps:?}: the bytes differ");
            assert_eq!(stream.out, data.len() as u64, "steps {steps:?}");
            assert!(stream.eof);
        }
    }

    #[test]
    fn the_stream_cap_is_met_at_the_cap_itself_not_where_the_decoder_read_ahead() {
        let data = noise(2 * DECODED_BUFFER_BYTES);
        let gz = gzip(&data);
        let cap = 1000u64 + DECODED_BUFFER_BYTES as u64;
        for steps in [&[512usize][..], &[7, 300], &[DECODED_BUFFER_BYTES * 2]] {
            let mut stream = Stream::new(&gz[..], cap, 200);
            let (got, err) = read_in_steps(&mut stream, steps);
            // Exactly the bytes up to the cap are handed out, then the limit.
            assert_eq!(got.len() as u64, cap, "steps {steps:?}");
            assert!(got[..] == data[..got.len()]);
            let err = err.expect("the cap must stop the stream");
            let rule = stream.classify(&err, Some("files/big")).rule();
            assert_eq!(rule, TarRule::TotalTooLarge, "steps {steps:?}");
            // And the stream stays failed.
            assert!(stream.read(&mut [0u8; 16]).is_err());
        }
    }

    #[test]
    fn pax_parser_is_strict() {
        assert_eq!(
            parse_pax(b"16 path=files/a\n").unwrap(),
            Some(b"files/a".to_vec())
        );
        assert_eq!(parse_pax(b"").unwrap(), None);
        assert_eq!(parse_pax(b"20 mtime=1700000000\n").unwrap(), None);
        let rule = |d: &[u8]| parse_pax(d).unwrap_err().0.id();
        assert_eq!(rule(b"22 linkpath=/etc/pass\n"), "tar.link");
        assert_eq!(rule(b"12 size=100\n"), "tar.pax");
        assert_eq!(rule(b"22 GNU.sparse.major=1\n"), "tar.sparse");
        assert_eq!(rule(b"99 path=x\n"), "tar.pax");
        assert_eq!(rule(b"11 path=x\n"), "tar.pax");
        assert_eq!(rule(b"9 path=x\n\0"), "tar.pax");
        assert_eq!(rule(b"x path=x\n"), "tar.pax");
        assert_eq!(rule(b"20 SCHILY.xattr.a=b\n"), "tar.pax");
        assert_eq!(rule(b"9 path=x\n9 path=y\n"), "tar.pax");
    }
}
