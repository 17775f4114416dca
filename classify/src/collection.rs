//! Example collections: a repository whose top-level directories are each a project of their
//! own (awesome-compose's `flask/`, `react-nginx/`, …) and whose root builds nothing. A build,
//! dependency or deployment file inside one of those projects (its `Dockerfile`, `go.sum`,
//! `nginx.conf`, compose file) runs only when something runs that project, like a file under
//! `examples/`; it is `other.example-collection`, which only reachability raises (a workflow
//! that builds `flask/` by name or by directory), in the bucket of what reaches it.
//!
//! Guards against a hostile change using the rule to quiet a whole repository: the layout is
//! read from the packed tree's own listing (the trusted base), never from the change, so
//! deleting or renaming root manifests or CI in the same change does not make a product
//! repository a collection, nor does adding project directories; the root must hold no build,
//! dependency or deployment file (a root `Makefile`, `package.json`, `go.mod`, compose file…),
//! at least [`MIN_PROJECTS`] top-level directories must each hold a project file at their top,
//! and they must be four in five of the top-level directories; only paths whose name rule says
//! `build`, `deps` or `iac` are quieted, never `ci`, `agent` or `governance` (a nested workflow,
//! agent instructions, a licence or a `.gitignore` keep their bucket), and never a path in a
//! dot-directory at the root (`.github/`). Cost: one binary search per top-level entry of the
//! listing (at most [`MAX_TOP_ENTRIES`], past which the tree is not read as a collection) and
//! per project file name, once per change.

use crate::tree::Listing;
use crate::{classify_path, Bucket};

/// Rule id of a build, dependency or deployment file inside a project of an example collection.
pub(crate) const EXAMPLE_COLLECTION_RULE: &str = "other.example-collection";

/// Fewest top-level project directories that make a collection.
pub(crate) const MIN_PROJECTS: usize = 8;

/// Most top-level entries (root files and directories) read; a larger root is not a collection.
pub(crate) const MAX_TOP_ENTRIES: usize = 1024;

/// Files whose presence at a directory's top makes it a project of its own.
const PROJECT_FILES: &[&str] = &[
    "compose.yaml",
    "compose.yml",
    "docker-compose.yml",
    "docker-compose.yaml",
    "Dockerfile",
    "package.json",
    "go.mod",
    "Cargo.toml",
    "pyproject.toml",
    "requirements.txt",
    "setup.py",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
    "Makefile",
    "CMakeLists.txt",
    "Gemfile",
    "composer.json",
    "mix.exs",
    "Chart.yaml",
    "main.tf",
    "kustomization.yaml",
    "deno.json",
    "pubspec.yaml",
    "Package.swift",
];

/// The top-level project directories of `listing` when it is an example collection, else
/// `None`.
pub(crate) fn projects(listing: &Listing) -> Option<Vec<String>> {
    let mut dirs: Vec<&str> = Vec::new();
    let files: &[crate::tree::TreeFile] = listing;
    let mut i = 0;
    let mut entries = 0;
    while let Some(f) = files.get(i) {
        entries += 1;
        if entries > MAX_TOP_ENTRIES {
            return None;
        }
        match f.path.split_once('/') {
            None => {
                // A root file that builds, pins dependencies or deploys: the root is a
                // project, so its directories are its parts, not examples.
                if matches!(
                    classify_path(&f.path, None).bucket,
                    Bucket::Build | Bucket::Deps | Bucket::Iac
                ) {
                    return None;
                }
                i += 1;
            }
            Some((top, _)) => {
                if !top.starts_with('.') {
                    dirs.push(top);
                }
                i += listing.starting_with(&format!("{top}/")).len().max(1);
            }
        }
    }
    let projects: Vec<String> = dirs
        .iter()
        .filter(|d| is_project(listing, d))
        .map(|d| (*d).to_owned())
        .collect();
    (projects.len() >= MIN_PROJECTS && projects.len() * 5 >= dirs.len() * 4).then_some(projects)
}

/// Whether the directory `dir` of `listing` (`""` for the root) holds a project file at its top
/// (a `Makefile`, `package.json`, `go.mod`, compose file, …: [`PROJECT_FILES`]).
pub(crate) fn is_project(listing: &Listing, dir: &str) -> bool {
    PROJECT_FILES.iter().any(|p| {
        let path = if dir.is_empty() {
            (*p).to_owned()
        } else {
            format!("{dir}/{p}")
        };
        listing.get(&path).is_some()
    })
}

/// Whether a path whose name and content decided `bucket` is quieted as a file of a project of
/// the collection `projects`.
pub(crate) fn quiets(path: &str, bucket: Bucket, projects: &[String]) -> bool {
    matches!(bucket, Bucket::Build | Bucket::Deps | Bucket::Iac)
        && path
            .split_once('/')
            .is_some_and(|(top, _)| projects.iter().any(|p| p == top))
}

#[cfg(test)]
#[path = "collection_tests.rs"]
mod tests;
