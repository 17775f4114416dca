//! airlock-classify: classifies changed paths into review buckets (`ci`, `iac`, `deps`, `build`, `governance`,
//! `agent`, `src`, `tests`, `docs`, `other`) so the gate policy can decide who must look.
//!
//! Every path gets exactly one bucket and the id of the rule that put it there
//! (`ci.github-workflow`, `deps.lockfile`, …). Rules are tried in the order of
//! `table::RULES` and the first match wins; `docs/CLASSIFY.md` lists them all and explains
//! the precedence.
//!
//! Guards against: naive-classifier gaps a hostile generator would use to slip a sensitive edit
//! into an unreviewed bucket: CI systems beyond GitHub (Jenkinsfile, `.circleci/`, Azure,
//! Buildkite, composite actions), lockfiles of every ecosystem, build scripts and git hooks,
//! agent instruction and editor files, Kubernetes manifests outside `k8s/` (found by content);
//! spellings that name the same file on a case-insensitive or normalising file system
//! (`.GitHub/Workflows/`, `Makefile` vs `makefile`, Unicode case and normalisation, Windows'
//! trailing dots and spaces, `\` separators); substring false positives (`src/k8sclient.go`
//! is source, not infrastructure).
//! On return: one bucket and one stable rule id. Content can only move a path *into* a rule's
//! bucket (Kubernetes or CloudFormation YAML into `iac`, a shebang script into `src`); it can
//! never move a path out of a bucket its name already decided.
//! Does not check: whether the path is acceptable at all (`airlock_core::paths` and the diff
//! parser do that first); 8.3 short names (`GITHUB~1`) and NTFS streams, which Git itself
//! refuses; what a file in `src` does when run.

use std::fmt;
use std::str::FromStr;

use globset::GlobBuilder;
use serde::{Deserialize, Serialize};

mod collection;
mod compiled;
pub mod content;
mod entry;
mod fed;
mod follow;
mod image;
mod links;
mod members;
mod placement;
mod product;
mod quiet;
pub mod reach;
mod root;
mod runners;
mod settings;
mod table;
mod template;
pub mod tree;
mod unclaimed;
pub use table::OTHER_RULE;
pub use unclaimed::UNCLAIMED_RULE;

/// Rule id given to every path if the built-in table failed to compile (fail closed).
pub const TABLE_BROKEN_RULE: &str = "governance.table-broken";

/// Bytes of a file's start that content rules look at; the rest is ignored.
pub const CONTENT_HINT_MAX_BYTES: usize = 64 * 1024;

/// A review bucket. Exactly one per changed path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bucket {
    /// Continuous integration and release pipelines.
    Ci,
    /// Infrastructure as code and deployment descriptors.
    Iac,
    /// Dependency manifests, lockfiles and vendored code.
    Deps,
    /// Build scripts, build-system files, git hooks, toolchain pins.
    Build,
    /// Repository controls: owners, git attributes, licenses, package-manager and bot config.
    Governance,
    /// Agent instructions and editor/agent configuration (a prompt injection can persist here).
    Agent,
    /// Source code.
    Src,
    /// Tests.
    Tests,
    /// Documentation.
    Docs,
    /// Anything else.
    Other,
}

impl Bucket {
    /// Every bucket, in the order used for reports and the policy file.
    pub const ALL: [Bucket; 10] = [
        Bucket::Ci,
        Bucket::Iac,
        Bucket::Deps,
        Bucket::Build,
        Bucket::Governance,
        Bucket::Agent,
        Bucket::Src,
        Bucket::Tests,
        Bucket::Docs,
        Bucket::Other,
    ];

    /// The bucket's name as written in policies, reports and JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            Bucket::Ci => "ci",
            Bucket::Iac => "iac",
            Bucket::Deps => "deps",
            Bucket::Build => "build",
            Bucket::Governance => "governance",
            Bucket::Agent => "agent",
            Bucket::Src => "src",
            Bucket::Tests => "tests",
            Bucket::Docs => "docs",
            Bucket::Other => "other",
        }
    }

    /// Position in [`Bucket::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Bucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error of [`Bucket::from_str`]: the name is not a bucket.
#[derive(Debug, thiserror::Error)]
#[error("unknown bucket {0:?} (expected one of ci, iac, deps, build, governance, agent, src, tests, docs, other)")]
pub struct UnknownBucket(String);

impl FromStr for Bucket {
    type Err = UnknownBucket;

    fn from_str(s: &str) -> Result<Bucket, UnknownBucket> {
        Bucket::ALL
            .into_iter()
            .find(|b| b.as_str() == s)
            .ok_or_else(|| UnknownBucket(s.chars().take(64).collect()))
    }
}

/// What the classifier says about one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Classification {
    /// The bucket.
    pub bucket: Bucket,
    /// Id of the rule that decided, e.g. `ci.github-workflow`; listed in `docs/CLASSIFY.md`.
    pub rule: &'static str,
}

/// The path as the classifier and the policy see it: `\` read as `/`, empty and `.` components
/// dropped, trailing dots and spaces of each component removed (Windows ignores them, so
/// `.github./workflows` is `.github/workflows` there). Case is kept.
pub fn normalize_path(path: &str) -> String {
    let unified = path.replace('\\', "/");
    let mut out: Vec<&str> = Vec::new();
    for comp in unified.split('/') {
        if comp.is_empty() || comp == "." {
            continue;
        }
        let trimmed = comp.trim_end_matches(['.', ' ']);
        out.push(if trimmed.is_empty() { comp } else { trimmed });
    }
    out.join("/")
}

/// [`normalize_path`], then folded the way case-insensitive file systems fold names: the
/// project's [`airlock_core::paths::collision_key`] (NFC, lowercase, NFC), plus the few
/// characters whose case folding is plain ASCII but whose lowercase is not (`ſ` is `s`, the
/// Latin ligatures `ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ`). Two paths with the same fold classify the same way.
pub fn fold_path(path: &str) -> String {
    let key = airlock_core::paths::collision_key(&normalize_path(path));
    if key.is_ascii() {
        return key;
    }
    let mut out = String::with_capacity(key.len());
    for c in key.chars() {
        match c {
            '\u{17f}' => out.push('s'),
            '\u{fb00}' => out.push_str("ff"),
            '\u{fb01}' => out.push_str("fi"),
            '\u{fb02}' => out.push_str("fl"),
            '\u{fb03}' => out.push_str("ffi"),
            '\u{fb04}' => out.push_str("ffl"),
            '\u{fb05}' | '\u{fb06}' => out.push_str("st"),
            other => out.push(other),
        }
    }
    out
}

/// Reads a glob: no `/` means "this file name at any depth"; a trailing `/**` also matches
/// the directory's own path, so a file or link put in its place (`.github/workflows` as a
/// symlink) falls under the same rule as its contents.
fn anchor(glob: &str) -> String {
    // A leading `/` anchors a file-name glob at the root (`/*.sh`: scripts at the root only).
    // (`?*` rather than `*`: globset would read `*.sh` as "any path ending in .sh".)
    if let Some(root) = glob.strip_prefix('/') {
        return match root.strip_prefix('*') {
            Some(rest) => format!("?*{rest}"),
            None => root.to_owned(),
        };
    }
    let glob = match glob.strip_suffix("/**") {
        Some(dir) if !dir.is_empty() => format!("{dir}{{,/**}}"),
        _ => glob.to_owned(),
    };
    if glob.contains('/') {
        glob
    } else {
        format!("**/{glob}")
    }
}

/// Compiles one glob with the syntax shared by the rule table and policy `[[paths]]` rules.
pub fn compile_glob(glob: &str, case_insensitive: bool) -> Result<globset::Glob, globset::Error> {
    build_glob(&anchor(glob), case_insensitive)
}

/// Compiles a glob already anchored (see [`anchor`]).
fn build_glob(glob: &str, case_insensitive: bool) -> Result<globset::Glob, globset::Error> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .empty_alternates(true)
        .backslash_escape(true)
        .case_insensitive(case_insensitive)
        .build()
}

/// Classifies one repository-relative path. `content_hint` is the file's content after the
/// change (its start is enough, see [`CONTENT_HINT_MAX_BYTES`]); pass `None` when unknown, e.g.
/// for a deleted file whose old content is not at hand.
///
/// ```
/// use airlock_classify::{classify_path, Bucket};
/// assert_eq!(classify_path("src/k8sclient.go", None).bucket, Bucket::Src);
/// assert_eq!(classify_path(".github/workflows/ci.yml", None).rule, "ci.github-workflow");
/// ```
pub fn classify_path(path: &str, content_hint: Option<&[u8]>) -> Classification {
    let name = classify_path_with(path, None);
    classify_content(path, name, content_hint, false)
}

/// The rule table alone (with its own content rule, the shebang of `src.shebang`).
fn classify_path_with(path: &str, content_hint: Option<&[u8]>) -> Classification {
    let head = content_hint.map(|c| &c[..c.len().min(CONTENT_HINT_MAX_BYTES)]);
    let Some(hits) = compiled::glob_hits(path) else {
        return Classification {
            bucket: Bucket::Governance,
            rule: TABLE_BROKEN_RULE,
        };
    };
    for i in hits {
        let Some(rule) = table::RULES.get(i) else {
            continue;
        };
        let content_ok = match rule.content {
            None => true,
            Some(test) => head.is_some_and(|h| content_matches(test, path, h)),
        };
        if content_ok {
            return Classification {
                bucket: rule.bucket,
                rule: rule.id,
            };
        }
    }
    if root::root_executable(path) {
        return Classification {
            bucket: Bucket::Build,
            rule: ROOT_EXECUTABLE_RULE,
        };
    }
    if root::root_pin(path) {
        return Classification {
            bucket: Bucket::Build,
            rule: "build.version-pin",
        };
    }
    Classification {
        bucket: Bucket::Other,
        rule: table::OTHER_RULE,
    }
}

/// Rule id of dotfiles of unknown tools: their content may show them data only
/// (`other.data-dotfile`, see `settings.rs`).
const TOOL_DOTFILE_RULE: &str = "build.tool-dotfile";

/// Rule id of data-only tool settings (see `settings.rs`).
const TOOL_SETTINGS_RULE: &str = "other.tool-settings";

/// Rule id of extensionless lowercase files at the root (`configure`-like scripts: `artisan`,
/// `bootstrap`, `runtests`), which no glob can express.
pub const ROOT_EXECUTABLE_RULE: &str = "build.root-executable";

/// Rule id of the files an Elixir Mix release copies as they are (`rel/overlays/…`).
const RELEASE_OVERLAY_RULE: &str = "src.release-overlay";

/// Whether the content could change `path`'s classification: some content rule matches the
/// name and comes before the rule the name alone reaches. Lets the gate skip building a file's
/// post-image when it would not matter.
pub fn needs_content(path: &str) -> bool {
    let name = classify_path_with(path, None);
    name.rule == table::OTHER_RULE
        || name.rule == TOOL_DOTFILE_RULE
        || name.rule == DOCS_DIR_RULE
        || content::may_raise(name.bucket)
}

/// A file under a documentation directory: a `#!` makes it `build.docs-script`.
const DOCS_DIR_RULE: &str = "docs.dir";

/// Runs one content test on the start of a file.
fn content_matches(test: table::ContentTest, path: &str, head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    match test {
        table::ContentTest::Shebang => head.starts_with(b"#!"),
        table::ContentTest::DataOnly => settings::data_only_dotfile(path, head),
        table::ContentTest::Text => !head.is_empty() && !head.contains(&0),
    }
}

/// Whether the tree layers may move a path out of `bucket`: `src`, `other`, `tests` (a fixture
/// a workflow runs) and `docs` (a script under `docs/` a build runs).
pub(crate) fn tree_may_raise(bucket: Bucket) -> bool {
    matches!(
        bucket,
        Bucket::Src | Bucket::Other | Bucket::Tests | Bucket::Docs
    )
}

/// Which layer decided a path's bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    /// The path's name (the rule table).
    Name,
    /// The file's content.
    Content,
    /// The packed tree: a CI or build entry point names the file, or where it sits.
    Tree,
}

/// A changed path, classified with the tree in view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Classified {
    /// Bucket and rule.
    #[serde(flatten)]
    pub class: Classification,
    /// The layer that decided.
    pub layer: Layer,
    /// Evidence from the tree layer (`run by .github/workflows/test.yml`), else `None`.
    pub because: Option<String>,
}

/// Classifies a change with the packed tree in view: for each of `changes` (path, content after
/// the change, executable bit), the name layer, then the content layer, then the tree layers
/// ([`reach::raise_by_tree`]: reachability from CI and build entry points, Helm placement).
/// Content and the tree move a path into a riskier bucket; the two exceptions, both read from
/// the tree (never the change) and never for `ci`, `agent` or `governance`, are a project file
/// of an example collection (`collection.rs`) and a program a package manifest declares
/// (`product.rs`), which reachability still raises. A file a link points at is classed under
/// the link's name too (`links.rs`). A pure function of its inputs.
pub fn classify_change(changes: &[reach::Change<'_>], tree: &dyn reach::Tree) -> Vec<Classified> {
    let mut out = classify_named(changes, tree);
    links::raise_through_links(changes, tree, &mut out);
    out
}

/// [`classify_change`] of each path under its own name only.
pub(crate) fn classify_named(
    changes: &[reach::Change<'_>],
    tree: &dyn reach::Tree,
) -> Vec<Classified> {
    // The tree is read only when it could change an answer (it only raises `src`, `other`,
    // `tests`, `docs`, and `build` into `ci`).
    // An example collection's projects (read from the tree's own listing, never the change):
    // worked out only when a changed path in a top-level directory could be quieted by it.
    let collection = changes
        .iter()
        .any(|c| {
            c.path.contains('/')
                && matches!(
                    classify_path(c.path, c.new).bucket,
                    Bucket::Build | Bucket::Deps | Bucket::Iac
                )
        })
        .then(|| collection::projects(tree.files()))
        .flatten()
        .unwrap_or_default();
    let could_raise = changes.iter().any(|c| {
        let b = classify_path(c.path, c.new).bucket;
        tree_may_raise(b) || b == Bucket::Build || collection::quiets(c.path, b, &collection)
    });
    let raised = if could_raise {
        reach::raise_by_tree(changes, tree)
    } else {
        Default::default()
    };
    // A change that keeps the mode says nothing of it: the tree's bit applies.
    let executable_in_tree = |path: &str| tree.files().get(path).is_some_and(|f| f.executable);
    let contents: Vec<(Classification, Classification)> = changes
        .iter()
        .map(|c| {
            let name = classify_path(c.path, None);
            let executable = c.executable || executable_in_tree(c.path);
            (name, classify_content(c.path, name, c.new, executable))
        })
        .collect();
    // Programs a package manifest of the tree declares (read from the tree, never the change).
    let lowered: Vec<&str> = changes
        .iter()
        .zip(&contents)
        .filter(|(_, (_, w))| product::LOWERED_RULES.contains(&w.rule))
        .map(|(c, _)| c.path)
        .collect();
    let declared = if lowered.is_empty() {
        Default::default()
    } else {
        product::programs_of(&lowered, tree)
    };
    changes
        .iter()
        .zip(contents)
        .map(|(c, (name, with_content))| {
            let with_content = if let Some(&rule) = declared.get(c.path) {
                Classification {
                    bucket: Bucket::Src,
                    rule,
                }
            } else {
                with_content
            };
            let with_content = if collection::quiets(c.path, with_content.bucket, &collection) {
                Classification {
                    bucket: Bucket::Other,
                    rule: collection::EXAMPLE_COLLECTION_RULE,
                }
            } else {
                with_content
            };
            let may = |r: &&reach::Raised| {
                // The fallback is the last word only when nothing else knows the path: what the
                // tree says of it (a deploy package's file, a script CI runs) comes first.
                if unclaimed::decided(with_content.rule) {
                    return true;
                }
                // CI runs with the repository's secrets: a build script a workflow runs is `ci`;
                // one a dev container or an editor runs on open is `agent`.
                if with_content.bucket == Bucket::Build
                    && matches!(r.bucket, Bucket::Ci | Bucket::Agent)
                {
                    return true;
                }
                // A test a build entry point runs (`make check` running `tests/jqtest`, a
                // fixture's own `meson.build` running its generator) is still a test: running
                // tests is what the test suite does. Only CI (with its secrets) or an agent
                // reaching it by name raises it.
                if with_content.bucket == Bucket::Tests && r.bucket == Bucket::Build {
                    return false;
                }
                if r.weak {
                    content::may_raise(with_content.bucket)
                } else {
                    tree_may_raise(with_content.bucket)
                }
            };
            // Example projects and generator templates: only reachability raises them, to the
            // bucket of what reaches them, and only when their name would be risky elsewhere.
            let quiet = quiet::QUIET_OTHER_RULES.contains(&with_content.rule);
            let may = |r: &&reach::Raised| {
                // A template is not runnable as it is: a line that enters its directory runs a
                // tool on that directory's own files, not on what lies deeper.
                let entered_above = r.nested && with_content.rule == quiet::GENERATOR_TEMPLATE_RULE;
                if quiet {
                    !r.weak
                        && !entered_above
                        && (!r.by_dir || quiet::risky_outside(c.path, with_content.rule, c.new))
                } else {
                    !r.by_dir && may(r)
                }
            };
            if let Some(r) = raised.get(c.path).filter(may) {
                return Classified {
                    class: Classification {
                        bucket: r.bucket,
                        rule: r.rule,
                    },
                    layer: Layer::Tree,
                    because: Some(r.because.clone()),
                };
            }
            Classified {
                layer: if [
                    collection::EXAMPLE_COLLECTION_RULE,
                    product::DECLARED_PROGRAM_RULE,
                ]
                .contains(&with_content.rule)
                {
                    Layer::Tree
                } else if with_content == name {
                    Layer::Name
                } else {
                    Layer::Content
                },
                class: with_content,
                because: None,
            }
        })
        .collect()
}

/// The content layer on top of a name classification, then the unclaimed-configuration
/// fallback (`unclaimed.rs`) for what no layer claimed.
fn classify_content(
    path: &str,
    name: Classification,
    content: Option<&[u8]>,
    executable: bool,
) -> Classification {
    let head = content.map(|h| &h[..h.len().min(CONTENT_HINT_MAX_BYTES)]);
    let found = classify_by_content(path, name, head, executable);
    if !unclaimed::reads(found.rule, path) {
        return found;
    }
    unclaimed::fallback(path, head, executable).unwrap_or(found)
}

/// The content layer on top of a name classification.
fn classify_by_content(
    path: &str,
    name: Classification,
    content: Option<&[u8]>,
    executable: bool,
) -> Classification {
    // The fallback is the last layer: a name it decided is read again with the content.
    let name = if unclaimed::decided(name.rule) {
        classify_path_with(path, None)
    } else {
        name
    };
    let Some(head) = content else { return name };
    let named = if name.rule == table::OTHER_RULE
        || name.rule == "src.code"
        || name.rule == TOOL_DOTFILE_RULE
        || name.rule == DOCS_DIR_RULE
    {
        // The table's own content rules (a shebang makes an unnamed file a script, under
        // `docs/` too; a dotfile of an unknown tool holding data only is
        // `other.data-dotfile`).
        classify_path_with(path, Some(head))
    } else {
        name
    };
    // Completions the product ships stay the product's, shebang or not.
    if !content::may_raise(named.bucket)
        || quiet::QUIET_OTHER_RULES.contains(&named.rule)
        || named.rule == "src.completion"
    {
        return named;
    }
    if named.rule == TOOL_SETTINGS_RULE {
        return match settings::format_can_load_code(path)
            && settings::settings_name_code(path, head)
        {
            true => Classification {
                bucket: Bucket::Build,
                rule: settings::SETTINGS_CODE_RULE,
            },
            false => named,
        };
    }
    match content::detect(path, head, executable) {
        // A release's own scripts (`src.release-overlay`, by name) sit in its `bin/`, which is
        // no tooling directory: the name table decided.
        Some(hit)
            if hit.rule == content::TOOLING_SCRIPT_RULE && named.rule == RELEASE_OVERLAY_RULE =>
        {
            named
        }
        Some(hit) => Classification {
            bucket: hit.bucket,
            rule: hit.rule,
        },
        None => named,
    }
}

#[cfg(test)]
mod corpus_tests;
#[cfg(test)]
mod tests;
