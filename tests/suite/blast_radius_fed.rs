//! Blast radius, after the link fix's red team: a hostile worker edits a file whose name is no
//! script (`.txt`, `.sql`, no extension) but that an entry point of the packed revision hands a
//! program as its code or its dependency list (`pip install -r`, `psql -f`, `sh <`,
//! `bash -c "$(cat …)"`, `source`), a Go package a workflow `go run`s, a Deno task's script, a
//! configuration a tool executes from its working directory, and a file a link spelled in
//! another case opens. The real gate must send each to a human (`classify/src/fed.rs`,
//! `links.rs`, the name table).
// Test helpers outside #[test] functions: a panic with the value is the wanted failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::blast_radius::{evasion, file, gate_patch, gated_to_a_human};
use super::hostile_worker::World;
use airlock_tests::*;

const FLOW: &str = "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: pip install -r app/reqs.txt\n      - run: psql -v ON_ERROR_STOP=1 -f db/seed.sql\n      - run: bash -c \"$(cat app/setup.txt)\"\n      - run: go run ./app/cmd/gen\n      - run: deno task gen\n";

fn fed_tree() -> Vec<(&'static str, &'static str)> {
    vec![
        (".github/workflows/ci.yml", FLOW),
        ("app/reqs.txt", "requests==2.32.3\n"),
        ("db/seed.sql", "select 1;\n"),
        ("app/setup.txt", "echo setup\n"),
        ("go.mod", "module example.com/x\n"),
        ("app/cmd/gen/main.go", "package main\n\nfunc main() {}\n"),
        (
            "deno.json",
            "{\"tasks\": {\"gen\": \"deno run -A app/gen.ts\"}}\n",
        ),
        ("app/gen.ts", "console.log(1);\n"),
    ]
}

#[test]
fn a_file_a_workflow_hands_a_program_as_code_or_dependencies_goes_to_a_human() {
    let via = Some(".github/workflows/ci.yml");
    for target in [
        "app/reqs.txt",
        "db/seed.sql",
        "app/setup.txt",
        "app/cmd/gen/main.go",
    ] {
        evasion(&fed_tree(), target, "ci", "ci.reached", via);
    }
    // A Deno task: reached through the `deno.json` the workflow's `deno task` reads.
    evasion(
        &fed_tree(),
        "app/gen.ts",
        "build",
        "build.reached",
        Some("deno.json"),
    );
}

#[test]
fn a_file_added_to_a_go_package_a_workflow_runs_goes_to_a_human() {
    let w = World::new();
    let bytes: Vec<(&str, &[u8])> = fed_tree().iter().map(|(p, c)| (*p, c.as_bytes())).collect();
    write_files(&w.repo, &bytes);
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-qm", "tree"]);
    let patch = "diff --git a/app/cmd/gen/init.go b/app/cmd/gen/init.go\nnew file mode 100644\n--- /dev/null\n+++ b/app/cmd/gen/init.go\n@@ -0,0 +1,3 @@\n+package main\n+\n+func init() {}\n";
    let (code, r) = gate_patch(&w, patch);
    assert_eq!(
        (code, r["decision"].as_str()),
        (Some(3), Some("human")),
        "{r:#}"
    );
    let f = file(&r, "app/cmd/gen/init.go");
    assert_eq!(
        (f["bucket"].as_str(), f["class_rule"].as_str()),
        (Some("ci"), Some("ci.reached")),
        "{r:#}"
    );
}

#[test]
fn configuration_a_tool_executes_from_its_working_directory_goes_to_a_human() {
    for (path, rule) in [
        ("docs/jupyter_lite_config.py", "build.python-cwd-config"),
        ("src/Makevars", "build.r-package"),
        ("renv/activate.R", "build.r-package"),
        ("config.nims", "build.other-system"),
    ] {
        evasion(&[(path, "x = 1\n")], path, "build", rule, None);
    }
}

#[test]
fn an_edit_through_a_link_spelled_in_another_case_goes_to_a_human() {
    let w = World::new();
    let conf = "import pytest\n\n\ndef pytest_configure(config):\n    pass\n";
    write_files(&w.repo, &[("pyconf/settings.py", conf.as_bytes())]);
    // On macOS and Windows this link opens `pyconf/settings.py`.
    std::os::unix::fs::symlink("PyConf/Settings.py", w.repo.join("conftest.py")).unwrap();
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-qm", "link"]);
    let class = ("build", "build.python");
    gated_to_a_human(&w, "pyconf/settings.py", conf, "# pwned", class);
}

/// Commits a tree whose `Makefile` and `.circleci` are links (`Makefile -> cfg/Makefile.real`,
/// `.circleci -> config/circle`), with `filler` more files, appends a line to each file those entry
/// points run through the real gate, and checks it goes to a human as reached.
fn an_edit_to_what_a_linked_entry_point_runs(filler: usize) {
    let w = World::new();
    let make = "all:\n\tpython3 lib/gen.py\n";
    let flow = "version: 2.1\njobs:\n  t:\n    docker:\n      - image: cimg/base:stable\n    steps:\n      - run: python3 lib/check.py\n";
    let py = "print('ok')\n";
    let mut files: Vec<(String, &[u8])> = vec![
        ("cfg/Makefile.real".into(), make.as_bytes()),
        ("config/circle/config.yml".into(), flow.as_bytes()),
        ("lib/gen.py".into(), py.as_bytes()),
        ("lib/check.py".into(), py.as_bytes()),
    ];
    files.extend((0..filler).map(|i| (format!("data/f{i}.txt"), &b"x\n"[..])));
    let refs: Vec<(&str, &[u8])> = files.iter().map(|(p, c)| (p.as_str(), *c)).collect();
    write_files(&w.repo, &refs);
    std::os::unix::fs::symlink("cfg/Makefile.real", w.repo.join("Makefile")).unwrap();
    std::os::unix::fs::symlink("config/circle", w.repo.join(".circleci")).unwrap();
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-qm", "linked entry points"]);
    for (target, class, entry) in [
        (
            "lib/gen.py",
            ("build", "build.reached"),
            "cfg/Makefile.real",
        ),
        (
            "lib/check.py",
            ("ci", "ci.reached"),
            "config/circle/config.yml",
        ),
    ] {
        let r = gated_to_a_human(&w, target, py, "import os", class);
        let named = r["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|x| x["detail"].as_str())
            .any(|d| d.contains(target) && d.contains(entry));
        assert!(named, "no reason names {entry}: {r:#}");
    }
    if filler >= 1000 {
        let indexes = std::fs::read_dir(w.home.join("cache").join("gate"))
            .unwrap()
            .count();
        assert!(indexes > 0, "no gate index was written");
    }
}

#[test]
fn an_edit_to_what_an_entry_point_under_a_links_name_runs_goes_to_a_human() {
    an_edit_to_what_a_linked_entry_point_runs(0);
}

#[test]
fn an_edit_to_what_a_linked_entry_point_runs_goes_to_a_human_through_the_gate_index() {
    an_edit_to_what_a_linked_entry_point_runs(1_100);
}

const LAUNCH_FLOW: &str = "on: push\njobs:\n  deploy:\n    runs-on: ubuntu-latest\n    steps:\n      - run: cargo run -p gen-docs --release\n      - run: java -cp lib tools/Gen.java\n      - run: ansible-playbook -i deploy/web.txt --limit web deploy/site.txt\n      - run: curl -sS -K config/curlrc https://example.com/status\n      - run: go run -tags ci example.com/acme/tool/cmd/seed\n";

/// What a workflow runs through a launcher, a package name or import path, a playbook given by
/// position and a curl configuration: none of these names says "script", each runs with CI's secrets.
#[test]
fn a_file_a_workflow_launches_by_package_position_or_option_goes_to_a_human() {
    let tree = [
        (".github/workflows/deploy.yml", LAUNCH_FLOW),
        ("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n"),
        (
            "crates/gen_docs/Cargo.toml",
            "[package]\nname = \"gen-docs\"\nversion = \"0.1.0\"\n",
        ),
        ("crates/gen_docs/src/main.rs", "fn main() {}\n"),
        (
            "tools/Gen.java",
            "class Gen { public static void main(String[] a) {} }\n",
        ),
        ("deploy/web.txt", "[web]\nweb1.example.com\n"),
        ("deploy/site.txt", "- hosts: web\n  tasks: []\n"),
        ("config/curlrc", "silent\n"),
        ("go.mod", "module example.com/acme/tool\n"),
        ("cmd/seed/main.go", "package main\n\nfunc main() {}\n"),
    ];
    let via = Some(".github/workflows/deploy.yml");
    for target in [
        "crates/gen_docs/src/main.rs",
        "tools/Gen.java",
        "deploy/web.txt",
        "deploy/site.txt",
        "config/curlrc",
        "cmd/seed/main.go",
    ] {
        evasion(&tree, target, "ci", "ci.reached", via);
    }
}
