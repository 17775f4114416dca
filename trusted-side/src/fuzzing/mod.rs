//! Entry points of the trusted side's fuzz targets (`fuzz/fuzz_targets/classify_content.rs`,
//! `fuzz/fuzz_targets/report.rs`). Not a stable API: compiled only under `cfg(fuzzing)` (set by
//! `cargo fuzz`) and for this crate's unit tests, which run each helper on the committed seeds
//! (`fuzz/corpus/<target>/`) and on inputs mutated by a fixed-seed generator.
//!
//! Guards against: the gate's content classification and its review reports breaking on
//! hostile input (a panic, content that lowers a bucket, work past the read cap, worker text
//! that becomes markup, script or a bidi reordering).

pub mod classify_content;
pub mod report;

pub use classify_content::classify_content;
pub use report::report;

/// A fixed-seed generator, so failures of the mutation tests reproduce.
#[cfg(test)]
pub(crate) struct Lcg(pub(crate) u64);

#[cfg(test)]
impl Lcg {
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

/// The committed corpus files of `target` whose names start with `prefix`, sorted by name.
#[cfg(test)]
pub(crate) fn corpus(target: &str, prefix: &str) -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .filter(|(name, _)| name.starts_with(prefix))
        .collect();
    out.sort();
    out
}

/// `input` mutated a few times: bytes replaced, removed, inserted from `alphabet`, or a slice
/// repeated.
#[cfg(test)]
pub(crate) fn mutate(rng: &mut Lcg, mut input: Vec<u8>, alphabet: &[u8]) -> Vec<u8> {
    for _ in 0..=rng.below(6) {
        let at = rng.below(input.len() + 1);
        match rng.below(4) {
            0 if at < input.len() => input[at] = alphabet[rng.below(alphabet.len())],
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
            _ => input.insert(at, alphabet[rng.below(alphabet.len())]),
        }
    }
    input
}
