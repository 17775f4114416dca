//! `Verified<T>`: a value that passed a signature or digest check in this crate.
//!
//! Guards against: code paths that act on unverified data. The constructor is private to
//! `airlock-core`, and the type has no `Deserialize`, so a `Verified<T>` can only come out of a
//! `verify_*` function here.

use std::ops::Deref;

/// A value that passed verification. Only `airlock-core` can construct one.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified<T>(T);

impl<T> Verified<T> {
    /// Wraps a value that the caller in this crate has just verified.
    pub(crate) fn new(value: T) -> Self {
        Verified(value)
    }

    /// Gives up the proof and returns the plain value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Verified<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}
