//! Tests of the pack cache: reuse gives the same bytes, a change of rules, options or content
//! scans again, a tampered entry is rebuilt, links are not followed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use airlock_core::format::Request;
use airlock_core::keys::SigningKey;
use airlock_core::limits::TarLimits;
use airlock_scan::Scanner;

use super::super::{pack_bundle_with, CacheStats, PackOptions, PackSummary};
use super::*;
use crate::gate::test_git::git;

/// A temporary directory holding a committed test repository of `n` files besides one with a
/// secret that `--redact` replaces: (the directory, the repository, a home, an output
/// directory), the last two not created yet.
pub(super) fn workspace(n: usize) -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let r = t.path().join("repo");
    std::fs::create_dir_all(r.join("src")).unwrap();
    std::fs::write(r.join("README.md"), "# demo\n").unwrap();
    for i in 0..n {
        let body = format!("pub fn f{i}() -> u32 {{ {i} }}\n").repeat(40 + i % 7);
        std::fs::write(r.join(format!("src/m{i:03}.rs")), body).unwrap();
    }
    std::fs::write(
        r.join("src/config.py"),
        "AWS_ACCESS_KEY_ID = \"AKIAQYLPMN5HHHFPZAM2\"\n",
    )
    .unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    commit(&r);
    let (home, out) = (t.path().join("home"), t.path().join("out"));
    std::fs::create_dir(&home).unwrap();
    (t, r, home, out)
}

pub(super) fn commit(r: &Path) {
    git(r, &["add", "-A"]);
    git(r, &["commit", "-q", "-m", "x"]);
}

pub(super) struct Packed {
    pub(super) summary: PackSummary,
    pub(super) bytes: Vec<u8>,
}

pub(super) struct Pack<'a> {
    pub(super) home: Option<&'a Path>,
    pub(super) exclude: &'a [String],
    pub(super) prompt: &'a str,
    pub(super) scanner: Option<Scanner>,
}

impl<'a> Pack<'a> {
    pub(super) fn new(home: Option<&'a Path>) -> Pack<'a> {
        Pack {
            home,
            exclude: &[],
            prompt: "p",
            scanner: None,
        }
    }

    pub(super) fn run(self, repo: &Path, out: &Path) -> Result<Packed> {
        let key = SigningKey::from_seed([7u8; 32]);
        let opts = PackOptions {
            repo,
            rev: "HEAD",
            repo_name: "demo".into(),
            request: Request::new(self.prompt.to_owned(), "m".into()),
            include: &[],
            exclude: self.exclude,
            redact: true,
            max_file_bytes: 1 << 20,
            job: airlock_core::jobid::JobId::new(
                1_800_000_000,
                [1; airlock_core::jobid::RANDOM_BYTES],
            ),
            quiet: true,
            cache_dir: self.home.map(Path::to_owned),
            durable: false,
        };
        let _ = std::fs::remove_dir_all(out);
        let scanner = match self.scanner {
            Some(s) => s,
            None => Scanner::with_default_detectors()?,
        };
        let summary = pack_bundle_with(&opts, scanner, &key, out)?;
        let bytes = std::fs::read(&summary.bundle_path)?;
        Ok(Packed { summary, bytes })
    }
}

pub(super) fn pack(repo: &Path, home: Option<&Path>, out: &Path) -> Packed {
    Pack::new(home).run(repo, out).unwrap()
}

/// Every member of a bundle, read back with the safe reader: path -> bytes.
pub(super) fn read_back(bundle: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut members = BTreeMap::new();
    airlock_core::tar::read_members(
        bundle,
        &TarLimits::bundle(),
        &airlock_core::tar::AllowedNames::Bundle,
        |m, rd| {
            let mut b = Vec::new();
            std::io::Read::read_to_end(rd, &mut b)?;
            members.insert(m.path.clone(), b);
            Ok(())
        },
    )
    .unwrap();
    members
}

/// The entry files under a home, sorted.
fn entries(home: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(home.join(DIR))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn stats(scanned: u64, reused: u64, built: u64, groups_reused: u64) -> CacheStats {
    CacheStats {
        files_scanned: scanned,
        files_reused: reused,
        groups_built: built,
        groups_reused,
    }
}

#[test]
fn a_hit_gives_the_same_bytes_as_packing_from_scratch_without_reading_blobs() {
    let (_t, r, home, out) = workspace(3);
    let fresh = pack(&r, None, &out);
    let miss = pack(&r, Some(&home), &out);
    assert_eq!(miss.bytes, fresh.bytes);
    assert_eq!(entries(&home).len(), 1);
    assert_eq!(fresh.summary.redacted.values().sum::<u64>(), 1);
    assert_eq!(miss.summary.cache.files_reused, 0);

    // Remove a blob from the repository: a pack that read the files again would fail.
    let blob = git(&r, &["rev-parse", "HEAD:src/m001.rs"]);
    std::fs::remove_file(r.join(".git/objects").join(&blob[..2]).join(&blob[2..])).unwrap();
    let hit = Pack {
        prompt: "another prompt",
        ..Pack::new(Some(&home))
    }
    .run(&r, &out)
    .unwrap();
    let hit_again = pack(&r, Some(&home), &out);
    assert_eq!(
        hit_again.bytes, fresh.bytes,
        "a hit must give the uncached bytes"
    );
    assert_eq!(hit.summary.cache.files_scanned, 0);
    assert_eq!(hit.summary.cache.groups_built, 0);
    assert_eq!(hit.summary.files, fresh.summary.files);
    assert_eq!(hit.summary.redacted, fresh.summary.redacted);
    assert_eq!(hit.summary.skipped, fresh.summary.skipped);
    let members = read_back(&hit.bytes);
    assert_eq!(members.len() as u64, fresh.summary.files + 2);
    assert!(String::from_utf8_lossy(&members["request.json"]).contains("another prompt"));
    // Other options are another key: packing them needs the blobs again.
    let other = Pack {
        exclude: &["README.md".into()],
        ..Pack::new(Some(&home))
    }
    .run(&r, &out);
    assert!(other.is_err(), "a pack with other options reused the cache");
}

#[test]
fn a_new_revision_scans_and_compresses_only_what_changed() {
    let (_t, r, home, out) = workspace(120);
    let first = pack(&r, Some(&home), &out);
    let files = first.summary.files;
    std::fs::write(r.join("src/m050.rs"), "pub fn changed() {}\n").unwrap();
    // A secret added in the new revision is found.
    std::fs::write(
        r.join("src/new.py"),
        "TOKEN = \"ghp_Zq4Lm8Tv2Rx6Wc0Yp3Jk7Hb1Nd5Gs9Fa2Qe4\"\n",
    )
    .unwrap();
    commit(&r);
    let second = pack(&r, Some(&home), &out);
    let fresh = pack(&r, None, &out);
    assert_eq!(second.bytes, fresh.bytes);
    let c = second.summary.cache;
    // The changed file and the new one; and the file with a redaction, if it shares a group
    // with them (its redacted bytes are not kept, so it is scanned again).
    assert!((2..=3).contains(&c.files_scanned), "{c:?}");
    assert_eq!(c.files_scanned + c.files_reused, files + 1, "{c:?}");
    assert!(c.groups_built <= 3 && c.groups_reused >= 3, "{c:?}");
    assert_eq!(second.summary.redacted.values().sum::<u64>(), 2);
    assert_eq!(second.summary.redacted.get("github-pat-classic"), Some(&1));
    let members = read_back(&second.bytes);
    let new = String::from_utf8_lossy(&members["files/src/new.py"]).into_owned();
    assert!(!new.contains("ghp_"), "{new}");
}

#[test]
fn paths_new_to_a_revision_are_selected_afresh_and_a_new_home_takes_known_paths_out() {
    let (_t, r, home, out) = workspace(40);
    let first = pack(&r, Some(&home), &out);
    // New paths the deny-list refuses, and a trusted key beside files packed before: that
    // directory becomes a home, and its files (selected by the earlier pack) leave the bundle.
    std::fs::write(r.join(".env.local"), "A=1\n").unwrap();
    std::fs::write(r.join("deploy.pem"), "not a key\n").unwrap();
    std::fs::write(r.join("src/trusted.key"), "x\n").unwrap();
    commit(&r);
    let second = pack(&r, Some(&home), &out);
    let fresh = pack(&r, None, &out);
    assert_eq!(second.bytes, fresh.bytes);
    assert_eq!(second.summary.skipped, fresh.summary.skipped);
    let members = read_back(&second.bytes);
    assert!(
        !members.keys().any(|k| k.starts_with("files/src/")),
        "{:?}",
        members.keys().collect::<Vec<_>>()
    );
    assert!(!members.contains_key("files/deploy.pem"));
    assert!(second.summary.files < first.summary.files);
    assert!(
        second.summary.skipped.contains_key("deny:.env*"),
        "{:?}",
        second.summary.skipped
    );
    assert!(
        second.summary.skipped.contains_key("deny:*.pem"),
        "{:?}",
        second.summary.skipped
    );
}

#[test]
fn groups_of_left_out_files_alone_are_all_reused() {
    // Archives of 64 KiB or more are groups of their own, and left out: such groups share one
    // digest (no kept member), so the writer asks for them out of the entry's order.
    let (_t, r, home, out) = workspace(30);
    let mut zip = b"PK\x03\x04".to_vec();
    zip.resize(70 * 1024, b'z');
    for p in ["a.zip", "src/m010.zip", "src/m020.zip", "zz.zip"] {
        std::fs::write(r.join(p), &zip).unwrap();
    }
    commit(&r);
    let first = pack(&r, Some(&home), &out);
    assert_eq!(first.summary.skipped.get("pack.archive"), Some(&4));
    let again = pack(&r, Some(&home), &out);
    assert_eq!(again.bytes, first.bytes);
    let c = again.summary.cache;
    assert_eq!((c.files_scanned, c.groups_built), (0, 0), "{c:?}");
    std::fs::write(r.join("src/m015.rs"), "pub fn changed() {}\n").unwrap();
    commit(&r);
    let third = pack(&r, Some(&home), &out);
    assert_eq!(third.bytes, pack(&r, None, &out).bytes);
    let c = third.summary.cache;
    assert_eq!((c.files_scanned, c.groups_built), (1, 1), "{c:?}");
}

#[test]
fn a_changed_rule_set_scans_every_file_again() {
    let (_t, r, home, out) = workspace(20);
    let first = pack(&r, Some(&home), &out);
    assert_eq!(first.summary.redacted.values().sum::<u64>(), 1);
    let defaults = Scanner::with_default_detectors().unwrap();
    let rules: Vec<_> = (defaults.rules().iter())
        .filter(|rule| !rule.id.starts_with("aws"))
        .cloned()
        .collect();
    let fewer = Scanner::new(rules, defaults.global_allowlists().to_vec()).unwrap();
    let second = Pack {
        scanner: Some(fewer),
        ..Pack::new(Some(&home))
    }
    .run(&r, &out)
    .unwrap();
    assert_eq!(
        second.summary.cache,
        stats(first.summary.files, 0, second.summary.cache.groups_built, 0)
    );
    // The finding of the removed rule is gone only because the rules changed, not because an
    // earlier result was reused.
    assert!(
        second
            .summary
            .redacted
            .keys()
            .all(|k| !k.starts_with("aws")),
        "{:?}",
        second.summary.redacted
    );
}

#[test]
fn a_tampered_entry_is_rebuilt_never_trusted() {
    let (_t, r, home, out) = workspace(60);
    let fresh = pack(&r, Some(&home), &out);
    let files = fresh.summary.files;
    let entry = entries(&home).pop().unwrap();
    let good = std::fs::read(&entry).unwrap();
    // A flipped byte in a group's compressed bytes: that group is rebuilt, its files scanned.
    let mut flipped = good.clone();
    flipped[MAGIC.len() + 3] ^= 1;
    std::fs::write(&entry, &flipped).unwrap();
    let again = pack(&r, Some(&home), &out);
    assert_eq!(again.bytes, fresh.bytes);
    let c = again.summary.cache;
    assert!(c.files_scanned > 0 && c.files_scanned < files, "{c:?}");
    assert_eq!(c.groups_built, 1, "{c:?}");
    assert_eq!(std::fs::read(&entry).unwrap(), good, "entry not replaced");
    // A changed metadata byte, a truncated file, junk: the HMAC fails; everything is scanned.
    let mut meta = good.clone();
    let at = good.len() - TRAILER as usize - 20;
    meta[at] ^= 1;
    let mut truncated = good.clone();
    truncated.truncate(good.len() - 10);
    for bad in [meta, truncated, b"airlock-pack-cache/v2\n\0\0junk".to_vec()] {
        std::fs::write(&entry, &bad).unwrap();
        let again = pack(&r, Some(&home), &out);
        assert_eq!(again.bytes, fresh.bytes);
        assert_eq!(
            again.summary.cache.files_scanned, files,
            "{:?}",
            again.summary.cache
        );
        assert_eq!(std::fs::read(&entry).unwrap(), good, "entry not replaced");
    }
    // An entry written under another signing key fails its HMAC too.
    let other_key = SigningKey::from_seed([8u8; 32]);
    let scanner = Scanner::with_default_detectors().unwrap();
    let opts = PackOptions {
        repo: &r,
        rev: "HEAD",
        repo_name: "demo".into(),
        request: Request::new("p".into(), "m".into()),
        include: &[],
        exclude: &[],
        redact: true,
        max_file_bytes: 1 << 20,
        job: airlock_core::jobid::JobId::new(1, [1; airlock_core::jobid::RANDOM_BYTES]),
        quiet: true,
        cache_dir: Some(home.clone()),
        durable: false,
    };
    let theirs = PackCache::new(&home, &opts, &scanner, &other_key).unwrap();
    let ours = PackCache::new(&home, &opts, &scanner, &SigningKey::from_seed([7u8; 32])).unwrap();
    assert!(ours.base(&ours.candidates(&fresh.summary.tree)).is_some());
    assert!(theirs
        .base(&theirs.candidates(&fresh.summary.tree))
        .is_none());
}

#[test]
fn a_link_in_the_cache_directory_is_never_followed() {
    let (t, r, home, out) = workspace(3);
    let elsewhere = t.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::create_dir_all(home.join("cache")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, home.join(DIR)).unwrap();
    let fresh = pack(&r, None, &out);
    for _ in 0..2 {
        let p = pack(&r, Some(&home), &out);
        assert_eq!(p.bytes, fresh.bytes);
        assert_eq!(p.summary.cache.files_reused, 0);
    }
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn prune_keeps_the_newest_entries() {
    let (_t, r, home, out) = workspace(1);
    pack(&r, Some(&home), &out);
    let dir = home.join(DIR);
    for i in 0..MAX_ENTRIES + 3 {
        std::fs::write(dir.join(format!("{i:02}.entry")), b"x").unwrap();
    }
    std::fs::write(dir.join("keep.txt"), b"x").unwrap();
    let key = SigningKey::from_seed([7u8; 32]);
    let scanner = Scanner::with_default_detectors().unwrap();
    let opts = PackOptions {
        repo: &r,
        rev: "HEAD",
        repo_name: "demo".into(),
        request: Request::new("p".into(), "m".into()),
        include: &[],
        exclude: &[],
        redact: true,
        max_file_bytes: 1,
        job: airlock_core::jobid::JobId::new(1, [1; airlock_core::jobid::RANDOM_BYTES]),
        quiet: true,
        cache_dir: Some(home.clone()),
        durable: false,
    };
    PackCache::new(&home, &opts, &scanner, &key)
        .unwrap()
        .prune();
    let left = entries(&home);
    assert_eq!(left.len(), MAX_ENTRIES + 1, "{left:?}");
    assert!(left.iter().any(|p| p.ends_with("keep.txt")));
}

#[test]
fn files_left_out_with_and_without_a_fingerprint_are_reused_from_the_entry() {
    let (_t, r, home, out) = workspace(3);
    // An archive (left out by `pack.archive`, no fingerprint) and a binary holding a key
    // (left out for a finding it cannot be redacted from, with the finding's fingerprint).
    let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    gz.extend([3, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    std::fs::write(r.join("data.gz"), gz).unwrap();
    let mut bin = vec![0u8, 1, 2, 0, 0xff, 0xfe, 0];
    bin.extend_from_slice(b"AKIAQYLPMN5HHHFPZAM2\0\0\x01");
    std::fs::write(r.join("blob.bin"), bin).unwrap();
    commit(&r);
    let fresh = pack(&r, None, &out);
    let first = pack(&r, Some(&home), &out);
    let second = pack(&r, Some(&home), &out);
    assert_eq!(
        fresh.summary.skipped.get(super::super::ARCHIVE_RULE),
        Some(&1)
    );
    assert_eq!(
        fresh.summary.skipped.get(super::super::UNREDACTABLE_RULE),
        Some(&1)
    );
    assert_eq!(first.bytes, fresh.bytes);
    assert_eq!(second.bytes, fresh.bytes);
    assert_eq!(
        second.summary.cache.files_scanned, 0,
        "{:?}",
        second.summary.cache
    );
    assert_eq!(second.summary.skipped, fresh.summary.skipped);
}

/// An entry holding `paths` (in this order), each with a blob id of its own.
fn base_of(paths: &[&str]) -> Base {
    let files = (paths.iter().enumerate())
        .map(|(i, p)| FileRecord {
            member: Member {
                path: (*p).to_owned(),
                exec: false,
                oid: format!("{i:040}"),
                size: i as u64,
            },
            result: FileResult::Omitted {
                omissions: Vec::new(),
            },
        })
        .collect();
    Base {
        meta: Meta {
            key: Sha256Digest([0; 32]),
            tree: String::new(),
            files,
            groups: Vec::new(),
            skipped: BTreeMap::new(),
            others: Vec::new(),
        },
        file: tempfile::tempfile().unwrap(),
        next: AtomicUsize::new(0),
        by_group: HashMap::new(),
    }
}

/// A path's record found from the one found before gives what a search of every record gives,
/// whatever order the paths are asked in, for paths the entry lacks, and in an entry whose
/// records are out of order (then a path may be missed, never answered with another's record).
#[test]
fn a_record_is_found_for_its_own_path_only_in_any_order() {
    let sorted = ["a", "a/b", "a0", "b/c/d", "b/c/e", "c", "d.rs", "z/z"];
    let absent = ["", "a/", "a/c", "b", "b/c", "zz"];
    let mut shuffled = sorted;
    shuffled.swap(0, 5);
    shuffled.swap(2, 7);
    for (paths, ordered) in [(&sorted, true), (&shuffled, false)] {
        let base = base_of(paths);
        let mut asks: Vec<&str> = sorted.iter().chain(&absent).copied().collect();
        let mut seed = 7u64;
        for round in 0..200 {
            match round % 3 {
                0 => asks.sort(),
                1 => asks.reverse(),
                _ => {
                    // A seeded shuffle.
                    for i in (1..asks.len()).rev() {
                        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                        asks.swap(i, (seed >> 33) as usize % (i + 1));
                    }
                }
            }
            for p in &asks {
                let want = paths.iter().position(|q| q == p);
                let oid = want.map(|i| format!("{i:040}")).unwrap_or_default();
                let m = Member {
                    path: (*p).to_owned(),
                    exec: false,
                    oid: oid.clone(),
                    size: 0,
                };
                let found = base.size(p.as_bytes(), &oid);
                assert!(found.is_none() || found == want.map(|i| i as u64), "{p}");
                if ordered {
                    assert_eq!(base.file(&m).is_some(), want.is_some(), "{p}");
                    assert_eq!(found, want.map(|i| i as u64), "{p}");
                    assert_eq!(base.selected(p), want.is_some(), "{p}");
                }
                let other = Member {
                    oid: "f".repeat(40),
                    ..m
                };
                assert!(base.file(&other).is_none(), "{p}");
            }
        }
    }
}
