//! Egress end to end: `airlock submit --egress HOST:PORT` -> `airlock-worker` (proxy outside
//! the sandbox) -> the signed packet's `egress` log -> `airlock fetch`/`gate`.
//!
//! The "API" is a stand-in on this host's loopback, plain HTTP inside the proxy's CONNECT
//! tunnel (the proxy relays bytes; TLS inside it is the generator's business). The worker
//! reaches it through the TEST-ONLY `AIRLOCK_EGRESS_TEST_ENDPOINT` (an allowed host:port
//! connected to a fixed local address, bypassing DNS and the address checks that would
//! rightly refuse loopback), which the packet records as `egress.test-endpoint`. Everything
//! else goes through the real resolver and the real checks: a name that resolves to this host must be refused.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use airlock_tests::*;
use serde_json::Value;

const API_HOST: &str = "api.test.invalid";
const API_PORT: u16 = 8080;
const MODEL: &str = "stand-in-model-2026-01";
const API_KEY: &str = "sk-airlock-test-0123456789abcdef";

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A trusted home, a small repository, the generators, a work root: one 0755 temp dir (the
/// generator runs as `nobody` when the tests run as root).
struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    repo: PathBuf,
    work_root: PathBuf,
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
        let src =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/generators/openai-chat.py");
        std::fs::copy(src, gens.join("openai-chat.py")).unwrap();
        chmod(&gens.join("openai-chat.py"), 0o755);
        Env {
            work_root: root.join("wr"),
            _tmp: tmp,
            root,
            home,
            repo,
        }
    }

    fn airlock(&self) -> Command {
        let mut c = cmd(&bin("airlock"));
        c.arg("--home").arg(&self.home);
        c
    }

    /// `airlock submit` with the prompt and `--egress` rules; returns (job id, token file).
    fn submit(&self, prompt: &str, egress: &[&str]) -> (String, PathBuf) {
        let n = std::fs::read_dir(&self.root).unwrap().count();
        let prompt_file = self.root.join(format!("prompt-{n}.txt"));
        std::fs::write(&prompt_file, prompt).unwrap();
        let token = self.root.join(format!("{n}.token"));
        let mut c = self.airlock();
        c.arg("submit")
            .arg("--repo")
            .arg(&self.repo)
            .arg("--prompt-file")
            .arg(&prompt_file)
            .args(["--model", "gpt-requested"])
            .arg("--token-out")
            .arg(&token)
            .arg("--json");
        for e in egress {
            c.args(["--egress", e]);
        }
        let out = run(&mut c);
        assert!(out.status.success(), "submit: {}", show(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (v["job"].as_str().unwrap().to_owned(), token)
    }

    fn worker(&self, token: &Path, flags: &[&str], generator: &[&str]) -> Command {
        let mut c = cmd(&bin("airlock-worker"));
        c.arg("run")
            .arg("--token-file")
            .arg(token)
            .arg("--trusted-pub")
            .arg(self.home.join("trusted.pub"))
            .arg("--work-root")
            .arg(&self.work_root)
            .args(flags)
            .arg("--")
            .args(generator);
        c
    }

    fn gen(&self, name: &str) -> String {
        self.root.join("gens").join(name).display().to_string()
    }

    fn drop_dir(&self, job: &str) -> PathBuf {
        self.home.join("store/drop").join(job)
    }

    /// (packet, patch, generator log) of the final artifact.
    fn artifact(&self, job: &str) -> (Value, String, String) {
        let gz = flate2::read::GzDecoder::new(
            std::fs::File::open(self.drop_dir(job).join("artifact.tar.gz")).unwrap(),
        );
        let mut ar = tar::Archive::new(gz);
        let (mut packet, mut patch, mut log) = (Value::Null, String::new(), String::new());
        for e in ar.entries().unwrap() {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut s = String::new();
            e.read_to_string(&mut s).unwrap();
            match name.as_str() {
                "packet.json" => packet = serde_json::from_str(&s).unwrap(),
                "patch.diff" => patch = s,
                "generator.log" => log = s,
                _ => {}
            }
        }
        (packet, patch, log)
    }
}

/// `(destination, allowed, reason)` of every packet egress entry.
fn egress_of(packet: &Value) -> Vec<(String, bool, Option<String>)> {
    packet["egress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["destination"].as_str().unwrap().to_owned(),
                a["allowed"].as_bool().unwrap(),
                a["reason"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// A stand-in chat-completions endpoint on 127.0.0.1: answers every POST with a canned
/// completion whose content is `diff` in a ```diff block, and keeps what it was sent.
/// What the stand-in was sent: (request line, headers, body).
type Seen = Arc<Mutex<Vec<(String, Vec<String>, String)>>>;

struct StandIn {
    addr: SocketAddr,
    requests: Seen,
}

impl StandIn {
    fn start(diff: &'static str) -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let mut r = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                if r.read_line(&mut line).is_err() {
                    continue;
                }
                let mut headers = Vec::new();
                let mut len = 0usize;
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                        break;
                    }
                    if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    headers.push(h.trim_end().to_owned());
                }
                let mut body = vec![0u8; len];
                let _ = r.read_exact(&mut body);
                seen.lock().unwrap().push((
                    line.trim_end().to_owned(),
                    headers,
                    String::from_utf8_lossy(&body).into_owned(),
                ));
                let reply = serde_json::json!({
                    "id": "chatcmpl-standin",
                    "object": "chat.completion",
                    "model": MODEL,
                    "choices": [{
                        "index": 0,
                        "message": {"role": "assistant", "content": format!("Here you go.\n```diff\n{diff}```\n")},
                        "finish_reason": "stop"
                    }],
                    "usage": {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366}
                })
                .to_string();
                let mut w = conn;
                let _ = write!(
                    w,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                    reply.len()
                );
            }
        });
        StandIn { addr, requests }
    }

    /// The worker's TEST-ONLY endpoint override for `api.test.invalid:8080`.
    fn endpoint_env(&self) -> String {
        format!("{API_HOST}:{API_PORT}={}", self.addr)
    }
}

const DIFF: &str = "--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,2 +1,6 @@\n def add(a, b):\n     return a + b\n+\n+\n+def sub(a, b):\n+    return a - b\n";

fn prompt() -> String {
    format!("---\nbase_url: http://{API_HOST}:{API_PORT}/v1\nmodel: gpt-requested\n---\nAdd sub(a, b) next to add.\n")
}

fn assert_ok(out: &Output) {
    assert!(out.status.success(), "{}", show(out));
}

/// The example generator, sandboxed, talks to the stand-in through the proxy, applies the
/// diff it got, and reports the model the endpoint named; the packet's egress log lists the
/// allowed attempt; fetch accepts the artifact; the API key appears nowhere in it.
#[test]
fn openai_chat_generator_through_the_egress_proxy_applies_the_answer_and_reports_the_model() {
    let env = Env::new();
    let api = StandIn::start(DIFF);
    let (job, token) = env.submit(&prompt(), &[&format!("{API_HOST}:{API_PORT}")]);
    let out = run(env
        .worker(
            &token,
            &["--pass-env", "OPENAI_API_KEY"],
            &[&env.gen("openai-chat.py")],
        )
        .env("OPENAI_API_KEY", API_KEY)
        .env("AIRLOCK_EGRESS_TEST_ENDPOINT", api.endpoint_env()));
    assert_ok(&out);
    let (packet, patch, log) = env.artifact(&job);
    assert_eq!(packet["sandbox"], "namespaces+landlock+seccomp", "{packet}");
    assert_eq!(packet["exit"]["code"], 0, "{packet}\n{log}");
    assert_eq!(packet["model_requested"], "gpt-requested");
    assert_eq!(packet["model_reported"], MODEL, "{packet}\n{log}");
    assert_eq!(packet["tokens_in"], 321);
    assert_eq!(packet["tokens_out"], 45);
    assert!(
        patch.contains("+def sub(a, b):\n+    return a - b\n"),
        "{patch}"
    );
    assert_eq!(
        egress_of(&packet),
        [(
            format!("{API_HOST}:{API_PORT}"),
            true,
            Some("egress.test-endpoint".to_owned())
        )]
    );
    let attempt = &packet["egress"][0];
    assert!(attempt["bytes_up"].as_u64().unwrap() > 0, "{attempt}");
    assert!(attempt["bytes_down"].as_u64().unwrap() > 0, "{attempt}");
    // What the endpoint saw: the chat-completions call, the key from --pass-env, the prompt.
    let reqs = api.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    assert_eq!(reqs[0].0, "POST /v1/chat/completions HTTP/1.1");
    assert!(
        reqs[0]
            .1
            .iter()
            .any(|h| h == &format!("Authorization: Bearer {API_KEY}")),
        "{:?}",
        reqs[0].1
    );
    let body: Value = serde_json::from_str(&reqs[0].2).unwrap();
    assert_eq!(body["model"], "gpt-requested");
    assert!(body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .contains("Add sub(a, b) next to add."));
    // The key never lands in the artifact.
    let raw = gunzip(&env.drop_dir(&job).join("artifact.tar.gz"));
    assert!(
        !contains(&raw, API_KEY.as_bytes()),
        "the API key is in the artifact"
    );
    assert_ok(&run(env.airlock().arg("fetch").arg(&job)));
}

/// From inside the sandbox: the allowed endpoint answers; a host not on the allowlist and an
/// allowed name that resolves to this host (its own hostname: `submit` refuses `localhost`
/// itself) are refused; the signed packet lists all three, in order, with the refusing rule.
#[test]
fn packet_lists_the_allowed_and_the_refused_attempts() {
    let env = Env::new();
    let api = StandIn::start(DIFF);
    let lo_port = api.addr.port();
    let this_host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_ascii_lowercase();
    let probe = env.root.join("gens/probe.py");
    std::fs::write(
        &probe,
        format!(
            r#"#!/usr/bin/env python3
import os, socket, sys, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
def connect(dest):
    s = socket.create_connection((proxy.hostname, proxy.port), timeout=20)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (dest, dest)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        if not c:
            break
        head += c
    return head.split(b" ")[1].decode() if head.count(b" ") else "EOF"
got = [connect(d) for d in ["{API_HOST}:{API_PORT}", "example.com:443", "{this_host}:{lo_port}"]]
print("statuses", got)
sys.exit(0 if got == ["200", "403", "403"] else 1)
"#
        ),
    )
    .unwrap();
    chmod(&probe, 0o755);
    let (job, token) = env.submit(
        "probe",
        &[
            &format!("{API_HOST}:{API_PORT}"),
            &format!("{this_host}:{lo_port}"),
        ],
    );
    let out = run(env
        .worker(&token, &[], &[&env.gen("probe.py")])
        .env("AIRLOCK_EGRESS_TEST_ENDPOINT", api.endpoint_env()));
    assert_ok(&out);
    let (packet, _, log) = env.artifact(&job);
    assert_eq!(packet["exit"]["code"], 0, "{log}");
    assert_eq!(packet["sandbox"], "namespaces+landlock+seccomp");
    let mut seen = egress_of(&packet);
    // Loopback through /etc/hosts, or an address of this host (`this-host`, `private`).
    let last = seen.pop().unwrap();
    assert_eq!((last.0, last.1), (format!("{this_host}:{lo_port}"), false));
    assert!(
        last.2
            .as_deref()
            .is_some_and(|r| r.starts_with("egress.address.")),
        "{:?}",
        last.2
    );
    assert_eq!(
        seen,
        [
            (
                format!("{API_HOST}:{API_PORT}"),
                true,
                Some("egress.test-endpoint".to_owned())
            ),
            (
                "example.com:443".to_owned(),
                false,
                Some("egress.not-allowed".to_owned())
            ),
        ]
    );
    assert_ok(&run(env.airlock().arg("fetch").arg(&job)));
}

/// A job without `--egress` gets no proxy at all: the generator sees no proxy variable, and
/// the packet's egress log is empty.
#[test]
fn job_without_egress_has_no_proxy_and_an_empty_egress_log() {
    let env = Env::new();
    let (job, token) = env.submit("nothing", &[]);
    let out = run(&mut env.worker(
        &token,
        &[],
        &["/bin/sh", "-c", "env | grep -i _proxy && exit 1; exit 0"],
    ));
    assert_ok(&out);
    let (packet, _, log) = env.artifact(&job);
    assert_eq!(packet["exit"]["code"], 0, "a proxy variable was set: {log}");
    assert_eq!(packet["egress"], serde_json::json!([]));
}

/// The landlock+seccomp fallback cannot confine TCP to the proxy: a job with egress is
/// refused there before the generator starts (nothing dropped, no run dir), unless the
/// operator says --unsafe-no-sandbox, in which case the packet says `sandbox: none`, the
/// egress is still logged, and the default gate policy wants a human (`unsandboxed`).
#[test]
fn egress_in_the_fallback_is_refused_and_unsandboxed_egress_goes_to_a_human() {
    let env = Env::new();
    let api = StandIn::start(DIFF);
    let (job, token) = env.submit(&prompt(), &[&format!("{API_HOST}:{API_PORT}")]);
    let out = run(env
        .worker(
            &token,
            &["--pass-env", "OPENAI_API_KEY"],
            &[&env.gen("openai-chat.py")],
        )
        .env("OPENAI_API_KEY", API_KEY)
        .env("AIRLOCK_EGRESS_TEST_ENDPOINT", api.endpoint_env())
        .env("AIRLOCK_SANDBOX_FORCE", "landlock+seccomp"));
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("egress needs the network namespace"), "{err}");
    assert!(err.contains("refusing to run the generator"), "{err}");
    assert!(api.requests.lock().unwrap().is_empty(), "the generator ran");
    assert!(!env.drop_dir(&job).exists(), "something was dropped");

    // Same job, told --unsafe-no-sandbox: runs unconfined, loudly, and is recorded as such.
    let out = run(env
        .worker(
            &token,
            &["--unsafe-no-sandbox", "--pass-env", "OPENAI_API_KEY"],
            &[&env.gen("openai-chat.py")],
        )
        .env("OPENAI_API_KEY", API_KEY)
        .env("AIRLOCK_EGRESS_TEST_ENDPOINT", api.endpoint_env())
        .env("AIRLOCK_SANDBOX_FORCE", "landlock+seccomp"));
    assert_ok(&out);
    let (packet, _, log) = env.artifact(&job);
    assert_eq!(packet["sandbox"], "none", "{packet}");
    assert_eq!(packet["model_reported"], MODEL, "{log}");
    assert_eq!(egress_of(&packet).len(), 1, "{packet}");
    let out = run(env
        .airlock()
        .args(["gate", &job, "--json", "--repo"])
        .arg(&env.repo));
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        reason_codes(&report).contains(&"unsandboxed".to_owned()),
        "{report}"
    );
}

#[test]
fn submit_refuses_a_malformed_egress_rule() {
    let env = Env::new();
    let prompt_file = env.root.join("p.txt");
    std::fs::write(&prompt_file, "x").unwrap();
    for bad in [
        "api.example.com",
        "api.example.com:0",
        "*.example.com:443",
        "a b:443",
    ] {
        let out = run(env
            .airlock()
            .arg("submit")
            .arg("--repo")
            .arg(&env.repo)
            .arg("--prompt-file")
            .arg(&prompt_file)
            .args(["--egress", bad]));
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("request.egress"),
            "{}",
            show(&out)
        );
    }
}
