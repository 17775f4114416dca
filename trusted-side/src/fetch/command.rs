//! `airlock fetch JOB [--checkpoint]`: the command around [`super::fetch`]: what it prints,
//! and refusals turned into exit 4.
//!
//! Guards against: worker text (egress destinations, the generator's log) garbling the
//! terminal: everything the worker wrote is printed escaped.

use std::path::Path;

use airlock_core::jobid::JobId;
use airlock_core::keys::SigningKey;
use airlock_core::text;
use anyhow::Result;

use super::{fetch, fetch_checkpoint, FetchError, Fetched};
use crate::store::Store;

/// What `airlock fetch` is asked to do.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// The job id.
    pub job: String,
    /// Fetch and verify the last checkpoint instead of the final artifact.
    pub checkpoint: bool,
    /// Print the result as JSON.
    pub json: bool,
}

/// `airlock fetch JOB`.
pub fn run(
    global: &crate::config::GlobalOptions,
    args: &FetchOptions,
) -> Result<crate::exit::Outcome> {
    let home = crate::config::Home::load(&global.home)?;
    let key = home.signing_key()?;
    let store = home.open_store()?;
    let job = JobId::parse(&args.job)?;
    let now = airlock_core::clock::now_unix();
    if args.checkpoint {
        return run_checkpoint(&store, &key, &home.dir, &job, args.json);
    }
    match fetch(&store, &key, &home.dir, &job, now, false) {
        Ok(f) => {
            crate::ledger::append(&store, &key, &job, f.ledger_event(), now)?;
            if args.json {
                crate::output::print_json(&f.summary())?;
            } else {
                let s = f.summary();
                println!("job {} fetched and verified", s.job);
                println!("  artifact  sha256:{}", s.artifact_sha256);
                println!(
                    "  model     requested {}, reported {}",
                    text::line(s.model_requested),
                    text::line(s.model_reported)
                );
                println!(
                    "  diff      {} files, +{} -{}",
                    s.files_changed, s.lines_added, s.lines_removed
                );
                println!(
                    "  sandbox   {}{}",
                    text::line(s.sandbox),
                    if s.partial { " (PARTIAL result)" } else { "" }
                );
                print_run(&f);
            }
            Ok(crate::exit::Outcome::Ok)
        }
        Err(FetchError::Refused(r)) => {
            let event = crate::ledger::Event::Reject {
                stage: r.code.stage().as_str().into(),
                reason_code: r.code.code().into(),
                detail: r.detail.clone(),
            };
            crate::ledger::append(&store, &key, &job, event, now)?;
            Err(crate::exit::Refused(format!("job {job}: artifact refused: {r}")).into())
        }
        Err(FetchError::Failed(e)) => Err(e),
    }
}

/// `airlock fetch JOB --checkpoint`: verify and keep the last checkpoint, loudly partial.
fn run_checkpoint(
    store: &Store,
    key: &SigningKey,
    home: &Path,
    job: &JobId,
    json: bool,
) -> Result<crate::exit::Outcome> {
    let f = match fetch_checkpoint(store, key, home, job) {
        Ok(f) => f,
        Err(FetchError::Refused(r)) => {
            return Err(crate::exit::Refused(format!("job {job}: checkpoint refused: {r}")).into())
        }
        Err(FetchError::Failed(e)) => return Err(e),
    };
    if json {
        return crate::output::print_json(&f.summary()).map(|()| crate::exit::Outcome::Ok);
    }
    let s = f.summary();
    println!("job {job}: checkpoint fetched and verified: PARTIAL, not a final result (the gate never reads it)");
    println!("  checkpoint sha256:{}", s.artifact_sha256);
    println!(
        "  landed     {} (store clock), {} s into the run",
        airlock_core::jobid::rfc3339_utc(f.landed_at),
        f.packet.timings.generator_ms / 1000
    );
    println!(
        "  diff       {} files, +{} -{} so far",
        s.files_changed, s.lines_added, s.lines_removed
    );
    println!("  kept at    {}", f.artifact_path.display());
    println!("  next       {}", checkpoint_next(store, job));
    Ok(crate::exit::Outcome::Ok)
}

/// What to do after fetching a checkpoint: fetch the final artifact when it has landed
/// (a resubmit would run the job again for nothing), else resubmit.
fn checkpoint_next(store: &Store, job: &JobId) -> String {
    match store.head(&airlock_core::store_layout::drop_artifact(job)) {
        Ok(Some(_)) => format!(
            "the final artifact has landed: `airlock fetch {job}` fetches it, then `airlock gate {job}`"
        ),
        _ => format!("`airlock resubmit {job}` dispatches the job again under a new job"),
    }
}

/// Prints the egress log and, for a failed run, its exit in words and the log's tail.
fn print_run(f: &Fetched) {
    for a in &f.packet.egress {
        println!(
            "  egress    {} {}{}",
            text::line(&a.destination),
            if a.allowed { "allowed" } else { "refused" },
            a.reason
                .as_deref()
                .map_or_else(String::new, |r| format!(" ({})", text::line(r)))
        );
    }
    if let Some(run) = crate::run_account::of(
        &f.packet,
        f.log_tail.as_deref(),
        f.record.limits.wall_clock_secs,
    ) {
        println!("  generator {}", run.exit);
        if run.log_tail.is_empty() {
            println!("  (no generator.log in the artifact)");
        } else {
            println!("  generator.log (last {} lines):", run.log_tail.len());
            for l in &run.log_tail {
                println!("    {l}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checkpoint_hint_says_fetch_once_the_final_artifact_landed_else_resubmit() {
        let dir = tempfile::tempdir().unwrap();
        let url = airlock_core::fileurl::path_to_file_url(dir.path()).unwrap();
        let store = Store::open(&url).unwrap();
        let job = JobId::parse("20260101T000000Z-00112233445566778899").unwrap();
        let before = checkpoint_next(&store, &job);
        assert!(
            before.contains(&format!("airlock resubmit {job}")),
            "{before}"
        );
        store
            .put_bytes(&airlock_core::store_layout::drop_artifact(&job), b"final")
            .unwrap();
        let after = checkpoint_next(&store, &job);
        assert!(!after.contains("resubmit"), "{after}");
        assert!(after.contains(&format!("airlock fetch {job}")), "{after}");
    }
}
