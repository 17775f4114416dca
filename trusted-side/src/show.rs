//! `airlock show JOB [--html FILE] [--md FILE] [--json]`, and `airlock gate --html`: the
//! review report of a gated job, filled from the verified ledger (decision, reasons, prompt,
//! models, people's decisions), the artifact kept in the home (diff, packet, generator log)
//! and the store's envelopes (the chain of signatures, `show/chain.rs`). Rendering is
//! `report/html.rs` and `report/page.rs`.
//!
//! Guards against: showing something other than what was judged: the kept artifact must hash
//! to the digest the ledger's gate entry judged (else the diff is not shown, and the page says
//! why), it is read through the safe tar reader with the artifact limits, and every envelope
//! of the chain is verified under the key the chain names (trusted key for the record, the
//! bundle and the ledger; the job key from the record for the artifact), each link showing
//! its status instead of failing the whole page.
//! Does not check: the artifact's tar rules beyond the safe reader (the gate did), nor the
//! patch's applicability.

use std::io::Read;
use std::path::Path;

use airlock_core::diff::{parse_patch, DiffLimits, LineKind, ParsedPatch};
use airlock_core::digest::{sha256_file, Sha256Digest};
use airlock_core::format::{Packet, MAX_PACKET_BYTES};
use airlock_core::jobid::{rfc3339_utc, JobId};
use airlock_core::keys::PublicKey;
use airlock_core::limits::TarLimits;
use airlock_core::tar::{read_members, AllowedNames};
use anyhow::{Context, Result};

use crate::exit::Outcome;
use crate::fetch::MAX_PATCH_BYTES;
use crate::ledger::GatedFile;
use crate::report::mask::mask_lines;
use crate::report::page::{FileView, HunkView, LineView, ReasonView, ReviewPage};
use crate::report::{bom_rows, GateReport};
use crate::store::Store;

mod chain;

use chain::chain;

/// Bytes of `generator.log` read from the kept artifact.
const MAX_LOG_BYTES: u64 = 4 * 1024 * 1024;

/// What the kept artifact holds, once it hashes to the digest judged.
struct Kept {
    packet: Packet,
    patch: Option<Vec<u8>>,
    log: Option<Vec<u8>>,
}

/// Reads the home's copy of `job`'s artifact if it hashes to `judged`. `Err` says why not.
fn read_kept(home: &Path, job: &JobId, judged: Sha256Digest) -> Result<Kept, String> {
    let path = crate::fetch::job_dir(home, job).join("artifact.tar.gz");
    let (digest, _) = sha256_file(&path).map_err(|e| {
        format!(
            "the artifact is not kept on this host ({}: {e}); the digests below still identify it",
            path.display()
        )
    })?;
    if digest != judged {
        return Err(format!(
            "{} hashes to sha256:{digest}, not the judged sha256:{judged}: not shown",
            path.display()
        ));
    }
    let file = std::fs::File::open(&path).map_err(|e| e.to_string())?;
    let (mut packet, mut patch, mut log) = (None, None, None);
    read_members(
        std::io::BufReader::new(file),
        &TarLimits::artifact(),
        &AllowedNames::artifact(),
        |m, r| {
            let (slot, cap) = match m.path.as_str() {
                "packet.json" => (&mut packet, MAX_PACKET_BYTES as u64),
                "patch.diff" => (&mut patch, MAX_PATCH_BYTES),
                "generator.log" => (&mut log, MAX_LOG_BYTES),
                _ => return Ok(()),
            };
            let mut buf = Vec::new();
            r.take(cap).read_to_end(&mut buf)?;
            *slot = Some(buf);
            Ok(())
        },
    )
    .map_err(|e| e.with_label("artifact.tar.gz").to_string())?;
    let packet = packet.ok_or("artifact.tar.gz has no packet.json")?;
    let packet = Packet::from_json(&packet).map_err(|e| e.to_string())?;
    Ok(Kept { packet, patch, log })
}

/// The `patch.diff` of the home's kept artifact of `job`, if it hashes to `judged` (the
/// gate's digest). `Err` says why not.
pub fn kept_patch(
    home: &Path,
    job: &JobId,
    judged: Option<Sha256Digest>,
) -> Result<Vec<u8>, String> {
    let judged = judged.ok_or("the job was never gated")?;
    read_kept(home, job, judged)?
        .patch
        .ok_or_else(|| "the artifact has no patch.diff".to_owned())
}

/// The reason strings the ledger recorded (`code path: detail` or `code: detail`) as views,
/// the path recognised among the patch's paths.
fn reason_views(recorded: &[String], paths: &[String]) -> Vec<ReasonView> {
    recorded
        .iter()
        .map(|r| {
            let code_end = r.find([' ', ':']).unwrap_or(r.len());
            let (code, rest) = r.split_at(code_end);
            let mut view = ReasonView {
                code: code.to_owned(),
                verdict: "-".to_owned(),
                ..ReasonView::default()
            };
            if let Some(detail) = rest.strip_prefix(": ") {
                view.detail = detail.to_owned();
            } else if let Some(p) = paths.iter().find(|p| {
                rest.strip_prefix(' ')
                    .and_then(|x| x.strip_prefix(p.as_str()))
                    .is_some_and(|x| x.starts_with(": "))
            }) {
                view.path = Some(p.clone());
                view.detail = rest[1 + p.len() + 2..].to_owned();
            } else {
                view.detail = rest.trim_start_matches([' ', ':']).to_owned();
            }
            view
        })
        .collect()
}

/// The patch's files as views, each with the bucket, rule and verdict the gate recorded for
/// it (`-` when the gate entry recorded none: never classified again here, since only the
/// gate saw the packed tree its tree layer reads).
fn file_views(patch: &ParsedPatch, recorded: &[GatedFile]) -> Vec<FileView> {
    patch
        .files
        .iter()
        .map(|fp| {
            let class = recorded.iter().find(|g| g.path == fp.path);
            let field = |f: fn(&GatedFile) -> &String| {
                class.map_or_else(|| "-".to_owned(), |g| f(g).clone())
            };
            let hunks = fp
                .hunks
                .iter()
                .map(|h| {
                    // A side with no lines (len 0) has no numbers to show.
                    let (mut old, mut new) = (h.old_start, h.new_start);
                    let lines = h
                        .lines
                        .iter()
                        .map(|l| {
                            let (sign, o, n) = match l.kind {
                                LineKind::Context => {
                                    old += 1;
                                    new += 1;
                                    (' ', Some(old - 1), Some(new - 1))
                                }
                                LineKind::Removed => {
                                    old += 1;
                                    ('-', Some(old - 1), None)
                                }
                                LineKind::Added => {
                                    new += 1;
                                    ('+', None, Some(new - 1))
                                }
                            };
                            LineView {
                                sign,
                                old: o,
                                new: n,
                                text: l.text.clone(),
                            }
                        })
                        .collect();
                    HunkView {
                        header: format!(
                            "@@ -{},{} +{},{} @@",
                            h.old_start, h.old_len, h.new_start, h.new_len
                        ),
                        lines,
                    }
                })
                .collect();
            FileView {
                path: fp.path.clone(),
                kind: fp.kind.as_str().to_owned(),
                bucket: field(|g| &g.bucket),
                rule: field(|g| &g.rule),
                verdict: field(|g| &g.verdict),
                reasons: Vec::new(),
                added: fp.added,
                removed: fp.removed,
                hunks,
            }
        })
        .collect()
}

/// The page of a gated job from the ledger, the kept artifact and the store's envelopes.
pub fn page_from_ledger(
    home: &Path,
    store: &Store,
    trusted: &PublicKey,
    job: &JobId,
) -> Result<ReviewPage> {
    let bom = crate::ledger::show_job(store, trusted, job)?;
    let gate = bom.gates.last();
    let mut page = ReviewPage {
        job: job.to_string(),
        decision: gate.map_or_else(|| "not gated".into(), |g| g.event.decision.clone()),
        source: "the verified ledger and the artifact kept on this host".into(),
        ..ReviewPage::default()
    };
    if let Some(s) = &bom.submit {
        page.prompt = Some(s.event.prompt.clone());
        page.model_requested = Some(s.event.model_requested.clone());
    }
    page.model_reported = bom.fetches.first().map(|f| f.event.model_reported.clone());
    // What a re-dispatched job's worker inherited, from the trusted side's own copy (after
    // `airlock gc` deleted the inbox: `resume.missing`).
    let record = crate::fetch::load_record(store, trusted, job).ok();
    page.inherited = record
        .as_ref()
        .and_then(|r| r.resumed_from.as_ref())
        .map(|from| crate::gate::inherit::section(store, job, from).0);
    for r in &bom.reviews {
        let e = &r.event;
        page.reviews.push(format!(
            "{} by {} at {} (ledger entry {}, artifact sha256:{}, trusted key {}){}",
            if e.decision == "approve" {
                "approved"
            } else {
                "declined"
            },
            e.by,
            rfc3339_utc(r.at),
            r.seq,
            e.artifact_sha256,
            e.trusted_key_id,
            if e.note.is_empty() {
                String::new()
            } else {
                format!(": {}", e.note)
            }
        ));
    }
    let judged = gate
        .map(|g| g.event.artifact_sha256)
        .or_else(|| bom.fetches.first().map(|f| f.event.artifact_sha256));
    let kept = match judged {
        Some(d) => read_kept(home, job, d),
        None => Err("no artifact was fetched for this job".to_owned()),
    };
    let mut paths = Vec::new();
    match kept {
        Ok(k) => {
            if let Some(d) = judged {
                page.comments = crate::gate::comments::kept(&crate::fetch::job_dir(home, job), d);
            }
            let p = &k.packet;
            page.tokens = match (p.tokens_in, p.tokens_out) {
                (None, None) => None,
                (i, o) => Some((i.unwrap_or(0), o.unwrap_or(0))),
            };
            page.limits_hit = p.limits_hit.clone();
            page.egress = p
                .egress
                .iter()
                .map(|a| {
                    format!(
                        "{} {}{}, {} B up, {} B down",
                        a.destination,
                        if a.allowed { "allowed" } else { "refused" },
                        a.reason
                            .as_deref()
                            .map_or_else(String::new, |r| format!(" ({r})")),
                        a.bytes_up,
                        a.bytes_down
                    )
                })
                .collect();
            let wall_clock = record.as_ref().map_or(0, |r| r.limits.wall_clock_secs);
            // Secret values are never published (`report::mask`): the log tail, the egress
            // lines and the patch's lines holding one are masked before any rendering.
            let scanner = crate::report::mask::scanner()?;
            mask_lines(scanner, "egress", &mut page.egress);
            page.failed_run = crate::run_account::of(p, k.log.as_deref(), wall_clock)
                .map(|run| (run.exit, run.log_tail));
            match k
                .patch
                .as_deref()
                .map(|b| parse_patch(b, &DiffLimits::default()))
            {
                Some(Ok(mut patch)) => {
                    crate::report::mask::mask_patch(scanner, &mut patch.files);
                    page.files = file_views(&patch, gate.map_or(&[], |g| &g.event.files))
                }
                Some(Err(e)) => page.diff_note = Some(format!("patch.diff was refused: {e}")),
                None => page.diff_note = Some("the artifact has no patch.diff".into()),
            }
        }
        Err(why) => page.diff_note = Some(why),
    }
    paths.extend(page.files.iter().map(|f| f.path.clone()));
    if let Some(g) = gate {
        page.reasons = reason_views(&g.event.reasons, &paths);
        for f in &mut page.files {
            f.reasons = page
                .reasons
                .iter()
                .filter(|r| r.path.as_deref() == Some(f.path.as_str()))
                .map(|r| format!("{}: {}", r.code, r.detail))
                .collect();
        }
    }
    let mut rows: Vec<(String, String)> = Vec::new();
    if let Some(s) = &bom.submit {
        let e = &s.event;
        rows.push(("revision".into(), e.revision.clone()));
        rows.push(("prompt".into(), format!("sha256:{}", e.prompt_sha256)));
        rows.push(("bundle".into(), format!("sha256:{}", e.bundle_sha256)));
        rows.push(("request".into(), format!("sha256:{}", e.request_sha256)));
    }
    if let Some(f) = bom.fetches.first() {
        rows.push((
            "artifact".into(),
            format!("sha256:{}", f.event.artifact_sha256),
        ));
        rows.push(("packet".into(), format!("sha256:{}", f.event.packet_sha256)));
        rows.push(("run".into(), f.event.run_id.clone()));
    }
    if let Some(g) = gate {
        rows.push(("diff".into(), format!("sha256:{}", g.event.diff_sha256)));
        rows.push(("policy".into(), format!("sha256:{}", g.event.policy_sha256)));
        rows.push(("gate".into(), g.event.gate_version.clone()));
        rows.push(("gated".into(), rfc3339_utc(g.at)));
    }
    page.bom = rows;
    page.chain = chain(home, store, trusted, job, &bom);
    Ok(page)
}

/// The page right after `airlock gate`: the ledger's page with the gate's own structured
/// reasons (verdict, path, rule) and per-file verdicts, and its bill of materials.
pub fn page_after_gate(
    home: &Path,
    store: &Store,
    trusted: &PublicKey,
    report: &GateReport,
) -> Result<ReviewPage> {
    let mut page = page_from_ledger(home, store, trusted, &report.job)?;
    page.source = "airlock gate, just now".into();
    page.comments = report.comments.clone();
    page.inherited = report.inherited.clone();
    page.decision = report.decision.to_string();
    page.reasons = report
        .reasons
        .iter()
        .map(|r| ReasonView {
            code: r.code.code().to_owned(),
            verdict: r.verdict.to_string(),
            path: r.path.clone(),
            rule: r.rule.clone(),
            detail: r.detail.clone(),
        })
        .collect();
    for f in &mut page.files {
        if let Some(c) = report.files.iter().find(|c| c.path == f.path) {
            f.bucket = c.bucket.to_string();
            f.rule = c.class_rule.to_owned();
            f.verdict = c.verdict.to_string();
        }
        f.reasons = page
            .reasons
            .iter()
            .filter(|r| r.path.as_deref() == Some(f.path.as_str()))
            .map(|r| format!("{} ({}): {}", r.code, r.verdict, r.detail))
            .collect();
    }
    page.bom = bom_rows(&report.bom)
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    if let Some(b) = &report.review_branch {
        page.bom.push((
            "review branch".into(),
            format!("{} at {} (parent {})", b.name, b.commit, b.parent),
        ));
    }
    Ok(page)
}

/// Writes `bytes` to `path` atomically (a temp file beside it, renamed).
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("{}: cannot create a file beside it", path.display()))?;
    tmp.write_all(bytes)?;
    tmp.persist(path)
        .with_context(|| format!("{}: cannot write", path.display()))?;
    Ok(())
}

/// `airlock gate --html FILE` / `--md FILE`: the page of the report just made.
pub fn write_after_gate(
    home: &crate::config::Home,
    store: &Store,
    report: &GateReport,
    html: Option<&Path>,
    md: Option<&Path>,
) -> Result<()> {
    let page = page_after_gate(&home.dir, store, &home.public_key()?, report)?;
    if let Some(path) = html {
        write_atomic(path, crate::report::html::render(&page).as_bytes())?;
    }
    if let Some(path) = md {
        write_atomic(path, crate::report::page::render_md(&page).as_bytes())?;
    }
    Ok(())
}

/// What `airlock show` is asked to do.
#[derive(Debug, Clone)]
pub struct ShowOptions {
    /// The job id.
    pub job: String,
    /// Write the review report as one self-contained HTML file here.
    pub html: Option<std::path::PathBuf>,
    /// Write a pull-request body (Markdown) here.
    pub md: Option<std::path::PathBuf>,
    /// Print the report data as JSON.
    pub json: bool,
}

/// `airlock show JOB`.
pub fn run(global: &crate::config::GlobalOptions, args: &ShowOptions) -> Result<Outcome> {
    let home = crate::config::Home::load(&global.home)?;
    let trusted = home.public_key()?;
    let store = home.open_store()?;
    let job = JobId::parse(&args.job)?;
    let page = page_from_ledger(&home.dir, &store, &trusted, &job)?;
    if let Some(path) = &args.html {
        write_atomic(path, crate::report::html::render(&page).as_bytes())?;
    }
    if let Some(path) = &args.md {
        write_atomic(path, crate::report::page::render_md(&page).as_bytes())?;
    }
    if args.json {
        crate::output::print_json(&page)?;
    } else {
        print!("{}", render_text(&page));
    }
    Ok(Outcome::Ok)
}

/// A terminal summary of the page (inert text).
fn render_text(p: &ReviewPage) -> String {
    use airlock_core::text;
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "job {}: {}", p.job, p.decision.to_uppercase());
    for r in &p.reasons {
        let path = r
            .path
            .as_deref()
            .map(|x| format!(" {}", text::line(x)))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  {} {}{path}: {}",
            r.verdict,
            text::line(&r.code),
            text::line(&r.detail)
        );
    }
    for r in &p.reviews {
        let _ = writeln!(s, "  {}", text::line(r));
    }
    s.push_str(&crate::report::inherited::render_text(p.inherited.as_ref()));
    if let Some(n) = &p.diff_note {
        let _ = writeln!(s, "diff: {}", text::line(n));
    }
    for f in &p.files {
        let _ = writeln!(
            s,
            "  {:<10} {:<11} {:<22} +{} -{} {}",
            f.bucket,
            f.kind,
            text::line(&f.rule),
            f.added,
            f.removed,
            text::line(&f.path)
        );
    }
    s.push_str(&crate::report::comments::render_text(&p.comments));
    let _ = writeln!(s, "chain of signatures:");
    for l in &p.chain {
        let _ = writeln!(
            s,
            "  {} [{}] key {} {}: {}",
            l.what,
            text::line(&l.location),
            l.key_id,
            text::line(&l.digest),
            text::line(&l.status)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::reason_views;

    #[test]
    fn recorded_reasons_are_split_into_code_path_and_detail() {
        let paths = vec!["src/a b.rs".to_owned(), ".github/x.yml".to_owned()];
        let v = reason_views(
            &[
                "ci-path-changed .github/x.yml: ci path (rule ci.github); policy".into(),
                "model-drift: asked m, answered n".into(),
                "src-path-changed src/a b.rs: src".into(),
            ],
            &paths,
        );
        assert_eq!(v[0].code, "ci-path-changed");
        assert_eq!(v[0].path.as_deref(), Some(".github/x.yml"));
        assert_eq!(v[0].detail, "ci path (rule ci.github); policy");
        assert_eq!(v[1].code, "model-drift");
        assert_eq!(v[1].path, None);
        assert_eq!(v[1].detail, "asked m, answered n");
        assert_eq!(v[2].path.as_deref(), Some("src/a b.rs"));
    }
}
