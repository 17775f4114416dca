//! The fuzz scaffolding every crate's fuzz tests share: a fixed-seed generator, the committed
//! corpus of `fuzz/corpus/<target>/`, and byte and JSON mutators.
//!
//! Guards against: copies of the same generator and mutators drifting apart across crates,
//! and a failure that does not reproduce (every generator starts from a fixed seed).

use std::path::Path;

use serde_json::Value;

/// Knuth's MMIX linear congruential generator: fixed seed, same inputs on every run.
pub struct Lcg(pub u64);

impl Lcg {
    /// The next 48 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 16
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Byte strings that tend to matter to our parsers.
pub const INTERESTING: &[&[u8]] = &[
    b"\0",
    b"\xff",
    b"\"",
    b"\\",
    b"/",
    b"..",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"null",
    b"-1",
    b"18446744073709551616",
    b"\n",
    b"\xc3",
    b"\xe2\x80\xae",
    b"=",
    b".",
    b"0",
    b"\\u0000",
    b"ustar",
    b"@@ -1 +1 @@\n",
    b"diff --git a/x b/x\n",
];

/// One to four random edits of `input`, sometimes splicing in part of another seed.
pub fn mutate(rng: &mut Lcg, input: &[u8], pool: &[Vec<u8>]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..=rng.below(4) {
        let len = out.len();
        match rng.below(9) {
            0 if len > 0 => {
                let i = rng.below(len);
                out[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                out[i] = rng.next_u64() as u8;
            }
            2 => {
                let i = rng.below(len + 1);
                let s = *rng.pick(INTERESTING);
                out.splice(i..i, s.iter().copied());
            }
            3 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                out.drain(i..i + n);
            }
            4 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                let chunk: Vec<u8> = out[i..i + n].to_vec();
                let at = rng.below(len + 1);
                out.splice(at..at, chunk);
            }
            5 => out.truncate(rng.below(len + 1)),
            6 if !pool.is_empty() => {
                let other = rng.pick(pool);
                let from = rng.below(other.len() + 1);
                let to = from + rng.below(other.len() - from + 1);
                let at = rng.below(len + 1);
                out.splice(at..at, other[from..to].iter().copied());
            }
            7 if len > 0 => {
                let i = rng.below(len);
                out[i] = b'0' + rng.below(10) as u8;
            }
            _ => {
                let i = rng.below(len + 1);
                out.insert(i, rng.next_u64() as u8);
            }
        }
    }
    out
}

/// A random leaf-level edit of a JSON value: change a value's type or content, drop or
/// add a member, grow or shrink an array.
pub fn mutate_json(rng: &mut Lcg, v: &mut Value) {
    match v {
        Value::Object(map) if !map.is_empty() && rng.below(4) != 0 => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let k = rng.pick(&keys).clone();
            match rng.below(8) {
                0 => {
                    map.remove(&k);
                }
                1 => {
                    map.insert(format!("{k}x"), Value::Bool(true));
                }
                _ => {
                    if let Some(child) = map.get_mut(&k) {
                        mutate_json(rng, child);
                    }
                }
            }
        }
        Value::Array(items) if !items.is_empty() && rng.below(4) != 0 => match rng.below(6) {
            0 => {
                items.pop();
            }
            1 => {
                let dup = items[rng.below(items.len())].clone();
                items.push(dup);
            }
            _ => {
                let i = rng.below(items.len());
                mutate_json(rng, &mut items[i]);
            }
        },
        _ => {
            let new = match rng.below(12) {
                0 => Value::Null,
                1 => Value::Bool(rng.below(2) == 0),
                2 => Value::from(0u64),
                3 => Value::from(u64::MAX),
                4 => Value::from(-1i64),
                5 => Value::from(1.5f64),
                6 => Value::String(String::new()),
                7 => Value::String("../x".into()),
                8 => Value::String("\u{202e}\n\"".into()),
                9 => Value::Array(vec![]),
                10 => match &*v {
                    Value::String(s) => {
                        let mut s = s.clone();
                        if !s.is_empty() && rng.below(2) == 0 {
                            let mut cut = rng.below(s.len());
                            while !s.is_char_boundary(cut) {
                                cut -= 1;
                            }
                            s.truncate(cut);
                        } else {
                            s.push(char::from(b'a' + rng.below(26) as u8));
                        }
                        Value::String(s)
                    }
                    Value::Number(n) => Value::from(n.as_u64().unwrap_or(0).wrapping_add(1)),
                    other => other.clone(),
                },
                _ => v.clone(),
            };
            *v = new;
        }
    }
}

/// The committed corpus files of `fuzz/corpus/<target>/` whose names start with `prefix`,
/// sorted by name (none is a normal answer for `regression-`; callers of `seed-` assert how many
/// they need). Panics when the directory is missing.
pub fn corpus(target: &str, prefix: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut out: Vec<(String, Vec<u8>)> = entries
        .map(|e| {
            let p = e.expect("a corpus entry").path();
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (name.unwrap_or_default(), bytes)
        })
        .filter(|(name, _)| name.starts_with(prefix))
        .collect();
    out.sort();
    out
}

/// `input` mutated a few times with bytes from `alphabet`: bytes replaced, removed, inserted,
/// or a slice repeated (where a per-hit rescan turns quadratic).
pub fn mutate_with(rng: &mut Lcg, mut input: Vec<u8>, alphabet: &[u8]) -> Vec<u8> {
    for _ in 0..=rng.below(6) {
        let at = rng.below(input.len() + 1);
        match rng.below(4) {
            0 if at < input.len() => input[at] = *rng.pick(alphabet),
            1 if at < input.len() => {
                input.remove(at);
            }
            2 => {
                let end = (at + 1 + rng.below(32)).min(input.len());
                let piece = input[at.min(end)..end].to_vec();
                for _ in 0..rng.below(8) {
                    input.splice(at..at, piece.iter().copied());
                }
            }
            _ => input.insert(at, *rng.pick(alphabet)),
        }
    }
    input
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_fixed_by_its_seed() {
        let (mut a, mut b, mut c) = (Lcg(7), Lcg(7), Lcg(8));
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
        assert!((0..1000).all(|_| a.below(10) < 10));
        assert_eq!(a.below(0), 0);
    }

    #[test]
    fn mutators_change_their_input_and_use_the_alphabet() {
        let mut rng = Lcg(1);
        let seed = b"{\"a\": [1, 2, 3]}".to_vec();
        let changed = (0..50)
            .filter(|_| mutate(&mut rng, &seed, &[]) != seed)
            .count();
        assert!(changed > 40, "{changed} of 50 changed");
        let out = mutate_with(&mut rng, Vec::new(), b"x");
        assert!(out.iter().all(|&c| c == b'x'));
        let mut v: Value = serde_json::from_slice(&seed).expect("json");
        let before = v.clone();
        let differs = (0..20).any(|_| {
            mutate_json(&mut rng, &mut v);
            v != before
        });
        assert!(differs);
    }

    #[test]
    fn the_corpus_of_a_target_is_read_sorted() {
        let seeds = corpus("scan", "seed-");
        assert!(seeds.len() >= 2);
        assert!(seeds.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
