//! `patch.diff`: the git-style unified diff a worker computes ([`diff_trees`]) and the gate
//! parses strictly ([`parse_patch`]) and applies exactly ([`apply_file`]).
//!
//! Guards against: a generator that plants links, FIFOs, devices, binaries, `.git/` or
//! oversized files in its workdir (the writer refuses them and reports why), and a hostile
//! worker that sends a patch git would read more leniently than the gate: renames, copies,
//! symlink or gitlink modes, binary patches, quoted or escaped names, absolute paths, `..`,
//! `.git/`, duplicate or case-colliding sections, hunks whose counts lie, hunks that git could
//! apply at an offset, trailing garbage and bombs (see [`DiffLimits`]).
//! On `Ok`: [`parse_patch`] returns sections in strictly increasing path order, every path
//! passed [`check_patch_path`], every hunk's counts and positions are consistent, and
//! [`apply_file`] applies each hunk exactly where it says or fails.
//! Does not check: that the patch applies to any particular tree (the gate applies it), what
//! the added lines say (the gate's secret scan), or which paths need a human (the gate's
//! policy). The writer reads the clock never, and the network never.
//!
//! # Format (normative; copied into `docs/FORMATS.md`)
//!
//! A patch is UTF-8 text, a sequence of LF-terminated lines, made of zero or more file
//! sections. An empty patch changes nothing. The grammar (ABNF-like; `LF` is `%x0A`, `SP` is
//! `%x20`):
//!
//! ```text
//! patch        = *section
//! section      = git-header ( added / deleted / mode-change / modified )
//! git-header   = "diff --git a/" PATH SP "b/" PATH LF        ; both PATHs byte-equal
//! added        = "new file mode " MODE LF
//!                [ "--- /dev/null" LF "+++ b/" PATH LF hunk ]  ; one hunk: "-0,0 +1[,N]"
//! deleted      = "deleted file mode " MODE LF
//!                [ "--- a/" PATH LF "+++ /dev/null" LF hunk ]  ; one hunk: "-1[,N] +0,0"
//! mode-change  = "old mode " MODE LF "new mode " MODE LF [ content ] ; the MODEs differ
//! modified     = content
//! content      = "--- a/" PATH LF "+++ b/" PATH LF 1*hunk
//! MODE         = "100644" / "100755"
//! hunk         = "@@ -" RANGE " +" RANGE " @@" LF 1*hunk-line
//! RANGE        = START [ "," LEN ]     ; ",LEN" present iff LEN != 1
//! START, LEN   = "0" / %x31-39 *DIGIT  ; decimal, no leading zero, at most u64
//! hunk-line    = ( SP / "-" / "+" ) TEXT LF [ "\ No newline at end of file" LF ]
//! TEXT         = *( any UTF-8 character except LF and NUL )
//! ```
//!
//! Rules (each rejection has the rule id in parentheses; the error names the section and the
//! 1-based line of the patch):
//! - Every line ends with LF; bytes after the last LF are rejected (`diff.trailing`). CR is
//!   ordinary content inside `TEXT` (a CRLF file diffs as lines ending in CR); a CR anywhere
//!   in a header line is rejected (`diff.header`).
//! - `PATH` is relative and normalised ([`check_patch_path`]): it MUST NOT start with `"` nor
//!   contain a byte below 0x20, 0x7f, `"` or `\` (git would quote it; `diff.quoted-path`),
//!   and MUST pass the relative-path rules of [`crate::paths::check_relative_path`] (shared
//!   with the tar reader and the packer) under `max_path_bytes` and `max_depth`: a leading
//!   `/` is `diff.abs-path`, a `..` component `diff.parent-dir`, a `.git` component (any ASCII
//!   case, trailing dots or spaces, `git~1`) `diff.git-dir`, and every other defect (empty,
//!   `.` or empty components, drive prefixes, invisible or bidi characters, components over
//!   255 bytes, too long, too deep) `diff.path`. The `a/` and `b/` names of the header, `---`
//!   and `+++` lines MUST be the same path (`diff.rename`).
//! - Only modes 100644 and 100755 exist; 120000 (symlink), 160000 (gitlink) or any other mode
//!   is rejected (`diff.mode`). `old mode`/`new mode` with equal modes is rejected
//!   (`diff.header`).
//! - `rename from/to`, `copy from/to`, `similarity index`, `dissimilarity index` are rejected
//!   (`diff.rename`); `GIT binary patch`, `Binary files ... differ`, NUL or invalid UTF-8 in a
//!   hunk line are rejected (`diff.binary`): this format has no binary patches. Any other
//!   header line (including `index`) is rejected (`diff.header`), and so is a section that
//!   changes nothing (a bare `diff --git` line, or `---`/`+++` without hunks).
//! - A hunk header is exactly `@@ -RANGE +RANGE @@`, canonical as above; START is 0 only when
//!   LEN is 0 (`diff.hunk-header`). A hunk holds exactly LEN old-side lines (SP and `-`) and
//!   LEN new-side lines (SP and `+`), and at least one `-` or `+` line (`diff.hunk-count`,
//!   `diff.hunk-header`). A line that starts with SP, `-` or `+` right after a complete hunk
//!   is a count lie (`diff.hunk-count`).
//! - Within a section, hunks are in increasing, non-overlapping old-line order and each new
//!   START is consistent with the lines added and removed by the hunks before it
//!   (`diff.hunk-order`). With `first(START, LEN) = START + (LEN == 0 ? 1 : 0)`:
//!   `first(new) - first(old)` equals the sum of `new LEN - old LEN` of the earlier hunks.
//! - `\ No newline at end of file` follows the last line of the old side (after SP or `-`),
//!   of the new side (after SP or `+`), or of both (after SP); nothing of that side may follow
//!   it, in this hunk or a later one, and the marker is spelled exactly (`diff.newline`).
//! - Sections appear in strictly increasing bytewise order of PATH: a repeated PATH is
//!   `diff.duplicate`, a decreasing one `diff.order`. Two PATHs with the same
//!   [`collision_key`] (Unicode NFC, lowercase) are `diff.collision`.
//! - Caps ([`DiffLimits`]): patch bytes, sections, hunks, hunk lines (`diff.too-large`).
//! - Anything else after a complete section is `diff.trailing`; anything else before the
//!   first section is `diff.header`.
//!
//! The writer emits exactly this subset, in this order: sections sorted by PATH bytewise,
//! three lines of context, adjacent changes merged into one hunk when at most six unchanged
//! lines separate them, no `index` line, no function-context text after `@@`.
//!
//! # Writer semantics
//! [`diff_trees`] compares `before` (the unpacked bundle's `files/`) with `after` (the workdir
//! once the generator ran). A file is binary when it contains NUL or is not UTF-8; binary
//! files, symlinks, FIFOs, sockets, devices, unreadable entries and paths failing
//! [`check_patch_path`] are *refused*: they get no section, the path is left as it was in
//! `before`, and it is listed in [`DiffStats::refused`] with the rule id. Binary patches are
//! future work: binaries are refused even when a request allows them. Empty directories do
//! not exist in git and are not reported.
//!
//! # Notes for the gate
//! - `git apply` searches for a hunk's context at other offsets when it does not match where
//!   the hunk says; [`apply_file`] does not. Check with [`apply_file`] (or refuse git's
//!   "succeeded at offset" output) before trusting [`ParsedPatch::touched_old_lines`].
//! - An empty patch is valid (nothing changed); `git apply` needs `--allow-empty` for it.
//! - Context lines are not "touched", but they must match the tree the patch is applied to:
//!   a hunk whose context covers a redacted line carries the redaction placeholder.

mod apply;
mod myers;
mod parse;
mod path;
mod write;

use std::fmt;
use std::io;

pub use crate::format::RefusedPath;
pub use apply::apply_file;
pub use parse::parse_patch;
pub use path::{check_patch_path, collision_key};
pub use write::{diff_trees, write_tree_diff};

/// Stable rule ids of this module, as they appear in errors, refusals and `docs/FORMATS.md`.
pub mod rule {
    /// A path starts with `/`.
    pub const ABS_PATH: &str = "diff.abs-path";
    /// A path has a `..` component.
    pub const PARENT_DIR: &str = "diff.parent-dir";
    /// A path has a `.git` component (any ASCII case, trailing dots or spaces, `git~1`).
    pub const GIT_DIR: &str = "diff.git-dir";
    /// A path git would quote (control characters, `"`, `\`), or a quoted path.
    pub const QUOTED_PATH: &str = "diff.quoted-path";
    /// Any other bad path: empty or `.` component, drive prefix, invisible or bidi character,
    /// not UTF-8, too long, too deep.
    pub const PATH: &str = "diff.path";
    /// A mode other than 100644 and 100755.
    pub const MODE: &str = "diff.mode";
    /// Rename or copy headers, or names that differ between `a/`, `b/`, `---` and `+++`.
    pub const RENAME: &str = "diff.rename";
    /// Binary content or a binary patch.
    pub const BINARY: &str = "diff.binary";
    /// A header line that is malformed, out of place or not part of the format.
    pub const HEADER: &str = "diff.header";
    /// A malformed or non-canonical `@@` line, or a hunk that changes nothing.
    pub const HUNK_HEADER: &str = "diff.hunk-header";
    /// A hunk whose lines do not match its counts.
    pub const HUNK_COUNT: &str = "diff.hunk-count";
    /// Hunks out of order, overlapping, or with inconsistent new-side positions.
    pub const HUNK_ORDER: &str = "diff.hunk-order";
    /// A misplaced or misspelled `\ No newline at end of file`.
    pub const NEWLINE: &str = "diff.newline";
    /// A path with two sections.
    pub const DUPLICATE: &str = "diff.duplicate";
    /// Sections not in increasing path order.
    pub const ORDER: &str = "diff.order";
    /// Two paths that are one file on a case-insensitive or normalising file system.
    pub const COLLISION: &str = "diff.collision";
    /// A cap of [`super::DiffLimits`] was passed.
    pub const TOO_LARGE: &str = "diff.too-large";
    /// Bytes or lines after a complete section that belong to no section.
    pub const TRAILING: &str = "diff.trailing";
    /// The generator left a symlink (writer refusal).
    pub const SYMLINK: &str = "diff.symlink";
    /// The generator left a FIFO, socket or device (writer refusal).
    pub const SPECIAL_FILE: &str = "diff.special-file";
    /// An entry the writer could not open or read (writer refusal).
    pub const UNREADABLE: &str = "diff.unreadable";
    /// A hunk does not apply exactly where it says ([`super::apply_file`]).
    pub const APPLY: &str = "diff.apply";
    /// The `before` tree holds something other than regular files and directories.
    pub const BEFORE_TREE: &str = "diff.before-tree";
    /// Reading a tree or writing the patch failed.
    pub const IO: &str = "diff.io";

    /// Every rule id above, for uniqueness tests and documentation.
    pub const ALL: &[&str] = &[
        ABS_PATH,
        PARENT_DIR,
        GIT_DIR,
        QUOTED_PATH,
        PATH,
        MODE,
        RENAME,
        BINARY,
        HEADER,
        HUNK_HEADER,
        HUNK_COUNT,
        HUNK_ORDER,
        NEWLINE,
        DUPLICATE,
        ORDER,
        COLLISION,
        TOO_LARGE,
        TRAILING,
        SYMLINK,
        SPECIAL_FILE,
        UNREADABLE,
        APPLY,
        BEFORE_TREE,
        IO,
    ];
}

/// A patch, a tree or a hunk broke a rule.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiffError {
    /// The patch text broke a rule of the format.
    #[error("patch line {line}, section {section:?}: rejected ({rule}): {reason}")]
    Rejected {
        /// Rule id (`diff.*`).
        rule: &'static str,
        /// 1-based line of the patch where the problem was seen (0: the patch as a whole).
        line: u64,
        /// Path of the section (`-` before the first section), at most 200 characters.
        section: String,
        /// Why, without any content of the patch's lines.
        reason: String,
    },
    /// A hunk did not apply exactly at its stated position.
    #[error("{path:?}: hunk {hunk} (patch line {line}) does not apply (diff.apply): {reason}")]
    Apply {
        /// Path of the section.
        path: String,
        /// 1-based hunk number within the section (0: the section as a whole).
        hunk: usize,
        /// 1-based line of the patch where the hunk starts.
        line: u64,
        /// Why, without file content.
        reason: String,
    },
    /// The `before` tree holds something other than regular files and directories, or a
    /// name that is not UTF-8.
    #[error("before tree: {path:?}: {reason} (diff.before-tree)")]
    BeforeTree {
        /// Relative path in the tree.
        path: String,
        /// What was found.
        reason: String,
    },
    /// Reading a tree or writing the patch failed.
    #[error("{path:?}: cannot {op} (diff.io): {source}")]
    Io {
        /// The file, directory or `<patch output>`.
        path: String,
        /// What was attempted (`read`, `list`, `open`, `write`).
        op: &'static str,
        /// The cause.
        source: io::Error,
    },
}

impl DiffError {
    /// The rule id of this error (`diff.*`).
    pub fn rule(&self) -> &'static str {
        match self {
            DiffError::Rejected { rule, .. } => rule,
            DiffError::Apply { .. } => rule::APPLY,
            DiffError::BeforeTree { .. } => rule::BEFORE_TREE,
            DiffError::Io { .. } => rule::IO,
        }
    }
}

/// A regular file's mode as git spells it. No other kind of file exists in this format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileMode {
    /// `100644`.
    Regular,
    /// `100755`: the owner executable bit is set.
    Executable,
}

impl FileMode {
    /// Git's octal spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            FileMode::Regular => "100644",
            FileMode::Executable => "100755",
        }
    }

    /// Parses exactly `100644` or `100755`.
    pub fn from_git(s: &str) -> Option<FileMode> {
        match s {
            "100644" => Some(FileMode::Regular),
            "100755" => Some(FileMode::Executable),
            _ => None,
        }
    }

    /// The mode git records for Unix permission bits: executable iff the owner may execute.
    pub fn from_unix(mode: u32) -> FileMode {
        if mode & 0o100 != 0 {
            FileMode::Executable
        } else {
            FileMode::Regular
        }
    }
}

impl fmt::Display for FileMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a section does to its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// `new file mode`: the path must not exist before.
    Added,
    /// `deleted file mode`: the whole content is removed.
    Deleted,
    /// Content changes (with `old mode`/`new mode` when the mode changes too).
    Modified,
    /// Only `old mode`/`new mode`, no content change.
    ModeChange,
}

impl FileKind {
    /// Lowercase name (`added`, `deleted`, `modified`, `mode-change`).
    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::Added => "added",
            FileKind::Deleted => "deleted",
            FileKind::Modified => "modified",
            FileKind::ModeChange => "mode-change",
        }
    }
}

/// The role of one hunk line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LineKind {
    /// ` `: present on both sides.
    Context,
    /// `-`: old side only.
    Removed,
    /// `+`: new side only.
    Added,
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkLine {
    /// Its role.
    pub kind: LineKind,
    /// The text without the leading marker and without the LF (may end in CR).
    pub text: String,
    /// `true` when followed by `\ No newline at end of file`: this is the last line of its
    /// side(s) and has no LF there.
    pub no_newline: bool,
}

/// One `@@` hunk, with positions exactly as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Old START (the line before the hunk when `old_len` is 0).
    pub old_start: u64,
    /// Old LEN: context plus removed lines.
    pub old_len: u64,
    /// New START (the line before the hunk when `new_len` is 0).
    pub new_start: u64,
    /// New LEN: context plus added lines.
    pub new_len: u64,
    /// The lines in order.
    pub lines: Vec<HunkLine>,
    /// 1-based line of the patch holding the `@@` header.
    pub patch_line: u64,
}

impl Hunk {
    /// 1-based number of the first old line this hunk covers (one past `old_start` when the
    /// hunk has no old lines).
    pub fn old_first(&self) -> u64 {
        first_line(self.old_start, self.old_len)
    }

    /// 1-based number of the first new line this hunk covers.
    pub fn new_first(&self) -> u64 {
        first_line(self.new_start, self.new_len)
    }
}

pub(crate) fn first_line(start: u64, len: u64) -> u64 {
    if len == 0 {
        start.saturating_add(1)
    } else {
        start
    }
}

/// One file section of a parsed patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// Relative path (passed [`check_patch_path`]).
    pub path: String,
    /// What the section does.
    pub kind: FileKind,
    /// Old mode: from `deleted file mode` or `old mode`; `None` when the patch does not say
    /// (added files, and content changes that keep the mode).
    pub old_mode: Option<FileMode>,
    /// New mode: from `new file mode` or `new mode`; `None` when the patch does not say
    /// (deleted files, and content changes that keep the mode).
    pub new_mode: Option<FileMode>,
    /// Hunks in order (empty for empty added/deleted files and pure mode changes).
    pub hunks: Vec<Hunk>,
    /// `+` lines.
    pub added: u64,
    /// `-` lines.
    pub removed: u64,
    /// 1-based line of the patch holding the `diff --git` header.
    pub patch_line: u64,
}

impl FilePatch {
    /// Old-side line numbers (1-based) this section removes or replaces, in increasing order.
    /// Pure insertions touch no old line.
    pub fn touched_old_lines(&self) -> Vec<u64> {
        let mut out = Vec::new();
        for h in &self.hunks {
            let mut old = h.old_first();
            for l in &h.lines {
                match l.kind {
                    LineKind::Context => old = old.saturating_add(1),
                    LineKind::Removed => {
                        out.push(old);
                        old = old.saturating_add(1);
                    }
                    LineKind::Added => {}
                }
            }
        }
        out
    }

    /// `(new line number, text)` of every `+` line, in order.
    pub fn added_lines(&self) -> impl Iterator<Item = (u64, &str)> + '_ {
        self.hunks.iter().flat_map(|h| {
            let mut new = h.new_first();
            h.lines.iter().filter_map(move |l| match l.kind {
                LineKind::Removed => None,
                LineKind::Context => {
                    new = new.saturating_add(1);
                    None
                }
                LineKind::Added => {
                    let n = new;
                    new = new.saturating_add(1);
                    Some((n, l.text.as_str()))
                }
            })
        })
    }
}

/// A patch that passed [`parse_patch`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParsedPatch {
    /// Sections in strictly increasing path order.
    pub files: Vec<FilePatch>,
}

impl ParsedPatch {
    /// `(path, new line number, text)` of every added line of every section, for the gate's
    /// secret scan.
    pub fn added_lines(&self) -> impl Iterator<Item = (&str, u64, &str)> + '_ {
        self.files
            .iter()
            .flat_map(|f| f.added_lines().map(move |(n, t)| (f.path.as_str(), n, t)))
    }

    /// Old-side line numbers of `path` that the patch removes or replaces (empty when the
    /// patch does not touch `path`). For the gate's "hunks touching redacted lines" rule; note
    /// that context lines are not "touched" but must still match when the patch is applied.
    pub fn touched_old_lines(&self, path: &str) -> Vec<u64> {
        self.file(path)
            .map(FilePatch::touched_old_lines)
            .unwrap_or_default()
    }

    /// The section for `path`, if any.
    pub fn file(&self, path: &str) -> Option<&FilePatch> {
        self.files
            .binary_search_by(|f| f.path.as_bytes().cmp(path.as_bytes()))
            .ok()
            .and_then(|i| self.files.get(i))
    }

    /// Number of sections.
    pub fn files_changed(&self) -> u64 {
        self.files.len() as u64
    }

    /// `+` lines over all sections.
    pub fn lines_added(&self) -> u64 {
        self.files.iter().map(|f| f.added).sum()
    }

    /// `-` lines over all sections.
    pub fn lines_removed(&self) -> u64 {
        self.files.iter().map(|f| f.removed).sum()
    }
}

/// One mebibyte.
const MIB: u64 = 1024 * 1024;

/// Caps of the strict parser. Every field is an inclusive maximum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLimits {
    /// Bytes of the whole patch (default 32 MiB, the artifact member cap).
    pub max_patch_bytes: u64,
    /// File sections (default 10 000).
    pub max_files: u64,
    /// Hunks over all sections (default 100 000).
    pub max_hunks: u64,
    /// Hunk lines (context, removed, added) over all sections, and the LEN of any one hunk
    /// (default 1 000 000).
    pub max_lines: u64,
    /// Bytes of one path (default 1024, as in the bundle).
    pub max_path_bytes: usize,
    /// Components of one path (default 64, as in the bundle).
    pub max_depth: usize,
}

impl Default for DiffLimits {
    fn default() -> Self {
        DiffLimits {
            max_patch_bytes: 32 * MIB,
            max_files: 10_000,
            max_hunks: 100_000,
            max_lines: 1_000_000,
            max_path_bytes: 1024,
            max_depth: 64,
        }
    }
}

/// Options of the writer. Every `max_*` field is an inclusive maximum; passing one stops the
/// walk and the patch so far is returned with [`DiffStats::limit_hit`] set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffOptions {
    /// Sections (added, deleted, modified, mode-changed files); default 200.
    pub max_changed_files: u64,
    /// Added plus removed lines; default 20 000.
    pub max_changed_lines: u64,
    /// Bytes read of any one changed file, before or after (unchanged files of any size are
    /// compared in chunks); default 8 MiB. Peak memory is about twice this plus 50 bytes per
    /// line of the largest changed pair.
    pub max_file_bytes: u64,
    /// Bytes of the patch; default 32 MiB (what the gate accepts).
    pub max_diff_bytes: u64,
    /// Directory entries listed over both trees; default 500 000 (bounds time and memory
    /// against a generator that creates millions of files).
    pub max_walk_entries: u64,
    /// Refused paths listed; default 1 000.
    pub max_refused: usize,
    /// Bytes of one path; default 1024 (must not exceed the gate's [`DiffLimits`]).
    pub max_path_bytes: usize,
    /// Components of one path; default 64 (must not exceed the gate's [`DiffLimits`]).
    pub max_depth: usize,
    /// Top-level names skipped in both trees (the worker's own files in the workdir).
    pub ignore: Vec<String>,
    /// Which NEW paths of `after` (absent from `before`) to leave out unread: the worker's
    /// `.gitignore` matcher. A path present in `before` is never left out (git tracks it).
    /// Counted in [`DiffStats::ignored`]; an ignored directory counts once and is never
    /// listed.
    pub ignore_new: Option<IgnoreNew>,
}

/// Decides whether a new path (relative, `/`-separated; `true` for a directory) is left out
/// of the diff. See [`DiffOptions::ignore_new`].
#[derive(Clone)]
pub struct IgnoreNew(pub std::sync::Arc<dyn Fn(&str, bool) -> bool + Send + Sync>);

impl std::fmt::Debug for IgnoreNew {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IgnoreNew(..)")
    }
}

impl PartialEq for IgnoreNew {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for IgnoreNew {}

impl Default for DiffOptions {
    fn default() -> Self {
        let job = crate::limits::JobLimits::default();
        DiffOptions {
            max_changed_files: job.max_changed_files,
            max_changed_lines: job.max_changed_lines,
            max_file_bytes: 8 * MIB,
            max_diff_bytes: 32 * MIB,
            max_walk_entries: 500_000,
            max_refused: 1_000,
            max_path_bytes: 1024,
            max_depth: 64,
            ignore: Vec::new(),
            ignore_new: None,
        }
    }
}

impl DiffOptions {
    /// Defaults, with the changed-files and changed-lines caps of a job's request.
    pub fn for_job(limits: &crate::limits::JobLimits) -> Self {
        DiffOptions {
            max_changed_files: limits.max_changed_files,
            max_changed_lines: limits.max_changed_lines,
            ..DiffOptions::default()
        }
    }
}

/// Which writer limit stopped the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DiffLimit {
    /// [`DiffOptions::max_changed_files`].
    ChangedFiles,
    /// [`DiffOptions::max_changed_lines`].
    ChangedLines,
    /// [`DiffOptions::max_diff_bytes`].
    DiffBytes,
    /// [`DiffOptions::max_file_bytes`].
    FileBytes,
    /// [`DiffOptions::max_walk_entries`].
    WalkEntries,
    /// [`DiffOptions::max_refused`].
    RefusedPaths,
}

impl DiffLimit {
    /// The id recorded in the packet's `limits_hit`.
    pub fn as_str(self) -> &'static str {
        match self {
            DiffLimit::ChangedFiles => "changed-files",
            DiffLimit::ChangedLines => "changed-lines",
            DiffLimit::DiffBytes => "diff-bytes",
            DiffLimit::FileBytes => "file-bytes",
            DiffLimit::WalkEntries => "walk-entries",
            DiffLimit::RefusedPaths => "refused-paths",
        }
    }
}

impl fmt::Display for DiffLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the writer produced, besides the patch bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DiffStats {
    /// Sections written.
    pub files_changed: u64,
    /// `+` lines written.
    pub lines_added: u64,
    /// `-` lines written.
    pub lines_removed: u64,
    /// Bytes of patch written.
    pub diff_bytes: u64,
    /// Paths not included, with the rule id, in path order.
    pub refused: Vec<RefusedPath>,
    /// New paths left out by [`DiffOptions::ignore_new`] (never read; a directory counts
    /// once).
    pub ignored: u64,
    /// The limit that stopped the walk; the patch is then complete up to that point (whole
    /// sections only, in path order) and covers nothing after it.
    pub limit_hit: Option<DiffLimit>,
}

/// A patch in memory with its stats (see [`diff_trees`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeDiff {
    /// The patch, in the format above.
    pub patch: Vec<u8>,
    /// Counts, refusals and the limit hit.
    pub stats: DiffStats,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_are_unique_and_dotted() {
        let mut seen = std::collections::HashSet::new();
        for r in rule::ALL {
            assert!(r.starts_with("diff."), "{r}");
            assert!(seen.insert(*r), "duplicate rule id {r}");
        }
    }

    #[test]
    fn file_mode_spellings() {
        assert_eq!(FileMode::from_git("100644"), Some(FileMode::Regular));
        assert_eq!(FileMode::from_git("100755"), Some(FileMode::Executable));
        for bad in ["120000", "160000", "100664", "0100644", "40000", ""] {
            assert_eq!(FileMode::from_git(bad), None, "{bad}");
        }
        assert_eq!(FileMode::from_unix(0o744), FileMode::Executable);
        assert_eq!(FileMode::from_unix(0o655), FileMode::Regular);
    }
}
