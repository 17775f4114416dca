//! Every byte of a file, whatever its form: text is scanned, then scanned again through
//! one level of decoding (`decode.rs`) and with its string literals joined (`split.rs`);
//! UTF-16 is decoded first; a binary file or an archive is scanned by its printable runs
//! (`content.rs`) and by its raw structure (a DER key or keystore, `der.rs`).
//!
//! Guards against: a secret that the patterns would find in plain text reaching the
//! output because it was encoded, split, wide or embedded in binary data.
//! On return: findings sorted by position. For [`Form::Text`], a derived finding covers
//! the encoded or joined bytes, so redacting it removes the whole value; for other forms
//! positions refer to the file (binary) or the decoded text (UTF-16), and the caller must
//! not redact in place ([`Form::redactable`]).

use crate::content::{self, Form};
use crate::decode::{self, Piece};
use crate::engine::Finding;
use crate::{der, split, Scanner};

/// One scanned file: what it is and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned {
    /// The file's form.
    pub form: Form,
    /// Every finding, by position.
    pub findings: Vec<Finding>,
}

/// Bytes per block of [`Lines`]' code-point index.
const BLOCK: usize = 64;

/// Line starts, for placing findings found elsewhere than in the file's own text. Columns
/// come from a code-point count per [`BLOCK`] bytes, so placing a finding costs at most two
/// blocks whatever the line's length (many findings on one long line, or in a binary file
/// without line breaks, stay linear).
struct Lines<'a> {
    content: &'a [u8],
    newlines: Vec<usize>,
    /// Code points in `content[..k * BLOCK]`, for every `k`.
    chars: Vec<u64>,
}

fn code_points(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| (b & 0xC0) != 0x80).count() as u64
}

impl<'a> Lines<'a> {
    fn new(content: &'a [u8]) -> Lines<'a> {
        crate::work::walk(content.len());
        let mut chars = Vec::with_capacity(content.len() / BLOCK + 1);
        let mut total = 0u64;
        chars.push(0);
        for block in content.chunks(BLOCK) {
            total += code_points(block);
            chars.push(total);
        }
        Lines {
            content,
            newlines: memchr::memchr_iter(b'\n', content).collect(),
            chars,
        }
    }

    /// Code points in `content[..at]`.
    fn chars_before(&self, at: usize) -> u64 {
        let at = at.min(self.content.len());
        let k = at / BLOCK;
        let seg = self.content.get(k * BLOCK..at).unwrap_or_default();
        crate::work::walk(seg.len());
        self.chars.get(k).copied().unwrap_or(0) + code_points(seg)
    }

    /// (line, column) of byte `at`, 1-based; columns in code points.
    fn place(&self, at: usize) -> (u64, u64) {
        let k = self.newlines.partition_point(|&n| n < at);
        let ls = k
            .checked_sub(1)
            .and_then(|k| self.newlines.get(k))
            .map_or(0, |n| n + 1);
        let col = self.chars_before(at).saturating_sub(self.chars_before(ls));
        (k as u64 + 1, col + 1)
    }
}

impl Scanner {
    /// Scans one file's bytes in every form (see the module doc). Returns nothing for a
    /// globally allowlisted path.
    pub fn scan_content(&self, path: &str, content: &[u8]) -> Scanned {
        let form = content::classify(content);
        if self.is_path_allowlisted(path) {
            return Scanned {
                form,
                findings: Vec::new(),
            };
        }
        let findings = match form {
            Form::Text => self.scan_deep(path, content),
            Form::Utf16 => {
                let text = content::decode_utf16(content).unwrap_or_default();
                self.scan_deep(path, text.as_bytes())
            }
            Form::Binary | Form::Archive(_) => self.scan_binary(path, content),
        };
        Scanned { form, findings }
    }

    /// Text, decoded values and joined literals.
    fn scan_deep(&self, path: &str, content: &[u8]) -> Vec<Finding> {
        let mut found = self.scan_text(path, content);
        let (mut pieces, mut blobs) = (Vec::new(), Vec::new());
        decode::base64_pieces(content, &mut pieces, &mut blobs);
        decode::percent_pieces(content, &mut pieces);
        split::joined_pieces(content, &mut pieces);
        if pieces.is_empty() && blobs.is_empty() {
            return found;
        }
        let mut derived: Vec<(&str, (usize, usize), String)> = Vec::new();
        for b in &blobs {
            let value = content.get(b.span.0..b.span.1).unwrap_or_default();
            derived.push((b.rule, b.span, self.fingerprint(b.rule, value)));
        }
        let inner = self.scan_pieces(path, &pieces);
        for (piece, f) in &inner {
            derived.push((f.rule_id.as_str(), piece.span, f.fingerprint.clone()));
        }
        if derived.is_empty() {
            return found;
        }
        let lines = Lines::new(content);
        derived.sort_by_key(|d| d.1);
        for (rule, (s, e), fingerprint) in derived {
            // A value already found whole stays as found; a part of it found alone (the
            // first literal of a split token) gives way to the whole.
            if found.iter().any(|f| f.start <= s && e <= f.end) {
                continue;
            }
            found.retain(|f| !(s <= f.start && f.end <= e));
            let (line, column) = lines.place(s);
            let (end_line, end_column) = lines.place(e);
            found.push(Finding {
                rule_id: rule.to_owned(),
                path: path.to_owned(),
                line,
                column,
                end_line,
                end_column,
                start: s,
                end: e,
                fingerprint,
            });
        }
        found.sort_by_key(|f| (f.start, f.end));
        found
    }

    /// Scans all pieces in one pass (one text, a piece per line) and returns each finding
    /// that lies in a piece's value, with its piece.
    fn scan_pieces<'p>(&self, path: &str, pieces: &'p [Piece]) -> Vec<(&'p Piece, Finding)> {
        let mut text = Vec::new();
        let mut at = Vec::with_capacity(pieces.len());
        for p in pieces {
            at.push((text.len(), text.len() + p.value_at));
            text.extend_from_slice(&p.text);
            text.push(b'\n');
        }
        let mut out = Vec::new();
        for f in self.scan_text(path, &text) {
            let k = at.partition_point(|&(base, _)| base <= f.start);
            let Some(i) = k.checked_sub(1) else { continue };
            let (Some(&(_, value_at)), Some(piece)) = (at.get(i), pieces.get(i)) else {
                continue;
            };
            if f.start >= value_at {
                out.push((piece, f));
            }
        }
        out
    }

    /// A binary file: its raw structure, then its printable runs, placed in the file.
    fn scan_binary(&self, path: &str, content: &[u8]) -> Vec<Finding> {
        let mut found = Vec::new();
        if let Some(rule) = der::key_structure(content) {
            found.push(Finding {
                rule_id: rule.to_owned(),
                path: path.to_owned(),
                line: 1,
                column: 1,
                end_line: 1,
                end_column: 1,
                start: 0,
                end: content.len(),
                fingerprint: self.fingerprint(rule, content),
            });
        }
        let runs = content::printable_runs(content);
        let lines = Lines::new(content);
        for f in self.scan_deep(path, &runs.text) {
            let start = runs.file_offset(f.start);
            let end = runs.file_offset(f.end.saturating_sub(1)).saturating_add(1);
            let (line, _) = lines.place(start);
            found.push(Finding {
                line,
                column: 1,
                end_line: line,
                end_column: 1,
                start,
                end,
                ..f
            });
        }
        found.sort_by_key(|f| (f.start, f.end));
        found
    }
}
