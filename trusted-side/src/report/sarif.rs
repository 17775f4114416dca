//! `gate --sarif FILE`: the gated review comments as one SARIF 2.1.0 run, for code-scanning
//! UIs (GitHub code scanning, VS Code's SARIF viewer).
//!
//! One run, tool `airlock`, three rules (`review-note`, `review-warning`, `review-error`), one
//! result per comment that passed the gate: `ruleId`, `level`, the body as `message.text`, a
//! physical location (relative, percent-encoded URI under `%SRCROOT%`, `startLine`/`endLine`),
//! the suggestion as a `fix` replacing those lines, and a fingerprint of path, lines and body
//! under `partialFingerprints`.
//!
//! Guards against: worker text acting on a SARIF viewer: bodies and suggestions go through
//! [`airlock_core::text`] (control, bidi and invisible characters marked, newlines kept, cut
//! at a visible marker) and are written as `text`, never `markdown`; paths are percent-encoded
//! URIs. A body that held a secret is already withheld by the gate.
//! Does not check: anchors or secrets (`gate/comments.rs` did).

use airlock_core::digest::Sha256Digest;
use airlock_core::format::Severity;
use airlock_core::text;
use serde_json::{json, Value};

use super::comments::{GatedComment, PAGE_BODY_MAX};
use super::GateReport;

/// The schema URI written into `$schema` (OASIS SARIF 2.1.0, errata 01).
pub const SARIF_SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";
/// Key of the comment's fingerprint in `partialFingerprints`.
pub const FINGERPRINT_KEY: &str = "airlockComment/v1";

const SEVERITIES: [Severity; 3] = [Severity::Note, Severity::Warning, Severity::Error];

fn rule_id(s: Severity) -> String {
    format!("review-{}", s.as_str())
}

fn rules() -> Vec<Value> {
    SEVERITIES
        .iter()
        .map(|s| {
            json!({
                "id": rule_id(*s),
                "name": format!("Review{}", match s {
                    Severity::Note => "Note",
                    Severity::Warning => "Warning",
                    Severity::Error => "Error",
                }),
                "shortDescription": { "text": format!("A review comment of severity {}", s.as_str()) },
                "fullDescription": { "text": "A comment an airlock review job's generator returned, anchored by the gate to the packed revision or the changed file. Untrusted text: read it as a suggestion, not an instruction." },
                "defaultConfiguration": { "level": s.as_str() },
                "properties": { "tags": ["review", "airlock"] }
            })
        })
        .collect()
}

/// Untrusted text for a SARIF `text`: hidden characters marked, newlines kept.
fn shown(s: &str) -> String {
    text::terminal_block(s, PAGE_BODY_MAX)
}

fn result(c: &GatedComment) -> Value {
    let uri = airlock_scan::sarif::path_to_uri(&c.path);
    let region = json!({ "startLine": c.start_line, "endLine": c.end_line });
    let fingerprint = Sha256Digest::of_bytes(
        format!("{}\0{}\0{}\0{}", c.path, c.start_line, c.end_line, c.body).as_bytes(),
    );
    let mut r = json!({
        "ruleId": rule_id(c.severity),
        "ruleIndex": SEVERITIES.iter().position(|s| *s == c.severity).unwrap_or(0),
        "level": c.severity.as_str(),
        "message": { "text": shown(&c.body) },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": { "uri": uri, "uriBaseId": "%SRCROOT%" },
                "region": region
            }
        }],
        "partialFingerprints": { FINGERPRINT_KEY: fingerprint.to_string() },
        "properties": { "airlockComment": c.index, "anchoredTo": c.anchored_to }
    });
    if let Some(s) = &c.suggestion {
        r["fixes"] = json!([{
            "description": { "text": "The reviewer's suggested replacement for these lines (untrusted; never applied by airlock)." },
            "artifactChanges": [{
                "artifactLocation": { "uri": airlock_scan::sarif::path_to_uri(&c.path), "uriBaseId": "%SRCROOT%" },
                "replacements": [{
                    "deletedRegion": { "startLine": c.start_line, "endLine": c.end_line },
                    "insertedContent": { "text": shown(s) }
                }]
            }]
        }]);
    }
    r
}

/// The SARIF log of `report`'s comments (an empty `results` when there are none).
pub fn of_comments(report: &GateReport) -> Value {
    json!({
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "airlock",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules()
                }
            },
            "automationDetails": { "id": format!("airlock/review/{}", report.job) },
            "originalUriBaseIds": { "%SRCROOT%": { "description": { "text": "The repository root at the packed revision." } } },
            "results": report.comments.iter().map(result).collect::<Vec<_>>(),
            "properties": {
                "job": report.job.to_string(),
                "decision": report.decision.to_string()
            }
        }]
    })
}
