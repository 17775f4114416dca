//! Real agent CLIs end to end: Claude Code, Codex CLI, Gemini CLI and opencode (npm) and aider
//! (PyPI), installed
//! the ordinary way OUTSIDE the system roots by `scripts/ci-install-agents.sh` (an npm prefix
//! and a virtualenv under `$AIRLOCK_AGENTS_DIR`, default `~/.airlock-agents`), each run by
//! `airlock-worker run` in the real sandbox with `--readable` (its install), `--home-template`
//! (its settings) and `--allow-local` (the model server), against a stand-in model server
//! on this host's loopback that speaks the agent's own API, streaming as the agent streams
//! (`tests/agents/standin.py`), and answers with one edit in the agent's own edit protocol.
//! Each runs through its wrapper in `examples/generators/` (no arguments: the prompt file and
//! `AIRLOCK_MODEL`), submitted with `--model M`: the stand-in must be asked for `M`, answers as
//! `M-20261203` (a dated snapshot), and the packet must report that name and the stand-in's
//! usage. The artifact's patch must apply with real `git apply`, `airlock fetch` must accept
//! it and `airlock gate` must queue it; a stand-in answering as another model family sends
//! the job to a human (`model-mismatch`).
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
pub(crate) const KEY: &str = "sk-standin-0123456789abcdef";

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
    airlock_tests::skip(&msg);
    false
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The stand-in model server (a child process), killed when dropped.
pub(crate) struct StandIn {
    child: Child,
    pub(crate) port: u16,
    log: PathBuf,
}

impl StandIn {
    fn start(api: &str, dir: &Path) -> StandIn {
        StandIn::answering(api, dir, "{model}-20261203")
    }

    /// A stand-in answering as `answer_as` (`{model}`: the model asked for).
    fn answering(api: &str, dir: &Path, answer_as: &str) -> StandIn {
        StandIn::editing(
            api,
            dir,
            answer_as,
            &json!({"file": FILE, "old": OLD, "new": NEW}),
        )
    }

    /// A stand-in making `edit` (`{"file", "old", "new"}`; an empty `old` creates the file).
    pub(crate) fn editing(api: &str, dir: &Path, answer_as: &str, edit: &Value) -> StandIn {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("agents/standin.py");
        let log = dir.join(format!("standin-{api}.log"));
        let edit = edit.to_string();
        let mut child = Command::new("python3")
            .arg(script)
            .args(["--api", api, "--key", KEY, "--edit", &edit, "--log"])
            .arg(&log)
            .args(["--answer-as", answer_as])
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
    pub(crate) fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The name the stand-in answered main requests with (from its own log).
    fn answered_as(&self) -> String {
        self.requests()
            .iter()
            .find(|r| r["turn"] != "side" && r["turn"] != "count")
            .and_then(|r| r["answered_as"].as_str().map(str::to_owned))
            .expect("the stand-in answered")
    }

    /// The `turn` of every request, in order.
    pub(crate) fn turns(&self) -> Vec<String> {
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
pub(crate) struct Recipe {
    pub(crate) name: &'static str,
    /// The API the stand-in speaks for it (`tests/agents/standin.py --api`).
    pub(crate) api: &'static str,
    /// `--readable` directories.
    pub(crate) readable: Vec<PathBuf>,
    /// Files of the `--home-template` directory (path, content); `{port}` is the stand-in's.
    pub(crate) home: Vec<(&'static str, String)>,
    /// The variable that carries the API key (`--pass-env`).
    pub(crate) key_env: &'static str,
    /// More variables passed with `--pass-env` (`{port}`: the stand-in's).
    pub(crate) env: Vec<(&'static str, &'static str)>,
    /// The wrapper in `examples/generators/` (the whole command after `--`).
    pub(crate) wrapper: &'static str,
    /// The stand-in's turns in order (what the model answered).
    turns: &'static [&'static str],
    /// Whether the agent's reported usage includes its side requests (opencode's wrapper counts
    /// every response, the session title's too).
    counts_side: bool,
    /// Whether every main request streams (aider's wrapper asks for whole answers).
    streams: bool,
}

/// The model every job asks for.
pub(crate) const MODEL: &str = "stand-in-model";

/// A wrapper of `examples/generators/`, absolute.
pub(crate) fn wrapper(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/generators")
        .join(name)
        .canonicalize()
        .unwrap()
        .display()
        .to_string()
}

/// A trusted home, a repository and a work root in one 0755 temp dir (a root worker runs the
/// generator as `nobody`).
pub(crate) struct Env {
    _tmp: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) repo: PathBuf,
    rev: String,
}

impl Env {
    pub(crate) fn new() -> Env {
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

    pub(crate) fn airlock(&self) -> Command {
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
            .args(["submit", "--json", "--model", MODEL, "--repo"])
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

/// The worker's command for `recipe` against the stand-in, with the recipe's home template
/// written: `airlock-worker run` in the sandbox, the stand-in's port the only local egress.
pub(super) fn worker_command(
    recipe: &Recipe,
    standin: &StandIn,
    env: &Env,
    token: &std::path::Path,
) -> std::process::Command {
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
        .arg(token)
        .arg("--trusted-pub")
        .arg(env.home.join("trusted.pub"))
        .arg("--work-root")
        .arg(env.root.join("work"))
        .arg("--home-template")
        .arg(&template)
        .args(["--allow-local", &format!("127.0.0.1:{}", standin.port)])
        .args(["--pass-env", recipe.key_env])
        .env(recipe.key_env, KEY);
    for (name, value) in &recipe.env {
        worker
            .args(["--pass-env", name])
            .env(name, value.replace("{port}", &standin.port.to_string()));
    }
    for r in &recipe.readable {
        worker.arg("--readable").arg(r);
    }
    worker.arg("--").arg(wrapper(recipe.wrapper));
    worker
}

/// Runs one agent through submit -> worker (sandbox) -> fetch -> gate and checks each hop;
/// returns the gate's report.
fn run_recipe(recipe: &Recipe, standin: &StandIn, env: &Env) -> Value {
    let started = Instant::now();
    let (job, token) = env.submit();
    let mut worker = worker_command(recipe, standin, env, &token);
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
        !recipe.streams
            || requests
                .iter()
                .filter(|r| r["turn"] != "side" && r["turn"] != "count")
                .all(|r| r["stream"] == true),
        "{}: expected streaming requests: {requests:#?}",
        recipe.name
    );
    // The job's model reached the agent: every main request asked for it.
    assert!(
        requests
            .iter()
            .filter(|r| r["turn"] != "side" && r["turn"] != "count")
            .all(|r| r["model"] == MODEL),
        "{}: the stand-in was asked for another model: {requests:#?}",
        recipe.name
    );

    // The packet: sandboxed, exited 0, and the model server reached through the operator's
    // grant (every admitted attempt is that grant; anything else the agent tried was refused).
    let (packet, patch) = env.artifact(&job);
    assert_eq!(packet["exit"]["code"], 0, "{}: {packet}", recipe.name);
    // What answered, as the stand-in said, and the stand-in's usage (321 in, 45 out per
    // main answer).
    let answered = standin.answered_as();
    let counted = turns
        .iter()
        .filter(|t| t.as_str() != "count" && (recipe.counts_side || t.as_str() != "side"))
        .count();
    let n = counted as u64;
    assert_eq!(packet["model_requested"], MODEL, "{packet}");
    assert_eq!(
        packet["model_reported"],
        answered.as_str(),
        "{}: {packet}",
        recipe.name
    );
    assert_eq!(
        packet["models"],
        json!([{"name": answered, "tokens_in": 321 * n, "tokens_out": 45 * n}]),
        "{}: {packet}",
        recipe.name
    );
    assert_eq!(
        (packet["tokens_in"].as_u64(), packet["tokens_out"].as_u64()),
        (Some(321 * n), Some(45 * n)),
        "{}: {packet}",
        recipe.name
    );
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
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "gate: {}",
        show(&out)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The gate shows both models and the tokens.
    assert_eq!(report["bom"]["model_requested"], MODEL, "{report}");
    assert_eq!(
        report["bom"]["model_reported"], packet["model_reported"],
        "{report}"
    );
    assert_eq!(
        report["bom"]["tokens"],
        json!([321 * n, 45 * n]),
        "{report}"
    );
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
    report
}

/// The gate queued the job: the model that answered is the one asked for.
fn queued(report: &Value) {
    assert_eq!(report["decision"], "queue", "{report}");
    assert!(
        !reason_codes(report).iter().any(|c| c.starts_with("model-")),
        "{report}"
    );
}

/// Claude Code from npm: Anthropic Messages over SSE; Read, then Edit.
pub(crate) fn claude_code() -> Option<Recipe> {
    let npm = agents_dir().join("npm");
    if !installed("Claude Code", &npm.join("bin/claude")) {
        return None;
    }
    let settings = json!({
        "env": {
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:{port}",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1"
        },
        "permissions": {"allow": ["Read", "Edit"]}
    });
    Some(Recipe {
        name: "Claude Code",
        api: "anthropic",
        readable: vec![npm],
        home: vec![(".claude/settings.json", settings.to_string())],
        key_env: "ANTHROPIC_API_KEY",
        env: vec![],
        wrapper: "claude-code.sh",
        turns: &["read", "edit", "done"],
        counts_side: false,
        streams: true,
    })
}

/// Runs the agent against a stand-in answering as the dated snapshot of the model asked
/// for: the gate queues it.
fn answered_as_asked(recipe: Option<Recipe>) {
    let Some(recipe) = recipe else {
        return;
    };
    let env = Env::new();
    let standin = StandIn::start(recipe.api, &env.root);
    queued(&run_recipe(&recipe, &standin, &env));
}

/// Runs the agent against a stand-in answering as another model family than the one asked
/// for: the packet says so and the gate sends the job to a human.
fn answered_by_another_family(recipe: Option<Recipe>) {
    let Some(recipe) = recipe else {
        return;
    };
    let env = Env::new();
    let standin = StandIn::answering(recipe.api, &env.root, "other-family-20261203");
    let report = run_recipe(&recipe, &standin, &env);
    assert_eq!(
        report["bom"]["model_reported"], "other-family-20261203",
        "{}: {report}",
        recipe.name
    );
    assert_eq!(report["decision"], "human", "{}: {report}", recipe.name);
    assert!(
        reason_codes(&report).contains(&"model-mismatch".to_owned()),
        "{}: {report}",
        recipe.name
    );
}

/// One agent's two runs: answered as asked (queued), answered by another family (human).
macro_rules! agent_tests {
    ($($recipe:ident => $as_asked:ident, $other_family:ident;)*) => {$(
        #[test]
        fn $as_asked() {
            answered_as_asked($recipe());
        }
        #[test]
        fn $other_family() {
            answered_by_another_family($recipe());
        }
    )*};
}

agent_tests! {
    claude_code => claude_code_from_npm_edits_in_the_sandbox_reports_what_answered_and_the_gate_queues_it,
        claude_code_answered_by_another_model_family_goes_to_a_human;
    codex_cli => codex_cli_from_npm_edits_in_the_sandbox_reports_what_answered_and_the_gate_queues_it,
        codex_cli_answered_by_another_model_family_goes_to_a_human;
    aider => aider_from_pypi_edits_in_the_sandbox_reports_what_answered_and_the_gate_queues_it,
        aider_answered_by_another_model_family_goes_to_a_human;
    gemini_cli => gemini_cli_from_npm_edits_in_the_sandbox_reports_what_answered_and_the_gate_queues_it,
        gemini_cli_answered_by_another_model_family_goes_to_a_human;
    opencode => opencode_from_npm_edits_in_the_sandbox_reports_what_answered_and_the_gate_queues_it,
        opencode_answered_by_another_model_family_goes_to_a_human;
}

/// Codex CLI from npm: OpenAI Responses over SSE; `apply_patch` through `exec_command`.
pub(crate) fn codex_cli() -> Option<Recipe> {
    let npm = agents_dir().join("npm");
    if !installed("Codex CLI", &npm.join("bin/codex")) {
        return None;
    }
    let config = r#"model_provider = "local"
check_for_update_on_startup = false

[model_providers.local]
name = "local model server"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"

[analytics]
enabled = false
"#;
    Some(Recipe {
        name: "Codex CLI",
        api: "responses",
        readable: vec![npm],
        home: vec![(".codex/config.toml", config.to_owned())],
        key_env: "OPENAI_API_KEY",
        env: vec![],
        wrapper: "codex.sh",
        turns: &["edit", "done"],
        counts_side: false,
        streams: true,
    })
}

/// aider from PyPI, in a virtualenv: OpenAI chat completions; a SEARCH/REPLACE block.
pub(crate) fn aider() -> Option<Recipe> {
    let venv = agents_dir().join("aider");
    if !installed("aider", &venv.join("bin/aider")) {
        return None;
    }
    let conf = "openai-api-base: http://127.0.0.1:{port}/v1
edit-format: diff
git: false
check-update: false
analytics-disable: true
show-model-warnings: false
chat-history-file: /dev/null
input-history-file: /dev/null
";
    let mut metadata = serde_json::Map::new();
    metadata.insert(
        format!("openai/{MODEL}"),
        json!({
            "max_input_tokens": 128000, "max_output_tokens": 8192,
            "input_cost_per_token": 0, "output_cost_per_token": 0,
            "litellm_provider": "openai", "mode": "chat"
        }),
    );
    let metadata = Value::Object(metadata);
    // One grant: the virtualenv brings its base interpreter (pyenv's, here) itself.
    Some(Recipe {
        name: "aider",
        api: "chat",
        readable: vec![venv],
        home: vec![
            (".aider.conf.yml", conf.to_owned()),
            (".aider.model.metadata.json", metadata.to_string()),
        ],
        key_env: "OPENAI_API_KEY",
        env: vec![],
        wrapper: "aider.sh",
        turns: &["edit"],
        counts_side: false,
        streams: false,
    })
}

/// Gemini CLI from npm: the Gemini API (`streamGenerateContent?alt=sse`); read_file, then
/// replace.
fn gemini_cli() -> Option<Recipe> {
    let npm = agents_dir().join("npm");
    if !installed("Gemini CLI", &npm.join("bin/gemini")) {
        return None;
    }
    let settings = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": true},
        "privacy": {"usageStatisticsEnabled": false}
    });
    Some(Recipe {
        name: "Gemini CLI",
        api: "gemini",
        readable: vec![npm],
        home: vec![(".gemini/settings.json", settings.to_string())],
        key_env: "GEMINI_API_KEY",
        env: vec![("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:{port}")],
        wrapper: "gemini.sh",
        turns: &["read", "edit", "done"],
        counts_side: false,
        streams: true,
    })
}

/// opencode from npm: an OpenAI-compatible provider (chat completions over SSE with tool
/// calls); read, then edit. opencode keeps only the name it asked for: the wrapper's plugin
/// notes what each response said answered, and its usage (the session title's included).
fn opencode() -> Option<Recipe> {
    let npm = agents_dir().join("npm");
    if !installed("opencode", &npm.join("bin/opencode")) {
        return None;
    }
    let mut models = serde_json::Map::new();
    models.insert(MODEL.to_owned(), json!({ "name": MODEL }));
    let config = json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "provider": {"local": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "local model server",
            "options": {"baseURL": "http://127.0.0.1:{port}/v1", "apiKey": "{env:OPENAI_API_KEY}"},
            "models": models
        }},
        "permission": {"edit": "allow", "bash": "allow"}
    });
    Some(Recipe {
        name: "opencode",
        api: "chat",
        readable: vec![npm],
        home: vec![(".config/opencode/opencode.json", config.to_string())],
        key_env: "OPENAI_API_KEY",
        env: vec![],
        wrapper: "opencode.sh",
        turns: &["read", "edit", "done"],
        counts_side: true,
        streams: true,
    })
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
    let google = [("x-goog-api-key", KEY)];
    let contents = json!([{"role": "user", "parts": [{"text": "hi"}]}]);
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
        ("gemini", "/v1beta/models/m:streamGenerateContent?alt=sse", &google, json!({"contents": contents}), 200, "side"),
        ("gemini", "/v1beta/models/m:generateContent", &[("x-goog-api-key", "wrong")], json!({"contents": contents}), 400, "API key"),
        ("gemini", "/v1beta/models/m:generateContent", &google, json!({"contents": []}), 400, "contents"),
        ("gemini", "/v1beta/models/m:streamGenerateContent", &google, json!({"contents": contents}), 400, "alt=sse"),
    ];
    for api in ["anthropic", "responses", "chat", "gemini"] {
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
            airlock_tests::skip(&format!(
                "{name}: {} is reachable without --readable (install it under a 0700 home)",
                program.display()
            ));
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

/// A Python outside the system roots: pyenv's (`$PYENV_ROOT` or `~/.pyenv`) or uv's.
fn python_outside_system_roots() -> Option<PathBuf> {
    let home = PathBuf::from(std::env::var_os("HOME")?);
    let mut roots = vec![
        home.join(".pyenv/versions"),
        home.join(".local/share/uv/python"),
    ];
    if let Some(r) = std::env::var_os("PYENV_ROOT") {
        roots.insert(0, PathBuf::from(r).join("versions"));
    }
    let mut found: Vec<PathBuf> = roots
        .iter()
        .filter_map(|r| std::fs::read_dir(r).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path().join("bin/python3")))
        .filter(|p| {
            Command::new(p)
                .args([
                    "-c",
                    "import sys, venv; sys.exit(sys.version_info < (3, 8))",
                ])
                .status()
                .is_ok_and(|s| s.success())
        })
        .collect();
    found.sort();
    found.pop()
}

/// A virtualenv made by `python3 -m venv` from a Python outside the system roots (pyenv's
/// under a root worker's 0700 home), granted with ONE `--readable` (the venv): the worker
/// makes the base interpreter its `pyvenv.cfg` names readable too, and the venv's Python runs
/// in the sandbox (before: refused, asking for a second `--readable`).
#[test]
fn a_virtualenv_from_a_python_outside_the_system_roots_runs_with_one_readable() {
    let Some(python) = python_outside_system_roots() else {
        let msg = "no Python outside the system roots (pyenv or uv) to make a virtualenv from";
        airlock_tests::skip(msg);
        return;
    };
    let env = Env::new();
    let venv = env.root.join("venv");
    let out = run(Command::new(&python)
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv));
    assert!(out.status.success(), "venv: {}", show(&out));
    let (job, token) = env.submit();
    let out = run(cmd(&bin("airlock-worker"))
        .arg("run")
        .arg("--token-file")
        .arg(&token)
        .arg("--trusted-pub")
        .arg(env.home.join("trusted.pub"))
        .arg("--work-root")
        .arg(env.root.join("work"))
        .arg("--readable")
        .arg(&venv)
        .arg("--")
        .arg(venv.join("bin/python"))
        .args([
            "-c",
            "import json, sys; open('src/venv.txt', 'w').write(sys.prefix + ' ' + sys.base_prefix + '\\n')",
        ]));
    assert!(
        out.status.success(),
        "{} ({}): {}",
        python.display(),
        venv.display(),
        show(&out)
    );
    let (packet, patch) = env.artifact(&job);
    assert_eq!(packet["sandbox"], "namespaces+landlock+seccomp", "{packet}");
    assert!(patch.contains(&format!("+{} ", venv.display())), "{patch}");
}
