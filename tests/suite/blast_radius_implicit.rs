//! Blast radius, round thirteen: a hostile worker edits a file that no entry point names but
//! that a tool runs by convention, under a name that used to read as a test, a page or source:
//! the Nim compiler's `config.nims` in a test directory, Julia Documenter's `docs/make.jl`,
//! an Emacs Lisp project's `Eldev`, a run-control script (`sketchybarrc`), Debian's unprefixed
//! `docs` list. The real gate must send each to a human in its class (the name table).
// Test helpers outside #[test] functions: a panic with the value is the wanted failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::blast_radius::evasion;

#[test]
fn a_file_a_tool_runs_by_convention_goes_to_a_human() {
    for (target, old, bucket, rule) in [
        (
            "tests/config.nims",
            "switch(\"path\", \"$projectDir/../src\")\n",
            "build",
            "build.other-system",
        ),
        (
            "docs/make.jl",
            "using Documenter\nmakedocs(sitename = \"X\")\n",
            "build",
            "build.docs-build",
        ),
        (
            "src/top/Eldev",
            "; -*- mode: emacs-lisp; -*-\n(eldev-use-package-archive 'melpa)\n",
            "build",
            "build.other-system",
        ),
        (
            "config/bar/sketchybarrc",
            "#!/bin/bash\nsketchybar --bar height=32\n",
            "build",
            "build.rc-script",
        ),
        (
            "platform/unix/debian/docs",
            "readme.md\n",
            "build",
            "build.packaging",
        ),
    ] {
        evasion(
            &[(target, old), ("README.md", "# x\n")],
            target,
            bucket,
            rule,
            None,
        );
    }
}
