//! The `report` helper on the committed seeds (`fuzz/corpus/report/`), on mutations of them,
//! and on the renderer's hostile cases.

use super::*;
use airlock_testkit::fuzz::{corpus, mutate_with as mutate, Lcg};

const TARGET: &str = "report";

#[test]
fn every_seed_keeps_the_invariants() {
    let seeds = corpus(TARGET, "seed-");
    assert!(seeds.len() >= 3, "seeds missing: {}", seeds.len());
    for (name, bytes) in &seeds {
        assert_eq!(report(bytes), Outcome::WithDiff, "{name}");
    }
}

#[test]
fn seeds_carry_what_the_reports_must_defuse() {
    let all: String = corpus(TARGET, "seed-")
        .iter()
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .collect();
    for want in ["<script", "</details>", "```", "javascript:"] {
        assert!(all.contains(want), "no seed holds {want:?}");
    }
    for c in BIDI {
        assert!(all.contains(*c), "no seed holds U+{:04X}", *c as u32);
    }
}

#[test]
fn mutated_seeds_keep_the_invariants() {
    let pool: Vec<Vec<u8>> = corpus(TARGET, "seed-")
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    let mut rng = Lcg(7);
    const BYTES: &[u8] = b"`<>&\"'\n+-@ \\|*_[]()!#\x1b\xe2\x80\xae\xd8\x9c";
    for _ in 0..400 {
        let seed = pool[rng.below(pool.len())].clone();
        let input = mutate(&mut rng, seed, BYTES);
        let _ = report(&input);
    }
}

#[test]
fn empty_and_tiny_inputs_do_not_panic() {
    for input in [
        &b""[..],
        b"\n",
        b"=== diff\n",
        b"\n=== diff\n+++ \n@@\n\n",
        b"`",
    ] {
        let _ = report(input);
    }
}

/// The Markdown check is live: text that closed its span would be caught.
#[test]
#[should_panic(expected = "outside its code span")]
fn the_markdown_check_catches_a_closed_span() {
    check_md(&format!("- `{MARKER}` {MARKER}x`\n"));
}

#[test]
fn code_ranges_read_fences_and_spans() {
    let md = "a `b` c\n````diff\n```\nx\n````\nd ``e`f`` g\n";
    let code: Vec<&str> = code_ranges(md).iter().map(|&(a, b)| &md[a..b]).collect();
    assert_eq!(code, ["b", "```\nx\n", "e`f"]);
}

/// Found at once by the seeds: `shown_max`, which makes worker text inert for the Markdown
/// report and the terminal, let U+061C (ARABIC LETTER MARK, a bidi control) through raw.
#[test]
fn the_arabic_letter_mark_is_escaped_in_markdown() {
    let md = render_md(&page("model\u{061c}name\n".as_bytes()));
    assert!(!md.contains('\u{061c}'), "{md}");
    assert!(md.contains("<U+061C>"), "{md}");
}

/// The committed inputs of bugs found (`fuzz/corpus/report/regression-*`).
#[test]
fn regression_inputs_keep_the_invariants() {
    let found = corpus(TARGET, "regression-");
    assert!(!found.is_empty(), "regression inputs missing");
    for (_, bytes) in found {
        let _ = report(&bytes);
    }
}
