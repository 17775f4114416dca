//! Keyword search for small inputs without an automaton: the gate's added lines, a prompt, a
//! manifest. Every secret rule names keywords; a rule's regex runs only near where one of its
//! keywords occurs, so a keyword this search missed would be a secret missed.
//!
//! Why: building the Aho-Corasick automaton over the ~180 built-in keywords (ASCII case
//! insensitive) cost 2.3 M instructions, paid by every `airlock gate` and every cached
//! `airlock submit`, to search a few tens of kilobytes. This index costs a few thousand to
//! build: a bit per (first byte, second byte) pair that some keyword starts with, and the
//! keywords grouped by first byte. The search tests one bit per input byte and compares
//! the keywords starting with that byte only where the bit is set.
//!
//! What it finds is exactly what the automaton's overlapping search finds with
//! `MatchKind::Standard` and `ascii_case_insensitive`: every occurrence of every keyword, ASCII
//! letters in either case, other bytes as they are (reported in another order, by start
//! in the same order: by end, the longest first). A test compares
//! the two on generated text full of keywords, their prefixes and case changes.
//!
//! Guards against: a keyword missed (the differential test); slow search on hostile input
//! (the gate searches what a worker wrote): per input byte, one bit test, and where the bit
//! is set a check of the second byte of each keyword with the same first byte (at most 33 for
//! the built-in rules) and a comparison of the bytes of each keyword with the same first two
//! (at most 10 keywords, 134 bytes): linear in the input, with that constant.

/// The keywords grouped by first byte, with the pair filter. Keywords are ASCII-lowercased
/// and non-empty (as [`crate::Scanner`] keeps them).
pub(crate) struct KeywordIndex {
    keywords: Vec<Box<[u8]>>,
    /// Bit `a << 8 | b` is set when a keyword of two bytes or more starts with `a`, `b`.
    pairs: Vec<u64>,
    /// Bit `a` is set when a keyword is the single byte `a`.
    singles: [u64; 4],
    /// Keyword ids with first byte `a`: `ids[starts[a]..starts[a + 1]]`.
    starts: Vec<usize>,
    ids: Vec<usize>,
}

fn bit(set: &[u64], index: usize) -> bool {
    set.get(index / 64)
        .is_some_and(|w| w & (1 << (index % 64)) != 0)
}

fn set_bit(set: &mut [u64], index: usize) {
    if let Some(w) = set.get_mut(index / 64) {
        *w |= 1 << (index % 64);
    }
}

impl KeywordIndex {
    /// Indexes `keywords` (each lowercase ASCII where it is a letter); a keyword's id is its
    /// position in the slice.
    pub(crate) fn new<K: AsRef<[u8]>>(keywords: &[K]) -> KeywordIndex {
        let keywords: Vec<Box<[u8]>> = keywords
            .iter()
            .map(|k| k.as_ref().to_ascii_lowercase().into_boxed_slice())
            .collect();
        let mut pairs = vec![0u64; 65536 / 64];
        let mut singles = [0u64; 4];
        let mut per_byte = [0usize; 256];
        for k in &keywords {
            match **k {
                [] => {}
                [a] => set_bit(&mut singles, usize::from(a)),
                [a, b, ..] => set_bit(&mut pairs, usize::from(a) << 8 | usize::from(b)),
            }
            if let Some(&a) = k.first() {
                if let Some(n) = per_byte.get_mut(usize::from(a)) {
                    *n += 1;
                }
            }
        }
        // Counting sort of the ids by first byte.
        let mut starts = Vec::with_capacity(257);
        let mut total = 0;
        starts.push(0);
        for n in per_byte {
            total += n;
            starts.push(total);
        }
        let mut next: Vec<usize> = starts.clone();
        let mut ids = vec![0usize; total];
        for (id, k) in keywords.iter().enumerate() {
            let Some(&a) = k.first() else { continue };
            if let Some(at) = next.get_mut(usize::from(a)) {
                if let Some(slot) = ids.get_mut(*at) {
                    *slot = id;
                }
                *at += 1;
            }
        }
        KeywordIndex {
            keywords,
            pairs,
            singles,
            starts,
            ids,
        }
    }

    /// Calls `hit(keyword id, start, end)` for every occurrence of every keyword in `text`,
    /// ASCII case-insensitively, in the automaton's order: by end, the longest first at one
    /// end (so a scan reads its hits in the same order whichever search found them). Streams:
    /// only the hits that a later start could still precede are held, at most the keywords
    /// starting within one keyword's length.
    pub(crate) fn for_each_hit(&self, text: &[u8], mut hit: impl FnMut(usize, usize, usize)) {
        let mut pending: Vec<(usize, usize, usize)> = Vec::new();
        for (i, &byte) in text.iter().enumerate() {
            // Every hit from here on starts at `i` or later and ends after it.
            if !pending.is_empty() {
                report_ending_by(&mut pending, i, &mut hit);
            }
            let a = usize::from(byte.to_ascii_lowercase());
            let second = text.get(i + 1).map(u8::to_ascii_lowercase);
            let pair = second.is_some_and(|b| bit(&self.pairs, a << 8 | usize::from(b)));
            if !pair && !bit(&self.singles, a) {
                continue;
            }
            let (Some(&from), Some(&to)) = (self.starts.get(a), self.starts.get(a + 1)) else {
                continue;
            };
            for &id in self.ids.get(from..to).unwrap_or_default() {
                let Some(k) = self.keywords.get(id) else {
                    continue;
                };
                // Only keywords with this second byte are compared (a one-byte keyword has none).
                if k.len() > 1 && k.get(1).copied() != second {
                    continue;
                }
                let end = i + k.len();
                if text.get(i..end).is_some_and(|t| t.eq_ignore_ascii_case(k)) {
                    pending.push((id, i, end));
                }
            }
        }
        report_ending_by(&mut pending, usize::MAX, &mut hit);
    }
}

/// Reports, by end and then longest first, the pending hits that end at or before `end`.
fn report_ending_by(
    pending: &mut Vec<(usize, usize, usize)>,
    end: usize,
    hit: &mut impl FnMut(usize, usize, usize),
) {
    pending.sort_unstable_by_key(|&(_, start, e)| (e, start));
    let done = pending.partition_point(|&(_, _, e)| e <= end);
    for (id, start, e) in pending.drain(..done) {
        hit(id, start, e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

    fn automaton_hits(keywords: &[&str], text: &[u8]) -> Vec<(usize, usize, usize)> {
        let ac = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build(keywords)
            .unwrap();
        ac.find_overlapping_iter(text)
            .map(|m| (m.pattern().as_usize(), m.start(), m.end()))
            .collect()
    }

    fn index_hits(keywords: &[&str], text: &[u8]) -> Vec<(usize, usize, usize)> {
        let mut hits = Vec::new();
        KeywordIndex::new(keywords).for_each_hit(text, |id, s, e| hits.push((id, s, e)));
        hits
    }

    /// A small deterministic generator (xorshift), so a failure reproduces.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    #[test]
    fn finds_what_the_automaton_finds_on_the_builtin_keywords() {
        let scanner = crate::Scanner::with_default_rules().unwrap();
        let keywords: Vec<&str> = scanner.keywords().iter().map(String::as_str).collect();
        assert!(keywords.len() > 100, "{} keywords", keywords.len());
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let filler: &[&[u8]] = &[b" ", b"\n", b"=", b"_", b"\"", b"x", b"\xc3\xa9", b"\xff"];
        let mut total = 0;
        for round in 0..300 {
            let mut text = Vec::new();
            for _ in 0..40 {
                match rng.below(4) {
                    0 => text.extend_from_slice(filler[rng.below(filler.len())]),
                    _ => {
                        // A keyword, a prefix of one, or one run into the next, in mixed case.
                        let k = keywords[rng.below(keywords.len())].as_bytes();
                        let take = if rng.below(3) == 0 {
                            rng.below(k.len() + 1)
                        } else {
                            k.len()
                        };
                        for &b in &k[..take] {
                            text.push(if rng.below(2) == 0 {
                                b.to_ascii_uppercase()
                            } else {
                                b
                            });
                        }
                    }
                }
            }
            let expected = automaton_hits(&keywords, &text);
            total += expected.len();
            assert_eq!(index_hits(&keywords, &text), expected, "round {round}");
        }
        assert!(
            total > 5_000,
            "only {total} hits: the text does not exercise the search"
        );
    }

    #[test]
    fn overlapping_nested_single_byte_and_non_ascii_keywords() {
        let keywords = ["ab", "abc", "bc", "c", "é", "aÉ", "xyzzy"];
        for text in [
            &b"abcABCaBc"[..],
            b"c",
            b"",
            b"\xc3\xa9\xc3\x89",
            "aÉ aé AÉ".as_bytes(),
            b"xyzzXYZZY",
            b"ab",
        ] {
            assert_eq!(
                index_hits(&keywords, text),
                automaton_hits(&keywords, text),
                "{text:?}"
            );
        }
        assert_eq!(
            index_hits(&keywords, b"xABC"),
            vec![(0, 1, 3), (1, 1, 4), (2, 2, 4), (3, 3, 4)],
            "by end, the longest first"
        );
    }
}
