//! `airlock scan [PATH | --rev R]`: the secret scanner on its own, for CI. The same engine
//! and rules `pack` and `gate` use.
//!
//! Guards against: printing a secret (findings carry rule, place and a short fingerprint,
//! never the value), following links out of the scanned tree (directory walk lists regular
//! files only, without following symlinks), and silently skipping files (binary and oversize
//! files are counted and listed).

use std::path::{Path, PathBuf};

use airlock_scan::{ScanReport, Scanner, SkipReason, SkippedFile};
use anyhow::{bail, Context, Result};

use crate::exit::Outcome;

/// Builds the scanner from the built-in rules, an airlock TOML config, or a gitleaks config.
pub fn scanner(config: Option<&Path>, gitleaks: Option<&Path>) -> Result<Scanner> {
    let read = |p: &Path| -> Result<String> {
        let meta = std::fs::metadata(p).with_context(|| format!("{}: cannot read", p.display()))?;
        if meta.len() > airlock_scan::MAX_CONFIG_BYTES as u64 {
            bail!(
                "{}: config larger than {} bytes",
                p.display(),
                airlock_scan::MAX_CONFIG_BYTES
            );
        }
        std::fs::read_to_string(p).with_context(|| format!("{}: cannot read", p.display()))
    };
    let (scanner, warnings) = match (config, gitleaks) {
        (Some(_), Some(_)) => bail!("--config and --gitleaks-config are exclusive"),
        (Some(p), None) => {
            Scanner::from_config_toml(&read(p)?).with_context(|| format!("{}", p.display()))?
        }
        (None, Some(p)) => {
            Scanner::from_gitleaks_toml(&read(p)?).with_context(|| format!("{}", p.display()))?
        }
        (None, None) => (Scanner::with_default_detectors()?, Vec::new()),
    };
    for w in warnings {
        tracing::warn!("{w}");
        eprintln!("warning: {w}");
    }
    Ok(scanner)
}

/// Regular files below `root` (relative display paths), skipping `.git/`, never following links.
fn walk(root: &Path) -> Result<Vec<(String, PathBuf)>> {
    let meta = std::fs::symlink_metadata(root)
        .with_context(|| format!("{}: cannot read", root.display()))?;
    if meta.is_file() {
        return Ok(vec![(root.display().to_string(), root.to_owned())]);
    }
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .with_context(|| format!("{}: cannot list", dir.display()))?
            .collect::<std::io::Result<_>>()?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let ty = e.file_type()?;
            let path = e.path();
            if ty.is_dir() {
                if e.file_name() != ".git" {
                    stack.push(path);
                }
            } else if ty.is_file() {
                let rel = path.strip_prefix(root).unwrap_or(&path);
                out.push((rel.to_string_lossy().into_owned(), path));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Scans a git revision's tree, each worker streaming its share of the blobs from a stream of
/// its own (the working tree's file where it is the blob, else `git cat-file --batch`).
fn scan_rev(scanner: &Scanner, repo: &Path, rev: &str) -> Result<ScanReport> {
    let repo = crate::git::Repo::open(repo)?;
    let (commit, _) = repo.resolve(rev)?;
    let max = scanner.max_file_bytes();
    let mut report = ScanReport::default();
    let mut blobs = Vec::new();
    for e in repo.list_tree(&commit)? {
        let path = String::from_utf8_lossy(&e.path).into_owned();
        if e.kind != "blob" || e.mode == "120000" {
            continue;
        }
        if e.size > max {
            report.skipped.push(SkippedFile {
                path,
                reason: SkipReason::TooLarge {
                    size: e.size,
                    limit: max,
                },
            });
            continue;
        }
        blobs.push((path, e.oid, e.size));
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // One git stream per worker, each with its share of the blobs (dealt by bytes).
    let lists = crate::git::deal(blobs.iter().map(|b| b.2), threads);
    let streams = (lists.iter())
        .map(|list| {
            let wants = list.iter().map(|&i| {
                let (path, oid, size) = &blobs[i];
                crate::git::BlobWant {
                    oid: oid.clone(),
                    path: path.clone(),
                    size: *size,
                }
            });
            repo.blobs(wants.collect())
        })
        .collect::<Result<Vec<_>>>()?;
    let blobs = &blobs;
    let results: Result<Vec<ScanReport>> = std::thread::scope(|s| {
        let workers: Vec<_> = (lists.iter().zip(streams))
            .map(|(list, mut stream)| {
                s.spawn(move || -> Result<ScanReport> {
                    let mut part = ScanReport::default();
                    let mut content = Vec::new();
                    for &i in list {
                        let (path, oid, _) = &blobs[i];
                        stream.next_blob(oid, max, &mut content)?;
                        part.files_scanned += 1;
                        part.bytes_scanned += content.len() as u64;
                        part.findings.extend(scanner.scan(path, &content));
                    }
                    Ok(part)
                })
            })
            .collect();
        let mut parts = Vec::new();
        for w in workers {
            parts.push(
                w.join()
                    .map_err(|_| anyhow::anyhow!("scanner panicked"))??,
            );
        }
        Ok(parts)
    });
    for part in results? {
        report.findings.extend(part.findings);
        report.files_scanned += part.files_scanned;
        report.bytes_scanned += part.bytes_scanned;
        report.skipped.extend(part.skipped);
    }
    report
        .findings
        .sort_by(|a, b| (&a.path, a.start).cmp(&(&b.path, b.start)));
    report.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(report)
}

/// What `airlock scan` is asked to do.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// A directory or file (default: the current directory); with `rev`, the repository.
    pub path: Option<PathBuf>,
    /// Scan this git revision's tree instead of the files on disk.
    pub rev: Option<String>,
    /// An airlock scanner config (TOML; extends the built-ins).
    pub config: Option<PathBuf>,
    /// A gitleaks config to import.
    pub gitleaks_config: Option<PathBuf>,
    /// Print the report as JSON.
    pub json: bool,
    /// Also write SARIF 2.1.0 here.
    pub sarif: Option<PathBuf>,
    /// Print every rule's regex, one per line, and exit.
    pub print_regex: bool,
}

/// `airlock scan`.
pub fn run(global: &crate::config::GlobalOptions, args: &ScanOptions) -> Result<Outcome> {
    let quiet = global.quiet;
    let scanner = scanner(args.config.as_deref(), args.gitleaks_config.as_deref())?;
    if args.print_regex {
        for pattern in scanner.regex_patterns() {
            println!("{pattern}");
        }
        return Ok(Outcome::Ok);
    }
    let report = match (&args.rev, &args.path) {
        (Some(rev), _) => scan_rev(
            &scanner,
            args.path.as_deref().unwrap_or(Path::new(".")),
            rev,
        )?,
        (None, path) => {
            let root = path.clone().unwrap_or_else(|| PathBuf::from("."));
            let files = walk(&root)?;
            scanner.scan_files_parallel(files, 0)?
        }
    };
    if let Some(sarif_path) = &args.sarif {
        let doc =
            airlock_scan::sarif::to_sarif(&report.findings, scanner.rules(), airlock_scan::VERSION);
        std::fs::write(sarif_path, serde_json::to_vec_pretty(&doc)?)
            .with_context(|| format!("{}: cannot write", sarif_path.display()))?;
    }
    if args.json {
        crate::output::print_json(&report)?;
    } else {
        print_human(&report, quiet);
    }
    Ok(if report.findings.is_empty() {
        Outcome::Ok
    } else {
        Outcome::Reject
    })
}

fn print_human(report: &ScanReport, quiet: bool) {
    for f in &report.findings {
        println!("{f} (column {}, fingerprint {})", f.column, f.fingerprint);
    }
    if quiet {
        return;
    }
    for s in &report.skipped {
        tracing::info!("{s}");
    }
    eprintln!(
        "{} finding(s); scanned {} file(s), {:.1} MiB (binaries by their printable runs); skipped {} file(s) (-v lists them)",
        report.findings.len(),
        report.files_scanned,
        report.bytes_scanned as f64 / (1024.0 * 1024.0),
        report.skipped.len()
    );
}
