//! Generator templates a CI or build line renders: `cookiecutter ../../` (a test script that
//! generates the project and then builds and runs it) makes every file of the repository's
//! templates (`{{cookiecutter.project_slug}}/…`) run there, in the bucket of what renders it;
//! a line that only enters a template's directory (`working-directory:` of a pre-commit
//! update job) raises only the files directly in that directory (`lib.rs`, quiet rules).
//!
//! Guards against: a template's Dockerfile, compose files or environment files that CI runs
//! after generating the project passing as `other.generator-template`. Read from the entry
//! points' and reached scripts' text only (nothing executed); at most 16 template roots, found
//! in one pass over the tree's paths, and only for a line that runs a generator.

/// Whether `line` runs a project generator on a template (`cookiecutter ../../`,
/// `copier copy . out`, `cruft create .`): what it generates is then built and run.
pub(crate) fn renders_templates(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.iter().enumerate().any(|(i, w)| {
        let w = w.rsplit('/').next().unwrap_or(w);
        let installs = i > 0 && matches!(words[i - 1], "install" | "add" | "-U" | "--upgrade");
        (w == "cookiecutter" && !installs)
            || (matches!(w, "copier" | "cruft")
                && words
                    .get(i + 1)
                    .is_some_and(|n| matches!(*n, "copy" | "create" | "run")))
    })
}

/// The roots of the generator templates among `paths` (`{{cookiecutter.project_slug}}`, at
/// most 16): the directory up to the first component holding a `{{` placeholder.
pub(crate) fn template_roots(paths: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in paths {
        let comps: Vec<&str> = p.split('/').collect();
        let Some(i) = comps[..comps.len().saturating_sub(1)]
            .iter()
            .position(|c| c.contains("{{") && c.contains("}}"))
        else {
            continue;
        };
        let root = comps[..=i].join("/");
        if !out.contains(&root) {
            out.push(root);
            if out.len() >= 16 {
                break;
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "template_tests.rs"]
mod tests;
