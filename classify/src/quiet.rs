//! Quiet rules: example projects, generator templates, service-catalog metadata and the
//! projects of an example collection are `other` whatever their names say, and only
//! reachability raises them (`docs/CLASSIFY.md`, "Risk follows what runs", 3).
//!
//! Guards against: a quiet rule hiding a file that runs. A quiet path is raised when an entry
//! point names it, or names its directory and the path would be risky outside the quiet place
//! (a `Makefile`, a Dockerfile, a manifest); an example's own build files are no entry points
//! of the repository (`quiet_place`), so they do not raise the example's other files.

use crate::{classify_path, collection, compiled, content, table, Bucket, CONTENT_HINT_MAX_BYTES};

/// Name rules whose `other` is final for the content layer and placement: only reachability
/// raises what they match (`docs/CLASSIFY.md`, "Risk follows what runs").
pub(crate) const QUIET_OTHER_RULES: &[&str] = &[
    "other.example-project",
    collection::EXAMPLE_COLLECTION_RULE,
    GENERATOR_TEMPLATE_RULE,
    "other.service-catalog",
];

/// Rule id of generator templates.
pub(crate) const GENERATOR_TEMPLATE_RULE: &str = "other.generator-template";

/// Whether `path` lies in an example project, a generator template or a project of the example
/// collection `projects`: a build file there runs only when something runs the example.
pub(crate) fn quiet_place(path: &str, projects: &[String]) -> bool {
    let rule = classify_path(path, None).rule;
    ["other.example-project", GENERATOR_TEMPLATE_RULE].contains(&rule)
        || collection::quiets(path, Bucket::Build, projects)
}

/// Whether `path`, matched by the quiet rule `quiet`, would be in a risky bucket were it not an
/// example or a template (a `Makefile`, a `package.json`, a Dockerfile): a directory an entry
/// point names then makes it run.
pub(crate) fn risky_outside(path: &str, quiet: &str, content: Option<&[u8]>) -> bool {
    let Some(hits) = compiled::glob_hits(path) else {
        return true;
    };
    let outside = hits
        .into_iter()
        .filter_map(|i| table::RULES.get(i))
        .find(|r| r.id != quiet && !QUIET_OTHER_RULES.contains(&r.id) && r.content.is_none())
        .map(|r| r.bucket);
    let by_content = content.and_then(|h| {
        content::detect(path, &h[..h.len().min(CONTENT_HINT_MAX_BYTES)], false).map(|h| h.bucket)
    });
    outside.into_iter().chain(by_content).any(|b| {
        !matches!(
            b,
            Bucket::Src | Bucket::Tests | Bucket::Docs | Bucket::Other
        )
    })
}
