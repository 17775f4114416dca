//! Helpers for the end-to-end tests: find the real built binaries, make throwaway git
//! repositories with real `git`, run commands with a cleared environment, and snapshot
//! directory trees to prove nothing was written where it should not be.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Path of a binary built by this workspace (`airlock`, `airlock-worker`).
/// `CARGO_BIN_EXE_*` only works inside the package that owns the binary, so we look next to
/// the test executable (`target/<profile>/deps/..`).
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let p = dir.join(name);
    assert!(
        p.exists(),
        "{} not built: run `cargo test --workspace` (or `cargo build --workspace`) first",
        p.display()
    );
    p
}

/// A command with a cleared environment (PATH, HOME and what the test adds).
pub fn cmd(program: &Path) -> Command {
    let mut c = Command::new(program);
    c.env_clear();
    c.env("PATH", std::env::var_os("PATH").unwrap_or_default());
    c.env("HOME", std::env::temp_dir());
    c.env("NO_COLOR", "1");
    c
}

/// Runs and returns output; prints everything useful if `expect_ok` does not hold.
pub fn run(c: &mut Command) -> Output {
    c.output().expect("spawn")
}

pub use airlock_testkit::skip::{in_ci, skip};

/// Whether a worker run failed only because this machine cannot sandbox the generator (the
/// worker's rule id `sandbox.unavailable` on stderr, never the wording around it); the test
/// should then return. It skips through [`skip`]: under CI that is a failure.
pub fn needs_sandbox_skip(out: &Output) -> bool {
    use airlock_testkit::skip::{names_rule, SANDBOX_UNAVAILABLE};
    if out.status.success() || !names_rule(&out.stderr, SANDBOX_UNAVAILABLE) {
        return false;
    }
    skip(&format!(
        "the worker cannot sandbox here: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    ));
    true
}

/// The reason codes of a gate's JSON report, in report order.
pub fn reason_codes(report: &serde_json::Value) -> Vec<String> {
    report["reasons"]
        .as_array()
        .expect("the report has reasons")
        .iter()
        .map(|r| r["code"].as_str().expect("a reason has a code").to_owned())
        .collect()
}

/// Formats a command's output for assertion messages.
pub fn show(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `git` in `dir` with a fixed identity and no global config.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Creates a git repository at `dir` with `files` (path, content) committed on `main`.
pub fn make_repo(dir: &Path, files: &[(&str, &[u8])]) -> String {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    write_files(dir, files);
    git(dir, &["add", "-A", "-f", "."]);
    git(dir, &["commit", "-q", "-m", "initial"]);
    git(dir, &["rev-parse", "HEAD"])
}

/// Writes files (creating parents).
pub fn write_files(dir: &Path, files: &[(&str, &[u8])]) {
    for (p, c) in files {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, c).unwrap();
    }
}

/// Every path below `dir` (relative), files and directories, without following links.
pub fn snapshot(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            out.insert(p.strip_prefix(dir).unwrap().to_owned());
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                stack.push(p);
            }
        }
    }
    out
}

/// Decompresses a tar.gz and returns all its bytes (headers and contents).
pub fn gunzip(path: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// Whether `hay` contains `needle`.
pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A trusted home (`airlock init`) inside `root`, returning its path.
pub fn init_home(root: &Path) -> PathBuf {
    let home = root.join("home");
    let out = run(cmd(&bin("airlock")).arg("--home").arg(&home).arg("init"));
    assert!(out.status.success(), "init failed: {}", show(&out));
    home
}

/// Fake but scanner-shaped secrets, assembled at run time so this source file does not itself
/// look like it holds credentials.
pub mod planted {
    /// An AWS access key id shape (not the documented EXAMPLE key).
    pub fn aws_key_id() -> String {
        format!("AKIA{}", "Q7RZ4MX2NV5WLT3K")
    }
    /// A GitHub classic personal access token shape.
    pub fn github_token() -> String {
        format!("ghp_{}", "x7Kp2Lq9Wm4Rt6Yz8Nb3Vc5Hd1Jf0Gs2Ae4U")
    }
    /// A PEM RSA private key block shape (body is random base64, not a real key).
    pub fn rsa_private_key() -> String {
        let body = [
            "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
            "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK",
            "LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo",
        ];
        format!(
            "-----BEGIN RSA {}-----\n{}\n-----END RSA {}-----\n",
            "PRIVATE KEY",
            body.join("\n"),
            "PRIVATE KEY"
        )
    }
    /// The first body line of [`rsa_private_key`], to search for.
    pub const RSA_BODY_LINE: &str =
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun";
}

/// An in-process S3 server (s3s + s3s-fs, SigV4 enforced) with fault injection.
pub mod s3;

/// Azurite (the Azure Storage emulator from npm) as a child process, for the `az://` tests.
pub mod azurite;
