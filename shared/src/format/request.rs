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
        Ok(r)
    }
}
