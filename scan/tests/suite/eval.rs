//! Recall and false-positive rate on the evaluation corpus (`airlock_scan::eval`), per
//! context and per look-alike family. Every secret must be found where it was planted
//! (text contexts: a finding overlapping it; binary and UTF-16: a finding in the file);
//! a look-alike file must have no finding. Fails under 99% recall or over 1% false
//! positives in any context.

use super::common::scanner;
use airlock_scan::eval::{generate, Context, Kind, SEED};
use std::collections::BTreeMap;

#[derive(Default)]
struct Tally {
    secrets: usize,
    found: usize,
    lookalikes: usize,
    false_positives: usize,
}

#[test]
fn recall_and_false_positives_per_context() {
    let files = generate(SEED);
    let mut per: BTreeMap<Context, Tally> = BTreeMap::new();
    let mut families: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut formats = std::collections::BTreeSet::new();
    let mut misses = Vec::new();
    let mut noisy = Vec::new();
    for f in &files {
        let findings = scanner().scan(&f.path, &f.bytes);
        let t = per.entry(f.context).or_default();
        match &f.kind {
            Kind::Secret(n) => {
                formats.insert(n.format.clone());
                t.secrets += 1;
                let hit = match &n.range {
                    Some(r) => findings
                        .iter()
                        .any(|x| x.start < r.end && r.start < x.end.max(x.start + 1)),
                    None => !findings.is_empty(),
                };
                if hit {
                    t.found += 1;
                } else {
                    let seen: Vec<&str> = findings.iter().map(|x| x.rule_id.as_str()).collect();
                    misses.push(format!("{} ({}): missed; found {seen:?}", f.path, n.format));
                }
            }
            Kind::LookAlike(family) => {
                t.lookalikes += 1;
                let e = families.entry(family).or_default();
                e.0 += 1;
                if !findings.is_empty() {
                    t.false_positives += 1;
                    e.1 += 1;
                    let seen: Vec<String> = findings
                        .iter()
                        .map(|x| format!("{}:{}", x.rule_id, x.line))
                        .collect();
                    noisy.push(format!("{} ({family}): {seen:?}", f.path));
                }
            }
        }
    }
    let (mut secrets, mut lookalikes) = (0, 0);
    println!("context      secrets  recall   look-alikes  false-pos");
    let mut failures = Vec::new();
    for (ctx, t) in &per {
        secrets += t.secrets;
        lookalikes += t.lookalikes;
        let recall = if t.secrets == 0 {
            1.0
        } else {
            t.found as f64 / t.secrets as f64
        };
        let fp = if t.lookalikes == 0 {
            0.0
        } else {
            t.false_positives as f64 / t.lookalikes as f64
        };
        println!(
            "{:<12} {:>7}  {:>6.2}%  {:>11}  {:>8.2}%",
            ctx.name(),
            t.secrets,
            recall * 100.0,
            t.lookalikes,
            fp * 100.0
        );
        if recall < 0.99 {
            failures.push(format!(
                "{}: recall {:.2}% < 99%",
                ctx.name(),
                recall * 100.0
            ));
        }
        if fp > 0.01 {
            failures.push(format!(
                "{}: false positives {:.2}% > 1%",
                ctx.name(),
                fp * 100.0
            ));
        }
    }
    for (family, (n, fp)) in &families {
        println!("look-alike family {family:<16} {n:>4} files, {fp} with a finding");
    }
    println!(
        "{secrets} secrets in {} formats; {lookalikes} look-alikes",
        formats.len()
    );
    for m in misses.iter().chain(noisy.iter()) {
        println!("  {m}");
    }
    assert!(secrets >= 300, "only {secrets} secrets");
    assert!(formats.len() >= 80, "only {} formats", formats.len());
    assert!(lookalikes >= 300, "only {lookalikes} look-alikes");
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn corpus_is_the_same_on_every_run() {
    let a = generate(SEED);
    let b = generate(SEED);
    assert_eq!(a.len(), b.len());
    assert!(a
        .iter()
        .zip(&b)
        .all(|(x, y)| x.path == y.path && x.bytes == y.bytes));
}
