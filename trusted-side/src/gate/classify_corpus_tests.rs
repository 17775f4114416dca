//! The labelled corpus (`tests/data/classify-corpus.tsv`): real paths from public repositories,
//! labelled by the labelling rules of `docs/CLASSIFY.md`. Reports risky-path recall (risky
//! paths the default policy sends to a human) and the over-flag rate (harmless paths it sends
//! to a human), and fails under [`MIN_RECALL`] or over [`MAX_OVER_FLAG`].

use std::collections::BTreeSet;

use super::super::policy::{Policy, Verdict};
use super::*;

const CORPUS: &str = include_str!("../../tests/data/classify-corpus.tsv");
const MIN_RECALL: f64 = 0.99;
const MAX_OVER_FLAG: f64 = 0.05;

fn risky(b: Bucket) -> bool {
    matches!(
        b,
        Bucket::Ci | Bucket::Iac | Bucket::Deps | Bucket::Build | Bucket::Governance | Bucket::Agent
    )
}

#[test]
fn corpus_recall_and_over_flag_rate() {
    let policy = Policy::default();
    let (mut risky_n, mut caught, mut harmless_n, mut flagged) = (0usize, 0usize, 0usize, 0usize);
    let (mut misses, mut false_alarms) = (Vec::new(), Vec::new());
    let mut repos = BTreeSet::new();
    for (i, line) in CORPUS.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 3, "classify-corpus.tsv:{}: {line:?}", i + 1);
        let (repo, path, label) = (cols[0], cols[1], cols[2]);
        let label: Bucket = label.parse().unwrap();
        repos.insert(repo);
        let class = classify_path(path, None);
        let human = policy.decide_path(path, &class).verdict >= Verdict::Human;
        if risky(label) {
            risky_n += 1;
            if human {
                caught += 1;
            } else {
                misses.push(format!("{repo} {path}: {label}, got {} ({})", class.bucket, class.rule));
            }
        } else {
            harmless_n += 1;
            if human {
                flagged += 1;
                false_alarms.push(format!("{repo} {path}: {label}, got {} ({})", class.bucket, class.rule));
            }
        }
    }
    let recall = caught as f64 / risky_n as f64;
    let over = flagged as f64 / harmless_n as f64;
    println!(
        "corpus: {} paths from {} repositories; risky recall {caught}/{risky_n} = {:.1}%, over-flag {flagged}/{harmless_n} = {:.1}%",
        risky_n + harmless_n,
        repos.len(),
        recall * 100.0,
        over * 100.0
    );
    assert!(risky_n + harmless_n >= 1000 && repos.len() >= 60);
    assert!(
        recall >= MIN_RECALL && over <= MAX_OVER_FLAG,
        "recall {:.1}% (min {:.0}%), over-flag {:.1}% (max {:.0}%)\nmissed:\n{}\nover-flagged:\n{}",
        recall * 100.0,
        MIN_RECALL * 100.0,
        over * 100.0,
        MAX_OVER_FLAG * 100.0,
        misses.join("\n"),
        false_alarms.join("\n")
    );
}
