//! Line diff: Myers' O((N+M)·D) algorithm in linear space (the "middle snake" recursion of
//! Myers 1986, section 4b), with a cap on D.
//!
//! Guards against: quadratic blow-ups. Lines found on one side only are set aside before the
//! search (they can never match), so rewrites and scattered edits cost near-linear time; the
//! caller passes the changed-lines budget left, and once the edit distance is known to exceed
//! it the search stops and returns `None`; a work cap ([`WORK_LIMIT`]) bounds the rest by
//! giving up minimality (never correctness) on the sub-problem at hand.
//! On `Some`: the blocks describe a shortest edit script; unchanged lines between blocks are
//! byte-equal in order (re-checked while building blocks, so a bug here yields a larger diff,
//! never a wrong one).

use std::collections::HashMap;
use std::ops::Range;

/// One run of changes: old lines `old` are replaced by new lines `new` (either may be empty).
/// Lines between consecutive blocks are unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    pub old: Range<usize>,
    pub new: Range<usize>,
}

/// The change blocks turning `a` into `b`, or `None` when more than `max_d` lines would be
/// added plus removed.
pub(crate) fn diff_blocks(a: &[&[u8]], b: &[&[u8]], max_d: u64) -> Option<Vec<Block>> {
    diff_blocks_limited(a, b, max_d, WORK_LIMIT)
}

fn diff_blocks_limited(
    a: &[&[u8]],
    b: &[&[u8]],
    max_d: u64,
    work_limit: u64,
) -> Option<Vec<Block>> {
    // Common prefix and suffix cost nothing and are not interned.
    let mut pre = 0;
    while pre < a.len() && pre < b.len() && a[pre] == b[pre] {
        pre += 1;
    }
    let mut suf = 0;
    while suf < a.len() - pre && suf < b.len() - pre && a[a.len() - 1 - suf] == b[b.len() - 1 - suf]
    {
        suf += 1;
    }
    let am = &a[pre..a.len() - suf];
    let bm = &b[pre..b.len() - suf];
    if (am.len().abs_diff(bm.len()) as u64) > max_d {
        return None;
    }

    // Intern the middle lines so the search compares integers.
    let mut ids: HashMap<&[u8], u32> = HashMap::new();
    let mut ia: Vec<u32> = Vec::with_capacity(am.len());
    let mut ib: Vec<u32> = Vec::with_capacity(bm.len());
    for (src, dst) in [(am, &mut ia), (bm, &mut ib)] {
        for l in src {
            let next = ids.len() as u32;
            dst.push(*ids.entry(l).or_insert(next));
        }
    }
    let nids = ids.len();
    drop(ids);

    // A line that occurs on one side only can never be matched: mark it changed now and
    // search only the others (git's xdiff does the same). This keeps the LCS, so the script
    // stays minimal, and turns rewrites and scattered edits into near-linear work.
    let mut in_a = vec![false; nids];
    let mut in_b = vec![false; nids];
    ia.iter().for_each(|&x| in_a[x as usize] = true);
    ib.iter().for_each(|&x| in_b[x as usize] = true);
    let mut ca = vec![false; a.len()];
    let mut cb = vec![false; b.len()];
    let (mut ra, mut ka) = (Vec::new(), Vec::new());
    for (i, &x) in ia.iter().enumerate() {
        if in_b[x as usize] {
            ra.push(x);
            ka.push(pre + i);
        } else {
            ca[pre + i] = true;
        }
    }
    let (mut rb, mut kb) = (Vec::new(), Vec::new());
    for (j, &x) in ib.iter().enumerate() {
        if in_a[x as usize] {
            rb.push(x);
            kb.push(pre + j);
        } else {
            cb[pre + j] = true;
        }
    }
    drop((ia, ib, in_a, in_b));
    let unmatched = (am.len() - ra.len()) as u64 + (bm.len() - rb.len()) as u64;
    let left = max_d.checked_sub(unmatched)?;

    let mut s = Search {
        ce: vec![false; ra.len()],
        cf: vec![false; rb.len()],
        work: 0,
        work_limit,
    };
    let bound = usize::try_from(left).unwrap_or(usize::MAX);
    if !s.compare(&ra, &rb, 0, 0, bound) {
        return None;
    }
    for (i, &c) in s.ce.iter().enumerate() {
        ca[ka[i]] |= c;
    }
    for (j, &c) in s.cf.iter().enumerate() {
        cb[kb[j]] |= c;
    }
    Some(blocks(a, b, &ca, &cb))
}

/// Builds blocks from change marks, re-checking that unchanged lines are equal.
fn blocks(a: &[&[u8]], b: &[&[u8]], ca: &[bool], cb: &[bool]) -> Vec<Block> {
    let (n, m) = (a.len(), b.len());
    let mut out: Vec<Block> = Vec::new();
    let (mut i, mut j) = (0, 0);
    loop {
        while i < n && j < m && !ca[i] && !cb[j] && a[i] == b[j] {
            i += 1;
            j += 1;
        }
        if i >= n && j >= m {
            break;
        }
        let (os, ns) = (i, j);
        while i < n && (ca[i] || j >= m) {
            i += 1;
        }
        while j < m && (cb[j] || i >= n) {
            j += 1;
        }
        if i == os && j == ns {
            // Unmarked but unequal lines: cannot happen for a correct script; stay correct.
            i += 1;
            j += 1;
        }
        match out.last_mut() {
            Some(last) if last.old.end == os && last.new.end == ns => {
                last.old.end = i;
                last.new.end = j;
            }
            _ => out.push(Block {
                old: os..i,
                new: ns..j,
            }),
        }
    }
    out
}

/// Steps (diagonals visited plus snake steps) one file pair may cost before the search gives
/// up on optimality for the sub-problem at hand and marks it all changed: the script stays
/// correct, only larger. Bounds the worst case (many repeated lines in a hostile order).
const WORK_LIMIT: u64 = 100_000_000;

/// What the middle-snake search found.
enum Snake {
    /// `(D, x, y, u, v)`: an optimal path of length D goes through the snake (x,y)->(u,v).
    Found(usize, usize, usize, usize, usize),
    /// D exceeds the bound.
    TooFar,
    /// The work limit ran out.
    GiveUp,
}

/// Change marks of the reduced sequences, and the work spent.
struct Search {
    ce: Vec<bool>,
    cf: Vec<bool>,
    work: u64,
    work_limit: u64,
}

impl Search {
    /// Marks changed lines of `e` (at offset `i` in `ce`) and `f` (offset `j` in `cf`).
    /// Returns `false` when the edit distance exceeds `bound` (checked at this level;
    /// recursive calls are within the distance already found).
    fn compare(&mut self, e: &[u32], f: &[u32], i: usize, j: usize, bound: usize) -> bool {
        // Trim common prefix and suffix: after this, a distance of 1 leaves one side empty.
        let mut s = 0;
        while s < e.len() && s < f.len() && e[s] == f[s] {
            s += 1;
        }
        let (e, f, i, j) = (&e[s..], &f[s..], i + s, j + s);
        let mut t = 0;
        while t < e.len() && t < f.len() && e[e.len() - 1 - t] == f[f.len() - 1 - t] {
            t += 1;
        }
        let (e, f) = (&e[..e.len() - t], &f[..f.len() - t]);
        let (n, m) = (e.len(), f.len());
        if n == 0 || m == 0 || n.abs_diff(m) > bound {
            return self.mark_all(i, n, j, m, bound);
        }
        match self.middle_snake(e, f, bound) {
            Snake::TooFar => false,
            Snake::GiveUp => self.mark_all(i, n, j, m, bound),
            Snake::Found(d, x, y, u, v) if d > 1 || (x != u && y != v) => {
                self.compare(&e[..x], &f[..y], i, j, usize::MAX)
                    && self.compare(&e[u..], &f[v..], i + u, j + v, usize::MAX)
            }
            Snake::Found(..) => {
                // Distance 0 or 1 with an empty snake (unreachable after trimming; kept
                // correct).
                if m > n {
                    self.cf[j + n..j + m].iter_mut().for_each(|c| *c = true);
                } else if n > m {
                    self.ce[i + m..i + n].iter_mut().for_each(|c| *c = true);
                }
                true
            }
        }
    }

    /// Marks `n` lines of `e` at `i` and `m` lines of `f` at `j` changed, if within `bound`.
    fn mark_all(&mut self, i: usize, n: usize, j: usize, m: usize, bound: usize) -> bool {
        if n.saturating_add(m) > bound {
            return false;
        }
        self.ce[i..i + n].iter_mut().for_each(|c| *c = true);
        self.cf[j..j + m].iter_mut().for_each(|c| *c = true);
        true
    }

    /// Finds the middle snake of an optimal path (Myers 1986, 4b).
    fn middle_snake(&mut self, e: &[u32], f: &[u32], bound: usize) -> Snake {
        let (n, m) = (e.len() as isize, f.len() as isize);
        let l = n + m;
        let z = 2 * n.min(m) + 2;
        let w = n - m;
        let idx = |k: isize| k.rem_euclid(z) as usize;
        let bound = isize::try_from(bound).unwrap_or(isize::MAX);
        let mut g = vec![0isize; z as usize];
        let mut p = vec![0isize; z as usize];
        let hmax = l / 2 + l % 2;
        for h in 0..=hmax {
            if h > 0 && 2 * h - 1 > bound {
                return Snake::TooFar;
            }
            for forward in [true, false] {
                let (c, d) = if forward { (&mut g, &p) } else { (&mut p, &g) };
                let o: isize = if forward { 1 } else { 0 };
                let kmin = -(h - 2 * (h - m).max(0));
                let kmax = h - 2 * (h - n).max(0);
                let mut k = kmin;
                while k <= kmax {
                    let mut a = if k == -h || (k != h && c[idx(k - 1)] < c[idx(k + 1)]) {
                        c[idx(k + 1)]
                    } else {
                        c[idx(k - 1)] + 1
                    };
                    let mut b = a - k;
                    let (s, t) = (a, b);
                    while a < n && b < m {
                        let same = if forward {
                            e[a as usize] == f[b as usize]
                        } else {
                            e[(n - 1 - a) as usize] == f[(m - 1 - b) as usize]
                        };
                        if !same {
                            break;
                        }
                        a += 1;
                        b += 1;
                    }
                    self.work += 1 + (a - s) as u64;
                    if self.work > self.work_limit {
                        return Snake::GiveUp;
                    }
                    c[idx(k)] = a;
                    let zz = -(k - w);
                    if l % 2 == o && zz >= -(h - o) && zz <= h - o && c[idx(k)] + d[idx(zz)] >= n {
                        let (dd, x, y, u, v) = if forward {
                            (2 * h - 1, s, t, a, b)
                        } else {
                            (2 * h, n - a, m - b, n - s, m - t)
                        };
                        if dd > bound {
                            return Snake::TooFar;
                        }
                        return Snake::Found(
                            dd as usize,
                            x as usize,
                            y as usize,
                            u as usize,
                            v as usize,
                        );
                    }
                    k += 2;
                }
            }
        }
        Snake::TooFar
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<&[u8]> {
        s.as_bytes().split_inclusive(|&c| c == b'\n').collect()
    }

    /// Applies blocks to `a` and returns the result, checking the unchanged runs match `b`.
    fn rebuild(a: &[&[u8]], b: &[&[u8]], bl: &[Block]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let (mut i, mut j) = (0, 0);
        for blk in bl {
            while i < blk.old.start {
                assert_eq!(a[i], b[j]);
                out.push(a[i].to_vec());
                i += 1;
                j += 1;
            }
            assert_eq!(j, blk.new.start);
            for l in &b[blk.new.clone()] {
                out.push(l.to_vec());
            }
            i = blk.old.end;
            j = blk.new.end;
        }
        while i < a.len() {
            out.push(a[i].to_vec());
            i += 1;
        }
        out
    }

    fn lcs_len(a: &[&[u8]], b: &[&[u8]]) -> usize {
        let mut dp = vec![vec![0usize; b.len() + 1]; a.len() + 1];
        for x in (0..a.len()).rev() {
            for y in (0..b.len()).rev() {
                dp[x][y] = if a[x] == b[y] {
                    dp[x + 1][y + 1] + 1
                } else {
                    dp[x + 1][y].max(dp[x][y + 1])
                };
            }
        }
        dp[0][0]
    }

    fn cost(bl: &[Block]) -> usize {
        bl.iter().map(|b| b.old.len() + b.new.len()).sum()
    }

    #[test]
    fn small_cases_rebuild_and_are_minimal() {
        let cases = [
            ("", ""),
            ("a\n", ""),
            ("", "a\n"),
            ("a\nb\nc\n", "a\nb\nc\n"),
            ("a\nb\nc\n", "a\nx\nc\n"),
            ("a\nb\nc\n", "c\nb\na\n"),
            ("a\nb\nc\nd\ne\n", "x\na\nc\ne\ny\n"),
            ("a\na\na\n", "a\na\n"),
            ("a\nb", "a\nb\n"),
        ];
        for (x, y) in cases {
            let (a, b) = (lines(x), lines(y));
            let bl = diff_blocks(&a, &b, u64::MAX).unwrap();
            let got: Vec<Vec<u8>> = rebuild(&a, &b, &bl);
            let want: Vec<Vec<u8>> = b.iter().map(|l| l.to_vec()).collect();
            assert_eq!(got, want, "{x:?} -> {y:?}");
            assert_eq!(
                cost(&bl),
                a.len() + b.len() - 2 * lcs_len(&a, &b),
                "{x:?} -> {y:?}"
            );
        }
    }

    #[test]
    fn random_sequences_rebuild_with_minimal_cost() {
        // Tiny LCG: deterministic, no dependency.
        let mut s: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) as usize
        };
        let alphabet = ["a\n", "b\n", "c\n", "d\n"];
        for _ in 0..2000 {
            let la = next() % 12;
            let lb = next() % 12;
            let x: String = (0..la).map(|_| alphabet[next() % 4]).collect();
            let y: String = (0..lb).map(|_| alphabet[next() % 4]).collect();
            let (a, b) = (lines(&x), lines(&y));
            let bl = diff_blocks(&a, &b, u64::MAX).unwrap();
            let want: Vec<Vec<u8>> = b.iter().map(|l| l.to_vec()).collect();
            assert_eq!(rebuild(&a, &b, &bl), want, "{x:?} -> {y:?}");
            assert_eq!(cost(&bl), la + lb - 2 * lcs_len(&a, &b), "{x:?} -> {y:?}");
        }
    }

    #[test]
    fn stops_when_distance_exceeds_bound() {
        let x: String = (0..100).map(|i| format!("old {i}\n")).collect();
        let y: String = (0..100).map(|i| format!("new {i}\n")).collect();
        let (a, b) = (lines(&x), lines(&y));
        assert!(diff_blocks(&a, &b, 199).is_none());
        assert_eq!(cost(&diff_blocks(&a, &b, 200).unwrap()), 200);
        // Length difference alone exceeds the bound: no search at all.
        assert!(diff_blocks(&a, &[], 99).is_none());
    }

    #[test]
    fn giving_up_on_work_keeps_the_script_correct() {
        let mut s: u64 = 7;
        let mut bit = move || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
            if (s >> 40) & 1 == 0 {
                "x\n"
            } else {
                "y\n"
            }
        };
        let x: String = (0..300).map(|_| bit()).collect();
        let y: String = (0..300).map(|_| bit()).collect();
        let (a, b) = (lines(&x), lines(&y));
        let want: Vec<Vec<u8>> = b.iter().map(|l| l.to_vec()).collect();
        let optimal = diff_blocks(&a, &b, u64::MAX).unwrap();
        let cheap = diff_blocks_limited(&a, &b, u64::MAX, 50).unwrap();
        assert_eq!(rebuild(&a, &b, &optimal), want);
        assert_eq!(rebuild(&a, &b, &cheap), want);
        assert!(cost(&cheap) > cost(&optimal));
        assert_eq!(cost(&optimal), 600 - 2 * lcs_len(&a, &b));
    }

    #[test]
    fn lines_unique_to_one_side_are_set_aside_without_losing_minimality() {
        let x = "a\nu1\nb\nc\nu2\nd\n";
        let y = "a\nb\nv1\nc\nd\nv2\n";
        let (a, b) = (lines(x), lines(y));
        let bl = diff_blocks(&a, &b, u64::MAX).unwrap();
        assert_eq!(cost(&bl), a.len() + b.len() - 2 * lcs_len(&a, &b));
        // The budget counts the set-aside lines too.
        assert!(diff_blocks(&a, &b, 3).is_none());
        assert!(diff_blocks(&a, &b, 4).is_some());
    }

    #[test]
    fn large_rewrite_is_fast_enough_to_finish() {
        let x: String = (0..5000).map(|i| format!("old {i}\n")).collect();
        let y: String = (0..5000).map(|i| format!("new {i}\n")).collect();
        let (a, b) = (lines(&x), lines(&y));
        assert_eq!(cost(&diff_blocks(&a, &b, 20_000).unwrap()), 10_000);
    }
}
