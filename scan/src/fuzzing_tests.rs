//! The `scan` helper on the committed seeds (`fuzz/corpus/scan/`), on mutations of them, and
//! on the hostile shapes its work bound caught.

use std::path::Path;

use airlock_testkit::fuzz::{corpus, Lcg};

use super::*;

/// The committed seeds, with their names.
fn seeds() -> Vec<(String, Vec<u8>)> {
    corpus("scan", "seed-")
}

#[test]
fn every_seed_is_found_and_keeps_the_invariants() {
    let all = seeds();
    assert!(all.len() >= 7, "seeds missing: {}", all.len());
    for (name, bytes) in &all {
        assert_eq!(scan(bytes), Outcome::Found, "{name}: no finding");
    }
}

#[test]
fn seeds_cover_every_form() {
    let forms: Vec<Form> = seeds()
        .iter()
        .map(|(_, b)| crate::content::classify(b))
        .collect();
    for form in [Form::Text, Form::Utf16, Form::Binary] {
        assert!(forms.contains(&form), "no seed of form {form:?}");
    }
}

#[test]
fn mutated_seeds_keep_the_invariants() {
    let pool: Vec<Vec<u8>> = seeds().into_iter().map(|(_, b)| b).collect();
    let mut rng = Lcg(29);
    let (mut found, mut clean) = (0, 0);
    for _ in 0..1500 {
        let mut input = pool[rng.below(pool.len())].clone();
        for _ in 0..=rng.below(4) {
            let at = rng.below(input.len() + 1);
            match rng.below(5) {
                0 if at < input.len() => input[at] = rng.below(256) as u8,
                1 if at < input.len() => {
                    input.remove(at);
                }
                2 => input.insert(at, b"\"'`\\%\n="[rng.below(7)]),
                3 => {
                    // Repeat a slice: where a per-hit rescan turns quadratic.
                    let end = (at + 1 + rng.below(64)).min(input.len());
                    let piece = input[at.min(end)..end].to_vec();
                    for _ in 0..rng.below(32) {
                        input.splice(at..at, piece.iter().copied());
                    }
                }
                _ => input.truncate(at),
            }
        }
        match scan(&input) {
            Outcome::Found => found += 1,
            Outcome::Clean => clean += 1,
        }
    }
    assert!(found > 0 && clean > 0, "found {found}, clean {clean}");
}

#[test]
fn empty_and_tiny_inputs_are_clean() {
    for input in [&b""[..], b"\0", b"\"", b"%", b"\xff\xfe", b"PK\x03\x04"] {
        assert_eq!(scan(input), Outcome::Clean, "{input:?}");
    }
}

/// The bounds are live: a pass that walks the file once per hit is caught.
#[test]
#[should_panic(expected = "walked past linear")]
fn the_walk_bound_catches_a_quadratic_pass() {
    let (_, work) = measure(|| {
        for at in 0..2000 {
            crate::work::walk(at);
        }
    });
    check_work(2000, work);
}

/// A run of escaped quotes on one unclosed line: every `\"` is a quote the literal reader
/// may open at, and each such walk ran to the line end (quadratic in the line).
#[test]
fn escaped_quotes_on_an_unclosed_line_are_walked_once() {
    let mut input = b"x = \"".to_vec();
    for _ in 0..2000 {
        input.extend_from_slice(b"\\\"");
    }
    input.extend_from_slice(b"\nend\n");
    assert_eq!(scan(&input), Outcome::Clean);
    // The same with a continuation per quote (no value grows: no cap stops the walk).
    let mut input = b"x = `".to_vec();
    for _ in 0..2000 {
        input.extend_from_slice(b"\\'\\\n");
    }
    let _ = scan(&input);
}

/// 36 random alphanumerics: the body of a fake classic GitHub token.
fn token_body(rng: &mut Lcg) -> String {
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..36)
        .map(|_| ALNUM[rng.below(ALNUM.len())] as char)
        .collect()
}

/// Many findings of joined values on one long line, and many findings in a binary file
/// without a line break: each was placed (line and column) by walking from the line start
/// (quadratic in the line).
#[test]
fn many_findings_on_one_line_are_placed_in_linear_work() {
    let mut rng = Lcg(7);
    let mut line = String::from("tokens = [");
    for _ in 0..300 {
        let t = token_body(&mut rng);
        line.push_str(&format!("\"ghp_{}\" + \"{}\"; ", &t[..10], &t[10..]));
    }
    line.push_str("]\n");
    assert_eq!(scan(line.as_bytes()), Outcome::Found);
    let found = scanner().scan(FUZZ_PATH, line.as_bytes());
    assert!(found.len() >= 300, "{} findings", found.len());

    let mut bin = Vec::new();
    for _ in 0..300 {
        bin.extend_from_slice(b"\0\x01token=ghp_");
        bin.extend_from_slice(token_body(&mut rng).as_bytes());
    }
    assert_eq!(scan(&bin), Outcome::Found);
    let found = scanner().scan(FUZZ_PATH, &bin);
    assert!(found.len() >= 300, "{} findings", found.len());
}

/// The committed inputs of the bugs above (`fuzz/corpus/scan/regression-*`), kept in the
/// corpus so that every campaign starts from them.
#[test]
fn every_regression_input_keeps_the_invariants() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/scan");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("regression-")
        {
            let _ = scan(&std::fs::read(&p).unwrap());
            n += 1;
        }
    }
    assert!(n >= 3, "regression inputs missing: {n}");
}
