//! `airlock classify`: what the gate would say about some paths under a policy, without a job.
//!
//! Guards against: a hostile path or file name garbling the terminal (printed escaped), an
//! unbounded stdin (capped at `MAX_STDIN_BYTES`), and a dry run that disagrees with the
//! gate (the same classifier, layers and policy).

use std::io::{self, Read};
use std::path::Path;

use anyhow::{bail, Context};
use serde::Serialize;

use crate::gate::policy::{Policy, Verdict};
use airlock_classify::{
    classify_change, needs_content, reach, Bucket, Layer, CONTENT_HINT_MAX_BYTES,
};

/// Largest list of paths `airlock classify` reads from stdin.
const MAX_STDIN_BYTES: u64 = 64 * 1024 * 1024;

/// One row of `airlock classify`.
#[derive(Debug, Serialize)]
pub(super) struct ClassifyRow {
    pub(super) path: String,
    pub(super) bucket: Bucket,
    pub(super) rule: &'static str,
    pub(super) verdict: Verdict,
    pub(super) reason: &'static str,
    pub(super) detail: String,
    pub(super) policy_rule: Option<usize>,
    pub(super) content_checked: bool,
    pub(super) layer: Layer,
    pub(super) because: Option<String>,
}

/// Reads the start of a regular file for content rules; links, directories and missing files
/// give `None` (a dry run classifies the name alone then).
pub(super) fn read_head(path: &Path) -> Option<Vec<u8>> {
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

/// A path for the table view: one terminal-safe line ([`airlock_core::text`]).
pub(super) fn printable(path: &str) -> String {
    airlock_core::text::terminal(path, 1000)
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
            let tree = super::git_tree::GitTree::list(dir, rev)
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
        println!("{}", crate::output::json_text(&rows)?);
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
pub(super) fn paths_from_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// Classifies and decides each path; `head` supplies content when it could matter.
pub(super) fn classify_rows(
    paths: Vec<String>,
    policy: &Policy,
    head: impl Fn(&str) -> Option<Vec<u8>>,
) -> Vec<ClassifyRow> {
    classify_rows_in(paths, policy, &reach::MemTree::new(), head)
}

/// [`classify_rows`] with a tree in view: all `paths` form one change, as in the gate.
pub(super) fn classify_rows_in(
    paths: Vec<String>,
    policy: &Policy,
    tree: &dyn reach::Tree,
    head: impl Fn(&str) -> Option<Vec<u8>>,
) -> Vec<ClassifyRow> {
    let contents: Vec<Option<Vec<u8>>> = paths.iter().map(|p| head(p)).collect();
    let executable: Vec<bool> = paths
        .iter()
        .map(|p| tree.files().get(p).is_some_and(|f| f.executable))
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
pub(super) fn render_table(rows: &[ClassifyRow], policy_name: &str, policy: &Policy) -> String {
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
