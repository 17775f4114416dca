//! `airlock-core` holds every byte format and check that both sides of airlock must agree on.
//!
//! The trusted side (`airlock`) and the untrusted worker (`airlock-worker`) link this crate so
//! that a bundle, a token, an artifact and their signatures are produced and checked by one
//! implementation. `docs/FORMATS.md` at the repository root is the normative description.
//!
//! # Guarantees
//! - Signed metadata is DSSE over in-toto Statement v1, ed25519 only; verification takes
//!   pinned keys and never trusts a key carried inside the envelope ([`dsse`]).
//! - Every untrusted input is parsed with an explicit size limit before allocation
//!   ([`limits`]), with `deny_unknown_fields` on every JSON format ([`format`](mod@format)).
//! - The tar reader never creates links, devices or FIFOs, never writes outside its
//!   destination and refuses bombs ([`tar`]).
//! - Values that passed verification are typed [`Verified<T>`]; only this crate can make one.
//! - Untrusted text reaches a terminal, Markdown, HTML, a git trailer or a ledger line one
//!   way ([`text`]): every invisible, bidirectional or control character marked `<U+XXXX>`.
//!
//! # Not guaranteed
//! - No network I/O, no processes, no clock: callers pass `now` in (unix seconds).
//! - Policy (what a gate decides) lives in the trusted binary, not here.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod bech32;
pub mod clock;
pub mod diff;
pub mod digest;
pub mod dsse;
pub mod error;
pub mod fileurl;
pub mod format;
pub mod jobid;
pub mod keys;
pub mod limits;
pub mod model;
pub mod paths;
pub mod seal;
pub mod spread;
pub mod store_layout;
pub mod tar;
pub mod text;
pub mod token;
pub mod verified;

pub use error::Error;
pub use verified::Verified;

/// Version of this crate, recorded in manifests and packets.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
