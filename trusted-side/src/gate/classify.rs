//! Classifies changed paths into review buckets (`ci`, `iac`, `deps`, `build`, `governance`,
//! `agent`, `src`, `tests`, `docs`, `other`) so the gate policy can decide who must look.
//!
//! Every path gets exactly one bucket and the id of the rule that put it there
//! (`ci.github-workflow`, `deps.lockfile`, …). Rules are tried in the order of
//! [`table::RULES`] and the first match wins; `docs/CLASSIFY.md` lists them all and explains
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
use std::io::{self, Read};
use std::path::Path;
use std::str::FromStr;

use anyhow::{bail, Context};
use globset::GlobBuilder;
use serde::{Deserialize, Serialize};

use super::policy::{Policy, Verdict};
use super::{content, reach};

#[path = "classify_table.rs"]
mod table;

/// The rule table's globs compiled once per process: `folded` is matched against the folded
/// path, `exact` against the normalised one; `*_rule` maps a glob's index to its rule's position.
struct Compiled {
    folded: globset::GlobSet,
    folded_rule: Vec<usize>,
    exact: globset::GlobSet,
    exact_rule: Vec<usize>,
}

/// The compiled table, or why it did not compile (a unit test keeps it compiling; a gate that
/// still meets a broken table sends every path to a human, see [`TABLE_BROKEN_RULE`]).
static COMPILED: std::sync::LazyLock<Result<Compiled, String>> =
    std::sync::LazyLock::new(compile_table);

/// Rule id given to every path if the built-in table failed to compile (fail closed).
pub const TABLE_BROKEN_RULE: &str = "governance.table-broken";

/// Bytes of a file's start that content rules look at; the rest is ignored.
pub const CONTENT_HINT_MAX_BYTES: usize = 64 * 1024;

/// Largest list of paths `airlock classify` reads from stdin.
const MAX_STDIN_BYTES: u64 = 64 * 1024 * 1024;

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
pub(crate) fn compile_glob(
    glob: &str,
    case_insensitive: bool,
) -> Result<globset::Glob, globset::Error> {
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

/// Expands `{a,b}` alternations (not nested) into one glob each, so that most table globs
/// become a plain file name or extension, which globset matches without a regex.
fn expand_braces(glob: &str) -> Vec<String> {
    let Some(open) = glob.find('{') else {
        return vec![glob.to_owned()];
    };
    let Some(close) = glob[open..].find('}').map(|c| open + c) else {
        return vec![glob.to_owned()];
    };
    let (head, tail) = (&glob[..open], &glob[close + 1..]);
    glob[open + 1..close]
        .split(',')
        .flat_map(|alt| expand_braces(&format!("{head}{alt}{tail}")))
        .collect()
}

/// Compiles [`table::RULES`] into two glob sets (folded, exact).
fn compile_table() -> Result<Compiled, String> {
    let mut folded = globset::GlobSetBuilder::new();
    let mut exact = globset::GlobSetBuilder::new();
    let (mut folded_rule, mut exact_rule) = (Vec::new(), Vec::new());
    for (i, rule) in table::RULES.iter().enumerate() {
        for (globs, set, map) in [
            (rule.globs, &mut folded, &mut folded_rule),
            (rule.exact_globs, &mut exact, &mut exact_rule),
        ] {
            for g in globs.iter().flat_map(|g| expand_braces(&anchor(g))) {
                set.add(build_glob(&g, false).map_err(|e| format!("{}: {e}", rule.id))?);
                map.push(i);
            }
        }
    }
    Ok(Compiled {
        folded: folded.build().map_err(|e| e.to_string())?,
        folded_rule,
        exact: exact.build().map_err(|e| e.to_string())?,
        exact_rule,
    })
}

/// Positions in the rule table whose globs match `path`, ascending, without content tests;
/// `None` when the table did not compile.
fn glob_hits(path: &str) -> Option<Vec<usize>> {
    let compiled = COMPILED.as_ref().ok()?;
    let norm = normalize_path(path);
    let mut hits: Vec<usize> = compiled
        .folded
        .matches(fold_path(&norm))
        .into_iter()
        .filter_map(|g| compiled.folded_rule.get(g).copied())
        .collect();
    hits.extend(
        compiled
            .exact
            .matches(&norm)
            .into_iter()
            .filter_map(|g| compiled.exact_rule.get(g).copied()),
    );
    hits.sort_unstable();
    hits.dedup();
    Some(hits)
}

/// Classifies one repository-relative path. `content_hint` is the file's content after the
/// change (its start is enough, see [`CONTENT_HINT_MAX_BYTES`]); pass `None` when unknown, e.g.
/// for a deleted file whose old content is not at hand.
///
/// ```ignore
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
    let Some(hits) = glob_hits(path) else {
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
            Some(test) => head.is_some_and(|h| content_matches(test, h)),
        };
        if content_ok {
            return Classification {
                bucket: rule.bucket,
                rule: rule.id,
            };
        }
    }
    if root_executable(path) {
        return Classification {
            bucket: Bucket::Build,
            rule: ROOT_EXECUTABLE_RULE,
        };
    }
    Classification {
        bucket: Bucket::Other,
        rule: table::OTHER_RULE,
    }
}

/// Rule id of extensionless lowercase files at the root (`configure`-like scripts: `artisan`,
/// `bootstrap`, `runtests`), which no glob can express.
pub const ROOT_EXECUTABLE_RULE: &str = "build.root-executable";

/// A file at the repository root whose name has no extension and starts with a lowercase
/// letter: by convention a program the developers run, not a document (`README`, `LICENSE`).
fn root_executable(path: &str) -> bool {
    let norm = normalize_path(path);
    !norm.contains('/')
        && norm.starts_with(|c: char| c.is_ascii_lowercase())
        && norm
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Whether the content could change `path`'s classification: some content rule matches the
/// name and comes before the rule the name alone reaches. Lets the gate skip building a file's
/// post-image when it would not matter.
pub fn needs_content(path: &str) -> bool {
    let name = classify_path_with(path, None);
    name.rule == table::OTHER_RULE || content_may_raise(name.bucket)
}

/// Runs one content test on the start of a file.
fn content_matches(test: table::ContentTest, head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    match test {
        table::ContentTest::Shebang => head.starts_with(b"#!"),
    }
}

/// Whether the content layer may move a path out of `bucket`: only `src` and `other` (a name
/// that decided a riskier bucket, or `tests`/`docs`, keeps it; see [`classify_change`]).
fn content_may_raise(bucket: Bucket) -> bool {
    matches!(bucket, Bucket::Src | Bucket::Other)
}

/// Whether the tree layers may move a path out of `bucket`: `src`, `other`, `tests` (a fixture
/// a workflow runs) and `docs` (a script under `docs/` a build runs).
fn tree_may_raise(bucket: Bucket) -> bool {
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
/// Content and the tree only ever move a path into a riskier bucket: a name rule that decided
/// `ci`, `iac`, `deps`, `build`, `governance` or `agent` is final. A pure function of its
/// inputs: the gate passes a view of the packed revision, tests an in-memory tree.
pub fn classify_change(changes: &[reach::Change<'_>], tree: &dyn reach::Tree) -> Vec<Classified> {
    // The tree is read only when it could change an answer (it only raises `src`, `other`,
    // `tests`, `docs`, and `build` into `ci`).
    let could_raise = changes.iter().any(|c| {
        let b = classify_path(c.path, c.new).bucket;
        tree_may_raise(b) || b == Bucket::Build
    });
    let raised = if could_raise {
        reach::raise_by_tree(changes, tree)
    } else {
        Default::default()
    };
    // A change that keeps the mode says nothing of it: the tree's bit applies.
    let executable_in_tree: std::collections::HashSet<&str> = tree
        .files()
        .iter()
        .filter(|f| f.executable)
        .map(|f| f.path.as_str())
        .collect();
    changes
        .iter()
        .map(|c| {
            let name = classify_path(c.path, None);
            let executable = c.executable || executable_in_tree.contains(c.path);
            let with_content = classify_content(c.path, name, c.new, executable);
            let may = |r: &&reach::Raised| {
                // CI runs with the repository's secrets: a build script a workflow runs is `ci`.
                if with_content.bucket == Bucket::Build && r.bucket == Bucket::Ci {
                    return true;
                }
                if r.weak {
                    content_may_raise(with_content.bucket)
                } else {
                    tree_may_raise(with_content.bucket)
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
                layer: if with_content == name {
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

/// The content layer on top of a name classification.
fn classify_content(
    path: &str,
    name: Classification,
    content: Option<&[u8]>,
    executable: bool,
) -> Classification {
    let Some(head) = content else { return name };
    let head = &head[..head.len().min(CONTENT_HINT_MAX_BYTES)];
    let named = if name.rule == table::OTHER_RULE || name.rule == "src.code" {
        // The table's own content rule (a shebang makes an unnamed file a script).
        classify_path_with(path, Some(head))
    } else {
        name
    };
    if !content_may_raise(named.bucket) {
        return named;
    }
    match content::detect(path, head, executable) {
        Some(hit) => Classification {
            bucket: hit.bucket,
            rule: hit.rule,
        },
        None => named,
    }
}

/// One row of `airlock classify`.
#[derive(Debug, Serialize)]
struct ClassifyRow {
    path: String,
    bucket: Bucket,
    rule: &'static str,
    verdict: Verdict,
    reason: &'static str,
    detail: String,
    policy_rule: Option<usize>,
    content_checked: bool,
    layer: Layer,
    because: Option<String>,
}

/// Reads the start of a regular file for content rules; links, directories and missing files
/// give `None` (a dry run classifies the name alone then).
fn read_head(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    let mut head = Vec::new();
    file.take(CONTENT_HINT_MAX_BYTES as u64)
        .read_to_end(&mut head)
        .ok()?;
    Some(head)
}

/// Escapes what a terminal would interpret (control and bidi characters) for the table view.
fn printable(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}');
        if c.is_control() || bidi {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// `airlock classify`: what the gate would say about `paths` under the policy in
/// `policy_file` (the built-in default when `None`): bucket, rule, verdict and reason for each,
/// as an aligned table or (`json`) a JSON array. With no `paths`, reads newline-separated
/// paths from stdin. Paths are repository-relative; when one names a regular file under the
/// current directory, its start is read for the content rules, as the gate would.
pub fn run_classify(
    paths: Vec<String>,
    json: bool,
    policy_file: Option<&Path>,
    repo: Option<(&Path, &str)>,
) -> anyhow::Result<()> {
    let policy = match policy_file {
        Some(f) => Policy::from_file(f)?,
        None => Policy::default(),
    };
    let paths = if paths.is_empty() {
        let mut text = String::new();
        let read = io::stdin()
            .lock()
            .take(MAX_STDIN_BYTES + 1)
            .read_to_string(&mut text)
            .context("reading paths from stdin (one per line, UTF-8)")?;
        if read as u64 > MAX_STDIN_BYTES {
            bail!("stdin: more than {MAX_STDIN_BYTES} bytes of paths");
        }
        paths_from_lines(&text)
    } else {
        paths
    };
    if paths.is_empty() {
        bail!("no paths given (pass them as arguments or one per line on stdin)");
    }
    let rows = match repo {
        Some((dir, rev)) => {
            let tree = super::tree::GitTree::list(dir, rev)
                .with_context(|| format!("--repo {}: reading revision {rev:?}", dir.display()))?;
            // The file as a change would bring it: the working copy when there is one, else the
            // revision's.
            let committed = |p: &str| reach::Tree::read(&tree, &[p]).pop().flatten();
            classify_rows_in(paths, &policy, &tree, |p| {
                read_head(&dir.join(p)).or_else(|| committed(p))
            })
        }
        None => {
            eprintln!(
                "airlock classify: path rules and local file content only; pass --repo DIR [--rev R] \
                 for the tree layers the gate applies (reachability from CI and build entry points, \
                 Helm placement)"
            );
            classify_rows(paths, &policy, |p| {
                if needs_content(p) {
                    read_head(Path::new(p))
                } else {
                    None
                }
            })
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    let policy_name = match policy_file {
        Some(f) => f.display().to_string(),
        None => "default".to_owned(),
    };
    print!("{}", render_table(&rows, &policy_name, &policy));
    Ok(())
}

/// Non-empty lines of `text` (`\r\n` or `\n` separated), as given.
fn paths_from_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// Classifies and decides each path; `head` supplies content when it could matter.
fn classify_rows(
    paths: Vec<String>,
    policy: &Policy,
    head: impl Fn(&str) -> Option<Vec<u8>>,
) -> Vec<ClassifyRow> {
    classify_rows_in(paths, policy, &reach::MemTree::new(), head)
}

/// [`classify_rows`] with a tree in view: all `paths` form one change, as in the gate.
fn classify_rows_in(
    paths: Vec<String>,
    policy: &Policy,
    tree: &dyn reach::Tree,
    head: impl Fn(&str) -> Option<Vec<u8>>,
) -> Vec<ClassifyRow> {
    let contents: Vec<Option<Vec<u8>>> = paths.iter().map(|p| head(p)).collect();
    let executable: Vec<bool> = paths
        .iter()
        .map(|p| tree.files().iter().any(|f| &f.path == p && f.executable))
        .collect();
    let changes: Vec<reach::Change<'_>> = paths
        .iter()
        .zip(&contents)
        .zip(&executable)
        .map(|((path, c), x)| reach::Change {
            path,
            new: c.as_deref(),
            executable: *x,
        })
        .collect();
    let classified = classify_change(&changes, tree);
    paths
        .into_iter()
        .zip(contents)
        .zip(classified)
        .map(|((path, content), c)| {
            let class = c.class;
            let reason = policy.decide_path(&path, &class);
            ClassifyRow {
                layer: c.layer,
                because: c.because,
                bucket: class.bucket,
                rule: class.rule,
                verdict: reason.verdict,
                reason: reason.code.code(),
                detail: reason.detail,
                policy_rule: reason.policy_rule,
                content_checked: content.is_some(),
                path,
            }
        })
        .collect()
}

/// The aligned table and the decision line of `airlock classify`.
fn render_table(rows: &[ClassifyRow], policy_name: &str, policy: &Policy) -> String {
    let header = ["PATH", "BUCKET", "RULE", "VERDICT", "REASON"];
    let table: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            [
                printable(&r.path),
                r.bucket.to_string(),
                r.rule.to_owned(),
                r.verdict.to_string(),
                r.reason.to_owned(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for cells in &table {
        for (w, cell) in widths.iter_mut().zip(cells) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: [&str; 5]| {
        for (i, cell) in cells.iter().enumerate() {
            out.push_str(cell);
            if i + 1 < cells.len() {
                let pad = widths[i].saturating_sub(cell.chars().count()) + 2;
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push('\n');
    };
    line(header);
    for cells in &table {
        line(cells.each_ref().map(String::as_str));
    }
    let why: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            r.because
                .as_ref()
                .map(|b| format!("  {}: {b}\n", printable(&r.path)))
        })
        .collect();
    if !why.is_empty() {
        out.push_str("\nfrom the tree:\n");
        out.extend(why);
    }
    let count = |v| rows.iter().filter(|r| r.verdict == v).count();
    let overall = rows
        .iter()
        .map(|r| r.verdict)
        .max()
        .unwrap_or(Verdict::Queue);
    out.push_str(&format!(
        "\ndecision: {overall} ({} path{}: {} queue, {} human, {} reject; policy {policy_name} {})\n",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" },
        count(Verdict::Queue),
        count(Verdict::Human),
        count(Verdict::Reject),
        policy.digest(),
    ));
    out
}

#[cfg(test)]
#[path = "classify_corpus_tests.rs"]
mod corpus_tests;

#[cfg(test)]
mod tests {
    use super::table::RULES;
    use super::*;
    use std::collections::{BTreeSet, HashSet};

    const TABLE: &str = include_str!("../../tests/data/classify.tsv");
    const DOC: &str = include_str!("../../../docs/CLASSIFY.md");

    struct Row {
        line: usize,
        path: String,
        bucket: Bucket,
        rule: String,
        content: Option<String>,
    }

    fn rows() -> Vec<Row> {
        let mut out = Vec::new();
        for (i, line) in TABLE.lines().enumerate() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let cols: Vec<&str> = line.split('\t').collect();
            assert!(
                (3..=4).contains(&cols.len()),
                "classify.tsv:{}: expected 3 or 4 tab-separated columns: {line:?}",
                i + 1
            );
            out.push(Row {
                line: i + 1,
                path: cols[0].to_owned(),
                bucket: cols[1].parse().unwrap(),
                rule: cols[2].to_owned(),
                content: cols.get(3).map(|c| c.replace("\\n", "\n")),
            });
        }
        out
    }

    /// Paths a glob should (and nearly should) match: its wildcards filled in several ways,
    /// each brace alternative, and near misses (a prefix, a suffix, a changed extension).
    fn samples_for(glob: &str) -> Vec<String> {
        let mut alternatives = vec![String::new()];
        let mut rest = glob;
        while let Some(open) = rest.find('{') {
            let close = rest[open..].find('}').map(|c| open + c).unwrap();
            let head = &rest[..open];
            let options: Vec<&str> = rest[open + 1..close].split(',').collect();
            alternatives = alternatives
                .iter()
                .flat_map(|a| options.iter().map(move |o| format!("{a}{head}{o}")))
                .collect();
            rest = &rest[close + 1..];
        }
        let mut out = Vec::new();
        for a in alternatives.iter().map(|a| format!("{a}{rest}")) {
            for (deep, star, any) in [("", "", "q"), ("d", "x", "Z"), ("d/e", "a.b", ".")] {
                let filled = a
                    .replace("**", "\u{1}")
                    .replace('*', star)
                    .replace('?', any)
                    .replace('\u{1}', deep);
                let filled = filled.trim_matches('/').replace("//", "/");
                for p in [
                    filled.clone(),
                    format!("top/{filled}"),
                    format!("{filled}/child"),
                    format!("{filled}x"),
                    format!("{filled}.bak"),
                    filled.to_uppercase(),
                ] {
                    if !p.is_empty() {
                        out.push(p);
                    }
                }
            }
        }
        out
    }

    #[test]
    fn brace_expansion_matches_what_globset_reads_in_the_unexpanded_glob() {
        let mut globs: Vec<String> = Vec::new();
        for r in RULES {
            globs.extend(r.globs.iter().chain(r.exact_globs).map(|g| anchor(g)));
        }
        let mut paths: BTreeSet<String> = rows()
            .into_iter()
            .map(|r| normalize_path(&r.path))
            .collect();
        for g in &globs {
            paths.extend(samples_for(g));
        }
        assert!(paths.len() > 5_000, "only {} sample paths", paths.len());
        let mut positives = 0;
        for g in &globs {
            let whole = build_glob(g, false).unwrap().compile_matcher();
            let parts: Vec<globset::GlobMatcher> = expand_braces(g)
                .iter()
                .map(|e| build_glob(e, false).unwrap().compile_matcher())
                .collect();
            for path in &paths {
                let want = whole.is_match(path);
                positives += usize::from(want);
                assert_eq!(parts.iter().any(|m| m.is_match(path)), want, "{g} {path:?}");
            }
        }
        assert!(positives > 1_000, "{positives} matches");
    }

    #[test]
    fn real_world_paths() {
        let rows = rows();
        let distinct: HashSet<&str> = rows.iter().map(|r| r.path.as_str()).collect();
        assert!(
            distinct.len() >= 120,
            "only {} distinct paths",
            distinct.len()
        );
        let mut failures = Vec::new();
        for r in &rows {
            let got = classify_path(&r.path, r.content.as_deref().map(str::as_bytes));
            if got.bucket != r.bucket || got.rule != r.rule {
                failures.push(format!(
                    "classify.tsv:{}: {:?}: expected {} ({}), got {} ({})",
                    r.line, r.path, r.bucket, r.rule, got.bucket, got.rule
                ));
            }
        }
        assert!(
            failures.is_empty(),
            "{} mismatches:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }

    #[test]
    fn every_rule_has_a_real_world_example() {
        let used: HashSet<String> = rows().into_iter().map(|r| r.rule).collect();
        let missing: Vec<&str> = RULES
            .iter()
            .map(|r| r.id)
            .chain([table::OTHER_RULE])
            .filter(|id| !used.contains(*id))
            .collect();
        assert!(
            missing.is_empty(),
            "rules without an example in classify.tsv: {missing:?}"
        );
    }

    #[test]
    fn rule_table_compiles_and_ids_are_unique_and_prefixed_by_bucket() {
        let compiled = compile_table();
        assert!(compiled.is_ok(), "{:?}", compiled.err().unwrap_or_default());
        let mut seen = HashSet::new();
        for r in RULES {
            assert!(seen.insert(r.id), "duplicate rule id {}", r.id);
            let (prefix, rest) = r.id.split_once('.').unwrap();
            assert_eq!(
                prefix,
                r.bucket.as_str(),
                "{} is in bucket {}",
                r.id,
                r.bucket
            );
            assert!(
                !rest.is_empty()
                    && rest
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{} is not kebab-case",
                r.id
            );
            assert!(
                !r.globs.is_empty() || !r.exact_globs.is_empty(),
                "{} has no globs",
                r.id
            );
        }
        assert!(!seen.contains(table::OTHER_RULE));
    }

    #[test]
    fn folded_globs_are_lowercase_or_they_would_never_match() {
        for r in RULES {
            for g in r.globs {
                assert_eq!(
                    *g,
                    g.to_lowercase(),
                    "rule {}: glob {g:?} must be lowercase",
                    r.id
                );
            }
        }
    }

    #[test]
    fn case_variant_of_workflow_dir_is_still_ci() {
        for p in [
            ".GITHUB/WORKFLOWS/x.yml",
            ".github/Workflows/x.yml",
            ".github/workflows/X.YAML",
            ".github/wor\u{212a}flows/x.yml",
            ".github/work\u{fb02}ows/x.yml",
        ] {
            assert_eq!(classify_path(p, None).rule, "ci.github-workflow", "{p:?}");
        }
    }

    #[test]
    fn windows_trailing_dots_spaces_and_backslashes_do_not_hide_a_path() {
        assert_eq!(
            classify_path(".github. /workflows./ci.yml", None).bucket,
            Bucket::Ci
        );
        assert_eq!(classify_path("Makefile.", None).bucket, Bucket::Build);
        assert_eq!(
            classify_path(".vscode \\settings.json", None).bucket,
            Bucket::Agent
        );
        assert_eq!(classify_path("Cargo.lock ", None).bucket, Bucket::Deps);
    }

    #[test]
    fn unicode_normalisation_does_not_change_the_bucket() {
        // "é" precomposed and decomposed: the same file on macOS.
        let a = classify_path("docs/caf\u{e9}/CODEOWNERS", None);
        let b = classify_path("docs/cafe\u{301}/CODEOWNERS", None);
        assert_eq!(a, b);
        assert_eq!(a.rule, "governance.codeowners");
    }

    #[test]
    fn k8s_substring_in_a_source_file_name_is_not_iac() {
        for p in [
            "src/k8sclient.go",
            "pkg/k8s/client.go",
            "k8s/client.go",
            "cmd/kubernetes.rs",
        ] {
            assert_eq!(classify_path(p, None).bucket, Bucket::Src, "{p}");
        }
    }

    #[test]
    fn content_can_raise_a_yaml_file_into_iac_but_never_lower_a_name_rule() {
        let pod = b"apiVersion: v1\nkind: Pod\n".as_slice();
        // A fixture stays a test: only reachability can raise it.
        assert_eq!(
            classify_path("tests/fixtures/pod.yaml", Some(pod)).rule,
            "tests.fixture-dir"
        );
        assert_eq!(
            classify_path("src/pod.yaml", Some(pod)).rule,
            "iac.k8s-content"
        );
        assert_eq!(
            classify_path("tests/fixtures/pod.yaml", None).rule,
            "tests.fixture-dir"
        );
        assert_eq!(
            classify_path(".github/workflows/x.yml", Some(pod)).bucket,
            Bucket::Ci
        );
        assert_eq!(
            classify_path(".vscode/pod.yaml", Some(pod)).bucket,
            Bucket::Agent
        );
        // Not YAML/JSON: content is not consulted for Kubernetes.
        assert_eq!(classify_path("src/pod.go", Some(pod)).bucket, Bucket::Src);
        // A shebang does not turn a lockfile into a script.
        assert_eq!(
            classify_path("Cargo.lock", Some(b"#!/bin/sh\n")).bucket,
            Bucket::Deps
        );
    }

    #[test]
    fn k8s_content_needs_both_keys_at_top_level() {
        let yes = [
            "apiVersion: v1\nkind: Service\n",
            "\u{feff}apiVersion: v1\r\nkind: Service\r\n",
            "# comment\n---\nkind: Secret\nmetadata: {}\napiVersion: v1\n",
            "{\"kind\": \"Pod\", \"apiVersion\": \"v1\"}",
        ];
        let no = [
            "apiVersion: v1\n",
            "spec:\n  apiVersion: v1\n  kind: Pod\n",
            "apiVersionX: v1\nkind: Pod\n",
            "name: x\n",
            "",
        ];
        for c in yes {
            assert_eq!(
                content::detect("x.yaml", c.as_bytes(), false).map(|h| h.rule),
                Some("iac.k8s-content"),
                "{c:?}"
            );
        }
        for c in no {
            assert_eq!(
                content::detect("x.yaml", c.as_bytes(), false),
                None,
                "{c:?}"
            );
        }
    }

    #[test]
    fn content_after_the_hint_limit_is_ignored() {
        let mut big = vec![b'#'; CONTENT_HINT_MAX_BYTES];
        big.extend_from_slice(b"\napiVersion: v1\nkind: Pod\n");
        assert_eq!(classify_path("x.yaml", Some(&big)).bucket, Bucket::Other);
        let mut small = b"apiVersion: v1\nkind: Pod\n".to_vec();
        small.extend(vec![b' '; CONTENT_HINT_MAX_BYTES * 2]);
        assert_eq!(classify_path("x.yaml", Some(&small)).bucket, Bucket::Iac);
    }

    #[test]
    fn cloudformation_and_shebang_content() {
        assert_eq!(
            classify_path(
                "stack.json",
                Some(br#"{"Resources": {"B": {"Type": "AWS::S3::Bucket"}}}"#)
            )
            .rule,
            "iac.cloudformation-content"
        );
        assert_eq!(
            classify_path("stack.json", Some(b"{\"Resources\": {}}")).bucket,
            Bucket::Other
        );
        assert_eq!(
            classify_path("utils/fmt", Some(b"#!/usr/bin/env python3\n")).rule,
            "build.tooling-script"
        );
        assert_eq!(
            classify_path("lib/fmt", Some(b"#!/usr/bin/env python3\n")).rule,
            "src.shebang"
        );
        assert_eq!(
            classify_path("utils/fmt", Some(b"# not a script\n")).bucket,
            Bucket::Other
        );
    }

    #[test]
    fn needs_content_only_where_a_content_rule_could_win() {
        for p in ["config.yaml", "x/pod.json", "lib/helper", "src/main.rs"] {
            assert!(needs_content(p), "{p}");
        }
        for p in [
            ".github/workflows/ci.yml",
            "deploy/k8s/app.yaml",
            "Makefile",
            "README.md",
            "tests/fixtures/pod.yml",
        ] {
            assert!(!needs_content(p), "{p}");
        }
    }

    #[test]
    fn a_file_or_link_in_place_of_a_sensitive_directory_keeps_its_bucket() {
        assert_eq!(
            classify_path(".github/workflows", None).rule,
            "ci.github-workflow"
        );
        assert_eq!(classify_path(".vscode", None).rule, "agent.editor-config");
        assert_eq!(classify_path("sub/.claude", None).rule, "agent.tool-dir");
        assert_eq!(classify_path(".circleci", None).rule, "ci.circleci");
        assert_eq!(classify_path("vendor", None).rule, "deps.vendored");
        // Only the directory name itself, not a longer name.
        assert_ne!(classify_path(".vscodex", None).bucket, Bucket::Agent);
        assert_eq!(anchor("ci/**"), "ci{,/**}");
        assert_eq!(anchor("**/.husky/**"), "**/.husky{,/**}");
        assert_eq!(anchor("makefile"), "**/makefile");
        assert_eq!(anchor("*.tf"), "**/*.tf");
    }

    #[test]
    fn normalize_and_fold() {
        assert_eq!(normalize_path("./a//b/./c"), "a/b/c");
        assert_eq!(normalize_path("a\\b"), "a/b");
        assert_eq!(normalize_path("a. . /b.."), "a/b");
        assert_eq!(normalize_path("../x/.../y"), "../x/.../y");
        assert_eq!(fold_path("Docs/\u{17f}ECURITY.md"), "docs/security.md");
        assert_eq!(fold_path("/abs/Path"), "abs/path");
        assert_eq!(classify_path("", None).rule, table::OTHER_RULE);
    }

    #[test]
    fn bucket_names_round_trip() {
        for b in Bucket::ALL {
            assert_eq!(b.as_str().parse::<Bucket>().unwrap(), b);
            assert_eq!(serde_json::to_string(&b).unwrap(), format!("\"{b}\""));
            assert_eq!(Bucket::ALL[b.index()], b);
        }
        assert!("CI".parse::<Bucket>().is_err());
        assert!("frontend".parse::<Bucket>().is_err());
    }

    #[test]
    fn classify_table_is_aligned_and_decides_the_strictest_verdict() {
        let policy = Policy::default();
        let rows = classify_rows(
            paths_from_lines("src/main.rs\r\n\n  \nconfig.yaml\n.github/workflows/ci.yml\n"),
            &policy,
            |p| (p == "config.yaml").then(|| b"apiVersion: v1\nkind: Pod\n".to_vec()),
        );
        assert_eq!(rows.len(), 3);
        assert!(rows[1].content_checked && !rows[0].content_checked);
        assert_eq!(rows[1].rule, "iac.k8s-content");
        let out = render_table(&rows, "default", &policy);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            ["PATH", "BUCKET", "RULE", "VERDICT", "REASON"]
        );
        let col = lines[0].find("BUCKET").unwrap();
        for l in &lines[1..4] {
            assert_eq!(l.chars().nth(col - 1), Some(' '), "{l:?}");
            assert_ne!(l.chars().nth(col), Some(' '), "{l:?}");
        }
        assert!(
            lines[2].starts_with("config.yaml ") && lines[2].contains(" iac "),
            "{out}"
        );
        assert!(
            out.contains("decision: human (3 paths: 1 queue, 2 human, 0 reject; policy default "),
            "{out}"
        );
        let json = serde_json::to_value(&rows).unwrap();
        assert_eq!(json[2]["reason"], "ci-path-changed");
        assert_eq!(json[2]["verdict"], "human");
        assert_eq!(json[0]["bucket"], "src");
    }

    #[test]
    fn classify_table_escapes_a_path_that_would_rewrite_the_terminal() {
        let policy = Policy::default();
        let rows = classify_rows(vec!["x\u{1b}[2Jy".to_owned()], &policy, |_| None);
        let out = render_table(&rows, "default", &policy);
        assert!(!out.contains('\u{1b}'), "{out:?}");
        assert!(out.contains("x\\u{1b}[2Jy"), "{out}");
        assert!(out.contains("(1 path: 1 queue"), "{out}");
    }

    #[test]
    fn printable_escapes_terminal_controls() {
        assert_eq!(printable("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(printable("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(printable("src/main.rs"), "src/main.rs");
    }

    /// The rules table of docs/CLASSIFY.md, generated from [`RULES`].
    fn rules_markdown() -> String {
        let code = |g: &&str| format!("`{g}`");
        let mut out =
            String::from("| # | Rule id | Bucket | Matches | Globs |\n|---|---|---|---|---|\n");
        for (i, r) in RULES.iter().enumerate() {
            let mut what = r.what.to_owned();
            if let Some(c) = r.content {
                what.push_str("; ");
                what.push_str(c.describe());
            }
            let mut globs: Vec<String> = r.globs.iter().map(code).collect();
            globs.extend(
                r.exact_globs
                    .iter()
                    .map(|g| format!("`{g}` (case-sensitive)")),
            );
            out.push_str(&format!(
                "| {} | `{}` | {} | {} | {} |\n",
                i + 1,
                r.id,
                r.bucket,
                what,
                globs.join(", ")
            ));
        }
        out.push_str(&format!(
            "| {} | `{}` | other | Everything else | |\n",
            RULES.len() + 1,
            table::OTHER_RULE
        ));
        out
    }

    #[test]
    fn docs_list_every_rule_in_evaluation_order() {
        let rules_table = |rules: &[(&str, &str)]| {
            let mut out = String::from("| Rule id | Bucket | Matches |\n|---|---|---|\n");
            for (id, what) in rules {
                let bucket = id.split('.').next().unwrap_or_default();
                out.push_str(&format!("| `{id}` | {bucket} | {what} |\n"));
            }
            out
        };
        let name_rules: [(&str, &str); 2] = [
            (ROOT_EXECUTABLE_RULE, "An extension-less file at the root whose name starts with a lowercase letter (`artisan`, `bootstrap`), after every glob rule"),
            (TABLE_BROKEN_RULE, "Every path, if the built-in table failed to compile (cannot happen: a unit test compiles it; fail closed)"),
        ];
        for (marker, expected) in [
            ("rules", rules_markdown()),
            ("content-rules", rules_table(content::RULES)),
            ("tree-rules", rules_table(reach::RULES)),
            ("code-rules", rules_table(&name_rules)),
        ] {
            let begin = format!("<!-- {marker}:begin -->\n");
            let end = format!("<!-- {marker}:end -->");
            let start = DOC
                .find(&begin)
                .unwrap_or_else(|| panic!("docs/CLASSIFY.md: {marker}:begin marker"))
                + begin.len();
            let stop = DOC[start..]
                .find(&end)
                .unwrap_or_else(|| panic!("docs/CLASSIFY.md: {marker}:end marker"))
                + start;
            if DOC[start..stop] != expected {
                let out = std::env::temp_dir().join(format!("CLASSIFY.{marker}.md"));
                std::fs::write(&out, &expected).unwrap();
                panic!(
                    "docs/CLASSIFY.md {marker} table is stale; the generated table is in {}",
                    out.display()
                );
            }
        }
        let ids: BTreeSet<&str> = RULES.iter().map(|r| r.id).collect();
        for id in ids {
            assert!(DOC.contains(&format!("`{id}`")), "{id} not documented");
        }
    }
}
