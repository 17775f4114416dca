//! `packet.json`: the worker's account of one run. Untrusted: the gate recomputes what it can
//! (diff digest, counts, paths) and treats the rest (model reported, timings) as claims.

use serde::{Deserialize, Serialize};

use super::{check_tag, parse_json, FormatError, MAX_PACKET_BYTES};
use crate::digest::Sha256Digest;
use crate::jobid::JobId;

/// The `format` tag of this packet version.
pub const PACKET_FORMAT: &str = "airlock.packet/v1";
/// `model_reported` when the generator did not report a model.
pub const MODEL_UNREPORTED: &str = "unreported";

/// The worker's account of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Packet {
    /// Always [`PACKET_FORMAT`].
    pub format: String,
    /// The job.
    pub job: JobId,
    /// This run (a job may be re-dispatched): 16 lowercase hex characters.
    pub run_id: String,
    /// SHA-256 of the bundle the worker verified.
    pub bundle_sha256: Sha256Digest,
    /// The model the request asked for.
    pub model_requested: String,
    /// The model the generator reported, or [`MODEL_UNREPORTED`].
    pub model_reported: String,
    /// Tokens in, as reported by the generator.
    pub tokens_in: Option<u64>,
    /// Tokens out, as reported by the generator.
    pub tokens_out: Option<u64>,
    /// Usage per model the generator reported (a run may use more than one: a small fast
    /// model beside the main one); empty (and absent from the JSON) when it reported none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelUsage>,
    /// SHA-256 of `patch.diff`.
    pub diff_sha256: Sha256Digest,
    /// Files the diff changes.
    pub files_changed: u64,
    /// Lines the diff adds.
    pub lines_added: u64,
    /// Lines the diff removes.
    pub lines_removed: u64,
    /// Paths the generator produced that were not included (links, devices, binaries, ...).
    pub refused: Vec<RefusedPath>,
    /// New paths left out, unread, because the packed revision's `.gitignore` files ignore
    /// them (an ignored directory counts once).
    pub ignored: u64,
    /// Limits hit (ids such as `wall-clock`, `changed-files`, `log-bytes`).
    pub limits_hit: Vec<String>,
    /// How the generator ended.
    pub exit: ExitInfo,
    /// Timings.
    pub timings: Timings,
    /// Version of `airlock-worker`.
    pub worker_version: String,
    /// The sandbox the generator ran in: `namespaces+landlock+seccomp`, `landlock+seccomp` or `none`.
    pub sandbox: String,
    /// Egress attempts through the proxy (empty when egress is denied).
    pub egress: Vec<EgressAttempt>,
    /// `true` for a checkpoint or an unfinished run.
    pub partial: bool,
}

/// Tokens one model used, as the generator reported them (a claim).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelUsage {
    /// The name the model server answered with.
    pub name: String,
    /// Tokens in.
    pub tokens_in: u64,
    /// Tokens out.
    pub tokens_out: u64,
}

/// At most this many [`ModelUsage`] entries in a packet (`packet.models`).
pub const MAX_PACKET_MODELS: usize = 16;

/// A path the worker did not include in the diff, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefusedPath {
    /// Relative path in the workdir.
    pub path: String,
    /// Rule id (e.g. `diff.symlink`, `diff.binary`, `diff.special-file`).
    pub reason: String,
}

/// How the generator process ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExitKind {
    /// Exited on its own.
    Exited,
    /// Killed by a signal.
    Signaled,
    /// Killed at the wall-clock limit.
    Timeout,
    /// Still running (checkpoints only).
    Running,
    /// Never started.
    NotStarted,
}

/// Exit details.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExitInfo {
    /// How it ended.
    pub kind: ExitKind,
    /// Exit code or signal number.
    pub code: Option<i32>,
}

/// Timings in unix milliseconds (worker clock: a claim, not evidence).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timings {
    /// When the worker started the job.
    pub started_at_ms: u64,
    /// When the packet was written.
    pub finished_at_ms: u64,
    /// Milliseconds the generator ran.
    pub generator_ms: u64,
}

/// One connection attempt through the egress proxy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EgressAttempt {
    /// `host:port` asked for.
    pub destination: String,
    /// Whether it was admitted.
    pub allowed: bool,
    /// Why it was refused (rule id), if it was.
    pub reason: Option<String>,
    /// Bytes sent up.
    pub bytes_up: u64,
    /// Bytes received.
    pub bytes_down: u64,
    /// Unix milliseconds of the attempt.
    pub at_ms: u64,
}

impl Packet {
    /// Parses and checks a packet.
    pub fn from_json(bytes: &[u8]) -> Result<Packet, FormatError> {
        let p: Packet = parse_json(bytes, MAX_PACKET_BYTES, "packet.json")?;
        check_tag("packet.json", &p.format, PACKET_FORMAT)?;
        let run_ok = p.run_id.len() == 16
            && p.run_id
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c));
        if !run_ok {
            return Err(FormatError::Field {
                what: "packet.json",
                field: "run_id",
                rule: "packet.run-id",
                reason: "must be 16 lowercase hex characters".into(),
            });
        }
        if p.models.len() > MAX_PACKET_MODELS {
            return Err(FormatError::Field {
                what: "packet.json",
                field: "models",
                rule: "packet.models",
                reason: format!("at most {MAX_PACKET_MODELS} entries"),
            });
        }
        Ok(p)
    }
}
