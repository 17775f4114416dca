//! Programs a package ships: a file in a tooling directory (`script/mojo`, `bin/sidekiq`) that a
//! package manifest of the packed tree declares as one of the programs it installs
//! (`EXE_FILES` of a `Makefile.PL`, a gemspec's `executables` in its `bindir`, `bin` of a
//! `package.json` or a `composer.json`) is the product, which users run, not the developers'
//! tooling: `src.declared-program`. Reachability still raises it (a workflow that runs
//! `bin/sidekiq` makes it `ci`).
//!
//! **Commands a repository that builds nothing puts on `PATH`**: a file directly in the root
//! `bin/` of a packed tree whose root holds no project file (no `Makefile`, `package.json`,
//! `go.mod`, `Gemfile`, compose file, …: the list the example-collection rule reads) is
//! `src.path-command`. Such a repository (a dotfiles repository, a collection of shell tools) has
//! no build for `bin/` to be the tooling of: its `bin/` is what it installs, the product
//! (thoughtbot's, holman's and paulirish's `bin/git-*`). Reachability still raises one a setup
//! script, CI or an editor runs.
//!
//! Guards against a hostile change using the rule to quiet a script: the manifests are read from
//! the packed tree (the trusted base), never from the change, so a change that adds a script and
//! declares it in the same change keeps the script's tooling bucket (and the manifest it edits is
//! `deps` or `build` itself); only the tooling-directory and script rules of `build` are
//! lowered, never a CI, agent, governance, dependency or deployment rule, nor a git hook or a
//! build file by name. Cost: for each changed path in those rules, the manifests of its
//! ancestor directories (a few binary searches and reads, at most [`MAX_MANIFESTS`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::collection::is_project;
use crate::tree::{Listing, Tree, TreeFile};

/// Rule id of a program a package manifest declares.
pub(crate) const DECLARED_PROGRAM_RULE: &str = "src.declared-program";

/// Rule id of a command in the root `bin/` of a repository whose root is no project.
pub(crate) const PATH_COMMAND_RULE: &str = "src.path-command";

/// The `build` rules a declared program may be lowered from: scripts and files in tooling
/// directories, scripts at the root.
pub(crate) const LOWERED_RULES: &[&str] = &[
    "build.tooling-dir",
    "build.tooling-script",
    "build.shell-script",
    "build.root-script",
    "build.root-executable",
];

/// Most manifests read for one change.
pub(crate) const MAX_MANIFESTS: usize = 64;

/// Most files of one directory looked at for a gemspec.
const MAX_CHILDREN: usize = 1024;

/// The paths among `candidates` that are the product's programs, with the rule that says so: a
/// package manifest of `tree` declares them ([`DECLARED_PROGRAM_RULE`]), or they are the root
/// `bin/` of a tree whose root is no project ([`PATH_COMMAND_RULE`]).
pub(crate) fn programs_of(candidates: &[&str], tree: &dyn Tree) -> BTreeMap<String, &'static str> {
    let mut out: BTreeMap<String, &'static str> = declared(candidates, tree)
        .into_iter()
        .map(|p| (p, DECLARED_PROGRAM_RULE))
        .collect();
    let in_bin = |c: &&&str| c.strip_prefix("bin/").is_some_and(|n| !n.contains('/'));
    if candidates.iter().any(|c| in_bin(&c)) && !root_builds(tree.files()) {
        for c in candidates.iter().filter(in_bin) {
            out.entry((*c).to_owned()).or_insert(PATH_COMMAND_RULE);
        }
    }
    out
}

/// Names of build-system, package and deploy files beyond the example collections' project
/// files that make a root a project.
const ROOT_BUILD_NAMES: &[&str] = &[
    "Makefile.PL",
    "Build.PL",
    "cpanfile",
    "dist.ini",
    "meson.build",
    "WORKSPACE",
    "WORKSPACE.bazel",
    "MODULE.bazel",
    "BUILD",
    "BUILD.bazel",
    "BUCK",
    "build.sbt",
    "dune-project",
    "build.zig",
    "Rakefile",
    "Project.toml",
    "DESCRIPTION",
    "flake.nix",
    "default.nix",
    "setup.cfg",
    "configure",
    "configure.ac",
    "SConstruct",
    "build.xml",
    "GNUmakefile",
    "makefile",
    "justfile",
    "Justfile",
    "Taskfile.yml",
    "rebar.config",
    "stack.yaml",
    "Podfile",
    "Cartfile",
    "galaxy.yml",
    "pants.toml",
    "deno.jsonc",
    "conanfile.txt",
    "conanfile.py",
    "vcpkg.json",
    "xmake.lua",
    "premake5.lua",
    "shard.yml",
    "Pulumi.yaml",
    "cdk.json",
    "serverless.yml",
    "fly.toml",
    "Vagrantfile",
    "Procfile",
];

/// Suffixes of project files named for their project (`x.gemspec`, `x.sln`, `x.cabal`).
const ROOT_BUILD_SUFFIXES: &[&str] = &[
    ".gemspec",
    ".podspec",
    ".cabal",
    ".sln",
    ".csproj",
    ".fsproj",
    ".vbproj",
    ".nimble",
    ".opam",
    ".rockspec",
    ".gpr",
    ".tf",
];

/// Whether the root of `listing` is a project: it holds an example collection's project file or
/// a build-system, package or deploy file ([`ROOT_BUILD_NAMES`], [`ROOT_BUILD_SUFFIXES`]).
fn root_builds(listing: &Listing) -> bool {
    is_project(listing, "")
        || children(listing, "").iter().any(|name| {
            ROOT_BUILD_NAMES.contains(name) || ROOT_BUILD_SUFFIXES.iter().any(|s| name.ends_with(s))
        })
}

/// The paths among `candidates` that a package manifest of `tree` declares as installed
/// programs.
fn declared(candidates: &[&str], tree: &dyn Tree) -> BTreeSet<String> {
    let listing = tree.files();
    let mut dirs: BTreeSet<&str> = BTreeSet::new();
    for c in candidates {
        let mut d = *c;
        while let Some((up, _)) = d.rsplit_once('/') {
            dirs.insert(up);
            d = up;
        }
        dirs.insert("");
    }
    let mut manifests: Vec<(String, &str)> = Vec::new();
    for d in dirs {
        let prefix = if d.is_empty() {
            String::new()
        } else {
            format!("{d}/")
        };
        for name in ["Makefile.PL", "package.json", "composer.json"] {
            let p = format!("{prefix}{name}");
            if listing.get(&p).is_some() {
                manifests.push((p, d));
            }
        }
        for p in children(listing, &prefix) {
            if p.ends_with(".gemspec") {
                manifests.push((p.to_owned(), d));
            }
        }
    }
    manifests.truncate(MAX_MANIFESTS);
    let paths: Vec<&str> = manifests.iter().map(|(p, _)| p.as_str()).collect();
    let mut out = BTreeSet::new();
    for ((path, dir), text) in manifests.iter().zip(tree.read(&paths)) {
        let Some(text) = text else { continue };
        let text = String::from_utf8_lossy(&text);
        for program in programs(path, &text) {
            let program = program.trim_start_matches("./");
            let full = if dir.is_empty() {
                program.to_owned()
            } else {
                format!("{dir}/{program}")
            };
            if candidates.contains(&full.as_str()) {
                out.insert(full);
            }
        }
    }
    out
}

/// The files directly in the directory `prefix` (`""` for the root, else ending in `/`), at
/// most [`MAX_CHILDREN`] entries looked at.
fn children<'a>(listing: &'a Listing, prefix: &str) -> Vec<&'a str> {
    let files: &[TreeFile] = listing.starting_with(prefix);
    let mut out = Vec::new();
    let mut i = 0;
    for _ in 0..MAX_CHILDREN {
        let Some(f) = files.get(i) else { break };
        let rest = &f.path[prefix.len()..];
        match rest.split_once('/') {
            None => {
                out.push(f.path.as_str());
                i += 1;
            }
            Some((sub, _)) => {
                i += listing
                    .starting_with(&format!("{prefix}{sub}/"))
                    .len()
                    .max(1);
            }
        }
    }
    out
}

/// The programs a manifest at `path` declares, relative to its directory.
fn programs(path: &str, text: &str) -> Vec<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    if name == "Makefile.PL" {
        return after_key(text, "EXE_FILES");
    }
    if name.ends_with(".gemspec") {
        let bindir = text
            .lines()
            .find(|l| l.contains(".bindir"))
            .and_then(|l| quoted(l).into_iter().next())
            .unwrap_or_else(|| "bin".to_owned());
        return after_key(text, ".executables")
            .into_iter()
            .map(|e| format!("{bindir}/{e}"))
            .collect();
    }
    // package.json, composer.json: `"bin": "x"`, `"bin": {"name": "x"}` or `"bin": ["x"]`.
    let Ok(json) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    match json.get("bin") {
        Some(serde_json::Value::String(s)) => vec![s.clone()],
        Some(serde_json::Value::Object(m)) => m
            .values()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// The literal names of the list after `key` (`EXE_FILES => ['a', 'b']`,
/// `gem.executables = ["a", "b"]`, `%w[a b]`), up to its closing bracket.
fn after_key(text: &str, key: &str) -> Vec<String> {
    let Some(at) = text.find(key) else {
        return Vec::new();
    };
    let rest = &text[at + key.len()..];
    // The list opens on the key's own line (a computed list names nothing here).
    let line_end = rest.find('\n').unwrap_or(rest.len());
    let Some(open) = rest[..line_end].find(['[', '(']) else {
        return Vec::new();
    };
    let list = &rest[open + 1..];
    let Some(close) = list.find([']', ')']) else {
        return Vec::new();
    };
    let list = &list[..close];
    if rest[..open].contains("%w") {
        return list.split_whitespace().map(str::to_owned).collect();
    }
    quoted(list)
}

/// The single- or double-quoted strings of `text`.
pub(crate) fn quoted(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(['"', '\'']) {
        let q = &rest[start..start + 1];
        let after = &rest[start + 1..];
        let Some(end) = after.find(q) else { break };
        out.push(after[..end].to_owned());
        rest = &after[end + 1..];
    }
    out
}

#[cfg(test)]
#[path = "product_tests.rs"]
mod tests;
