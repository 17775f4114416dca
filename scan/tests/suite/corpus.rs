//! At least 5 random instances per rule, embedded in realistic .env, YAML, JSON, Python,
//! JavaScript and HCL files (or the rule's own file format), all found with the right rule
//! id, every random secret part covered, and nothing reported outside the instances.

use super::common::{scanner, small_input_scanner};
use airlock_scan::testgen::{realistic_file, render, Format, Rng, Sample};
use std::collections::BTreeMap;
use std::ops::Range;

/// Fixed: the corpus is the same on every run.
const SEED: u64 = 0xA1_2C_0C_4B;
const INSTANCES: usize = 6;

struct Instance {
    rule_id: String,
    parts: Vec<String>,
}

fn check_file(
    path: &str,
    text: &str,
    instances: &[(Range<usize>, Instance)],
    failures: &mut Vec<String>,
) {
    ALL_TEXT.with(|all| all.borrow_mut().push_str(text));
    let findings = scanner().scan(path, text.as_bytes());
    // The keyword automaton's kind changes speed, never findings.
    if findings != small_input_scanner().scan(path, text.as_bytes()) {
        failures.push(format!(
            "{path}: the small-input scanner finds something else"
        ));
    }
    for (range, inst) in instances {
        let own: Vec<_> = findings
            .iter()
            .filter(|f| f.rule_id == inst.rule_id && range.start <= f.start && f.end <= range.end)
            .collect();
        if own.is_empty() {
            let here: Vec<String> = findings
                .iter()
                .filter(|f| range.start <= f.start && f.end <= range.end)
                .map(|f| f.rule_id.clone())
                .collect();
            failures.push(format!(
                "{path}: {} not found (found here: {here:?})",
                inst.rule_id
            ));
            continue;
        }
        for part in inst.parts.iter().filter(|p| p.len() >= 8) {
            let Some(i) = text[range.clone()].find(part.as_str()) else {
                failures.push(format!(
                    "{path}: {}: part not in text (embedding bug)",
                    inst.rule_id
                ));
                continue;
            };
            let (s, e) = (range.start + i, range.start + i + part.len());
            if !own.iter().any(|f| f.start <= s && e <= f.end) {
                failures.push(format!(
                    "{path}: {}: a secret part is not covered",
                    inst.rule_id
                ));
            }
        }
    }
    for f in &findings {
        if !instances
            .iter()
            .any(|(r, _)| r.start <= f.start && f.end <= r.end)
        {
            failures.push(format!("{path}: false positive outside any instance: {f}"));
        }
    }
}

thread_local! {
    /// Every file the corpus test checked, one after the other.
    static ALL_TEXT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

#[test]
fn generated_corpus_finds_every_instance_with_the_right_rule() {
    let s = scanner();
    let mut rng = Rng::new(SEED);
    let mut failures = Vec::new();
    let mut per_rule: BTreeMap<String, usize> = BTreeMap::new();
    // Assignments bucketed by format, then written 8 to a file.
    let mut buckets: BTreeMap<u8, Vec<(String, String, Instance)>> = BTreeMap::new();
    let mut files = 0usize;
    for rule in s.rules() {
        match &rule.sample {
            Some(Sample::Assign {
                name,
                value,
                formats,
            }) => {
                for k in 0..INSTANCES {
                    let format = formats[k % formats.len()];
                    let r = render(value, &mut rng);
                    let inst = Instance {
                        rule_id: rule.id.clone(),
                        parts: r.secret_parts,
                    };
                    buckets
                        .entry(format as u8)
                        .or_default()
                        .push((name.clone(), r.text, inst));
                    *per_rule.entry(rule.id.clone()).or_default() += 1;
                }
            }
            Some(Sample::File {
                file_name,
                template,
            }) => {
                for _ in 0..INSTANCES {
                    let r = render(template, &mut rng);
                    let inst = Instance {
                        rule_id: rule.id.clone(),
                        parts: r.secret_parts,
                    };
                    check_file(
                        file_name,
                        &r.text,
                        &[(0..r.text.len(), inst)],
                        &mut failures,
                    );
                    *per_rule.entry(rule.id.clone()).or_default() += 1;
                    files += 1;
                }
            }
            None => failures.push(format!("{}: no sample", rule.id)),
        }
    }
    for (fmt, items) in buckets {
        let format = Format::ALL[usize::from(fmt)];
        let mut items = items.into_iter().peekable();
        let mut n = 0;
        while items.peek().is_some() {
            let chunk: Vec<_> = items.by_ref().take(8).collect();
            let assignments: Vec<(String, String)> = chunk
                .iter()
                .map(|(name, value, _)| (name.clone(), value.clone()))
                .collect();
            let (text, ranges) = realistic_file(format, &assignments, &mut rng);
            if format == Format::Json {
                assert!(
                    serde_json::from_str::<serde_json::Value>(&text).is_ok(),
                    "generated JSON is invalid"
                );
            }
            let instances: Vec<_> = ranges
                .into_iter()
                .zip(chunk.into_iter().map(|(_, _, i)| i))
                .collect();
            let path = format!("{}.{n}", format.file_name());
            check_file(&path, &text, &instances, &mut failures);
            n += 1;
            files += 1;
        }
    }
    assert!(
        per_rule.len() >= 60,
        "only {} rules in the corpus",
        per_rule.len()
    );
    for (id, n) in &per_rule {
        assert!(*n >= 5, "{id}: only {n} instances");
    }
    assert!(files > 50, "corpus too small: {files} files");
    // The whole corpus as one large file, shifted so that the tree scanner's four-part keyword
    // walk cuts it in other places: the same findings as the small-input scanner's one walk.
    let all = ALL_TEXT.with(|all| all.take());
    assert!(all.len() > 64 * 1024, "joined corpus: {} bytes", all.len());
    for shift in [0, 1, 7, 31, 100] {
        let text = format!("{}{all}", " ".repeat(shift));
        let (big, small) = (
            s.scan("all.txt", text.as_bytes()),
            small_input_scanner().scan("all.txt", text.as_bytes()),
        );
        assert!(big.len() > 100, "{} findings", big.len());
        if big != small {
            failures.push(format!("joined corpus, shift {shift}: the scanners differ"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
