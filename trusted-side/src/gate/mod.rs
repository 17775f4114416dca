//! The gate hop: judges a worker's artifact after fetch and decides `queue`, `human` or
//! `reject`, with reasons. Entry points: [`run_gate`] and [`print`]; the steps are listed in
//! `run.rs`.
pub mod checks;
pub mod classify;
pub mod deps;
pub mod policy;
pub mod report;
pub mod review;
pub mod run;
pub mod sparse_apply;

#[allow(unused_imports)] // `GateReport` is API for callers that name the type
pub use report::{print, GateReport};
pub use run::{run_gate, GateOptions};

#[cfg(test)]
mod docs_tests;
