//! Every helper on the seeds, the committed fixtures and mutated inputs.

use super::*;
use crate::fuzz::{mutate, mutate_json, Lcg};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

type Helper = fn(&[u8]) -> Outcome;

fn seeds(target: &str) -> Vec<Vec<u8>> {
    seed_corpus()
        .into_iter()
        .find(|(t, _)| *t == target)
        .map(|(_, s)| s)
        .unwrap_or_else(|| panic!("no seeds for {target}"))
}

/// Every committed fixture file (any format), with its path.
fn fixtures() -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/tests/fixtures");
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.push((path, bytes));
            }
        }
    }
    out.sort();
    out
}

/// Runs `helper` on `rounds` mutations of the seeds (bytes, and for JSON seeds structural
/// edits), returning (accepted, rejected).
fn fuzz(helper: Helper, pool: &[Vec<u8>], rounds: usize, seed: u64) -> (usize, usize) {
    let mut rng = Lcg(seed);
    let (mut accepted, mut rejected) = (0, 0);
    for _ in 0..rounds {
        let base = rng.pick(pool);
        let input = match serde_json::from_slice::<Value>(base) {
            Ok(mut v) if rng.below(2) == 0 => {
                for _ in 0..=rng.below(2) {
                    mutate_json(&mut rng, &mut v);
                }
                if rng.below(2) == 0 {
                    format::to_json_bytes(&v)
                } else {
                    serde_json::to_vec(&v).unwrap()
                }
            }
            _ => mutate(&mut rng, base, pool),
        };
        match helper(&input) {
            Outcome::Accepted => accepted += 1,
            Outcome::Rejected => rejected += 1,
        }
    }
    (accepted, rejected)
}

const ROUNDS: usize = 2500;

#[test]
fn every_seed_is_accepted_by_its_helper() {
    // (target, helper, number of seeds: a seed builder that silently fails shows here)
    let helpers: [(&str, Helper, usize); 8] = [
        ("manifest", manifest, 1),
        ("request", request, 2),
        ("packet", packet, 1),
        ("dsse_envelope", dsse_envelope, 6),
        ("token", token, 4),
        ("tar_read", tar_read, 2),
        ("diff_parse", diff_parse, 4),
        ("comments", comments, 2),
    ];
    for (name, helper, count) in helpers {
        let s = seeds(name);
        assert_eq!(s.len(), count, "{name}: seeds missing");
        for (i, input) in s.iter().enumerate() {
            assert_eq!(helper(input), Outcome::Accepted, "{name}: seed {i} refused");
        }
    }
}

/// What `bench/fuzz.sh` starts each libFuzzer run from: the committed `fuzz/corpus/<target>/`
/// seeds are today's encoders' output (else a format change left them stale), and each passes
/// its helper. CI checks that the targets build (`bench/fuzz.sh --check`); this runs their seeds.
#[test]
fn the_committed_seeds_are_current_and_pass_their_helpers() {
    let helpers: [(&str, Helper); 8] = [
        ("manifest", manifest),
        ("request", request),
        ("packet", packet),
        ("dsse_envelope", dsse_envelope),
        ("token", token),
        ("tar_read", tar_read),
        ("diff_parse", diff_parse),
        ("comments", comments),
    ];
    for (name, helper) in helpers {
        let committed: Vec<Vec<u8>> = crate::fuzz::corpus(name, "seed-")
            .into_iter()
            .map(|(_, b)| b)
            .collect();
        assert_eq!(
            committed,
            seeds(name),
            "fuzz/corpus/{name}/ is stale: cargo test -p airlock-testkit write_seed_corpus -- --ignored"
        );
        for (i, input) in committed.iter().enumerate() {
            assert_eq!(helper(input), Outcome::Accepted, "{name}: seed-{i} refused");
        }
    }
}

#[test]
fn every_helper_survives_every_committed_fixture() {
    let all = fixtures();
    assert!(all.len() >= 50, "fixtures missing: {}", all.len());
    for (path, bytes) in &all {
        let name = path.file_name().unwrap().to_string_lossy();
        let outcomes = [
            tar_read(bytes),
            manifest(bytes),
            request(bytes),
            packet(bytes),
            dsse_envelope(bytes),
            token(bytes),
            diff_parse(bytes),
        ];
        // A fixture named `ok--*` is a valid input of its format: some helper accepts it.
        if name.starts_with("ok--") {
            assert!(
                outcomes.contains(&Outcome::Accepted),
                "{} refused",
                path.display()
            );
        }
        if name.ends_with(".tar.gz") && name.starts_with("ok--") {
            assert_eq!(outcomes[0], Outcome::Accepted, "{}", path.display());
        }
    }
}

#[test]
fn tar_read_survives_mutated_archives_and_raw_tar_streams() {
    let mut pool = seeds("tar_read");
    for (_, bytes) in fixtures() {
        if bytes.len() <= 64 * 1024 {
            pool.push(bytes);
        }
    }
    // The decompressed streams too: `tar_read` gzips its input, which reaches the tar
    // layer behind the gzip CRC.
    let raw: Vec<Vec<u8>> = pool
        .iter()
        .filter_map(|gz| {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(gz.as_slice())
                .take(64 * 1024)
                .read_to_end(&mut out)
                .ok()
                .map(|_| out)
        })
        .collect();
    assert!(raw.len() >= 10, "too few raw tar streams: {}", raw.len());
    let (a1, r1) = fuzz(tar_read, &pool, ROUNDS / 2, 1);
    let (a2, r2) = fuzz(tar_read, &raw, ROUNDS, 2);
    assert!(r1 > 0 && r2 > 0, "nothing refused: {r1} {r2}");
    assert!(
        a2 > 0,
        "no mutated raw tar stream was accepted: the round trip never ran"
    );
    let _ = a1;
}

#[test]
fn manifest_survives_mutations() {
    let (a, r) = fuzz(manifest, &seeds("manifest"), ROUNDS, 3);
    assert!(a > 0 && r > 0, "accepted {a}, rejected {r}");
}

#[test]
fn request_survives_mutations() {
    let (a, r) = fuzz(request, &seeds("request"), ROUNDS, 4);
    assert!(a > 0 && r > 0, "accepted {a}, rejected {r}");
}

#[test]
fn packet_survives_mutations() {
    let (a, r) = fuzz(packet, &seeds("packet"), ROUNDS, 5);
    assert!(a > 0 && r > 0, "accepted {a}, rejected {r}");
}

#[test]
fn dsse_envelope_survives_mutations() {
    let (a, r) = fuzz(dsse_envelope, &seeds("dsse_envelope"), ROUNDS, 6);
    assert!(a > 0 && r > 0, "accepted {a}, rejected {r}");
}

#[test]
fn comments_survive_mutations() {
    let (a, r) = fuzz(comments, &seeds("comments"), ROUNDS, 9);
    assert!(a > 0 && r > 0, "accepted {a}, rejected {r}");
}

#[test]
fn token_survives_mutations() {
    let (a, r) = fuzz(token, &seeds("token"), ROUNDS, 7);
    assert!(a > 0 && r > 0, "accepted {a}, rejected {r}");
}

#[test]
fn diff_parse_survives_mutated_patches() {
    let mut pool = seeds("diff_parse");
    for (path, bytes) in fixtures() {
        if path
            .extension()
            .is_some_and(|e| e == "diff" || e == "patch")
        {
            pool.push(bytes);
        }
    }
    let (a, r) = fuzz(diff_parse, &pool, ROUNDS, 8);
    assert!(a > 0 && r > 0, "accepted {a}, rejected {r}");
}

#[test]
fn helpers_survive_empty_and_tiny_inputs() {
    // An empty patch is a valid patch that changes nothing.
    assert_eq!(diff_parse(b""), Outcome::Accepted);
    assert_eq!(diff_parse(b"\0"), Outcome::Rejected);
    let helpers: [Helper; 6] = [manifest, request, packet, dsse_envelope, token, tar_read];
    for helper in helpers {
        for input in [
            &b""[..],
            b"\0",
            b"{}",
            b"[]",
            b"null",
            b"v4.public.",
            b"\x1f\x8b",
        ] {
            assert_eq!(helper(input), Outcome::Rejected, "{input:?}");
        }
    }
}

/// The round-trip assertion is live: a parser that changes the value is caught.
#[test]
#[should_panic(expected = "re-encoded document parsed to another value")]
fn json_round_trip_catches_a_parser_that_changes_the_value() {
    let m = seeds::manifest();
    json_round_trip(&m, MAX_MANIFEST_BYTES, |b| {
        Manifest::from_json(b).map(|mut back| {
            back.files.pop();
            back
        })
    });
}

/// The signed-payload path asserts that only payload rules refuse a correctly signed
/// envelope; a non-canonical payload is one of those.
#[test]
fn dsse_signed_payload_path_refuses_non_canonical_json() {
    let pretty = serde_json::to_vec_pretty(&serde_json::json!({"_type": "x"})).unwrap();
    assert_eq!(dsse_envelope(&pretty), Outcome::Rejected);
}

/// Found by this helper: a directory whose path is exactly `max_path_bytes` long is
/// accepted by the reader, and the writer's rewrite of it must be too (it named it `path/`,
/// one byte over: `tar.path-too-long`).
#[test]
fn tar_round_trip_keeps_a_directory_at_max_path_length() {
    let mut path = String::from("files");
    while path.len() < 1024 - 201 {
        path.push('/');
        path.push_str(&"a".repeat(200));
    }
    while path.len() < 1024 {
        path.push('b');
    }
    let mut header = ::tar::Header::new_gnu();
    header.set_entry_type(::tar::EntryType::Directory);
    header.set_mode(0o755);
    header.set_size(0);
    let mut b = ::tar::Builder::new(Vec::new());
    b.append_data(&mut header, &path, std::io::empty()).unwrap();
    let tar = b.into_inner().unwrap();
    let gz = gzip(&tar);
    let bundle = (TarLimits::bundle(), AllowedNames::Bundle);
    assert_eq!(read_all(&gz, &bundle.0, &bundle.1).unwrap().len(), 1);
    assert_eq!(tar_case(&gz, &bundle.0, &bundle.1), Outcome::Accepted);
}

/// Writes the seed corpus to `fuzz/corpus/<target>/seed-<n>`. Run by hand after a format
/// change: `cargo test -p airlock-testkit write_seed_corpus -- --ignored`.
#[test]
#[ignore = "writes fuzz/corpus; run by hand after a format change"]
fn write_seed_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    for (target, inputs) in seed_corpus() {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        for (i, input) in inputs.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i}")), input).unwrap();
        }
    }
}
