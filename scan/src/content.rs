//! What a file's bytes are (text, UTF-16 text, binary, archive) and the text to scan in
//! each, so that no byte escapes the scanner because of its encoding.
//!
//! Guards against: secrets hidden from a text scanner by a NUL byte (binary files, image
//! metadata, database pages, UTF-16 text) or by a binary container format (keystores, DER
//! keys). Binary files are scanned by their printable runs, as `strings` reads them: ASCII
//! (with tabs and line breaks, so a PEM block stays one run) and UTF-16LE, at least
//! [`MIN_RUN`] characters each. Every pass is one linear walk over the bytes.
//! Does not check: the inside of compressed data (an archive's deflated members): callers
//! decide what to do with [`Form::Archive`] (pack omits it, see `scan/RULES.md`).

use crate::engine::{is_binary, BINARY_SNIFF_BYTES};

/// Shortest printable run taken from a binary file.
pub const MIN_RUN: usize = 8;

/// What a file's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// ASCII-compatible text (UTF-8, Latin-1...).
    Text,
    /// UTF-16 text (little or big endian, with or without a byte-order mark).
    Utf16,
    /// Anything else with a NUL byte in its first 8 KiB.
    Binary,
    /// A zip (jar, whl, apk...), gzip (tgz), bzip2, xz, zstd, 7z or tar archive.
    Archive(&'static str),
}

impl Form {
    /// True if a finding can be removed in place (the bytes are the text that was scanned).
    pub fn redactable(self) -> bool {
        self == Form::Text
    }
}

/// Recognises an archive by its magic bytes.
pub fn archive_kind(content: &[u8]) -> Option<&'static str> {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"PK\x03\x04", "zip"),
        (b"PK\x05\x06", "zip"),
        (b"\x1f\x8b", "gzip"),
        (b"BZh", "bzip2"),
        (b"\xfd7zXZ\x00", "xz"),
        (b"\x28\xb5\x2f\xfd", "zstd"),
        (b"7z\xbc\xaf\x27\x1c", "7z"),
    ];
    if let Some((_, kind)) = MAGIC.iter().find(|(m, _)| content.starts_with(m)) {
        return Some(kind);
    }
    match content.get(257..262) {
        Some(b"ustar") => Some("tar"),
        _ => None,
    }
}

/// Decides what `content` is.
pub fn classify(content: &[u8]) -> Form {
    if let Some(kind) = archive_kind(content) {
        return Form::Archive(kind);
    }
    if utf16_endianness(content).is_some() {
        return Form::Utf16;
    }
    // A small DER key may hold no NUL byte at all: it is still binary.
    if is_binary(content) || crate::der::key_structure(content).is_some() {
        Form::Binary
    } else {
        Form::Text
    }
}

/// `Some(true)` for UTF-16LE, `Some(false)` for UTF-16BE: a byte-order mark, or (without
/// one) text whose every other byte is NUL in the first 8 KiB, as ASCII-range UTF-16 is.
fn utf16_endianness(content: &[u8]) -> Option<bool> {
    if content.starts_with(b"\xff\xfe") {
        return Some(true);
    }
    if content.starts_with(b"\xfe\xff") {
        return Some(false);
    }
    let head = content.get(..BINARY_SNIFF_BYTES).unwrap_or(content);
    if head.len() < 8 {
        return None;
    }
    let (mut even_nul, mut odd_nul) = (0usize, 0usize);
    for pair in head.chunks_exact(2) {
        if let [a, b] = pair {
            even_nul += usize::from(*a == 0);
            odd_nul += usize::from(*b == 0);
        }
    }
    let pairs = head.len() / 2;
    // Mostly ASCII-range code units: one byte of each pair is NUL, the other almost never.
    if odd_nul * 10 >= pairs * 9 && even_nul * 50 <= pairs {
        return Some(true);
    }
    if even_nul * 10 >= pairs * 9 && odd_nul * 50 <= pairs {
        return Some(false);
    }
    None
}

/// Decodes UTF-16 text (BOM dropped, invalid units replaced). `None` if not UTF-16.
pub fn decode_utf16(content: &[u8]) -> Option<String> {
    let le = utf16_endianness(content)?;
    crate::work::walk(content.len());
    let body = if content.starts_with(b"\xff\xfe") || content.starts_with(b"\xfe\xff") {
        content.get(2..).unwrap_or_default()
    } else {
        content
    };
    let units = body.chunks_exact(2).map(|p| match p {
        [a, b] if le => u16::from_le_bytes([*a, *b]),
        [a, b] => u16::from_be_bytes([*a, *b]),
        _ => 0,
    });
    Some(
        char::decode_utf16(units)
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect(),
    )
}

/// The printable runs of a binary file, joined by `\n` into one text, with where each run
/// came from.
#[derive(Debug, Default)]
pub struct Runs {
    /// The runs, each followed by `\n`.
    pub text: Vec<u8>,
    /// `(offset in text, offset in the file, bytes per character)`, by text offset.
    pub origin: Vec<(usize, usize, usize)>,
}

impl Runs {
    /// The file offset of text offset `at`.
    pub fn file_offset(&self, at: usize) -> usize {
        let i = self.origin.partition_point(|&(t, _, _)| t <= at);
        match i.checked_sub(1).and_then(|i| self.origin.get(i)) {
            Some(&(t, f, width)) => f + (at - t) * width,
            None => 0,
        }
    }
}

fn printable(b: u8) -> bool {
    (0x20..0x7f).contains(&b) || b == b'\t' || b == b'\n' || b == b'\r'
}

/// Extracts ASCII runs and UTF-16LE runs of at least [`MIN_RUN`] characters.
pub fn printable_runs(content: &[u8]) -> Runs {
    // One ASCII pass and a UTF-16 pass at each alignment.
    crate::work::walk(content.len().saturating_mul(3));
    let mut runs = Runs::default();
    let push =
        |runs: &mut Runs, start: usize, width: usize, bytes: &mut dyn Iterator<Item = u8>| {
            runs.origin.push((runs.text.len(), start, width));
            runs.text.extend(bytes);
            runs.text.push(b'\n');
        };
    // ASCII.
    let mut i = 0;
    while i < content.len() {
        let start = i;
        while content.get(i).is_some_and(|&b| printable(b)) {
            i += 1;
        }
        if i - start >= MIN_RUN {
            if let Some(run) = content.get(start..i) {
                push(&mut runs, start, 1, &mut run.iter().copied());
            }
        }
        i += 1;
    }
    // UTF-16LE, at both alignments: (printable, NUL) pairs.
    for align in 0..2 {
        let mut i = align;
        while i + 1 < content.len() {
            let start = i;
            while let (Some(&a), Some(0)) = (content.get(i), content.get(i + 1)) {
                if !printable(a) {
                    break;
                }
                i += 2;
            }
            if (i - start) / 2 >= MIN_RUN {
                if let Some(run) = content.get(start..i) {
                    push(&mut runs, start, 2, &mut run.iter().step_by(2).copied());
                }
            }
            i += 2;
        }
    }
    runs
}

/// Line (1-based) of byte offset `at`: newline bytes before it, plus one.
pub fn line_of(content: &[u8], at: usize) -> u64 {
    let head = content.get(..at.min(content.len())).unwrap_or_default();
    1 + memchr::memchr_iter(b'\n', head).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_utf16_with_and_without_bom() {
        let le: Vec<u8> = "password=abc\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        assert_eq!(classify(&le), Form::Utf16);
        assert_eq!(decode_utf16(&le).unwrap(), "password=abc\n");
        let mut bom = vec![0xff, 0xfe];
        bom.extend(&le);
        assert_eq!(decode_utf16(&bom).unwrap(), "password=abc\n");
        let be: Vec<u8> = "token: xyz\r\n"
            .encode_utf16()
            .flat_map(u16::to_be_bytes)
            .collect();
        assert_eq!(decode_utf16(&be).unwrap(), "token: xyz\r\n");
        assert_eq!(classify(b"plain\n"), Form::Text);
        assert_eq!(
            classify(b"\x00\x01\x02\x03\xff\xfe\x00\x00abc"),
            Form::Binary
        );
        assert_eq!(classify(b"PK\x03\x04rest"), Form::Archive("zip"));
    }

    #[test]
    fn runs_keep_ascii_and_wide_strings_with_offsets() {
        let mut bin = vec![0u8, 1, 2];
        bin.extend(b"short\x00");
        bin.extend(b"long enough run\x00\x01");
        let wide_at = bin.len();
        bin.extend("wide string!".encode_utf16().flat_map(u16::to_le_bytes));
        let runs = printable_runs(&bin);
        let text = String::from_utf8(runs.text.clone()).unwrap();
        assert!(text.contains("long enough run\n"));
        assert!(!text.contains("short"));
        let w = text.find("wide string!").unwrap();
        assert_eq!(runs.file_offset(w + 2), wide_at + 4);
    }
}
