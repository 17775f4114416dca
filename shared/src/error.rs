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

/// An error and its causes on one line, `outer: cause: cause`, each cause once: a cause whose
/// text its parent already printed (an error type that shows its `#[source]` in its own
/// message) is not repeated, so `a: No such file or directory (os error 2)` never doubles.
pub fn one_line(err: &(dyn std::error::Error + 'static)) -> String {
    let mut line = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        cause = c.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[derive(Debug, thiserror::Error)]
    #[error("policy file p.toml: {0}")]
    struct Shows(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read prompt")]
    struct Hides(#[source] std::io::Error);

    fn missing() -> std::io::Error {
        std::io::Error::from(std::io::ErrorKind::NotFound)
    }

    #[test]
    fn a_cause_its_parent_printed_is_not_repeated() {
        let line = one_line(&Shows(missing()));
        assert_eq!(line.matches(&missing().to_string()).count(), 1, "{line}");
        assert!(line.starts_with("policy file p.toml: "), "{line}");
    }

    #[test]
    fn a_cause_its_parent_did_not_print_is_appended() {
        let line = one_line(&Hides(missing()));
        assert_eq!(line, format!("cannot read prompt: {}", missing()));
    }
}
