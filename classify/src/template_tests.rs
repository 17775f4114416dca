//! Generator templates a line enters or renders (`template.rs`, the quiet rules in `lib.rs`).

use super::*;
use crate::reach::{Change, MemTree};
use crate::{classify_change, Classified};

fn tree() -> MemTree {
    let mut t = MemTree::new();
    t.add(
        ".github/workflows/autoupdate.yml",
        false,
        b"jobs:\n  u:\n    steps:\n      - run: pre-commit autoupdate\n        working-directory: \"{{cookiecutter.project_slug}}\"\n",
    );
    for p in [
        "{{cookiecutter.project_slug}}/.pre-commit-config.yaml",
        "{{cookiecutter.project_slug}}/Procfile",
        "{{cookiecutter.project_slug}}/compose/production/nginx/Dockerfile",
        "{{cookiecutter.project_slug}}/bin/post_compile",
    ] {
        t.add(p, false, b"x\n");
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
fn a_template_a_workflow_enters_raises_only_the_files_directly_in_it() {
    let got = edit(
        &tree(),
        &[
            "{{cookiecutter.project_slug}}/Procfile",
            "{{cookiecutter.project_slug}}/compose/production/nginx/Dockerfile",
            "{{cookiecutter.project_slug}}/bin/post_compile",
        ],
    );
    assert_eq!(got[0].class.rule, "ci.reached");
    assert_eq!(got[1].class.rule, "other.generator-template");
    assert_eq!(got[2].class.rule, "other.generator-template");
}

#[test]
fn a_template_ci_renders_and_runs_is_raised_whole() {
    let mut t = tree();
    t.add(
        ".github/workflows/ci.yml",
        false,
        b"jobs:\n  t:\n    steps:\n      - run: sh tests/test_docker.sh\n",
    );
    t.add(
        "tests/test_docker.sh",
        false,
        b"cd .cache/docker\nuv run cookiecutter ../../ --no-input\ndocker compose run django pytest\n",
    );
    let got = edit(
        &t,
        &["{{cookiecutter.project_slug}}/compose/production/nginx/Dockerfile"],
    );
    assert_eq!(got[0].class.rule, "ci.reached");
    assert!(got[0]
        .because
        .as_deref()
        .is_some_and(|b| b.starts_with("rendered by tests/test_docker.sh")));
}

#[test]
fn generator_lines_and_template_roots_are_read_narrowly() {
    assert!(renders_templates("uv run cookiecutter ../../ --no-input"));
    assert!(renders_templates("copier copy . /tmp/out"));
    assert!(!renders_templates("pip install cookiecutter-django-docs"));
    assert!(!renders_templates("copier --help"));
    assert!(!renders_templates("pip install cookiecutter"));
    assert_eq!(
        template_roots(&[
            "a/{{cookiecutter.x}}/b/c",
            "a/{{cookiecutter.x}}/d",
            "{{ y }}/z",
            "{{not-a-dir}}"
        ]),
        ["a/{{cookiecutter.x}}", "{{ y }}"]
    );
}
