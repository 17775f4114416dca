//! Path rules of the patch format, shared by the writer (which refuses what the parser would
//! reject) and the strict parser.
//!
//! Guards against: names that escape the tree (`/x`, `../x`), reach git's own state (`.git/`),
//! need quoting (git would write them as C strings we do not parse), or are ambiguous (`a//b`,
//! `./a`), and names that collide on case-insensitive or normalising file systems.
//! On `Ok`: the path is relative, normalised, printable and within the caps.
//! Does not check: whether the path exists, or what it means (classification is the gate's).
//! The relative-path rules themselves live in [`crate::paths`], shared with the tar reader
//! and the packer; this module adds the quoting rule and maps rules to `diff.*` ids.

use super::rule;
use crate::paths::{check_relative_path, PathRule};

pub use crate::paths::collision_key;

/// Checks one patch path (without `a/` or `b/`). On error returns the rule id and the reason.
///
/// FORMATS.md: "`PATH` MUST NOT start with `"` nor contain a byte below 0x20, 0x7f, `"` or `\`
/// (git would quote it; `diff.quoted-path`), and MUST pass the relative-path rules of
/// `airlock_core::paths` under `max_path_bytes` and `max_depth`: a leading `/` is
/// `diff.abs-path`, a `..` component `diff.parent-dir`, a `.git` component (any case, trailing
/// dots or spaces, `git~1`) `diff.git-dir`, anything else (empty, `.` or empty components,
/// drive prefixes, invisible or bidi characters, too long, too deep) `diff.path`."
pub fn check_patch_path(
    path: &str,
    max_bytes: usize,
    max_depth: usize,
) -> Result<(), (&'static str, String)> {
    if path.starts_with('"') {
        return Err((rule::QUOTED_PATH, "quoted path".into()));
    }
    if let Some(b) = path
        .bytes()
        .find(|&b| b < 0x20 || b == 0x7f || b == b'"' || b == b'\\')
    {
        return Err((
            rule::QUOTED_PATH,
            format!("byte 0x{b:02x} would need quoting"),
        ));
    }
    check_relative_path(path, max_bytes, max_depth)
        .map(|_| ())
        .map_err(|e| {
            let r = match e.rule() {
                PathRule::Absolute => rule::ABS_PATH,
                PathRule::ParentDir => rule::PARENT_DIR,
                PathRule::GitDir => rule::GIT_DIR,
                _ => rule::PATH,
            };
            (r, format!("{} ({})", e.detail(), e.rule().id()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule_of(p: &str) -> &'static str {
        match check_patch_path(p, 1024, 64) {
            Ok(()) => "ok",
            Err((r, _)) => r,
        }
    }

    #[test]
    fn accepts_ordinary_paths() {
        for p in [
            "a",
            "src/main.rs",
            " lead",
            "trail ",
            "with space/x y",
            "ünïcode/ファイル",
            ".github/workflows/ci.yml",
            ".gitignore",
            "x.git",
            "...",
        ] {
            assert_eq!(rule_of(p), "ok", "{p}");
        }
    }

    #[test]
    fn rejects_each_bad_path_with_its_rule() {
        for (p, want) in [
            ("", rule::PATH),
            ("/etc/passwd", rule::ABS_PATH),
            ("../x", rule::PARENT_DIR),
            ("a/../../x", rule::PARENT_DIR),
            (".git/config", rule::GIT_DIR),
            ("sub/.GIT/hooks/pre-commit", rule::GIT_DIR),
            ("a//b", rule::PATH),
            ("a/", rule::PATH),
            ("./a", rule::PATH),
            ("\"a\"", rule::QUOTED_PATH),
            ("a\tb", rule::QUOTED_PATH),
            ("a\nb", rule::QUOTED_PATH),
            ("a\\b", rule::QUOTED_PATH),
            ("a\u{7f}", rule::QUOTED_PATH),
            ("a\u{202e}txt.exe", rule::PATH),
            (".git.", rule::GIT_DIR),
            ("git~1/config", rule::GIT_DIR),
            ("C:/x", rule::PATH),
        ] {
            assert_eq!(rule_of(p), want, "{p:?}");
        }
    }

    #[test]
    fn enforces_length_and_depth() {
        assert!(check_patch_path(&"a".repeat(10), 10, 64).is_ok());
        assert_eq!(
            check_patch_path(&"a".repeat(256), 1024, 64).unwrap_err().0,
            rule::PATH
        );
        assert_eq!(
            check_patch_path(&"a".repeat(11), 10, 64).unwrap_err().0,
            rule::PATH
        );
        assert!(check_patch_path("a/b/c", 1024, 3).is_ok());
        assert_eq!(
            check_patch_path("a/b/c/d", 1024, 3).unwrap_err().0,
            rule::PATH
        );
    }

    #[test]
    fn collision_key_folds_case_and_normalisation() {
        assert_eq!(collision_key("README.md"), collision_key("readme.MD"));
        // "é" precomposed vs "e" + combining acute.
        assert_eq!(collision_key("caf\u{e9}"), collision_key("cafe\u{301}"));
        assert_ne!(collision_key("a/b"), collision_key("a/c"));
    }
}
