//! Everything that can stop a generator from starting, each with a rule id.
//!
//! Messages name the field or layer, the rule id and the reason; they never carry an
//! environment value (it may be an API key).

use std::io;

/// Why the sandbox could not start (or supervise) the generator. Every variant means the
/// generator is not running (the helper's process group has been killed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The spec is invalid; nothing was started.
    #[error("sandbox spec: {field}: rejected ({rule}): {reason}")]
    Spec {
        /// The offending field.
        field: String,
        /// Stable rule id, e.g. `sandbox.spec.secret-reachable`.
        rule: &'static str,
        /// Why.
        reason: String,
    },
    /// The kernel cannot provide the requested sandbox (no user namespaces for
    /// `Mode::Namespaces`, no or only partial landlock, no seccomp). Fail closed: the worker
    /// refuses to run unless told `--unsafe-no-sandbox` (`Mode::Unsandboxed`).
    #[error("sandbox unavailable (sandbox.unavailable): {reason}; refusing to run the generator unconfined")]
    Unavailable {
        /// What the kernel refused.
        reason: String,
    },
    /// A layer failed to apply, or the kernel reported it as not in force.
    #[error("sandbox layer {layer}: failed (sandbox.layer.{layer}): {detail}")]
    Layer {
        /// The layer: `identity`, `namespaces`, `proc`, `capabilities`, `no-new-privs`,
        /// `rlimits`, `landlock`, `seccomp`, `fds`, `helper`.
        layer: String,
        /// What happened.
        detail: String,
    },
    /// Every layer was in place but the generator could not be executed.
    #[error("generator {program}: could not start (sandbox.exec): {detail}")]
    Exec {
        /// The program as given in the spec.
        program: String,
        /// The `execve` error.
        detail: String,
    },
    /// The preflight found something the generator needs that its identity cannot read
    /// inside the sandbox (outside the readable roots, or stopped by a file mode); nothing
    /// was started.
    #[error("{} ({what}): not readable inside the sandbox (sandbox.preflight.not-readable): {reason}{}", path.display(), grant.as_ref().map(|g| format!("; grant {} as a readable root", g.display())).unwrap_or_default())]
    NotReadable {
        /// The path the generator needs.
        path: std::path::PathBuf,
        /// What it is to the generator ("the program", "the #! interpreter of ...").
        what: String,
        /// Why it cannot be read.
        reason: String,
        /// The directory to add to the readable roots, when that is the fix.
        grant: Option<std::path::PathBuf>,
    },
    /// An I/O error in the supervising process.
    #[error("sandbox {what} (sandbox.io): {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The helper process broke the protocol or died before reporting.
    #[error("sandbox helper (sandbox.protocol): {detail}")]
    Protocol {
        /// What went wrong.
        detail: String,
    },
}

impl SandboxError {
    /// The stable rule id of this error, e.g. `sandbox.unavailable`.
    pub fn rule(&self) -> String {
        match self {
            SandboxError::Spec { rule, .. } => (*rule).to_owned(),
            SandboxError::Unavailable { .. } => "sandbox.unavailable".into(),
            SandboxError::Layer { layer, .. } => format!("sandbox.layer.{layer}"),
            SandboxError::Exec { .. } => "sandbox.exec".into(),
            SandboxError::NotReadable { .. } => "sandbox.preflight.not-readable".into(),
            SandboxError::Io { .. } => "sandbox.io".into(),
            SandboxError::Protocol { .. } => "sandbox.protocol".into(),
        }
    }

    pub(crate) fn io(what: &'static str) -> impl FnOnce(io::Error) -> SandboxError {
        move |source| SandboxError::Io { what, source }
    }
}
