//! Entry point of the `gitignore` fuzz target (`fuzz/fuzz_targets/gitignore.rs`): any set of
//! `.gitignore` files and any paths through [`Rules`]. Not a stable API: compiled only under
//! `cfg(fuzzing)` and for this crate's unit tests, which run it on the committed seeds
//! (`fuzz/corpus/gitignore/`) and compare the seeds' answers with real git.
//!
//! Input: text. `=== PATH` starts a `.gitignore` file at PATH (its lines follow), `--- paths`
//! starts the paths to ask about, one a line, a trailing `/` marking a directory.
//! Guards against: a matcher that panics on hostile patterns or paths, and one that breaks
//! git's rules the diff relies on.
//! Invariants asserted, for well-formed paths (non-empty `/`-separated names, none `.` or
//! `..`):
//! - nothing below an ignored directory is re-included: if a directory above a path is
//!   ignored, the path is ignored;
//! - a `.gitignore` rules only its own directory's subtree: the answer is the same with only
//!   the files of the path's ancestor directories;
//! - the order the files come in changes nothing.

use std::collections::HashMap;

use crate::gitignore::Rules;

/// Paths asked about per input, at most (each check rebuilds the rules).
const MAX_PATHS: usize = 64;

/// What the rules said about the paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Some well-formed path was ignored and some was not.
    Mixed,
    /// Every well-formed path got the same answer, or there was none.
    Uniform,
}

/// One input, split.
#[derive(Debug, Default)]
pub struct Case {
    /// `(path of the .gitignore, its bytes)`, first of each path kept.
    pub files: Vec<(String, Vec<u8>)>,
    /// `(path, is_dir)`.
    pub paths: Vec<(String, bool)>,
}

/// Splits an input into its files and paths (see the module doc).
pub fn parse_case(data: &[u8]) -> Case {
    let text = String::from_utf8_lossy(data);
    let mut case = Case::default();
    let mut in_paths = false;
    for line in text.split('\n') {
        if let Some(path) = line.strip_prefix("=== ") {
            in_paths = false;
            if !case.files.iter().any(|(p, _)| p == path) {
                case.files.push((path.to_owned(), Vec::new()));
            }
            continue;
        }
        if line == "--- paths" {
            in_paths = true;
            continue;
        }
        if in_paths {
            if case.paths.len() < MAX_PATHS && !line.is_empty() {
                match line.strip_suffix('/') {
                    Some(dir) => case.paths.push((dir.to_owned(), true)),
                    None => case.paths.push((line.to_owned(), false)),
                }
            }
        } else if let Some((_, bytes)) = case.files.last_mut() {
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
        }
    }
    case
}

/// A relative path as the worker's tree walk produces them.
fn well_formed(path: &str) -> bool {
    !path.is_empty()
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains('\0'))
}

/// The directory a `.gitignore` at `path` rules.
fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// True if `dir` is the root or a directory above `path`.
fn is_ancestor(dir: &str, path: &str) -> bool {
    dir.is_empty() || path.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
}

/// The `gitignore` target: builds the rules, asks about every path, checks the invariants.
pub fn gitignore(data: &[u8]) -> Outcome {
    let case = parse_case(data);
    let rules = Rules::from_files(case.files.clone());
    let mut reversed = case.files.clone();
    reversed.reverse();
    let reversed = Rules::from_files(reversed);
    let (mut ignored, mut kept) = (false, false);
    let mut by_subset: HashMap<Vec<usize>, Rules> = HashMap::new();
    for (path, is_dir) in &case.paths {
        let answer = rules.ignores(path, *is_dir);
        if !well_formed(path) {
            continue;
        }
        ignored |= answer;
        kept |= !answer;
        assert_eq!(
            reversed.ignores(path, *is_dir),
            answer,
            "{path:?}: the order of the .gitignore files changed the answer"
        );
        for (i, _) in path.match_indices('/') {
            if rules.ignores(&path[..i], true) {
                assert!(
                    answer,
                    "{path:?} is not ignored below the ignored directory {:?}",
                    &path[..i]
                );
            }
        }
        let own: Vec<usize> = (0..case.files.len())
            .filter(|&i| is_ancestor(dir_of(&case.files[i].0), path))
            .collect();
        if own.len() != case.files.len() {
            // Paths of one directory share their subset: built once.
            let subset = by_subset.entry(own).or_insert_with_key(|own| {
                Rules::from_files(own.iter().map(|&i| case.files[i].clone()).collect())
            });
            assert_eq!(
                subset.ignores(path, *is_dir),
                answer,
                "{path:?}: a .gitignore outside its ancestors changed the answer"
            );
        }
    }
    if ignored && kept {
        Outcome::Mixed
    } else {
        Outcome::Uniform
    }
}

#[cfg(test)]
#[path = "fuzzing_tests.rs"]
mod tests;
