//! Table test over the hostile (and good) tarballs in `fixtures/tar/`.
//!
//! Every case of `fixtures/tar/expect.toml` (written by `gen_tar_fixtures.py`) is unpacked
//! with `unpack_into` into a fresh `<root>/work/dest`, next to a bait directory
//! `<root>/outside` that symlink fixtures point at. A rejected case must fail with exactly the
//! expected rule id, leave no `dest`, and change nothing else under `<root>` (tree snapshot
//! before/after) nor create the absolute paths it names. An accepted case must produce only
//! regular files and directories with our modes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use airlock_core::limits::TarLimits;
use airlock_core::tar::{unpack_into, AllowedNames};
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
    allowed: String,
    limits: String,
    expect: String,
    files: Option<u64>,
    #[serde(default)]
    outside: Vec<String>,
    max_entries: Option<u64>,
    max_entry_bytes: Option<u64>,
    max_total_bytes: Option<u64>,
    max_compression_ratio: Option<u64>,
}

impl Case {
    fn limits(&self) -> TarLimits {
        let mut l = match self.limits.as_str() {
            "bundle" => TarLimits::bundle(),
            "artifact" => TarLimits::artifact(),
            other => panic!("{}: unknown limits {other:?}", self.fixture),
        };
        if let Some(v) = self.max_entries {
            l.max_entries = v;
        }
        if let Some(v) = self.max_entry_bytes {
            l.max_entry_bytes = v;
        }
        if let Some(v) = self.max_total_bytes {
            l.max_total_bytes = v;
        }
        if let Some(v) = self.max_compression_ratio {
            l.max_compression_ratio = v;
        }
        l
    }

    fn allowed(&self) -> AllowedNames {
        match self.allowed.as_str() {
            "bundle" => AllowedNames::Bundle,
            "artifact" => AllowedNames::artifact(),
            other => panic!("{}: unknown allowed {other:?}", self.fixture),
        }
    }
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tar")
}

fn load() -> Expect {
    let text = fs::read_to_string(fixtures_dir().join("expect.toml")).unwrap();
    toml::from_str(&text).unwrap()
}

/// Everything under `root` (not following links): path -> (kind, size, mode).
fn snapshot(root: &Path) -> BTreeMap<PathBuf, (String, u64, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let md = fs::symlink_metadata(&p).unwrap();
            let ft = md.file_type();
            let kind = if ft.is_symlink() {
                format!("link -> {}", fs::read_link(&p).unwrap().display())
            } else if ft.is_dir() {
                stack.push(p.clone());
                "dir".to_owned()
            } else if ft.is_file() {
                "file".to_owned()
            } else {
                "other".to_owned()
            };
            out.insert(
                p.strip_prefix(root).unwrap().to_path_buf(),
                // A directory's own size varies with its entries on some file systems.
                (
                    kind.clone(),
                    if kind == "dir" { 0 } else { md.len() },
                    md.permissions().mode() & 0o7777,
                ),
            );
        }
    }
    out
}

/// Checks an unpacked tree: only files 0644/0755 and directories 0755, dest 0700.
fn check_unpacked(dest: &Path) -> u64 {
    assert_eq!(
        fs::symlink_metadata(dest).unwrap().permissions().mode() & 0o7777,
        0o700
    );
    let mut files = 0;
    for (path, (kind, _, mode)) in snapshot(dest) {
        match kind.as_str() {
            "file" => {
                assert!(mode == 0o644 || mode == 0o755, "{path:?}: mode {mode:o}");
                files += 1;
            }
            "dir" => assert_eq!(mode, 0o755, "{path:?}"),
            other => panic!("{path:?}: unexpected {other}"),
        }
    }
    files
}

fn run_case(c: &Case) -> Result<(), String> {
    let root = tempfile::tempdir().unwrap();
    fs::create_dir(root.path().join("work")).unwrap();
    fs::create_dir(root.path().join("outside")).unwrap();
    let before = snapshot(root.path());
    let dest = root.path().join("work/dest");
    let file = fs::File::open(fixtures_dir().join(&c.fixture)).unwrap();
    let result = unpack_into(file, &dest, &c.limits(), &c.allowed())
        .map_err(|e| e.with_label(c.fixture.clone()));
    for p in &c.outside {
        if Path::new(p).symlink_metadata().is_ok() {
            return Err(format!("{p} exists after unpacking"));
        }
    }
    // Whatever the outcome, nothing outside dest may change (the bait dir stays empty).
    let mut after = snapshot(root.path());
    after.retain(|p, _| !p.starts_with("work/dest"));
    if after != before {
        return Err(format!(
            "tree changed outside dest: before {before:?}, after {after:?}"
        ));
    }
    match (c.expect.as_str(), result) {
        ("ok", Ok(summary)) => {
            let files = check_unpacked(&dest);
            assert_eq!(files, summary.files);
            if let Some(want) = c.files {
                if files != want {
                    return Err(format!("unpacked {files} files, expected {want}"));
                }
            }
            Ok(())
        }
        ("ok", Err(e)) => Err(format!("expected ok, got: {e}")),
        (rule, Ok(_)) => Err(format!("ACCEPTED, expected {rule}")),
        (rule, Err(e)) => {
            let msg = e.to_string();
            eprintln!("{msg}");
            if e.rule().id() != rule {
                return Err(format!("expected {rule}, got {}: {msg}", e.rule()));
            }
            if !msg.starts_with(&format!("{}: ", c.fixture)) || !msg.contains(&format!("({rule})"))
            {
                return Err(format!("message does not name the archive and rule: {msg}"));
            }
            if dest.symlink_metadata().is_ok() {
                return Err("dest exists after a rejection".to_owned());
            }
            Ok(())
        }
    }
}

#[test]
fn every_fixture_is_listed_and_named_after_a_rule_it_triggers() {
    let expect = load();
    let mut on_disk = BTreeSet::new();
    for e in fs::read_dir(fixtures_dir()).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".tar.gz") {
            on_disk.insert(name);
        }
    }
    let listed: BTreeSet<_> = expect.case.iter().map(|c| c.fixture.clone()).collect();
    assert_eq!(on_disk, listed, "fixtures on disk vs expect.toml");
    for name in &on_disk {
        let prefix = name.split("--").next().unwrap();
        assert!(
            expect
                .case
                .iter()
                .any(|c| &c.fixture == name && c.expect == prefix),
            "{name}: no case expects {prefix}"
        );
        let size = fs::metadata(fixtures_dir().join(name)).unwrap().len();
        assert!(
            size < 1100 * 1024,
            "{name}: {size} bytes, keep fixtures small"
        );
    }
    assert!(expect.case.iter().filter(|c| c.expect != "ok").count() >= 40);
}

#[test]
fn hostile_fixtures_are_rejected_with_their_rule_and_leave_nothing_behind() {
    let expect = load();
    let mut failures = Vec::new();
    for c in &expect.case {
        if let Err(why) = run_case(c) {
            failures.push(format!(
                "{} ({} limits{}): {why}",
                c.fixture,
                c.limits,
                if c.max_entries.is_some() || c.max_entry_bytes.is_some() {
                    ", overridden"
                } else {
                    ""
                }
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
