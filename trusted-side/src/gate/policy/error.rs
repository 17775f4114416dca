//! Why a policy file was refused: one variant per rule id (`policy.read`, `policy.parse`,
//! `policy.bad-glob`, ...), each message naming it.
//!
//! Guards against: a refusal that does not say which rule refused, or echoes more of the file
//! than needed to find the mistake.

/// Why a policy was refused. Each variant names its rule id.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("cannot read policy file (policy.read): {0}")]
    Read(#[source] std::io::Error),
    /// The file is larger than [`MAX_POLICY_BYTES`](super::MAX_POLICY_BYTES).
    #[error("policy file is larger than {limit} bytes (policy.too-large)")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
    /// Not valid TOML, an unknown key or bucket, or a wrong type.
    #[error("invalid policy (policy.parse): {0}")]
    Parse(String),
    /// `version` is not 1.
    #[error("policy version {seen} is not supported (policy.version): expected 1")]
    Version {
        /// The version written.
        seen: i64,
    },
    /// More `[[paths]]` rules than [`MAX_PATH_RULES`](super::MAX_PATH_RULES).
    #[error("policy has {seen} [[paths]] rules, more than {limit} (policy.too-many-rules)")]
    TooManyRules {
        /// The limit.
        limit: usize,
        /// Rules seen.
        seen: usize,
    },
    /// A `[[paths]]` glob does not compile or is too long.
    #[error("policy [[paths]][{index}] glob {glob:?} is invalid (policy.bad-glob): {message}")]
    BadGlob {
        /// Rule index.
        index: usize,
        /// The glob (truncated).
        glob: String,
        /// Why.
        message: String,
    },
    /// A `[[paths]]` rule has an empty reason.
    #[error("policy [[paths]][{index}] glob {glob:?} has an empty reason (policy.empty-reason): say why the rule exists")]
    EmptyReason {
        /// Rule index.
        index: usize,
        /// The glob.
        glob: String,
    },
    /// A limit is zero.
    #[error("policy [limits] {field} = 0 (policy.zero-limit): a limit must be at least 1; omit it to keep the request's")]
    ZeroLimit {
        /// The key.
        field: &'static str,
    },
    /// Any of the above, in a named file.
    #[error("policy file {path}: {source}")]
    InFile {
        /// The file.
        path: String,
        /// The error.
        #[source]
        source: Box<PolicyError>,
    },
}

impl PolicyError {
    /// The rule id of this error (`policy.parse`, …).
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "for callers that branch on the rule id")
    )]
    pub fn rule(&self) -> &'static str {
        match self {
            PolicyError::Read(_) => "policy.read",
            PolicyError::TooLarge { .. } => "policy.too-large",
            PolicyError::Parse(_) => "policy.parse",
            PolicyError::Version { .. } => "policy.version",
            PolicyError::TooManyRules { .. } => "policy.too-many-rules",
            PolicyError::BadGlob { .. } => "policy.bad-glob",
            PolicyError::EmptyReason { .. } => "policy.empty-reason",
            PolicyError::ZeroLimit { .. } => "policy.zero-limit",
            PolicyError::InFile { source, .. } => source.rule(),
        }
    }
}
