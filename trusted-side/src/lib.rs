//! The trusted side of airlock as a library: packs a redacted, signed bundle of a git revision,
//! submits it, fetches the worker's artifact, gates it and keeps the signed ledger. The
//! `airlock` binary (`main.rs`, `cli.rs`) only parses arguments into each command's options
//! type and calls the command here; fuzz targets call the parsers and renderers directly.
//!
//! # Guarantees
//! - Never packs a deny-listed path; refuses (or, with `--redact`, redacts and records) any
//!   secret its scanner finds; ships what it scanned byte for byte, each redacted file and the
//!   manifest and request scanned again as written.
//! - Writes outputs atomically: on any error nothing half-written is left behind.
//! - Exit codes are decided in one place ([`exit`]): 0 ok/queue, 1 error, 2 usage,
//!   3 needs a human, 4 rejected/refused.
//!
//! # Not guaranteed
//! - That the scanner finds every secret: it is a second line behind the deny-list, not a proof.
//! - A stable Rust API: the modules are public for the binary and the fuzz targets.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod approve;
pub mod audit;
mod audit_export;
pub mod classify;
pub mod classify_cmd;
pub mod compare;
pub mod config;
pub mod demo;
mod egress_check;
pub mod exit;
pub mod fetch;
pub mod fleet;
/// Fuzz-target helpers: built for `cargo fuzz` (`cfg(fuzzing)`) and for this crate's unit
/// tests, which run them on the committed seeds.
#[cfg(any(fuzzing, test))]
#[doc(hidden)]
pub mod fuzzing;
pub mod gate;
pub mod gc;
mod git;
pub mod init;
mod key_leak;
mod ledger;
mod model_key;
pub mod output;
pub mod pack;
mod reasons;
pub mod report;
pub mod resubmit;
mod run_account;
pub mod scan_cmd;
pub mod show;
pub mod status;
mod store;
pub mod submit;
#[cfg(test)]
mod test_artifact;
pub mod watch;
