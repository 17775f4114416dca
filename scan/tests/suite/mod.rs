//! Test modules.

/// Benign look-alikes (digests, UUIDs, example keys, public keys, placeholders): silent.
mod benign;
/// Helpers shared by the suite.
pub mod common;
/// airlock TOML config and gitleaks import.
mod config;
/// Generated corpus (fixed seed): random instances of every rule in realistic files.
mod corpus;
/// Engine: parallel file scanning, skips, long lines, positions.
mod engine;
/// Evaluation corpus (fixed seed): recall and false positives per context; fails under
/// 99% recall or over 1% false positives.
mod eval;
/// Redaction: line structure kept, every secret byte removed, markers never re-reported.
mod redaction;
/// Every rule's own true- and false-positive examples, with and without the prefilter.
mod rules;
/// scan/RULES.md lists every rule (regenerate with AIRLOCK_UPDATE_RULES_MD=1).
mod rules_md;
/// SARIF output validates against the SARIF 2.1.0 JSON schema.
mod sarif;
