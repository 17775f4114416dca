//! Review jobs run by real agent CLIs (Claude Code, Codex CLI, aider) in the sandbox against
//! the stand-in model server, which answers with comments: the docs/GENERATORS.md review
//! recipe. The model writes `.airlock/comments.jsonl` in the agent's own edit protocol; the
//! worker collects it (never diffs it), and the gate queues the review with its comments.
// Test helpers outside #[test] functions: a panic with the value is the wanted failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Value};

use airlock_tests::*;

use super::agents::{aider, claude_code, codex_cli, worker_command, Env, Recipe, StandIn, MODEL};

/// The review prompt of the recipe (docs/GENERATORS.md, "Review jobs").
const PROMPT: &str = "Review src/calc.py. Do not change any file. Write each finding as one \
JSON object per line to .airlock/comments.jsonl: {\"path\", \"line\" (or \"start_line\" and \
\"end_line\"), \"severity\" (note, warning or error), \"body\", optional \"suggestion\"}.\n";

/// What the stand-in's model finds.
fn comments() -> String {
    [
        json!({"path": "src/calc.py", "line": 1, "severity": "warning",
               "body": "`add` has no type hints; `add('1', 2)` raises at run time."}),
        json!({"path": "src/calc.py", "start_line": 1, "end_line": 2, "severity": "note",
               "body": "Add a docstring.",
               "suggestion": "def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n    return a + b\n"}),
    ]
    .iter()
    .map(Value::to_string)
    .collect::<Vec<_>>()
    .join("\n")
        + "\n"
}

/// submit --kind review -> worker (the agent, sandboxed) -> gate; checks each hop.
fn review_with(recipe: Option<Recipe>) {
    let Some(recipe) = recipe else {
        return;
    };
    let env = Env::new();
    let edit = json!({"file": ".airlock/comments.jsonl", "old": "", "new": comments()});
    let standin = StandIn::editing(recipe.api, &env.root, "{model}-20261203", &edit);
    let prompt = env.root.join("prompt.txt");
    std::fs::write(&prompt, PROMPT).unwrap();
    let token = env.root.join("job.token");
    let out = run(env
        .airlock()
        .args([
            "submit", "--json", "--kind", "review", "--model", MODEL, "--repo",
        ])
        .arg(&env.repo)
        .arg("--prompt-file")
        .arg(&prompt)
        .arg("--token-out")
        .arg(&token));
    assert!(out.status.success(), "submit: {}", show(&out));
    let job = serde_json::from_slice::<Value>(&out.stdout).unwrap()["job"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut worker = worker_command(&recipe, &standin, &env, &token);
    let out = run(&mut worker);
    let requests = standin.requests();
    assert!(
        out.status.success(),
        "{}: worker failed\n{}\nstand-in saw: {requests:#?}",
        recipe.name,
        show(&out)
    );
    let errors: Vec<&Value> = requests.iter().filter(|r| !r["error"].is_null()).collect();
    assert!(errors.is_empty(), "{}: {errors:#?}", recipe.name);
    assert!(
        standin.turns().iter().any(|t| t == "edit"),
        "{}: the model never wrote its comments: {requests:#?}",
        recipe.name
    );
    let out = run(env
        .airlock()
        .args(["gate", &job, "--json", "--repo"])
        .arg(&env.repo));
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: gate --json: {e}: {}", recipe.name, show(&out)));
    assert_eq!(out.status.code(), Some(0), "{}: {report:#}", recipe.name);
    assert_eq!(
        reason_codes(&report),
        vec!["review-comments"],
        "{}: {report:#}",
        recipe.name
    );
    assert_eq!(
        report["stats"]["files_changed"], 0,
        "{}: {report:#}",
        recipe.name
    );
    let got = report["comments"].as_array().unwrap();
    assert_eq!(got.len(), 2, "{}: {report:#}", recipe.name);
    assert_eq!(got[0]["severity"], "warning");
    assert_eq!(
        (got[1]["start_line"].as_u64(), got[1]["end_line"].as_u64()),
        (Some(1), Some(2))
    );
    assert!(got[1]["suggestion"]
        .as_str()
        .unwrap()
        .contains("Return a + b."));
    eprintln!(
        "{}: review job with {} comments queued",
        recipe.name,
        got.len()
    );
}

#[test]
fn claude_code_reviews_with_comments_and_the_gate_queues_them() {
    review_with(claude_code());
}

#[test]
fn codex_cli_reviews_with_comments_and_the_gate_queues_them() {
    review_with(codex_cli());
}

#[test]
fn aider_reviews_with_comments_and_the_gate_queues_them() {
    review_with(aider());
}
