//! `airlock-worker watch DIR`: local-drop mode. Token files appearing in `DIR/tickets/` are
//! run one at a time.
//!
//! Guards against: running a ticket twice (it is claimed by an atomic rename into
//! `tickets/.claimed/` before it runs, and the SHA-256 of every token ever seen is kept in
//! `tickets/.seen`), one bad ticket stopping the worker (it is moved to `tickets/rejected/`
//! with a `<name>.reason` file, and the loop goes on), and odd entries (links, directories,
//! hidden or oversized files are ignored or rejected, never followed).

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use airlock_core::digest::Sha256Digest;
use anyhow::{Context, Result};
use notify::{RecursiveMode, Watcher};

use crate::options::WatchOptions;
use crate::workspace::Termination;

const MAX_TICKET_BYTES: u64 = 64 * 1024;

struct Dirs {
    tickets: PathBuf,
    claimed: PathBuf,
    done: PathBuf,
    rejected: PathBuf,
    seen: PathBuf,
}

impl Dirs {
    fn new(dir: &Path) -> Result<Dirs> {
        let tickets = dir.join("tickets");
        let d = Dirs {
            claimed: tickets.join(".claimed"),
            done: tickets.join("done"),
            rejected: tickets.join("rejected"),
            seen: tickets.join(".seen"),
            tickets,
        };
        for p in [&d.tickets, &d.claimed, &d.done, &d.rejected] {
            std::fs::create_dir_all(p)
                .with_context(|| format!("{}: cannot create", p.display()))?;
        }
        Ok(d)
    }

    fn seen(&self) -> HashSet<String> {
        std::fs::read_to_string(&self.seen)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn remember(&self, digest: &str) -> Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.seen)?;
        writeln!(f, "{digest}")?;
        f.sync_all()?;
        Ok(())
    }

    /// Ticket names waiting, sorted (regular, non-hidden files only).
    fn pending(&self) -> Vec<String> {
        let Ok(rd) = std::fs::read_dir(&self.tickets) else {
            return Vec::new();
        };
        let mut names: Vec<String> = rd
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .filter(|n| !n.starts_with('.') && !n.ends_with(".tmp"))
            .collect();
        names.sort();
        names
    }

    fn reject(&self, claimed: &Path, name: &str, reason: &str) {
        tracing::warn!(ticket = name, "ticket rejected: {reason}");
        let _ = std::fs::rename(claimed, self.rejected.join(name));
        let _ = std::fs::write(
            self.rejected.join(format!("{name}.reason")),
            format!("{reason}\n"),
        );
    }
}

/// Runs the watch loop until `--max-jobs` tickets were handled or a termination signal.
pub fn watch(args: &WatchOptions) -> Result<()> {
    crate::generate::check_pass_env(&args.job.pass_env)?;
    let dirs = Dirs::new(&args.dir)?;
    let term = Termination::install()?;
    let (tx, rx) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |ev| {
        let _ = tx.send(ev);
    })
    .context("cannot watch the tickets directory")?;
    watcher
        .watch(&dirs.tickets, RecursiveMode::NonRecursive)
        .context("cannot watch the tickets directory")?;
    eprintln!("watching {} for tickets", dirs.tickets.display());

    let mut handled = 0u64;
    loop {
        for name in dirs.pending() {
            if term.requested() || args.max_jobs.is_some_and(|m| handled >= m) {
                return Ok(());
            }
            if handle(&dirs, &name, args, &term) {
                handled += 1;
            }
        }
        if term.requested() || args.max_jobs.is_some_and(|m| handled >= m) {
            return Ok(());
        }
        // Wake on a filesystem event, or every second as a safety net.
        let _ = rx.recv_timeout(Duration::from_secs(1));
        while rx.try_recv().is_ok() {}
    }
}

/// Claims and runs one ticket. Returns whether a ticket was consumed.
fn handle(dirs: &Dirs, name: &str, args: &WatchOptions, term: &Termination) -> bool {
    let src = dirs.tickets.join(name);
    let claimed = dirs.claimed.join(name);
    // The rename is the claim: if it fails, another worker (or a vanished file) won.
    if std::fs::rename(&src, &claimed).is_err() {
        return false;
    }
    let meta = match std::fs::symlink_metadata(&claimed) {
        Ok(m) => m,
        Err(_) => return false,
    };
    if !meta.is_file() || meta.len() > MAX_TICKET_BYTES {
        dirs.reject(
            &claimed,
            name,
            "not a regular file of at most 64 KiB (watch.ticket)",
        );
        return true;
    }
    let token = match crate::run::read_token(None, Some(&claimed)) {
        Ok(t) => t,
        Err(e) => {
            dirs.reject(&claimed, name, &format!("{e:#}"));
            return true;
        }
    };
    let digest = Sha256Digest::of_bytes(token.as_bytes()).to_hex();
    if dirs.seen().contains(&digest) {
        dirs.reject(&claimed, name, "this token was already run (watch.replay)");
        return true;
    }
    if let Err(e) = dirs.remember(&digest) {
        dirs.reject(&claimed, name, &format!("cannot record the ticket: {e}"));
        return true;
    }
    // Every ticket sits below the tickets directory: keep all of it out of the sandbox.
    let origin = crate::run::TokenOrigin {
        argv: false,
        paths: vec![dirs.tickets.clone()],
    };
    match crate::run::run_job(&token, &origin, &args.job, term) {
        Ok(d) => {
            eprintln!("ticket {name}: {}", d.message());
            let _ = std::fs::rename(&claimed, dirs.done.join(name));
        }
        Err(e) => dirs.reject(&claimed, name, &format!("{e:#}")),
    }
    true
}
