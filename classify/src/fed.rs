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
//! `src/bin/x/main.rs`, both named.
//! Does not follow: a binary whose path only `Cargo.toml` gives (`[[bin]] path = …`), `cargo run
//! -p crate`, a file read through a variable, `go run` of a module path (`example.com/x/cmd/y`).

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
                let arg = words[i + 1..]
                    .iter()
                    .find(|a| a.starts_with('.') || a.ends_with(".go"));
                if let Some(a) = arg.and_then(|a| file_word(a)) {
                    if a.ends_with(".go") {
                        out.files.push(a);
                    } else if a.starts_with('.') {
                        let deep = a.ends_with("/...");
                        let dir = a.strip_suffix("/...").unwrap_or(&a).to_owned();
                        out.packages.push((dir, deep));
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
    let prefix = format!("{dir}/");
    let files = all
        .starting_with(&prefix)
        .into_iter()
        .filter(|p| {
            let rest = &p[prefix.len()..];
            (deep || !rest.contains('/')) && p.ends_with(".go") && !p.ends_with("_test.go")
        })
        .take(follow::MAX_MATCHES)
        .map(str::to_owned)
        .collect();
    Some((files, dir))
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
mod tests {
    use super::*;

    fn files(line: &str) -> Vec<String> {
        fed(line).files
    }

    #[test]
    fn files_handed_to_a_program_as_its_code_or_its_dependencies() {
        assert_eq!(files("pip install -r app/reqs.txt"), ["app/reqs.txt"]);
        assert_eq!(
            files("uv pip install -c constraints/ci.txt -e ."),
            ["constraints/ci.txt"]
        );
        assert_eq!(
            files("python -m pip install --requirement=deps/x.in"),
            ["deps/x.in"]
        );
        assert_eq!(
            files("psql -v ON_ERROR_STOP=1 -f db/seed.sql"),
            ["db/seed.sql"]
        );
        assert_eq!(files("just -f app/jf build"), ["app/jf"]);
        assert_eq!(files("cmake -P cmake/gen.cmake"), ["cmake/gen.cmake"]);
        assert_eq!(files("sh < app/install.txt"), ["app/install.txt"]);
        assert_eq!(files("python3 - <app/inline"), ["app/inline"]);
        assert_eq!(
            files(r#"bash -c "$(cat app/setup.txt)""#),
            ["app/setup.txt"]
        );
        assert_eq!(files("source <(cat app/env.txt)"), ["app/env.txt"]);
        assert_eq!(files("- run: source app/vars.txt"), ["app/vars.txt"]);
        assert_eq!(files("cd x && . ./env.sh.in"), ["./env.sh.in"]);
        assert_eq!(files("bash --rcfile ci/rc"), ["ci/rc"]);
        assert_eq!(files(r#"Rscript -e 'source("app/a.txt")'"#), ["app/a.txt"]);
        assert_eq!(
            files(r#"python -c "exec(open('app/b.txt').read())""#),
            ["app/b.txt"]
        );
        assert_eq!(files("ruby -r ./app/c.txt -e 1"), ["./app/c.txt"]);
        assert_eq!(files("xargs -a app/e.txt -n1 pip install"), ["app/e.txt"]);
        assert_eq!(
            files("bundle install --gemfile app/Gemfile.ci"),
            ["app/Gemfile.ci"]
        );
        assert_eq!(files("conda env create -f app/env.ci"), ["app/env.ci"]);
        assert_eq!(files("export BASH_ENV=app/f.txt"), ["app/f.txt"]);
        assert_eq!(
            files("terraform apply -var-file=app/vars.txt"),
            ["app/vars.txt"]
        );
    }

    #[test]
    fn data_read_by_other_commands_is_not_fed() {
        assert!(files("gcc -c src/a.c -o a.o").is_empty());
        assert!(files("rm -f out.txt").is_empty());
        assert!(files("tar -xf x.tar").is_empty());
        assert!(files("wc -l < data/x.txt").is_empty());
        assert!(files("echo $(cat VERSION)").is_empty());
        assert!(files("cat <<EOF").is_empty());
        assert!(files("git commit -F msg.txt").is_empty());
        assert!(files("pytest --junit-xml=out.xml --log-file=test.log").is_empty());
    }

    #[test]
    fn a_deno_configuration_is_read_for_its_tasks_only() {
        let conf = r#"{"exports": "./mod.ts", "tasks": {"gen": "deno run -A tools/gen.ts"}}"#;
        assert!(deno_tasks(conf).contains("tools/gen.ts"));
        assert!(!deno_tasks(conf).contains("mod.ts"));
        assert!(deno_tasks("// comment\n{\"tasks\": {\"a\": \"sh x.sh\"}}").contains("x.sh"));
        // What does not parse names everything it says.
        let odd = "{\"tasks\": {\"a\": \"sh x.sh\"} /* c */}";
        assert_eq!(deno_tasks(odd), odd);
    }

    #[test]
    fn cargo_run_names_the_binary_or_example_by_cargos_layout() {
        assert_eq!(
            files("cargo run --release --bin gen -- --out x"),
            ["src/bin/gen.rs", "src/bin/gen/main.rs"]
        );
        assert_eq!(
            files("cargo run --example=demo"),
            ["examples/demo.rs", "examples/demo/main.rs"]
        );
        assert!(files("cargo build --bin gen").is_empty());
        assert!(files("cargo run --bin ../x").is_empty());
    }

    #[test]
    fn go_run_names_a_file_or_a_package_directory() {
        assert_eq!(
            fed("go run ./cmd/gen").packages,
            [("./cmd/gen".to_owned(), false)]
        );
        assert_eq!(
            fed("go run -tags x ./tools/...").packages,
            [("./tools".to_owned(), true)]
        );
        assert_eq!(fed("go run gen/main.go -out x").files, ["gen/main.go"]);
        assert!(fed("go run golang.org/x/tools/cmd/stringer")
            .packages
            .is_empty());
        let mut tree = crate::tree::MemTree::new();
        for p in [
            "cmd/gen/main.go",
            "cmd/gen/main_test.go",
            "cmd/gen/sub/x.go",
            "cmd/genx/y.go",
        ] {
            tree.add(p, false, b"package main\n");
        }
        let all = Paths::new(&tree, &[]);
        let files = |dir, deep| package_files(dir, deep, "", &all).map(|f| f.0);
        assert_eq!(
            files("./cmd/gen", false),
            Some(vec!["cmd/gen/main.go".to_owned()])
        );
        assert_eq!(
            files("cmd/gen", true),
            Some(vec![
                "cmd/gen/main.go".to_owned(),
                "cmd/gen/sub/x.go".to_owned()
            ])
        );
        assert_eq!(files("./cmd/none", false), None);
    }
}
