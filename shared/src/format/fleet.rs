//! The fleet's documents: the enrolment (trusted-signed, what one worker may reach in the
//! store), the ticket (a job token sealed to one worker's key) and the heartbeat (the worker's
//! own, untrusted statement about itself).
//!
//! Guards against: oversized documents (each has a cap checked before parsing), a worker name
//! that could leave its store prefix (`[a-z0-9-]`, 1..=40 bytes), a ticket meant for another
//! worker (it names its worker), and heartbeat text that could steer a terminal or a match
//! (every string of a heartbeat is printable ASCII of bounded length, labels `[A-Za-z0-9._-]`,
//! at most [`MAX_LABELS`]; anything else is refused, rule `fleet.heartbeat`).
//! Does not check: signatures (the enrolment is a DSSE statement verified by the caller), and
//! the truth of a heartbeat: it is a claim, and nothing it says widens what a worker gets.

use serde::{Deserialize, Serialize};

use super::{check_tag, parse_json, FormatError};
use crate::jobid::JobId;

/// Tag of the enrolment predicate.
pub const ENROLMENT_FORMAT: &str = "airlock.enrolment/v1";
/// `predicateType` of the statement over a worker's public key (signed by the trusted key).
pub const PREDICATE_ENROLMENT: &str = "urn:airlock:predicate:enrolment:v1";
/// The statement's subject name: the worker's `age1…` recipient, hashed.
pub const ENROLMENT_SUBJECT: &str = "worker.pub";
/// Tag of a ticket (the plaintext of a sealed ticket).
pub const TICKET_FORMAT: &str = "airlock.ticket/v1";
/// Tag of a heartbeat.
pub const HEARTBEAT_FORMAT: &str = "airlock.heartbeat/v1";
/// Largest sealed ticket or renewal read from a mailbox (a 64 KiB token and its wrapping).
pub const MAX_SEALED_BYTES: usize = 96 * 1024;
/// Largest ticket plaintext.
pub const MAX_TICKET_BYTES: usize = 80 * 1024;
/// Largest heartbeat.
pub const MAX_HEARTBEAT_BYTES: usize = 8 * 1024;
/// Ticket slots in a mailbox: one job running and the next one waiting.
pub const MAILBOX_SLOTS: usize = 2;
/// Most labels a heartbeat may claim.
pub const MAX_LABELS: usize = 16;
/// Longest label, version or format name in a heartbeat.
pub const MAX_HEARTBEAT_WORD: usize = 128;
/// Most ticket sequence numbers a heartbeat acknowledges.
pub const MAX_TAKEN: usize = 16;
/// What a worker that resumes from a checkpoint says it reads (heartbeat `reads`).
pub const TOKEN_RESUME: &str = "airlock.token.resume/v1";

/// A worker's name: `[a-z0-9-]`, 1..=40 bytes, not starting with `-`. It is a store path
/// segment (`fleet/<name>/`), so nothing else is accepted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct WorkerName(String);

impl WorkerName {
    /// Checks a name (rule `fleet.name`).
    pub fn parse(s: &str) -> Result<WorkerName, FormatError> {
        let ok = !s.is_empty()
            && s.len() <= 40
            && !s.starts_with('-')
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if ok {
            Ok(WorkerName(s.to_owned()))
        } else {
            Err(FormatError::Field {
                what: "worker name",
                field: "name",
                rule: "fleet.name",
                reason: "1 to 40 of [a-z0-9-], not starting with -".to_owned(),
            })
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for WorkerName {
    type Error = FormatError;
    fn try_from(s: String) -> Result<Self, FormatError> {
        WorkerName::parse(&s)
    }
}

impl From<WorkerName> for String {
    fn from(n: WorkerName) -> String {
        n.0
    }
}

impl std::fmt::Display for WorkerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The predicate of an enrolment statement: what one worker may reach, until when. URLs are
/// secrets (presigned); the whole envelope is the worker's credential for its own prefix.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Enrolment {
    /// [`ENROLMENT_FORMAT`].
    pub format: String,
    /// The worker.
    pub name: WorkerName,
    /// The worker's `age1…` recipient: tickets and renewals are sealed to it.
    pub recipient: String,
    /// Grows by one with every renewal; a worker takes only a higher one.
    pub serial: u64,
    /// Unix seconds.
    pub issued_at: u64,
    /// Unix seconds: the URLs expire then.
    pub expires_at: u64,
    /// GET URLs of the ticket slots `fleet/<name>/mailbox/<i>.age`, [`MAILBOX_SLOTS`] of them.
    pub mailbox: Vec<String>,
    /// GET URL of `fleet/<name>/mailbox/renewal.age`.
    pub renewal: String,
    /// PUT URL of `fleet/<name>/heartbeat.json`.
    pub heartbeat: String,
    /// How often the worker writes its heartbeat, seconds.
    pub heartbeat_secs: u64,
    /// The longest pause between two mailbox polls while idle, milliseconds.
    pub poll_max_ms: u64,
    /// `true`: the worker is revoked; it takes nothing more and exits (the URLs are empty).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub revoked: bool,
}

impl std::fmt::Debug for Enrolment {
    /// URLs are secrets: never shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Enrolment")
            .field("name", &self.name)
            .field("serial", &self.serial)
            .field("expires_at", &self.expires_at)
            .field("urls", &"<redacted>")
            .finish()
    }
}

impl Enrolment {
    /// Checks the tag, the slot count and every URL's shape (rule `token.url`).
    pub fn check(&self) -> Result<(), FormatError> {
        check_tag("enrolment", &self.format, ENROLMENT_FORMAT)?;
        if self.revoked {
            return Ok(());
        }
        let bad = |field, reason: String| FormatError::Field {
            what: "enrolment",
            field,
            rule: "fleet.enrolment",
            reason,
        };
        if self.mailbox.len() != MAILBOX_SLOTS {
            return Err(bad("mailbox", format!("{MAILBOX_SLOTS} slots expected")));
        }
        let urls = self
            .mailbox
            .iter()
            .map(|u| ("mailbox", u))
            .chain([("renewal", &self.renewal), ("heartbeat", &self.heartbeat)]);
        for (field, url) in urls {
            crate::token::check_url("enrolment", url).map_err(|e| bad(field, e.to_string()))?;
        }
        if self.expires_at <= self.issued_at {
            return Err(bad("expires_at", "not after issued_at".to_owned()));
        }
        Ok(())
    }
}

/// A ticket: one job token for one worker. Sealed to the worker's key ([`crate::seal`]).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ticket {
    /// [`TICKET_FORMAT`].
    pub format: String,
    /// The worker it is for.
    pub worker: WorkerName,
    /// Its sequence number for this worker (grows); a worker runs each at most once.
    pub seq: u64,
    /// The job.
    pub job: JobId,
    /// The job token (a secret; verified by the worker like any token).
    pub token: String,
}

impl Ticket {
    /// Parses a ticket's plaintext (at most [`MAX_TICKET_BYTES`]).
    pub fn from_json(bytes: &[u8]) -> Result<Ticket, FormatError> {
        let t: Ticket = parse_json(bytes, MAX_TICKET_BYTES, "ticket")?;
        check_tag("ticket", &t.format, TICKET_FORMAT)?;
        Ok(t)
    }
}

/// A worker's heartbeat: its own claims. Extensible: members this version does not know are
/// ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// [`HEARTBEAT_FORMAT`].
    pub format: String,
    /// The worker's name (must be the prefix it was read from).
    pub name: WorkerName,
    /// `idle`, `busy` or `stopping`.
    pub state: String,
    /// The job it says it runs.
    #[serde(default)]
    pub job: Option<JobId>,
    /// Its version.
    pub version: String,
    /// Its labels (agents installed, ...).
    #[serde(default)]
    pub labels: Vec<String>,
    /// The document versions it says it writes (packet tags, artifact predicates).
    #[serde(default)]
    pub writes: Vec<String>,
    /// The token versions it says it reads ([`TOKEN_RESUME`]).
    #[serde(default)]
    pub reads: Vec<String>,
    /// Sequence numbers of the tickets it took.
    #[serde(default)]
    pub taken: Vec<u64>,
    /// The enrolment serial it holds.
    #[serde(default)]
    pub serial: u64,
    /// Jobs it says it finished and failed.
    #[serde(default)]
    pub done: u64,
    /// Jobs it says failed.
    #[serde(default)]
    pub failed: u64,
}

/// The closed set of heartbeat states.
pub const HEARTBEAT_STATES: &[&str] = &["idle", "busy", "stopping"];

fn word_ok(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_HEARTBEAT_WORD && s.bytes().all(|b| b.is_ascii_graphic())
}

fn label_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl Heartbeat {
    /// Parses a heartbeat (at most [`MAX_HEARTBEAT_BYTES`]) and holds every string to its
    /// shape (rule `fleet.heartbeat`).
    pub fn from_json(bytes: &[u8]) -> Result<Heartbeat, FormatError> {
        let h: Heartbeat = parse_json(bytes, MAX_HEARTBEAT_BYTES, "heartbeat")?;
        check_tag("heartbeat", &h.format, HEARTBEAT_FORMAT)?;
        super::check_closed("heartbeat", "state", &h.state, HEARTBEAT_STATES)?;
        let bad = |field, reason: &str| FormatError::Field {
            what: "heartbeat",
            field,
            rule: "fleet.heartbeat",
            reason: reason.to_owned(),
        };
        if !word_ok(&h.version) {
            return Err(bad("version", "not 1 to 128 printable ASCII characters"));
        }
        if h.labels.len() > MAX_LABELS || !h.labels.iter().all(|l| label_ok(l)) {
            return Err(bad("labels", "at most 16 labels of 1 to 64 [A-Za-z0-9._-]"));
        }
        for (field, list) in [("writes", &h.writes), ("reads", &h.reads)] {
            if list.len() > super::negotiate::MAX_FORMATS || !list.iter().all(|w| word_ok(w)) {
                return Err(bad(field, "at most 32 names of printable ASCII"));
            }
        }
        if h.taken.len() > MAX_TAKEN {
            return Err(bad("taken", "at most 16 ticket numbers"));
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beat(extra: &str) -> String {
        format!(
            r#"{{"format":"airlock.heartbeat/v1","name":"w1","state":"idle","version":"0.7.0"{extra}}}"#
        )
    }

    #[test]
    fn a_heartbeat_parses_and_unknown_members_are_ignored() {
        let h =
            Heartbeat::from_json(beat(r#","labels":["claude"],"future":1"#).as_bytes()).unwrap();
        assert_eq!(h.labels, vec!["claude"]);
    }

    #[test]
    fn hostile_heartbeats_are_refused_with_a_rule() {
        let cases = [
            beat(r#","labels":["a\u001b[31m"]"#),
            beat(r#","labels":["a b"]"#),
            beat(r#","writes":["x\u0007"]"#),
            r#"{"format":"airlock.heartbeat/v1","name":"w1","state":"idle","version":"0.7\u001b]0;x"}"#
                .to_owned(),
            r#"{"format":"airlock.heartbeat/v1","name":"../w2","state":"idle","version":"1"}"#
                .to_owned(),
            r#"{"format":"airlock.heartbeat/v1","name":"w1","state":"asleep","version":"1"}"#
                .to_owned(),
            beat(&format!(r#","labels":[{}]"#, vec!["\"a\""; 17].join(","))),
            beat(&format!(r#","version2":"{}""#, "x".repeat(MAX_HEARTBEAT_BYTES))),
        ];
        for c in cases {
            let e = Heartbeat::from_json(c.as_bytes()).unwrap_err();
            assert!(
                matches!(
                    e.rule(),
                    "fleet.heartbeat"
                        | "fleet.name"
                        | "format.closed-set"
                        | "format.too-large"
                        | "format.json"
                ),
                "{c}: {e}"
            );
        }
    }

    #[test]
    fn names_are_store_segments_only() {
        for bad in ["", "A", "a/b", "..", "-a", "a.b", &"a".repeat(41)] {
            assert!(WorkerName::parse(bad).is_err(), "{bad}");
        }
        assert!(WorkerName::parse("gpu-box-7").is_ok());
    }
}
