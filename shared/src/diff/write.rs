//! The writer: walks the bundle tree and the generator's workdir side by side and writes the
//! patch between them, one file pair at a time.
//!
//! Guards against: a generator that controls `after` and plants symlinks (never followed:
//! every open uses `O_NOFOLLOW`, and on Linux the walk goes through directory handles
//! (`/proc/self/fd/N/name`), so swapping a directory for a link mid-walk cannot lead it out of
//! the tree), FIFOs (opened non-blocking and refused, so the walk never hangs), devices,
//! sockets, binaries, `.git/`, unrepresentable names, huge files (never read past
//! `max_file_bytes`), deep trees (the walk stops descending at `max_depth`) and floods of
//! entries (`max_walk_entries`, `max_refused`).
//! On `Ok`: the patch holds whole sections in path order, follows the grammar of the module
//! doc, applies to `before` with `git apply` and [`super::apply_file`], and reproduces `after`
//! minus the refused paths (content and executable bit), up to the limit hit if any.
//! Does not check: what the changes mean. Without `/proc/self/fd` (non-Linux) the walk goes by
//! path, and the caller must stop the generator before calling.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use super::myers::{diff_blocks, Block};
use super::{
    check_patch_path, collision_key, rule, DiffError, DiffLimit, DiffOptions, DiffStats, FileMode,
    RefusedPath, TreeDiff,
};

/// Lines of context around each change.
const CONTEXT: usize = 3;
/// Buffer for comparing unchanged large files.
const CHUNK: usize = 64 * 1024;

/// Computes the patch from `before` to `after` in memory. See [`write_tree_diff`].
pub fn diff_trees(before: &Path, after: &Path, opts: &DiffOptions) -> Result<TreeDiff, DiffError> {
    let mut patch = Vec::new();
    let stats = write_tree_diff(before, after, opts, &mut patch)?;
    Ok(TreeDiff { patch, stats })
}

/// Writes the patch from `before` (the unpacked bundle's `files/`: regular files and
/// directories only) to `after` (the workdir the generator controlled) into `out`, and returns
/// the counts, the refused paths and the limit hit.
///
/// Refused entries of `after` (links, FIFOs, sockets, devices, binaries, unreadable entries,
/// paths failing [`check_patch_path`]) get no section: their path is left as it was in
/// `before`. Top-level names in `opts.ignore` are skipped in both trees. Past a limit the walk
/// stops; the patch then holds every section before that point and nothing after it.
///
/// Errors: `diff.before-tree` when `before` holds anything but regular files and directories
/// or a name that is not UTF-8; `diff.io` when `before` cannot be read, `after`'s root cannot
/// be opened, or `out` fails.
pub fn write_tree_diff<W: Write>(
    before: &Path,
    after: &Path,
    opts: &DiffOptions,
    out: W,
) -> Result<DiffStats, DiffError> {
    let b = DirHandle::open_root(before).map_err(|e| io_err(before, "open", e))?;
    let a = DirHandle::open_root(after).map_err(|e| io_err(after, "open", e))?;
    let mut w = Walker {
        opts,
        out,
        stats: DiffStats::default(),
        walked: 0,
        keys: HashMap::new(),
    };
    w.walk(Some(&b), Some(&a), "", 0)?;
    w.stats
        .refused
        .sort_by(|x, y| x.path.as_bytes().cmp(y.path.as_bytes()));
    w.out
        .flush()
        .map_err(|e| io_err(Path::new("<patch output>"), "write", e))?;
    Ok(w.stats)
}

fn io_err(path: &Path, op: &'static str, source: io::Error) -> DiffError {
    DiffError::Io {
        path: path.display().to_string(),
        op,
        source,
    }
}

/// Whether the walk goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Go,
    Stop,
}

/// An open directory. On Linux, children are reached through `/proc/self/fd/N/name`, which
/// resolves `name` inside this very directory even if the path that led here was changed.
struct DirHandle {
    _file: File,
    base: PathBuf,
    by_fd: bool,
}

impl DirHandle {
    fn open_root(path: &Path) -> io::Result<DirHandle> {
        let file = open_dir(path)?;
        let by_fd = fd_path_works(&file);
        let base = if by_fd {
            fd_path(&file)
        } else {
            path.to_path_buf()
        };
        Ok(DirHandle {
            _file: file,
            base,
            by_fd,
        })
    }

    fn child(&self, name: &OsStr) -> PathBuf {
        self.base.join(name)
    }

    fn open_child_dir(&self, name: &OsStr) -> io::Result<DirHandle> {
        let p = self.child(name);
        let file = open_dir(&p)?;
        let base = if self.by_fd { fd_path(&file) } else { p };
        Ok(DirHandle {
            _file: file,
            base,
            by_fd: self.by_fd,
        })
    }
}

fn fd_path(file: &File) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// Whether `/proc/self/fd/N` leads to the directory `file` holds.
fn fd_path_works(file: &File) -> bool {
    match (fs::metadata(fd_path(file)), file.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

fn open_dir(p: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(p)
}

/// Opens a file without following a final symlink and without blocking on a FIFO.
fn open_file(p: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(p)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Symlink,
    Special,
}

struct Entry {
    name: OsString,
    /// Sort key: the name's bytes, plus `/` for a directory (git's tree order, which makes the
    /// patch sorted by full path).
    key: Vec<u8>,
    kind: Kind,
}

/// A regular file opened for reading, with its `fstat`.
struct Opened {
    file: File,
    meta: Metadata,
}

struct Walker<'o, W> {
    opts: &'o DiffOptions,
    out: W,
    stats: DiffStats,
    walked: u64,
    /// Collision key -> path of every section written.
    keys: HashMap<String, String>,
}

fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_owned()
    } else {
        format!("{rel}/{name}")
    }
}

impl<W: Write> Walker<'_, W> {
    fn stop(&mut self, limit: DiffLimit) -> Flow {
        self.stats.limit_hit = Some(limit);
        Flow::Stop
    }

    fn refuse(&mut self, path: String, reason: &'static str) -> Flow {
        if self.stats.refused.len() >= self.opts.max_refused {
            return self.stop(DiffLimit::RefusedPaths);
        }
        self.stats.refused.push(RefusedPath {
            path,
            reason: reason.to_owned(),
        });
        Flow::Go
    }

    /// Lists a directory (unsorted). `Ok(None)`: the entry budget ran out.
    fn list(&mut self, dir: &DirHandle) -> io::Result<Option<Vec<Entry>>> {
        let mut out = Vec::new();
        for ent in fs::read_dir(&dir.base)? {
            let ent = ent?;
            self.walked += 1;
            if self.walked > self.opts.max_walk_entries {
                return Ok(None);
            }
            // `DirEntry::file_type` does not follow links.
            let ft = ent.file_type()?;
            let kind = if ft.is_symlink() {
                Kind::Symlink
            } else if ft.is_dir() {
                Kind::Dir
            } else if ft.is_file() {
                Kind::File
            } else {
                Kind::Special
            };
            let name = ent.file_name();
            let mut key = name.as_encoded_bytes().to_vec();
            if kind == Kind::Dir {
                key.push(b'/');
            }
            out.push(Entry { name, key, kind });
        }
        Ok(Some(out))
    }

    fn walk(
        &mut self,
        before: Option<&DirHandle>,
        after: Option<&DirHandle>,
        rel: &str,
        depth: usize,
    ) -> Result<Flow, DiffError> {
        let mut bl = match before {
            Some(d) => match self
                .list(d)
                .map_err(|e| io_err(Path::new(&format!("before/{rel}")), "list", e))?
            {
                Some(v) => v,
                None => return Ok(self.stop(DiffLimit::WalkEntries)),
            },
            None => Vec::new(),
        };
        let mut al = match after {
            Some(d) => match self.list(d) {
                Ok(Some(v)) => v,
                Ok(None) => return Ok(self.stop(DiffLimit::WalkEntries)),
                Err(e) if rel.is_empty() => return Err(io_err(Path::new("after"), "list", e)),
                // Left as it was: skip this directory on both sides.
                Err(_) => return Ok(self.refuse(rel.to_owned(), rule::UNREADABLE)),
            },
            None => Vec::new(),
        };
        if rel.is_empty() {
            let ignored = |e: &Entry| self.opts.ignore.iter().any(|n| OsStr::new(n) == e.name);
            bl.retain(|e| !ignored(e));
            al.retain(|e| !ignored(e));
        }
        for e in &bl {
            let name = e.name.to_str();
            if name.is_none() || matches!(e.kind, Kind::Symlink | Kind::Special) {
                let what = match e.kind {
                    Kind::Symlink => "symlink",
                    Kind::Special => "special file",
                    _ => "name is not UTF-8",
                };
                return Err(DiffError::BeforeTree {
                    path: join(rel, &e.name.to_string_lossy()),
                    reason: what.into(),
                });
            }
        }

        // Refusals decided from the listing alone; their names are left as they were.
        let before_dirs: HashSet<&OsStr> = bl
            .iter()
            .filter(|e| e.kind == Kind::Dir)
            .map(|e| e.name.as_os_str())
            .collect();
        let mut refused_names: HashSet<OsString> = HashSet::new();
        let mut kept = Vec::with_capacity(al.len());
        let before_names: HashSet<&OsStr> = bl.iter().map(|e| e.name.as_os_str()).collect();
        for e in al {
            let path = join(rel, &e.name.to_string_lossy());
            // New and ignored by the packed revision's .gitignore files: left out, unread.
            if let (Some(f), Some(name)) = (&self.opts.ignore_new, e.name.to_str()) {
                if !before_names.contains(e.name.as_os_str())
                    && (f.0)(&join(rel, name), e.kind == Kind::Dir)
                {
                    self.stats.ignored += 1;
                    continue;
                }
            }
            let why = match (e.kind, e.name.to_str()) {
                (Kind::Symlink, _) => Some(rule::SYMLINK),
                (Kind::Special, _) => Some(rule::SPECIAL_FILE),
                (_, None) => Some(rule::PATH),
                // A new directory that cannot hold a valid path (`.git/`, too deep, ...):
                // refused once instead of once per file inside.
                (Kind::Dir, Some(_)) if !before_dirs.contains(e.name.as_os_str()) => {
                    self.dir_rule(&path, depth)
                }
                _ => None,
            };
            match why {
                Some(r) => {
                    if self.refuse(path, r) == Flow::Stop {
                        return Ok(Flow::Stop);
                    }
                    refused_names.insert(e.name);
                }
                None => kept.push(e),
            }
        }
        let mut al = kept;
        bl.retain(|e| !refused_names.contains(&e.name));
        bl.sort_by(|x, y| x.key.cmp(&y.key));
        al.sort_by(|x, y| x.key.cmp(&y.key));

        let (mut i, mut j) = (0, 0);
        while i < bl.len() || j < al.len() {
            let (b, a) = match (bl.get(i), al.get(j)) {
                (Some(b), Some(a)) if b.key == a.key => {
                    i += 1;
                    j += 1;
                    (Some(b), Some(a))
                }
                (Some(b), Some(a)) if b.key < a.key => {
                    i += 1;
                    (Some(b), None)
                }
                (Some(b), None) => {
                    i += 1;
                    (Some(b), None)
                }
                (_, Some(a)) => {
                    j += 1;
                    (None, Some(a))
                }
                (None, None) => break,
            };
            let name = b.or(a).map(|e| e.name.as_os_str()).unwrap_or_default();
            let path = join(rel, &name.to_string_lossy());
            let is_dir = b.or(a).is_some_and(|e| e.kind == Kind::Dir);
            let flow = if is_dir {
                self.dir(
                    before.filter(|_| b.is_some()),
                    after.filter(|_| a.is_some()),
                    name,
                    &path,
                    depth,
                )?
            } else {
                self.file(
                    before.filter(|_| b.is_some()),
                    after.filter(|_| a.is_some()),
                    name,
                    path,
                )?
            };
            if flow == Flow::Stop {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Go)
    }

    /// The rule a directory path breaks, if no file under it can be valid.
    fn dir_rule(&self, path: &str, depth: usize) -> Option<&'static str> {
        if depth + 1 >= self.opts.max_depth {
            return Some(rule::PATH);
        }
        check_patch_path(path, self.opts.max_path_bytes, self.opts.max_depth)
            .err()
            .map(|(r, _)| r)
    }

    fn dir(
        &mut self,
        before: Option<&DirHandle>,
        after: Option<&DirHandle>,
        name: &OsStr,
        path: &str,
        depth: usize,
    ) -> Result<Flow, DiffError> {
        // A deleted directory that cannot hold a valid path, or any directory too deep: left
        // as it was, refused once.
        if after.is_none() || depth + 1 >= self.opts.max_depth {
            if let Some(r) = self.dir_rule(path, depth) {
                return Ok(self.refuse(path.to_owned(), r));
            }
        }
        let b = match before {
            Some(d) => Some(
                d.open_child_dir(name)
                    .map_err(|e| io_err(Path::new(&format!("before/{path}")), "open", e))?,
            ),
            None => None,
        };
        let a = match after {
            Some(d) => match d.open_child_dir(name) {
                Ok(h) => Some(h),
                Err(e) => {
                    // `O_DIRECTORY|O_NOFOLLOW` on a link fails with ENOTDIR: look again.
                    let linked = fs::symlink_metadata(d.child(name)).is_ok_and(|m| m.is_symlink());
                    let r = if linked {
                        rule::SYMLINK
                    } else {
                        open_refusal(&e)
                    };
                    return Ok(self.refuse(path.to_owned(), r));
                }
            },
            None => None,
        };
        self.walk(b.as_ref(), a.as_ref(), path, depth + 1)
    }

    fn file(
        &mut self,
        before: Option<&DirHandle>,
        after: Option<&DirHandle>,
        name: &OsStr,
        path: String,
    ) -> Result<Flow, DiffError> {
        let bf = match before {
            Some(d) => Some(self.open_before(d, name, &path)?),
            None => None,
        };
        let af = match after {
            Some(d) => match open_regular(&d.child(name)) {
                Ok(f) => Some(f),
                Err(r) => return Ok(self.refuse(path, r)),
            },
            None => None,
        };
        let max = self.opts.max_file_bytes;
        match (bf, af) {
            (None, None) => Ok(Flow::Go),
            (None, Some(mut a)) => {
                let Some(new) =
                    read_capped(&mut a, max).map_err(|e| io_err(Path::new(&path), "read", e))?
                else {
                    return Ok(self.stop(DiffLimit::FileBytes));
                };
                if is_binary(&new) {
                    return Ok(self.refuse(path, rule::BINARY));
                }
                let mode = FileMode::from_unix(a.meta.mode());
                self.emit(Section {
                    path,
                    change: Change::Added(mode),
                    old: &[],
                    new: &new,
                })
            }
            (Some(mut b), None) => {
                let Some(old) =
                    read_capped(&mut b, max).map_err(|e| io_err(Path::new(&path), "read", e))?
                else {
                    return Ok(self.stop(DiffLimit::FileBytes));
                };
                if is_binary(&old) {
                    return Ok(self.refuse(path, rule::BINARY));
                }
                let mode = FileMode::from_unix(b.meta.mode());
                self.emit(Section {
                    path,
                    change: Change::Deleted(mode),
                    old: &old,
                    new: &[],
                })
            }
            (Some(mut b), Some(mut a)) => {
                let old_mode = FileMode::from_unix(b.meta.mode());
                let new_mode = FileMode::from_unix(a.meta.mode());
                let (bs, asz) = (b.meta.len(), a.meta.len());
                let modes = (old_mode != new_mode).then_some((old_mode, new_mode));
                if bs == asz && bs > max {
                    // Too big to diff, but possibly unchanged: compare in chunks.
                    let same = same_content(&mut b.file, &mut a.file)
                        .map_err(|e| io_err(Path::new(&path), "read", e))?;
                    if !same {
                        return Ok(self.stop(DiffLimit::FileBytes));
                    }
                    return match modes {
                        None => Ok(Flow::Go),
                        Some(m) => self.emit(Section {
                            path,
                            change: Change::Mode(m),
                            old: &[],
                            new: &[],
                        }),
                    };
                }
                if bs > max || asz > max {
                    return Ok(self.stop(DiffLimit::FileBytes));
                }
                let rd = |f: &mut Opened| {
                    read_capped(f, max).map_err(|e| io_err(Path::new(&path), "read", e))
                };
                let (Some(old), Some(new)) = (rd(&mut b)?, rd(&mut a)?) else {
                    return Ok(self.stop(DiffLimit::FileBytes));
                };
                if old == new {
                    return match modes {
                        None => Ok(Flow::Go),
                        Some(m) => self.emit(Section {
                            path,
                            change: Change::Mode(m),
                            old: &[],
                            new: &[],
                        }),
                    };
                }
                if is_binary(&old) || is_binary(&new) {
                    return Ok(self.refuse(path, rule::BINARY));
                }
                self.emit(Section {
                    path,
                    change: Change::Modified(modes),
                    old: &old,
                    new: &new,
                })
            }
        }
    }

    fn open_before(&self, d: &DirHandle, name: &OsStr, path: &str) -> Result<Opened, DiffError> {
        open_regular(&d.child(name)).map_err(|r| DiffError::BeforeTree {
            path: path.to_owned(),
            reason: format!("cannot open as a regular file ({r})"),
        })
    }

    /// Writes one section if it fits every limit.
    fn emit(&mut self, s: Section<'_>) -> Result<Flow, DiffError> {
        if let Err((r, _)) =
            check_patch_path(&s.path, self.opts.max_path_bytes, self.opts.max_depth)
        {
            return Ok(self.refuse(s.path, r));
        }
        let key = collision_key(&s.path);
        if self.keys.get(&key).is_some_and(|p| *p != s.path) {
            return Ok(self.refuse(s.path, rule::COLLISION));
        }
        if self.stats.files_changed >= self.opts.max_changed_files {
            return Ok(self.stop(DiffLimit::ChangedFiles));
        }
        let old: Vec<&[u8]> = s.old.split_inclusive(|&b| b == b'\n').collect();
        let new: Vec<&[u8]> = s.new.split_inclusive(|&b| b == b'\n').collect();
        let used = self
            .stats
            .lines_added
            .saturating_add(self.stats.lines_removed);
        let budget = self.opts.max_changed_lines.saturating_sub(used);
        let blocks = if old.is_empty() && new.is_empty() {
            Vec::new()
        } else {
            match diff_blocks(&old, &new, budget) {
                Some(b) => b,
                None => return Ok(self.stop(DiffLimit::ChangedLines)),
            }
        };
        let added: u64 = blocks.iter().map(|b| b.new.len() as u64).sum();
        let removed: u64 = blocks.iter().map(|b| b.old.len() as u64).sum();
        if added.saturating_add(removed) > budget {
            return Ok(self.stop(DiffLimit::ChangedLines));
        }
        let mut counter = Counter(0);
        render(&mut counter, &s, &old, &new, &blocks)
            .map_err(|e| io_err(Path::new("<counter>"), "write", e))?;
        if self.stats.diff_bytes.saturating_add(counter.0) > self.opts.max_diff_bytes {
            return Ok(self.stop(DiffLimit::DiffBytes));
        }
        render(&mut self.out, &s, &old, &new, &blocks)
            .map_err(|e| io_err(Path::new("<patch output>"), "write", e))?;
        self.stats.diff_bytes += counter.0;
        self.stats.files_changed += 1;
        self.stats.lines_added += added;
        self.stats.lines_removed += removed;
        self.keys.insert(key, s.path);
        Ok(Flow::Go)
    }
}

/// Why an open of an `after` entry failed, as a refusal rule.
fn open_refusal(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ELOOP) => rule::SYMLINK,
        Some(libc::ENOTDIR) | Some(libc::ENXIO) => rule::SPECIAL_FILE,
        _ => rule::UNREADABLE,
    }
}

/// Opens a regular file without following links or blocking; anything else is refused.
fn open_regular(p: &Path) -> Result<Opened, &'static str> {
    let file = open_file(p).map_err(|e| open_refusal(&e))?;
    let meta = file.metadata().map_err(|_| rule::UNREADABLE)?;
    let ft = meta.file_type();
    if ft.is_symlink() {
        return Err(rule::SYMLINK);
    }
    if !ft.is_file() {
        return Err(rule::SPECIAL_FILE);
    }
    Ok(Opened { file, meta })
}

/// Reads at most `max` bytes; `None` if the file holds more (it may have grown since `fstat`).
fn read_capped(f: &mut Opened, max: u64) -> io::Result<Option<Vec<u8>>> {
    if f.meta.len() > max {
        return Ok(None);
    }
    let cap = usize::try_from(f.meta.len()).unwrap_or(0);
    let mut buf = Vec::with_capacity(cap);
    (&mut f.file)
        .take(max.saturating_add(1))
        .read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Ok(None);
    }
    Ok(Some(buf))
}

/// Compares two files in chunks, without holding either in memory.
fn same_content(a: &mut File, b: &mut File) -> io::Result<bool> {
    let mut ba = vec![0u8; CHUNK];
    let mut bb = vec![0u8; CHUNK];
    loop {
        let na = read_full(a, &mut ba)?;
        let nb = read_full(b, &mut bb)?;
        if na != nb || ba[..na] != bb[..nb] {
            return Ok(false);
        }
        if na == 0 {
            return Ok(true);
        }
    }
}

fn read_full(f: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Binary, for this format: a NUL byte anywhere, or not UTF-8.
fn is_binary(content: &[u8]) -> bool {
    content.contains(&0) || std::str::from_utf8(content).is_err()
}

enum Change {
    Added(FileMode),
    Deleted(FileMode),
    /// Content changed; `Some((old, new))` when the mode changed too.
    Modified(Option<(FileMode, FileMode)>),
    /// Mode only.
    Mode((FileMode, FileMode)),
}

struct Section<'c> {
    path: String,
    change: Change,
    old: &'c [u8],
    new: &'c [u8],
}

struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn render<W: Write>(
    w: &mut W,
    s: &Section<'_>,
    old: &[&[u8]],
    new: &[&[u8]],
    blocks: &[Block],
) -> io::Result<()> {
    let p = &s.path;
    writeln!(w, "diff --git a/{p} b/{p}")?;
    let (from, to) = match s.change {
        Change::Added(m) => {
            writeln!(w, "new file mode {m}")?;
            ("/dev/null".to_owned(), format!("b/{p}"))
        }
        Change::Deleted(m) => {
            writeln!(w, "deleted file mode {m}")?;
            (format!("a/{p}"), "/dev/null".to_owned())
        }
        Change::Modified(modes) => {
            if let Some((o, n)) = modes {
                writeln!(w, "old mode {o}\nnew mode {n}")?;
            }
            (format!("a/{p}"), format!("b/{p}"))
        }
        Change::Mode((o, n)) => {
            writeln!(w, "old mode {o}\nnew mode {n}")?;
            return Ok(());
        }
    };
    if blocks.is_empty() {
        return Ok(());
    }
    writeln!(w, "--- {from}\n+++ {to}")?;
    write_hunks(w, old, new, blocks)
}

fn write_hunks<W: Write>(
    w: &mut W,
    old: &[&[u8]],
    new: &[&[u8]],
    blocks: &[Block],
) -> io::Result<()> {
    let mut g = 0;
    while g < blocks.len() {
        let mut e = g;
        while e + 1 < blocks.len() && blocks[e + 1].old.start - blocks[e].old.end <= 2 * CONTEXT {
            e += 1;
        }
        let (first, last) = (&blocks[g], &blocks[e]);
        let hs = first.old.start.saturating_sub(CONTEXT);
        let he = old.len().min(last.old.end + CONTEXT);
        let ns = first.new.start - (first.old.start - hs);
        let ne = last.new.end + (he - last.old.end);
        writeln!(w, "@@ -{} +{} @@", range(hs, he - hs), range(ns, ne - ns))?;
        let mut i = hs;
        for b in &blocks[g..=e] {
            for l in &old[i..b.old.start] {
                line(w, b' ', l)?;
            }
            for l in &old[b.old.clone()] {
                line(w, b'-', l)?;
            }
            for l in &new[b.new.clone()] {
                line(w, b'+', l)?;
            }
            i = b.old.end;
        }
        for l in &old[i..he] {
            line(w, b' ', l)?;
        }
        g = e + 1;
    }
    Ok(())
}

/// `START[,LEN]` from a 0-based start index: `,LEN` only when LEN != 1; with LEN 0, START is
/// the line before.
fn range(start0: usize, len: usize) -> String {
    match len {
        0 => format!("{start0},0"),
        1 => format!("{}", start0 + 1),
        n => format!("{},{n}", start0 + 1),
    }
}

fn line<W: Write>(w: &mut W, prefix: u8, l: &[u8]) -> io::Result<()> {
    w.write_all(&[prefix])?;
    w.write_all(l)?;
    if !l.ends_with(b"\n") {
        w.write_all(b"\n\\ No newline at end of file\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn names(dir: &DirHandle) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(&dir.base)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn directory_handle_is_not_redirected_by_a_swap_for_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let after = tmp.path().join("after");
        fs::create_dir_all(after.join("sub")).unwrap();
        fs::write(after.join("sub/file.txt"), b"ok\n").unwrap();
        fs::create_dir_all(tmp.path().join("secret")).unwrap();
        fs::write(tmp.path().join("secret/token"), b"s3cr3t\n").unwrap();

        let root = DirHandle::open_root(&after).unwrap();
        assert!(root.by_fd, "/proc/self/fd should be usable on Linux");
        let sub = root.open_child_dir(OsStr::new("sub")).unwrap();
        // The generator swaps the directory for a link to somewhere else mid-walk.
        fs::rename(after.join("sub"), after.join("moved")).unwrap();
        symlink(tmp.path().join("secret"), after.join("sub")).unwrap();
        // The handle still lists the directory it opened, not the link's target...
        assert_eq!(names(&sub), vec!["file.txt"]);
        let f = open_regular(&sub.child(OsStr::new("file.txt"))).unwrap();
        assert_eq!(f.meta.len(), 3);
        // ...and opening the swapped name again refuses the link.
        assert!(root.open_child_dir(OsStr::new("sub")).is_err());
        assert_eq!(
            open_regular(&root.child(OsStr::new("sub"))).err(),
            Some(rule::SYMLINK)
        );
    }

    #[test]
    fn a_file_swapped_for_a_fifo_is_refused_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("pipe");
        let st = std::process::Command::new("mkfifo")
            .arg(&p)
            .status()
            .unwrap();
        assert!(st.success());
        // Opening a FIFO for reading would block until a writer appears; O_NONBLOCK does not.
        assert_eq!(open_regular(&p).err(), Some(rule::SPECIAL_FILE));
    }

    #[test]
    fn read_capped_refuses_past_the_cap() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f");
        fs::write(&p, b"12345").unwrap();
        let mut f = open_regular(&p).unwrap();
        assert!(read_capped(&mut f, 4).unwrap().is_none());
        let mut f = open_regular(&p).unwrap();
        assert_eq!(read_capped(&mut f, 5).unwrap().unwrap(), b"12345");
    }

    #[test]
    fn hunk_ranges_are_canonical() {
        assert_eq!(range(0, 0), "0,0");
        assert_eq!(range(4, 0), "4,0");
        assert_eq!(range(0, 1), "1");
        assert_eq!(range(9, 3), "10,3");
    }
}
