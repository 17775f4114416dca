use super::common::{describe, example, scanner, uncovered};
use airlock_scan::{Rule, Scanner, Span};

const SEEDS: [u64; 3] = [1, 42, 0x5eed];

#[test]
fn every_rule_has_examples_and_false_positives() {
    for rule in scanner().rules() {
        assert!(!rule.description.is_empty(), "{}: no description", rule.id);
        assert!(
            !rule.examples.is_empty(),
            "{}: no true-positive example",
            rule.id
        );
        assert!(
            !rule.false_positives.is_empty(),
            "{}: no false-positive example",
            rule.id
        );
        assert!(rule.sample.is_some(), "{}: no corpus sample", rule.id);
        assert!(
            !rule.keywords.is_empty() || rule.path.is_some(),
            "{}: neither a keyword nor a path (would run on every file)",
            rule.id
        );
    }
}

#[test]
fn rule_ids_are_unique_kebab_case() {
    let mut seen = std::collections::HashSet::new();
    for rule in scanner().rules() {
        assert!(seen.insert(rule.id.clone()), "duplicate {}", rule.id);
        assert!(
            rule.id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{} is not kebab-case",
            rule.id
        );
    }
}

#[test]
fn every_true_positive_example_is_found_and_fully_covered() {
    let s = scanner();
    for rule in s.rules() {
        for (i, ex) in rule.examples.iter().enumerate() {
            for seed in SEEDS {
                let (path, r) = example(ex, seed);
                let findings = s.scan(&path, r.text.as_bytes());
                assert!(
                    findings.iter().any(|f| f.rule_id == rule.id),
                    "{} example #{i} (seed {seed}) not found; got [{}]",
                    rule.id,
                    describe(&findings)
                );
                let missing = uncovered(&r.text, &r, &findings, &rule.id);
                assert!(
                    missing.is_empty(),
                    "{} example #{i}: {} secret part(s) not covered",
                    rule.id,
                    missing.len()
                );
            }
        }
    }
}

#[test]
fn no_false_positive_example_is_reported() {
    let s = scanner();
    for rule in s.rules() {
        for (i, ex) in rule.false_positives.iter().enumerate() {
            for seed in SEEDS {
                let (path, r) = example(ex, seed);
                let findings = s.scan(&path, r.text.as_bytes());
                // Neither this rule nor any specific rule may report it (a generic
                // fallback may: `token = "<random>"` is a token, whatever its prefix).
                let fallback = |id: &str| s.rules().iter().any(|x| x.id == id && x.fallback);
                let bad: Vec<_> = findings
                    .iter()
                    .filter(|f| f.rule_id == rule.id || !fallback(&f.rule_id))
                    .cloned()
                    .collect();
                assert!(
                    bad.is_empty(),
                    "{} false-positive #{i} (seed {seed}) reported: [{}]",
                    rule.id,
                    describe(&bad)
                );
            }
        }
    }
}

/// The prefilter windows must not change results: the same rules with `Span::File`
/// (regex over the whole file) find exactly the same things on every example.
#[test]
fn prefilter_windows_match_whole_file_search() {
    let s = scanner();
    let whole_rules: Vec<Rule> = s
        .rules()
        .iter()
        .cloned()
        .map(|mut r| {
            r.span = Span::File;
            r
        })
        .collect();
    let whole = Scanner::new(whole_rules, s.global_allowlists().to_vec()).unwrap();
    for rule in s.rules() {
        for ex in rule.examples.iter().chain(&rule.false_positives) {
            let (path, r) = example(ex, 9);
            let a = s.scan(&path, r.text.as_bytes());
            let b = whole.scan(&path, r.text.as_bytes());
            assert_eq!(a, b, "{}: windowed and whole-file results differ", rule.id);
        }
    }
}
