//! The trusted side of dispatch, end to end with the real binaries: `submit` refusing an
//! egress destination the proxy never reaches, the scoped model key (minted by a stand-in
//! command, handed to the generator, found nowhere else), the gate's `no-change`, the failed
//! run's log tail and the egress log in `fetch` and the gate's reports, and preemption:
//! `status`, `fetch --checkpoint` and `resubmit` after `kill -INT` of a worker.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use airlock_tests::*;
use serde_json::Value;

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A trusted home, a small repository, a 0755 directory of generators (the generator runs as
/// `nobody` when the tests run as root), and every command's output kept for the key grep.
struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    repo: PathBuf,
    gens: PathBuf,
    outputs: std::cell::RefCell<Vec<u8>>,
}

struct Job {
    id: String,
    token_file: PathBuf,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_owned();
        chmod(&root, 0o755);
        let home = init_home(&root);
        let repo = root.join("repo");
        make_repo(
            &repo,
            &[
                ("src/calc.py", &b"def add(a, b):\n    return a + b\n"[..]),
                ("README.md", &b"# calc\n"[..]),
            ],
        );
        let gens = root.join("gens");
        std::fs::create_dir(&gens).unwrap();
        chmod(&gens, 0o755);
        Env {
            _tmp: tmp,
            root,
            home,
            repo,
            gens,
            outputs: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// Writes an executable generator script and returns its path.
    fn gen(&self, name: &str, body: &str) -> String {
        let p = self.gens.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        chmod(&p, 0o755);
        p.display().to_string()
    }

    /// Runs a command, keeping its stdout and stderr for [`Env::outputs`].
    fn run(&self, c: &mut Command) -> Output {
        let out = run(c);
        let mut o = self.outputs.borrow_mut();
        o.extend_from_slice(&out.stdout);
        o.extend_from_slice(&out.stderr);
        out
    }

    fn airlock(&self) -> Command {
        let mut c = cmd(&bin("airlock"));
        c.arg("--home").arg(&self.home);
        c
    }

    fn submit_cmd(&self, token: &Path, extra: &[&str]) -> Command {
        let prompt = self.root.join("prompt.txt");
        std::fs::write(&prompt, "Do what the script does.\n").unwrap();
        let mut c = self.airlock();
        c.arg("submit")
            .arg("--repo")
            .arg(&self.repo)
            .arg("--prompt-file")
            .arg(&prompt)
            .arg("--token-out")
            .arg(token)
            .arg("--json")
            .args(extra);
        c
    }

    fn next_token(&self) -> PathBuf {
        let n = std::fs::read_dir(&self.root).unwrap().count();
        self.root.join(format!("{n}.token"))
    }

    fn submit(&self, extra: &[&str]) -> Job {
        let token = self.next_token();
        let out = self.run(&mut self.submit_cmd(&token, extra));
        assert!(out.status.success(), "submit: {}", show(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        Job {
            id: v["job"].as_str().unwrap().to_owned(),
            token_file: token,
        }
    }

    fn worker(&self, job: &Job, generator: &[&str]) -> Command {
        let mut c = cmd(&bin("airlock-worker"));
        c.arg("run")
            .arg("--token-file")
            .arg(&job.token_file)
            .arg("--trusted-pub")
            .arg(self.home.join("trusted.pub"))
            .arg("--work-root")
            .arg(self.root.join("wr"))
            .arg("--")
            .args(generator);
        c
    }

    fn gate(&self, job: &str, extra: &[&str]) -> Output {
        self.run(
            self.airlock()
                .args(["gate", job, "--repo"])
                .arg(&self.repo)
                .args(extra),
        )
    }

    fn drop_dir(&self, job: &str) -> PathBuf {
        self.home.join("store/drop").join(job)
    }
}

/// Polls `cond` every 50 ms until it holds; panics with `what` after `limit`.
fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Standard base64 (DSSE payloads), enough for the grep below.
fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    };
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u32, 0);
    for v in s.bytes().filter_map(val) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// Every byte a reader of `dir` could see: files as stored, gzip members unpacked, DSSE
/// payloads decoded.
fn readable_bytes(dir: &Path, out: &mut Vec<u8>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            readable_bytes(&p, out);
            continue;
        }
        let bytes = std::fs::read(&p).unwrap();
        if bytes.starts_with(&[0x1f, 0x8b]) {
            let mut plain = Vec::new();
            let _ = flate2::read::GzDecoder::new(&bytes[..]).read_to_end(&mut plain);
            out.extend_from_slice(&plain);
        }
        if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
            if let Some(payload) = v["payload"].as_str() {
                out.extend_from_slice(&base64_decode(payload));
            }
        }
        out.extend_from_slice(&bytes);
    }
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(b))
}

#[test]
fn submit_refuses_an_egress_destination_the_proxy_never_reaches_and_points_to_allow_local_where_the_worker_takes_it(
) {
    let env = Env::new();
    for dest in [
        "127.0.0.1:18080",
        "localhost:11434",
        "ollama.localhost:11434",
        "10.1.2.3:8000",
        "192.168.1.20:8080",
        "172.16.0.9:443",
        "100.100.100.200:80",
        "169.254.169.254:80",
        "metadata.google.internal:80",
        "0.0.0.0:80",
        "127.1:80",
        "2130706433:80",
    ] {
        let token = env.next_token();
        let out = env.run(&mut env.submit_cmd(&token, &["--egress", dest]));
        assert_eq!(out.status.code(), Some(4), "{dest}: {}", show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        // The hint names the worker's grant only where the worker takes it (never for the
        // metadata service, which it refuses too).
        let grantable = [
            "127.0.0.1:18080",
            "localhost:11434",
            "10.1.2.3:8000",
            "192.168.1.20:8080",
            "172.16.0.9:443",
            "100.100.100.200:80",
        ]
        .contains(&dest);
        assert!(
            err.contains("submit.egress-unreachable")
                && err.contains(&format!("airlock-worker run --allow-local {dest}")) == grantable
                && (grantable || err.contains("no grant reaches it")),
            "{dest}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(!token.exists(), "{dest}: no token is minted");
    }
    // Nothing was packed or recorded for any of them.
    assert!(!env.home.join("store/records").exists());
    // A public name is still accepted.
    env.submit(&["--egress", "api.example.com:443", "--egress", "8.8.8.8:443"]);
}

/// The stand-in minting command: a fresh key per call, from the job id and a counter; says
/// on stderr that it minted one (as a real script would), never the key.
fn configure_model_key(env: &Env, secret_part: &str) -> PathBuf {
    let mint = env.root.join("mint.sh");
    std::fs::write(
        &mint,
        format!(
            "#!/bin/sh\nn=$(cat \"$0.count\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$0.count\"\n\
             echo \"minting a key for $AIRLOCK_JOB (ttl $AIRLOCK_TTL_SECS s, egress $AIRLOCK_EGRESS)\" >&2\n\
             echo \"sk-{secret_part}-$n-$AIRLOCK_JOB\"\n"
        ),
    )
    .unwrap();
    chmod(&mint, 0o700);
    let config = env.home.join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[model_key]\ncommand = [\"{}\"]\nenv = \"OPENAI_API_KEY\"\n",
        mint.display()
    ));
    std::fs::write(&config, text).unwrap();
    mint
}

#[test]
fn scoped_model_key_reaches_the_generator_and_never_the_ledger_packet_logs_or_bundle() {
    let env = Env::new();
    let secret_part = "scopedKEY7f3a9c";
    configure_model_key(&env, secret_part);
    let job = env.submit(&["--egress", "llm.example.com:443"]);
    let key = format!("sk-{secret_part}-1-{}", job.id);

    // The generator proves it got the key without printing it: its digest goes in a file.
    let generator = env.gen(
        "keyed.sh",
        "printf %s \"$OPENAI_API_KEY\" | sha256sum | cut -d' ' -f1 > key.sha256\n\
         echo \"key variable set: ${OPENAI_API_KEY:+yes}\"",
    );
    let out = env.run(&mut env.worker(&job, &[&generator]));
    assert!(out.status.success(), "worker: {}", show(&out));
    let out = env.run(env.airlock().args(["fetch", &job.id]));
    assert!(out.status.success(), "fetch: {}", show(&out));
    let out = env.gate(&job.id, &["--json"]);
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 3),
        "{}",
        show(&out)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["stats"]["files_changed"], 1, "{report}");
    let mut patch = Vec::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(env.drop_dir(&job.id).join("artifact.tar.gz")).unwrap(),
    )
    .read_to_end(&mut patch)
    .unwrap();
    assert!(
        contains(&patch, sha256_hex(key.as_bytes()).as_bytes()),
        "the generator saw another key (or none)"
    );

    // The ledger names the key by its fingerprint.
    let fingerprint = format!("sha256:{}", &sha256_hex(key.as_bytes())[..16]);
    let out = env.run(env.airlock().args(["audit", "show", &job.id, "--json"]));
    assert!(out.status.success(), "audit show: {}", show(&out));
    assert!(
        contains(&out.stdout, fingerprint.as_bytes()),
        "no fingerprint in the ledger: {}",
        show(&out)
    );

    // A re-dispatch mints a new key for the new job.
    let token2 = env.next_token();
    let out = env.run(
        env.airlock()
            .args(["resubmit", &job.id, "--json", "--token-out"])
            .arg(&token2),
    );
    assert!(out.status.success(), "resubmit: {}", show(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let job2 = v["job"].as_str().unwrap().to_owned();
    let key2 = format!("sk-{secret_part}-2-{job2}");
    assert_eq!(
        v["model_key_fingerprint"],
        format!("sha256:{}", &sha256_hex(key2.as_bytes())[..16])
    );

    // Grep: the store (ledger, records, inbox bundles, drop artifacts and packets, all
    // unpacked and decoded), the home's job directories, every command's stdout and stderr.
    // The one place the key is kept on the trusted host: the home's job directory, 0600 (the
    // gate looks for it in what the worker returns).
    for j in [&job.id, &job2] {
        let kept = env.home.join("jobs").join(j).join("model-key");
        assert_eq!(
            std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::fs::remove_file(&kept).unwrap();
    }
    let mut seen = Vec::new();
    readable_bytes(&env.home.join("store"), &mut seen);
    readable_bytes(&env.home.join("jobs"), &mut seen);
    seen.extend_from_slice(&env.outputs.borrow());
    assert!(
        contains(&seen, b"key variable set: yes"),
        "the grep reads the generator log"
    );
    assert!(
        contains(&seen, b"OPENAI_API_KEY"),
        "the grep reads the request"
    );
    for needle in [key.as_str(), key2.as_str(), secret_part] {
        assert!(!contains(&seen, needle.as_bytes()), "{needle} leaked");
    }
}

/// Finding 11: a generator writes its model key into its log (base64) and its change (hex).
/// The job is refused `model-key-leaked` at fetch; the key, raw or encoded, is in no output,
/// no ledger entry, no record, no report and no file of the home but its 0600 kept copy; the
/// `[model_key] end` command is told the job ended (with the fingerprint, never the key);
/// `submit --json` printed no token.
#[test]
fn a_generator_that_leaks_its_model_key_is_refused_and_the_key_is_published_nowhere() {
    use base64::Engine as _;
    let env = Env::new();
    let secret_part = "leakyKEY5e1d0b";
    configure_model_key(&env, secret_part);
    let ended = env.root.join("ended.txt");
    let end = env.root.join("end.sh");
    std::fs::write(
        &end,
        format!(
            "#!/bin/sh\necho \"$AIRLOCK_KEY_EVENT $AIRLOCK_JOB $AIRLOCK_MODEL_KEY_FINGERPRINT\" >> {}\n",
            ended.display()
        ),
    )
    .unwrap();
    chmod(&end, 0o700);
    let config = env.home.join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!("end = [\"{}\"]\n", end.display()));
    std::fs::write(&config, text).unwrap();

    let job = env.submit(&["--egress", "llm.example.com:443"]);
    let key = format!("sk-{secret_part}-1-{}", job.id);
    let generator = env.gen(
        "leaks.sh",
        "printf 'debug: auth %s\\n' \"$(printf %s \"$OPENAI_API_KEY\" | base64 -w0)\"\n\
         printf '# %s\\n' \"$(printf %s \"$OPENAI_API_KEY\" | od -An -tx1 | tr -d ' \\n')\" >> src/calc.py",
    );
    // The worker's own output is the hostile side's: not grepped.
    let out = run(&mut env.worker(&job, &[&generator]));
    if needs_sandbox_skip(&out) {
        return;
    }
    assert!(out.status.success(), "worker: {}", show(&out));
    let out = env.run(env.airlock().args(["fetch", &job.id]));
    assert_eq!(out.status.code(), Some(4), "fetch: {}", show(&out));
    let out = env.gate(&job.id, &["--json"]);
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(reason_codes(&report), ["model-key-leaked"], "{report}");
    let detail = report["reasons"][0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("generator.log") && detail.contains("base64"),
        "{detail}"
    );
    let (md, html) = (env.root.join("r.md"), env.root.join("r.html"));
    for (flag, path) in [("--md", &md), ("--html", &html)] {
        let _ = env.gate(&job.id, &["--json", flag, path.to_str().unwrap()]);
    }
    let out = env.run(env.airlock().args(["audit", "show", &job.id, "--json"]));
    assert!(out.status.success(), "audit show: {}", show(&out));

    // The end command ran once, told the job and the fingerprint; the kept copy is gone.
    let fingerprint = format!("sha256:{}", &sha256_hex(key.as_bytes())[..16]);
    let told = std::fs::read_to_string(&ended).unwrap();
    assert_eq!(
        told.lines().next().unwrap(),
        format!("end {} {fingerprint}", job.id)
    );
    // Every later gate (--md, --html) refused the job again: nothing of it was kept.
    assert!(!env
        .home
        .join("jobs")
        .join(&job.id)
        .join("artifact.tar.gz")
        .exists());
    let kept = env.home.join("jobs").join(&job.id).join("model-key");
    assert_eq!(
        std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777,
        0o600
    );
    std::fs::remove_file(&kept).unwrap();

    let mut seen = Vec::new();
    readable_bytes(&env.home.join("store/ledger"), &mut seen);
    readable_bytes(&env.home.join("store/records"), &mut seen);
    readable_bytes(&env.home.join("jobs"), &mut seen);
    for report in [&md, &html] {
        if let Ok(b) = std::fs::read(report) {
            seen.extend_from_slice(&b);
        }
    }
    seen.extend_from_slice(&env.outputs.borrow());
    seen.extend_from_slice(told.as_bytes());
    let b64 = base64::engine::general_purpose::STANDARD.encode(key.as_bytes());
    for needle in [
        key.clone(),
        b64,
        hex::encode(key.as_bytes()),
        secret_part.to_owned(),
    ] {
        assert!(
            !contains(&seen, needle.as_bytes()),
            "the key leaked ({needle:.12}…)"
        );
    }
    assert!(
        contains(&seen, b"model-key-leaked"),
        "the grep reads the ledger"
    );
}

#[test]
fn submit_fails_with_one_line_when_the_minting_command_fails() {
    let env = Env::new();
    let mint = configure_model_key(&env, "unused");
    std::fs::write(&mint, "#!/bin/sh\necho 'gateway said 401' >&2\nexit 7\n").unwrap();
    let token = env.next_token();
    let out = env.run(&mut env.submit_cmd(&token, &[]));
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("submit.model-key") && err.contains("gateway said 401"),
        "{err}"
    );
    assert!(!token.exists());
}

#[test]
fn gate_answers_an_empty_change_with_no_change_and_shows_the_log() {
    let env = Env::new();
    let job = env.submit(&[]);
    let generator = env.gen("idle.sh", "echo 'thinking... decided to change nothing'");
    let _ = env.run(&mut env.worker(&job, &[&generator]));
    let out = env.gate(&job.id, &["--json"]);
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(reason_codes(&report), ["no-change"], "{report}");
    let detail = report["reasons"][0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("changed no file") && !detail.contains("git apply"),
        "{detail}"
    );
    assert!(
        report["failed_run"]["log_tail"]
            .to_string()
            .contains("decided to change nothing"),
        "{report}"
    );
    let out = env.gate(&job.id, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("no-change") && !text.contains("No valid patches"),
        "{text}"
    );
}

#[test]
fn fetch_and_gate_show_a_failed_runs_log_tail_and_every_report_the_egress_log() {
    let env = Env::new();
    let job = env.submit(&["--egress", "api.example.com:443"]);
    // Asks the proxy for a destination not on the allowlist (logged, refused), writes a file,
    // then fails the way an agent does.
    let generator = env.gen(
        "fails.sh",
        "python3 - <<'EOF'\n\
import os, socket, urllib.parse\n\
p = urllib.parse.urlsplit(os.environ['HTTPS_PROXY'])\n\
s = socket.create_connection((p.hostname, p.port), timeout=20)\n\
s.sendall(b'CONNECT example.org:443 HTTP/1.1\\r\\nHost: example.org:443\\r\\n\\r\\n')\n\
print('proxy said', s.recv(64).split(b' ')[1].decode())\n\
EOF\n\
echo 'half done' > notes.txt\n\
echo 'Traceback (most recent call last): RateLimitError: 429' >&2\n\
exit 1",
    );
    let _ = env.run(&mut env.worker(&job, &[&generator]));

    let out = env.run(env.airlock().args(["fetch", &job.id]));
    assert!(out.status.success(), "fetch: {}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("exited with status 1") && text.contains("RateLimitError: 429"),
        "{text}"
    );
    assert!(
        text.contains("example.org:443 refused (egress.not-allowed)"),
        "{text}"
    );

    let md = env.root.join("report.md");
    let out = env.gate(&job.id, &["--md", md.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("generator: exited with status 1"),
        "{}",
        show(&out)
    );
    assert!(text.contains("RateLimitError: 429"), "{text}");
    assert!(
        text.contains("example.org:443 refused (egress.not-allowed)"),
        "{text}"
    );
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("### Egress") && md.contains("example.org:443"),
        "{md}"
    );
    assert!(
        md.contains("### Generator") && md.contains("RateLimitError: 429"),
        "{md}"
    );
    let out = env.gate(&job.id, &["--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["egress"][0]["destination"], "example.org:443",
        "{report}"
    );
    assert_eq!(report["egress"][0]["reason"], "egress.not-allowed");
    assert_eq!(report["failed_run"]["exit"], "exited with status 1");
}

#[test]
fn a_checkpoint_after_kill_int_shows_in_status_fetches_as_partial_and_resubmit_redispatches() {
    let env = Env::new();
    let job = env.submit(&["--checkpoint-secs", "1", "--wall-clock-secs", "600"]);
    let generator = env.gen(
        "slow.sh",
        "printf 'progress so far\\n' > progress.txt\nwhile :; do sleep 1; done",
    );
    let mut child = env
        .worker(&job, &[&generator])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let drop_dir = env.drop_dir(&job.id);
    wait_for("a checkpoint", Duration::from_secs(60), || {
        drop_dir.join("checkpoint.dsse.json").exists()
    });
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let end = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < end, "the worker outlived SIGINT");
        std::thread::sleep(Duration::from_millis(50));
    }

    let out = env.run(env.airlock().args(["status", &job.id, "--json"]));
    assert!(out.status.success(), "status: {}", show(&out));
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(s[0]["last_checkpoint_at"].as_u64().is_some(), "{s}");
    let out = env.run(env.airlock().args(["status", &job.id]));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&airlock_core::jobid::rfc3339_utc(
            s[0]["last_checkpoint_at"].as_u64().unwrap()
        )),
        "{}",
        show(&out)
    );

    // The checkpoint fetches and verifies, marked partial, kept apart from a final artifact.
    let out = env.run(
        env.airlock()
            .args(["fetch", &job.id, "--checkpoint", "--json"]),
    );
    assert!(out.status.success(), "fetch --checkpoint: {}", show(&out));
    let f: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (f["partial"].clone(), f["checkpoint"].clone()),
        (Value::Bool(true), Value::Bool(true)),
        "{f}"
    );
    let out = env.run(env.airlock().args(["fetch", &job.id, "--checkpoint"]));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("PARTIAL"),
        "{}",
        show(&out)
    );
    let jobdir = env.home.join("jobs").join(&job.id);
    assert!(jobdir.join("checkpoint.tar.gz").exists());
    assert!(
        !jobdir.join("artifact.tar.gz").exists(),
        "never taken for the final artifact"
    );
    // A tampered checkpoint is refused: both slots tampered (one alone is passed over, with a
    // warning naming it, for the other).
    for slot in ["checkpoint.tar.gz", "checkpoint.1.tar.gz"] {
        let cp = drop_dir.join(slot);
        let Ok(mut bytes) = std::fs::read(&cp) else {
            continue;
        };
        let n = bytes.len();
        bytes[n - 9] ^= 1;
        std::fs::write(&cp, bytes).unwrap();
    }
    let out = env.run(env.airlock().args(["fetch", &job.id, "--checkpoint"]));
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("artifact-digest"),
        "{}",
        show(&out)
    );

    // Re-dispatch: a new job, token and job key; the ledger says whose re-dispatch it is.
    let token2 = env.next_token();
    let out = env.run(
        env.airlock()
            .args(["resubmit", &job.id, "--json", "--token-out"])
            .arg(&token2),
    );
    assert!(out.status.success(), "resubmit: {}", show(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let job2 = Job {
        id: v["job"].as_str().unwrap().to_owned(),
        token_file: token2,
    };
    assert_ne!(job2.id, job.id);
    assert_eq!(v["redispatch_of"], job.id.as_str());
    assert_ne!(
        std::fs::read(&job2.token_file).unwrap(),
        std::fs::read(&job.token_file).unwrap()
    );
    let out = env.run(env.airlock().args(["audit", "show", &job2.id, "--json"]));
    assert!(out.status.success(), "{}", show(&out));
    let bom: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(bom["submit"]["redispatch_of"], job.id.as_str(), "{bom}");

    // The new job runs to the end on the same bundle and is gated on its own.
    let edit = env.gen(
        "edit.sh",
        "printf 'def sub(a, b):\\n    return a - b\\n' >> src/calc.py",
    );
    let out = env.run(&mut env.worker(&job2, &[&edit]));
    assert!(out.status.success(), "worker: {}", show(&out));
    let out = env.gate(&job2.id, &["--json"]);
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 3),
        "{}",
        show(&out)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["bom"]["bundle_sha256"],
        bom["submit"]["bundle_sha256"]
    );
}

/// `submit --json` names no path into its deleted staging directory, and `resubmit` keeps the
/// original job's token lifetime unless told otherwise.
#[test]
fn submit_prints_no_stale_path_and_resubmit_keeps_the_original_ttl() {
    let env = Env::new();
    let token = env.next_token();
    let out = env.run(&mut env.submit_cmd(&token, &["--ttl", "90s"]));
    assert!(out.status.success(), "submit: {}", show(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for field in ["bundle_path", "envelope_path"] {
        if let Some(p) = v["pack"][field].as_str() {
            assert!(
                std::path::Path::new(p).exists(),
                "{field} {p} does not exist"
            );
        }
    }
    let job = v["job"].as_str().unwrap().to_owned();
    let ttl = |v: &Value| {
        let exp = v["expires_at"].as_u64().unwrap();
        let now = airlock_core::clock::now_unix();
        exp.saturating_sub(now)
    };
    assert!((80..=90).contains(&ttl(&v)), "{v}");
    let token2 = env.next_token();
    let out = env.run(
        env.airlock()
            .args(["resubmit", &job, "--json", "--token-out"])
            .arg(&token2),
    );
    assert!(out.status.success(), "resubmit: {}", show(&out));
    let v2: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!((80..=90).contains(&ttl(&v2)), "not the original 90 s: {v2}");
    let token3 = env.next_token();
    let out = env.run(
        env.airlock()
            .args(["resubmit", &job, "--ttl", "1h", "--json", "--token-out"])
            .arg(&token3),
    );
    assert!(out.status.success(), "resubmit: {}", show(&out));
    let v3: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(ttl(&v3) > 3000, "{v3}");
}
