//! What a command line of an entry point hands to a program as its code or as its list of
//! dependencies, whatever the file's name says: `pip install -r app/reqs.txt` (the packages
//! installed), `psql -f db/seed.sql`, `just -f app/jf`, `awk -f x.awk`, `cmake -P x.cmake`, `sh <
//! app/install.txt`, `python - < x.txt`, `bash -c "$(cat app/setup.txt)"`, `eval "$(cat x)"`,
//! `source <(cat x)`, `source x.txt` and `. x.txt` (the shell runs the text), `bash --rcfile x`,
//! the tasks of a `deno.json` ([`deno_tasks`]), and the Go packages `go run ./cmd/gen` or `go run
//! ./tools/...` builds and runs (every `.go` file of the package, not its tests). `reach.rs`
//! resolves these against the tree like any other name and marks what it finds as run by the entry
//! point.
//!
//! Guards against: a hostile change to a file an entry point of the tree already runs or installs
//! from under a name that is no script (`.txt`, `.sql`, no extension), which the name rules and the
//! reach layer's script test leave queued.
//! Pure functions of one line: nothing is evaluated; a word is a program only by its name.
//! `cargo run --bin x` (or `--example x`) runs the target by Cargo's layout, `src/bin/x.rs` or
//! `src/bin/x/main.rs`, both named; `cargo run -p x` the package in a directory named `x` (its
//! binaries and build script, [`crate_files`]). Single-file launchers run the file they are given
//! (`java Gen.java`, `swift gen.swift`, `kotlin gen.main.kts`, `dotnet run gen.cs`, …), and
//! `ansible-playbook` every playbook it is given, whatever the name, with its inventory and its
//! `-e @vars` files; `curl -K x` reads its options (`--output` among them) from `x`.
//! `go run example.com/x/cmd/y` builds the package of the tree whose directory is the longest
//! ending of that path (`cmd/y`), or its vendored copy.
//! Does not follow: a binary whose path only `Cargo.toml` gives (`[[bin]] path = …`), a package
//! whose directory has another name, a file read through a variable.

use crate::entry::normalise;
use crate::follow;
use crate::tree::Paths;

/// Programs whose input (`prog < file`) is code or statements they run.
const INTERPRETERS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "python",
    "python3",
    "node",
    "ruby",
    "perl",
    "php",
    "pwsh",
    "lua",
    "rscript",
    "psql",
    "mysql",
    "mariadb",
    "sqlite3",
    "duckdb",
    "tclsh",
    "osascript",
    "deno",
    "bun",
    "julia",
    "elixir",
    "expect",
    "gdb",
    "lldb",
];

/// Programs whose `-f`/`--file` (or the option named after them) names what they run.
const FILE_PROGRAMS: &[&str] = &[
    "make", "gmake", "bmake", "just", "rake", "task", "awk", "gawk", "mawk", "sed", "jq", "psql",
    "mysql", "expect",
];

/// Programs whose `-f` names configuration they apply or load (an environment, manifests,
/// values).
const CONFIG_PROGRAMS: &[&str] = &["conda", "mamba", "micromamba", "kubectl", "helm", "xargs"];

/// Single-file launchers: the program, and the ending of the file it compiles and runs when
/// given one (`java Gen.java`: the JDK's source launcher; `dotnet run gen.cs`: a file-based
/// app). The same files named by a build file are mostly compiled product sources, so only a
/// command line hands them over.
const LAUNCHERS: &[(&str, &str)] = &[
    ("java", ".java"),
    ("jbang", ".java"),
    ("swift", ".swift"),
    ("kotlin", ".kts"),
    ("kotlinc", ".kts"),
    ("groovy", ".groovy"),
    ("scala", ".sc"),
    ("scala", ".scala"),
    ("scala-cli", ".sc"),
    ("scala-cli", ".scala"),
    ("amm", ".sc"),
    ("jshell", ".jsh"),
    ("dotnet", ".cs"),
    ("dotnet", ".fsx"),
    ("dotnet-script", ".csx"),
];

/// Options of `ansible-playbook` whose value is no playbook (hosts, tags, users, numbers).
const ANSIBLE_VALUES: &[&str] = &[
    "-l",
    "--limit",
    "-t",
    "--tags",
    "--skip-tags",
    "-u",
    "--user",
    "-f",
    "--forks",
    "-c",
    "--connection",
    "-T",
    "--timeout",
    "--become-user",
    "--become-method",
    "--start-at-task",
    "-M",
    "--module-path",
];

/// Environment variables naming a file a shell or interpreter runs at start.
const STARTUP_VARIABLES: &[&str] = &["BASH_ENV", "ENV", "PYTHONSTARTUP"];

/// Options of [`FILE_PROGRAMS`] (and of the shells) that take the file they run.
const FILE_OPTIONS: &[&str] = &[
    "-f",
    "--file",
    "--justfile",
    "--makefile",
    "--rakefile",
    "--taskfile",
    "--from-file",
    "--rcfile",
    "--init-file",
];

/// What one line hands to programs: files (as written) and Go packages (`(dir, recursive)`).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Fed {
    pub(crate) files: Vec<String>,
    pub(crate) packages: Vec<(String, bool)>,
    /// Cargo packages `cargo run -p` builds and runs, by name.
    pub(crate) crates: Vec<String>,
    /// Go packages `go run` builds, by import path (`example.com/x/cmd/gen`, `(path, recursive)`).
    pub(crate) modules: Vec<(String, bool)>,
}

/// The base name of a command word, lower-case, without a `.exe` (`/usr/bin/Python3.exe` is
/// `python3`).
fn program(word: &str) -> String {
    let name = word.rsplit(['/', '\\']).next().unwrap_or(word);
    let name = name.to_ascii_lowercase();
    name.strip_suffix(".exe").unwrap_or(&name).to_owned()
}

/// A word as a file name: quotes and trailing shell punctuation off, nothing for an option,
/// a variable alone or a here-document.
fn file_word(word: &str) -> Option<String> {
    let w = word.trim_matches(|c| matches!(c, '"' | '\'' | '`' | ';' | ')'));
    let ok = !w.is_empty() && !w.starts_with(['-', '<', '$', '&', '|']) && w != "-";
    ok.then(|| w.to_owned())
}

/// [`Fed`] of `line`.
pub(crate) fn fed(line: &str) -> Fed {
    let mut out = Fed::default();
    // Command substitutions whose output is run: `$(cat x)` and `<(cat x)` on a line that
    // evaluates them (`eval "$(cat x)"`, `bash -c "$(cat x)"`, `source <(cat x)`).
    let runs_output = [
        "eval", "source", ". <(", "-c \"$(", "-c $(", "-e \"$(", "-e $(",
    ]
    .iter()
    .any(|k| line.contains(k));
    if runs_output {
        for open in ["$(cat ", "<(cat ", "`cat "] {
            for (i, _) in line.match_indices(open) {
                let rest = &line[i + open.len()..];
                if let Some(f) = rest.split_whitespace().next().and_then(file_word) {
                    out.files.push(f);
                }
            }
        }
    }
    // Code named inside a string a program evaluates: `Rscript -e 'source("x.R")'`,
    // `python -c "exec(open('x').read())"`, `load("x")`.
    for open in ["source(", "exec(open(", "load("] {
        for (i, _) in line.match_indices(open) {
            let rest = line[i + open.len()..].trim_start_matches(['"', '\'']);
            let name = rest.split(['"', '\'', ')']).next().unwrap_or_default();
            out.files.extend(file_word(name));
        }
    }
    for segment in line.split([';', '&', '|', '(', '{']) {
        command(segment, &mut out);
    }
    out
}

/// [`fed`] of one command (no separator inside).
fn command(segment: &str, out: &mut Fed) {
    let words: Vec<&str> = segment.split_whitespace().collect();
    // Where the command starts: after a YAML list marker or key (`- run:`) and assignments.
    let start = words
        .iter()
        .position(|w| !(*w == "-" || w.ends_with(':') || (w.contains('=') && !w.starts_with('-'))))
        .unwrap_or(words.len());
    // `BASH_ENV=x bash …`, `export PYTHONSTARTUP=x`: the file runs at the program's start.
    for w in &words {
        if let Some((key, value)) = w.split_once('=') {
            if STARTUP_VARIABLES.contains(&key) {
                out.files.extend(file_word(value));
            }
        }
    }
    for (i, w) in words.iter().enumerate().skip(start) {
        let before: Vec<String> = words[start..i].iter().map(|w| program(w)).collect();
        let next = || words.get(i + 1).and_then(|n| file_word(n));
        let after_program = |list: &[&str]| before.iter().any(|p| list.contains(&p.as_str()));
        let (flag, inline) = w.split_once('=').map_or((*w, None), |(f, v)| (f, Some(v)));
        let value = || inline.and_then(file_word).or_else(next);
        match flag {
            // A requirements or constraints file: the packages installed.
            "--requirement" | "--requirements" | "--constraint" | "--constraints" => {
                out.files.extend(value());
            }
            "-r" | "-c"
                if before
                    .iter()
                    .any(|p| matches!(p.as_str(), "install" | "pip-sync" | "sync")) =>
            {
                out.files.extend(value());
            }
            // A module an interpreter loads before the program (`ruby -r ./x`, `node --import`).
            "-r" | "--require" | "--import" | "--loader"
                if after_program(&["ruby", "node", "bun", "irb", "rspec", "mocha"]) =>
            {
                out.files.extend(value());
            }
            "-f" | "--file" | "-a" | "--arg-file" if after_program(CONFIG_PROGRAMS) => {
                out.files.extend(value());
            }
            // A long option naming configuration a tool reads (`--gemfile`, `--userconfig`,
            // `-var-file`, `--settings`, `-K`/`--config` of curl).
            f if f.starts_with('-')
                && f.len() > 3
                && ["file", "config", "settings", "rc"]
                    .iter()
                    .any(|k| f.to_ascii_lowercase().ends_with(k))
                && ![
                    "out", "log", "pid", "lock", "report", "cache", "dump", "junit", "cov",
                ]
                .iter()
                .any(|k| f.to_ascii_lowercase().contains(k)) =>
            {
                out.files.extend(value());
            }
            // `cargo run -p gen`: the package `gen` is built and its binary run.
            "-p" | "--package"
                if after_program(&["cargo"]) && before.iter().any(|p| p == "run") =>
            {
                if let Some(name) = value().filter(|n| !n.contains('/')) {
                    out.crates.push(name);
                }
            }
            // `curl -K x`: options, `--output` and `--upload-file` among them, read from `x`.
            "-K" if after_program(&["curl"]) => out.files.extend(value()),
            // `ansible-playbook -i inv -e @vars.yml play`: the inventory and variables it
            // deploys with.
            "-i" | "--inventory" | "--inventory-file" if after_program(&["ansible-playbook"]) => {
                out.files.extend(value());
            }
            "-e" | "--extra-vars" if after_program(&["ansible-playbook"]) => {
                let v = inline.or_else(|| words.get(i + 1).copied());
                let at = v.and_then(|v| v.trim_matches(['"', '\'']).strip_prefix('@'));
                out.files.extend(at.and_then(file_word));
            }
            // Every other word after `ansible-playbook` that is no option nor an option's value
            // is a playbook it runs, whatever its name.
            _ if playbook(&words[start..], i - start) => out.files.extend(file_word(w)),
            // A single-file launcher given a file of its language (`java Gen.java`).
            _ if LAUNCHERS.iter().any(|(prog, ending)| {
                w.ends_with(ending)
                    && before.iter().any(|p| p == prog)
                    && (*prog != "dotnet" || before.iter().any(|p| p == "run" || p == "fsi"))
            }) =>
            {
                out.files.extend(file_word(w));
            }
            // `-P script.cmake`: CMake runs the script.
            "-P" if after_program(&["cmake"]) => out.files.extend(value()),
            f if FILE_OPTIONS.contains(&f)
                && (after_program(FILE_PROGRAMS)
                    || (f != "-f" && after_program(&["bash", "sh", "zsh"]))) =>
            {
                out.files.extend(value());
            }
            // The shell runs a sourced file whatever its name.
            "source" | "." if i == start => out.files.extend(next()),
            // `interpreter < file`: the input is the program.
            "<" if after_program(INTERPRETERS) => out.files.extend(next()),
            _ if w.starts_with('<') && !w.starts_with("<<") && after_program(INTERPRETERS) => {
                out.files.extend(file_word(&w[1..]));
            }
            "run" if i > start && program(words[i - 1]) == "go" => {
                // The first argument that is a path (flags and their values come before).
                // A module path (`example.com/x/cmd/gen`) has a dot in its first element.
                let module = |a: &str| {
                    let first = a.split('/').next().unwrap_or_default();
                    a.contains('/') && first.contains('.') && !a.contains('@')
                };
                let arg = words[i + 1..].iter().find(|a| {
                    !a.starts_with('-') && (a.starts_with('.') || a.ends_with(".go") || module(a))
                });
                if let Some(a) = arg.and_then(|a| file_word(a)) {
                    let deep = a.ends_with("/...");
                    let dir = a.strip_suffix("/...").unwrap_or(&a).to_owned();
                    if a.ends_with(".go") {
                        out.files.push(a);
                    } else if a.starts_with('.') {
                        out.packages.push((dir, deep));
                    } else {
                        out.modules.push((dir, deep));
                    }
                }
            }
            // `cargo run --bin gen` builds and runs the crate's binary target `gen`, by Cargo's
            // layout (`src/bin/gen.rs` or `src/bin/gen/main.rs`); `--example` likewise.
            "--bin" | "--example"
                if after_program(&["cargo"]) && before.iter().any(|p| p == "run") =>
            {
                let dir = if flag == "--bin" {
                    "src/bin"
                } else {
                    "examples"
                };
                if let Some(name) = value().filter(|n| !n.contains('/')) {
                    out.files.push(format!("{dir}/{name}.rs"));
                    out.files.push(format!("{dir}/{name}/main.rs"));
                }
            }
            _ => {}
        }
    }
}

/// Whether `words[i]` (`words[0]` the program) is a playbook `ansible-playbook` is given: no
/// option, and not the value of one ([`ANSIBLE_VALUES`], and those this module reads as files).
fn playbook(words: &[&str], i: usize) -> bool {
    if i == 0 || program(words[0]) != "ansible-playbook" {
        return false;
    }
    let prev = words[i - 1];
    let takes_value = |o: &str| {
        ANSIBLE_VALUES.contains(&o)
            || matches!(
                o,
                "-i" | "--inventory" | "--inventory-file" | "-e" | "--extra-vars"
            )
            || o.starts_with("--") && o.to_ascii_lowercase().ends_with("file")
    };
    let a_value = prev.starts_with('-') && !prev.contains('=') && takes_value(prev);
    !words[i].starts_with('-') && !a_value
}

/// The files of the Go packages and Cargo packages `fed` builds and runs (`fed` from a line of
/// a file in `base`), each with its directory to watch; `take` is asked once per package.
pub(crate) fn built(
    fed: &Fed,
    base: &str,
    all: &Paths<'_>,
    mut take: impl FnMut() -> bool,
) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    for (dir, deep) in &fed.packages {
        if take() {
            out.extend(package_files(dir, *deep, base, all));
        }
    }
    for name in &fed.crates {
        if take() {
            out.extend(crate_files(name, all));
        }
    }
    // An import path is the module's path, then the package's directory in the module: the
    // longest ending of it that is a directory of Go files of the tree (`cmd/gen` of
    // `example.com/x/cmd/gen`, `vendor/…` whole). The module's own path is not read from its
    // `go.mod`: an ending of another module's path that the tree also holds is raised too.
    for (path, deep) in &fed.modules {
        if take() {
            let parts: Vec<&str> = path.split('/').collect();
            out.extend((0..parts.len()).find_map(|k| {
                let found = ["vendor".to_owned(), parts[k..].join("/")];
                let dir = if k == 0 {
                    found.join("/")
                } else {
                    found[1].clone()
                };
                package_files(&dir, *deep, "", all).filter(|(f, _)| !f.is_empty())
            }));
        }
    }
    out
}

/// The files of the Go package `dir` (as written on a line of a file in `base`) that `go run`
/// builds, at most [`follow::MAX_MATCHES`]: its `.go` files other than tests, and with `deep`
/// those of every package below it; with the directory to watch (`None`: no such directory).
pub(crate) fn package_files(
    dir: &str,
    deep: bool,
    base: &str,
    all: &Paths<'_>,
) -> Option<(Vec<String>, String)> {
    let dir = [format!("{base}/{dir}"), dir.to_owned()]
        .iter()
        .filter_map(|d| normalise(d))
        .find(|d| all.has_under(d))?;
    let files = files_under(&dir, all, |rest| {
        (deep || !rest.contains('/')) && rest.ends_with(".go") && !rest.ends_with("_test.go")
    });
    Some((files, dir))
}

/// The files below `dir` whose path inside it `keep` accepts, at most [`follow::MAX_MATCHES`].
fn files_under(dir: &str, all: &Paths<'_>, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let prefix = format!("{dir}/");
    all.starting_with(&prefix)
        .into_iter()
        .filter(|p| keep(&p[prefix.len()..]))
        .take(follow::MAX_MATCHES)
        .map(str::to_owned)
        .collect()
}

/// The files `cargo run -p name` builds and runs, at most [`follow::MAX_MATCHES`]: in each
/// directory named `name` (`-` and `_` alike, as Cargo's package names are usually spelled)
/// that holds a `Cargo.toml`, the package's binaries (`src/main.rs`, `src/bin/…`) and build
/// script; with the directories to watch. The package's other modules are not named, as for
/// `--bin`: what the binary imports is product source unless something else reaches it.
pub(crate) fn crate_files(name: &str, all: &Paths<'_>) -> Vec<(Vec<String>, String)> {
    let wanted = name.replace('_', "-");
    all.all()
        .into_iter()
        .filter_map(|p| p.strip_suffix("/Cargo.toml"))
        .filter(|dir| dir.rsplit('/').next().map(|d| d.replace('_', "-")) == Some(wanted.clone()))
        .map(|dir| {
            let files = files_under(dir, all, |rest| {
                rest == "src/main.rs"
                    || rest == "build.rs"
                    || rest.starts_with("src/bin/") && rest.ends_with(".rs")
            });
            (files, dir.to_owned())
        })
        .take(follow::MAX_MATCHES)
        .collect()
}

/// The tasks of a Deno configuration (`deno task build` runs them), as text: what else it says
/// (the import map, `exports`, compiler, lint and test options) names the product, not what
/// runs. The whole text when it is not a JSON object once whole-line `//` comments are left out
/// (a `deno.jsonc` with comments after values, a file cut at the read cap): what cannot be read
/// names everything it says, never nothing.
pub(crate) fn deno_tasks(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect();
    let json: Option<serde_json::Map<String, serde_json::Value>> =
        serde_json::from_str(&lines.join("\n")).ok();
    match json {
        Some(mut j) => j
            .remove("tasks")
            .and_then(|t| serde_json::to_string_pretty(&t).ok())
            .unwrap_or_default(),
        None => text.to_owned(),
    }
}

#[cfg(test)]
#[path = "fed_tests.rs"]
mod tests;
