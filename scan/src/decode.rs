//! Encoded values, decoded once for a second scan: base64 (standard and URL-safe, at least
//! [`MIN_BASE64`] characters) and percent-encoding. A Kubernetes `Secret`'s `data:`, a
//! Docker `auth`, a keystore in a `.properties` value are found this way.
//!
//! Guards against: a secret hidden from the patterns by one layer of encoding. Each
//! decoded value becomes a [`Piece`]: the line's text before the value (so that a rule
//! that needs the name, `password: ...`, still sees it), then the decoded text. Findings
//! in a piece are reported at the encoded bytes (see `engine.rs`), so redaction removes
//! the encoded value. One level only: a piece is never decoded again.
//! Cost: one linear walk over the bytes; a run is decoded only if long enough and mixed
//! case, and kept only if it decodes to mostly printable text or a DER key structure.

/// Shortest base64 run decoded.
pub const MIN_BASE64: usize = 24;
/// Longest run decoded (a larger blob is a file of its own: an image, a font).
pub const MAX_ENCODED: usize = 64 * 1024;
/// How much of the line before a value a piece carries.
pub const MAX_PREFIX: usize = 160;

/// Text derived from part of a file, to be scanned again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// What to scan: the line's prefix, then the derived value.
    pub text: Vec<u8>,
    /// Where the derived value starts in `text`; findings that start before it are the
    /// prefix's own and are dropped.
    pub value_at: usize,
    /// The bytes of the file the value came from.
    pub span: (usize, usize),
}

/// A decoded value that is a key structure by itself (see `der.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyBlob {
    /// Rule id.
    pub rule: &'static str,
    /// The encoded bytes in the file.
    pub span: (usize, usize),
}

fn b64_value(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    }
}

/// Decodes base64 of either alphabet, padding optional. `None` on a stray character.
pub fn decode_base64(s: &[u8]) -> Option<Vec<u8>> {
    let body = s.strip_suffix(b"==").or(s.strip_suffix(b"=")).unwrap_or(s);
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in body {
        acc = acc << 6 | u32::from(b64_value(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// The start of the line holding `at`, at most [`MAX_PREFIX`] bytes back.
fn line_start(content: &[u8], at: usize) -> usize {
    let lo = at.saturating_sub(MAX_PREFIX);
    let before = content.get(lo..at).unwrap_or_default();
    memchr::memrchr(b'\n', before).map_or(lo, |i| lo + i + 1)
}

fn mostly_printable(bytes: &[u8]) -> bool {
    let ok = bytes
        .iter()
        .filter(|&&b| (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\r' || b == b'\t')
        .count();
    bytes.len() >= 8 && ok * 100 >= bytes.len() * 95
}

fn piece(content: &[u8], span: (usize, usize), value: &[u8]) -> Piece {
    let ls = line_start(content, span.0);
    let mut text = content.get(ls..span.0).unwrap_or_default().to_vec();
    crate::work::walk(text.len());
    let value_at = text.len();
    text.extend_from_slice(value);
    Piece {
        text,
        value_at,
        span,
    }
}

/// Base64 characters of either alphabet, by byte: 0 for none, else [`B64_UPPER`], [`B64_LOWER`]
/// or [`B64_OTHER`] (a digit or one of `+-/_`). One table lookup a byte: this walk reads
/// every byte of every packed file.
const B64_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = match b {
            b'A'..=b'Z' => B64_UPPER,
            b'a'..=b'z' => B64_LOWER,
            b'0'..=b'9' | b'+' | b'-' | b'/' | b'_' => B64_OTHER,
            _ => 0,
        };
        c += 1;
    }
    t
};
const B64_UPPER: u8 = 1;
const B64_LOWER: u8 = 2;
const B64_OTHER: u8 = 4;

/// Every base64 run worth a second look: decoded text as pieces, key structures as blobs.
///
/// A run of [`MIN_BASE64`] characters or more covers a position `p` with
/// `p % MIN_BASE64 == MIN_BASE64 - 1`, so only those positions are probed; a probe that lands
/// in a run walks back and forward to the run's ends (never back past the last run's end).
/// Each byte is read at most twice, most bytes not at all: the same runs as a walk over
/// every byte (`the_probing_walk_finds_the_runs_of_a_walk_over_every_byte`).
pub fn base64_pieces(content: &[u8], pieces: &mut Vec<Piece>, blobs: &mut Vec<KeyBlob>) {
    crate::work::walk(content.len());
    let class = |c: &u8| B64_CLASS[usize::from(*c)];
    let in_run = |at: usize| content.get(at).is_some_and(|c| class(c) != 0);
    let n = content.len();
    // The next position probed, and the end of the last run (no run starts before it).
    let mut probe = MIN_BASE64 - 1;
    let mut floor = 0;
    while probe < n {
        if !in_run(probe) {
            probe += MIN_BASE64;
            continue;
        }
        let mut start = probe;
        while start > floor && in_run(start - 1) {
            start -= 1;
        }
        let mut i = probe + 1;
        while in_run(i) {
            i += 1;
        }
        floor = i;
        // The first probe position at or after the run's end (a byte not in a run, or n).
        probe = i + (MIN_BASE64 - 1 - i % MIN_BASE64);
        if i - start < MIN_BASE64 {
            continue; // a word, mostly: too short to look at
        }
        let seen = (content.get(start..i).unwrap_or_default())
            .iter()
            .fold(0, |seen, c| seen | class(c));
        let (upper, lower) = (seen & B64_UPPER != 0, seen & B64_LOWER != 0);
        // The run must not continue a word (`my_identifier_...` is not base64 data).
        let mut end = i;
        while end - i < 2 && content.get(end) == Some(&b'=') {
            end += 1;
        }
        let len = i - start;
        if !((MIN_BASE64..=MAX_ENCODED).contains(&len) && upper && lower) {
            continue;
        }
        let Some(run) = content.get(start..i) else {
            continue;
        };
        // A run of a file path or a long identifier decodes to noise: dropped below.
        crate::work::walk(run.len());
        let Some(decoded) = decode_base64(run) else {
            continue;
        };
        let span = (start, end);
        if let Some(rule) = crate::der::key_structure(&decoded) {
            blobs.push(KeyBlob { rule, span });
        } else if mostly_printable(&decoded) {
            pieces.push(piece(content, span, &decoded));
        }
    }
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Every run of URL-ish characters holding a `%XX` escape, decoded.
pub fn percent_pieces(content: &[u8], pieces: &mut Vec<Piece>) {
    let mut from = 0;
    while let Some(k) = memchr::memchr(b'%', content.get(from..).unwrap_or_default()) {
        let at = from + k;
        from = at + 1;
        let (Some(&a), Some(&b)) = (content.get(at + 1), content.get(at + 2)) else {
            break;
        };
        if hex(a).is_none() || hex(b).is_none() {
            continue;
        }
        let url_char = |c: u8| c.is_ascii_graphic() && !b"\"'`<>()[]{}\\".contains(&c);
        let mut s = at;
        while s > 0 && content.get(s - 1).is_some_and(|&c| url_char(c)) && at - s < MAX_ENCODED {
            s -= 1;
        }
        let mut e = at;
        while content.get(e).is_some_and(|&c| url_char(c)) && e - at < MAX_ENCODED {
            e += 1;
        }
        let run = content.get(s..e).unwrap_or_default();
        // The walks back and forward from the escape, then the decoding.
        crate::work::walk(2 * run.len());
        let mut out = Vec::with_capacity(run.len());
        let mut j = 0;
        while let Some(&c) = run.get(j) {
            let esc = (c == b'%')
                .then(|| Some(hex(*run.get(j + 1)?)? << 4 | hex(*run.get(j + 2)?)?))
                .flatten();
            match esc {
                Some(v) => {
                    out.push(v);
                    j += 3;
                }
                None => {
                    out.push(if c == b'+' { b' ' } else { c });
                    j += 1;
                }
            }
        }
        if mostly_printable(&out) {
            pieces.push(piece(content, (s, e), &out));
        }
        from = e.max(from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk over every byte that [`base64_pieces`] replaced: the oracle it is held to.
    fn base64_pieces_by_every_byte(content: &[u8]) -> (Vec<Piece>, Vec<KeyBlob>) {
        let (mut pieces, mut blobs) = (Vec::new(), Vec::new());
        let class = |c: &u8| B64_CLASS[usize::from(*c)];
        let mut i = 0;
        while i < content.len() {
            let Some(skip) = content[i..].iter().position(|c| class(c) != 0) else {
                break;
            };
            let start = i + skip;
            let run = &content[start..];
            i = start + run.iter().position(|c| class(c) == 0).unwrap_or(run.len());
            let len = i - start;
            let seen = content[start..i].iter().fold(0, |seen, c| seen | class(c));
            if !(MIN_BASE64..=MAX_ENCODED).contains(&len)
                || seen & B64_UPPER == 0
                || seen & B64_LOWER == 0
            {
                continue;
            }
            let mut end = i;
            while end - i < 2 && content.get(end) == Some(&b'=') {
                end += 1;
            }
            let Some(decoded) = decode_base64(&content[start..i]) else {
                continue;
            };
            if let Some(rule) = crate::der::key_structure(&decoded) {
                blobs.push(KeyBlob {
                    rule,
                    span: (start, end),
                });
            } else if mostly_printable(&decoded) {
                pieces.push(piece(content, (start, end), &decoded));
            }
        }
        (pieces, blobs)
    }

    #[test]
    fn the_probing_walk_finds_the_runs_of_a_walk_over_every_byte() {
        let check = |content: &[u8]| {
            let (mut p, mut k) = (Vec::new(), Vec::new());
            base64_pieces(content, &mut p, &mut k);
            assert_eq!((p, k), base64_pieces_by_every_byte(content));
        };
        // Runs of every length around the probe stride, at every offset, between separators
        // of every kind, padded or not; base64 of printable text, so that runs are kept.
        let value = b"c3VwZXJTZWNyZXRWYWx1ZTEyMzQ1NmFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6QUJD";
        let mut kept = 0;
        for len in (MIN_BASE64 - 3)..(3 * MIN_BASE64 + 2) {
            for offset in 0..(MIN_BASE64 + 2) {
                for sep in [&b" "[..], b"\n", b"=", b"==x", b"\"", b".", b""] {
                    let mut text = b"ab".repeat(offset / 2);
                    text.extend(std::iter::repeat_n(b'-', offset % 2));
                    text.extend_from_slice(sep);
                    text.extend_from_slice(&value[..len.min(value.len())]);
                    text.extend_from_slice(sep);
                    text.extend_from_slice(&value[..(len / 2).min(value.len())]);
                    let (p, _) = base64_pieces_by_every_byte(&text);
                    kept += p.len();
                    check(&text);
                }
            }
        }
        assert!(kept > 100, "the cases must hold runs that are kept: {kept}");
        // Real text: this crate's own sources, rules and test data.
        let files = crate::testgen::own_files();
        assert!(files.len() > 10);
        for bytes in &files {
            for cut in [0, 1, 7, 23, 24, 25] {
                check(&bytes[cut.min(bytes.len())..]);
            }
        }
        // Pseudo-random bytes drawn mostly from the base64 alphabet and a few separators.
        for text in crate::testgen::random_texts(0x9e37_79b9, 200, 2000, b"AaBbQqZz09+/-_= \n:\"") {
            check(&text);
        }
    }

    #[test]
    fn base64_both_alphabets_and_padding() {
        assert_eq!(decode_base64(b"aGVsbG8gd29ybGQ=").unwrap(), b"hello world");
        assert_eq!(decode_base64(b"aGVsbG8gd29ybGQ").unwrap(), b"hello world");
        assert_eq!(
            decode_base64(b"-_-_").unwrap(),
            decode_base64(b"+/+/").unwrap()
        );
        assert!(decode_base64(b"ab!c").is_none());
    }

    #[test]
    fn pieces_carry_the_line_prefix_and_the_encoded_span() {
        let text = b"kind: Secret\ndata:\n  password: c3VwZXJTZWNyZXRWYWx1ZTEyMzQ1Ng==\n";
        let (mut p, mut k) = (Vec::new(), Vec::new());
        base64_pieces(text, &mut p, &mut k);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].text, b"  password: superSecretValue123456");
        assert_eq!(
            &text[p[0].span.0..p[0].span.1],
            b"c3VwZXJTZWNyZXRWYWx1ZTEyMzQ1Ng=="
        );
        let mut p = Vec::new();
        percent_pieces(b"url = https://u:p%40ss%21word@h/x\n", &mut p);
        assert_eq!(p[0].text, b"url = https://u:p@ss!word@h/x");
    }

    #[test]
    fn identifiers_and_digests_are_not_pieces() {
        let text = b"AbstractSingletonProxyFactoryBean e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let (mut p, mut k) = (Vec::new(), Vec::new());
        base64_pieces(text, &mut p, &mut k);
        assert!(p.is_empty() && k.is_empty());
    }
}
