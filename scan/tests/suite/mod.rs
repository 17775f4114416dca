//! Test modules.

/// Helpers shared by the suite.
pub mod common;
/// Redaction: line structure kept, every secret byte removed, markers never re-reported.
mod redaction;
/// Every rule's own true- and false-positive examples, with and without the prefilter.
mod rules;
