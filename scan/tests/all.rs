//! One test binary for `airlock-scan`: each module under `suite/` has one purpose.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test binary: a panic is a test failure"
)]

mod suite;
