//! Exact application of one parsed section to a file's content: no offsets, no fuzz, no
//! whitespace fixes.
//!
//! Guards against: a hunk that git would apply somewhere other than where it says (git
//! searches for the context at other offsets), which would make the parser's old-line numbers
//! (the gate's "touches a redacted line" check) describe different lines than the ones
//! changed. Every context and removed line must match the old content byte for byte, at
//! exactly the stated line.
//! On `Ok`: the result is the new content (or `None` for a deleted file).
//! Does not check: modes (the caller applies [`FilePatch::new_mode`]) or the file system.

use super::{DiffError, FileKind, FilePatch, HunkLine, LineKind};

/// Applies `file` to `old` (`None`: the path does not exist) and returns the new content
/// (`None`: the path no longer exists). Fails with `diff.apply` unless every hunk matches
/// exactly at its stated position.
pub fn apply_file(old: Option<&[u8]>, file: &FilePatch) -> Result<Option<Vec<u8>>, DiffError> {
    let fail = |hunk: usize, line: u64, reason: String| DiffError::Apply {
        path: file.path.clone(),
        hunk,
        line,
        reason,
    };
    let old = match (file.kind, old) {
        (FileKind::Added, None) => &[][..],
        (FileKind::Added, Some(_)) => {
            return Err(fail(0, file.patch_line, "new file already exists".into()))
        }
        (_, None) => return Err(fail(0, file.patch_line, "file does not exist".into())),
        (_, Some(o)) => o,
    };
    if file.kind == FileKind::ModeChange {
        return Ok(Some(old.to_vec()));
    }
    let old_lines: Vec<&[u8]> = old.split_inclusive(|&b| b == b'\n').collect();
    let mut out: Vec<u8> = Vec::with_capacity(old.len());
    let mut pos = 0usize; // next old line (0-based) not yet copied
    let mut new_ended = false;
    for (n, h) in file.hunks.iter().enumerate() {
        let hunk_no = n + 1;
        let first = usize::try_from(h.old_first().saturating_sub(1)).unwrap_or(usize::MAX);
        if first < pos || first > old_lines.len() {
            return Err(fail(
                hunk_no,
                h.patch_line,
                format!(
                    "starts at old line {}, file has {} lines",
                    h.old_first(),
                    old_lines.len()
                ),
            ));
        }
        if new_ended {
            return Err(fail(
                hunk_no,
                h.patch_line,
                "hunk after the end of file".into(),
            ));
        }
        copy_lines(&mut out, old_lines.get(pos..first).unwrap_or_default());
        pos = first;
        for l in &h.lines {
            if l.kind != LineKind::Added {
                let ok = old_lines.get(pos).is_some_and(|o| matches_line(o, l));
                if !ok {
                    return Err(fail(
                        hunk_no,
                        h.patch_line,
                        format!("old line {} does not match", pos + 1),
                    ));
                }
                pos += 1;
            }
            if l.kind != LineKind::Removed {
                out.extend_from_slice(l.text.as_bytes());
                if !l.no_newline {
                    out.push(b'\n');
                } else {
                    new_ended = true;
                }
            }
        }
    }
    let rest = old_lines.get(pos..).unwrap_or_default();
    if new_ended && !rest.is_empty() {
        return Err(fail(
            file.hunks.len(),
            file.hunks.last().map_or(file.patch_line, |h| h.patch_line),
            "new side ends without newline before the end of the old file".into(),
        ));
    }
    copy_lines(&mut out, rest);
    match file.kind {
        FileKind::Deleted if !out.is_empty() => Err(fail(
            0,
            file.patch_line,
            "deletion does not remove the whole content".into(),
        )),
        FileKind::Deleted => Ok(None),
        _ => Ok(Some(out)),
    }
}

fn copy_lines(out: &mut Vec<u8>, lines: &[&[u8]]) {
    for l in lines {
        out.extend_from_slice(l);
    }
}

/// Whether an old line (with its LF, if any) is the hunk line on the old side.
fn matches_line(old: &[u8], l: &HunkLine) -> bool {
    let t = l.text.as_bytes();
    if l.no_newline {
        old == t
    } else {
        old.len() == t.len() + 1 && old.starts_with(t) && old.ends_with(b"\n")
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse_patch, DiffLimits};
    use super::*;

    fn section(s: &str) -> FilePatch {
        parse_patch(s.as_bytes(), &DiffLimits::default())
            .unwrap()
            .files
            .remove(0)
    }

    #[test]
    fn applies_at_the_stated_position_only() {
        let f = section("diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -2 +2 @@\n-x\n+y\n");
        assert_eq!(
            apply_file(Some(b"a\nx\nb\n"), &f).unwrap().unwrap(),
            b"a\ny\nb\n"
        );
        // git would find "x" one line further down and apply with an offset; we refuse.
        let e = apply_file(Some(b"a\nb\nx\n"), &f).unwrap_err();
        assert_eq!(e.rule(), "diff.apply");
    }

    #[test]
    fn handles_missing_newlines_both_ways() {
        let rm = section("diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n");
        assert_eq!(apply_file(Some(b"a\n"), &rm).unwrap().unwrap(), b"a");
        assert!(apply_file(Some(b"a"), &rm).is_err());
        let add = section("diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n");
        assert_eq!(apply_file(Some(b"a"), &add).unwrap().unwrap(), b"a\n");
    }

    #[test]
    fn added_deleted_and_mode_sections() {
        let add = section("diff --git a/f b/f\nnew file mode 100644\n--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n");
        assert_eq!(apply_file(None, &add).unwrap().unwrap(), b"a\nb\n");
        assert!(apply_file(Some(b""), &add).is_err());
        let del = section("diff --git a/f b/f\ndeleted file mode 100644\n--- a/f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n");
        assert_eq!(apply_file(Some(b"a\nb\n"), &del).unwrap(), None);
        assert!(apply_file(Some(b"a\nb\nc\n"), &del).is_err());
        let empty = section("diff --git a/f b/f\ndeleted file mode 100644\n");
        assert_eq!(apply_file(Some(b""), &empty).unwrap(), None);
        assert!(apply_file(Some(b"x\n"), &empty).is_err());
        let mode = section("diff --git a/f b/f\nold mode 100644\nnew mode 100755\n");
        assert_eq!(apply_file(Some(b"x\n"), &mode).unwrap().unwrap(), b"x\n");
    }
}
