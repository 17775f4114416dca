//! How the tree layer reads one file that an entry point reaches, by kind: which lines of a
//! build file, container file, editor or dev-container configuration or agent instruction file
//! run something, what a name there may be (a script, any file, an instruction document), the
//! in-repository modules a Python or JavaScript script imports, Nx projects named by
//! `nx run`, and names with a glob or a variable in them (`scripts/*.sh`,
//! `build-${lang}.sh`), which stand for every file they could match.
//!
//! Guards against: a script reached through a build system, an editor, a dev container or an
//! agent's instructions rather than through CI (`build = "src/codegen.rs"`, a Dockerfile `RUN`,
//! CMake `execute_process`, a Bazel `genrule`, `setup.py` `exec(open(…))`, `postCreateCommand`,
//! a `folderOpen` task, `@docs/x.md` in `CLAUDE.md`), and a run line that names files only
//! through a pattern. Everything here is a pure function of a path and at most
//! `tree::MAX_READ_BYTES` of text: nothing is evaluated; patterns are matched component by
//! component (`*` and `?` within one component) and each gives at most [`MAX_MATCHES`] files.

use std::borrow::Cow;

use crate::Bucket;

/// Most files one pattern (a glob or a name with a variable) stands for.
pub const MAX_MATCHES: usize = 256;

/// How a file reached by the tree layer is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A CI definition, a Makefile, a script: every line, scripts named anywhere.
    Generic,
    /// A Dockerfile: what `RUN` runs, what `COPY`/`ADD` brought in that `RUN` runs, and the
    /// configuration and scripts `COPY`/`ADD` bring into the image.
    Dockerfile,
    /// A Bazel `BUILD` file or `.bzl`: the lines of `genrule`, `run_binary` and `sh_*` rules.
    Bazel,
    /// `setup.py`: lines that execute, open or import something.
    SetupPy,
    /// `Cargo.toml`: the `build = "…"` script (any file).
    Cargo,
    /// Agent instructions: the documents they import or name (`@docs/x.md`).
    Instructions,
    /// An Nx `project.json`: its commands, not the product files its options name (`main`).
    NxProject,
}

/// What a name on a counted line must be to count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Accept {
    /// A script (executable, or by extension), or a YAML/JSON file on a configuration line.
    Runnable,
    /// Any file (`build = "src/codegen.rs"`).
    AnyFile,
    /// A document an agent reads (Markdown, text, Cursor `.mdc`, …).
    Document,
    /// A file a Dockerfile copies into the image it builds: counted when it configures the
    /// image's environment rather than being the product's source (`initial-condarc`,
    /// `Rprofile.site`, `nginx.conf`, an entrypoint script; not `app.py`).
    Copied,
    /// A directory a Dockerfile copies onto the image's root (`COPY root/ /`): an overlay of
    /// the image's file system, whose files count as `Copied` ones do (`image.rs`).
    Overlay,
}

/// The kind of `path` when reached in `bucket`'s chain.
pub(crate) fn kind_of(path: &str, bucket: Bucket) -> Kind {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    if name == "dockerfile"
        || name.starts_with("dockerfile.")
        || name.ends_with(".dockerfile")
        || name.starts_with("containerfile")
    {
        Kind::Dockerfile
    } else if matches!(name.as_str(), "build" | "build.bazel") || name.ends_with(".bzl") {
        Kind::Bazel
    } else if name == "setup.py" {
        Kind::SetupPy
    } else if name == "cargo.toml" {
        Kind::Cargo
    } else if name == "project.json" {
        Kind::NxProject
    } else if bucket == Bucket::Agent && document(&name) {
        Kind::Instructions
    } else {
        Kind::Generic
    }
}

/// Whether a file name is a document an agent reads as instructions.
pub(crate) fn document(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [".md", ".mdc", ".markdown", ".txt", ".rst", ".adoc", ".org"]
        .iter()
        .any(|e| name.ends_with(e))
        || matches!(
            name.rsplit('/').next(),
            Some(".cursorrules" | ".windsurfrules" | ".clinerules" | ".rules")
        )
}

/// The lines of `text` (the content of a file of `kind`) whose names count, each with what a
/// name there must be. Lines of trigger filters (`paths:` and the list under it) are left out:
/// they select when CI runs, not what it runs.
pub(crate) fn counted_lines(kind: Kind, text: &str) -> Vec<(Cow<'_, str>, Accept)> {
    match kind {
        Kind::Generic => without_filters(text)
            .map(|l| (Cow::Borrowed(l), Accept::Runnable))
            .collect(),
        Kind::Instructions => text
            .lines()
            .map(|l| (Cow::Borrowed(l), Accept::Document))
            .collect(),
        Kind::Cargo => text
            .lines()
            .filter(|l| {
                let l = l.trim_start();
                l.starts_with("build") && l["build".len()..].trim_start().starts_with('=')
            })
            .map(|l| (Cow::Borrowed(l), Accept::AnyFile))
            .collect(),
        Kind::SetupPy => text
            .lines()
            .filter(|l| {
                [
                    "exec",
                    "open(",
                    "subprocess",
                    "system(",
                    "runpy",
                    "check_call",
                    "spawn",
                    "import ",
                    "run(",
                ]
                .iter()
                .any(|k| l.contains(k))
            })
            .map(|l| (Cow::Borrowed(l), Accept::Runnable))
            .collect(),
        Kind::NxProject => text
            .lines()
            .filter(|l| {
                ["\"command", "\"script", "\"args", "\"cwd"]
                    .iter()
                    .any(|k| l.contains(k))
            })
            .map(|l| (Cow::Borrowed(l), Accept::Runnable))
            .collect(),
        Kind::Dockerfile => dockerfile_lines(text),
        Kind::Bazel => bazel_lines(text),
    }
}

/// Lines that are not a trigger filter (`paths:`, `paths-ignore:`, and the list items
/// indented under either).
fn without_filters(text: &str) -> impl Iterator<Item = &str> {
    let mut filter_indent: Option<usize> = None;
    text.lines().filter(move |line| {
        let code = line.trim_start();
        let indent = line.len() - code.len();
        if let Some(at) = filter_indent {
            if code.starts_with('-') && indent >= at || code.is_empty() {
                return false;
            }
            filter_indent = None;
        }
        if code.starts_with("paths:") || code.starts_with("paths-ignore:") {
            if code.trim_end().ends_with(':') {
                filter_indent = Some(indent);
            }
            return false;
        }
        true
    })
}

/// `RUN` instructions with their continuation lines; and for each file `COPY`/`ADD` brought in
/// whose name a `RUN` line holds, a line naming that source; a line for each directory copied
/// onto the image's root.
fn dockerfile_lines(text: &str) -> Vec<(Cow<'_, str>, Accept)> {
    let mut out: Vec<(Cow<'_, str>, Accept)> = Vec::new();
    let mut copied: Vec<&str> = Vec::new();
    let mut overlays: Vec<&str> = Vec::new();
    let mut in_run = false;
    for line in text.lines() {
        let code = line.trim_start();
        let word = code
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        let continued = in_run;
        in_run = false;
        if word == "RUN" || continued {
            out.push((Cow::Borrowed(line), Accept::Runnable));
            in_run = line.trim_end().ends_with('\\');
        } else if (word == "COPY" || word == "ADD") && !code.contains("--from") {
            // A copy from another stage (`--from=builder`) names that stage's paths.
            let args: Vec<&str> = code
                .split_whitespace()
                .skip(1)
                .filter(|a| !a.starts_with("--"))
                .collect();
            if let Some((dest, sources)) = args.split_last() {
                copied.extend(sources.iter().copied());
                if dest.trim_matches(['"', '\'']) == "/" {
                    overlays.extend(sources.iter().copied());
                }
            }
        }
    }
    let runs: String = out
        .iter()
        .map(|(l, _)| l.as_ref())
        .collect::<Vec<_>>()
        .join("\n");
    for src in copied {
        let base = src.trim_end_matches('/').rsplit('/').next().unwrap_or(src);
        if !base.is_empty() && runs.contains(base) {
            out.push((Cow::Owned(format!("COPY {src}")), Accept::Runnable));
        } else if !base.is_empty() && !src.contains("://") {
            out.push((Cow::Owned(format!("COPY {src}")), Accept::Copied));
        }
    }
    for src in overlays {
        out.push((Cow::Owned(format!("COPY {src}")), Accept::Overlay));
    }
    out
}

/// The lines of the rules that run a program at build time (`genrule`, `run_binary`,
/// `sh_binary`, `sh_test`, `native_binary`), Bazel labels read as paths (`//tools:gen.sh` is
/// `tools/gen.sh`, `:gen.sh` is `gen.sh`).
fn bazel_lines(text: &str) -> Vec<(Cow<'_, str>, Accept)> {
    let mut out = Vec::new();
    let mut depth: i64 = 0;
    let mut inside = false;
    for line in text.lines() {
        let code = line.trim_start();
        if !inside
            && [
                "genrule(",
                "run_binary(",
                "sh_binary(",
                "sh_test(",
                "native_binary(",
            ]
            .iter()
            .any(|r| code.starts_with(r) || code.starts_with(&format!("native.{r}")))
        {
            inside = true;
            depth = 0;
        }
        if inside {
            out.push((Cow::Owned(bazel_labels(line)), Accept::Runnable));
            depth += line.matches('(').count() as i64 - line.matches(')').count() as i64;
            if depth <= 0 {
                inside = false;
            }
        }
    }
    out
}

/// `line` with Bazel labels written as paths.
fn bazel_labels(line: &str) -> String {
    line.split_inclusive(['"', '\''])
        .map(|part| {
            let (word, quote) = match part.char_indices().last() {
                Some((i, q @ ('"' | '\''))) => (&part[..i], Some(q)),
                _ => (part, None),
            };
            let path = if let Some(rest) = word.strip_prefix("//") {
                rest.replacen(':', "/", 1)
            } else if let Some(rest) = word.strip_prefix(':') {
                rest.to_owned()
            } else {
                word.to_owned()
            };
            let path = path.strip_prefix('/').unwrap_or(&path).to_owned();
            match quote {
                Some(q) => format!("{path}{q}"),
                None => path,
            }
        })
        .collect()
}

/// Paths (relative to the root) a Python or JavaScript file `from` may import from the
/// repository: `import a.b` and `from a.b import c` as `a/b.py`, `a/b/__init__.py`,
/// `a/b/c.py`, from the root and from the script's directory; relative imports from the
/// script's directory; JavaScript `require`/`import` of `./` and `../` paths with the usual
/// extensions and `index.js`; Ruby `require_relative` (`crate::runners::ruby_requires`).
pub(crate) fn imports(from: &str, text: &str) -> Vec<String> {
    let lower = from.to_ascii_lowercase();
    let base = from.rsplit_once('/').map_or("", |(d, _)| d);
    let join = |dir: &str, p: &str| {
        if dir.is_empty() {
            p.to_owned()
        } else {
            format!("{dir}/{p}")
        }
    };
    let mut out = Vec::new();
    if lower.ends_with(".py") {
        for line in text.lines() {
            let words: Vec<&str> = line
                .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')')
                .filter(|w| !w.is_empty())
                .collect();
            let (module, names): (&str, &[&str]) = match words.as_slice() {
                ["import", rest @ ..] => (rest.first().copied().unwrap_or(""), &[]),
                ["from", m, "import", rest @ ..] => (m, rest),
                _ => continue,
            };
            let dots = module.len() - module.trim_start_matches('.').len();
            let rel = module.trim_start_matches('.').replace('.', "/");
            let mut dirs: Vec<String> = Vec::new();
            if dots == 0 {
                dirs.push(String::new());
                dirs.push(base.to_owned());
            } else {
                let mut d = base.to_owned();
                for _ in 1..dots {
                    d = d
                        .rsplit_once('/')
                        .map_or(String::new(), |(p, _)| p.to_owned());
                }
                dirs.push(d);
            }
            for dir in dirs {
                let m = join(&dir, &rel);
                if !rel.is_empty() {
                    out.push(format!("{m}.py"));
                    out.push(format!("{m}/__init__.py"));
                }
                for n in names.iter().filter(|n| **n != "as" && **n != "*").take(16) {
                    out.push(join(&m, &format!("{n}.py")));
                }
            }
        }
    } else if [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts"]
        .iter()
        .any(|e| lower.ends_with(e))
    {
        for part in text.split(['"', '\'', '`']).skip(1).step_by(2) {
            if !(part.starts_with("./") || part.starts_with("../")) || part.len() > 512 {
                continue;
            }
            let p = join(base, part);
            for ext in [
                "",
                ".js",
                ".mjs",
                ".cjs",
                ".ts",
                ".mts",
                "/index.js",
                "/index.ts",
            ] {
                out.push(format!("{p}{ext}"));
            }
        }
    }
    out.extend(crate::runners::ruby_requires(from, text));
    out.truncate(4096);
    out
}

/// The local Sphinx extensions a `conf.py` loads: each quoted name of its `extensions` list as a
/// module under the configuration's directory, its parent, the root, or a directory it adds to
/// `sys.path` (`sys.path.insert(0, os.path.abspath("_ext"))`).
pub(crate) fn sphinx_extensions(from: &str, text: &str) -> Vec<String> {
    if from.rsplit('/').next() != Some("conf.py") {
        return Vec::new();
    }
    let base = from.rsplit_once('/').map_or("", |(d, _)| d);
    let join = |d: &str, p: &str| match (d.is_empty(), p.is_empty()) {
        (true, _) => p.to_owned(),
        (_, true) => d.to_owned(),
        _ => format!("{d}/{p}"),
    };
    let quoted = |l: &str| -> Vec<String> {
        l.split(['"', '\''])
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    // The configuration's directory, its parent and the root: where `sys.path` most often
    // points when it is computed (`Path(__file__).resolve().parent.parent`), which is not read.
    let parent = base.rsplit_once('/').map_or("", |(d, _)| d);
    let mut dirs = vec![base.to_owned(), parent.to_owned(), String::new()];
    dirs.dedup();
    for line in text.lines().filter(|l| l.contains("sys.path")) {
        dirs.extend(
            quoted(line)
                .iter()
                .map(|q| join(base, q.trim_start_matches("./"))),
        );
    }
    let Some(start) = text.find("extensions") else {
        return Vec::new();
    };
    let list = &text[start..];
    let list = &list[..list.find(']').unwrap_or(list.len()).min(16 * 1024)];
    let mut out = Vec::new();
    for name in quoted(list).into_iter().take(64) {
        let module = name.replace('.', "/");
        for d in dirs.iter().take(8) {
            out.push(join(d, &format!("{module}.py")));
            out.push(join(d, &format!("{module}/__init__.py")));
        }
    }
    out
}

/// The Nx projects `line` runs (`nx run web:build`, `nx build web`, `nx run-many`,
/// `nx affected`): `Some(names)`, where an empty list means every project; `None` when the line
/// runs no Nx command.
pub(crate) fn nx_projects(line: &str) -> Option<Vec<String>> {
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ';' | '&' | '|'))
        .filter(|w| !w.is_empty())
        .collect();
    let at = words
        .iter()
        .position(|w| *w == "nx" || w.ends_with("/nx"))?;
    let args: Vec<&str> = words[at + 1..]
        .iter()
        .copied()
        .filter(|w| !w.starts_with('-'))
        .collect();
    match args.as_slice() {
        ["run-many", ..] | ["affected", ..] => Some(Vec::new()),
        ["run", target, ..] => Some(vec![target.split(':').next().unwrap_or("").to_owned()]),
        [_, project, ..] => Some(vec![(*project).to_owned()]),
        [target] if target.contains(':') => {
            Some(vec![target.split(':').next().unwrap_or("").to_owned()])
        }
        _ => None,
    }
}

/// The project directories a Gradle settings script includes (`include ':samples'`,
/// `include(":app:core")` is `app/core`, `includeBuild("build-logic")`, a list over several
/// lines): Gradle configures and
/// builds what is there, so an example project it includes runs. Empty for any other file.
pub(crate) fn gradle_includes(from: &str, text: &str) -> Vec<String> {
    let name = from.rsplit('/').next().unwrap_or(from).to_ascii_lowercase();
    if !matches!(name.as_str(), "settings.gradle" | "settings.gradle.kts") {
        return Vec::new();
    }
    let mut out = Vec::new();
    // An `include(` whose list runs over several lines (`include(\n    "a",\n    "b",\n)`).
    let mut open_list = false;
    for line in text.lines().map(str::trim_start) {
        let mut build = line.starts_with("includeBuild");
        if open_list {
            build = false;
            open_list = !line.contains(')');
        } else if build || line.starts_with("include") {
            open_list = line.contains('(') && !line.contains(')');
        } else {
            continue;
        }
        // Every quoted string on the line: `include ':a', ':b'`, `include(":a", ":b")`.
        let mut rest = line;
        while let Some(open) = rest.find(['\'', '"']) {
            let quote = rest[open..].chars().next().unwrap_or('"');
            let after = &rest[open + 1..];
            let Some(close) = after.find(quote) else {
                break;
            };
            let project = &after[..close];
            rest = &after[close + 1..];
            let dir = if build {
                project.to_owned()
            } else {
                project.trim_start_matches(':').replace(':', "/")
            };
            if !dir.is_empty() && out.len() < MAX_MATCHES {
                out.push(dir);
            }
        }
    }
    out
}

/// A name with a glob or a variable inside it, as a pattern with `*` for each unknown part
/// (`scripts/*.sh`; `build-${lang}.sh` is `build-*.sh`, `%DIR%\x.bat` is `*/x.bat`); `None`
/// for a plain name, a pattern of only wildcards, or one naming a directory.
pub(crate) fn pattern(token: &str) -> Option<String> {
    if !token.contains(['*', '?', '$', '%']) || token.ends_with('/') {
        return None;
    }
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' => {
                match chars.peek() {
                    Some('{') | Some('(') => {
                        let close = if chars.next() == Some('{') { '}' } else { ')' };
                        // `${{ … }}` (a CI expression) ends at `}}`.
                        let double = close == '}' && chars.peek() == Some(&'{');
                        while let Some(n) = chars.next() {
                            if n == close && (!double || chars.next_if_eq(&'}').is_some()) {
                                break;
                            }
                        }
                    }
                    _ => {
                        while chars
                            .peek()
                            .is_some_and(|n| n.is_ascii_alphanumeric() || *n == '_')
                        {
                            chars.next();
                        }
                    }
                }
                out.push('*');
            }
            '%' => {
                for n in chars.by_ref() {
                    if n == '%' {
                        break;
                    }
                }
                out.push('*');
            }
            '\\' => out.push('/'),
            c => out.push(c),
        }
    }
    let last = out.rsplit('/').next().unwrap_or("");
    let literal = last.chars().any(|c| !matches!(c, '*' | '?'));
    (literal && !out.contains("**/**")).then_some(out)
}

/// The directory a pattern's files lie under: its components before the first with a wildcard.
pub(crate) fn literal_dir(pattern: &str) -> String {
    let comps: Vec<&str> = pattern.split('/').collect();
    let n = comps
        .iter()
        .position(|c| c.contains(['*', '?']))
        .unwrap_or(comps.len().saturating_sub(1));
    comps[..n].join("/")
}

/// Whether `path` matches `pattern` component by component (`*` any run of characters and `?`
/// one, within a component; `**` a whole component).
pub(crate) fn matches(pattern: &str, path: &str) -> bool {
    let (p, q): (Vec<&str>, Vec<&str>) = (pattern.split('/').collect(), path.split('/').collect());
    p.len() == q.len() && p.iter().zip(&q).all(|(a, b)| *a == "**" || wild(a, b))
}

/// One component against one wildcard pattern (iterative, linear in practice).
fn wild(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

#[cfg(test)]
#[path = "follow_tests.rs"]
mod tests;

/// Whether a file a Dockerfile copies configures the image (an rc file, a site profile, a
/// server configuration, settings, a script): everything but the product's own source and
/// assets, which are what the image carries, not how it runs (`app.py`, `index.html`, a PNG).
pub(crate) fn copied_config(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let Some((_, ext)) = name.rsplit_once('.').filter(|(s, _)| !s.is_empty()) else {
        // `initial-condarc`, `.bashrc`, `entrypoint`: no extension, or a dotfile.
        return true;
    };
    const SOURCE_OR_ASSET: &[&str] = &[
        "py", "js", "mjs", "cjs", "ts", "tsx", "jsx", "go", "rs", "java", "kt", "rb", "php", "c",
        "h", "cc", "cpp", "cs", "html", "htm", "css", "scss", "vue", "svelte", "png", "jpg",
        "jpeg", "gif", "svg", "ico", "webp", "woff", "woff2", "ttf", "md", "txt", "csv", "lock",
        "sum", "mod", "jar", "war", "whl", "tgz", "gz", "zip",
    ];
    !SOURCE_OR_ASSET.contains(&ext)
}
