//! Drives the real host binary (`airlock-sandbox-host`): every probe runs as the sandboxed
//! generator, and a blocked probe that exits 0 is a breach. Tests that need a kernel
//! feature print `SKIPPED: <why>` when it is missing, and fail instead when `CI` is set.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

/// Mode selection and refusals before anything runs.
mod modes;
/// The runner: process group, cleared environment, capped log, exit statuses, wall clock.
mod runner;
