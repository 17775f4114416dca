//! The helper's back-channel: what the supervisor sends (the spec) and what the helper
//! reports (which sandbox, started, failed layer, final status), one JSON object per line.
//!
//! Guards against: unbounded lines and unknown messages from the helper (fail closed).
//! On `Ok`: a message of a known kind. Does not check: ordering; the runner does.
//! The helper runs our own code, but the channel is still parsed with limits.

use serde::{Deserialize, Serialize};

use crate::error::SandboxError;
use crate::spec::SandboxSpec;

/// Longest spec the helper accepts on stdin.
pub(crate) const MAX_SPEC_BYTES: u64 = 1 << 20;
/// Longest report line the supervisor accepts.
pub(crate) const MAX_LINE_BYTES: usize = 16 << 10;

/// What the supervisor writes on the helper's stdin, then closes.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HelperInput {
    pub spec: SandboxSpec,
    /// The supervisor's pid: the helper exits at once if it has already been orphaned.
    pub parent_pid: u32,
}

/// One report from the helper (or its descendants before they exec).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "kebab-case", deny_unknown_fields)]
pub(crate) enum Report {
    /// The sandbox being built (sent before the layers are applied).
    Kind { kind: String },
    /// `Mode::Auto` fell back to landlock+seccomp, and why.
    Fallback { reason: String },
    /// The landlock ruleset is only partially enforced (allowed by the spec).
    Degraded { what: String },
    /// A layer failed; the generator will not run. `layer` is `unavailable` when the kernel
    /// lacks the feature, `exec` when only the final exec failed.
    Error { layer: String, detail: String },
    /// Egress: the proxy's listening socket travels with this message (`SCM_RIGHTS`).
    EgressListener {},
    /// Namespace mode and the fallback: the generator's `execve` succeeded.
    Started {},
    /// Namespace mode and the fallback: the generator's raw wait status, from the pid
    /// namespace's init or the fallback's guard.
    Status { raw: i32 },
}

impl Report {
    pub(crate) fn encode(&self) -> Vec<u8> {
        // Serialising these plain structs cannot fail; fall back to a fixed error line.
        let mut line = serde_json::to_vec(self).unwrap_or_else(|_| {
            br#"{"msg":"error","layer":"helper","detail":"report encoding failed"}"#.to_vec()
        });
        line.push(b'\n');
        line
    }

    pub(crate) fn decode(line: &[u8]) -> Result<Report, SandboxError> {
        if line.len() > MAX_LINE_BYTES {
            return Err(SandboxError::Protocol {
                detail: format!(
                    "report line of {} bytes (limit {MAX_LINE_BYTES})",
                    line.len()
                ),
            });
        }
        serde_json::from_slice(line).map_err(|e| SandboxError::Protocol {
            detail: format!("malformed report line: {e}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip() {
        for r in [
            Report::Kind {
                kind: "landlock+seccomp".into(),
            },
            Report::Fallback {
                reason: "unshare: EPERM".into(),
            },
            Report::Degraded {
                what: "scope".into(),
            },
            Report::Error {
                layer: "landlock".into(),
                detail: "x".into(),
            },
            Report::EgressListener {},
            Report::Started {},
            Report::Status { raw: 9 },
        ] {
            let line = r.encode();
            assert_eq!(line.last(), Some(&b'\n'));
            assert_eq!(Report::decode(&line[..line.len() - 1]).unwrap(), r);
        }
    }

    #[test]
    fn rejects_unknown_and_oversized_reports() {
        assert!(Report::decode(br#"{"msg":"started","extra":1}"#).is_err());
        assert!(Report::decode(br#"{"msg":"become-root"}"#).is_err());
        assert!(Report::decode(&vec![b' '; MAX_LINE_BYTES + 1]).is_err());
    }
}
