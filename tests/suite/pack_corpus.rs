//! The scanner's evaluation corpus (`airlock_scan::eval`, fixed seed) committed to a real
//! repository and packed by the real binary: without `--redact` the pack is refused with a
//! `path:line: rule` line for every planted secret; with `--redact` no secret byte (as
//! written, in UTF-16, split or encoded) is anywhere in the decompressed bundle, names or
//! contents. And the trusted home never ships, whatever `--include` says.

use std::collections::BTreeSet;
use std::path::Path;

use airlock_scan::eval::{generate, Kind, SEED};
use airlock_tests::*;

fn pack(home: &Path, repo: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let prompt = repo.parent().unwrap().join("prompt.txt");
    std::fs::write(&prompt, "Tidy the configuration loading.\n").unwrap();
    run(cmd(&bin("airlock"))
        .arg("--home")
        .arg(home)
        .arg("pack")
        .arg("--repo")
        .arg(repo)
        .arg("--prompt-file")
        .arg(&prompt)
        .arg("--out")
        .arg(out)
        .args(extra))
}

fn utf16(bytes: &[u8], le: bool) -> Vec<u8> {
    bytes
        .iter()
        .flat_map(|&b| if le { [b, 0] } else { [0, b] })
        .collect()
}

#[test]
fn the_corpus_is_refused_line_by_line_and_redacted_without_a_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let home = init_home(tmp.path());
    let repo = tmp.path().join("repo");
    let corpus = generate(SEED);
    let files: Vec<(&str, &[u8])> = corpus
        .iter()
        .map(|f| (f.path.as_str(), f.bytes.as_slice()))
        .collect();
    make_repo(&repo, &files);

    // Refused: one `path:line: rule` line per secret file that pack reads.
    let out = pack(&home, &repo, &tmp.path().join("refused"), &[]);
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let listed: BTreeSet<&str> = stderr
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let (path, rest) = l.split_once(':')?;
            let (line, rule) = rest.split_once(": ")?;
            (line.parse::<u64>().is_ok() && !rule.is_empty()).then_some(path)
        })
        .collect();

    // Redacted: nothing of any secret in the bundle.
    let out_dir = tmp.path().join("out");
    let out = pack(&home, &repo, &out_dir, &["--redact", "--json"]);
    assert!(out.status.success(), "{}", show(&out));
    let raw = gunzip(&out_dir.join("bundle.tar.gz"));
    let mut unlisted = Vec::new();
    let mut secrets = 0;
    let mut needles: Vec<Vec<u8>> = Vec::new();
    let mut owner: Vec<String> = Vec::new();
    for f in &corpus {
        let Kind::Secret(n) = &f.kind else { continue };
        secrets += 1;
        let archive = airlock_scan::content::archive_kind(&f.bytes).is_some();
        if !listed.contains(f.path.as_str()) && !archive {
            unlisted.push(format!("{} ({})", f.path, n.format));
        }
        for part in &n.parts {
            for form in [part.clone(), utf16(part, true), utf16(part, false)] {
                needles.push(form);
                owner.push(format!("{} ({})", f.path, n.format));
            }
        }
    }
    // Every needle at once: one automaton over the bundle, names and contents.
    let ac = aho_corasick::AhoCorasick::new(&needles).unwrap();
    let found_in = |hay: &[u8]| -> BTreeSet<String> {
        ac.find_overlapping_iter(hay)
            .map(|m| owner[m.pattern().as_usize()].clone())
            .collect()
    };
    let leaks = found_in(&raw);
    assert!(leaks.is_empty(), "{} leak(s):\n{leaks:#?}", leaks.len());
    // config/credentials/*.key is left out by the deny-list (`*.key`) before any scan.
    unlisted.retain(|u| !u.contains(".key "));
    assert!(
        unlisted.is_empty(),
        "{} secret file(s) not in the refusal:\n{}",
        unlisted.len(),
        unlisted.join("\n")
    );
    assert!(secrets >= 300);
    // The refusal names no value either.
    let echoed = found_in(stderr.as_bytes());
    assert!(
        echoed.is_empty(),
        "values echoed in the refusal: {echoed:#?}"
    );
    // Omitted files are in the manifest with their rule, never their value.
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        summary["skipped"]["pack.unredactable"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "{summary}"
    );
    assert!(
        contains(&raw, b"\"omitted\": ["),
        "no omissions in the manifest"
    );
}

#[test]
fn init_in_a_repo_excludes_the_home_and_a_committed_home_never_ships() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    make_repo(&repo, &[("src/a.rs", b"fn a() {}\n")]);
    let home = repo.join(".airlock");
    let out = run(cmd(&bin("airlock")).arg("--home").arg(&home).arg("init"));
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("/.airlock/"),
        "{}",
        show(&out)
    );
    let exclude = std::fs::read_to_string(repo.join(".git/info/exclude")).unwrap();
    assert!(exclude.lines().any(|l| l == "/.airlock/"), "{exclude}");
    // git itself now ignores it.
    assert_eq!(
        git(&repo, &["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    // A second home elsewhere in the tree, under another name, and a forced commit of both.
    let other = repo.join("ops/trusted-home");
    let out = run(cmd(&bin("airlock")).arg("--home").arg(&other).arg("init"));
    assert!(out.status.success(), "{}", show(&out));
    git(&repo, &["add", "-A", "-f", "."]);
    git(&repo, &["commit", "-q", "-m", "oops: the homes"]);
    let out_dir = tmp.path().join("out");
    let out = pack(
        &home,
        &repo,
        &out_dir,
        &["--include", "**", "--include", ".airlock/**", "--json"],
    );
    assert!(out.status.success(), "{}", show(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["files"], 1, "{summary}");
    // Both homes hold a trusted key: every file of each is left out (config, key, public
    // key); a `.airlock/` without a key is left out by name (pack::select unit test).
    assert!(
        summary["skipped"]["deny:trusted-home"]
            .as_u64()
            .unwrap_or(0)
            >= 6,
        "{summary}"
    );
    let raw = gunzip(&out_dir.join("bundle.tar.gz"));
    for name in [
        &b"trusted.key"[..],
        b"trusted.pub",
        b"config.toml",
        b".airlock",
    ] {
        assert!(
            !contains(&raw, name),
            "{} in the bundle",
            String::from_utf8_lossy(name)
        );
    }
}

#[test]
fn init_outside_a_repo_touches_no_git_file() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("h");
    let out = run(cmd(&bin("airlock"))
        .arg("--home")
        .arg(&home)
        .arg("init")
        .arg("--json"));
    assert!(out.status.success(), "{}", show(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["git_exclude"].is_null(), "{v}");
}
