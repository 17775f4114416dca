//! The labelled corpus (`tests/data/classify-corpus.tsv`): real paths from public repositories,
//! labelled by the labelling rules of `docs/CLASSIFY.md`. Reports risky-path recall (risky
//! paths the default policy sends to a human) and the over-flag rate (harmless paths it sends
//! to a human), and fails under [`MIN_RECALL`] or over [`MAX_OVER_FLAG`].

use std::collections::BTreeSet;

use super::reach::{Change, MemTree};
use super::*;

/// Small content of each kind the facts column names (no file of the corpus is copied).
fn content_of(facts: &[&str]) -> Vec<u8> {
    let mut out = String::new();
    for f in facts {
        out.push_str(match *f {
            "shebang" => "#!/bin/sh\nset -eu\n",
            "k8s" => "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
            "cfn" => "AWSTemplateFormatVersion: '2010-09-09'\nResources:\n  Bucket:\n    Type: AWS::S3::Bucket\n",
            "ansible" => "- hosts: all\n  tasks:\n    - ansible.builtin.ping:\n",
            "compose" => "services:\n  web:\n    image: nginx:1\n",
            "systemd" => "[Unit]\nDescription=app\n[Service]\nExecStart=/usr/bin/app\n",
            "dockerfile" => "FROM debian:12\nRUN apt-get update\n",
            "code" => "plugins:\n  - ./tools/local-plugin.js\n",
            _ => "",
        });
    }
    if out.is_empty() {
        out.push_str("data\n");
    }
    out.into_bytes()
}

/// Classifies one corpus row with its facts: the content of its kind, its executable bit, and a
/// tree in which the real entry point (and script) that names it does so.
fn classify_row(path: &str, facts: &[&str]) -> Classification {
    let content = content_of(facts);
    let mut tree = MemTree::new();
    tree.add(path, facts.contains(&"exec"), &content);
    if let Some(chain) = facts.iter().find_map(|f| f.strip_prefix("run-by=")) {
        match chain.split_once('>') {
            Some((entry, script)) => {
                tree.add(entry, false, format!("run: ./{script}\n").as_bytes());
                tree.add(script, true, format!(". ./{path}\n").as_bytes());
            }
            None => {
                tree.add(chain, false, format!("run: ./{path}\n").as_bytes());
            }
        }
    }
    // A script in the same directory that CI runs (it builds what is beside it).
    if let Some((entry, script)) = facts
        .iter()
        .find_map(|f| f.strip_prefix("dir-run-by="))
        .and_then(|c| c.split_once('>'))
    {
        tree.add(entry, false, format!("run: ./{script}\n").as_bytes());
        tree.add(script, true, b"#!/bin/sh\ngo build ./...\n");
    }
    if let Some(pkg) = facts.iter().find_map(|f| f.strip_prefix("pkg=")) {
        let dir = pkg.rsplit_once('/').map_or("", |(d, _)| d);
        for name in pkg.rsplit('/').next().unwrap_or_default().split('+') {
            tree.add(&format!("{dir}/{name}"), false, b"name: pkg\n");
        }
    }
    let change = Change {
        path,
        new: Some(&content),
        executable: facts.contains(&"exec"),
    };
    classify_change(&[change], &tree)
        .first()
        .map_or(classify_path(path, None), |c| c.class)
}

const CORPUS: &str = include_str!("../tests/data/classify-corpus.tsv");
const MIN_RECALL: f64 = 0.99;
const MAX_OVER_FLAG: f64 = 0.05;

fn risky(b: Bucket) -> bool {
    matches!(
        b,
        Bucket::Ci
            | Bucket::Iac
            | Bucket::Deps
            | Bucket::Build
            | Bucket::Governance
            | Bucket::Agent
    )
}

#[test]
fn corpus_recall_and_over_flag_rate() {
    let (mut risky_n, mut caught, mut harmless_n, mut flagged) = (0usize, 0usize, 0usize, 0usize);
    let (mut misses, mut false_alarms): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    let mut repos = BTreeSet::new();
    for (i, line) in CORPUS.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        assert!(
            (3..=4).contains(&cols.len()),
            "classify-corpus.tsv:{}: {line:?}",
            i + 1
        );
        let (repo, path, label) = (cols[0], cols[1], cols[2]);
        let facts: Vec<&str> = cols.get(3).map_or(Vec::new(), |f| f.split(',').collect());
        let label: Bucket = label.parse().unwrap();
        repos.insert(repo);
        let class = classify_row(path, &facts);
        // The default policy sends exactly the risky buckets to a human.
        let human = risky(class.bucket);
        if risky(label) {
            risky_n += 1;
            if human {
                caught += 1;
            } else {
                misses.push(format!(
                    "{repo} {path}: {label}, got {} ({})",
                    class.bucket, class.rule
                ));
            }
        } else {
            harmless_n += 1;
            if human {
                flagged += 1;
                false_alarms.push(format!(
                    "{repo} {path}: {label}, got {} ({})",
                    class.bucket, class.rule
                ));
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
    println!(
        "missed:\n  {}\nover-flagged:\n  {}",
        misses.join("\n  "),
        false_alarms.join("\n  ")
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
