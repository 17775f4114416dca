//! `airlock audit verify|show|export`: read the signed, hash-chained ledger.
//!
//! Guards against: a broken or truncated ledger passing as whole (verify names the first
//! broken entry and refuses, exit 4; a pinned head catches a cut tail).

use std::path::PathBuf;

use anyhow::Result;

use crate::config::GlobalOptions;
use crate::exit::Outcome;

/// What `airlock audit` is asked to do.
#[derive(Debug, Clone)]
pub enum AuditOptions {
    /// Verify every entry's signature and the hash chain, against a pinned head if given.
    Verify {
        /// A head pinned earlier (`SEQ:SHA256`).
        head: Option<String>,
        /// Print JSON.
        json: bool,
    },
    /// The generation bill of materials of one job.
    Show {
        /// The job id.
        job: String,
        /// Print JSON.
        json: bool,
    },
    /// Write every envelope of the selected jobs as in-toto JSON lines.
    Export {
        /// Only jobs submitted on or after this date (YYYY-MM-DD, UTC).
        since: Option<String>,
        /// The output file.
        out: PathBuf,
        /// Print JSON.
        json: bool,
    },
}

/// `airlock audit …`.
pub fn run(global: &GlobalOptions, cmd: &AuditOptions) -> Result<Outcome> {
    let cmd = cmd.clone();
    let home = crate::config::Home::load(&global.home)?;
    let trusted = home.public_key()?;
    let store = home.open_store()?;
    match cmd {
        AuditOptions::Verify { head, json } => {
            let result = match head {
                Some(h) => {
                    let pin: crate::ledger::LedgerHead = h
                        .parse()
                        .map_err(|e| anyhow::anyhow!("--head {h:?}: {e}"))?;
                    crate::ledger::verify_pinned(&store, &trusted, &pin)
                }
                None => crate::ledger::verify(&store, &trusted),
            };
            match result {
                Ok(report) => {
                    // Later gates read the model history on from here (`gate/drift.rs`).
                    if let Err(e) = crate::gate::drift::keep(&store, &trusted, &home.dir) {
                        tracing::warn!("the model history for later gates was not kept: {e:#}");
                    }
                    if json {
                        crate::output::print_json(&report)?;
                    } else {
                        println!("{report}");
                    }
                    Ok(Outcome::Ok)
                }
                Err(e) => match e.downcast_ref::<crate::ledger::LedgerError>() {
                    Some(crate::ledger::LedgerError::Broken(b)) => {
                        if json {
                            crate::output::print_json(b)?;
                        }
                        Err(crate::exit::Refused(format!("ledger broken: {b}")).into())
                    }
                    _ => Err(e),
                },
            }
        }
        AuditOptions::Show { job, json } => {
            let job = airlock_core::jobid::JobId::parse(&job)?;
            let bom = crate::ledger::show_job(&store, &trusted, &job)?;
            if json {
                crate::output::print_json(&bom)?;
            } else {
                println!("{bom}");
            }
            Ok(Outcome::Ok)
        }
        AuditOptions::Export { since, out, json } => {
            crate::audit_export::run(&home, &store, &trusted, since.as_deref(), &out, json)
        }
    }
}
