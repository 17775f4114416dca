//! Entry points of the trusted side's fuzz targets (`fuzz/fuzz_targets/classify_content.rs`,
//! `fuzz/fuzz_targets/report.rs`). Not a stable API: compiled only under `cfg(fuzzing)` (set by
//! `cargo fuzz`) and for this crate's unit tests, which run each helper on the committed seeds
//! (`fuzz/corpus/<target>/`) and on inputs mutated by a fixed-seed generator.
//!
//! Guards against: the gate's content classification and its review reports breaking on
//! hostile input (a panic, content that lowers a bucket, work past the read cap, worker text
//! that becomes markup, script or a bidi reordering).

pub mod classify_content;
pub mod report;

pub use classify_content::classify_content;
pub use report::report;
