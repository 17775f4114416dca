//! The placement rules of the tree layer: where a changed file sits in the packed tree. A file
//! under `templates/` beside a `Chart.yaml` is a Helm template, a `.tpl`/`.tmpl` beside a deploy
//! descriptor is `iac`, any other file inside a deploy package (a Helm chart, a Nomad Pack)
//! below the root is `iac` (weakly: only out of `src` and `other`); a program beside an
//! infrastructure-as-code project file (Pulumi, AWS CDK, CDK for Terraform) is `iac` too; a
//! file inside a copied site theme (`themes/x/` holding Hugo's `theme.toml`) is `deps`; a file
//! a configuration-management module deploys (a Puppet module's `files/` and `templates/`, a
//! Chef cookbook's `libraries/`, a Salt formula's state directory) is `iac`, weakly; a Puppet
//! module's `metadata.json` is its dependency manifest (`deps`, weakly); a file inside a copied
//! release of another project (`test/googletest-1.16.0/` with its own `LICENSE`) is `deps`.
//!
//! Guards against: a chart's template or value file hidden under a directory name no path rule
//! knows; a file a Puppet, Chef or Salt module ships to the machines it manages passing as
//! source (`templates/vhost.erb`, `libraries/helpers.rb`) or data (`files/httpd`). Reads only
//! the tree's listing (no content), in time linear in the changed paths times their depth (each
//! lookup a binary search in the listing).

use std::collections::BTreeMap;

use crate::tree::{dir_of, Change, Paths, Raised};
use crate::Bucket;

/// A placement rule's bucket, id and whether it applies to `src` and `other` only (weak).
type Placed = (Bucket, &'static str, bool);

/// What a placement rule finds for a path: the directory or module it sits in.
type Finder = fn(&str, &Paths<'_>) -> Option<String>;

const INFRA: Placed = (Bucket::Iac, "iac.infra-program", true);
const CM: Placed = (Bucket::Iac, "iac.cm-module", true);
const METADATA: Placed = (Bucket::Deps, "deps.module-metadata", true);
const THEME: Placed = (Bucket::Deps, "deps.vendored-theme", true);
const RELEASE: Placed = (Bucket::Deps, "deps.vendored-release", false);
const LOADER: Placed = (Bucket::Build, "build.docs-data-loader", true);

/// The evidence of each rule below (`{}` stands for what its finder found).
const INFRA_WHY: &str = "a program of the infrastructure project {}";
const CM_WHY: &str = "a file of the {}";
const METADATA_WHY: &str = "the metadata of the Puppet module {}";
const THEME_WHY: &str = "inside the site theme {}/, a copy of another project";
const RELEASE_WHY: &str =
    "inside {}/, a release of another project copied in (its own licence or contributors file)";
const LOADER_WHY: &str = "a data loader of the VitePress site {}/, which its build runs";

/// The placement rules after the chart rules, in order: what each finds, its rule, evidence.
const PLACEMENTS: [(Finder, Placed, &str); 6] = [
    (infra_project, INFRA, INFRA_WHY),
    (cm_file, CM, CM_WHY),
    (puppet_metadata, METADATA, METADATA_WHY),
    (vendored_theme, THEME, THEME_WHY),
    (vendored_release, RELEASE, RELEASE_WHY),
    (vitepress_loader, LOADER, LOADER_WHY),
];

/// Helm templates and deploy templates, by where they sit in the tree.
pub(crate) fn placement(changes: &[Change<'_>], all: &Paths<'_>) -> BTreeMap<String, Raised> {
    let mut out = BTreeMap::new();
    let has = |dir: &str, names: &[&str]| {
        names.iter().any(|n| {
            let p = if dir.is_empty() {
                (*n).to_owned()
            } else {
                format!("{dir}/{n}")
            };
            all.contains(&p)
        })
    };
    let descriptor = |dir: &str| {
        has(
            dir,
            &[
                "Chart.yaml",
                "kustomization.yaml",
                "kustomization.yml",
                "docker-compose.yml",
                "compose.yaml",
                "main.tf",
                "helmfile.yaml",
            ],
        ) || {
            let prefix = if dir.is_empty() {
                String::new()
            } else {
                format!("{dir}/")
            };
            all.starting_with(&prefix)
                .into_iter()
                .filter(|f| !f[prefix.len()..].contains('/'))
                .any(|f| f.ends_with(".tf") || f.ends_with(".nomad") || f.ends_with(".nomad.hcl"))
        }
    };
    for c in changes {
        let comps: Vec<&str> = c.path.split('/').collect();
        if let Some(i) = comps[..comps.len().saturating_sub(1)]
            .iter()
            .position(|d| *d == "templates")
        {
            let chart = comps[..i].join("/");
            if has(&chart, &["Chart.yaml", "Chart.yml"]) {
                let at = if chart.is_empty() {
                    "Chart.yaml".to_owned()
                } else {
                    format!("{chart}/Chart.yaml")
                };
                out.insert(
                    c.path.to_owned(),
                    Raised::placed(
                        Bucket::Iac,
                        "iac.helm-template",
                        format!("a template of the chart {at}"),
                        false,
                    ),
                );
                continue;
            }
        }
        let package = (1..comps.len())
            .rev()
            .map(|n| comps[..n].join("/"))
            .find(|d| {
                has(d, &["Chart.yaml", "Chart.yml"])
                    || (has(d, &["metadata.hcl"]) && has(d, &["variables.hcl"]))
            });
        let media = [
            ".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".log", ".md",
        ]
        .iter()
        .any(|e| c.path.to_ascii_lowercase().ends_with(e));
        if let Some(root) = package.filter(|_| !media) {
            out.insert(
                c.path.to_owned(),
                Raised::placed(
                    Bucket::Iac,
                    "iac.package-file",
                    format!("inside the deploy package {root}/"),
                    true,
                ),
            );
        }
        let lower = c.path.to_ascii_lowercase();
        if [".tpl", ".tmpl", ".gotmpl"]
            .iter()
            .any(|e| lower.ends_with(e))
            && !lower.contains(".md.")
        {
            let dir = dir_of(c.path);
            if descriptor(dir) || descriptor(dir_of(dir)) {
                out.insert(
                    c.path.to_owned(),
                    Raised::placed(
                        Bucket::Iac,
                        "iac.deploy-template",
                        format!(
                            "beside a deploy descriptor in {}/",
                            if dir.is_empty() { "." } else { dir }
                        ),
                        false,
                    ),
                );
            }
        }
    }
    for c in changes {
        if out.contains_key(c.path) {
            continue;
        }
        let p = c.path;
        let found = PLACEMENTS
            .iter()
            .find_map(|(find, placed, why)| Some((*placed, why.replacen("{}", &find(p, all)?, 1))));
        if let Some(((bucket, rule, weak), because)) = found {
            out.insert(p.to_owned(), Raised::placed(bucket, rule, because, weak));
        }
    }
    out
}

/// The VitePress site `path` belongs to when it is a build-time data loader (round nine):
/// VitePress runs every `*.data.{js,ts,mjs,mts,cjs,cts}` a page imports when it builds the
/// site, so a loader in a directory at or below a site root (one holding
/// `.vitepress/config.*`) is code the documentation build runs.
fn vitepress_loader(path: &str, all: &Paths<'_>) -> Option<String> {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let (stem, ext) = name.rsplit_once('.')?;
    if !stem.ends_with(".data") || !matches!(ext, "js" | "ts" | "mjs" | "mts" | "cjs" | "cts") {
        return None;
    }
    let comps: Vec<&str> = path.split('/').collect();
    (0..comps.len()).rev().find_map(|n| {
        let site = comps[..n].join("/");
        let prefix = if site.is_empty() {
            ".vitepress/config.".to_owned()
        } else {
            format!("{site}/.vitepress/config.")
        };
        all.starting_with(&prefix)
            .into_iter()
            .any(|f| !f[prefix.len()..].contains('/'))
            .then(|| {
                if site.is_empty() {
                    ".".to_owned()
                } else {
                    site
                }
            })
    })
}

/// The theme directory `path` sits in, when it is a copy of a site theme: a directory under
/// `themes/` that holds the theme's own manifest (Hugo's `theme.toml`). Vendored code, whatever
/// its inner paths say (`exampleSite/`, `assets/plugins/`).
fn vendored_theme(path: &str, all: &Paths<'_>) -> Option<String> {
    let comps: Vec<&str> = path.split('/').collect();
    let i = comps.iter().position(|d| *d == "themes")?;
    if i + 2 >= comps.len() {
        return None;
    }
    let theme = comps[..=i + 1].join("/");
    ["theme.toml", "theme.yaml"]
        .iter()
        .any(|m| all.contains(&format!("{theme}/{m}")))
        .then_some(theme)
}

/// The directory `path` sits in, when it is a release of another project copied into the tree
/// (round fourteen): a directory named `<name>-<version>` (`googletest-1.16.0`,
/// `zlib-1.3.1`; a version of two or more numeric parts) that holds, at its top, the project's
/// own licence, copying, contributors or authors file. Vendored code, whatever its inner paths
/// say (`test/googletest-1.16.0/ci/`, `docs/`), as `vendor/` and `third_party/` are.
fn vendored_release(path: &str, all: &Paths<'_>) -> Option<String> {
    let comps: Vec<&str> = path.split('/').collect();
    (0..comps.len().saturating_sub(1)).find_map(|i| {
        let (name, version) = comps[i].rsplit_once('-')?;
        let parts: Vec<&str> = version.split('.').collect();
        let versioned = !name.is_empty()
            && parts.len() >= 2
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        if !versioned {
            return None;
        }
        let dir = comps[..=i].join("/");
        ["LICENSE", "LICENCE", "COPYING", "CONTRIBUTORS", "AUTHORS"]
            .iter()
            .flat_map(|n| ["", ".txt", ".md", ".rst"].map(|e| format!("{dir}/{n}{e}")))
            .any(|f| all.contains(&f))
            .then_some(dir)
    })
}

/// The configuration-management module `path` is a file of, as "`kind` `module`".
fn cm_file(path: &str, all: &Paths<'_>) -> Option<String> {
    let (module, kind) = cm_module(path, all)?;
    Some(format!(
        "{kind} {}",
        if module.is_empty() { "./" } else { &module }
    ))
}

/// The Puppet module whose `metadata.json` `path` is (a directory with `manifests/`): the
/// module's dependency manifest (the modules it requires, with versions) under a generic name.
fn puppet_metadata(path: &str, all: &Paths<'_>) -> Option<String> {
    let dir = dir_of(path);
    let name = path.rsplit('/').next().unwrap_or(path);
    let manifests = if dir.is_empty() {
        "manifests".to_owned()
    } else {
        format!("{dir}/manifests")
    };
    (name == "metadata.json" && all.has_under(&manifests)).then(|| {
        if dir.is_empty() {
            "./".to_owned()
        } else {
            format!("{dir}/")
        }
    })
}

/// Project files of infrastructure written in a general-purpose language.
const INFRA_PROJECTS: &[&str] = &["Pulumi.yaml", "Pulumi.yml", "cdk.json", "cdktf.json"];

/// Directories of such a project whose code is the infrastructure program (CDK's `bin/` and
/// `lib/`, `stacks/`, …); the project's own directory counts too.
const INFRA_DIRS: &[&str] = &[
    "bin",
    "lib",
    "stacks",
    "stack",
    "constructs",
    "infra",
    "src",
];

/// The project file `path` is a program of: one in its own directory, or in the parent of an
/// [`INFRA_DIRS`] directory holding it (at most two levels down).
fn infra_project(path: &str, all: &Paths<'_>) -> Option<String> {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let program = [
        ".ts", ".js", ".mjs", ".py", ".go", ".cs", ".fs", ".java", ".kt", ".yaml", ".yml",
    ]
    .iter()
    .any(|e| name.ends_with(e));
    if !program {
        return None;
    }
    let dir = dir_of(path);
    let project = |d: &str| {
        INFRA_PROJECTS.iter().find_map(|n| {
            let p = if d.is_empty() {
                (*n).to_owned()
            } else {
                format!("{d}/{n}")
            };
            all.contains(&p).then_some(p)
        })
    };
    if let Some(p) = project(dir) {
        return Some(p);
    }
    let comps: Vec<&str> = dir.split('/').collect();
    for up in 1..=2.min(comps.len()) {
        let (root, below) = comps.split_at(comps.len() - up);
        if INFRA_DIRS.contains(&below[0]) {
            if let Some(p) = project(&root.join("/")) {
                return Some(p);
            }
        }
    }
    None
}

/// Directories of a Puppet module whose files the module deploys or runs on the managed nodes
/// (`files/`, ERB and EPP `templates/`, Ruby facts and functions under `lib/`, …).
const PUPPET_DIRS: &[&str] = &[
    "files",
    "templates",
    "lib",
    "functions",
    "types",
    "facts.d",
    "tasks",
    "plans",
    "data",
    "manifests",
];

/// The same of a Chef cookbook (`libraries/*.rb`, `templates/default/*.erb`, …).
const CHEF_DIRS: &[&str] = &[
    "files",
    "templates",
    "libraries",
    "resources",
    "recipes",
    "attributes",
    "providers",
    "definitions",
];

/// The configuration-management module `path` belongs to, and its kind: a Puppet module (a
/// directory with `metadata.json` and `manifests/`), a Chef cookbook (`metadata.rb`, or
/// `metadata.json` with `recipes/` or `resources/`), whose files under the directories above
/// are what the module deploys; or a Salt formula's state directory (one holding `init.sls` or
/// `map.jinja`), every file of which a state may render or copy (`_mapdata.jinja`,
/// `files/default/x.conf`). Images and prose are left out. Each lookup is a binary search, so
/// this costs the path's depth.
fn cm_module(path: &str, all: &Paths<'_>) -> Option<(String, &'static str)> {
    let lower = path.to_ascii_lowercase();
    let media = [
        ".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".md", ".rst", ".txt",
    ]
    .iter()
    .any(|e| lower.ends_with(e));
    if media {
        return None;
    }
    let comps: Vec<&str> = path.split('/').collect();
    let join = |d: &str, n: &str| {
        if d.is_empty() {
            n.to_owned()
        } else {
            format!("{d}/{n}")
        }
    };
    for n in (1..comps.len()).rev() {
        let dir = comps[..n].join("/");
        let has = |name: &str| all.contains(&join(&dir, name));
        if has("init.sls") || has("map.jinja") {
            return Some((dir, "Salt formula state directory"));
        }
    }
    for n in (0..comps.len() - 1).rev() {
        let dir = comps[..n].join("/");
        let below = comps[n];
        let has = |name: &str| all.contains(&join(&dir, name));
        let has_dir = |name: &str| all.has_under(&join(&dir, name));
        if PUPPET_DIRS.contains(&below) && has("metadata.json") && has_dir("manifests") {
            return Some((dir, "Puppet module"));
        }
        if CHEF_DIRS.contains(&below)
            && (has("metadata.rb")
                || (has("metadata.json") && (has_dir("recipes") || has_dir("resources"))))
        {
            return Some((dir, "Chef cookbook"));
        }
    }
    None
}
