//! Relative path rules shared by the tar writer and reader, the packer and the diff parser.
//!
//! Guards against: traversal (`..`), absolute paths, Windows separators and drive prefixes,
//! `.` and empty components, control and bidi characters (terminal and review spoofing),
//! `.git` components in any case or spelling Git itself refuses (`.GIT`, `.git.`, `git~1`),
//! over-long paths, components and trees, and names that differ only by case or Unicode
//! normalisation ([`collision_key`]).
//! On `Ok`: the path is one or more `/`-separated normal components, each 1..=255 bytes,
//! within the given length and depth, and joining it under a directory stays inside it.
//! Does not check: the file system (links, existing files); callers that write files must
//! still refuse to follow links (see [`crate::tar`]).

use unicode_normalization::UnicodeNormalization;

use crate::limits::MAX_COMPONENT_BYTES;

/// The rule a path broke; its [`PathRule::id`] appears in messages and fixture names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PathRule {
    /// `path.empty`: the path is empty.
    Empty,
    /// `path.control`: a NUL, control (C0, DEL, C1) or invisible/bidi formatting character.
    Control,
    /// `path.absolute`: the path starts with `/`.
    Absolute,
    /// `path.backslash`: the path contains `\` (a separator on Windows).
    Backslash,
    /// `path.drive`: the path starts with a Windows drive prefix such as `C:`.
    Drive,
    /// `path.parent-dir`: a `..` component.
    ParentDir,
    /// `path.dot`: a `.` component.
    Dot,
    /// `path.empty-component`: `//` or a trailing `/`.
    EmptyComponent,
    /// `path.git-dir`: a `.git` component, in any case or alias.
    GitDir,
    /// `path.too-long`: more bytes than allowed.
    TooLong,
    /// `path.component-too-long`: one component longer than 255 bytes (`NAME_MAX`).
    ComponentTooLong,
    /// `path.too-deep`: more components than allowed.
    TooDeep,
}

impl PathRule {
    /// Every rule, for documentation and uniqueness tests.
    pub const ALL: [PathRule; 12] = [
        PathRule::Empty,
        PathRule::Control,
        PathRule::Absolute,
        PathRule::Backslash,
        PathRule::Drive,
        PathRule::ParentDir,
        PathRule::Dot,
        PathRule::EmptyComponent,
        PathRule::GitDir,
        PathRule::TooLong,
        PathRule::ComponentTooLong,
        PathRule::TooDeep,
    ];

    /// Stable rule id, e.g. `path.parent-dir`.
    pub fn id(self) -> &'static str {
        match self {
            PathRule::Empty => "path.empty",
            PathRule::Control => "path.control",
            PathRule::Absolute => "path.absolute",
            PathRule::Backslash => "path.backslash",
            PathRule::Drive => "path.drive",
            PathRule::ParentDir => "path.parent-dir",
            PathRule::Dot => "path.dot",
            PathRule::EmptyComponent => "path.empty-component",
            PathRule::GitDir => "path.git-dir",
            PathRule::TooLong => "path.too-long",
            PathRule::ComponentTooLong => "path.component-too-long",
            PathRule::TooDeep => "path.too-deep",
        }
    }

    /// The part of the id after `path.`, shared with the tar rule ids (`tar.<suffix>`).
    pub fn suffix(self) -> &'static str {
        let id = self.id();
        id.strip_prefix("path.").unwrap_or(id)
    }

    /// Why the rule exists, in a few words, for messages.
    pub fn reason(self) -> &'static str {
        match self {
            PathRule::Empty => "empty path",
            PathRule::Control => "contains a control or invisible formatting character",
            PathRule::Absolute => "absolute path",
            PathRule::Backslash => "contains a backslash",
            PathRule::Drive => "starts with a drive prefix",
            PathRule::ParentDir => "leaves the job directory",
            PathRule::Dot => "contains a `.` component",
            PathRule::EmptyComponent => "contains an empty component",
            PathRule::GitDir => "touches a .git directory",
            PathRule::TooLong => "path too long",
            PathRule::ComponentTooLong => "path component too long",
            PathRule::TooDeep => "path too deep",
        }
    }
}

/// A path broke a rule.
///
/// `path` is for messages only: escaped when displayed and cut to 200 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// A rule without a number.
    #[error("path {path:?}: rejected ({}): {}", rule.id(), rule.reason())]
    Rejected {
        /// The path (cut for display).
        path: String,
        /// The rule.
        rule: PathRule,
    },
    /// A length or depth cap.
    #[error("path {path:?}: rejected ({}): {}: limit {limit}, seen {seen}", rule.id(), rule.reason())]
    TooLarge {
        /// The path (cut for display).
        path: String,
        /// The rule (`path.too-long`, `path.component-too-long` or `path.too-deep`).
        rule: PathRule,
        /// The limit.
        limit: u64,
        /// The value seen.
        seen: u64,
    },
}

impl PathError {
    /// The rule that was broken.
    pub fn rule(&self) -> PathRule {
        match self {
            PathError::Rejected { rule, .. } | PathError::TooLarge { rule, .. } => *rule,
        }
    }

    /// The reason with numbers where there are some, without the path or rule id.
    pub fn detail(&self) -> String {
        match self {
            PathError::Rejected { rule, .. } => rule.reason().to_owned(),
            PathError::TooLarge {
                rule, limit, seen, ..
            } => format!("{}: limit {limit}, seen {seen}", rule.reason()),
        }
    }
}

/// Cuts a hostile name for display in a message (it is escaped by `{:?}` when shown).
pub(crate) fn display_cut(p: &str) -> String {
    const MAX_CHARS: usize = 200;
    if p.chars().count() <= MAX_CHARS {
        p.to_owned()
    } else {
        let mut s: String = p.chars().take(MAX_CHARS).collect();
        s.push('…');
        s
    }
}

fn rejected(p: &str, rule: PathRule) -> PathError {
    PathError::Rejected {
        path: display_cut(p),
        rule,
    }
}

fn too_large(p: &str, rule: PathRule, limit: usize, seen: usize) -> PathError {
    PathError::TooLarge {
        path: display_cut(p),
        rule,
        limit: limit as u64,
        seen: seen as u64,
    }
}

/// Whether `c` must never appear in a path: C0/C1 controls, DEL, and invisible or bidi
/// formatting characters (zero-width, LRM/RLM/ALM, embeddings, overrides, isolates, BOM) that
/// make a name display differently from what it is, and that HFS+ ignores when it compares
/// names (so `.g\u{200c}it` would be `.git` there).
fn is_forbidden_char(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{061C}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}')
}

/// Whether a component names a Git directory as Git itself would refuse it on checkout:
/// `.git` in any ASCII case, with trailing dots or spaces (dropped by Windows), or the NTFS
/// short name `git~1`.
fn is_git_dir(component: &str) -> bool {
    let lower = component.to_ascii_lowercase();
    let trimmed = lower.trim_end_matches(['.', ' ']);
    trimmed == ".git" || lower == "git~1"
}

/// Checks that `p` is a safe relative path, returning it unchanged on success.
///
/// Rules, in the order applied (each error carries the rule id):
/// `path.empty`; `path.too-long` (more than `max_bytes` bytes); `path.control` (NUL, controls,
/// bidi/invisible formatting); `path.backslash`; `path.absolute` (leading `/`); `path.drive`
/// (`C:`...); `path.parent-dir` (any `..` component); `path.empty-component` (`//`, trailing
/// `/`); `path.dot` (a `.` component); `path.component-too-long` (more than 255 bytes);
/// `path.git-dir` (`.git` in any case or alias); `path.too-deep` (more than `max_depth`
/// components).
///
/// ```
/// use airlock_core::paths::{check_relative_path, PathRule};
/// assert_eq!(check_relative_path("src/main.rs", 1024, 64).unwrap(), "src/main.rs");
/// let err = check_relative_path("src/../../etc/passwd", 1024, 64).unwrap_err();
/// assert_eq!(err.rule(), PathRule::ParentDir);
/// ```
pub fn check_relative_path(p: &str, max_bytes: usize, max_depth: usize) -> Result<&str, PathError> {
    if p.is_empty() {
        return Err(rejected(p, PathRule::Empty));
    }
    if p.len() > max_bytes {
        return Err(too_large(p, PathRule::TooLong, max_bytes, p.len()));
    }
    if p.chars().any(is_forbidden_char) {
        return Err(rejected(p, PathRule::Control));
    }
    if p.contains('\\') {
        return Err(rejected(p, PathRule::Backslash));
    }
    if p.starts_with('/') {
        return Err(rejected(p, PathRule::Absolute));
    }
    let b = p.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return Err(rejected(p, PathRule::Drive));
    }
    // `..` first: it is the rule that matters most, report it even next to lesser defects.
    if p.split('/').any(|c| c == "..") {
        return Err(rejected(p, PathRule::ParentDir));
    }
    let mut depth = 0usize;
    for c in p.split('/') {
        depth += 1;
        if c.is_empty() {
            return Err(rejected(p, PathRule::EmptyComponent));
        }
        if c == "." {
            return Err(rejected(p, PathRule::Dot));
        }
        if c.len() > MAX_COMPONENT_BYTES {
            return Err(too_large(
                p,
                PathRule::ComponentTooLong,
                MAX_COMPONENT_BYTES,
                c.len(),
            ));
        }
        if is_git_dir(c) {
            return Err(rejected(p, PathRule::GitDir));
        }
    }
    if depth > max_depth {
        return Err(too_large(p, PathRule::TooDeep, max_depth, depth));
    }
    Ok(p)
}

/// Key under which two paths collide on a case-insensitive or normalisation-insensitive file
/// system (macOS, Windows): lowercase of the NFC form (normalised again after lowercasing).
///
/// Two different paths with the same key are refused by the tar reader and writer
/// (`tar.collision`), since unpacking them on such a system would let one replace the other.
///
/// ```
/// use airlock_core::paths::collision_key;
/// assert_eq!(collision_key("README.md"), collision_key("readme.MD"));
/// assert_eq!(collision_key("caf\u{e9}"), collision_key("cafe\u{301}"));
/// ```
pub fn collision_key(p: &str) -> String {
    // ASCII is its own NFC form and lowercases as ASCII: the same key without the normaliser.
    if p.is_ascii() {
        return p.to_ascii_lowercase();
    }
    let nfc: String = p.nfc().collect();
    nfc.to_lowercase().nfc().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(p: &str) -> &'static str {
        check_relative_path(p, 1024, 8).unwrap_err().rule().id()
    }

    #[test]
    fn accepts_ordinary_relative_paths() {
        for p in [
            "a",
            "src/main.rs",
            "files/deep/er/path.txt",
            ".gitignore",
            ".github/workflows/ci.yml",
            "a..b/c...d",
            "...",
            "caf\u{e9}/\u{65e5}\u{672c}.txt",
            "files/.gitmodules",
            "git~2",
        ] {
            assert_eq!(check_relative_path(p, 1024, 8), Ok(p), "{p}");
        }
    }

    #[test]
    fn rejects_traversal_anywhere() {
        assert_eq!(rule(".."), "path.parent-dir");
        assert_eq!(rule("../x"), "path.parent-dir");
        assert_eq!(rule("a/../../x"), "path.parent-dir");
        assert_eq!(rule("a/.."), "path.parent-dir");
        // Reported as traversal even with other defects present.
        assert_eq!(rule("a//../x"), "path.parent-dir");
    }

    #[test]
    fn rejects_absolute_drive_and_backslash() {
        assert_eq!(rule("/etc/passwd"), "path.absolute");
        assert_eq!(rule("//server/share"), "path.absolute");
        assert_eq!(rule("C:/Windows"), "path.drive");
        assert_eq!(rule("c:x"), "path.drive");
        assert_eq!(rule("a\\..\\..\\x"), "path.backslash");
        assert_eq!(rule("\\\\server"), "path.backslash");
    }

    #[test]
    fn rejects_dot_and_empty_components() {
        assert_eq!(rule("."), "path.dot");
        assert_eq!(rule("./a"), "path.dot");
        assert_eq!(rule("a/./b"), "path.dot");
        assert_eq!(rule("a//b"), "path.empty-component");
        assert_eq!(rule("a/"), "path.empty-component");
        assert_eq!(rule(""), "path.empty");
    }

    #[test]
    fn rejects_control_and_bidi_characters() {
        for p in [
            "a\0b",
            "a\nb",
            "a\rb",
            "a\u{1b}[31mb",
            "a\u{7f}",
            "a\u{85}",
            "evil\u{202e}txt.sh",
            "a\u{2066}b",
            "a\u{200b}b",
            "\u{feff}a",
        ] {
            assert_eq!(rule(p), "path.control", "{p:?}");
        }
    }

    #[test]
    fn rejects_git_dir_in_any_spelling() {
        for p in [
            ".git",
            ".git/config",
            "files/.git/hooks/pre-commit",
            "files/.GIT/config",
            "files/.Git",
            "files/.git./config",
            "files/.git /config",
            "files/GIT~1/config",
        ] {
            assert_eq!(rule(p), "path.git-dir", "{p:?}");
        }
        // HFS+-ignorable spellings never get that far.
        assert_eq!(rule("files/.g\u{200c}it/config"), "path.control");
    }

    #[test]
    fn enforces_length_component_and_depth_caps() {
        let long = "a".repeat(1025);
        let e = check_relative_path(&long, 1024, 8).unwrap_err();
        assert_eq!(e.rule(), PathRule::TooLong);
        assert!(e.to_string().contains("limit 1024, seen 1025"), "{e}");
        assert!(check_relative_path(&"a".repeat(1024), 1024, 8).is_err()); // component > 255
        assert_eq!(
            rule(&format!("x/{}", "b".repeat(256))),
            "path.component-too-long"
        );
        assert!(check_relative_path(&"b".repeat(255), 1024, 8).is_ok());
        assert_eq!(rule("a/b/c/d/e/f/g/h/i"), "path.too-deep");
        assert!(check_relative_path("a/b/c/d/e/f/g/h", 1024, 8).is_ok());
    }

    #[test]
    fn error_message_names_path_rule_and_reason_and_escapes() {
        let e = check_relative_path("../x\n", 1024, 8).unwrap_err();
        assert_eq!(
            e.to_string(),
            "path \"../x\\n\": rejected (path.control): contains a control or invisible formatting character"
        );
        let e = check_relative_path("../x", 1024, 8).unwrap_err();
        assert_eq!(
            e.to_string(),
            "path \"../x\": rejected (path.parent-dir): leaves the job directory"
        );
    }

    #[test]
    fn rule_ids_are_unique() {
        let mut ids: Vec<_> = PathRule::ALL.iter().map(|r| r.id()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), PathRule::ALL.len());
    }

    #[test]
    fn collision_key_of_ascii_is_the_full_fold() {
        // The ASCII shortcut gives what NFC, lowercase, NFC give, for every ASCII character
        // (alone and in a run).
        let full = |p: &str| -> String {
            let nfc: String = p.nfc().collect();
            nfc.to_lowercase().nfc().collect()
        };
        let all: String = (0u8..0x80).map(char::from).collect();
        for c in all.chars() {
            let one = c.to_string();
            assert_eq!(collision_key(&one), full(&one), "{c:?}");
        }
        assert_eq!(collision_key(&all), full(&all));
        assert_eq!(collision_key("Src/Main.RS"), "src/main.rs");
    }

    #[test]
    fn collision_key_folds_case_and_normalisation() {
        assert_eq!(collision_key("Makefile"), collision_key("makefile"));
        assert_eq!(collision_key("caf\u{e9}"), collision_key("cafe\u{301}"));
        assert_eq!(collision_key("CAFE\u{301}"), collision_key("caf\u{e9}"));
        assert_ne!(collision_key("a/b"), collision_key("a_b"));
        assert_eq!(collision_key("a/B"), "a/b");
    }
}
