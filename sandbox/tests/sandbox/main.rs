//! Drives the real host binary (`airlock-sandbox-host`): every probe runs as the sandboxed
//! generator, and a blocked probe that exits 0 is a breach. Tests that need a kernel
//! feature print `SKIPPED: <why>` when it is missing, and fail instead when `CI` is set.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

/// The egress proxy: allowlist, address checks, limits, log; the only way out of a sandbox.
mod egress;
/// Filesystem probes (writes outside the workdir, the token file, the worker binary).
mod filesystem;
/// System V IPC: refused in the fallback, a namespace of its own otherwise.
mod ipc;
/// Resource limits: fork bomb, memory hog, CPU, file size.
mod limits;
/// Mode selection and refusals before anything runs.
mod modes;
/// Network probes, in namespace mode and in the landlock+seccomp fallback.
mod network;
/// Privileges seen from inside: no_new_privs, capabilities, seccomp, identity, namespaces.
mod privileges;
/// Readable roots: installs outside the system roots, bound in for a root worker; preflight.
mod readable;
/// The runner: process group, cleared environment, capped log, exit statuses, wall clock.
mod runner;
