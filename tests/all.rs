//! End-to-end tests: one binary, one module per concern. They drive the real built
//! `airlock` and `airlock-worker` binaries, with real `git`, in fresh temp dirs.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
