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
        || name == ".vsconfig")
}

/// Whether `head` (a settings file's start) names something the tool would load or run.
pub fn names_code(head: &[u8]) -> bool {
    String::from_utf8_lossy(head).lines().any(|line| {
        let line = line.trim_start();
        if line.starts_with('#') || line.starts_with(';') || line.starts_with("//") {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_that_cannot_name_code_are_not_read_for_it() {
        assert!(!format_can_load_code(".editorconfig"));
        assert!(!format_can_load_code("web/.prettierignore"));
        assert!(format_can_load_code(".prettierrc"));
        assert!(format_can_load_code("pylintrc"));
    }

    #[test]
    fn settings_that_name_code_are_told_from_plain_settings() {
        for plain in [
            &b"root = true\n[*]\nindent_style = space\n"[..],
            b"{\n  \"singleQuote\": true\n}\n",
            b"[flake8]\nmax-line-length = 80\n# plugins are not used here\n",
            b"BasedOnStyle: Google\nColumnLimit: 100\n",
            b"[*.kt]\nij_kotlin_imports_layout = *\nij_kotlin_allow_trailing_comma = true\n",
        ] {
            assert!(!names_code(plain), "{}", String::from_utf8_lossy(plain));
        }
        for code in [
            &b"{\n  \"plugins\": [\"./local-plugin.js\"]\n}\n"[..],
            b"[MASTER]\ninit-hook='import os; os.system(\"x\")'\n",
            b"require:\n  - ./lib/cop.rb\n",
            b"{ \"parser\": \"./my-parser.js\" }",
            b"[mypy]\nplugins = tools.mypy_plugin\n",
        ] {
            assert!(names_code(code), "{}", String::from_utf8_lossy(code));
        }
    }
}
