//! One error type for the crate, collecting the error of each boundary module.
//!
//! Variants carry the file or member, the rule id and, for limits, both the limit and the value
//! seen. No variant ever carries a secret value.

/// Any error from `airlock-core`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A limit was exceeded.
    #[error(transparent)]
    Limit(#[from] crate::limits::LimitError),
    /// A digest could not be parsed or did not match.
    #[error(transparent)]
    Digest(#[from] crate::digest::DigestError),
    /// A key file could not be read, written or trusted.
    #[error(transparent)]
    Key(#[from] crate::keys::KeyError),
    /// A DSSE envelope or statement was malformed or not signed by a pinned key.
    #[error(transparent)]
    Envelope(#[from] crate::dsse::EnvelopeError),
    /// A job token was malformed, expired or not for us.
    #[error(transparent)]
    Token(#[from] crate::token::TokenError),
    /// A tarball broke a rule of the safe reader or writer.
    #[error(transparent)]
    Tar(#[from] crate::tar::TarError),
    /// A JSON document (manifest, request, packet, record) was malformed.
    #[error(transparent)]
    Format(#[from] crate::format::FormatError),
    /// A path broke a rule.
    #[error(transparent)]
    Path(#[from] crate::paths::PathError),
    /// A job id was malformed.
    #[error(transparent)]
    JobId(#[from] crate::jobid::JobIdError),
    /// A patch broke a rule of the diff format, or a tree could not be diffed.
    #[error(transparent)]
    Diff(#[from] crate::diff::DiffError),
}
