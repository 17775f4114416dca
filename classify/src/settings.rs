//! Data-only tool settings: whether the settings a formatter, linter or editor reads
//! (`other.tool-settings`) name something the tool would load or run. A `.prettierrc` with
//! `"plugins"`, an `.eslintrc` with a `parser` or `extends`, a `pylintrc` with `load-plugins`
//! or `init-hook`, a `.rubocop.yml` with `require:` make the tool load code: `build`. Without
//! such a key the file only tunes the tool: it stays `other`.
//!
//! Guards against: a settings file turned into a code loader by the change itself (the content
//! after the change is what is read). Reads at most the content layer's head, line by line,
//! case-insensitively; nothing is parsed.

/// Rule id of settings that name code to load.
pub const SETTINGS_CODE_RULE: &str = "build.tool-settings-code";

/// Keys (and key parts) through which settings make a tool load or run something.
const LOADERS: &[&str] = &[
    "plugin",
    "parser",
    "require",
    "hook",
    "command",
    "exec",
    "load",
    "extends",
    "preset",
    "custom",
    "script",
    "rulesdir",
    "formatter",
    "reporter",
    "processor",
    "resolver",
    "transform",
    "initializer",
    // SQLFluff's `library_path`: the jinja templater imports the Python modules there.
    "library",
    // Vale's `StylesPath`: the styles there can hold scripts Vale runs.
    "stylespath",
];

/// Whether the settings at `path` are in a format that can name code at all: an
/// `.editorconfig`, an ignore list or a clang-format style cannot, whatever their keys say
/// (`dotnet_style_…`, a pattern with `plugin` in it).
pub fn format_can_load_code(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    !(name == ".editorconfig"
        || name.ends_with("ignore")
        || name.ends_with("clang-format")
        || name == ".clang-tidy"
        || name == ".vsconfig"
        // yamllint has no plugins: its `extends` names another YAML configuration; Ruff has
        // none either (its rule codes name checks it has built in).
        || name.starts_with(".yamllint")
        || name == "ruff.toml"
        || name == ".ruff.toml"
        || name == "yamllint.yml"
        || name == "yamllint.yaml"
        // dircolors' database: terminal types and colour codes, nothing to run (rule 23).
        || name == ".dir_colors"
        || name == ".dircolors")
}

/// Whether the settings at `path` (`head`, their start) name code the tool would load. For
/// golangci-lint, whose presets, formatters and `require-*` options are built in, only a custom
/// linter (`custom`, a plugin) loads code.
pub fn settings_name_code(path: &str, head: &[u8]) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    if name.starts_with(".golangci") {
        return String::from_utf8_lossy(head).lines().any(|line| {
            let key = line.trim_start().split(':').next().unwrap_or("");
            let key = key.trim().to_ascii_lowercase();
            !key.starts_with('#') && (key == "custom" || key.contains("plugin"))
        });
    }
    // The Dart analyzer loads code only through `analyzer: plugins:` (rule 23): its
    // `include:` names another options file and its lint names (`library_names`,
    // `always_require_non_null_named_parameters`) are checks it has built in.
    if name == "analysis_options.yaml" {
        return String::from_utf8_lossy(head)
            .lines()
            .any(|line| line.trim_start().starts_with("plugins:"));
    }
    // X resources are data, save rxvt-unicode's `perl-lib`, a directory of Perl extensions it
    // loads (`perl-ext-common` picks among extensions installed with it, as a linter's rule
    // names pick checks it has built in).
    if name == ".xresources" || name == ".xdefaults" {
        return String::from_utf8_lossy(head).lines().any(|line| {
            let key = line.split(':').next().unwrap_or("").to_ascii_lowercase();
            !line.trim_start().starts_with('!') && key.contains("perl-lib")
        }) || names_code(head);
    }
    names_code(head)
}

/// Whether `head` (a settings file's start) names something the tool would load or run.
pub fn names_code(head: &[u8]) -> bool {
    String::from_utf8_lossy(head).lines().any(|line| {
        let line = line.trim_start();
        if line.starts_with('#') || line.starts_with(';') || line.starts_with("//") {
            return false;
        }
        // An XML element that loads code (Psalm's `<plugins><pluginClass …/>`, a `bootstrap=`
        // or `autoloader=` attribute, an `<xi:include>`); Checkstyle's and PMD's `<module>` and
        // `<rule>` elements name checks the tool already has.
        if line.starts_with('<') {
            return xml_names_code(line);
        }
        // A list item without a key is a value (`- github.com/x/testify/require` in a list
        // of banned imports, `"PGH",  # pygrep-hooks` in a TOML array): the key above it
        // decides (`plugins:`). A comment after a setting is prose.
        let line = line.split(" #").next().unwrap_or(line).trim_end();
        // Command-line options (`.yardopts`' `--plugin x`) are read as keys, YAML list items
        // (`- x`) as values.
        let value = !line.contains(':') && !line.contains('=') && !line.starts_with('[');
        if value && (line.starts_with("- ") || !line.starts_with('-')) {
            return false;
        }
        // A section (`[flake8:local-plugins]`) names its purpose in full.
        if line.starts_with('[') {
            return line.to_ascii_lowercase().contains("plugin");
        }
        let key = line
            .split(['=', ':'])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        // Whole words of the key (`load-plugins`, `init-hook`, `"plugins"`), so that
        // `ij_kotlin_imports_layout` is not `import`.
        key.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| {
            LOADERS
                .iter()
                .any(|l| w == *l || w.strip_suffix('s') == Some(l))
        })
    })
}

/// Whether an XML line names code to load: an element or attribute *name* that begins or ends
/// with a loader word (`<pluginClass>`, `bootstrap=`, `autoloader=`, `<xi:include>`,
/// `<extensions>`, PHPMD's custom rule `class=`). Quoted values and comments are left out (round twelve): Checkstyle's
/// `<property name="fileExtensions" …>`, PMD's `<rule ref="…/JUnitTestsShouldIncludeAssert"/>`,
/// a commented-out `<!--module name="DesignForExtension"/-->` and a `<description>` name checks
/// and prose, not code.
fn xml_names_code(line: &str) -> bool {
    if line.starts_with("<!--") {
        return false;
    }
    let mut names = String::new();
    let mut quote = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None => names.push(c.to_ascii_lowercase()),
        }
    }
    const WORDS: &[&str] = &[
        "plugin",
        "bootstrap",
        "autoload",
        "extension",
        "include",
        "script",
        "command",
        "classpath",
        "require",
        "class",
    ];
    names
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|n| WORDS.iter().any(|w| n.starts_with(w) || n.ends_with(w)))
}

/// Key parts (anywhere in the key) through which an unknown tool's settings could name
/// something to load or run, on top of [`LOADERS`].
const CODE_KEY_PARTS: &[&str] = &[
    "plugin",
    "hook",
    "command",
    "exec",
    "script",
    "require",
    "load",
    "extend",
    "preset",
    "parser",
    "transform",
    "import",
    "include",
    "module",
    "program",
    "shell",
    "launch",
    "entry",
    "cmd",
    "pager",
    "editor",
    "runner",
    "binary",
    "interpreter",
    "bootstrap",
    "custom",
];

/// Whole key words of the same kind, too short to look for inside other words (`runtime`).
const CODE_KEY_WORDS: &[&str] = &[
    "run",
    "bin",
    "env",
    "environment",
    "init",
    "setup",
    "task",
    "tasks",
    "action",
    "actions",
    "before",
    "after",
    "pre",
    "post",
    "start",
    "install",
    "path",
    "paths",
    "dir",
    "file",
    "files",
    "support",
];

/// Words of a key that make it a filter: what it names is left out, not loaded.
const FILTER_WORDS: &[&str] = &[
    "exclude", "excludes", "excluded", "ignore", "ignores", "ignored", "skip", "omit",
];

/// Extensions of programs: a value naming such a file could be what the tool runs.
const PROGRAM_EXTENSIONS: &[&str] = &[
    ".js", ".cjs", ".mjs", ".ts", ".cts", ".mts", ".py", ".rb", ".sh", ".bash", ".zsh", ".pl",
    ".php", ".lua", ".jar", ".so", ".dll", ".dylib", ".exe", ".ps1", ".bat", ".cmd", ".groovy",
    ".kts", ".gradle", ".wasm",
];

/// Parts of the names of security scanners' dotfiles (`.gitguardian.yaml`,
/// `.trufflehogignore`, `.checkov.yml`): never data, whatever they hold.
const SCANNER_NAME_PARTS: &[&str] = &[
    "secret",
    "leak",
    "scan",
    "vuln",
    "audit",
    "secur",
    "safety",
    "checkov",
    "tfsec",
    "kics",
    "trufflehog",
    "gitguardian",
    "ggshield",
    "sonar",
    "snyk",
    "semgrep",
    "grype",
    "trivy",
    "osv",
    "bandit",
    "codeql",
    "gosec",
    "brakeman",
    "detect",
    "sast",
    "cve",
    "sbom",
    "whitesource",
];

/// Extensions of a dotfile's name that make it a program (Elixir, Ruby, Lisp, shells, …).
const NAME_CODE_EXTENSIONS: &[&str] = &[
    "js",
    "cjs",
    "mjs",
    "ts",
    "cts",
    "mts",
    "py",
    "rb",
    "sh",
    "bash",
    "zsh",
    "fish",
    "pl",
    "pm",
    "php",
    "lua",
    "ex",
    "exs",
    "el",
    "lisp",
    "clj",
    "groovy",
    "gradle",
    "kts",
    "ps1",
    "psm1",
    "bat",
    "cmd",
    "tcl",
    "r",
    "vim",
    "nix",
    "star",
    "bzl",
    "jsonnet",
    "libsonnet",
    "cue",
    "rego",
];

/// Whether a dotfile that no rule knows (`build.tool-dotfile`) holds data only: an ignore list
/// (a name ending in `ignore`, one pattern a line), or plain settings (`key: value`,
/// `key = value`, JSON, `[section]`, list items) whose keys name no plugin, hook, command,
/// script, path or environment and whose values name no program (`./x`, `x.js`, a flag, a
/// command substitution). Anything else (code, command-line options such as `--require x`,
/// environment files, prose, invalid UTF-8) is not data: the dotfile stays `build`. The
/// content after the change decides, so a change that adds `plugins:` or `run: ./x.sh` is
/// caught.
pub fn data_only_dotfile(path: &str, head: &[u8]) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    // Environment files set variables (`NODE_OPTIONS`, `LD_PRELOAD`) that load code; the
    // settings and ignore lists of security scanners decide what is reported (a suppression
    // is a trust decision, not data).
    if name.starts_with(".env") || SCANNER_NAME_PARTS.iter().any(|p| name.contains(p)) {
        return false;
    }
    // A dotfile written in a programming language (`.formatter.exs`, `.pryrc.rb`) is code
    // whatever it holds.
    // (A name the fallback of `unclaimed.rs` reads need not start with the dot, nor with an
    // ASCII character: strip the dot, never slice at a byte.)
    let code_ext = (name.strip_prefix('.').unwrap_or(&name))
        .rsplit_once('.')
        .is_some_and(|(_, ext)| NAME_CODE_EXTENSIONS.contains(&ext));
    if code_ext {
        return false;
    }
    let Ok(text) = std::str::from_utf8(head) else {
        return false;
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.starts_with("#!") {
        return false;
    }
    let ignore_list = name.ends_with("ignore");
    text.lines().all(|raw| {
        let line = raw.trim();
        // A YAML document's markers (`---`, `...`) are structure; OCaml's `#use "x.ml";;` is code.
        if line.is_empty()
            || (line.starts_with('#') && !line.ends_with(";;"))
            || line.starts_with("//")
            || line.starts_with(';')
            || (!ignore_list && (line == "---" || line == "..."))
        {
            return true;
        }
        if ignore_list {
            return pattern_line(line);
        }
        setting_line(line)
    })
}

/// One pattern of an ignore list: no spaces, no shell syntax.
fn pattern_line(line: &str) -> bool {
    !line
        .chars()
        .any(|c| c.is_whitespace() || "`$;|&<>()=".contains(c))
}

/// One line of plain settings.
fn setting_line(line: &str) -> bool {
    // JSON and YAML structure.
    if line.chars().all(|c| "{}[],".contains(c)) {
        return true;
    }
    // A long command-line option of an options file (`.rspec`'s `--format documentation`,
    // `.puppet-lint.rc`'s `--no-80chars-check`, `--ignore-paths=spec/**`): data when the option
    // names no loader and its value is data (`--require spec_helper`, `--plugin x`,
    // `--pager=less` stay code). Short options (`-r x`) say nothing of what they do: code.
    if let Some(opt) = line.strip_prefix("--") {
        let (name, value) = opt.split_once(['=', ' ', '\t']).unwrap_or((opt, ""));
        // `--no-autoloader_layout-check` turns a check off: it loads nothing.
        if name.starts_with("no-") && value.trim().is_empty() {
            return true;
        }
        return !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            && !key_names_code(name)
            && value_is_data(value.trim());
    }
    // A section names its purpose in full (`[tool.x]`, `[[rules]]`).
    if line.starts_with('[') && line.ends_with(']') {
        return !key_names_code(line.trim_matches(['[', ']']));
    }
    let item = line.strip_prefix("- ").map(str::trim_start).unwrap_or(line);
    if item == "-" {
        return true;
    }
    let sep = [item.find(':'), item.find('=')].into_iter().flatten().min();
    let Some(at) = sep else {
        // A bare scalar (a list item, a JSON array element): one token or a quoted string; a
        // comment after it (`- 205  # Use ".sls"`) is prose.
        return scalar(without_comment(item));
    };
    let key = item[..at].trim().trim_matches(['"', '\'']);
    let value = item[at + 1..].trim();
    // `--require x`, `-p plugin`: command-line options, not settings.
    if key.is_empty() || key.starts_with('-') || key.chars().any(char::is_whitespace) {
        return false;
    }
    // An environment assignment (`NODE_OPTIONS=--require ./x.js`).
    if item.as_bytes()[at] == b'='
        && key
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    {
        return false;
    }
    // A switch or a number names nothing, whatever its key (`"OrderedImports": true`).
    let plain = value.trim_end_matches(',');
    if matches!(plain, "true" | "false" | "null" | "~") || plain.parse::<f64>().is_ok() {
        return true;
    }
    !key_names_code(key) && value_is_data(value)
}

/// Whether a key (or a section name) names code to load or run.
fn key_names_code(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    if CODE_KEY_PARTS.iter().any(|p| key.contains(p)) {
        return true;
    }
    // A filter (`exclude_paths`, `ignore-files`, `skip_dirs`) names what the tool does not
    // read: its paths load nothing.
    let words = || key.split(|c: char| !c.is_ascii_alphanumeric());
    if words().any(|w| FILTER_WORDS.contains(&w)) {
        return false;
    }
    words().any(|w| {
        CODE_KEY_WORDS.contains(&w)
            || LOADERS
                .iter()
                .any(|l| w == *l || w.strip_suffix('s') == Some(l))
    })
}

/// `item` without a trailing ` # comment` outside quotes.
fn without_comment(item: &str) -> &str {
    let mut quote = None;
    for (i, c) in item.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') if i > 0 && item[..i].ends_with(char::is_whitespace) => {
                return item[..i].trim_end();
            }
            _ => {}
        }
    }
    item
}

/// A bare scalar: a quoted string or one token, holding data.
fn scalar(item: &str) -> bool {
    let quoted = item.len() >= 2
        && (item.starts_with('"') || item.starts_with('\''))
        && item.trim_end_matches(',').ends_with(['"', '\'']);
    (quoted
        || !item
            .chars()
            .any(|c| c.is_whitespace() || c == '(' || c == ')'))
        && value_is_data(item)
}

/// Whether a value is data: no command substitution, chaining or pipe, no flag, no path that
/// starts with `./`, no file with a program's extension.
fn value_is_data(value: &str) -> bool {
    if ["$(", "${", "`", "&&", "||", " | "]
        .iter()
        .any(|s| value.contains(s))
    {
        return false;
    }
    value
        .split(|c: char| c.is_whitespace() || "\"',[]{}".contains(c))
        .filter(|t| !t.is_empty())
        .all(|t| {
            let t = t.to_ascii_lowercase();
            let flag = t.starts_with('-')
                && t[1..].starts_with(|c: char| c.is_ascii_alphabetic() || c == '-');
            !flag
                && !t.starts_with("./")
                && !t.starts_with("../")
                && !PROGRAM_EXTENSIONS.iter().any(|e| t.ends_with(e))
        })
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
