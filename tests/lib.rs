//! helpers
