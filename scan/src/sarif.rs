//! SARIF 2.1.0 output for code-scanning UIs (GitHub code scanning, VS Code SARIF viewer).
//!
//! One run, tool `airlock-scan`, every rule in `tool.driver.rules` (id, name, short and
//! full description, help, default level, tags, `security-severity`), one result per
//! finding with `ruleId`/`ruleIndex`, a physical location (relative, percent-encoded URI;
//! 1-based line and column in Unicode code points, `columnKind: unicodeCodePoints`) and our
//! fingerprint under `partialFingerprints`.
//!
//! Guards against: leaking a secret through the report. A result holds the rule's
//! description and the fingerprint; it never holds the matched text or a snippet.

use serde_json::{json, Map, Value};

use crate::engine::Finding;
use crate::rule::Rule;

/// The schema URI written into `$schema`.
pub const SARIF_SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// Key of our fingerprint in `partialFingerprints`.
pub const FINGERPRINT_KEY: &str = "airlockSecret/v1";

/// `aws-access-key-id` -> `AwsAccessKeyId` (SARIF `name`: a readable identifier).
fn pascal(id: &str) -> String {
    id.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut cs = p.chars();
            match cs.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + cs.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// Percent-encodes a display path into a relative URI reference (`/` kept).
pub fn path_to_uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn rule_descriptor(rule: &Rule) -> Value {
    let short = if rule.description.is_empty() {
        rule.id.clone()
    } else {
        rule.description.clone()
    };
    let mut full = short.clone();
    if !rule.keywords.is_empty() {
        full.push_str(&format!(". Keywords: {}.", rule.keywords.join(", ")));
    }
    if rule.fallback {
        full.push_str(" Generic fallback: reported only where no specific rule matched.");
    }
    let mut tags = vec!["security".to_string(), "secret".to_string()];
    tags.extend(rule.tags.iter().cloned());
    json!({
        "id": rule.id,
        "name": pascal(&rule.id),
        "shortDescription": { "text": short },
        "fullDescription": { "text": full },
        "help": {
            "text": "A secret in source is exposed to everyone who can read the tree and its history. \
                     Rotate it, remove it from the files, and load it from the environment or a secret store. \
                     If it is a deliberate test value, add an `airlock:allow` comment on its line or allowlist the path."
        },
        "defaultConfiguration": { "level": "error" },
        "properties": {
            "tags": tags,
            "precision": if rule.fallback { "medium" } else { "high" },
            "security-severity": if rule.fallback { "6.0" } else { "8.0" },
        }
    })
}

/// One SARIF 2.1.0 log for `findings`, describing `rules` (pass the scanner's rules).
pub fn to_sarif(findings: &[Finding], rules: &[Rule], tool_version: &str) -> Value {
    let index: std::collections::HashMap<&str, usize> = rules
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i))
        .collect();
    let results: Vec<Value> = findings
        .iter()
        .map(|f| {
            let rule = index
                .get(f.rule_id.as_str())
                .and_then(|&i| rules.get(i).map(|r| (i, r)));
            let what = rule.map_or(f.rule_id.as_str(), |(_, r)| {
                if r.description.is_empty() {
                    r.id.as_str()
                } else {
                    r.description.as_str()
                }
            });
            let mut region = Map::new();
            region.insert("startLine".into(), json!(f.line.max(1)));
            region.insert("startColumn".into(), json!(f.column.max(1)));
            if f.end > f.start {
                region.insert("endLine".into(), json!(f.end_line.max(f.line).max(1)));
                region.insert("endColumn".into(), json!(f.end_column.max(1)));
            }
            let mut result = json!({
                "ruleId": f.rule_id,
                "level": "error",
                "message": { "text": format!("{what} (fingerprint {})", f.fingerprint) },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": path_to_uri(&f.path) },
                        "region": Value::Object(region),
                    }
                }],
                "partialFingerprints": { FINGERPRINT_KEY: f.fingerprint },
            });
            if let (Some((i, _)), Some(obj)) = (rule, result.as_object_mut()) {
                obj.insert("ruleIndex".into(), json!(i));
            }
            result
        })
        .collect();
    json!({
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "airlock-scan",
                    "version": tool_version,
                    "rules": rules.iter().map(rule_descriptor).collect::<Vec<_>>(),
                }
            },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_uris() {
        assert_eq!(pascal("aws-access-key-id"), "AwsAccessKeyId");
        assert_eq!(
            path_to_uri("dir with space/ü.env"),
            "dir%20with%20space/%C3%BC.env"
        );
        assert_eq!(path_to_uri("a\\b#c?.txt"), "a%5Cb%23c%3F.txt");
    }
}
