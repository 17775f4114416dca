//! `airlock compare JOB_A JOB_B`: two jobs side by side (typically a job and its
//! re-dispatch, or a replay of a past job): whether they share the bundle and the request,
//! the models asked for and reported, token counts, and how their patches differ. The tool
//! for replaying a past job to catch a silent model swap.
//!
//! Guards against: comparing unverified data (both jobs' facts come from the verified ledger;
//! the patches from the artifacts kept on this host, each hashed against the digest its gate
//! judged, read through the safe tar reader, and parsed strictly) and worker text reaching the
//! terminal raw (shown through [`airlock_core::text`]), and two unknowns passing for a match:
//! a side that reported no model (`unreported`) or was never gated makes the answer `unknown`.
//! Does not check: which patch is better.

use std::collections::BTreeMap;

use airlock_core::diff::{parse_patch, DiffLimits, FilePatch, LineKind};
use airlock_core::jobid::JobId;
use anyhow::{Context, Result};
use serde::Serialize;

use crate::exit::Outcome;
use airlock_core::text;

/// One side of the comparison.
#[derive(Debug, Serialize)]
pub struct Side {
    /// The job.
    pub job: JobId,
    /// Bundle digest (submit entry).
    pub bundle_sha256: Option<String>,
    /// Request digest (submit entry).
    pub request_sha256: Option<String>,
    /// Prompt digest (submit entry).
    pub prompt_sha256: Option<String>,
    /// Model asked for.
    pub model_requested: Option<String>,
    /// Model the worker reported.
    pub model_reported: Option<String>,
    /// Tokens in, out (from the kept packet).
    pub tokens: Option<(u64, u64)>,
    /// The gate's decision.
    pub decision: Option<String>,
    /// Diff digest (gate entry).
    pub diff_sha256: Option<String>,
    /// Why the patch could not be read, if it could not.
    pub patch_note: Option<String>,
}

/// How one path differs between the two patches.
#[derive(Debug, Serialize)]
pub struct PathDiff {
    /// The path.
    pub path: String,
    /// `same`, `differs`, `only-a`, `only-b`.
    pub status: &'static str,
    /// Changed lines (`+x` / `-x`) only in A's patch of this path.
    pub only_a: Vec<String>,
    /// Changed lines only in B's.
    pub only_b: Vec<String>,
}

/// The comparison.
#[derive(Debug, Serialize)]
pub struct Comparison {
    /// Job A.
    pub a: Side,
    /// Job B.
    pub b: Side,
    /// Bundle digests.
    pub same_bundle: Match,
    /// Request digests.
    pub same_request: Match,
    /// Models reported: `unknown` when either side has none or reported none (`unreported`).
    pub same_model_reported: Match,
    /// Diff digests: `unknown` when either job was never gated.
    pub same_patch: Match,
    /// Per path, when both patches were read.
    pub paths: Vec<PathDiff>,
}

/// Whether the two sides agree on a fact: `unknown` when either side lacks it, never `same`
/// for two absences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Match {
    /// Both known and equal.
    Same,
    /// Both known and different.
    Different,
    /// At least one side does not know.
    Unknown,
}

impl Match {
    /// `a` against `b`, each `None` when that side does not know.
    pub fn of<T: PartialEq>(a: Option<T>, b: Option<T>) -> Match {
        match (a, b) {
            (Some(a), Some(b)) if a == b => Match::Same,
            (Some(_), Some(_)) => Match::Different,
            _ => Match::Unknown,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Match::Same => "same",
            Match::Different => "DIFFERENT",
            Match::Unknown => "UNKNOWN",
        }
    }
}

/// A model the worker reported, `None` when there is none or it said `unreported`.
fn reported(s: &Side) -> Option<&str> {
    s.model_reported
        .as_deref()
        .filter(|m| *m != airlock_core::format::MODEL_UNREPORTED)
}

/// Lines shown per path and side.
const MAX_LINES_SHOWN: usize = 40;

fn side(
    home: &crate::config::Home,
    store: &crate::store::Store,
    job: &JobId,
) -> Result<(Side, Option<Vec<FilePatch>>)> {
    let trusted = home.public_key()?;
    let bom = crate::ledger::show_job(store, &trusted, job)?;
    let page = crate::show::page_from_ledger(&home.dir, store, &trusted, job)?;
    let gate = bom.gates.last();
    let mut s = Side {
        job: job.clone(),
        bundle_sha256: bom
            .submit
            .as_ref()
            .map(|x| x.event.bundle_sha256.to_string()),
        request_sha256: bom
            .submit
            .as_ref()
            .map(|x| x.event.request_sha256.to_string()),
        prompt_sha256: bom
            .submit
            .as_ref()
            .map(|x| x.event.prompt_sha256.to_string()),
        model_requested: page.model_requested.clone(),
        model_reported: page.model_reported.clone(),
        tokens: page.tokens,
        decision: gate.map(|g| g.event.decision.clone()),
        diff_sha256: gate.map(|g| g.event.diff_sha256.to_string()),
        patch_note: page.diff_note.clone(),
    };
    let patch = match crate::show::kept_patch(&home.dir, job, gate.map(|g| g.event.artifact_sha256))
    {
        Ok(bytes) => match parse_patch(&bytes, &DiffLimits::default()) {
            Ok(p) => {
                // A secret's value is never printed: its lines compare and show masked.
                let mut files = p.files;
                crate::report::mask::mask_patch(crate::report::mask::scanner()?, &mut files);
                Some(files)
            }
            Err(e) => {
                s.patch_note = Some(format!("patch.diff refused: {e}"));
                None
            }
        },
        Err(why) => {
            s.patch_note = Some(why);
            None
        }
    };
    Ok((s, patch))
}

/// The changed lines of a file patch, as `+text` / `-text`, with their counts.
fn changed_lines(f: &FilePatch) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for h in &f.hunks {
        for l in &h.lines {
            let sign = match l.kind {
                LineKind::Added => '+',
                LineKind::Removed => '-',
                LineKind::Context => continue,
            };
            *out.entry(format!("{sign}{}", l.text)).or_default() += 1;
        }
    }
    out
}

/// Lines in `x` more often than in `y`.
fn minus(x: &BTreeMap<String, usize>, y: &BTreeMap<String, usize>) -> Vec<String> {
    let mut out = Vec::new();
    for (line, n) in x {
        let m = y.get(line).copied().unwrap_or(0);
        for _ in m..*n {
            out.push(line.clone());
        }
    }
    out
}

/// Compares two patches path by path.
pub fn compare_patches(a: &[FilePatch], b: &[FilePatch]) -> Vec<PathDiff> {
    let mut paths: BTreeMap<&str, (Option<&FilePatch>, Option<&FilePatch>)> = BTreeMap::new();
    for f in a {
        paths.entry(f.path.as_str()).or_default().0 = Some(f);
    }
    for f in b {
        paths.entry(f.path.as_str()).or_default().1 = Some(f);
    }
    paths
        .into_iter()
        .map(|(path, sides)| {
            let empty = BTreeMap::new();
            let la = sides.0.map(changed_lines);
            let lb = sides.1.map(changed_lines);
            let only_a = minus(la.as_ref().unwrap_or(&empty), lb.as_ref().unwrap_or(&empty));
            let only_b = minus(lb.as_ref().unwrap_or(&empty), la.as_ref().unwrap_or(&empty));
            let status = match sides {
                (Some(_), None) => "only-a",
                (None, Some(_)) => "only-b",
                _ if only_a.is_empty() && only_b.is_empty() && sides.0 == sides.1 => "same",
                _ => "differs",
            };
            PathDiff {
                path: path.to_owned(),
                status,
                only_a,
                only_b,
            }
        })
        .collect()
}

/// Compares `a` and `b`.
pub fn compare(home: &crate::config::Home, a: &JobId, b: &JobId) -> Result<Comparison> {
    let store = home.open_store()?;
    let (sa, pa) = side(home, &store, a).with_context(|| format!("job {a}"))?;
    let (sb, pb) = side(home, &store, b).with_context(|| format!("job {b}"))?;
    let paths = match (&pa, &pb) {
        (Some(x), Some(y)) => compare_patches(x, y),
        _ => Vec::new(),
    };
    Ok(Comparison {
        same_bundle: Match::of(sa.bundle_sha256.as_ref(), sb.bundle_sha256.as_ref()),
        same_request: Match::of(sa.request_sha256.as_ref(), sb.request_sha256.as_ref()),
        same_model_reported: Match::of(reported(&sa), reported(&sb)),
        same_patch: Match::of(sa.diff_sha256.as_ref(), sb.diff_sha256.as_ref()),
        paths,
        a: sa,
        b: sb,
    })
}

fn opt(s: &Option<String>) -> String {
    s.as_deref().map_or_else(|| "-".to_owned(), text::line)
}

/// What `airlock compare` is asked to do.
#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// The first job id.
    pub job_a: String,
    /// The second job id.
    pub job_b: String,
    /// Print JSON.
    pub json: bool,
}

/// `airlock compare`.
pub fn run(global: &crate::config::GlobalOptions, args: &CompareOptions) -> Result<Outcome> {
    let home = crate::config::Home::load(&global.home)?;
    let a = JobId::parse(&args.job_a)?;
    let b = JobId::parse(&args.job_b)?;
    let c = compare(&home, &a, &b)?;
    if args.json {
        crate::output::print_json(&c)?;
        return Ok(Outcome::Ok);
    }
    let tokens = |t: Option<(u64, u64)>| {
        t.map_or_else(|| "-".to_owned(), |(i, o)| format!("{i} in, {o} out"))
    };
    println!("A {}\nB {}", c.a.job, c.b.job);
    println!(
        "bundle          {} (A {}, B {})",
        c.same_bundle.word(),
        opt(&c.a.bundle_sha256),
        opt(&c.b.bundle_sha256)
    );
    println!(
        "request         {} (A {}, B {})",
        c.same_request.word(),
        opt(&c.a.request_sha256),
        opt(&c.b.request_sha256)
    );
    println!(
        "model requested A {}, B {}",
        opt(&c.a.model_requested),
        opt(&c.b.model_requested)
    );
    println!(
        "model reported  {} (A {}, B {})",
        c.same_model_reported.word(),
        opt(&c.a.model_reported),
        opt(&c.b.model_reported)
    );
    println!(
        "tokens          A {}, B {}",
        tokens(c.a.tokens),
        tokens(c.b.tokens)
    );
    println!(
        "decision        A {}, B {}",
        opt(&c.a.decision),
        opt(&c.b.decision)
    );
    println!(
        "patch           {} (A {}, B {})",
        c.same_patch.word(),
        opt(&c.a.diff_sha256),
        opt(&c.b.diff_sha256)
    );
    for (name, note) in [("A", &c.a.patch_note), ("B", &c.b.patch_note)] {
        if let Some(n) = note {
            println!("patch {name}: {}", text::line(n));
        }
    }
    for p in &c.paths {
        println!("  {:<8} {}", p.status, text::line(&p.path));
        for (side, lines) in [("A", &p.only_a), ("B", &p.only_b)] {
            for l in lines.iter().take(MAX_LINES_SHOWN) {
                println!("      {side} {}", text::line(l));
            }
            if lines.len() > MAX_LINES_SHOWN {
                println!(
                    "      {side} ... {} more line(s)",
                    lines.len() - MAX_LINES_SHOWN
                );
            }
        }
    }
    Ok(Outcome::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_with_nothing_to_compare_is_unknown_not_different() {
        let m = |s: &str| Some(s.to_owned());
        assert_eq!(Match::of(m("a"), m("a")).word(), "same");
        assert_eq!(Match::of(m("a"), m("b")).word(), "DIFFERENT");
        assert_eq!(Match::of(m("a"), None).word(), "UNKNOWN");
        assert_eq!(Match::of::<String>(None, None).word(), "UNKNOWN");
    }

    fn files(text: &str) -> Vec<FilePatch> {
        parse_patch(text.as_bytes(), &DiffLimits::default())
            .unwrap()
            .files
    }

    #[test]
    fn two_unknowns_are_unknown_never_the_same() {
        assert_eq!(Match::of(Some("m"), Some("m")), Match::Same);
        assert_eq!(Match::of(Some("m"), Some("n")), Match::Different);
        assert_eq!(Match::of::<&str>(None, None), Match::Unknown);
        assert_eq!(Match::of(Some("m"), None), Match::Unknown);
        let side = |m: Option<&str>| Side {
            job: JobId::parse("20260101T000000Z-00112233445566778899").unwrap(),
            bundle_sha256: None,
            request_sha256: None,
            prompt_sha256: None,
            model_requested: None,
            model_reported: m.map(str::to_owned),
            tokens: None,
            decision: None,
            diff_sha256: None,
            patch_note: None,
        };
        let (u, m) = (side(Some("unreported")), side(Some("m")));
        assert_eq!(Match::of(reported(&u), reported(&u)), Match::Unknown);
        assert_eq!(Match::of(reported(&u), reported(&m)), Match::Unknown);
        assert_eq!(Match::of(reported(&m), reported(&m)), Match::Same);
        assert_eq!(
            serde_json::to_value(Match::Unknown).unwrap(),
            serde_json::json!("unknown")
        );
    }

    #[test]
    fn patches_are_compared_path_by_path_and_line_by_line() {
        let a = files(
            "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new A\n\
             diff --git a/same.txt b/same.txt\n--- a/same.txt\n+++ b/same.txt\n@@ -1 +1 @@\n-s\n+t\n",
        );
        let b = files(
            "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new B\n\
             diff --git a/same.txt b/same.txt\n--- a/same.txt\n+++ b/same.txt\n@@ -1 +1 @@\n-s\n+t\n\
             diff --git a/y.txt b/y.txt\nnew file mode 100644\n--- /dev/null\n+++ b/y.txt\n@@ -0,0 +1 @@\n+y\n",
        );
        let d = compare_patches(&a, &b);
        let by: BTreeMap<&str, &PathDiff> = d.iter().map(|p| (p.path.as_str(), p)).collect();
        assert_eq!(by["same.txt"].status, "same");
        assert_eq!(by["a.txt"].status, "differs");
        assert_eq!(by["a.txt"].only_a, vec!["+new A"]);
        assert_eq!(by["a.txt"].only_b, vec!["+new B"]);
        assert_eq!(by["y.txt"].status, "only-b");
        assert!(compare_patches(&a, &a).iter().all(|p| p.status == "same"));
    }
}
