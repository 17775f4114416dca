//! Split strings: adjacent string literals joined the way the language would join them,
//! for a second scan. Covers `"a" + "b"` (JS/TS/Java/Go/C#/Kotlin), `"a" . "b"` (PHP),
//! `"a" "b"` (Python, C implicit concatenation, across lines inside parentheses),
//! `concat!("a", "b")` (Rust) and `["a", "b"].join("")` (a separator of `,`), and
//! backslash-newline inside a quoted string (shell continuations, YAML double-quoted
//! escaped line breaks), whose following indentation is dropped.
//!
//! Guards against: a token assembled from pieces that no single-literal pattern sees.
//! A cheap lexical pass, not a parser per language: one walk over the bytes finding quoted
//! literals (`"`, `'`, `` ` ``; a backslash escapes the next byte; a literal ends at its
//! quote or, unescaped, at the line end, where it is dropped), then groups of two or more
//! literals separated only by whitespace and at most one connector. Each group becomes a
//! [`Piece`]: the line's text before the first literal, then the joined value in quotes.
//! Findings map back to the group's bytes (first literal to last), so the first line.
//! Does not check: variables, escapes other than line continuations, heredocs.

use crate::decode::{Piece, MAX_PREFIX};

/// Longest gap (whitespace and connector) between two literals of one group.
const MAX_GAP: usize = 64;
/// Longest literal taken into a group.
const MAX_LITERAL: usize = 4096;
/// Shortest joined value worth a scan.
const MIN_JOINED: usize = 12;

struct Literal {
    start: usize,
    end: usize,
    /// The value, when it is not the bytes between the quotes (a line continuation was
    /// dropped from it); most literals have none, and cost no allocation.
    joined: Option<Vec<u8>>,
}

impl Literal {
    /// The literal's value: its bytes between the quotes, escapes kept, line continuations
    /// and their following indentation dropped.
    fn value<'c>(&'c self, content: &'c [u8]) -> &'c [u8] {
        match &self.joined {
            Some(v) => v,
            None => content
                .get(self.start + 1..self.end - 1)
                .unwrap_or_default(),
        }
    }
}

/// Reads the literal opening at `open`; `None` if it runs to the line end unclosed (or
/// past [`MAX_LITERAL`]). Also returns where the walk stopped. Jumps from one quote,
/// backslash or line end to the next (`memchr`), counting the bytes in between.
fn literal(content: &[u8], open: usize) -> (Option<Literal>, usize) {
    let Some(&q) = content.get(open) else {
        return (None, open);
    };
    let stop = |at: usize| {
        crate::work::walk(at - open);
        (None, at)
    };
    // The value's length so far, and the value itself once a continuation was dropped.
    let (mut len, mut joined): (usize, Option<Vec<u8>>) = (0, None);
    let mut i = open + 1;
    loop {
        let rest = content.get(i..).unwrap_or_default();
        let next = match q {
            b'`' => memchr::memchr2(q, b'\\', rest),
            _ => memchr::memchr3(q, b'\\', b'\n', rest),
        };
        let plain = next.unwrap_or(rest.len());
        // Each plain byte adds one to the value; the walk stops at the first one reached
        // with the value already longer than MAX_LITERAL.
        let fail_at = (MAX_LITERAL + 1).saturating_sub(len);
        if fail_at < plain {
            return stop(i + fail_at);
        }
        if let Some(v) = &mut joined {
            v.extend_from_slice(rest.get(..plain).unwrap_or_default());
        }
        len += plain;
        i += plain;
        let Some(&c) = content.get(i) else {
            return stop(i);
        };
        if c == q {
            let lit = Literal {
                start: open,
                end: i + 1,
                joined,
            };
            crate::work::walk(i + 1 - open);
            return (Some(lit), i + 1);
        }
        if len > MAX_LITERAL || c == b'\n' {
            return stop(i);
        }
        // A backslash.
        match content.get(i + 1) {
            Some(b'\n') => {
                // A continuation: the line break and the next line's indentation go.
                let v = joined
                    .get_or_insert_with(|| content.get(open + 1..i).unwrap_or_default().to_vec());
                debug_assert_eq!(v.len(), len);
                i += 2;
                while content.get(i).is_some_and(|&c| c == b' ' || c == b'\t') {
                    i += 1;
                }
            }
            Some(&e) => {
                if let Some(v) = &mut joined {
                    v.extend_from_slice(&[c, e]);
                }
                len += 2;
                i += 2;
            }
            None => return stop(i),
        }
    }
}

/// True if a `,` between literals joins them: the first literal opens an array (`[`, for
/// `.join('')`) or `concat!(`. Elsewhere a comma separates unrelated strings (JSON).
fn comma_joins(content: &[u8], first: usize) -> bool {
    let head = content.get(..first).unwrap_or_default();
    let head = head.trim_ascii_end();
    head.ends_with(b"[") || head.ends_with(b"concat!(")
}

/// True if the bytes between two literals join them: whitespace with at most one `+`,
/// `.`, `,` (where `comma` allows) or a shell `\` line continuation.
fn joins(gap: &[u8], comma: bool) -> bool {
    if gap.len() > MAX_GAP {
        return false;
    }
    let mut connectors = 0;
    let mut k = 0;
    while let Some(&c) = gap.get(k) {
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => {}
            b'+' | b'.' => connectors += 1,
            b',' if comma => connectors += 1,
            b'\\' if gap.get(k + 1) == Some(&b'\n') => {}
            _ => return false,
        }
        k += 1;
    }
    connectors <= 1
}

fn line_start(content: &[u8], at: usize) -> usize {
    let lo = at.saturating_sub(MAX_PREFIX);
    let before = content.get(lo..at).unwrap_or_default();
    memchr::memrchr(b'\n', before).map_or(lo, |i| lo + i + 1)
}

/// The text before a group, as an assignment of the joined value would read: the line
/// before the first literal (the line above if that one is blank: Python's `X = (` then
/// the literals), without the opening `(`, `[` or `concat!(`.
fn assignment_prefix(content: &[u8], first: usize) -> Vec<u8> {
    let mut ls = line_start(content, first);
    let mut head = content.get(ls..first).unwrap_or_default();
    if head.trim_ascii().is_empty() && ls > 0 {
        ls = line_start(content, ls - 1);
        head = content.get(ls..first).unwrap_or_default();
    }
    crate::work::walk(head.len());
    let trimmed = head.trim_ascii_end();
    let Some(open) = [&b"("[..], b"["]
        .iter()
        .find_map(|o| trimmed.strip_suffix(*o))
    else {
        return head.to_vec();
    };
    let open = open.trim_ascii_end();
    let open = open
        .strip_suffix(b"concat!")
        .unwrap_or(open)
        .trim_ascii_end();
    let mut out = open.to_vec();
    out.push(b' ');
    out
}

fn flush(content: &[u8], group: &mut Vec<Literal>, pieces: &mut Vec<Piece>) {
    let joined: usize = group.iter().map(|l| l.value(content).len()).sum();
    let split = group.len() >= 2 || group.first().is_some_and(|l| l.joined.is_some());
    if let (true, true, Some(first), Some(last)) =
        (split, joined >= MIN_JOINED, group.first(), group.last())
    {
        let q = content.get(first.start).copied().unwrap_or(b'"');
        let mut text = assignment_prefix(content, first.start);
        let value_at = text.len();
        text.push(q);
        for l in group.iter() {
            text.extend_from_slice(l.value(content));
        }
        text.push(q);
        pieces.push(Piece {
            text,
            value_at,
            span: (first.start, last.end),
        });
    }
    group.clear();
}

/// Every group of joined literals (or single literal with a line continuation).
pub fn joined_pieces(content: &[u8], pieces: &mut Vec<Piece>) {
    let mut group: Vec<Literal> = Vec::new();
    // Per quote character: where the last unclosed literal's walk stopped. A quote of the
    // same kind before that point was read there as an escaped one (`\"`), and a walk from
    // it would retrace the same bytes to the same end: it is skipped, so each byte is walked
    // once per quote kind rather than once per escaped quote (quadratic on a line of them).
    let mut dead = [0usize; 3];
    let kind = |q: u8| match q {
        b'"' => 0,
        b'\'' => 1,
        _ => 2,
    };
    let mut i = 0;
    while i < content.len() {
        let Some(k) = memchr::memchr3(b'"', b'\'', b'`', content.get(i..).unwrap_or_default())
        else {
            break;
        };
        let open = i + k;
        let q = kind(content.get(open).copied().unwrap_or(b'"'));
        let known_dead = dead.get(q).is_some_and(|&d| open < d);
        let lit = if known_dead {
            None
        } else {
            let (lit, stop) = literal(content, open);
            if lit.is_none() {
                if let Some(d) = dead.get_mut(q) {
                    *d = stop;
                }
            }
            lit
        };
        let Some(lit) = lit else {
            flush(content, &mut group, pieces);
            i = open + 1;
            continue;
        };
        let comma = group
            .first()
            .is_some_and(|first| comma_joins(content, first.start));
        let continues = group.last().is_some_and(|prev| {
            content
                .get(prev.end..lit.start)
                .is_some_and(|gap| joins(gap, comma))
        });
        if !continues {
            flush(content, &mut group, pieces);
        }
        i = lit.end;
        group.push(lit);
    }
    flush(content, &mut group, pieces);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(text: &str) -> Vec<String> {
        let mut p = Vec::new();
        joined_pieces(text.as_bytes(), &mut p);
        p.iter()
            .map(|p| String::from_utf8_lossy(&p.text).into_owned())
            .collect()
    }

    /// The walk byte by byte that [`literal`] replaced: the oracle it is held to.
    fn literal_byte_by_byte(content: &[u8], open: usize) -> (Option<(usize, Vec<u8>)>, usize) {
        let q = content[open];
        let mut value = Vec::new();
        let mut i = open + 1;
        loop {
            let Some(&c) = content.get(i) else {
                return (None, i);
            };
            if c == q {
                return (Some((i + 1, value)), i + 1);
            }
            if value.len() > MAX_LITERAL || (c == b'\n' && q != b'`') {
                return (None, i);
            }
            if c == b'\\' {
                match content.get(i + 1) {
                    Some(b'\n') => {
                        i += 2;
                        while content.get(i).is_some_and(|&c| c == b' ' || c == b'\t') {
                            i += 1;
                        }
                        continue;
                    }
                    Some(&e) => {
                        value.extend_from_slice(&[c, e]);
                        i += 2;
                        continue;
                    }
                    None => return (None, i),
                }
            }
            value.push(c);
            i += 1;
        }
    }

    #[test]
    fn the_jumping_walk_reads_each_literal_as_the_walk_byte_by_byte() {
        let check = |content: &[u8]| {
            for (open, &c) in content.iter().enumerate() {
                if !matches!(c, b'"' | b'\'' | b'`') {
                    continue;
                }
                let (lit, stop) = literal(content, open);
                let got = lit.map(|l| (l.end, l.value(content).to_vec()));
                assert_eq!(
                    (got, stop),
                    literal_byte_by_byte(content, open),
                    "at {open}"
                );
            }
        };
        // Literals around MAX_LITERAL, with escapes and continuations at its edge.
        for len in [
            MAX_LITERAL - 2,
            MAX_LITERAL - 1,
            MAX_LITERAL,
            MAX_LITERAL + 1,
            MAX_LITERAL + 2,
        ] {
            for tail in [
                &b"\""[..],
                b"\\\"\"",
                b"\\\n  x\"",
                b"\\",
                b"\n\"",
                b"ab\"",
                b"`",
            ] {
                for q in [b'"', b'`'] {
                    let mut text = vec![q];
                    text.extend(std::iter::repeat_n(b'a', len));
                    text.extend_from_slice(tail);
                    text.push(q);
                    check(&text);
                }
            }
        }
        // Pseudo-random text over quotes, backslashes, line ends and letters.
        for text in crate::testgen::random_texts(0x2545_f491, 300, 3000, b"\"'`\\\n \tabcdefgh+.,")
        {
            check(&text);
        }
        // Real text: this crate's own sources, rules and test data.
        for bytes in crate::testgen::own_files() {
            check(&bytes);
        }
    }

    #[test]
    fn joins_language_concatenations() {
        assert_eq!(
            joined("const t = \"abcdef\" +\n  \"ghijkl\";\n"),
            ["const t = \"abcdefghijkl\""]
        );
        assert_eq!(
            joined("TOKEN = (\"abcdef\"\n         'ghijkl')\n"),
            ["TOKEN = \"abcdefghijkl\""]
        );
        assert_eq!(
            joined("let k = concat!(\"abcdef\", \"ghijkl\");"),
            ["let k = \"abcdefghijkl\""]
        );
        assert_eq!(
            joined("export K=\"abcdef\\\n    ghijkl\"\n"),
            ["export K=\"abcdefghijkl\""]
        );
    }

    #[test]
    fn unrelated_literals_stay_apart() {
        assert!(joined("f(\"abcdefgh\", x, \"ijklmnop\")\nit's a word's end\n").is_empty());
        assert!(joined("a = \"short\"\n").is_empty());
        assert!(joined("{\"a\": \"abcdefgh\",\n \"ijklmnop\": 1}\n").is_empty());
    }
}
