use super::common::{describe, example, rendered, scanner};
use airlock_scan::redact;

#[test]
fn redaction_keeps_line_count_and_removes_every_secret_part() {
    let s = scanner();
    for rule in s.rules() {
        for (i, ex) in rule.examples.iter().enumerate() {
            let (path, r) = example(ex, 77);
            let findings = s.scan(&path, r.text.as_bytes());
            let out = redact(r.text.as_bytes(), &findings);
            let out = String::from_utf8(out).expect("redaction of UTF-8 stays UTF-8");
            assert_eq!(
                out.matches('\n').count(),
                r.text.matches('\n').count(),
                "{} example #{i}: line count changed",
                rule.id
            );
            for part in &r.secret_parts {
                assert!(
                    !out.contains(part.as_str()),
                    "{} example #{i}: a secret part survived redaction",
                    rule.id
                );
            }
            assert!(
                out.contains(&format!("[REDACTED:{}]", rule.id)),
                "{} example #{i}: no marker",
                rule.id
            );
        }
    }
}

#[test]
fn redacted_output_rescans_clean() {
    let s = scanner();
    for rule in s.rules() {
        for (i, ex) in rule.examples.iter().enumerate() {
            let (path, r) = example(ex, 78);
            let out = redact(r.text.as_bytes(), &s.scan(&path, r.text.as_bytes()));
            let again = s.scan(&path, &out);
            assert!(
                again.is_empty(),
                "{} example #{i}: redacted text still reports [{}]",
                rule.id,
                describe(&again)
            );
        }
    }
}

#[test]
fn markers_for_every_rule_never_match_any_rule() {
    let s = scanner();
    let mut text = String::new();
    for rule in s.rules() {
        let m = airlock_scan::marker(&rule.id);
        text.push_str(&format!(
            "{m}\napi_key = \"{m}\"\npassword: {m}\nhttps://user:{m}@example.org\n"
        ));
        text.push_str(&format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{m}\n{m}\n-----END RSA PRIVATE KEY-----\n"
        ));
    }
    let findings = s.scan("markers.txt", text.as_bytes());
    assert!(
        findings.is_empty(),
        "markers reported: [{}]",
        describe(&findings)
    );
}

#[test]
fn a_multi_line_key_becomes_one_marker_per_line() {
    let s = scanner();
    let r = rendered("key: |\n  -----BEGIN RSA PRIVATE KEY-----\n  {{b64:64}}\n  {{b64:64}}\n  -----END RSA PRIVATE KEY-----\nnext: 1\n", 5);
    let out = String::from_utf8(redact(
        r.text.as_bytes(),
        &s.scan("k.yaml", r.text.as_bytes()),
    ))
    .unwrap();
    assert_eq!(
        out,
        "key: |\n  [REDACTED:private-key-pem]\n  [REDACTED:private-key-pem]\n  [REDACTED:private-key-pem]\n  [REDACTED:private-key-pem]\nnext: 1\n"
    );
}

#[test]
fn findings_never_show_the_value() {
    let s = scanner();
    for rule in s.rules() {
        for ex in &rule.examples {
            let (path, r) = example(ex, 79);
            for f in s.scan(&path, r.text.as_bytes()) {
                let shown = format!("{f} {f:?} {}", serde_json::to_string(&f).unwrap());
                assert_eq!(f.to_string(), format!("{path}:{}: {}", f.line, f.rule_id));
                for part in &r.secret_parts {
                    assert!(
                        !shown.contains(part.as_str()),
                        "{}: a finding shows a secret part",
                        rule.id
                    );
                }
            }
        }
    }
}
