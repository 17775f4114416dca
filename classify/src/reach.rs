//! The tree layers of classification: what the packed tree says about a changed file
//! (placement rules are in `placement.rs`, the tree itself in `tree.rs`, which files are entry
//! points and what their text names in `entry.rs`). Reachability: the CI and build entry points
//! of the tree (workflows, GitLab/CircleCI/Azure/Drone/Buildkite/Travis files, Jenkinsfiles,
//! Makefiles, justfiles, `package.json` scripts, `tox.ini`, `noxfile.py`, `pyproject.toml`,
//! pre-commit, `mkdocs.yml`, `.bazelrc`) are read, and every repository file they name is
//! marked `ci` or `build`, with the entry point named; one level of indirection (what such a
//! file runs or sources) is followed.
//!
//! Guards against: a script a workflow runs hiding under a harmless name (`tools/check.sh`,
//! `src/release.py`), and hostile tree content: at most [`MAX_ENTRY_POINTS`] entry points and
//! [`MAX_READ_BYTES`] of each are read; only tokens that name an existing file count (so no
//! glob, variable or shell is evaluated), and nothing is executed. Bounded by the tree's size.
//! On return: for each changed path the tree raises, the bucket, rule id and the evidence.
//! What the entry points reach can be worked out once per revision ([`TreeReach`], kept in the
//! gate's index) and is then used only for a change that touches none of what it rests on.
//! Paths are read relative to the repository root, the naming file's directory and every
//! directory the file `cd`s into (`cd dev && pwsh ./gen.ps1`, `working-directory:`). Does not
//! follow: variables other than a leading `$VAR/` or `${…}/` prefix, a `cd` to a variable,
//! globs, remote actions and templates, a third level of indirection.

use std::collections::{BTreeMap, BTreeSet};

pub use crate::entry::entry_point;
use crate::entry::without_product_fields;
use crate::entry::{
    changed_into, config_data, config_reference, dir_arguments, editor_task_bucket, glob_dirs,
    normalise, runnable, tokens, version_file_input,
};
use crate::tree::{dir_of, Paths};
pub use crate::tree::{Change, MemTree, Raised, Tree, TreeReach, MAX_READ_BYTES};
use crate::{follow, Bucket};

/// Largest number of entry points read.
pub const MAX_ENTRY_POINTS: usize = 4096;

/// Rule ids of the tree layers, with what each means (for the documentation test).
#[cfg_attr(
    not(test),
    allow(dead_code, reason = "read by tests and the documentation test")
)]
pub const RULES: &[(&str, &str)] = &[
    ("ci.reached", "named by a CI entry point (a workflow's `run:`/`uses: ./…`, a GitLab `script:`/`include:`, a Jenkinsfile `sh`, a setup action's version file `go-version-file:`, …), or by a file such an entry point runs"),
    ("agent.reached", "read or run by an agent or an editor: imported or named by agent instructions (`CLAUDE.md` `@docs/x.md`, `AGENTS.md`, a Cursor or other `.<tool>/rules/` file), run by a dev container (`initializeCommand`, `postCreateCommand`, …) or by a VS Code task that runs on `folderOpen`, or by a file those run"),
    ("build.reached", "named by a build entry point (a Makefile or justfile recipe, a `package.json` script, `tox.ini`, `noxfile.py`, `pyproject.toml`, pre-commit, MkDocs hooks, `.bazelrc`, Cargo's `build =`, a Dockerfile `RUN` and the configuration and scripts its `COPY`/`ADD` bring into the image, a copied directory's included (not the product's source or assets), CMake, Meson, Gradle, a Bazel `genrule`, `setup.py`, an Nx project run by `nx run`, another VS Code task), or in a directory the build lists as part of it (Gradle's `include`, a Cargo or npm workspace's members, CMake's `add_subdirectory`, Meson's `subdir`), or by a file such an entry point runs (imports of reached Python and JavaScript scripts included, chains up to 8 steps, every file a glob or a name with a variable could match)"),
    ("iac.helm-template", "under a `templates/` directory whose parent holds a `Chart.yaml`"),
    ("iac.package-file", "any other file inside a deploy package below the root: a directory holding a Helm `Chart.yaml`, or a Nomad Pack `metadata.hcl` with `variables.hcl` (applies to `src` and `other` only)"),
    ("iac.infra-program", "a source file beside an infrastructure project file (`Pulumi.yaml`, `cdk.json`, `cdktf.json`) or in its `bin/`, `lib/`, `stacks/`, `constructs/`, `infra/`, `src/` (applies to `src` and `other` only)"),
    ("iac.cm-module", "a file a configuration-management module deploys: under `files/`, `templates/`, `lib/`, `functions/`, `types/`, `facts.d/`, `tasks/`, `plans/`, `data/` or `manifests/` of a Puppet module (a directory with `metadata.json` and `manifests/`), under `files/`, `templates/`, `libraries/`, `resources/`, `recipes/`, `attributes/`, `providers/` or `definitions/` of a Chef cookbook (`metadata.rb`, or `metadata.json` with `recipes/` or `resources/`), or anywhere in a Salt formula's state directory (one holding `init.sls` or `map.jinja`); images and prose left out (applies to `src` and `other` only)"),
    ("deps.module-metadata", "a Puppet module's `metadata.json` (beside its `manifests/`): the modules it requires, with their versions (applies to `src` and `other` only)"),
    ("deps.vendored-release", "a file inside a release of another project copied into the tree: a directory named `<name>-<version>` (`googletest-1.16.0`) holding its own `LICENSE`, `COPYING`, `CONTRIBUTORS` or `AUTHORS`, vendored code whatever its inner paths say"),
    ("deps.vendored-theme", "a file inside a copy of a site theme: a directory under `themes/` holding the theme's manifest (Hugo's `theme.toml`), vendored code whatever its inner paths say (applies to `src` and `other` only)"),
    ("other.example-collection", "a build, dependency or deployment file (never CI, agent or governance) inside a top-level project of an example collection: a repository whose packed tree has no build, dependency or deployment file at its root and at least 8 top-level directories, four in five of the top-level directories, each holding a project file (`compose.yaml`, `Dockerfile`, `package.json`, `go.mod`, …) at their top; only reachability raises it"),
    ("src.declared-program", "a file in a tooling directory or a script (`build.tooling-dir`, `build.tooling-script`, `build.shell-script`, `build.root-script`, `build.root-executable`) that a package manifest of the packed tree declares as a program it installs: `EXE_FILES` of a `Makefile.PL`, a gemspec's `executables` (in its `bindir`), `bin` of a `package.json` or `composer.json` in the file's directory or above; the product, not the developers' tooling; reachability still raises it"),
    ("src.path-command", "a file directly in the root `bin/` (`build.tooling-dir`) of a packed tree whose root holds no project file (no `Makefile`, `package.json`, `go.mod`, `Gemfile`, compose file, …): the commands a repository that builds nothing installs (a dotfiles repository's `bin/git-up`), the product, not a build's tooling; reachability still raises it"),
    ("build.docs-data-loader", "a VitePress build-time data loader (`*.data.{js,ts,mjs,mts,cjs,cts}`) at or below a site root holding `.vitepress/config.*`: the documentation build runs it (applies to `src` and `other` only)"),
    ("iac.deploy-template", "a `.tpl`/`.tmpl`/`.gotmpl` file in a directory (or its parent) holding a deploy descriptor (`Chart.yaml`, `kustomization.yaml`, `*.tf`, `*.nomad`, a compose file)"),
];

/// How the evidence of a directory a generator renders starts (`rendered by tests/x.sh, …`).
const RENDERED: &str = "rendered by ";

/// Most steps a chain of files is followed from its entry point (`ci.yml` runs `a.sh`, which
/// sources `b.sh`, which runs `c.py`, …).
pub const MAX_DEPTH: usize = 8;
/// Most files read beyond the entry points, over all steps.
pub const MAX_FOLLOWED: usize = 4096;
/// Most names with a glob or variable resolved in one tree.
pub const MAX_PATTERNS: usize = 256;

impl TreeReach {
    /// What the entry points of `tree` reach, with no change.
    pub fn of_tree(tree: &dyn Tree) -> TreeReach {
        TreeReach::find(&[], tree, &Paths::new(tree, &[]))
    }

    /// Reads the entry points (the changed ones as changed) and what they name, then what those
    /// name, up to [`MAX_DEPTH`] steps and [`MAX_FOLLOWED`] files.
    fn find(changes: &[Change<'_>], tree: &dyn Tree, all: &Paths<'_>) -> TreeReach {
        let mut found = TreeReach::default();
        let mut budget = Budget::default();
        let changed: BTreeMap<&str, &Change<'_>> = changes.iter().map(|c| (c.path, c)).collect();
        // Entry points, CI first so a file reached by both is `ci`, then agents and editors.
        let mut entries: Vec<(Bucket, &str)> = all
            .all()
            .into_iter()
            .filter_map(|p| entry_point(p).map(|b| (b, p)))
            .collect();
        entries.extend(crate::links::linked_entries(
            tree.links(),
            all,
            MAX_ENTRY_POINTS,
        ));
        // An example's or a template's own build files run only when something runs the
        // example: they are no entry points of the repository (CI running the example by
        // directory still raises what is in it).
        // What reaches one (`include examples/common.mk`) still follows what it runs.
        let projects = crate::collection::projects(tree.files()).unwrap_or_default();
        let quiet_entry =
            |b: Bucket, p: &str| b == Bucket::Build && crate::quiet::quiet_place(p, &projects);
        let followed_as_file = |p: &str| entry_point(p).is_none_or(|b| quiet_entry(b, p));
        entries.retain(|(b, p)| !quiet_entry(*b, p));
        entries.sort_by_key(|(b, _)| rank(*b));
        entries.truncate(MAX_ENTRY_POINTS);
        let read = |paths: &[&str]| -> Vec<Option<Vec<u8>>> {
            let from_tree: Vec<&str> = paths
                .iter()
                .copied()
                .filter(|p| !changed.contains_key(p))
                .collect();
            let mut tree_read = from_tree
                .iter()
                .copied()
                .zip(tree.read(&from_tree))
                .collect::<BTreeMap<_, _>>();
            paths
                .iter()
                .map(|p| match changed.get(p) {
                    Some(c) => c.new.map(|n| n[..n.len().min(MAX_READ_BYTES)].to_vec()),
                    None => tree_read.remove(p).flatten(),
                })
                .collect()
        };
        let entry_paths: Vec<&str> = entries.iter().map(|(_, p)| *p).collect();
        // Also read a changed entry point's old content (a deletion keeps what it ran in view).
        let texts = read(&entry_paths);
        // How each reached file was reached: its entry point and the files between.
        let mut chains: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
        for ((bucket, from), text) in entries.iter().zip(&texts) {
            let Some(text) = text else { continue };
            let bucket = editor_task_bucket(from, text, *bucket);
            let before: BTreeSet<String> = found.named_dirs.keys().cloned().collect();
            let mut named = found.named_by(from, text, all, true, bucket, &mut budget);
            // `make` run in a directory an entry point names (`$(MAKE) -C examples/x`, a glob
            // of example directories) runs that directory's Makefile as a file: what it
            // includes (`include ../Makefile-examples-base.mk`) is followed.
            for d in found.named_dirs.keys().filter(|d| !before.contains(*d)) {
                for name in ["Makefile", "GNUmakefile", "makefile"] {
                    let p = format!("{d}/{name}");
                    if all.contains(&p) && !named.contains(&p) {
                        named.push(p);
                    }
                }
            }
            for p in named {
                if let std::collections::btree_map::Entry::Vacant(e) = found.level1.entry(p) {
                    chains.insert(e.key().clone(), ((*from).to_owned(), Vec::new()));
                    e.insert((bucket, (*from).to_owned()));
                }
            }
        }
        let mut frontier: Vec<String> = found
            .level1
            .keys()
            .filter(|p| followed_as_file(p))
            .cloned()
            .collect();
        let mut followed = 0;
        for _ in 1..MAX_DEPTH {
            frontier.truncate(MAX_FOLLOWED.saturating_sub(followed));
            if frontier.is_empty() {
                break;
            }
            followed += frontier.len();
            // CI's files first, so a file both reach is `ci`.
            let reached_as = |p: &str| found.level1.get(p).or_else(|| found.level2.get(p)).cloned();
            let mut step: Vec<(String, (Bucket, String))> = frontier
                .iter()
                .filter_map(|p| reached_as(p).map(|r| (p.clone(), r)))
                .collect();
            step.sort_by_key(|(_, (b, _))| rank(*b));
            let paths: Vec<&str> = step.iter().map(|(p, _)| p.as_str()).collect();
            let texts = read(&paths);
            let mut next = Vec::new();
            for ((script, (bucket, _)), text) in step.iter().zip(&texts) {
                let Some(text) = text else { continue };
                let Some((entry, between)) = chains.get(script).cloned() else {
                    continue;
                };
                for p in found.named_by(script, text, all, false, *bucket, &mut budget) {
                    // A file CI runs is `ci`, whatever else also names it.
                    let ci_already = |m: &BTreeMap<String, (Bucket, String)>| {
                        m.get(&p).is_some_and(|(b, _)| *b == Bucket::Ci)
                    };
                    if ci_already(&found.level1) || ci_already(&found.level2) {
                        continue;
                    }
                    let seen = found.level1.contains_key(&p) || found.level2.contains_key(&p);
                    if *bucket == Bucket::Ci || !found.level2.contains_key(&p) {
                        let mut why = format!("run by {script}, which {entry} runs");
                        if !between.is_empty() {
                            why.push_str(&format!(" (through {})", between.join(" > ")));
                        }
                        found.level2.insert(p.clone(), (*bucket, why));
                        let mut through = between.clone();
                        through.push(script.clone());
                        chains.entry(p.clone()).or_insert((entry.clone(), through));
                    }
                    if !seen && followed_as_file(&p) {
                        next.push(p);
                    }
                }
            }
            frontier = next;
        }
        // A reached script runs in its own directory too (`go build ./...` beside it).
        let reached: Vec<(String, Bucket, String)> = found
            .level1
            .iter()
            .map(|(p, (b, e))| (p.clone(), *b, format!("run by {e}")))
            .chain(
                found
                    .level2
                    .iter()
                    .map(|(p, (b, w))| (p.clone(), *b, w.clone())),
            )
            .collect();
        for (p, bucket, why) in reached {
            let dir = dir_of(&p);
            if !dir.is_empty() && entry_point(&p).is_none() {
                let why = format!("beside {p}, {why}");
                found
                    .named_dirs
                    .entry(dir.to_owned())
                    .or_insert((bucket, why));
            }
        }
        found
    }

    /// Files named by `text` (the content of `from`, reached in `bucket`'s chain) that can run
    /// there, or that an agent reads there.
    fn named_by(
        &mut self,
        from: &str,
        text: &[u8],
        all: &Paths<'_>,
        level1: bool,
        bucket: Bucket,
        budget: &mut Budget,
    ) -> Vec<String> {
        let text = String::from_utf8_lossy(&text[..text.len().min(MAX_READ_BYTES)]);
        let text = match from.rsplit('/').next() {
            Some("package.json") => without_product_fields(&text).map_or(text, Into::into),
            Some("deno.json" | "deno.jsonc") => crate::fed::deno_tasks(&text).into(),
            _ => text,
        };
        let base = dir_of(from);
        let dirs = changed_into(&text);
        let mut out = BTreeSet::new();
        for d in &dirs {
            self.name_dir(d, "", all, bucket, from);
        }
        // Gradle's included projects, a workspace's members, CMake's and Meson's
        // subdirectories: built with the repository (`members.rs`).
        for d in follow::gradle_includes(from, &text)
            .into_iter()
            .chain(crate::members::members(from, &text))
        {
            self.name_dir(&d, base, all, bucket, from);
        }
        for (line, accept) in follow::counted_lines(follow::kind_of(from, bucket), &text) {
            if crate::template::renders_templates(&line) {
                for root in crate::template::template_roots(&all.all()) {
                    let why = format!("{RENDERED}{from}, which renders the template and runs it");
                    self.named_dirs.insert(root, (bucket, why));
                }
            }
            for p in self.nx(&line, all, budget) {
                out.insert(p);
            }
            // The test plans and schemes `xcodebuild` reads by name (`-testPlan macOS`).
            let xcode = crate::runners::xcode_names(&line);
            if !xcode.is_empty() && budget.take() {
                self.watched_dirs.insert(String::new());
                out.extend(
                    all.all()
                        .into_iter()
                        .filter(|p| xcode.iter().any(|n| p.rsplit('/').next() == Some(n)))
                        .take(follow::MAX_MATCHES)
                        .map(str::to_owned),
                );
            }
            for t in dir_arguments(&line) {
                self.name_dir(&t, base, all, bucket, from);
            }
            // What the line hands a program as its code or its dependencies (`fed.rs`).
            let fed = crate::fed::fed(&line);
            for t in &fed.files {
                let found = self.resolve(t, base, &dirs, &line, all, budget);
                out.extend(found.into_iter().filter(|p| p != from));
            }
            for (files, dir) in crate::fed::built(&fed, base, all, || budget.take()) {
                out.extend(files);
                self.watched_dirs.insert(dir);
            }
            for t in tokens(&line) {
                // A glob naming directories (`for d in examples/*/.`): what is in them may
                // run there.
                if t.ends_with('/') && t.contains(['*', '?']) && budget.take() {
                    for cand in [t.clone(), format!("{base}/{t}")] {
                        let Some(pattern) = normalise(&cand) else {
                            continue;
                        };
                        let dir = follow::literal_dir(&pattern);
                        let found = glob_dirs(&pattern, &all.starting_with(&format!("{dir}/")));
                        self.watched_dirs.insert(dir);
                        for d in &found {
                            self.name_dir(d.trim_end_matches('/'), "", all, bucket, from);
                        }
                        if !found.is_empty() {
                            break;
                        }
                    }
                }
                // A directory a Dockerfile copies onto its image's root (`image.rs`).
                if accept == follow::Accept::Overlay {
                    if let Some((dir, files)) =
                        crate::image::copied_dir(&t, base, all, || budget.take_overlay())
                    {
                        self.watched_dirs.insert(dir);
                        out.extend(files);
                    }
                }
                for p in self.resolve(&t, base, &dirs, &line, all, budget) {
                    if p == from {
                        continue;
                    }
                    // Configuration a tool reads: marked only where the line passes it as
                    // configuration (`-f`, `--config`, `--configuration`, `include`, …).
                    let ok = match accept {
                        follow::Accept::AnyFile => true,
                        follow::Accept::Document => follow::document(&p),
                        // A file a CI step's input hands the action to read (`go-version-file:`).
                        _ if level1 && version_file_input(&line) => true,
                        follow::Accept::Runnable if config_data(&p) => {
                            level1 && config_reference(&line)
                        }
                        // An example's build file is no entry point (`find`): one a text
                        // names (`include examples/common.mk`) runs as a file.
                        follow::Accept::Runnable => {
                            runnable(&p, all.executable(&p))
                                || (entry_point(&p) == Some(Bucket::Build)
                                    && crate::quiet::quiet_place(&p, &[]))
                        }
                        follow::Accept::Copied | follow::Accept::Overlay => {
                            follow::copied_config(&p)
                        }
                    };
                    if ok {
                        out.insert(p);
                    }
                }
            }
        }
        // What a reached script imports from the repository runs with it, and the local
        // extensions a Sphinx configuration loads.
        {
            let imported = follow::imports(from, &text);
            for p in imported
                .into_iter()
                .chain(follow::sphinx_extensions(from, &text))
            {
                let Some(p) = normalise(&p) else { continue };
                // A module, not a stylesheet or data file an import statement also names.
                if all.contains(&p) && p != from && runnable(&p, false) {
                    out.insert(p.clone());
                }
                self.watched.insert(p);
            }
        }
        out.into_iter().collect()
    }

    /// Records `token` (read from the root or from `base`) when it names an existing directory
    /// (`make -C examples/x`, `cd examples/x`): what is in it may run there.
    fn name_dir(&mut self, token: &str, base: &str, all: &Paths<'_>, bucket: Bucket, from: &str) {
        for cand in [token.to_owned(), format!("{base}/{token}")] {
            let Some(dir) = normalise(cand.trim_end_matches('/')) else {
                continue;
            };
            if !all.contains(&dir) && all.has_under(&dir) {
                let why = format!("in {dir}, which {from} names");
                self.named_dirs.entry(dir).or_insert((bucket, why));
                return;
            }
        }
    }

    /// The `project.json` files of the Nx projects `line` runs.
    fn nx(&mut self, line: &str, all: &Paths<'_>, budget: &mut Budget) -> Vec<String> {
        let Some(projects) = follow::nx_projects(line) else {
            return Vec::new();
        };
        if !budget.take() {
            return Vec::new();
        }
        // Which projects exist can change with any added file.
        self.watched_dirs.insert(String::new());
        all.all()
            .into_iter()
            .filter(|p| {
                let dir = dir_of(p);
                let name = dir.rsplit('/').next().unwrap_or(dir);
                p.rsplit('/').next() == Some("project.json")
                    && (projects.is_empty() || projects.iter().any(|n| n == name))
            })
            .take(follow::MAX_MATCHES)
            .map(str::to_owned)
            .collect()
    }

    /// Files of `all` a token names from a file in `base`: the file itself (root-, `base`- or
    /// `dirs`-relative), every file under a directory a `uses:` line names, or every file a
    /// name with a glob or variable could match. Each path tried is watched.
    fn resolve(
        &mut self,
        token: &str,
        base: &str,
        dirs: &[String],
        line: &str,
        all: &Paths<'_>,
        budget: &mut Budget,
    ) -> Vec<String> {
        let mut out = Vec::new();
        // The directories changed into only for what looks like a file (`./gen.ps1`,
        // `../tests/x.py`), not for every word of the text.
        let dirs = if token.contains(['/', '.']) {
            dirs
        } else {
            &[]
        };
        let bases = std::iter::once(base).chain(dirs.iter().map(String::as_str));
        let cands = std::iter::once(token.to_owned()).chain(bases.map(|b| format!("{b}/{token}")));
        if let Some(pattern) = follow::pattern(token) {
            for cand in cands {
                let Some(pattern) = follow::pattern(&cand).or(Some(pattern.clone())) else {
                    continue;
                };
                let Some(pattern) = normalise(&pattern) else {
                    continue;
                };
                if !budget.take() {
                    break;
                }
                let dir = follow::literal_dir(&pattern);
                let prefix = if dir.is_empty() {
                    dir.clone()
                } else {
                    format!("{dir}/")
                };
                out.extend(
                    all.starting_with(&prefix)
                        .into_iter()
                        .filter(|p| follow::matches(&pattern, p))
                        .take(follow::MAX_MATCHES)
                        .map(str::to_owned),
                );
                self.watched_dirs.insert(dir);
                if !out.is_empty() {
                    break;
                }
            }
            return out;
        }
        for cand in cands {
            let Some(p) = normalise(&cand) else { continue };
            if all.contains(&p) {
                out.push(p.clone());
            } else if line.contains("uses:") {
                out.extend(
                    all.starting_with(&format!("{p}/"))
                        .into_iter()
                        .map(str::to_owned),
                );
                self.watched_dirs.insert(p.clone());
            }
            self.watched.insert(p);
            if !out.is_empty() {
                break;
            }
        }
        out
    }
}

/// Order in which entry points and reached files are read: CI, then agents and editors, then
/// builds (the first to reach a file gives its bucket).
fn rank(bucket: Bucket) -> usize {
    match bucket {
        Bucket::Ci => 0,
        Bucket::Agent => 1,
        _ => 2,
    }
}

/// How many names with a glob or variable (and Nx commands), and how many directories copied
/// onto an image's root, one tree may still resolve: each costs a scan of part of the listing.
/// The copies have their own count, so a long Jenkinsfile's variables do not use it up.
struct Budget(usize, usize);

impl Default for Budget {
    fn default() -> Budget {
        Budget(MAX_PATTERNS, crate::image::MAX_OVERLAYS)
    }
}

impl Budget {
    fn take(&mut self) -> bool {
        let ok = self.0 > 0;
        self.0 = self.0.saturating_sub(1);
        ok
    }

    fn take_overlay(&mut self) -> bool {
        let ok = self.1 > 0;
        self.1 = self.1.saturating_sub(1);
        ok
    }
}

/// What the tree says about each changed path, keyed by path. Only paths that the tree
/// raises are in the map; the caller decides whether a raise applies (never out of a riskier
/// bucket than the name's). What the entry points reach is read from the tree's own
/// [`TreeReach`] when it has one the change leaves as it is, else worked out here.
pub fn raise_by_tree(changes: &[Change<'_>], tree: &dyn Tree) -> BTreeMap<String, Raised> {
    let all = Paths::new(tree, changes);
    let mut out = crate::placement::placement(changes, &all);
    let found;
    let reach = match tree.reach() {
        Some(r) if r.holds_for(changes) => r,
        _ => {
            found = TreeReach::find(changes, tree, &all);
            &found
        }
    };
    for c in changes {
        let direct = reach
            .level1
            .get(c.path)
            .map(|(b, e)| (*b, format!("run by {e}")));
        let indirect = reach.level2.get(c.path).map(|(b, why)| (*b, why.clone()));
        let hit = match (direct, indirect) {
            (Some(d), Some(i)) if d.0 != Bucket::Ci && i.0 == Bucket::Ci => Some(i),
            (Some(d), _) => Some(d),
            (None, i) => i,
        };
        // A file under a directory a reached text names (an example project CI builds).
        let by_dir = hit.is_none();
        let mut nested = false;
        let hit = hit.or_else(|| {
            let mut dirs =
                std::iter::successors(Some(c.path), |p| p.rsplit_once('/').map(|(d, _)| d));
            dirs.find_map(|d| {
                reach.named_dirs.get(d).map(|(b, why)| {
                    nested = d != dir_of(c.path) && !why.starts_with(RENDERED);
                    (*b, why.clone())
                })
            })
        });
        if let Some((bucket, because)) = hit {
            // A directory an entry point names says less than the file's own place (a chart's
            // template): it does not replace what placement found, unless that was weak.
            if by_dir && out.get(c.path).is_some_and(|placed| !placed.weak) {
                continue;
            }
            let rule = match bucket {
                Bucket::Ci => "ci.reached",
                Bucket::Agent => "agent.reached",
                _ => "build.reached",
            };
            out.insert(
                c.path.to_owned(),
                Raised {
                    bucket,
                    rule,
                    because,
                    weak: false,
                    by_dir,
                    nested,
                },
            );
        }
    }
    out
}

#[cfg(test)]
#[path = "reach_tests.rs"]
mod tests;
