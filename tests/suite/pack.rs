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
