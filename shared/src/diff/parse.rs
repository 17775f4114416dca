//! Strict parser of `patch.diff` as written by a (hostile) worker.
//!
//! Guards against: everything git would read more leniently than we do (renames, copies,
//! symlink and gitlink modes, binary patches, quoted names, `index` lines, function-context
//! text), path escapes (`/`, `..`, `.git/`), duplicate and case-colliding sections, hunks whose
//! counts or positions lie, misplaced end-of-file markers, trailing garbage, and bombs: the
//! size is checked before anything else, declared hunk lengths are checked against the caps
//! before any line is read, and nothing is preallocated from a declared count.
//! On `Ok`: the [`ParsedPatch`] follows the grammar in the module doc exactly; sections are in
//! strictly increasing path order; counts (`added`, `removed`) are recomputed, not declared.
//! Does not check: that the patch applies (use [`super::apply_file`] or git) or what the
//! added lines contain.

use std::collections::{HashMap, HashSet};

use super::{
    check_patch_path, collision_key, first_line, rule, DiffError, DiffLimits, FileKind, FileMode,
    FilePatch, Hunk, HunkLine, LineKind, ParsedPatch,
};

/// Longest section name kept in an error.
const MAX_SECTION_CHARS: usize = 200;
/// The end-of-file marker, exactly.
const NO_NEWLINE: &[u8] = b"\\ No newline at end of file";

/// Parses a patch under `limits`, accepting exactly the grammar of the module doc.
///
/// Every error is a [`DiffError::Rejected`] naming the rule id, the 1-based patch line and the
/// section (path) it was found in.
pub fn parse_patch(bytes: &[u8], limits: &DiffLimits) -> Result<ParsedPatch, DiffError> {
    let mut p = Parser {
        lines: Lines {
            data: bytes,
            pos: 0,
            line: 0,
        },
        limits,
        section: "-".into(),
        hunks_total: 0,
        lines_total: 0,
    };
    // FORMATS.md: "Caps: patch bytes ... (`diff.too-large`)", checked before any parsing.
    if bytes.len() as u64 > limits.max_patch_bytes {
        return Err(p.err(
            rule::TOO_LARGE,
            0,
            format!(
                "patch of {} bytes, limit {}",
                bytes.len(),
                limits.max_patch_bytes
            ),
        ));
    }
    // FORMATS.md: "Every line ends with LF; bytes after the last LF are rejected
    // (`diff.trailing`)."
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        let line = bytes.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        return Err(p.err(rule::TRAILING, line, "last line has no line feed".into()));
    }

    let mut files: Vec<FilePatch> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut keys: HashMap<String, String> = HashMap::new();
    while let Some(line) = p.lines.peek() {
        let no = p.lines.line + 1;
        if !line.starts_with(b"diff --git ") {
            // Only reachable before the first section: a section checks what follows it.
            let (r, why) = foreign(line).unwrap_or((rule::HEADER, "expected `diff --git`"));
            return Err(p.err(r, no, why.into()));
        }
        if files.len() as u64 >= limits.max_files {
            return Err(p.err(
                rule::TOO_LARGE,
                no,
                format!("more than {} file sections", limits.max_files),
            ));
        }
        let fp = p.section()?;
        // FORMATS.md: "Sections appear in strictly increasing bytewise order of PATH: a
        // repeated PATH is `diff.duplicate`, a decreasing one `diff.order`. Two PATHs with the
        // same collision key (Unicode NFC, lowercase) are `diff.collision`."
        if seen.contains(&fp.path) {
            return Err(p.err(
                rule::DUPLICATE,
                fp.patch_line,
                "second section for this path".into(),
            ));
        }
        if let Some(prev) = files.last() {
            if fp.path.as_bytes() < prev.path.as_bytes() {
                return Err(p.err(
                    rule::ORDER,
                    fp.patch_line,
                    format!(
                        "section comes after {:?}; sections must be in increasing path order",
                        shorten(&prev.path)
                    ),
                ));
            }
        }
        let key = collision_key(&fp.path);
        if let Some(other) = keys.get(&key) {
            return Err(p.err(
                rule::COLLISION,
                fp.patch_line,
                format!(
                    "same file as {:?} on a case-insensitive file system",
                    shorten(other)
                ),
            ));
        }
        keys.insert(key, fp.path.clone());
        seen.insert(fp.path.clone());
        files.push(fp);
    }
    Ok(ParsedPatch { files })
}

/// A cursor over LF-terminated lines (the caller checked the input ends with LF).
struct Lines<'a> {
    data: &'a [u8],
    pos: usize,
    /// Number of the line last returned by `next` (1-based; 0 before the first).
    line: u64,
}

impl<'a> Lines<'a> {
    fn peek(&self) -> Option<&'a [u8]> {
        let rest = self.data.get(self.pos..)?;
        if rest.is_empty() {
            return None;
        }
        let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
        rest.get(..end)
    }

    fn next(&mut self) -> Option<(u64, &'a [u8])> {
        let l = self.peek()?;
        self.pos += l.len() + 1;
        self.line += 1;
        Some((self.line, l))
    }
}

struct Parser<'a, 'l> {
    lines: Lines<'a>,
    limits: &'l DiffLimits,
    section: String,
    hunks_total: u64,
    lines_total: u64,
}

/// State of the end-of-file markers within one section.
#[derive(Default)]
struct Eof {
    old: bool,
    new: bool,
}

impl<'a> Parser<'a, '_> {
    fn err(&self, rule: &'static str, line: u64, reason: String) -> DiffError {
        DiffError::Rejected {
            rule,
            line,
            section: self.section.clone(),
            reason,
        }
    }

    /// A header line as text: UTF-8, no CR.
    fn header_text<'b>(
        &self,
        no: u64,
        raw: &'b [u8],
        r: &'static str,
    ) -> Result<&'b str, DiffError> {
        let text = std::str::from_utf8(raw)
            .map_err(|_| self.err(r, no, "header line is not UTF-8".into()))?;
        if text.contains('\r') {
            return Err(self.err(r, no, "carriage return in a header line".into()));
        }
        Ok(text)
    }

    fn section(&mut self) -> Result<FilePatch, DiffError> {
        let Some((no, raw)) = self.lines.next() else {
            return Err(self.err(
                rule::HEADER,
                self.lines.line,
                "expected `diff --git`".into(),
            ));
        };
        let rest = raw.get(b"diff --git ".len()..).unwrap_or_default();
        self.section = shorten(&String::from_utf8_lossy(rest));
        let text = self.header_text(no, rest, rule::HEADER)?;
        let path = self.header_path(no, text)?;
        self.section = shorten(&path);

        let mut fp = FilePatch {
            path,
            kind: FileKind::Modified,
            old_mode: None,
            new_mode: None,
            hunks: Vec::new(),
            added: 0,
            removed: 0,
            patch_line: no,
        };

        // Extended header.
        match self.lines.peek() {
            Some(l) if l.starts_with(b"new file mode ") => {
                let (no, raw) = self.next_line()?;
                fp.kind = FileKind::Added;
                fp.new_mode = Some(self.mode(no, raw, "new file mode ")?);
            }
            Some(l) if l.starts_with(b"deleted file mode ") => {
                let (no, raw) = self.next_line()?;
                fp.kind = FileKind::Deleted;
                fp.old_mode = Some(self.mode(no, raw, "deleted file mode ")?);
            }
            Some(l) if l.starts_with(b"old mode ") => {
                let (no, raw) = self.next_line()?;
                let old = self.mode(no, raw, "old mode ")?;
                let (no2, raw2) = match self.lines.next() {
                    Some((n, r)) if r.starts_with(b"new mode ") => (n, r),
                    Some((n, r)) => return Err(self.unexpected(n, r, "expected `new mode`")),
                    None => {
                        return Err(self.err(rule::HEADER, no + 1, "expected `new mode`".into()))
                    }
                };
                let new = self.mode(no2, raw2, "new mode ")?;
                if old == new {
                    return Err(self.err(rule::HEADER, no2, "old and new mode are equal".into()));
                }
                fp.kind = FileKind::ModeChange;
                fp.old_mode = Some(old);
                fp.new_mode = Some(new);
            }
            Some(l) if l.starts_with(b"--- ") => {}
            Some(l) if !l.starts_with(b"diff --git ") => {
                return Err(self.unexpected(self.lines.line + 1, l, "unexpected header line"));
            }
            _ => {
                return Err(self.err(rule::HEADER, no, "section changes nothing".into()));
            }
        }

        // Content.
        match self.lines.peek() {
            Some(l) if l.starts_with(b"--- ") => {
                self.names(&fp)?;
                self.hunks(&mut fp)?;
                if fp.kind == FileKind::ModeChange {
                    fp.kind = FileKind::Modified;
                }
            }
            None => return Ok(fp),
            Some(l) if l.starts_with(b"diff --git ") => return Ok(fp),
            Some(l) => {
                return Err(self.unexpected(self.lines.line + 1, l, "unexpected header line"));
            }
        }

        // After the hunks: the next section or the end.
        match self.lines.peek() {
            None => Ok(fp),
            Some(l) if l.starts_with(b"diff --git ") => Ok(fp),
            Some(l) => {
                let no = self.lines.line + 1;
                Err(match l.first() {
                    Some(b' ' | b'+' | b'-') => self.err(
                        rule::HUNK_COUNT,
                        no,
                        "hunk has more lines than its header counts".into(),
                    ),
                    Some(b'\\') => {
                        self.err(rule::NEWLINE, no, "end-of-file marker out of place".into())
                    }
                    _ => match foreign(l) {
                        Some((r, why)) => self.err(r, no, why.into()),
                        None => self.err(rule::TRAILING, no, "line belongs to no section".into()),
                    },
                })
            }
        }
    }

    fn next_line(&mut self) -> Result<(u64, &'a [u8]), DiffError> {
        let no = self.lines.line + 1;
        self.lines
            .next()
            .ok_or_else(|| self.err(rule::HEADER, no, "unexpected end of patch".into()))
    }

    /// An error for a line that has no place here, naming the most specific rule.
    fn unexpected(&self, no: u64, line: &[u8], why: &'static str) -> DiffError {
        let (r, why) = foreign(line).unwrap_or((rule::HEADER, why));
        self.err(r, no, why.into())
    }

    /// Splits `a/P b/P` (both halves byte-equal) and checks P.
    ///
    /// FORMATS.md: "The `a/` and `b/` names of the header, `---` and `+++` lines MUST be the
    /// same path (`diff.rename`)."
    fn header_path(&self, no: u64, rest: &str) -> Result<String, DiffError> {
        if rest.starts_with('"') {
            return Err(self.err(rule::QUOTED_PATH, no, "quoted path".into()));
        }
        let b = rest.as_bytes();
        if !b.starts_with(b"a/") {
            return Err(self.err(rule::HEADER, no, "`diff --git` without `a/`".into()));
        }
        let ok_len = b.len() >= 5 && (b.len() - 5).is_multiple_of(2);
        let l = b.len().saturating_sub(5) / 2;
        let (first, sep, second) = (b.get(2..2 + l), b.get(2 + l..5 + l), b.get(5 + l..));
        let path = match (ok_len, first, sep, second) {
            (true, Some(p1), Some(b" b/"), Some(p2)) if p1 == p2 => std::str::from_utf8(p1)
                .map_err(|_| self.err(rule::PATH, no, "path is not UTF-8".into()))?,
            _ => return Err(self.err(rule::RENAME, no, "`a/` and `b/` names differ".into())),
        };
        self.check_path(no, path)?;
        Ok(path.to_owned())
    }

    fn check_path(&self, no: u64, path: &str) -> Result<(), DiffError> {
        check_patch_path(path, self.limits.max_path_bytes, self.limits.max_depth)
            .map_err(|(r, why)| self.err(r, no, why))
    }

    /// FORMATS.md: "Only modes 100644 and 100755 exist; 120000 (symlink), 160000 (gitlink) or
    /// any other mode is rejected (`diff.mode`)."
    fn mode(&self, no: u64, raw: &[u8], prefix: &str) -> Result<FileMode, DiffError> {
        let text = self.header_text(no, raw, rule::HEADER)?;
        let m = text.get(prefix.len()..).unwrap_or_default();
        FileMode::from_git(m).ok_or_else(|| {
            let shown = if m.len() <= 7 && m.bytes().all(|c| c.is_ascii_digit()) {
                m.to_owned()
            } else {
                "(malformed)".to_owned()
            };
            let what = match m {
                "120000" => " (symlink)",
                "160000" => " (gitlink)",
                _ => "",
            };
            self.err(
                rule::MODE,
                no,
                format!("mode {shown}{what}: only 100644 and 100755 are allowed"),
            )
        })
    }

    /// The `---` and `+++` lines.
    fn names(&mut self, fp: &FilePatch) -> Result<(), DiffError> {
        let (old_null, new_null) = match fp.kind {
            FileKind::Added => (true, false),
            FileKind::Deleted => (false, true),
            FileKind::Modified | FileKind::ModeChange => (false, false),
        };
        let (no, raw) = self.next_line()?;
        let text = self.header_text(no, raw, rule::HEADER)?;
        let name = text.strip_prefix("--- ").unwrap_or_default();
        self.expect_name(no, name, "a/", &fp.path, old_null)?;
        let (no, raw) = match self.lines.next() {
            Some((n, r)) if r.starts_with(b"+++ ") => (n, r),
            Some((n, r)) => return Err(self.unexpected(n, r, "expected `+++`")),
            None => return Err(self.err(rule::HEADER, no + 1, "expected `+++`".into())),
        };
        let text = self.header_text(no, raw, rule::HEADER)?;
        let name = text.strip_prefix("+++ ").unwrap_or_default();
        self.expect_name(no, name, "b/", &fp.path, new_null)
    }

    fn expect_name(
        &self,
        no: u64,
        name: &str,
        prefix: &str,
        path: &str,
        null: bool,
    ) -> Result<(), DiffError> {
        if name == "/dev/null" {
            return if null {
                Ok(())
            } else {
                Err(self.err(
                    rule::HEADER,
                    no,
                    "`/dev/null` where the path belongs".into(),
                ))
            };
        }
        if null {
            return Err(self.err(rule::HEADER, no, "expected `/dev/null`".into()));
        }
        if name.starts_with('"') {
            return Err(self.err(rule::QUOTED_PATH, no, "quoted path".into()));
        }
        match name.strip_prefix(prefix) {
            Some(p) if p == path => Ok(()),
            Some(p) => {
                self.check_path(no, p)?;
                Err(self.err(
                    rule::RENAME,
                    no,
                    "name differs from the `diff --git` header".into(),
                ))
            }
            None if name.starts_with('/') => {
                Err(self.err(rule::ABS_PATH, no, "absolute path".into()))
            }
            None => Err(self.err(rule::HEADER, no, format!("name without `{prefix}`"))),
        }
    }

    fn hunks(&mut self, fp: &mut FilePatch) -> Result<(), DiffError> {
        let mut eof = Eof::default();
        // Sum of (new LEN - old LEN) of the hunks so far.
        let mut delta: i128 = 0;
        while let Some(l) = self.lines.peek() {
            if !l.starts_with(b"@@ ") {
                break;
            }
            let (no, raw) = self.next_line()?;
            let h = self.hunk(no, raw, fp, &mut eof, delta)?;
            delta += i128::from(h.new_len) - i128::from(h.old_len);
            for l in &h.lines {
                match l.kind {
                    LineKind::Added => fp.added += 1,
                    LineKind::Removed => fp.removed += 1,
                    LineKind::Context => {}
                }
            }
            fp.hunks.push(h);
        }
        if fp.hunks.is_empty() {
            let no = self.lines.line + 1;
            return Err(match self.lines.peek() {
                Some(l) => self.unexpected(no, l, "`---`/`+++` without a hunk"),
                None => self.err(rule::HEADER, no, "`---`/`+++` without a hunk".into()),
            });
        }
        Ok(())
    }

    fn hunk(
        &mut self,
        no: u64,
        raw: &[u8],
        fp: &FilePatch,
        eof: &mut Eof,
        delta: i128,
    ) -> Result<Hunk, DiffError> {
        let text = self.header_text(no, raw, rule::HUNK_HEADER)?;
        let (os, ol, ns, nl) = parse_hunk_header(text).ok_or_else(|| {
            self.err(
                rule::HUNK_HEADER,
                no,
                "expected exactly `@@ -START[,LEN] +START[,LEN] @@` in canonical form".into(),
            )
        })?;
        self.hunks_total += 1;
        if self.hunks_total > self.limits.max_hunks {
            return Err(self.err(
                rule::TOO_LARGE,
                no,
                format!("more than {} hunks", self.limits.max_hunks),
            ));
        }
        if ol > self.limits.max_lines || nl > self.limits.max_lines {
            return Err(self.err(
                rule::TOO_LARGE,
                no,
                format!("hunk declares more than {} lines", self.limits.max_lines),
            ));
        }
        if eof.old || eof.new {
            return Err(self.err(rule::NEWLINE, no, "hunk after an end-of-file marker".into()));
        }
        // New and deleted files: one hunk covering the whole file.
        match fp.kind {
            FileKind::Added if !(os == 0 && ol == 0 && ns == 1 && fp.hunks.is_empty()) => {
                return Err(self.err(
                    rule::HUNK_ORDER,
                    no,
                    "a new file has exactly one hunk `@@ -0,0 +1,N @@`".into(),
                ));
            }
            FileKind::Deleted if !(ns == 0 && nl == 0 && os == 1 && fp.hunks.is_empty()) => {
                return Err(self.err(
                    rule::HUNK_ORDER,
                    no,
                    "a deleted file has exactly one hunk `@@ -1,N +0,0 @@`".into(),
                ));
            }
            _ => {}
        }
        // FORMATS.md: "hunks are in increasing, non-overlapping old-line order and each new
        // START is consistent with the lines added and removed by the hunks before it
        // (`diff.hunk-order`)."
        let (old_first, new_first) = (first_line(os, ol), first_line(ns, nl));
        if let Some(prev) = fp.hunks.last() {
            if old_first < prev.old_first().saturating_add(prev.old_len) {
                return Err(self.err(
                    rule::HUNK_ORDER,
                    no,
                    "hunk overlaps or precedes the previous one".into(),
                ));
            }
        }
        if i128::from(new_first) - i128::from(old_first) != delta {
            return Err(self.err(
                rule::HUNK_ORDER,
                no,
                "new-side start is inconsistent with the hunks before it".into(),
            ));
        }

        let (mut rem_old, mut rem_new) = (ol, nl);
        let mut lines: Vec<HunkLine> = Vec::new();
        let mut changes = false;
        while rem_old > 0 || rem_new > 0 {
            let next_no = self.lines.line + 1;
            let Some((lno, raw)) = self.lines.next() else {
                return Err(self.err(rule::HUNK_COUNT, next_no, "patch ends inside a hunk".into()));
            };
            if raw.first() == Some(&b'\\') {
                self.marker(lno, raw, &mut lines, eof, rem_old, rem_new)?;
                continue;
            }
            self.lines_total += 1;
            if self.lines_total > self.limits.max_lines {
                return Err(self.err(
                    rule::TOO_LARGE,
                    lno,
                    format!("more than {} hunk lines", self.limits.max_lines),
                ));
            }
            let kind = match raw.first() {
                Some(b' ') if rem_old > 0 && rem_new > 0 => LineKind::Context,
                Some(b'-') if rem_old > 0 => LineKind::Removed,
                Some(b'+') if rem_new > 0 => LineKind::Added,
                _ => {
                    return Err(self.err(
                        rule::HUNK_COUNT,
                        lno,
                        "line does not fit the hunk's counts".into(),
                    ))
                }
            };
            let after_eof = match kind {
                LineKind::Context => eof.old || eof.new,
                LineKind::Removed => eof.old,
                LineKind::Added => eof.new,
            };
            if after_eof {
                return Err(self.err(
                    rule::NEWLINE,
                    lno,
                    "line after the end-of-file marker of its side".into(),
                ));
            }
            match kind {
                LineKind::Context => {
                    rem_old -= 1;
                    rem_new -= 1;
                }
                LineKind::Removed => {
                    rem_old -= 1;
                    changes = true;
                }
                LineKind::Added => {
                    rem_new -= 1;
                    changes = true;
                }
            }
            let content = raw.get(1..).unwrap_or_default();
            if content.contains(&0) {
                return Err(self.err(rule::BINARY, lno, "NUL byte in a hunk line".into()));
            }
            let text = std::str::from_utf8(content)
                .map_err(|_| self.err(rule::BINARY, lno, "hunk line is not UTF-8".into()))?;
            lines.push(HunkLine {
                kind,
                text: text.to_owned(),
                no_newline: false,
            });
        }
        if self.lines.peek().is_some_and(|l| l.first() == Some(&b'\\')) {
            let (lno, raw) = self.next_line()?;
            self.marker(lno, raw, &mut lines, eof, 0, 0)?;
        }
        if !changes {
            return Err(self.err(rule::HUNK_HEADER, no, "hunk changes nothing".into()));
        }
        Ok(Hunk {
            old_start: os,
            old_len: ol,
            new_start: ns,
            new_len: nl,
            lines,
            patch_line: no,
        })
    }

    /// FORMATS.md: "`\ No newline at end of file` follows the last line of the old side
    /// (after SP or `-`), of the new side (after SP or `+`), or of both (after SP); nothing of
    /// that side may follow it, in this hunk or a later one, and the marker is spelled exactly
    /// (`diff.newline`)." And: "the line it follows is not empty": a last line without a
    /// newline holds at least one byte, so no content has an empty one, and a patch claiming it
    /// would parse here yet apply to nothing (issue #29; `git apply` refuses it too).
    fn marker(
        &self,
        no: u64,
        raw: &[u8],
        lines: &mut [HunkLine],
        eof: &mut Eof,
        rem_old: u64,
        rem_new: u64,
    ) -> Result<(), DiffError> {
        if raw != NO_NEWLINE {
            return Err(self.err(rule::NEWLINE, no, "malformed end-of-file marker".into()));
        }
        let Some(last) = lines.last_mut() else {
            return Err(self.err(rule::NEWLINE, no, "marker before any line".into()));
        };
        if last.no_newline {
            return Err(self.err(rule::NEWLINE, no, "repeated marker".into()));
        }
        if last.text.is_empty() {
            return Err(self.err(
                rule::NEWLINE,
                no,
                "marker after an empty line (a last line without a newline is never empty)".into(),
            ));
        }
        let (ends_old, ends_new) = match last.kind {
            LineKind::Context => (true, true),
            LineKind::Removed => (true, false),
            LineKind::Added => (false, true),
        };
        if (ends_old && rem_old > 0) || (ends_new && rem_new > 0) {
            return Err(self.err(
                rule::NEWLINE,
                no,
                "marker before the last line of its side".into(),
            ));
        }
        eof.old |= ends_old;
        eof.new |= ends_new;
        last.no_newline = true;
        Ok(())
    }
}

/// The most specific rule for a line that is not part of the format, if it is a known git
/// construct we refuse.
fn foreign(line: &[u8]) -> Option<(&'static str, &'static str)> {
    const RENAME: &[&[u8]] = &[
        b"rename from ",
        b"rename to ",
        b"copy from ",
        b"copy to ",
        b"similarity index ",
        b"dissimilarity index ",
        b"rename old ",
        b"rename new ",
    ];
    const BINARY: &[&[u8]] = &[
        b"GIT binary patch",
        b"Binary files ",
        b"literal ",
        b"delta ",
    ];
    if RENAME.iter().any(|p| line.starts_with(p)) {
        return Some((rule::RENAME, "renames and copies are not allowed"));
    }
    if BINARY.iter().any(|p| line.starts_with(p)) {
        return Some((rule::BINARY, "binary patches are not allowed"));
    }
    if line.starts_with(b"index ") {
        return Some((rule::HEADER, "`index` lines are not part of the format"));
    }
    None
}

/// Parses `@@ -A[,B] +C[,D] @@` in canonical form: `,1` never written, START 0 only with
/// LEN 0, decimal without leading zeros.
fn parse_hunk_header(s: &str) -> Option<(u64, u64, u64, u64)> {
    let inner = s.strip_prefix("@@ -")?.strip_suffix(" @@")?;
    let (old, new) = inner.split_once(" +")?;
    let (os, ol) = parse_range(old)?;
    let (ns, nl) = parse_range(new)?;
    Some((os, ol, ns, nl))
}

fn parse_range(s: &str) -> Option<(u64, u64)> {
    let (start, len) = match s.split_once(',') {
        Some((a, b)) => {
            let len = parse_num(b)?;
            if len == 1 {
                return None; // ",1" is never written.
            }
            (parse_num(a)?, len)
        }
        None => (parse_num(s)?, 1),
    };
    if start == 0 && len != 0 {
        return None;
    }
    Some((start, len))
}

fn parse_num(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 20 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if b.len() > 1 && b[0] == b'0' {
        return None;
    }
    s.parse().ok()
}

fn shorten(s: &str) -> String {
    s.chars().take(MAX_SECTION_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<ParsedPatch, DiffError> {
        parse_patch(s.as_bytes(), &DiffLimits::default())
    }

    fn rule_of(s: &str) -> &'static str {
        match parse(s) {
            Ok(_) => "ok",
            Err(e) => e.rule(),
        }
    }

    const MODIFY: &str = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n";

    #[test]
    fn parses_a_modification() {
        let p = parse(MODIFY).unwrap();
        assert_eq!(p.files.len(), 1);
        let f = &p.files[0];
        assert_eq!((f.path.as_str(), f.kind), ("f", FileKind::Modified));
        assert_eq!((f.added, f.removed), (1, 1));
        assert_eq!(p.added_lines().collect::<Vec<_>>(), vec![("f", 2, "B")]);
        assert_eq!(p.touched_old_lines("f"), vec![2]);
        assert!(p.touched_old_lines("g").is_empty());
    }

    #[test]
    fn empty_patch_is_no_change() {
        assert!(parse("").unwrap().files.is_empty());
    }

    #[test]
    fn parses_added_deleted_empty_and_mode_sections() {
        let s = "diff --git a/a b/a\nnew file mode 100755\n--- /dev/null\n+++ b/a\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n\
                 diff --git a/b b/b\nnew file mode 100644\n\
                 diff --git a/c b/c\ndeleted file mode 100644\n--- a/c\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-1\n-2\n\
                 diff --git a/d b/d\ndeleted file mode 100755\n\
                 diff --git a/e b/e\nold mode 100644\nnew mode 100755\n\
                 diff --git a/f b/f\nold mode 100755\nnew mode 100644\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n";
        let p = parse(s).unwrap();
        let kinds: Vec<_> = p.files.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            vec![
                FileKind::Added,
                FileKind::Added,
                FileKind::Deleted,
                FileKind::Deleted,
                FileKind::ModeChange,
                FileKind::Modified
            ]
        );
        assert_eq!(p.files[0].new_mode, Some(FileMode::Executable));
        assert!(p.files[0].hunks[0].lines[0].no_newline);
        assert_eq!(p.files[5].old_mode, Some(FileMode::Executable));
        assert_eq!((p.lines_added(), p.lines_removed()), (2, 3));
        assert_eq!(p.touched_old_lines("c"), vec![1, 2]);
    }

    #[test]
    fn errors_name_rule_line_and_section() {
        let s = format!("{MODIFY}diff --git a/g b/g\nrename from x\n");
        let e = parse(&s).unwrap_err();
        match &e {
            DiffError::Rejected {
                rule,
                line,
                section,
                ..
            } => {
                assert_eq!((*rule, *line, section.as_str()), ("diff.rename", 10, "g"));
            }
            other => panic!("{other}"),
        }
        assert_eq!(
            e.to_string(),
            "patch line 10, section \"g\": rejected (diff.rename): renames and copies are not allowed"
        );
    }

    #[test]
    fn hunk_headers_must_be_canonical() {
        for (h, ok) in [
            ("@@ -1,3 +1,3 @@", true),
            ("@@ -1,3 +1,3 @@ fn main()", false),
            ("@@ -01,3 +1,3 @@", false),
            ("@@ -1,3 +1,+3 @@", false),
            ("@@ -1,3  +1,3 @@", false),
            ("@@ -0,3 +1,3 @@", false),
            ("@@ -1,3 +1,3 @@\r", false),
            ("@@ -99999999999999999999,3 +1,3 @@", false),
        ] {
            let s = format!("diff --git a/f b/f\n--- a/f\n+++ b/f\n{h}\n a\n-b\n+B\n c\n");
            assert_eq!(rule_of(&s) == "ok", ok, "{h:?}: {}", rule_of(&s));
        }
        // ",1" is never written: "-2,1" must be "-2".
        let s = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -2,1 +2 @@\n-b\n+B\n";
        assert_eq!(rule_of(s), rule::HUNK_HEADER);
    }

    #[test]
    fn count_lies_are_caught_both_ways() {
        let short = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,4 +1,3 @@\n a\n-b\n+B\n c\n";
        assert_eq!(rule_of(short), rule::HUNK_COUNT);
        let long = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n c\n";
        assert_eq!(rule_of(long), rule::HUNK_COUNT);
    }

    #[test]
    fn hunks_must_be_ordered_and_consistent() {
        let two = |h2: &str| {
            format!(
                "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n a\n+n\n b\n c\n{h2}\n x\n-y\n z\n"
            )
        };
        assert_eq!(rule_of(&two("@@ -20,3 +21,2 @@")), "ok");
        assert_eq!(rule_of(&two("@@ -20,3 +20,2 @@")), rule::HUNK_ORDER);
        assert_eq!(rule_of(&two("@@ -2,3 +3,2 @@")), rule::HUNK_ORDER);
    }

    /// Issue #29 (found by `diff_parse` fuzzing): a deletion of one empty line without a
    /// newline parsed, yet no old content satisfies it. Refused on every side.
    #[test]
    fn issue_29_an_empty_line_without_newline_is_refused() {
        let gone = "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-\n\\ No newline at end of file\n";
        assert_eq!(rule_of(gone), rule::NEWLINE);
        let base = "diff --git a/f b/f\n--- a/f\n+++ b/f\n";
        for hunk in [
            "@@ -1,2 +1 @@\n a\n-\n\\ No newline at end of file\n",
            "@@ -1 +1,2 @@\n a\n+\n\\ No newline at end of file\n",
            "@@ -1,2 +1,2 @@\n-a\n+b\n \n\\ No newline at end of file\n",
        ] {
            assert_eq!(rule_of(&format!("{base}{hunk}")), rule::NEWLINE, "{hunk}");
        }
        // A last line of one byte without a newline is fine.
        let one = "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n\\ No newline at end of file\n";
        assert_eq!(rule_of(one), "ok");
    }

    #[test]
    fn newline_marker_rules() {
        let base = "diff --git a/f b/f\n--- a/f\n+++ b/f\n";
        // Removing the final newline, and adding one.
        assert_eq!(
            rule_of(&format!(
                "{base}@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n"
            )),
            "ok"
        );
        assert_eq!(
            rule_of(&format!(
                "{base}@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n"
            )),
            "ok"
        );
        // Marker before the last line of its side, misspelled, repeated, first.
        assert_eq!(
            rule_of(&format!(
                "{base}@@ -1,2 +1,2 @@\n-a\n\\ No newline at end of file\n-b\n+a\n+b\n"
            )),
            rule::NEWLINE
        );
        assert_eq!(
            rule_of(&format!("{base}@@ -1 +1 @@\n-a\n+a\n\\ no newline\n")),
            rule::NEWLINE
        );
        assert_eq!(rule_of(&format!("{base}@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n\\ No newline at end of file\n")), rule::NEWLINE);
        assert_eq!(
            rule_of(&format!(
                "{base}@@ -1 +1 @@\n\\ No newline at end of file\n-a\n+a\n"
            )),
            rule::NEWLINE
        );
        // A hunk after the marker.
        assert_eq!(
            rule_of(&format!(
                "{base}@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n@@ -9 +9 @@\n-x\n+y\n"
            )),
            rule::NEWLINE
        );
    }

    #[test]
    fn cr_is_content_but_not_header() {
        let s = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\r\n+b\r\n";
        let p = parse(s).unwrap();
        assert_eq!(p.files[0].hunks[0].lines[1].text, "b\r");
        let s = "diff --git a/f b/f\r\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(rule_of(s), rule::HEADER);
    }

    #[test]
    fn caps_apply_before_reading_declared_lines() {
        let s = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,4000000000 +1,4000000000 @@\n a\n";
        assert_eq!(rule_of(s), rule::TOO_LARGE);
        let limits = DiffLimits {
            max_patch_bytes: 10,
            ..DiffLimits::default()
        };
        assert_eq!(
            parse_patch(MODIFY.as_bytes(), &limits).unwrap_err().rule(),
            rule::TOO_LARGE
        );
    }

    #[test]
    fn sections_that_change_nothing_are_rejected() {
        assert_eq!(rule_of("diff --git a/f b/f\n"), rule::HEADER);
        assert_eq!(
            rule_of("diff --git a/f b/f\n--- a/f\n+++ b/f\n"),
            rule::HEADER
        );
        assert_eq!(
            rule_of("diff --git a/f b/f\nold mode 100644\nnew mode 100644\n"),
            rule::HEADER
        );
        assert_eq!(
            rule_of("diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n b\n"),
            rule::HUNK_HEADER
        );
    }

    #[test]
    fn names_must_agree() {
        assert_eq!(
            rule_of("diff --git a/f b/g\nnew file mode 100644\n"),
            rule::RENAME
        );
        let s = "diff --git a/f b/f\n--- a/f\n+++ b/g\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(rule_of(s), rule::RENAME);
        let s = "diff --git a/f b/f\n--- a/f\n+++ b/../g\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(rule_of(s), rule::PARENT_DIR);
        let s = "diff --git a/f b/f\n--- /etc/passwd\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(rule_of(s), rule::ABS_PATH);
        let s = "diff --git a/f b/f\n--- /dev/null\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(rule_of(s), rule::HEADER);
        let s = "diff --git \"a/f\" \"b/f\"\nnew file mode 100644\n";
        assert_eq!(rule_of(s), rule::QUOTED_PATH);
    }

    #[test]
    fn paths_with_spaces_split_at_the_equal_halves() {
        let s = "diff --git a/x b/x b/x b/x\nnew file mode 100644\n";
        assert_eq!(parse(s).unwrap().files[0].path, "x b/x");
    }

    #[test]
    fn new_and_deleted_files_have_one_whole_hunk() {
        let s = "diff --git a/f b/f\nnew file mode 100644\n--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+a\n@@ -0,0 +1 @@\n+b\n";
        assert_eq!(rule_of(s), rule::HUNK_ORDER);
        let s = "diff --git a/f b/f\ndeleted file mode 100644\n--- a/f\n+++ /dev/null\n@@ -2 +1,0 @@\n-a\n";
        assert_eq!(rule_of(s), rule::HUNK_ORDER);
        let s = "diff --git a/f b/f\nnew file mode 100644\n--- /dev/null\n+++ b/f\n@@ -1 +1 @@\n-a\n+a\n";
        assert_eq!(rule_of(s), rule::HUNK_ORDER);
    }

    #[test]
    fn parser_never_panics_on_prefixes_of_a_valid_patch() {
        let s = "diff --git a/a b/a\nnew file mode 100755\n--- /dev/null\n+++ b/a\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n\
                 diff --git a/f b/f\nold mode 100755\nnew mode 100644\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n";
        for cut in 0..=s.len() {
            let _ = parse_patch(&s.as_bytes()[..cut], &DiffLimits::default());
            let mut v = s.as_bytes().to_vec();
            let at = cut.min(v.len() - 1);
            v[at] ^= 0x20;
            let _ = parse_patch(&v, &DiffLimits::default());
        }
    }
}
