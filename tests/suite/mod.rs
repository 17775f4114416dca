//! Test modules (one line each on what they cover).

/// `airlock init` and `airlock pack`: selection, scanning, redaction, determinism, bad input.
mod pack;
