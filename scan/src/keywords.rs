//! The keyword pass over a tree's files: every occurrence of every keyword (ASCII case
//! ignored), found by one Aho-Corasick DFA walked over four parts of the input at once.
//!
//! A DFA walk is one table load per byte, each waiting for the one before; four walks over
//! four parts of the input interleave, so that the loads of one overlap those of the others
//! (docs/PERFORMANCE.md has the figure). Each part is walked on past its end by the longest
//! keyword less one byte, and keeps the occurrences that start in it: every occurrence is
//! reported once, by the part it starts in.
//!
//! Guards against: an occurrence missed or reported twice at a part's edge (the overlap
//! above; tests compare every occurrence with Aho-Corasick's own overlapping search on inputs
//! cut at every place), and hostile input making the pass more than linear (a byte is walked
//! at most twice: in its part and in the overlap of the part before).

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::{dfa, Anchored, MatchKind};

/// Inputs shorter than this are walked once, from the start.
const SPLIT_AT: usize = 4096;

/// The keywords' DFA and what the walks need of it.
#[derive(Debug)]
pub(crate) struct Keywords {
    dfa: dfa::DFA,
    start: StateID,
    /// Bytes of the longest keyword.
    longest: usize,
}

impl Keywords {
    /// Builds the DFA of `patterns` (ASCII case ignored, every occurrence reported); `None`
    /// if it cannot be built (too large).
    pub(crate) fn build(patterns: &[String]) -> Option<Keywords> {
        let dfa = dfa::Builder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            // Keywords start with common letters: a prefilter mostly adds overhead.
            .prefilter(false)
            .build(patterns)
            .ok()?;
        let start = dfa.start_state(Anchored::No).ok()?;
        let longest = patterns.iter().map(String::len).max().unwrap_or(0);
        Some(Keywords {
            dfa,
            start,
            longest,
        })
    }

    /// Calls `hit(keyword, start, end)` for every occurrence of a keyword in `hay`, in no
    /// set order.
    pub(crate) fn each(&self, hay: &[u8], mut hit: impl FnMut(usize, usize, usize)) {
        let n = hay.len();
        if n < SPLIT_AT.max(self.longest.saturating_mul(8)) {
            self.walk(hay, 0, n, &mut hit);
            return;
        }
        let part = n / 4;
        let over = self.longest.saturating_sub(1);
        // Part k starts at k * part; its walk ends `over` bytes past the next part's start.
        let starts = [0, part, 2 * part, 3 * part];
        let owns = [part, 2 * part, 3 * part, n];
        let ends = owns.map(|o| o.saturating_add(over).min(n));
        // The steps all four walks take together: the shortest walk.
        let steps = (0..4).map(|k| ends[k] - starts[k]).min().unwrap_or(0);
        let at = |k: usize| hay.get(starts[k]..starts[k] + steps).unwrap_or_default();
        let (h0, h1, h2, h3) = (at(0), at(1), at(2), at(3));
        let d = &self.dfa;
        let mut s = [self.start; 4];
        for (t, (((&b0, &b1), &b2), &b3)) in h0.iter().zip(h1).zip(h2).zip(h3).enumerate() {
            s[0] = d.next_state(Anchored::No, s[0], b0);
            s[1] = d.next_state(Anchored::No, s[1], b1);
            s[2] = d.next_state(Anchored::No, s[2], b2);
            s[3] = d.next_state(Anchored::No, s[3], b3);
            if d.is_special(s[0]) | d.is_special(s[1]) | d.is_special(s[2]) | d.is_special(s[3]) {
                for k in 0..4 {
                    self.report(s[k], starts[k] + t + 1, owns[k], &mut hit);
                }
            }
        }
        // Each walk's own rest, from where the four stopped.
        for k in 0..4 {
            self.walk_from(hay, s[k], (starts[k] + steps, ends[k]), owns[k], &mut hit);
        }
    }

    /// One walk over all of `hay[from..to]`, from the start state.
    fn walk(&self, hay: &[u8], from: usize, to: usize, hit: &mut impl FnMut(usize, usize, usize)) {
        self.walk_from(hay, self.start, (from, to), to, hit);
    }

    /// Walks `hay[from..to]` from state `sid`, reporting occurrences that start before `own`.
    fn walk_from(
        &self,
        hay: &[u8],
        mut sid: StateID,
        (from, to): (usize, usize),
        own: usize,
        hit: &mut impl FnMut(usize, usize, usize),
    ) {
        let d = &self.dfa;
        for (i, &b) in hay.get(from..to).unwrap_or_default().iter().enumerate() {
            sid = d.next_state(Anchored::No, sid, b);
            if d.is_special(sid) {
                self.report(sid, from + i + 1, own, hit);
            }
        }
    }

    /// The occurrences ending at `end` (exclusive) in state `sid` that start before `own`.
    fn report(
        &self,
        sid: StateID,
        end: usize,
        own: usize,
        hit: &mut impl FnMut(usize, usize, usize),
    ) {
        let d = &self.dfa;
        if !d.is_match(sid) {
            return;
        }
        for i in 0..d.match_len(sid) {
            let pid = d.match_pattern(sid, i);
            let start = end.saturating_sub(d.pattern_len(pid));
            if start < own {
                hit(pid.as_usize(), start, end);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aho_corasick::AhoCorasick;

    fn all(k: &Keywords, hay: &[u8]) -> Vec<(usize, usize, usize)> {
        let mut v = Vec::new();
        k.each(hay, |p, s, e| v.push((p, s, e)));
        v.sort_unstable();
        v
    }

    fn reference(patterns: &[String], hay: &[u8]) -> Vec<(usize, usize, usize)> {
        let ac = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(patterns)
            .expect("automaton");
        let mut v: Vec<_> = (ac.find_overlapping_iter(hay))
            .map(|m| (m.pattern().as_usize(), m.start(), m.end()))
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn every_occurrence_once_wherever_the_parts_are_cut() {
        let patterns: Vec<String> = ["key", "api_key", "k", "secret_access_key", "ey", "aaaa"]
            .map(String::from)
            .to_vec();
        let k = Keywords::build(&patterns).expect("dfa");
        // Keywords at every offset around the part edges of inputs of many lengths.
        let unit = b"xx API_KEY=1 secret_access_KEY aaaaaaa k ";
        for len in [4096, 4097, 4099, 4100, 4103, 5000, 8191, 9000] {
            let hay: Vec<u8> = unit.iter().copied().cycle().take(len).collect();
            assert_eq!(all(&k, &hay), reference(&patterns, &hay), "len {len}");
            for shift in 0..unit.len() {
                let hay = &hay[shift..];
                assert_eq!(
                    all(&k, hay),
                    reference(&patterns, hay),
                    "len {len} shift {shift}"
                );
            }
        }
    }

    #[test]
    fn a_keyword_across_each_part_edge_is_found() {
        let patterns = vec!["secret_access_key".to_owned()];
        let k = Keywords::build(&patterns).expect("dfa");
        let len = 4 * 4096 + 3;
        let part = len / 4;
        for edge in [part, 2 * part, 3 * part] {
            for back in 0..patterns[0].len() {
                let mut hay = vec![b'.'; len];
                let at = edge - back;
                hay[at..at + 17].copy_from_slice(b"SECRET_ACCESS_KEY");
                assert_eq!(
                    all(&k, &hay),
                    vec![(0, at, at + 17)],
                    "edge {edge} back {back}"
                );
            }
        }
    }

    #[test]
    fn short_inputs_and_no_keywords_in_them() {
        let patterns = vec!["token".to_owned()];
        let k = Keywords::build(&patterns).expect("dfa");
        assert!(all(&k, b"").is_empty());
        assert_eq!(all(&k, b"Token"), vec![(0, 0, 5)]);
        let quiet = vec![b'z'; 100_000];
        assert!(all(&k, &quiet).is_empty());
    }
}
