//! Development-only support shared by airlock's tests and fuzz targets; no binary links it.
//!
//! - [`skip`](mod@skip): the one way a test skips (fails under CI).
//! - [`fuzz`]: the fixed-seed generator, the committed corpus and the mutators every crate's
//!   fuzz tests use.
//! - [`core`]: the fuzz-target entry points over `airlock-core`'s boundary parsers
//!   (`fuzz/fuzz_targets/*.rs` call them), with their invariants.

// Test support: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod core;
pub mod fuzz;
pub mod skip;

pub use skip::skip;
