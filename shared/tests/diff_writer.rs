//! The diff writer against real trees: round trips through real `git apply` and through our
//! own strict parser + `apply_file`, refusals of what a hostile generator can plant in its
//! workdir, every limit, and a seeded property test of random edits.
//!
//! A round trip means: `diff_trees(before, after)` -> patch; a git repository holding
//! `before` (committed) accepts `git apply --check` and `git apply`, and the resulting tree
//! equals `after` byte for byte and executable bit for executable bit; `parse_patch` accepts
//! the same patch and its counts equal the writer's.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions: a panic is a test failure"
)]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::Command;

use airlock_core::diff::{
    apply_file, diff_trees, parse_patch, write_tree_diff, DiffError, DiffLimit, DiffLimits,
    DiffOptions, FileMode, ParsedPatch, TreeDiff,
};

/// path -> (content, executable)
type Tree = BTreeMap<String, (Vec<u8>, bool)>;

fn write_tree(root: &Path, tree: &Tree) {
    fs::create_dir_all(root).unwrap();
    for (p, (content, exec)) in tree {
        let path = root.join(p);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, content).unwrap();
        let mode = if *exec { 0o755 } else { 0o644 };
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// Regular files under `root` (skipping a top-level `.git`); panics on anything else.
fn snapshot(root: &Path) -> Tree {
    fn go(root: &Path, dir: &Path, out: &mut Tree) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_str().unwrap().to_owned();
            if rel == ".git" {
                continue;
            }
            let md = fs::symlink_metadata(&p).unwrap();
            if md.is_dir() {
                go(root, &p, out);
            } else {
                assert!(md.is_file(), "{rel}: not a regular file");
                let exec = md.permissions().mode() & 0o100 != 0;
                out.insert(rel, (fs::read(&p).unwrap(), exec));
            }
        }
    }
    let mut out = Tree::new();
    go(root, root, &mut out);
    out
}

fn tree(files: &[(&str, &[u8], bool)]) -> Tree {
    files
        .iter()
        .map(|(p, c, x)| (p.to_string(), (c.to_vec(), *x)))
        .collect()
}

fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .expect("git must be installed to run these tests");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Commits `before` in a fresh repository, applies `patch` with real git and returns the tree.
fn git_apply(before: &Tree, patch: &[u8]) -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    write_tree(&repo, before);
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "before"]);
    let pf = tmp.path().join("patch.diff");
    fs::write(&pf, patch).unwrap();
    let pf = pf.to_str().unwrap();
    // An empty patch (nothing changed) is valid here; git needs `--allow-empty` for it.
    git(&repo, &["apply", "--allow-empty", "--check", pf]);
    git(&repo, &["apply", "--allow-empty", pf]);
    snapshot(&repo)
}

/// Applies a parsed patch with our own strict `apply_file`.
fn our_apply(before: &Tree, parsed: &ParsedPatch) -> Tree {
    let mut t = before.clone();
    for f in &parsed.files {
        let old = t.get(&f.path).cloned();
        match apply_file(old.as_ref().map(|(c, _)| c.as_slice()), f).unwrap() {
            None => {
                t.remove(&f.path);
            }
            Some(content) => {
                let exec = match f.new_mode {
                    Some(m) => m == FileMode::Executable,
                    None => old.map(|(_, x)| x).unwrap_or(false),
                };
                t.insert(f.path.clone(), (content, exec));
            }
        }
    }
    t
}

fn diff(before: &Tree, after: &Tree, opts: &DiffOptions) -> TreeDiff {
    let tmp = tempfile::tempdir().unwrap();
    write_tree(&tmp.path().join("b"), before);
    write_tree(&tmp.path().join("a"), after);
    diff_trees(&tmp.path().join("b"), &tmp.path().join("a"), opts).unwrap()
}

/// Parses the patch and checks its counts equal the writer's stats.
fn parse_checked(d: &TreeDiff) -> ParsedPatch {
    let p = parse_patch(&d.patch, &DiffLimits::default()).unwrap_or_else(|e| {
        panic!("{e}\n{}", String::from_utf8_lossy(&d.patch));
    });
    assert_eq!(p.files_changed(), d.stats.files_changed);
    assert_eq!(p.lines_added(), d.stats.lines_added);
    assert_eq!(p.lines_removed(), d.stats.lines_removed);
    assert_eq!(d.patch.len() as u64, d.stats.diff_bytes);
    p
}

fn numbered(n: usize, tag: &str) -> Vec<u8> {
    (1..=n)
        .map(|i| format!("{tag} line {i}\n"))
        .collect::<String>()
        .into_bytes()
}

fn before_tree() -> Tree {
    tree(&[
        ("README.md", b"hello\nworld\n", false),
        ("run.sh", b"#!/bin/sh\necho hi\n", true),
        ("empty.txt", b"", false),
        ("noeol.txt", b"a\nb\nc", false),
        ("addeol.txt", b"x\ny", false),
        ("src/lib.rs", &numbered(40, "lib"), false),
        ("src/deep/nested/mod.rs", b"pub fn f() {}\n", false),
        ("old/gone.txt", b"bye\n", false),
        ("old/also.txt", b"also\n", false),
        ("tochmod.sh", b"echo\n", false),
        ("rewrite.txt", &numbered(20, "old"), false),
        ("crlf.txt", b"one\r\ntwo\r\nthree\r\n", false),
        ("to-empty.txt", b"content\n", false),
        ("from-empty.txt", b"", false),
        ("exec-off.sh", b"#!/bin/sh\nexit 0\n", true),
        ("del-empty.txt", b"", false),
        ("x", b"file that becomes a directory\n", false),
        ("d/inner.txt", b"directory that becomes a file\n", false),
        ("spaced name.txt", b"s p a c e\n", false),
        ("unicod\u{e9}-\u{fc}.txt", b"caf\xc3\xa9\n", false),
        ("unchanged/big.txt", &numbered(500, "same"), false),
    ])
}

fn after_tree() -> Tree {
    let mut lib = String::from_utf8(numbered(40, "lib")).unwrap();
    lib = lib.replace("lib line 3\n", "lib line three\n");
    lib = lib.replace("lib line 30\n", "lib line 30\ninserted after 30\n");
    lib = lib.replace("lib line 15\n", "");
    tree(&[
        ("README.md", b"hello\nbrave new\nworld\n", false),
        ("run.sh", b"#!/bin/sh\necho hi\n", true),
        ("empty.txt", b"", false),
        ("noeol.txt", b"a\nb\nc\n", false),
        ("addeol.txt", b"x\ny\n", false),
        ("src/lib.rs", lib.as_bytes(), false),
        (
            "src/deep/nested/mod.rs",
            b"pub fn f() {}\npub fn g() {}",
            false,
        ),
        ("tochmod.sh", b"echo\n", true),
        ("rewrite.txt", &numbered(25, "new"), false),
        ("crlf.txt", b"one\r\nTWO\r\nthree\r\n", false),
        ("to-empty.txt", b"", false),
        ("from-empty.txt", b"now\nfull\n", false),
        ("exec-off.sh", b"#!/bin/sh\nexit 1\n", false),
        ("x/y.txt", b"inside the new directory\n", false),
        ("d", b"now a file\n", false),
        ("spaced name.txt", b"s p a c e d\n", false),
        (
            "unicod\u{e9}-\u{fc}.txt",
            b"caf\xc3\xa9 cr\xc3\xa8me\n",
            false,
        ),
        ("unchanged/big.txt", &numbered(500, "same"), false),
        ("new/file.txt", b"brand new\n", false),
        ("new/empty.txt", b"", false),
        ("new/exec.sh", b"#!/bin/sh\n", true),
        ("new/noeol.txt", b"no newline", false),
    ])
}

#[test]
fn round_trip_through_real_git_reproduces_after_exactly() {
    let (before, after) = (before_tree(), after_tree());
    let d = diff(&before, &after, &DiffOptions::default());
    assert!(d.stats.refused.is_empty(), "{:?}", d.stats.refused);
    assert_eq!(d.stats.limit_hit, None);
    let parsed = parse_checked(&d);
    // Every changed path has one section; unchanged ones have none.
    let changed: Vec<&str> = parsed.files.iter().map(|f| f.path.as_str()).collect();
    assert!(!changed.contains(&"run.sh") && !changed.contains(&"unchanged/big.txt"));
    assert_eq!(changed.len(), 24, "{changed:?}");
    assert_eq!(git_apply(&before, &d.patch), after);
    assert_eq!(our_apply(&before, &parsed), after);
}

#[test]
fn writer_output_matches_gits_own_hunks_for_a_simple_edit() {
    // Same hunk layout as `git diff`: 3 lines of context, one merged hunk.
    let before = tree(&[("f", &numbered(10, "l"), false)]);
    let mut a = String::from_utf8(numbered(10, "l")).unwrap();
    a = a.replace("l line 5\n", "l line five\n");
    let after = tree(&[("f", a.as_bytes(), false)]);
    let d = diff(&before, &after, &DiffOptions::default());
    let want = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n l line 2\n l line 3\n l line 4\n-l line 5\n+l line five\n l line 6\n l line 7\n l line 8\n";
    assert_eq!(String::from_utf8(d.patch).unwrap(), want);
}

#[test]
fn streaming_writer_produces_the_same_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    write_tree(&tmp.path().join("b"), &before_tree());
    write_tree(&tmp.path().join("a"), &after_tree());
    let mem = diff_trees(
        &tmp.path().join("b"),
        &tmp.path().join("a"),
        &DiffOptions::default(),
    )
    .unwrap();
    let out = tmp.path().join("patch.diff");
    let stats = write_tree_diff(
        &tmp.path().join("b"),
        &tmp.path().join("a"),
        &DiffOptions::default(),
        fs::File::create(&out).unwrap(),
    )
    .unwrap();
    assert_eq!(fs::read(&out).unwrap(), mem.patch);
    assert_eq!(stats, mem.stats);
}

// ---- refusals -------------------------------------------------------------------------------

fn refused(d: &TreeDiff) -> Vec<(String, String)> {
    d.stats
        .refused
        .iter()
        .map(|r| (r.path.clone(), r.reason.clone()))
        .collect()
}

fn pair(p: &str, r: &str) -> (String, String) {
    (p.to_owned(), r.to_owned())
}

/// Sets up before/after dirs; `plant` adds hostile entries to `after`.
fn diff_with(
    before: &Tree,
    after: &Tree,
    opts: &DiffOptions,
    plant: impl FnOnce(&Path),
) -> TreeDiff {
    let tmp = tempfile::tempdir().unwrap();
    let (b, a) = (tmp.path().join("b"), tmp.path().join("a"));
    write_tree(&b, before);
    write_tree(&a, after);
    plant(&a);
    diff_trees(&b, &a, opts).unwrap()
}

#[test]
fn symlink_to_etc_passwd_is_refused_and_never_read() {
    let before = tree(&[
        ("README.md", b"hello\n", false),
        ("src/a.rs", b"a\n", false),
    ]);
    let after = tree(&[("src/a.rs", b"a\nb\n", false)]);
    let d = diff_with(&before, &after, &DiffOptions::default(), |a| {
        symlink("/etc/passwd", a.join("README.md")).unwrap(); // replaces a regular file
        symlink("/etc/passwd", a.join("leak")).unwrap();
        symlink("/etc", a.join("src/etc")).unwrap(); // a link to a directory: not walked
    });
    assert_eq!(
        refused(&d),
        vec![
            pair("README.md", "diff.symlink"),
            pair("leak", "diff.symlink"),
            pair("src/etc", "diff.symlink"),
        ]
    );
    let text = String::from_utf8(d.patch.clone()).unwrap();
    assert!(
        !text.contains("root:"),
        "content of /etc/passwd leaked:\n{text}"
    );
    // README.md is left as it was (no deletion); only src/a.rs changes.
    let parsed = parse_checked(&d);
    assert_eq!(parsed.files.len(), 1);
    assert_eq!(parsed.files[0].path, "src/a.rs");
}

#[test]
fn fifo_and_socket_are_refused_without_blocking() {
    let before = tree(&[("pipe", b"was a file\n", false)]);
    let after = tree(&[]);
    let mut _listener = None;
    let d = diff_with(&before, &after, &DiffOptions::default(), |a| {
        let st = Command::new("mkfifo").arg(a.join("pipe")).status().unwrap();
        assert!(st.success());
        _listener = Some(std::os::unix::net::UnixListener::bind(a.join("sock")).unwrap());
    });
    assert_eq!(
        refused(&d),
        vec![
            pair("pipe", "diff.special-file"),
            pair("sock", "diff.special-file")
        ]
    );
    assert!(d.patch.is_empty());
}

#[test]
fn binary_files_are_refused_and_left_as_they_were() {
    let before = tree(&[("text.txt", b"plain\n", false), ("keep.txt", b"k\n", false)]);
    let after = tree(&[
        ("text.txt", b"now latin-1: caf\xe9\n", false),
        ("nul.bin", b"ELF\x00\x01\x02", false),
        ("keep.txt", b"k\nk\n", false),
    ]);
    let d = diff(&before, &after, &DiffOptions::default());
    assert_eq!(
        refused(&d),
        vec![
            pair("nul.bin", "diff.binary"),
            pair("text.txt", "diff.binary")
        ]
    );
    let parsed = parse_checked(&d);
    let result = our_apply(&before, &parsed);
    assert_eq!(result["text.txt"].0, b"plain\n");
    assert_eq!(result["keep.txt"].0, b"k\nk\n");
    assert!(!result.contains_key("nul.bin"));
}

#[test]
fn git_dir_planted_by_the_generator_is_refused_once() {
    let before = tree(&[("src/a.rs", b"a\n", false)]);
    let mut files: Vec<(String, Vec<u8>, bool)> = (0..50)
        .map(|i| (format!(".git/objects/{i:02}"), b"x\n".to_vec(), false))
        .collect();
    files.push(("vendor/.GIT/config".into(), b"[core]\n".to_vec(), false));
    files.push(("src/a.rs".into(), b"a\n".to_vec(), false));
    let after: Tree = files.into_iter().map(|(p, c, x)| (p, (c, x))).collect();
    let d = diff(&before, &after, &DiffOptions::default());
    assert_eq!(
        refused(&d),
        vec![
            pair(".git", "diff.git-dir"),
            pair("vendor/.GIT", "diff.git-dir")
        ]
    );
    assert!(d.patch.is_empty());
}

#[test]
fn names_git_would_quote_are_refused() {
    let before = tree(&[]);
    let after = tree(&[
        ("we\"ird", b"q\n", false),
        ("tab\tname", b"t\n", false),
        ("back\\slash", b"b\n", false),
        ("fine name.txt", b"f\n", false),
    ]);
    let d = diff_with(&before, &after, &DiffOptions::default(), |a| {
        fs::write(a.join(OsStr::from_bytes(b"latin\xe9")), b"l\n").unwrap();
    });
    assert_eq!(
        refused(&d),
        vec![
            pair("back\\slash", "diff.quoted-path"),
            pair("latin\u{fffd}", "diff.path"),
            pair("tab\tname", "diff.quoted-path"),
            pair("we\"ird", "diff.quoted-path"),
        ]
    );
    let parsed = parse_checked(&d);
    assert_eq!(parsed.files.len(), 1);
    assert_eq!(parsed.files[0].path, "fine name.txt");
}

#[test]
fn case_colliding_new_files_keep_the_first_and_refuse_the_second() {
    let d = diff(
        &tree(&[]),
        &tree(&[("README.md", b"a\n", false), ("Readme.md", b"b\n", false)]),
        &DiffOptions::default(),
    );
    assert_eq!(refused(&d), vec![pair("Readme.md", "diff.collision")]);
    assert_eq!(parse_checked(&d).files[0].path, "README.md");
}

#[test]
fn ignored_top_level_names_are_skipped_on_both_sides() {
    let before = tree(&[("a.txt", b"a\n", false)]);
    let after = tree(&[
        ("a.txt", b"a\n", false),
        (".airlock-report.json", b"{}\n", false),
        ("sub/.airlock-report.json", b"{}\n", false),
    ]);
    let opts = DiffOptions {
        ignore: vec![".airlock-report.json".into()],
        ..DiffOptions::default()
    };
    let d = diff(&before, &after, &opts);
    let parsed = parse_checked(&d);
    // Only the top-level name is ignored.
    assert_eq!(parsed.files.len(), 1);
    assert_eq!(parsed.files[0].path, "sub/.airlock-report.json");
}

#[test]
fn deep_directory_bomb_is_refused_once_without_recursing() {
    let d = diff_with(&tree(&[]), &tree(&[]), &DiffOptions::default(), |a| {
        let mut p = a.to_path_buf();
        for _ in 0..200 {
            p.push("d");
        }
        fs::create_dir_all(&p).unwrap();
        fs::write(p.join("f"), b"deep\n").unwrap();
    });
    assert_eq!(d.stats.refused.len(), 1);
    assert_eq!(d.stats.refused[0].reason, "diff.path");
    assert_eq!(d.stats.refused[0].path.split('/').count(), 64);
    assert!(d.patch.is_empty());
}

#[test]
fn before_tree_with_a_symlink_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (b, a) = (tmp.path().join("b"), tmp.path().join("a"));
    fs::create_dir_all(&b).unwrap();
    fs::create_dir_all(&a).unwrap();
    symlink("/etc/passwd", b.join("l")).unwrap();
    let e = diff_trees(&b, &a, &DiffOptions::default()).unwrap_err();
    assert!(matches!(e, DiffError::BeforeTree { .. }), "{e}");
    assert_eq!(e.rule(), "diff.before-tree");
}

// ---- limits ---------------------------------------------------------------------------------

/// Checks a limited result is a valid, applicable prefix of the full diff.
fn check_prefix(before: &Tree, d: &TreeDiff, want: DiffLimit) {
    assert_eq!(d.stats.limit_hit, Some(want));
    let parsed = parse_checked(d);
    let _ = our_apply(before, &parsed);
    let _ = git_apply(before, &d.patch);
}

#[test]
fn changed_files_limit_keeps_the_first_files_in_path_order() {
    let after: Tree = (0..5)
        .map(|i| (format!("f{i}"), (format!("{i}\n").into_bytes(), false)))
        .collect();
    let opts = DiffOptions {
        max_changed_files: 2,
        ..DiffOptions::default()
    };
    let d = diff(&tree(&[]), &after, &opts);
    check_prefix(&tree(&[]), &d, DiffLimit::ChangedFiles);
    let parsed = parse_checked(&d);
    let paths: Vec<&str> = parsed.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, vec!["f0", "f1"]);
}

#[test]
fn changed_lines_limit_stops_before_the_file_that_passes_it() {
    let after = tree(&[
        ("a.txt", &numbered(10, "a"), false),
        ("b.txt", &numbered(100, "b"), false),
    ]);
    let opts = DiffOptions {
        max_changed_lines: 50,
        ..DiffOptions::default()
    };
    let d = diff(&tree(&[]), &after, &opts);
    check_prefix(&tree(&[]), &d, DiffLimit::ChangedLines);
    assert_eq!((d.stats.files_changed, d.stats.lines_added), (1, 10));
}

#[test]
fn changed_lines_limit_stops_a_large_rewrite_early() {
    let before = tree(&[("f", &numbered(3000, "old"), false)]);
    let after = tree(&[("f", &numbered(3000, "new"), false)]);
    let opts = DiffOptions {
        max_changed_lines: 100,
        ..DiffOptions::default()
    };
    let d = diff(&before, &after, &opts);
    check_prefix(&before, &d, DiffLimit::ChangedLines);
    assert!(d.patch.is_empty());
}

#[test]
fn file_bytes_limit_never_reads_a_huge_changed_file_but_compares_unchanged_ones() {
    const MIB: usize = 1024 * 1024;
    let big: Vec<u8> = b"0123456789abcdef\n".repeat(2 * MIB / 17);
    let before = tree(&[("same.txt", &big, false), ("mode.txt", &big, false)]);
    let after = tree(&[("same.txt", &big, false), ("mode.txt", &big, true)]);
    let opts = DiffOptions {
        max_file_bytes: MIB as u64,
        ..DiffOptions::default()
    };
    // Unchanged big file: compared in chunks, no limit; mode-only change: a section.
    let d = diff(&before, &after, &opts);
    assert_eq!(d.stats.limit_hit, None);
    let parsed = parse_checked(&d);
    assert_eq!(parsed.files.len(), 1);
    assert_eq!(parsed.files[0].path, "mode.txt");
    // A big new file: limit hit.
    let mut after2 = after.clone();
    after2.insert("new.txt".into(), (big.clone(), false));
    let d = diff(&before, &after2, &opts);
    check_prefix(&before, &d, DiffLimit::FileBytes);
    // A big file changed in place (same size): limit hit too.
    let mut changed = big.clone();
    changed[5] = b'X';
    let after3 = tree(&[("same.txt", &changed, false), ("mode.txt", &big, false)]);
    let d = diff(&before, &after3, &opts);
    check_prefix(&before, &d, DiffLimit::FileBytes);
}

#[test]
fn diff_bytes_limit_keeps_whole_sections_only() {
    let after = tree(&[
        ("a", &numbered(10, "a"), false),
        ("b", &numbered(10, "b"), false),
    ]);
    let full = diff(&tree(&[]), &after, &DiffOptions::default());
    let opts = DiffOptions {
        max_diff_bytes: full.stats.diff_bytes - 1,
        ..DiffOptions::default()
    };
    let d = diff(&tree(&[]), &after, &opts);
    check_prefix(&tree(&[]), &d, DiffLimit::DiffBytes);
    assert!(d.stats.diff_bytes < full.stats.diff_bytes);
    assert!(full.patch.starts_with(&d.patch));
    assert_eq!(d.stats.files_changed, 1);
}

#[test]
fn walk_entries_limit_stops_a_flood_of_files() {
    let after: Tree = (0..100)
        .map(|i| (format!("f{i:03}"), (b"x\n".to_vec(), false)))
        .collect();
    let opts = DiffOptions {
        max_walk_entries: 50,
        ..DiffOptions::default()
    };
    let d = diff(&tree(&[]), &after, &opts);
    check_prefix(&tree(&[]), &d, DiffLimit::WalkEntries);
    assert!(d.patch.is_empty());
}

#[test]
fn refused_paths_limit_stops_a_flood_of_links() {
    let opts = DiffOptions {
        max_refused: 3,
        ..DiffOptions::default()
    };
    let d = diff_with(&tree(&[]), &tree(&[]), &opts, |a| {
        for i in 0..10 {
            symlink("/etc/passwd", a.join(format!("l{i}"))).unwrap();
        }
    });
    assert_eq!(d.stats.limit_hit, Some(DiffLimit::RefusedPaths));
    assert_eq!(d.stats.refused.len(), 3);
}

// ---- property test --------------------------------------------------------------------------

/// Tiny deterministic generator (Knuth's MMIX LCG): no dependency, same cases every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn random_content(r: &mut Lcg) -> Vec<u8> {
    // A small alphabet makes repeated lines (and hard alignments) likely.
    const WORDS: [&str; 6] = ["alpha", "beta", "gamma", "{", "}", ""];
    let n = r.below(15);
    let mut s = String::new();
    for _ in 0..n {
        s.push_str(WORDS[r.below(6) as usize]);
        if r.chance(5) {
            s.push('\r');
        }
        s.push('\n');
    }
    if !s.is_empty() && r.chance(25) {
        s.pop(); // no final newline
    }
    s.into_bytes()
}

fn random_edit(r: &mut Lcg, content: &[u8]) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = content
        .split_inclusive(|&b| b == b'\n')
        .map(|l| l.to_vec())
        .collect();
    for _ in 0..=r.below(4) {
        let at = r.below(lines.len() as u64 + 1) as usize;
        match r.below(4) {
            0 => lines.insert(at, format!("ins {}\n", r.below(3)).into_bytes()),
            1 if at < lines.len() => {
                lines.remove(at);
            }
            2 if at < lines.len() => lines[at] = format!("mod {}\n", r.below(3)).into_bytes(),
            _ => {}
        }
    }
    let mut out: Vec<u8> = lines.concat();
    // Toggle the final newline sometimes.
    if r.chance(20) {
        if out.ends_with(b"\n") {
            out.pop();
        } else if !out.is_empty() {
            out.push(b'\n');
        }
    }
    // Only the last line may lack its newline: re-add newlines inside.
    let mut fixed = Vec::new();
    let n = out.split_inclusive(|&b| b == b'\n').count();
    for (i, l) in out.split_inclusive(|&b| b == b'\n').enumerate() {
        fixed.extend_from_slice(l);
        if i + 1 < n && !l.ends_with(b"\n") {
            fixed.push(b'\n');
        }
    }
    fixed
}

fn random_case(r: &mut Lcg) -> (Tree, Tree) {
    const NAMES: [&str; 7] = ["a", "b.txt", "dir/c", "dir/d e", "dir/sub/f", "g.sh", "z"];
    let mut before = Tree::new();
    for n in NAMES {
        if r.chance(60) {
            before.insert(n.into(), (random_content(r), r.chance(20)));
        }
    }
    let mut after = Tree::new();
    for n in NAMES {
        match before.get(n) {
            Some((c, x)) => match r.below(6) {
                0 => {} // deleted
                1 => {
                    after.insert(n.into(), (c.clone(), *x));
                }
                2 => {
                    after.insert(n.into(), (c.clone(), !*x));
                }
                3 => {
                    after.insert(n.into(), (random_content(r), *x));
                }
                _ => {
                    after.insert(n.into(), (random_edit(r, c), *x ^ r.chance(10)));
                }
            },
            None if r.chance(40) => {
                after.insert(n.into(), (random_content(r), r.chance(20)));
            }
            None => {}
        }
    }
    (before, after)
}

#[test]
fn random_edits_round_trip_through_parser_and_exact_apply() {
    let mut r = Lcg(0xa1b2_c3d4_e5f6_0718);
    let mut nonempty = 0;
    for case in 0..300 {
        let (before, after) = random_case(&mut r);
        let d = diff(&before, &after, &DiffOptions::default());
        assert!(
            d.stats.refused.is_empty() && d.stats.limit_hit.is_none(),
            "case {case}"
        );
        let parsed = parse_checked(&d);
        assert_eq!(
            our_apply(&before, &parsed),
            after,
            "case {case}:\n{}",
            String::from_utf8_lossy(&d.patch)
        );
        if !d.patch.is_empty() {
            nonempty += 1;
            // Real git on a handful of them (git is slow).
            if nonempty <= 12 {
                assert_eq!(git_apply(&before, &d.patch), after, "case {case} with git");
            }
        }
    }
    assert!(nonempty > 250, "too few non-empty cases: {nonempty}");
}

/// `ignore_new` leaves out new paths unread (a FIFO inside an ignored new directory is never
/// even listed, so never refused), counts them once each, and never hides a path `before`
/// has, whatever the filter says.
#[test]
fn ignore_new_leaves_out_new_paths_unread_and_never_a_tracked_one() {
    let dir = tempfile::tempdir().unwrap();
    let (b, a) = (dir.path().join("before"), dir.path().join("after"));
    write_tree(
        &b,
        &tree(&[
            ("src/lib.py", b"x = 1\n", false),
            ("build/kept.txt", b"k\n", false),
        ]),
    );
    write_tree(
        &a,
        &tree(&[
            ("src/lib.py", b"x = 2\n", false),
            ("src/m.pyc", b"bytecode\n", false),
            ("build/kept.txt", b"k2\n", false),
            ("build/new.o", b"obj\n", false),
            ("cache/v/x", b"c\n", false),
            ("notes.txt", b"new\n", false),
        ]),
    );
    let fifo = a.join("cache/v/fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let rule = |p: &str, is_dir: bool| {
        p.ends_with(".pyc") || (is_dir && p == "cache") || p.starts_with("build/") || p == "build"
    };
    let opts = DiffOptions {
        ignore_new: Some(airlock_core::diff::IgnoreNew(std::sync::Arc::new(rule))),
        ..DiffOptions::default()
    };
    let d = diff_trees(&b, &a, &opts).unwrap();
    let patch = String::from_utf8(d.patch).unwrap();
    for kept in ["src/lib.py", "build/kept.txt", "notes.txt"] {
        assert!(patch.contains(&format!("+++ b/{kept}")), "{kept}: {patch}");
    }
    for left in ["m.pyc", "new.o", "cache"] {
        assert!(!patch.contains(left), "{left}: {patch}");
    }
    assert_eq!(d.stats.ignored, 3, "src/m.pyc, build/new.o, cache/");
    assert!(d.stats.refused.is_empty(), "{:?}", d.stats.refused);
}
