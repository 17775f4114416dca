use std::path::Path;

use airlock_tests::*;

fn pack(home: &Path, repo: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let prompt = repo.parent().unwrap().join("prompt.txt");
    if !prompt.exists() {
        std::fs::write(&prompt, "Add a docstring to every public function.\n").unwrap();
    }
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

fn sample_repo(root: &Path) -> std::path::PathBuf {
    let repo = root.join("repo");
    make_repo(
        &repo,
        &[
            (
                "src/lib.rs",
                b"pub fn add(a: i32, b: i32) -> i32 { a + b }\n",
            ),
            ("README.md", b"# sample\n"),
            (".env", b"DATABASE_URL=postgres://u:hunter2@db/prod\n"),
            ("certs/server.pem", b"not really a pem\n"),
            ("scripts/run.sh", b"#!/bin/sh\necho hi\n"),
        ],
    );
    repo
}

#[test]
fn pack_writes_a_bundle_and_envelope_and_never_packs_dotenv() {
    let tmp = tempfile::tempdir().unwrap();
    let home = init_home(tmp.path());
    let repo = sample_repo(tmp.path());
    let out_dir = tmp.path().join("out");
    let out = pack(
        &home,
        &repo,
        &out_dir,
        &["--include", ".env", "--include", "src/**", "--json"],
    );
    assert!(out.status.success(), "{}", show(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["files"], 1, "{summary}");
    assert_eq!(summary["skipped"]["deny:.env*"], 1, "{summary}");
    let raw = gunzip(&out_dir.join("bundle.tar.gz"));
    assert!(
        !contains(&raw, b"hunter2"),
        ".env content leaked into the bundle"
    );
    assert!(!contains(&raw, b"files/.env"), ".env member in the bundle");
    assert!(contains(&raw, b"files/src/lib.rs"));
    // Only the two outputs, no temp files left over.
    let names: Vec<_> = snapshot(&out_dir).into_iter().collect();
    assert_eq!(
        names,
        vec![
            Path::new("bundle.dsse.json").to_owned(),
            Path::new("bundle.tar.gz").to_owned()
        ]
    );
}

#[test]
fn same_revision_packs_to_the_same_digest_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let home = init_home(tmp.path());
    let repo = sample_repo(tmp.path());
    let a = pack(&home, &repo, &tmp.path().join("a"), &["--json"]);
    let b = pack(&home, &repo, &tmp.path().join("b"), &["--json"]);
    assert!(
        a.status.success() && b.status.success(),
        "{}\n{}",
        show(&a),
        show(&b)
    );
    let a: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    let b: serde_json::Value = serde_json::from_slice(&b.stdout).unwrap();
    assert_ne!(a["job"], b["job"], "each pack is for a fresh job");
    assert_eq!(a["bundle_sha256"], b["bundle_sha256"]);
    assert_eq!(
        std::fs::read(tmp.path().join("a/bundle.tar.gz")).unwrap(),
        std::fs::read(tmp.path().join("b/bundle.tar.gz")).unwrap()
    );
}

#[test]
fn planted_private_key_refuses_the_pack_naming_path_line_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let home = init_home(tmp.path());
    let repo = tmp.path().join("repo");
    let key = planted::rsa_private_key();
    let config = format!("# deploy config\nname: x\n{key}");
    make_repo(
        &repo,
        &[
            ("src/a.rs", b"fn main() {}\n"),
            ("deploy/config.yaml", config.as_bytes()),
        ],
    );
    let out_dir = tmp.path().join("out");
    let out = pack(&home, &repo, &out_dir, &[]);
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l.trim().starts_with("deploy/config.yaml:3: ") && l.contains("private-key")),
        "{stderr}"
    );
    assert!(
        !stderr.contains(planted::RSA_BODY_LINE),
        "secret echoed: {stderr}"
    );
    assert!(
        snapshot(&out_dir).is_empty(),
        "partial output left: {:?}",
        snapshot(&out_dir)
    );
}

/// A secret in a path name is in no file's content, but the manifest lists the path: the
/// rescan of the manifest as written refuses the pack, with or without `--redact` (a path
/// cannot be redacted), naming the rule and never the value, and leaves nothing behind.
#[test]
fn a_secret_in_a_path_name_refuses_the_pack_at_the_manifest_rescan() {
    let tmp = tempfile::tempdir().unwrap();
    let home = init_home(tmp.path());
    let repo = tmp.path().join("repo");
    let token = planted::github_token();
    let path = format!("notes/{token}.txt");
    make_repo(
        &repo,
        &[
            ("src/a.rs", b"fn main() {}\n"),
            (path.as_str(), b"nothing here\n"),
        ],
    );
    for extra in [&[][..], &["--redact"][..]] {
        let out_dir = tmp.path().join("out");
        let out = pack(&home, &repo, &out_dir, extra);
        assert_eq!(out.status.code(), Some(4), "{extra:?}: {}", show(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("pack.rescan") && stderr.contains("manifest.json"),
            "{extra:?}: {stderr}"
        );
        assert!(!stderr.contains(&token), "secret echoed: {stderr}");
        assert!(
            snapshot(&out_dir).is_empty(),
            "partial output left: {:?}",
            snapshot(&out_dir)
        );
    }
}

#[test]
fn redact_removes_every_planted_value_from_the_bundle_and_records_it() {
    let tmp = tempfile::tempdir().unwrap();
    let home = init_home(tmp.path());
    let repo = tmp.path().join("repo");
    let aws = planted::aws_key_id();
    let gh = planted::github_token();
    let key = planted::rsa_private_key();
    let settings = format!("import os\nAWS_ACCESS_KEY_ID = \"{aws}\"\nGITHUB_TOKEN = \"{gh}\"\n");
    make_repo(
        &repo,
        &[
            ("app/settings.py", settings.as_bytes()),
            ("deploy/key.txt", key.as_bytes()),
            ("src/ok.rs", b"fn ok() {}\n"),
        ],
    );
    let out_dir = tmp.path().join("out");
    let out = pack(&home, &repo, &out_dir, &["--redact", "--json"]);
    assert!(out.status.success(), "{}", show(&out));
    let raw = gunzip(&out_dir.join("bundle.tar.gz"));
    for secret in [aws.as_str(), gh.as_str(), planted::RSA_BODY_LINE] {
        assert!(
            !contains(&raw, secret.as_bytes()),
            "planted value found in bundle"
        );
    }
    assert!(contains(&raw, b"[REDACTED:"), "no redaction marker");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let redacted: u64 = summary["redacted"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert!(redacted >= 3, "{summary}");
    // The manifest records path, line and rule, never the value.
    let manifest_at = raw
        .windows(14)
        .position(|w| w == b"\"redactions\": ")
        .expect("manifest");
    let tail = String::from_utf8_lossy(&raw[manifest_at..]);
    assert!(tail.contains("\"path\": \"app/settings.py\""), "{tail}");
    assert!(tail.contains("\"line\": 2"), "{tail}");
    // Line structure kept: settings.py still has 3 lines.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains(&aws) && !stdout.contains(&gh));
}

#[test]
fn bad_inputs_fail_with_one_clear_line_and_leave_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let home = init_home(tmp.path());
    let repo = sample_repo(tmp.path());
    let not_repo = tmp.path().join("plain");
    std::fs::create_dir_all(&not_repo).unwrap();
    let out_dir = tmp.path().join("out");

    let cases: Vec<(&str, std::process::Output)> = vec![
        (
            "not a git repository",
            pack(&home, &not_repo, &out_dir, &[]),
        ),
        (
            "unknown revision",
            pack(&home, &repo, &out_dir, &["--rev", "no-such-branch"]),
        ),
        (
            "unknown revision",
            pack(&home, &repo, &out_dir, &["--rev=--output=/tmp/x"]),
        ),
        (
            "cannot read prompt",
            run(cmd(&bin("airlock"))
                .arg("--home")
                .arg(&home)
                .args(["pack", "--prompt-file"])
                .arg(tmp.path().join("missing.txt"))
                .arg("--repo")
                .arg(&repo)
                .arg("--out")
                .arg(&out_dir)),
        ),
    ];
    for (want, out) in cases {
        assert_eq!(out.status.code(), Some(1), "{want}: {}", show(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(want), "expected {want:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "not one line: {stderr}");
    }
    assert!(!out_dir.exists() || snapshot(&out_dir).is_empty());

    // A world-readable trusted key is refused.
    use std::os::unix::fs::PermissionsExt;
    let key = home.join("trusted.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = pack(&home, &repo, &out_dir, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("trusted.key") && stderr.contains("600"),
        "{stderr}"
    );
    assert!(!out_dir.exists() || snapshot(&out_dir).is_empty());
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    // An unreadable one too.
    std::fs::remove_file(&key).unwrap();
    let out = pack(&home, &repo, &out_dir, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("trusted.key"));
}

#[test]
fn init_refuses_a_malformed_store_url_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    for bad in [
        "not a url",
        "ftp://x/y",
        "s3://",
        "file://host/x",
        "/plain/path",
    ] {
        let home = tmp.path().join("h");
        let out = run(cmd(&bin("airlock"))
            .arg("--home")
            .arg(&home)
            .args(["init", "--store", bad]));
        assert_eq!(out.status.code(), Some(1), "{bad}: {}", show(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("store URL"), "{bad}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(!home.exists(), "{bad}: home created");
        assert!(
            snapshot(tmp.path()).is_empty(),
            "{bad}: left {:?}",
            snapshot(tmp.path())
        );
    }
    // And a second init never overwrites the trusted key.
    let home = init_home(tmp.path());
    let before = std::fs::read(home.join("trusted.key")).unwrap();
    let out = run(cmd(&bin("airlock")).arg("--home").arg(&home).arg("init"));
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(std::fs::read(home.join("trusted.key")).unwrap(), before);
}

/// The envelope `airlock pack` writes verifies with an independent DSSE implementation
/// (Python securesystemslib), and tampered copies do not. Skips with a message outside CI
/// when securesystemslib is missing; fails under CI.
#[test]
fn bundle_envelope_verifies_with_securesystemslib() {
    let tmp = tempfile::tempdir().unwrap();
    let home = init_home(tmp.path());
    let repo = sample_repo(tmp.path());
    let out_dir = tmp.path().join("out");
    let out = pack(&home, &repo, &out_dir, &[]);
    assert!(out.status.success(), "{}", show(&out));
    let pem = std::fs::read_to_string(home.join("trusted.pub")).unwrap();
    let pub_hex = airlock_core::keys::PublicKey::from_spki_pem(&pem)
        .unwrap()
        .raw_hex();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/tests/dsse_verify.py");
    let res = std::process::Command::new("python3")
        .arg(&script)
        .arg(out_dir.join("bundle.dsse.json"))
        .arg(&pub_hex)
        .output()
        .expect("python3");
    if res.status.code() == Some(77) {
        airlock_tests::skip(&format!(
            "securesystemslib not installed (pip install securesystemslib): {}",
            show(&res)
        ));
        return;
    }
    assert!(
        res.status.success(),
        "securesystemslib refused: {}",
        show(&res)
    );
}

/// A `refs/replace/` entry makes plain git read another commit in place of the one named:
/// pack reads the committed tree of the revision anyway (every git process runs with
/// `--no-replace-objects`), so what is packed is what was committed.
#[test]
fn pack_reads_the_committed_tree_not_a_replacement() {
    let tmp = tempfile::tempdir().unwrap();
    let home = init_home(tmp.path());
    let repo = tmp.path().join("repo");
    let real = make_repo(&repo, &[("src/lib.rs", b"pub fn real() {}\n")]);
    write_files(&repo, &[("src/lib.rs", b"pub fn planted() {}\n")]);
    git(&repo, &["commit", "-q", "-a", "-m", "planted"]);
    let planted = git(&repo, &["rev-parse", "HEAD"]);
    git(&repo, &["reset", "-q", "--hard", &real]);
    git(&repo, &["replace", &real, &planted]);
    // Plain git now reads the planted file at the real commit.
    assert_eq!(
        git(&repo, &["show", &format!("{real}:src/lib.rs")]),
        "pub fn planted() {}"
    );
    let out_dir = tmp.path().join("out");
    let out = pack(&home, &repo, &out_dir, &["--rev", &real, "--json"]);
    assert!(out.status.success(), "{}", show(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["revision"], real.as_str(), "{summary}");
    let tree = git(
        &repo,
        &[
            "--no-replace-objects",
            "rev-parse",
            &format!("{real}^{{tree}}"),
        ],
    );
    assert_eq!(summary["tree"], tree.as_str(), "{summary}");
    let raw = gunzip(&out_dir.join("bundle.tar.gz"));
    assert!(
        contains(&raw, b"pub fn real() {}"),
        "the committed file is not packed"
    );
    assert!(!contains(&raw, b"planted"), "the replacement was packed");
}

/// `airlock pack --redact --json` with the pack cache on (or off), its summary and bundle.
fn pack_cached(
    home: &Path,
    repo: &Path,
    out: &Path,
    extra: &[&str],
    cache: bool,
) -> (serde_json::Value, Vec<u8>) {
    let prompt = repo.parent().unwrap().join("prompt.txt");
    if !prompt.exists() {
        std::fs::write(&prompt, "Add a docstring to every public function.\n").unwrap();
    }
    let _ = std::fs::remove_dir_all(out);
    let mut c = cmd(&bin("airlock"));
    c.arg("--home")
        .arg(home)
        .arg("pack")
        .arg("--repo")
        .arg(repo)
        .arg("--prompt-file")
        .arg(&prompt)
        .arg("--out")
        .arg(out)
        .args(["--redact", "--json"])
        .args(extra);
    if !cache {
        c.env("AIRLOCK_PACK_CACHE", "off");
    }
    let o = run(&mut c);
    assert!(o.status.success(), "{}", show(&o));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    (summary, std::fs::read(out.join("bundle.tar.gz")).unwrap())
}

/// A repository of 80 source files, a README and `settings.py`, whose unquoted value is allowed
/// in source code only (the scanner's path-scoped allowlist for code files).
fn large_repo(root: &Path) -> std::path::PathBuf {
    let repo = root.join("repo");
    let mut files: Vec<(String, Vec<u8>)> = (0..80)
        .map(|i| {
            let body = format!("pub fn f{i}(x: u32) -> u32 {{ x + {i} }}\n").repeat(30 + i % 9);
            (format!("src/m{i:02}.rs"), body.into_bytes())
        })
        .collect();
    files.push(("README.md".into(), b"# large\n".to_vec()));
    files.push((
        "settings.py".into(),
        b"db_password = hunter2_prod_value_9x\n".to_vec(),
    ));
    let refs: Vec<(&str, &[u8])> = files.iter().map(|(p, c)| (p.as_str(), &c[..])).collect();
    make_repo(&repo, &refs);
    repo
}

fn cache_count(summary: &serde_json::Value, what: &str) -> u64 {
    summary["cache"][what]
        .as_u64()
        .unwrap_or_else(|| panic!("{summary}"))
}

fn commit_all(repo: &Path) {
    git(repo, &["add", "-A", "-f", "."]);
    git(repo, &["commit", "-q", "-m", "next"]);
}

#[test]
fn a_new_revision_scans_what_changed_and_still_finds_a_new_secret() {
    let tmp = tempfile::tempdir().unwrap();
    let home = init_home(tmp.path());
    let repo = large_repo(tmp.path());
    let out = tmp.path().join("out");
    let (first, _) = pack_cached(&home, &repo, &out, &[], true);
    assert_eq!(cache_count(&first, "files_reused"), 0, "{first}");
    let members = first["files"].as_u64().unwrap();
    let token = planted::github_token();
    write_files(
        &repo,
        &[
            ("src/m40.rs", b"pub fn changed() {}\n"),
            ("src/tokens.txt", format!("token: {token}\n").as_bytes()),
        ],
    );
    commit_all(&repo);
    let (second, bytes) = pack_cached(&home, &repo, &out, &[], true);
    let scanned = cache_count(&second, "files_scanned");
    assert_eq!(scanned, 2, "{second}");
    assert_eq!(
        scanned + cache_count(&second, "files_reused"),
        members + 1,
        "{second}"
    );
    assert!(cache_count(&second, "groups_reused") > 0, "{second}");
    assert_eq!(second["redacted"]["github-pat-classic"], 1, "{second}");
    let raw = gunzip(&out.join("bundle.tar.gz"));
    assert!(!contains(&raw, token.as_bytes()), "the new secret shipped");
    let (off, off_bytes) = pack_cached(&home, &repo, &tmp.path().join("off"), &[], false);
    assert_eq!(bytes, off_bytes, "the cache changed the bundle");
    assert_eq!(cache_count(&off, "files_reused"), 0, "{off}");
}

#[test]
fn a_changed_option_scans_every_file_again() {
    let tmp = tempfile::tempdir().unwrap();
    let home = init_home(tmp.path());
    let repo = large_repo(tmp.path());
    let out = tmp.path().join("out");
    let (first, _) = pack_cached(&home, &repo, &out, &[], true);
    let members = first["files"].as_u64().unwrap();
    let (other, _) = pack_cached(&home, &repo, &out, &["--exclude", "README.md"], true);
    assert_eq!(cache_count(&other, "files_reused"), 0, "{other}");
    assert_eq!(cache_count(&other, "files_scanned"), members - 1, "{other}");
    let (again, _) = pack_cached(&home, &repo, &out, &[], true);
    assert_eq!(cache_count(&again, "files_scanned"), 0, "{again}");
    assert_eq!(cache_count(&again, "files_reused"), members, "{again}");
}

#[test]
fn a_file_moved_out_of_an_allowlisted_path_is_scanned_again() {
    let tmp = tempfile::tempdir().unwrap();
    let home = init_home(tmp.path());
    let repo = large_repo(tmp.path());
    let out = tmp.path().join("out");
    let (first, _) = pack_cached(&home, &repo, &out, &[], true);
    assert_eq!(first["redacted"], serde_json::json!({}), "{first}");
    // The same content under a path the code-file allowlist does not cover.
    git(&repo, &["mv", "settings.py", "settings.cfg"]);
    commit_all(&repo);
    let (moved, _) = pack_cached(&home, &repo, &out, &[], true);
    assert!(cache_count(&moved, "files_scanned") >= 1, "{moved}");
    assert_eq!(
        moved["redacted"]["generic-password-assignment"], 1,
        "{moved}"
    );
    let raw = gunzip(&out.join("bundle.tar.gz"));
    assert!(
        !contains(&raw, b"hunter2_prod_value_9x"),
        "the value shipped"
    );
}

#[test]
fn a_tampered_cache_entry_is_rebuilt_and_its_files_scanned_again() {
    let tmp = tempfile::tempdir().unwrap();
    let home = init_home(tmp.path());
    let repo = large_repo(tmp.path());
    let out = tmp.path().join("out");
    let (first, good_bundle) = pack_cached(&home, &repo, &out, &[], true);
    let members = first["files"].as_u64().unwrap();
    let dir = home.join("cache/pack");
    let entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "entry"))
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let good = std::fs::read(&entries[0]).unwrap();
    let mut bad = good.clone();
    bad[24 + 5] ^= 0x20; // in the first group's compressed bytes
    std::fs::write(&entries[0], &bad).unwrap();
    let (again, bytes) = pack_cached(&home, &repo, &out, &[], true);
    let scanned = cache_count(&again, "files_scanned");
    assert!(scanned > 0 && scanned < members, "{again}");
    assert_eq!(cache_count(&again, "groups_built"), 1, "{again}");
    assert_eq!(bytes, good_bundle);
    assert_eq!(
        std::fs::read(&entries[0]).unwrap(),
        good,
        "entry not rebuilt"
    );
}
