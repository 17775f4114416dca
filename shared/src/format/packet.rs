//! `packet.json`: the worker's account of one run. Untrusted: the gate recomputes what it can
//! (diff digest, counts, paths) and treats the rest (model reported, timings) as claims.
//!
//! Evolution (`docs/FORMATS.md`): the packet object, `timings` and `egress[]` are extensible
//! (a member this version does not know is ignored); `exit` and `refused[]` are closed
//! (`format.unknown-member`). `sandbox` and `exit.kind` are closed sets
//! (`format.closed-set`): the gate's decisions rely on them.

use serde::{Deserialize, Serialize};

use super::ResumedFrom;
use super::{
    check_closed, check_tag, parse_json, to_json_bytes, FormatError, Reader, MAX_PACKET_BYTES,
};
use crate::digest::Sha256Digest;
use crate::jobid::JobId;

/// The `format` tag of this packet version.
pub const PACKET_FORMAT: &str = "airlock.packet/v1";
/// `model_reported` when the generator did not report a model.
pub const MODEL_UNREPORTED: &str = "unreported";
/// The closed set of `sandbox` values of `airlock.packet/v1` (exact bytes: no case folding,
/// no trimming).
pub const SANDBOX_VALUES: &[&str] = &["namespaces+landlock+seccomp", "landlock+seccomp", "none"];
/// The `limits_hit` entries this version lists (docs/FORMATS.md, packet.json). Not a closed
/// set: any non-empty list is a limit hit, and an entry not listed here is shown as unknown.
pub const LIMITS_HIT_VALUES: &[&str] = &[
    "wall-clock",
    "cpu-secs",
    "file-size",
    "log-bytes",
    "egress-log",
    "tokens",
    "changed-files",
    "changed-lines",
    "diff-bytes",
    "file-bytes",
    "walk-entries",
    "refused-paths",
    "artifact-bytes",
    "disk",
    "inodes",
    "memory",
];
/// The members of the packet object, per nested object, that release 0.6.0's reader knows (it
/// refuses any other): what a worker writes for a token without a `formats` claim.
pub const PACKET_MEMBERS_0_6: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "format",
            "job",
            "run_id",
            "bundle_sha256",
            "model_requested",
            "model_reported",
            "tokens_in",
            "tokens_out",
            "diff_sha256",
            "files_changed",
            "lines_added",
            "lines_removed",
            "refused",
            "ignored",
            "limits_hit",
            "exit",
            "timings",
            "worker_version",
            "sandbox",
            "egress",
            "partial",
        ],
    ),
    ("refused", &["path", "reason"]),
    ("exit", &["kind", "code"]),
    (
        "timings",
        &["started_at_ms", "finished_at_ms", "generator_ms"],
    ),
    (
        "egress",
        &[
            "destination",
            "allowed",
            "reason",
            "bytes_up",
            "bytes_down",
            "at_ms",
        ],
    ),
];

/// The worker's account of one run. Extensible: members this version does not know are
/// ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// them (an ignored directory counts once). OPTIONAL on read (absent from packets of
    /// releases before 0.6.0: 0); always written, since 0.6.0's reader requires it.
    #[serde(default)]
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
    /// Comments in the artifact's `comments.jsonl` member. OPTIONAL (default 0, written only
    /// when not 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub comments: u64,
    /// Comments the worker refused (malformed, oversized, past the count cap, bad path): left
    /// out of the member. OPTIONAL (default 0, written only when not 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub comments_refused: u64,
    /// In a review job, files the generator changed that the worker left out of the (then
    /// empty) diff: the gate refuses the job (`review-edited-files`). OPTIONAL (default 0,
    /// written only when not 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub review_edits: u64,
    /// The checkpoint the worker resumed from, copied from its token's `resume` claim: a
    /// claim, which the gate holds to the job record (`resume-claim-mismatch`). OPTIONAL
    /// (absent: a fresh job; written only when the token had the claim).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<ResumedFrom>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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

/// Timings in unix milliseconds (worker clock: a claim, not evidence). Extensible.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timings {
    /// When the worker started the job.
    pub started_at_ms: u64,
    /// When the packet was written.
    pub finished_at_ms: u64,
    /// Milliseconds the generator ran.
    pub generator_ms: u64,
}

/// One connection attempt through the egress proxy. Extensible.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
        check_closed("packet.json", "sandbox", &p.sandbox, SANDBOX_VALUES)?;
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

    /// The bytes the worker writes for `reader`: [`to_json_bytes`] for a reader that follows
    /// the contract; for [`Reader::Release0_6`], the same bytes unless a member 0.6.0 does not
    /// know is set, which is then left out (the rest is written with sorted members).
    pub fn to_json_for(&self, reader: Reader) -> Vec<u8> {
        let bytes = to_json_bytes(self);
        if reader != Reader::Release0_6 {
            return bytes;
        }
        let Ok(mut value) = serde_json::to_value(self) else {
            return bytes;
        };
        if !strip_unknown(&mut value) {
            return bytes;
        }
        to_json_bytes(&value)
    }
}

/// Removes the members [`PACKET_MEMBERS_0_6`] does not list; `true` if any was removed.
fn strip_unknown(packet: &mut serde_json::Value) -> bool {
    let known = |path: &str| {
        PACKET_MEMBERS_0_6
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, m)| *m)
            .unwrap_or(&[])
    };
    let retain = |obj: &mut serde_json::Map<String, serde_json::Value>, path: &str| {
        let before = obj.len();
        obj.retain(|k, _| known(path).contains(&k.as_str()));
        before != obj.len()
    };
    let Some(top) = packet.as_object_mut() else {
        return false;
    };
    let mut removed = retain(top, "");
    for (name, _) in PACKET_MEMBERS_0_6.iter().skip(1) {
        match top.get_mut(*name) {
            Some(serde_json::Value::Object(o)) => removed |= retain(o, name),
            Some(serde_json::Value::Array(items)) => {
                for o in items.iter_mut().filter_map(|i| i.as_object_mut()) {
                    removed |= retain(o, name);
                }
            }
            _ => {}
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn sample() -> Packet {
        let z = Sha256Digest::of_bytes(b"");
        Packet {
            format: PACKET_FORMAT.into(),
            job: crate::jobid::JobId::parse("20261129T082407Z-3f3f3f3f3f3f3f3f3f3f").unwrap(),
            run_id: "0123456789abcdef".into(),
            bundle_sha256: z,
            model_requested: "m".into(),
            model_reported: "m".into(),
            tokens_in: None,
            tokens_out: None,
            diff_sha256: z,
            files_changed: 0,
            lines_added: 0,
            lines_removed: 0,
            refused: vec![RefusedPath {
                path: "a".into(),
                reason: "diff.symlink".into(),
            }],
            ignored: 0,
            limits_hit: vec!["some-future-limit".into()],
            exit: ExitInfo {
                kind: ExitKind::Exited,
                code: Some(0),
            },
            timings: Timings {
                started_at_ms: 1,
                finished_at_ms: 2,
                generator_ms: 1,
            },
            worker_version: "0.7.0".into(),
            sandbox: "namespaces+landlock+seccomp".into(),
            egress: vec![EgressAttempt {
                destination: "h:443".into(),
                allowed: false,
                reason: Some("egress.denied".into()),
                bytes_up: 0,
                bytes_down: 0,
                at_ms: 3,
            }],
            partial: false,
            comments: 0,
            comments_refused: 0,
            review_edits: 0,
            models: Vec::new(),
            resumed_from: None,
        }
    }

    fn value() -> Value {
        serde_json::to_value(sample()).unwrap()
    }

    fn parse(v: &Value) -> Result<Packet, FormatError> {
        Packet::from_json(&serde_json::to_vec(v).unwrap())
    }

    #[test]
    fn unknown_members_of_extensible_objects_are_ignored() {
        let mut v = value();
        v["usage_by_model"] = json!({"m": {"tokens_in": 1}});
        v["timings"]["queued_ms"] = json!(5);
        v["egress"][0]["protocol"] = json!("tcp");
        assert_eq!(parse(&v).unwrap(), sample());
    }

    #[test]
    fn unknown_members_of_closed_objects_are_refused_with_the_rule() {
        for (obj, idx) in [("exit", None), ("refused", Some(0))] {
            let mut v = value();
            let o = match idx {
                Some(i) => &mut v[obj][i],
                None => &mut v[obj],
            };
            o["why"] = json!("x");
            let e = parse(&v).unwrap_err();
            assert_eq!(e.rule(), "format.unknown-member", "{obj}: {e}");
            assert!(e.to_string().contains("\"why\""), "{e}");
        }
    }

    #[test]
    fn sandbox_and_exit_kind_are_closed_sets() {
        for ok in SANDBOX_VALUES {
            let mut v = value();
            v["sandbox"] = json!(ok);
            parse(&v).unwrap();
        }
        for bad in [
            "None",
            "none ",
            "",
            "disabled",
            "NONE",
            "landlock",
            "\u{1b}[2Jnone",
        ] {
            let mut v = value();
            v["sandbox"] = json!(bad);
            let e = parse(&v).unwrap_err();
            assert_eq!(e.rule(), "format.closed-set", "{bad:?}: {e}");
            let msg = e.to_string();
            assert!(msg.contains("sandbox"), "{msg}");
            assert!(!msg.contains('\u{1b}'), "{msg}");
        }
        for bad in ["Exited", "exited ", "", "crashed"] {
            let mut v = value();
            v["exit"]["kind"] = json!(bad);
            let e = parse(&v).unwrap_err();
            assert_eq!(e.rule(), "format.closed-set", "{bad:?}: {e}");
            assert!(e.to_string().contains("not-started"), "{e}");
        }
    }

    #[test]
    fn limits_hit_stays_open_any_entry_is_kept() {
        assert_eq!(
            parse(&value()).unwrap().limits_hit,
            vec!["some-future-limit".to_owned()]
        );
    }

    #[test]
    fn a_packet_from_before_ignored_existed_reads_as_zero_and_ignored_is_always_written() {
        let mut v = value();
        v.as_object_mut().unwrap().remove("ignored");
        assert_eq!(parse(&v).unwrap().ignored, 0);
        let text = String::from_utf8(to_json_bytes(&sample())).unwrap();
        assert!(text.contains("\"ignored\": 0"), "{text}");
    }

    #[test]
    fn the_writer_for_release_0_6_is_byte_identical_when_nothing_new_is_set() {
        let p = sample();
        let contract = Reader::Contract {
            packet: PACKET_FORMAT,
            artifact_predicate: super::super::PREDICATE_ARTIFACT,
        };
        assert_eq!(p.to_json_for(Reader::Release0_6), to_json_bytes(&p));
        assert_eq!(p.to_json_for(contract), to_json_bytes(&p));
    }

    #[test]
    fn resumed_from_is_optional_closed_and_left_out_for_release_0_6() {
        let mut p = sample();
        assert!(!String::from_utf8(to_json_bytes(&p))
            .unwrap()
            .contains("resumed_from"));
        p.resumed_from = Some(ResumedFrom {
            job: p.job.clone(),
            patch_sha256: Sha256Digest::of_bytes(b"x"),
            patch_bytes: 1,
        });
        let bytes = to_json_bytes(&p);
        assert_eq!(Packet::from_json(&bytes).unwrap(), p);
        let mut v: Value = serde_json::from_slice(&bytes).unwrap();
        v["resumed_from"]["note"] = json!("x");
        assert_eq!(parse(&v).unwrap_err().rule(), "format.unknown-member");
        let old: Value = serde_json::from_slice(&p.to_json_for(Reader::Release0_6)).unwrap();
        assert!(old.get("resumed_from").is_none(), "{old}");
    }

    #[test]
    fn strip_leaves_only_the_members_release_0_6_knows() {
        let mut v = value();
        v["usage_by_model"] = json!({});
        v["timings"]["queued_ms"] = json!(5);
        v["egress"][0]["protocol"] = json!("tcp");
        assert!(strip_unknown(&mut v));
        assert_eq!(v, value());
        assert!(!strip_unknown(&mut v));
    }
}
