//! `request.json`: what the trusted side asks of the generator.

use serde::{Deserialize, Serialize};

use super::{check_tag, parse_json, FormatError, MAX_REQUEST_BYTES};
use crate::limits::JobLimits;

/// The `format` tag of this request version.
pub const REQUEST_FORMAT: &str = "airlock.request/v1";

/// The request packed with a bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Always [`REQUEST_FORMAT`].
    pub format: String,
    /// The prompt given to the generator.
    pub prompt: String,
    /// The model asked for.
    pub model: String,
    /// Actions the generator may take (informational for the generator; the gate enforces).
    pub allowed_actions: Vec<String>,
    /// Actions the generator must not take.
    pub forbidden_actions: Vec<String>,
    /// Limits the worker and the gate enforce.
    pub limits: JobLimits,
    /// Destinations the sandbox may reach through the egress proxy; empty = no egress.
    pub egress: Vec<EgressRule>,
    /// The environment variable the worker sets to the job's scoped model key (the key
    /// itself travels in the job token, never in the bundle). Absent: no key for this job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_key_env: Option<String>,
    /// What the job may return: `change` (a diff, and comments) or `review` (comments only:
    /// a non-empty diff is refused). OPTIONAL, default `change`, written only when `review`.
    #[serde(default, skip_serializing_if = "JobKind::is_change")]
    pub kind: JobKind,
}

/// What a job may return (`request.json` and the job record's `kind`, a closed set:
/// `format.closed-set`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobKind {
    /// A change: a diff; the generator may also comment.
    #[default]
    Change,
    /// A review: comments only; a job whose generator changes a file is refused
    /// (`review-edited-files`).
    Review,
}

impl JobKind {
    /// Whether this is the default, [`JobKind::Change`] (not written).
    pub fn is_change(&self) -> bool {
        *self == JobKind::Change
    }

    /// The kind as written: `change` or `review`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Change => "change",
            JobKind::Review => "review",
        }
    }
}

impl std::str::FromStr for JobKind {
    type Err = String;

    fn from_str(s: &str) -> Result<JobKind, String> {
        match s {
            "change" => Ok(JobKind::Change),
            "review" => Ok(JobKind::Review),
            _ => Err("expected `change` or `review`".to_owned()),
        }
    }
}

/// One allowed egress destination.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EgressRule {
    /// Host name (lowercase DNS name, no wildcard).
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl Request {
    /// A request with default limits, default actions and no egress.
    pub fn new(prompt: String, model: String) -> Request {
        Request {
            format: REQUEST_FORMAT.to_owned(),
            prompt,
            model,
            allowed_actions: vec!["edit-files".to_owned()],
            forbidden_actions: vec![
                "network".to_owned(),
                "git-push".to_owned(),
                "ci-edits-without-review".to_owned(),
            ],
            limits: JobLimits::default(),
            egress: Vec::new(),
            model_key_env: None,
            kind: JobKind::Change,
        }
    }

    /// Parses and checks a request.
    pub fn from_json(bytes: &[u8]) -> Result<Request, FormatError> {
        let r: Request = parse_json(bytes, MAX_REQUEST_BYTES, "request.json")?;
        check_tag("request.json", &r.format, REQUEST_FORMAT)?;
        for e in &r.egress {
            let ok = !e.host.is_empty()
                && e.host.len() <= 253
                && e.host.bytes().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-'
                })
                && e.port != 0;
            if !ok {
                return Err(FormatError::Field {
                    what: "request.json",
                    field: "egress[].host",
                    rule: "request.egress",
                    reason: "egress host must be a lowercase DNS name and port non-zero".into(),
                });
            }
        }
        if let Some(name) = &r.model_key_env {
            check_model_key_env(name)?;
        }
        Ok(r)
    }
}

/// Variables a model key may never be put in: the generator contract's own, and those that
/// decide what runs (`PATH`, `LD_*`) or where it writes (`HOME`, `TMPDIR`).
const RESERVED_KEY_ENV: &[&str] = &["PATH", "HOME", "TMPDIR", "LANG", "SHELL", "IFS"];

/// Checks the name of the model key's variable (rule `request.model-key-env`): an upper-case
/// variable name (`[A-Z_][A-Z0-9_]*`, at most 128 bytes), not `AIRLOCK_*`, `LD_*`, or one of
/// `PATH`, `HOME`, `TMPDIR`, `LANG`, `SHELL`, `IFS`.
pub fn check_model_key_env(name: &str) -> Result<(), FormatError> {
    let shaped = !name.is_empty()
        && name.len() <= 128
        && !name.as_bytes()[0].is_ascii_digit()
        && name
            .bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_');
    let reserved =
        name.starts_with("AIRLOCK_") || name.starts_with("LD_") || RESERVED_KEY_ENV.contains(&name);
    if shaped && !reserved {
        return Ok(());
    }
    Err(FormatError::Field {
        what: "request.json",
        field: "model_key_env",
        rule: "request.model-key-env",
        reason: if shaped {
            "names a variable the worker sets itself or one that decides what runs".into()
        } else {
            "must be an upper-case variable name [A-Z_][A-Z0-9_]* of at most 128 bytes".into()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_key_env_is_an_ordinary_upper_case_name() {
        for ok in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "_K1"] {
            check_model_key_env(ok).unwrap();
        }
        for bad in [
            "",
            "1KEY",
            "openai_api_key",
            "A-B",
            "A B",
            "PATH",
            "HOME",
            "LD_PRELOAD",
            "AIRLOCK_JOB_TOKEN",
            "AIRLOCK_REPORT",
        ] {
            let e = check_model_key_env(bad).unwrap_err().to_string();
            assert!(e.contains("request.model-key-env"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn a_request_without_a_key_serialises_as_before_and_one_with_it_round_trips() {
        let r = Request::new("p".into(), "m".into());
        let bytes = crate::format::to_json_bytes(&r);
        assert!(!String::from_utf8_lossy(&bytes).contains("model_key_env"));
        assert_eq!(Request::from_json(&bytes).unwrap(), r);
        let with = Request {
            model_key_env: Some("OPENAI_API_KEY".into()),
            ..r
        };
        let bytes = crate::format::to_json_bytes(&with);
        assert_eq!(Request::from_json(&bytes).unwrap(), with);
        let bad = String::from_utf8(bytes)
            .unwrap()
            .replace("OPENAI_API_KEY", "PATH");
        assert!(Request::from_json(bad.as_bytes()).is_err());
    }

    #[test]
    fn kind_is_written_only_for_review_and_is_a_closed_set() {
        let r = Request::new("p".into(), "m".into());
        assert!(!String::from_utf8_lossy(&crate::format::to_json_bytes(&r)).contains("kind"));
        let review = Request {
            kind: JobKind::Review,
            ..r
        };
        let bytes = crate::format::to_json_bytes(&review);
        assert!(String::from_utf8_lossy(&bytes).contains("\"kind\": \"review\""));
        assert_eq!(Request::from_json(&bytes).unwrap(), review);
        let bad = String::from_utf8(bytes)
            .unwrap()
            .replace("\"review\"", "\"Review\"");
        let e = Request::from_json(bad.as_bytes()).unwrap_err();
        assert_eq!(e.rule(), "format.closed-set", "{e}");
    }
}
