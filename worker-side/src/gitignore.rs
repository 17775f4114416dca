//! Which new paths of the workdir the diff leaves out: those the packed revision's
//! `.gitignore` files ignore, with git's semantics (a file's patterns are relative to its
//! directory, deeper files take precedence, `!` re-includes, nothing below an excluded
//! directory can be re-included). The matching itself is the `ignore` crate's (ripgrep's).
//!
//! Guards against: a diff full of what running the tests leaves behind (`.pytest_cache/`,
//! `build/`, `*.pyc`: the gate would see new directories and send the job to a human), and a
//! generator choosing what is ignored: the rules come from the pack (the signed bundle), never
//! from the workdir, so a `.gitignore` the generator writes or edits changes nothing.
//! Does not check: tracked paths (a path in the packed tree is always diffed, as git tracks
//! it), `.git/info/exclude` or a global excludes file (not part of the revision).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use airlock_core::diff::IgnoreNew;
use anyhow::Result;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::tree::Base;

/// `.gitignore` files read, at most.
const MAX_FILES: usize = 1_000;
/// Bytes of one `.gitignore`, at most.
const MAX_BYTES: u64 = 1 << 20;

/// The ignore rules of one packed revision.
pub struct Rules {
    /// `(directory, its .gitignore)`, deepest directory first.
    files: Vec<(String, Gitignore)>,
}

/// The root every matcher is built at (a path that is never on disk: matching is lexical).
fn virtual_root(dir: &str) -> PathBuf {
    Path::new("/").join(dir)
}

impl Rules {
    /// Reads every `.gitignore` of the packed revision from the pack.
    pub fn from_base(base: &Base) -> Result<Rules> {
        Ok(Rules::from_files(base.packed_named(
            ".gitignore",
            MAX_FILES,
            MAX_BYTES,
        )?))
    }

    /// The rules of `.gitignore` files given as `(path of the file, its bytes)`, e.g.
    /// `("pkg/.gitignore", b"build/\n")`. A path not named `.gitignore` is left out: a
    /// directory has one such file, so the rules never depend on the order given.
    pub fn from_files(gitignores: Vec<(String, Vec<u8>)>) -> Rules {
        let mut files = Vec::new();
        for (path, bytes) in gitignores {
            let (dir, name) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
            if name != ".gitignore" {
                continue;
            }
            let dir = dir.to_owned();
            let mut b = GitignoreBuilder::new(virtual_root(&dir));
            for line in String::from_utf8_lossy(&bytes).lines() {
                // A malformed glob is skipped, as git skips what it cannot parse.
                let _ = b.add_line(None, line);
            }
            match b.build() {
                Ok(gi) if !gi.is_empty() => files.push((dir, gi)),
                Ok(_) => {}
                Err(e) => tracing::warn!(%path, "ignore rules left out: {e}"),
            }
        }
        files.sort_by_key(|f| std::cmp::Reverse(f.0.len()));
        Rules { files }
    }

    /// Whether any rule exists at all.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The decision of the deepest `.gitignore` that has one for `rel` itself: `Some(true)`
    /// ignored, `Some(false)` re-included, `None` no pattern matched.
    fn decide(&self, rel: &str, is_dir: bool) -> Option<bool> {
        let abs = virtual_root(rel);
        for (dir, gi) in &self.files {
            let applies = dir.is_empty() || rel.starts_with(&format!("{dir}/"));
            if !applies {
                continue;
            }
            let m = gi.matched(&abs, is_dir);
            if m.is_ignore() {
                return Some(true);
            }
            if m.is_whitelist() {
                return Some(false);
            }
        }
        None
    }

    /// Whether git would ignore the untracked path `rel` (`/`-separated, relative to the
    /// repository root): any directory above it excluded, else its own last matching rule.
    pub fn ignores(&self, rel: &str, is_dir: bool) -> bool {
        for (i, _) in rel.match_indices('/') {
            if self.decide(&rel[..i], true) == Some(true) {
                return true;
            }
        }
        self.decide(rel, is_dir) == Some(true)
    }

    /// The rules as the diff's filter of new paths.
    pub fn into_filter(self) -> Option<IgnoreNew> {
        if self.is_empty() {
            return None;
        }
        let rules = Arc::new(self);
        Some(IgnoreNew(Arc::new(move |rel: &str, is_dir: bool| {
            rules.ignores(rel, is_dir)
        })))
    }
}

#[cfg(test)]
impl Rules {
    fn of(files: &[(&str, &str)]) -> Rules {
        let files = files.iter().map(|(dir, text)| {
            let path = if dir.is_empty() {
                ".gitignore".to_owned()
            } else {
                format!("{dir}/.gitignore")
            };
            (path, text.as_bytes().to_vec())
        });
        Rules::from_files(files.collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_git_for_nested_files_negation_and_excluded_parents() {
        let r = Rules::of(&[
            (
                "",
                "*.pyc\n.pytest_cache/\nbuild/\n*.log\n!keep.log\n/top-only\n",
            ),
            ("pkg", "generated/\n!important.pyc\n"),
        ]);
        assert!(r.ignores("a.pyc", false));
        assert!(r.ignores("src/deep/m.pyc", false));
        assert!(r.ignores(".pytest_cache", true));
        assert!(
            !r.ignores(".pytest_cache", false),
            "a file named like a dir-only pattern"
        );
        assert!(r.ignores("build", true));
        assert!(
            r.ignores("build/x/y.o", false),
            "below an excluded directory"
        );
        assert!(r.ignores("x.log", false));
        assert!(!r.ignores("keep.log", false), "negation");
        assert!(r.ignores("top-only", false));
        assert!(
            !r.ignores("sub/top-only", false),
            "anchored to its .gitignore's directory"
        );
        assert!(r.ignores("pkg/generated", true));
        assert!(
            !r.ignores("generated", true),
            "a nested file's rule stays in its directory"
        );
        assert!(
            !r.ignores("pkg/important.pyc", false),
            "the deeper file re-includes"
        );
        assert!(!r.ignores("src/new.py", false));
    }

    #[test]
    fn no_rules_no_filter() {
        assert!(Rules::of(&[]).into_filter().is_none());
    }
}
