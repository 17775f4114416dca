//! The `classify_content` helper on the committed seeds (`fuzz/corpus/classify_content/`), on
//! mutations of them, and on the shapes its invariants are about.

use super::*;
use airlock_testkit::fuzz::{corpus, mutate_with as mutate, Lcg};

const TARGET: &str = "classify_content";

#[test]
fn every_seed_keeps_the_invariants_and_content_raises_something() {
    let seeds = corpus(TARGET, "seed-");
    assert!(seeds.len() >= 6, "seeds missing: {}", seeds.len());
    for (name, bytes) in &seeds {
        let files = parse_case(bytes);
        assert!(!files.is_empty(), "{name}: no file");
        let _ = classify_content(bytes);
        for f in &files {
            check_bounded(f);
        }
    }
    // Each kind of content the brief names is raised by content in some seed.
    let mut rules: Vec<&str> = Vec::new();
    for (_, bytes) in &seeds {
        for f in parse_case(bytes) {
            if let Some(hit) = content::detect(&f.path, &f.content, f.executable) {
                rules.push(hit.rule);
            }
        }
    }
    for want in [
        "iac.k8s-content",
        "iac.cloudformation-content",
        "iac.terraform-content",
        "iac.systemd-unit-content",
        "build.dockerfile-content",
        "build.tooling-script",
    ] {
        assert!(rules.contains(&want), "no seed raised by {want}: {rules:?}");
    }
}

#[test]
fn mutated_seeds_keep_the_invariants() {
    let pool: Vec<Vec<u8>> = corpus(TARGET, "seed-")
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    let mut rng = Lcg(29);
    const BYTES: &[u8] = b":-\n \t{}[]\"'#!/=.\r\xef\xbb\xbfx";
    let (mut raised, mut kept) = (0, 0);
    for _ in 0..200 {
        let seed = pool[rng.below(pool.len())].clone();
        let input = mutate(&mut rng, seed, BYTES);
        if let Some(first) = parse_case(&input).first() {
            check_bounded(first);
        }
        match classify_content(&input) {
            Outcome::Raised => raised += 1,
            Outcome::Kept => kept += 1,
        }
    }
    assert!(raised > 0 && kept > 0, "raised {raised}, kept {kept}");
}

/// The invariant is live: a classification that lowers a name's bucket is caught.
#[test]
#[should_panic(expected = "content moved a path out of what its name decided")]
fn the_invariant_catches_a_lowered_bucket() {
    let name = classify_path(".github/workflows/ci.yml", None);
    let lowered = Classification {
        bucket: Bucket::Src,
        rule: "src.code",
    };
    check_content_layer(".github/workflows/ci.yml", name, lowered);
}

/// What lies past the cap is not seen, and the bounded-work check would see it if it were.
#[test]
fn nothing_past_the_cap_is_read() {
    let padded = past_the_cap(b"x: 1", HEAD_MAX_BYTES);
    assert_eq!(padded.len(), HEAD_MAX_BYTES + PAST_THE_CAP.len());
    assert_eq!(content::detect("x.yaml", &padded, false), None);
    assert_eq!(
        content::detect("x.yaml", PAST_THE_CAP, false).map(|h| h.rule),
        Some("iac.k8s-content")
    );
    assert_eq!(
        classify_path("x.yaml", Some(padded.as_slice())).bucket,
        Bucket::Other
    );
    let _ = classify_content(b"x.yaml\nx: 1\n");
}

#[test]
fn hostile_paths_and_contents_do_not_panic() {
    for input in [
        &b""[..],
        b"\n",
        b"=== \n=== \n",
        b"../../etc/passwd\napiVersion: v1\nkind: Pod\n",
        b"/abs/x.yaml [x]\n#!\n",
        b".GitHub/Workflows/x.yml\n\xff\xfe\0\0",
        b"a\\b\\c.yaml .\n\xef\xbb\xbfapiVersion: v1\r\nkind: Pod\r\n",
        b"\xe2\x80\xae.yaml\nkind: x\n",
        b"x.\n[Service]\nExecStart=x\n",
    ] {
        let _ = classify_content(input);
    }
}

/// The committed inputs of bugs found (`fuzz/corpus/classify_content/regression-*`).
#[test]
fn regression_inputs_keep_the_invariants() {
    for (_, bytes) in corpus(TARGET, "regression-") {
        let _ = classify_content(&bytes);
    }
}
