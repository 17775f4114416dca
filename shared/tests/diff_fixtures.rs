//! Table test over the hostile (and good) patches in `fixtures/diff/`.
//!
//! Every case of `fixtures/diff/expect.toml` (written by `fixtures/diff/gen_diff_fixtures.py`)
//! is parsed with `parse_patch` under the default limits plus the case's overrides. A hostile
//! case must fail with exactly the rule id its name starts with, at the patch line it lists,
//! and the message must carry both; an `ok` case must parse into the listed number of sections.
//! Every `.diff` in the folder must be listed, so a fixture cannot silently go untested.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions: a panic is a test failure"
)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use airlock_core::diff::{parse_patch, DiffError, DiffLimits};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    case: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    fixture: String,
    expect: String,
    line: Option<u64>,
    files: Option<u64>,
    max_patch_bytes: Option<u64>,
    max_files: Option<u64>,
    max_hunks: Option<u64>,
    max_lines: Option<u64>,
}

impl Case {
    fn limits(&self) -> DiffLimits {
        let d = DiffLimits::default();
        DiffLimits {
            max_patch_bytes: self.max_patch_bytes.unwrap_or(d.max_patch_bytes),
            max_files: self.max_files.unwrap_or(d.max_files),
            max_hunks: self.max_hunks.unwrap_or(d.max_hunks),
            max_lines: self.max_lines.unwrap_or(d.max_lines),
            ..d
        }
    }
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/diff")
}

fn cases() -> Vec<Case> {
    let text = fs::read_to_string(dir().join("expect.toml")).unwrap();
    toml::from_str::<Expect>(&text).unwrap().case
}

#[test]
fn every_hostile_patch_is_rejected_with_its_rule_and_line() {
    let mut failures = Vec::new();
    for c in cases() {
        let bytes = fs::read(dir().join(&c.fixture)).unwrap();
        let got = parse_patch(&bytes, &c.limits());
        match (c.expect.as_str(), got) {
            ("ok", Ok(p)) => {
                if Some(p.files_changed()) != c.files {
                    failures.push(format!(
                        "{}: {} sections, want {:?}",
                        c.fixture,
                        p.files_changed(),
                        c.files
                    ));
                }
            }
            ("ok", Err(e)) => failures.push(format!("{}: rejected: {e}", c.fixture)),
            (want, Ok(_)) => failures.push(format!("{}: ACCEPTED, want {want}", c.fixture)),
            (want, Err(e)) => {
                let msg = e.to_string();
                if e.rule() != want {
                    failures.push(format!(
                        "{}: rule {}, want {want}: {msg}",
                        c.fixture,
                        e.rule()
                    ));
                }
                if !msg.contains(&format!("({want})")) {
                    failures.push(format!("{}: message lacks the rule id: {msg}", c.fixture));
                }
                match e {
                    DiffError::Rejected { line, .. } => {
                        if Some(line) != c.line {
                            failures.push(format!(
                                "{}: line {line}, want {:?}: {msg}",
                                c.fixture, c.line
                            ));
                        }
                        if !msg.contains(&format!("patch line {line}")) {
                            failures.push(format!("{}: message lacks the line: {msg}", c.fixture));
                        }
                    }
                    other => failures.push(format!("{}: not a Rejected error: {other}", c.fixture)),
                }
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn fixture_names_state_the_expected_outcome_and_all_are_listed() {
    let listed: BTreeSet<String> = cases().iter().map(|c| c.fixture.clone()).collect();
    for c in cases() {
        let prefix = c.fixture.split("--").next().unwrap();
        assert_eq!(prefix, c.expect, "{}", c.fixture);
    }
    let on_disk: BTreeSet<String> = fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".diff"))
        .collect();
    assert_eq!(on_disk, listed);
}

#[test]
fn the_table_covers_every_parser_rule() {
    let covered: BTreeSet<String> = cases().into_iter().map(|c| c.expect).collect();
    for r in [
        "diff.abs-path",
        "diff.parent-dir",
        "diff.git-dir",
        "diff.quoted-path",
        "diff.path",
        "diff.mode",
        "diff.rename",
        "diff.binary",
        "diff.header",
        "diff.hunk-header",
        "diff.hunk-count",
        "diff.hunk-order",
        "diff.newline",
        "diff.duplicate",
        "diff.order",
        "diff.collision",
        "diff.too-large",
        "diff.trailing",
    ] {
        assert!(covered.contains(r), "no fixture for {r}");
    }
}
