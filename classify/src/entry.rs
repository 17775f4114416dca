//! Entry points and what their text names: which files of a tree are CI or build definitions,
//! and the path-like tokens of a definition's text (with the directories it `cd`s into), for
//! `reach.rs` to resolve against the tree.
//!
//! Guards against: hostile definition text. Everything here is a pure function of a path or
//! of at most `reach::MAX_READ_BYTES` of text: nothing is evaluated (no variable, glob or
//! command substitution), a variable prefix is dropped rather than expanded, at most
//! [`MAX_DIRS`] directories are kept per text, and a `package.json` is parsed by serde_json
//! with its recursion limit (on any error the text is read whole, as any other entry point).

use crate::follow;
use crate::Bucket;

/// Most directories one file's `cd`s are followed into.
pub const MAX_DIRS: usize = 16;

/// The kind of entry point `path` is, if any: CI definitions are `ci`; agent instructions,
/// dev-container and editor task files `agent`; build definitions `build`.
pub fn entry_point(path: &str) -> Option<Bucket> {
    let p = path.to_ascii_lowercase();
    let (dirs, name) = match p.rsplit_once('/') {
        Some((dirs, name)) => (dirs.split('/').collect::<Vec<_>>(), name),
        None => (Vec::new(), p.as_str()),
    };
    let yaml = name.ends_with(".yml") || name.ends_with(".yaml");
    // A directory at the root or below any directory: its components appear, in order,
    // among the path's directories.
    let under = |dir: &[&str]| dirs.windows(dir.len()).any(|w| w == dir);
    let ci = (under(&[".github", "workflows"]) && yaml)
        || matches!(name, "action.yml" | "action.yaml")
        || name.ends_with("gitlab-ci.yml")
        || name.ends_with("gitlab-ci.yaml")
        || (under(&[".gitlab", "ci"]) && yaml)
        || under(&[".circleci"])
        || (name.starts_with("azure-pipelines") && yaml)
        || under(&[".azure-pipelines"])
        || p.starts_with("eng/pipelines/")
        || name.starts_with("jenkinsfile")
        || name.ends_with(".jenkinsfile")
        || matches!(
            name,
            ".drone.yml"
                | ".drone.yaml"
                | ".travis.yml"
                | "bitbucket-pipelines.yml"
                | ".woodpecker.yml"
                | ".cirrus.yml"
                | "appveyor.yml"
                | ".appveyor.yml"
                | "cloudbuild.yaml"
                | "cloudbuild.yml"
                | "buildspec.yml"
                | "codefresh.yml"
        )
        || (under(&[".buildkite"]) && yaml)
        || (under(&[".woodpecker"]) && yaml)
        || (under(&[".gitea", "workflows"]) && yaml)
        || (under(&[".forgejo", "workflows"]) && yaml)
        || (under(&[".tekton"]) && yaml)
        || matches!(name, ".zuul.yaml" | ".zuul.yml" | "zuul.yaml")
        || under(&["zuul.d"])
        || p.starts_with("ci/")
        || under(&[".ci"])
        || under(&["scripts", "ci"])
        || under(&[".github", "scripts"]);
    if ci {
        return Some(Bucket::Ci);
    }
    // Editors, dev containers and agents: what they read or run when a folder is opened.
    let agent = matches!(
        name,
        "claude.md"
            | "claude.local.md"
            | "agents.md"
            | "agent.md"
            | "gemini.md"
            | ".cursorrules"
            | ".windsurfrules"
            | ".clinerules"
            | "copilot-instructions.md"
            | ".devcontainer.json"
    ) || name.ends_with(".instructions.md")
        || (under(&[".devcontainer"]) && name == "devcontainer.json")
        || (under(&[".vscode"]) && name == "tasks.json")
        || agent_rules_dir(&dirs);
    if agent {
        return Some(Bucket::Agent);
    }
    let fixture = [
        "node_modules",
        "vendor",
        "testdata",
        "fixtures",
        "__fixtures__",
    ]
    .iter()
    .any(|d| dirs.contains(d));
    let build = !fixture
        && (matches!(
            name,
            "makefile"
                | "gnumakefile"
                | "justfile"
                | ".justfile"
                | "package.json"
                | "deno.json"
                | "deno.jsonc"
                | "tox.ini"
                | "tox.toml"
                | "noxfile.py"
                | "pyproject.toml"
                | "taskfile.yml"
                | "taskfile.yaml"
                | "rakefile"
                | ".pre-commit-config.yaml"
                | "lefthook.yml"
                | "makefile.am"
                | "mkdocs.yml"
                | "mkdocs.yaml"
                | ".bazelrc"
        ) || name.ends_with(".mk")
            || under(&[".husky"])
            || build_file(name));
    build.then_some(Bucket::Build)
}

/// Build files that name what the build runs: Cargo's `build =`, Dockerfiles, CMake, Meson,
/// Gradle, Bazel, `setup.py`, MSBuild projects (`<Exec Command=…>`) (read as `follow.rs` says
/// for each).
fn build_file(name: &str) -> bool {
    matches!(
        name,
        "cargo.toml"
            | "cmakelists.txt"
            | "meson.build"
            | "build.gradle"
            | "build.gradle.kts"
            | "settings.gradle"
            | "settings.gradle.kts"
            | "build"
            | "build.bazel"
            | "setup.py"
            | "conf.py"
    ) || name.ends_with(".cmake")
        || [".csproj", ".fsproj", ".vbproj", ".props", ".targets"]
            .iter()
            .any(|e| name.ends_with(e))
        || name.ends_with(".bzl")
        || name == "dockerfile"
        || name.starts_with("dockerfile.")
        || name.ends_with(".dockerfile")
        || name.starts_with("containerfile")
}

/// A rule or guideline directory of an agent (`.cursor/rules/`, `.windsurf/rules/`,
/// `.trae/rules/`, `.tabnine/guidelines/`, any `.<tool>/rules/`): agents read what is there,
/// and what it names.
pub(crate) fn agent_rules_dir(dirs: &[&str]) -> bool {
    dirs.windows(2).any(|w| {
        w[0].len() > 1
            && w[0].starts_with('.')
            && w[0] != ".github"
            && matches!(w[1], "rules" | "guidelines")
    })
}

/// A VS Code `tasks.json` runs a task when the folder opens only with `"runOn": "folderOpen"`;
/// its other tasks run when someone asks, like a Makefile's.
pub(crate) fn editor_task_bucket(from: &str, text: &[u8], bucket: Bucket) -> Bucket {
    let tasks = from.to_ascii_lowercase().ends_with("tasks.json");
    let on_open = text.windows(10).any(|w| w == b"folderOpen");
    if tasks && !on_open {
        Bucket::Build
    } else {
        bucket
    }
}

/// Whether a file named `path` can run when named by an entry point: executable files and
/// scripts by extension, not data or prose (`LICENSE` named by a release workflow is packed, not
/// run).
pub(crate) fn runnable(path: &str, executable: bool) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let Some((_, ext)) = name.rsplit_once('.') else {
        return executable;
    };
    executable
        || matches!(
            ext,
            "sh" | "bash"
                | "zsh"
                | "ksh"
                | "fish"
                | "ps1"
                | "psm1"
                | "bat"
                | "cmd"
                | "py"
                | "rb"
                | "pl"
                | "pm"
                | "js"
                | "mjs"
                | "cjs"
                | "ts"
                | "mts"
                | "cts"
                | "php"
                | "lua"
                | "groovy"
                | "star"
                | "mk"
                | "make"
                | "tcl"
                | "r"
                | "go"
                | "awk"
                | "sed"
                | "jq"
                // Scripts of interpreters a command line runs them with (`elixir x.exs`,
                // `kotlin x.main.kts`, `julia`, `dotnet script`/`fsi`, `bats`, `psql -f`, `bb`,
                // `escript`, `raku`, `cscript`, `coffee`); not notebooks, components (`.tsx`)
                // or Nix files, which CI and documentation builds name as tests, pages and
                // build inputs far more often than they run them.
                | "exs"
                | "kts"
                | "jl"
                | "csx"
                | "fsx"
                | "bats"
                | "sql"
                | "bb"
                | "clj"
                | "escript"
                | "raku"
                | "vbs"
                | "coffee"
        )
}

/// Whether a YAML/JSON file named on `line` is read as CI configuration there (an include, a
/// template, a local action, a config or values file, an action input naming a file such as
/// `file: ./test/go/Dockerfile` or `dockerfile:`).
pub(crate) fn config_reference(line: &str) -> bool {
    [
        "include", "local:", "template", "extends", "uses:", "run:", "-f ", "--file", "--config",
        "--env", "-env ", "env-file", "--values", "config:", "playbook",
    ]
    .iter()
    .any(|k| line.contains(k))
        || input_names_a_file(line)
}

/// Whether `path` is configuration a tool reads (YAML, JSON, TOML, INI, XML, properties, an
/// environment file, a Dockerfile): counted only where a line passes it as configuration.
pub(crate) fn config_data(path: &str) -> bool {
    let p = path.to_ascii_lowercase();
    [
        ".yml",
        ".yaml",
        ".json",
        ".jsonnet",
        ".libsonnet",
        ".xml",
        ".toml",
        ".ini",
        ".cfg",
        ".conf",
        ".properties",
        ".env",
    ]
    .iter()
    .any(|e| p.ends_with(e))
        || dockerfile(path)
}

/// Whether `line` is an action input naming the file from which the action reads which
/// toolchain to install (`go-version-file:`, `node-version-file:`, `python-version-file:`):
/// CI reads that file, whatever its type (`.nvmrc`, `go.mod`, `.tool-versions`).
pub(crate) fn version_file_input(line: &str) -> bool {
    input_names_a_file(line)
        && line
            .trim_start()
            .trim_start_matches("- ")
            .split_once(':')
            .is_some_and(|(k, _)| k.trim().to_ascii_lowercase().ends_with("version-file"))
}

/// Whether `line` is a YAML key whose name ends in `file` (`file: ./test/go/Dockerfile`,
/// `dockerfile:`, `config-file:`): an action input passing a file, not a `file://` URL inside a
/// command.
fn input_names_a_file(line: &str) -> bool {
    let l = line.trim_start().trim_start_matches("- ").trim_start();
    l.split_once(':').is_some_and(|(key, rest)| {
        !key.is_empty()
            && !key.contains([' ', '/', '"', '\''])
            && key.to_ascii_lowercase().ends_with("file")
            && !rest.starts_with("//")
    })
}

/// Normalises `a/./b/../c` to `a/c`; `None` when it leaves the repository.
pub(crate) fn normalise(path: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            c => out.push(c),
        }
    }
    (!out.is_empty()).then(|| out.join("/"))
}

/// Path-like tokens of one line: split on shell and YAML punctuation, a leading variable
/// prefix (`$X/`, `${{ … }}/`, `$(CURDIR)/`) dropped, dotted Python modules (`-m a.b`) read as
/// `a/b.py` too.
pub(crate) fn tokens(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let line = squeeze_expressions(line);
    for raw in line.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '\'' | '"' | '`' | '(' | ';' | '|' | '&' | '<' | '>' | ',' | '[' | ']' | '='
            )
    }) {
        let raw = raw.strip_prefix('@').unwrap_or(raw);
        // What is left of a command substitution or macro the split cut at its `(`:
        // `$(Build.SourcesDirectory)/x`, `$(CURDIR)/x`, `$(git rev-parse --show-toplevel)/x`.
        let raw = match raw.find(")/") {
            Some(i)
                if raw[..i]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')) =>
            {
                &raw[i + 2..]
            }
            _ => raw,
        };
        let t = drop_variable_prefix(raw).trim_end_matches([':', ')', '}', '\\']);
        // A sentence's full stop is not part of the name (`see @docs/x.md.`).
        let t = match t.trim_end_matches('.') {
            "" => t,
            name => name,
        };
        if t.is_empty() || t.contains("://") || t.len() > 512 {
            continue;
        }
        out.push(t.to_owned());
        let module = t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
        if module && t.contains('.') && !t.ends_with(".py") {
            out.push(format!("{}.py", t.replace('.', "/")));
            out.push(format!("{}/__main__.py", t.replace('.', "/")));
        }
    }
    out
}

/// `t` without a leading variable prefix: `$VAR/x`, `${VAR}/x`, `${{ github.workspace }}/x`
/// (whitespace squeezed out first), `$(CURDIR)/x` are read as `x`; `$VAR` alone is `""`.
fn drop_variable_prefix(t: &str) -> &str {
    if let Some(rest) = t.strip_prefix('{') {
        // tox's `{toxinidir}/x`
        return rest.find("}/").map_or(t, |i| &rest[i + 2..]);
    }
    if !t.starts_with('$') {
        return t;
    }
    // Only the leading variable: one later in the name makes it a pattern (`follow::pattern`).
    let end = if t.starts_with("${{") {
        t.find("}}/").map(|i| i + 3)
    } else if t.starts_with("${") {
        t.find("}/").map(|i| i + 2)
    } else if t.starts_with("$(") {
        t.find(")/").map(|i| i + 2)
    } else {
        t.find('/').map(|i| i + 1)
    };
    end.map_or("", |i| &t[i..])
}

/// `line` with the whitespace inside `${{ … }}` expressions removed, so an expression is one
/// word.
fn squeeze_expressions(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains("${{") {
        return line.into();
    }
    let mut out = String::with_capacity(line.len());
    let mut inside = false;
    let mut rest = line;
    while !rest.is_empty() {
        let (open, close) = (rest.find("${{"), rest.find("}}"));
        let next = if inside { close } else { open };
        let Some(i) = next else {
            out.push_str(rest);
            break;
        };
        let (head, tail) = rest.split_at(i + if inside { 2 } else { 3 });
        if inside {
            out.extend(head.chars().filter(|c| !c.is_whitespace()));
        } else {
            out.push_str(head);
        }
        inside = !inside;
        rest = tail;
    }
    out.into()
}

/// Directories `text` changes into (`cd`, `pushd`, `working-directory:`), relative to the
/// repository root, each `cd` read both from the one before it (`cd tests` then `cd ..` is
/// the root) and from the root (where each CI step starts again). Where in the text a command
/// runs is not tracked: a name is tried against every directory the text changes into, which
/// can only add files to what is reached. At most [`MAX_DIRS`]; a target with a variable or
/// outside the repository is skipped.
pub(crate) fn changed_into(text: &str) -> Vec<String> {
    let mut dirs: Vec<String> = Vec::new();
    let mut cwd = String::new();
    for line in text.lines() {
        let line = squeeze_expressions(line);
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|'))
            .map(|w| w.trim_start_matches('(').trim_end_matches(')'))
            .filter(|w| !w.is_empty())
            .collect();
        for pair in words.windows(2) {
            let (verb, arg) = (pair[0], pair[1].trim_matches(['\'', '"']));
            let arg = drop_variable_prefix(arg);
            if !matches!(verb, "cd" | "pushd" | "working-directory:")
                || arg.is_empty()
                || arg.starts_with(['/', '-', '~'])
                || arg.contains(['$', '*', '`'])
            {
                continue;
            }
            let from = if verb == "working-directory:" {
                ""
            } else {
                cwd.as_str()
            };
            cwd = normalise(&format!("{from}/{arg}")).unwrap_or_default();
            // Each CI step starts at the root again: the target read from there too.
            for dir in [cwd.clone(), normalise(arg).unwrap_or_default()] {
                if !dir.is_empty() && !dirs.contains(&dir) && dirs.len() < MAX_DIRS {
                    dirs.push(dir);
                }
            }
        }
    }
    dirs
}

/// A `package.json` without the fields that name the package's own product files (`main`,
/// `bin`, `exports`, `files`, …): nothing runs them at build time, so they are not read as
/// commands. Scripts and tool settings (`scripts`, `jest.setupFiles`, `lint-staged`, …) stay.
/// A package of tool settings (`@acme/eslint-config`, `babel-preset-x`, `prettier-plugin-y`)
/// keeps them: its product is what the tools load. `None` when the text is not a JSON object
/// (it is then read whole, as any entry point).
pub(crate) fn without_product_fields(text: &str) -> Option<String> {
    let mut json: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).ok()?;
    let name = json
        .get("name")
        .and_then(|n| n.as_str())
        .unwrap_or_default();
    let tooling = [
        "config", "plugin", "preset", "eslint", "babel", "prettier", "lint",
    ];
    if tooling
        .iter()
        .any(|t| name.to_ascii_lowercase().contains(t))
    {
        return None;
    }
    for key in [
        "main",
        "module",
        "browser",
        "types",
        "typings",
        "exports",
        "imports",
        "files",
        "bin",
        "man",
        "directories",
        "unpkg",
        "jsdelivr",
        "source",
        "react-native",
    ] {
        json.remove(key);
    }
    serde_json::to_string_pretty(&json).ok()
}

/// The directories a command on `line` runs in by option (`make -C dir`, `npm --prefix dir`,
/// `devcontainer up --workspace-folder dir`, `cargo --manifest-path dir/Cargo.toml`).
pub(crate) fn dir_arguments(line: &str) -> Vec<String> {
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ';' | '&' | '|'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let (flag, inline) = w.split_once('=').map_or((*w, None), |(f, v)| (f, Some(v)));
        let dir = matches!(
            flag,
            "-C" | "--directory"
                | "--prefix"
                | "--cwd"
                | "--workspace-folder"
                | "--project-dir"
                | "--manifest-path"
                | "--project"
                | "--chdir"
                | "--project-directory"
        );
        if dir {
            if let Some(v) = inline.or_else(|| words.get(i + 1).copied()) {
                let v = v.strip_suffix("/Cargo.toml").unwrap_or(v);
                out.push(v.to_owned());
            }
        }
        // An image build's context: `docker build examples/app`, `podman build -t x ctx`.
        if *w == "build" && i > 0 && matches!(words[i - 1], "docker" | "buildx" | "podman") {
            let mut k = i + 1;
            while let Some(a) = words.get(k) {
                if a.starts_with('-') {
                    let takes_value = !a.contains('=')
                        && matches!(
                            *a,
                            "-f" | "--file"
                                | "-t"
                                | "--tag"
                                | "--build-arg"
                                | "--target"
                                | "--platform"
                                | "--label"
                                | "--secret"
                                | "--ssh"
                                | "--network"
                                | "-o"
                                | "--output"
                                | "--cache-from"
                                | "--cache-to"
                        );
                    k += if takes_value { 2 } else { 1 };
                    continue;
                }
                out.push((*a).to_owned());
                break;
            }
        }
    }
    out
}

/// The directories among the ancestors of `files` that `pattern` matches (`examples/*` for
/// `examples/app/Makefile`), each with a trailing `/`, at most [`follow::MAX_MATCHES`].
pub(crate) fn glob_dirs(pattern: &str, files: &[&str]) -> Vec<String> {
    let depth = pattern.split('/').count();
    let mut out: Vec<String> = files
        .iter()
        .filter(|f| f.split('/').count() > depth)
        .map(|f| f.split('/').take(depth).collect::<Vec<_>>().join("/"))
        .filter(|d| follow::matches(pattern, d))
        .map(|d| format!("{d}/"))
        .collect();
    out.dedup();
    out.truncate(follow::MAX_MATCHES);
    out
}

/// Whether `path` is a Dockerfile or Containerfile by name: a build reads it where a line
/// passes it as configuration (`docker build -f examples/x/Dockerfile .`).
pub(crate) fn dockerfile(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    name == "dockerfile"
        || name == "containerfile"
        || name.starts_with("dockerfile.")
        || name.ends_with(".dockerfile")
}
