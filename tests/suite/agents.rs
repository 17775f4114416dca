//! Real agent CLIs end to end: Claude Code and Codex CLI (npm) and aider (PyPI), installed
//! the ordinary way OUTSIDE the system roots by `scripts/ci-install-agents.sh` (an npm prefix
//! and a virtualenv under `$AIRLOCK_AGENTS_DIR`, default `~/.airlock-agents`), each run by
//! `airlock-worker run` in the real sandbox with `--readable` (its install), `--home-template`
//! (its settings) and `--allow-local` (the model server), against a stand-in model server
//! on this host's loopback that speaks the agent's own API, streaming as the agent streams
//! (`tests/agents/standin.py`), and answers with one edit in the agent's own edit protocol.
//! The artifact's patch must apply with real `git apply`, `airlock fetch` must accept it and
//! `airlock gate` must queue it.
//!
//! Outside CI a test whose agent is not installed skips with a printed message; under `CI`
//! it fails. The same recipes are documented in docs/GENERATORS.md ("Recipes").
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use airlock_tests::*;
use serde_json::{json, Value};

/// The file every agent is asked to change, before and after.
const FILE: &str = "src/calc.py";
const OLD: &str = "def add(a, b):\n    return a + b\n";
const NEW: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
const PROMPT: &str = "Add a sub(a, b) function next to add in src/calc.py.\n";
/// The key the stand-in demands; handed to the agent with `--pass-env`, never in the template.
const KEY: &str = "sk-standin-0123456789abcdef";

/// Where scripts/ci-install-agents.sh installs the agents.
fn agents_dir() -> PathBuf {
    match std::env::var_os("AIRLOCK_AGENTS_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".airlock-agents"),
    }
}

/// Whether `program` is installed; if not, skips (prints why) outside CI and fails under CI.
fn installed(agent: &str, program: &Path) -> bool {
    if program.exists() {
        return true;
    }
    let msg = format!(
        "{agent} is not installed at {}: run scripts/ci-install-agents.sh (AIRLOCK_AGENTS_DIR={})",
        program.display(),
        agents_dir().display()
    );
    assert!(
        std::env::var_os("CI").is_none(),
        "{msg}; under CI the agent tests must run"
    );
    eprintln!("SKIP: {msg}");
    false
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The stand-in model server (a child process), killed when dropped.
struct StandIn {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl StandIn {
    fn start(api: &str, dir: &Path) -> StandIn {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("agents/standin.py");
        let log = dir.join(format!("standin-{api}.log"));
        let edit = json!({"file": FILE, "old": OLD, "new": NEW}).to_string();
        let mut child = Command::new("python3")
            .arg(script)
            .args(["--api", api, "--key", KEY, "--edit", &edit, "--log"])
            .arg(&log)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs the stand-in model server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("stand-in did not start: {line:?}"));
        StandIn { child, port, log }
    }

    /// One JSON object per request the stand-in got.
    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The `turn` of every request, in order.
    fn turns(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| r["turn"].as_str().unwrap().to_owned())
            .collect()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How one agent is installed, configured and started: the docs/GENERATORS.md recipe (the
/// agent named bare: each `--readable DIR`'s `bin/` is on the generator's `PATH`).
struct Recipe {
    name: &'static str,
    /// `--readable` directories.
    readable: Vec<PathBuf>,
    /// Files of the `--home-template` directory (path, content); `{port}` is the stand-in's.
    home: Vec<(&'static str, String)>,
    /// The variable that carries the API key (`--pass-env`).
    key_env: &'static str,
    /// The generator command line after `--`.
    command: Vec<String>,
    /// The stand-in's turns in order (what the model answered).
    turns: &'static [&'static str],
}

/// A trusted home, a repository and a work root in one 0755 temp dir (a root worker runs the
/// generator as `nobody`).
struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    repo: PathBuf,
    rev: String,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        chmod(&root, 0o755);
        let home = init_home(&root);
        let repo = root.join("repo");
        let rev = make_repo(
            &repo,
            &[
                (FILE, OLD.as_bytes()),
                ("README.md", b"# calc\n".as_slice()),
            ],
        );
        Env {
            _tmp: tmp,
            root,
            home,
            repo,
            rev,
        }
    }

    fn airlock(&self) -> Command {
        let mut c = cmd(&bin("airlock"));
        c.arg("--home").arg(&self.home);
        c
    }

    /// `airlock submit`; returns (job id, token file).
    fn submit(&self) -> (String, PathBuf) {
        let prompt = self.root.join("prompt.txt");
        std::fs::write(&prompt, PROMPT).unwrap();
        let token = self.root.join("job.token");
        let out = run(self
            .airlock()
            .args(["submit", "--json", "--model", "stand-in-model", "--repo"])
            .arg(&self.repo)
            .arg("--prompt-file")
            .arg(&prompt)
            .arg("--token-out")
            .arg(&token));
        assert!(out.status.success(), "submit: {}", show(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (v["job"].as_str().unwrap().to_owned(), token)
    }

    fn artifact(&self, job: &str) -> (Value, String) {
        let path = self
            .home
            .join("store/drop")
            .join(job)
            .join("artifact.tar.gz");
        let gz = flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap());
        let (mut packet, mut patch) = (Value::Null, String::new());
        for e in tar::Archive::new(gz).entries().unwrap() {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut s = String::new();
            e.read_to_string(&mut s).unwrap();
            match name.as_str() {
                "packet.json" => packet = serde_json::from_str(&s).unwrap(),
                "patch.diff" => patch = s,
                _ => {}
            }
        }
        (packet, patch)
    }

    /// Applies `patch` with real `git apply` to a fresh checkout of the packed revision and
    /// returns the changed file.
    fn git_apply(&self, patch: &str) -> String {
        let dir = self.root.join("applied");
        git(
            &self.root,
            &["clone", "-q", &self.repo.display().to_string(), "applied"],
        );
        git(&dir, &["checkout", "-q", &self.rev]);
        let p = self.root.join("artifact.patch");
        std::fs::write(&p, patch).unwrap();
        git(&dir, &["apply", "--check", &p.display().to_string()]);
        git(&dir, &["apply", &p.display().to_string()]);
        std::fs::read_to_string(dir.join(FILE)).unwrap()
    }
}

/// Runs one agent through submit -> worker (sandbox) -> fetch -> gate and checks each hop.
fn run_recipe(recipe: Recipe, standin: &StandIn, env: &Env) {
    let started = Instant::now();
    let (job, token) = env.submit();
    let template = env.root.join("home-template");
    for (path, content) in &recipe.home {
        let p = template.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content.replace("{port}", &standin.port.to_string())).unwrap();
    }
    let mut worker = cmd(&bin("airlock-worker"));
    worker
        .arg("run")
        .arg("--token-file")
        .arg(&token)
        .arg("--trusted-pub")
        .arg(env.home.join("trusted.pub"))
        .arg("--work-root")
        .arg(env.root.join("work"))
        .arg("--home-template")
        .arg(&template)
        .args(["--allow-local", &format!("127.0.0.1:{}", standin.port)])
        .args(["--pass-env", recipe.key_env])
        .env(recipe.key_env, KEY);
    for r in &recipe.readable {
        worker.arg("--readable").arg(r);
    }
    worker.arg("--").args(&recipe.command);
    let out = run(&mut worker);
    let worker_secs = started.elapsed().as_secs_f64();
    let requests = standin.requests();
    assert!(
        out.status.success(),
        "{}: worker failed\n{}\nstand-in saw: {requests:#?}",
        recipe.name,
        show(&out)
    );

    // The model server saw well-formed requests, the agent's streaming protocol, and the
    // agent carried out the edit (no tool error reported back to the model).
    let errors: Vec<&Value> = requests.iter().filter(|r| !r["error"].is_null()).collect();
    assert!(errors.is_empty(), "{}: {errors:#?}", recipe.name);
    let turns = standin.turns();
    let main: Vec<&str> = turns
        .iter()
        .map(String::as_str)
        .filter(|t| !matches!(*t, "side" | "count"))
        .collect();
    assert_eq!(main, recipe.turns, "{}: {requests:#?}", recipe.name);
    assert!(
        requests
            .iter()
            .filter(|r| r["turn"] != "side" && r["turn"] != "count")
            .all(|r| r["stream"] == true),
        "{}: expected streaming requests: {requests:#?}",
        recipe.name
    );

    // The packet: sandboxed, exited 0, and the model server reached through the operator's
    // grant (every admitted attempt is that grant; anything else the agent tried was refused).
    let (packet, patch) = env.artifact(&job);
    assert_eq!(packet["exit"]["code"], 0, "{}: {packet}", recipe.name);
    assert_eq!(packet["sandbox"], "namespaces+landlock+seccomp", "{packet}");
    assert_eq!(packet["partial"], false, "{packet}");
    let egress = packet["egress"].as_array().unwrap();
    let granted = format!("127.0.0.1:{}", standin.port);
    assert!(
        egress.iter().any(|a| a["destination"] == granted.as_str()),
        "{}: {packet}",
        recipe.name
    );
    for a in egress {
        if a["allowed"] == true {
            assert_eq!(a["destination"], granted.as_str(), "{a}");
            assert_eq!(a["reason"], "egress.local-grant", "{a}");
        }
    }

    // The artifact's patch is exactly the edit, and applies with real git.
    assert_eq!(env.git_apply(&patch), NEW, "{}: {patch}", recipe.name);
    assert!(
        patch.contains("+def sub(a, b):\n+    return a - b\n"),
        "{patch}"
    );
    let raw = gunzip(
        &env.home
            .join("store/drop")
            .join(&job)
            .join("artifact.tar.gz"),
    );
    assert!(
        !contains(&raw, KEY.as_bytes()),
        "the API key is in the artifact"
    );

    let out = run(env.airlock().arg("fetch").arg(&job));
    assert!(out.status.success(), "fetch: {}", show(&out));
    let out = run(env
        .airlock()
        .args(["gate", &job, "--json", "--repo"])
        .arg(&env.repo));
    assert_eq!(out.status.code(), Some(0), "gate: {}", show(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["decision"], "queue", "{report}");
    let refused: Vec<&str> = egress
        .iter()
        .filter(|a| a["allowed"] == false)
        .filter_map(|a| a["destination"].as_str())
        .collect();
    eprintln!(
        "{}: worker {worker_secs:.1} s (generator {} ms), {} model requests, refused egress {refused:?}, end to end {:.1} s",
        recipe.name,
        packet["timings"]["generator_ms"],
        requests.len(),
        started.elapsed().as_secs_f64()
    );
}

/// `sh -c` with the prompt read from the contract's `AIRLOCK_PROMPT_FILE`.
fn shell(line: &str) -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), line.into()]
}

/// The directory a virtualenv's interpreter comes from (`pyvenv.cfg`'s `home`, one level
/// up), when it is outside the sandbox's system roots and so needs its own `--readable`.
fn venv_base(venv: &Path) -> Option<PathBuf> {
    let cfg = std::fs::read_to_string(venv.join("pyvenv.cfg")).ok()?;
    let home = cfg.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "home").then(|| PathBuf::from(v.trim()))
    })?;
    let base = home.parent()?.to_owned();
    let system = ["/usr", "/bin", "/opt"];
    (!system.iter().any(|s| base.starts_with(s))).then_some(base)
}

/// Claude Code from npm: Anthropic Messages over SSE; Read, then Edit.
#[test]
fn claude_code_from_npm_edits_in_the_sandbox_and_the_gate_queues_it() {
    let npm = agents_dir().join("npm");
    let program = npm.join("bin/claude");
    if !installed("Claude Code", &program) {
        return;
    }
    let env = Env::new();
    let standin = StandIn::start("anthropic", &env.root);
    let settings = json!({
        "env": {
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:{port}",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1"
        },
        "permissions": {"allow": ["Read", "Edit"]}
    });
    let recipe = Recipe {
        name: "Claude Code",
        readable: vec![npm],
        home: vec![(".claude/settings.json", settings.to_string())],
        key_env: "ANTHROPIC_API_KEY",
        command: shell(
            r#"exec claude -p "$(cat "$AIRLOCK_PROMPT_FILE")" --permission-mode acceptEdits --max-turns 8"#,
        ),
        turns: &["read", "edit", "done"],
    };
    run_recipe(recipe, &standin, &env);
}

/// Codex CLI from npm: OpenAI Responses over SSE; `apply_patch` through `exec_command`.
#[test]
fn codex_cli_from_npm_edits_in_the_sandbox_and_the_gate_queues_it() {
    let npm = agents_dir().join("npm");
    let program = npm.join("bin/codex");
    if !installed("Codex CLI", &program) {
        return;
    }
    let env = Env::new();
    let standin = StandIn::start("responses", &env.root);
    let config = r#"model = "gpt-5-codex"
model_provider = "local"
check_for_update_on_startup = false

[model_providers.local]
name = "local model server"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"

[analytics]
enabled = false
"#;
    let recipe = Recipe {
        name: "Codex CLI",
        readable: vec![npm],
        home: vec![(".codex/config.toml", config.to_owned())],
        key_env: "OPENAI_API_KEY",
        command: shell(
            r#"exec codex exec --skip-git-repo-check --sandbox danger-full-access "$(cat "$AIRLOCK_PROMPT_FILE")""#,
        ),
        turns: &["edit", "done"],
    };
    run_recipe(recipe, &standin, &env);
}

/// aider from PyPI, in a virtualenv: OpenAI chat completions over SSE; a SEARCH/REPLACE block.
#[test]
fn aider_from_pypi_edits_in_the_sandbox_and_the_gate_queues_it() {
    let venv = agents_dir().join("aider");
    let program = venv.join("bin/aider");
    if !installed("aider", &program) {
        return;
    }
    let env = Env::new();
    let standin = StandIn::start("chat", &env.root);
    let conf = "model: openai/stand-in-model
openai-api-base: http://127.0.0.1:{port}/v1
edit-format: diff
git: false
yes-always: true
check-update: false
analytics-disable: true
show-model-warnings: false
pretty: false
chat-history-file: /dev/null
input-history-file: /dev/null
";
    let metadata = json!({"openai/stand-in-model": {
        "max_input_tokens": 128000, "max_output_tokens": 8192,
        "input_cost_per_token": 0, "output_cost_per_token": 0,
        "litellm_provider": "openai", "mode": "chat"
    }});
    let mut readable = vec![venv.clone()];
    readable.extend(venv_base(&venv));
    let recipe = Recipe {
        name: "aider",
        readable,
        home: vec![
            (".aider.conf.yml", conf.to_owned()),
            (".aider.model.metadata.json", metadata.to_string()),
        ],
        key_env: "OPENAI_API_KEY",
        command: vec![
            "aider".into(),
            "--message-file".into(),
            "{prompt_file}".into(),
        ],
        turns: &["edit"],
    };
    run_recipe(recipe, &standin, &env);
}

/// (api, path, headers, body, expected status, expected turn or the refusal's words).
type Case<'a> = (
    &'a str,
    &'a str,
    &'a [(&'a str, &'a str)],
    Value,
    u16,
    &'a str,
);

/// The stand-in is a strict model server: it refuses what the real API would refuse (and
/// logs why), so an agent that gets through it sent well-formed requests; a well-formed
/// request of each API is answered, streamed when asked.
#[test]
fn standin_refuses_malformed_requests_of_each_api() {
    use airlock_tests::s3::raw_request;
    let dir = tempfile::tempdir().unwrap();
    let bearer = format!("Bearer {KEY}");
    let anthropic = [("x-api-key", KEY), ("anthropic-version", "2023-06-01")];
    let openai = [("authorization", bearer.as_str())];
    let user = json!([{"role": "user", "content": "hi"}]);
    let input = json!([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]);
    let exec = json!([{"type": "function", "name": "exec_command", "parameters": {}}]);
    #[rustfmt::skip]
    let cases: &[Case] = &[
        ("anthropic", "/v1/messages", &anthropic, json!({"model": "m", "max_tokens": 9, "messages": user, "stream": true}), 200, "side"),
        ("anthropic", "/v1/messages", &anthropic, json!({"model": "m", "max_tokens": 9}), 400, "messages"),
        ("anthropic", "/v1/messages", &anthropic, json!({"model": "m", "messages": user}), 400, "max_tokens"),
        ("anthropic", "/v1/messages", &[("x-api-key", "sk-wrong"), ("anthropic-version", "2023-06-01")], json!({"model": "m", "max_tokens": 9, "messages": user}), 401, "x-api-key"),
        ("anthropic", "/v1/messages", &[("x-api-key", KEY)], json!({"model": "m", "max_tokens": 9, "messages": user}), 400, "anthropic-version"),
        ("responses", "/v1/responses", &openai, json!({"model": "m", "input": input, "tools": exec, "stream": true}), 200, "edit"),
        ("responses", "/v1/responses", &openai, json!({"model": "m", "input": input, "tools": exec}), 400, "stream"),
        ("responses", "/v1/responses", &openai, json!({"input": input, "stream": true}), 400, "model"),
        ("responses", "/v1/responses", &[], json!({"model": "m", "input": input, "stream": true}), 401, "Authorization"),
        ("chat", "/v1/chat/completions", &openai, json!({"model": "m", "messages": user, "stream": true}), 200, "edit"),
        ("chat", "/v1/chat/completions", &openai, json!({"model": "m", "messages": [{"role": "robot", "content": "x"}]}), 400, "role"),
        ("chat", "/v1/chat/completions", &openai, json!({"model": "", "messages": user}), 400, "model"),
        ("chat", "/v1/completions", &openai, json!({"model": "m", "messages": user}), 404, "unknown path"),
    ];
    for api in ["anthropic", "responses", "chat"] {
        let standin = StandIn::start(api, dir.path());
        let mine: Vec<_> = cases.iter().filter(|c| c.0 == api).collect();
        for (_, path, headers, body, status, what) in &mine {
            let url = format!("http://127.0.0.1:{}{path}", standin.port);
            let mut h = headers.to_vec();
            h.push(("content-type", "application/json"));
            let got = raw_request("POST", &url, &h, body.to_string().as_bytes());
            assert_eq!(got.status, *status, "{api} {body}: {}", got.body);
            if *status == 200 {
                assert!(
                    got.body.starts_with("event: ") || got.body.starts_with("data: "),
                    "{api}: not SSE: {}",
                    got.body
                );
            } else {
                assert!(got.body.contains(what), "{api} {body}: {}", got.body);
            }
        }
        let log = standin.requests();
        assert_eq!(log.len(), mine.len(), "{log:#?}");
        for ((_, _, _, _, status, what), entry) in mine.iter().zip(&log) {
            if *status == 200 {
                assert_eq!(entry["turn"], *what, "{entry}");
                assert!(entry["error"].is_null(), "{entry}");
            } else {
                assert!(entry["error"].as_str().unwrap().contains(what), "{entry}");
            }
        }
    }
}

/// Without `--readable`, a real virtualenv under a home the sandbox user cannot search (a
/// root worker's `/root/...`) is refused before anything starts, in one line that names the
/// path and the `--readable` that fixes it; nothing reaches the model server and nothing is
/// dropped (before: a landlock "Permission denied", or a run that failed inside). (A native
/// binary such as Claude Code's, or an npm package's own files, need no flag: the worker
/// grants the program and its package.)
#[test]
fn real_virtualenv_without_readable_is_refused_naming_the_flag() {
    let dir = agents_dir();
    let cases = [("aider", dir.join("aider/bin/aider"), "chat")];
    for (name, program, api) in cases {
        if !installed(name, &program) {
            continue;
        }
        let env = Env::new();
        let standin = StandIn::start(api, &env.root);
        let (job, token) = env.submit();
        let out = run(cmd(&bin("airlock-worker"))
            .arg("run")
            .arg("--token-file")
            .arg(&token)
            .arg("--trusted-pub")
            .arg(env.home.join("trusted.pub"))
            .arg("--work-root")
            .arg(env.root.join("work"))
            .args(["--allow-local", &format!("127.0.0.1:{}", standin.port)])
            .arg("--")
            .arg(&program)
            .arg("--version"));
        let err = String::from_utf8_lossy(&out.stderr);
        let searchable = !program
            .ancestors()
            .skip(1)
            .any(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 == 0));
        if searchable {
            // An install the sandbox user can reach anyway (not under a 0700 home): the
            // refusal cannot happen here, and the recipe test covers the run.
            eprintln!(
                "SKIP: {name}: {} is reachable without --readable",
                program.display()
            );
            continue;
        }
        assert_eq!(out.status.code(), Some(1), "{name}: {}", show(&out));
        assert!(
            err.contains("sandbox.preflight.not-readable"),
            "{name}: {err}"
        );
        assert!(
            err.contains(&format!("pass --readable {}", dir.display())),
            "{name}: {err}"
        );
        assert!(standin.requests().is_empty(), "{name}: the generator ran");
        eprintln!("{name} without --readable: {}", err.trim());
        assert!(
            !env.home.join("store/drop").join(&job).exists(),
            "{name}: something was dropped"
        );
    }
}
