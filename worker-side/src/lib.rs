//! `airlock-worker`: the untrusted hop, as a library (the `airlock-worker` binary is its thin
//! command line, `main.rs`). A job token and a bundle in, one signed artifact out.
//!
//! The worker holds nothing but its token: no store credentials, no git, no cloud SDK. It
//! verifies everything it is given against the pinned trusted public key before it runs the
//! generator, runs the generator confined (see `airlock-sandbox`), computes the diff itself,
//! and signs the artifact with the per-job key from the token.
//!
//! # Guarantees
//! - Nothing runs unless the token, the bundle digest and the bundle's signature verify.
//! - The generator sees a cleared environment (explicit `--pass-env` allowlist only).
//! - The per-run directory is removed on every exit path, including SIGTERM/SIGINT.
//! - Exit codes (see `outcome`): 0 artifact dropped, 1 error or refusal (nothing dropped),
//!   2 usage, 3 the generator failed (partial artifact dropped), 4 the job was already
//!   finished (nothing ran), 5 the generator changed nothing (empty artifact dropped).
//!
//! # Not guaranteed
//! - That a host compromised before the run did not tamper with the worker binary itself:
//!   the trusted side verifies everything the worker returns and trusts none of it.
#![deny(unsafe_code)]
#![deny(missing_docs)]

mod artifact;
mod comments;
mod disk;
pub mod generate;
pub mod gitignore;
mod home;
pub mod keygen;
mod needs;
pub mod options;
pub mod outcome;
mod readable;
mod remove;
mod resume;
pub mod run;
pub mod serve;
mod transfer;
mod tree;
pub mod watch;
mod workspace;

/// Fuzz-target helpers: built for `cargo fuzz` (`cfg(fuzzing)`) and for this crate's unit
/// tests, which run them on the committed seeds.
#[cfg(any(fuzzing, test))]
#[doc(hidden)]
pub mod fuzzing;
