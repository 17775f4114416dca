use super::common::{rendered, scanner};
use airlock_scan::sarif::{to_sarif, FINGERPRINT_KEY};
use serde_json::Value;

fn schema() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/sarif-schema-2.1.0.json"
    ))
    .expect("tests/data/sarif-schema-2.1.0.json");
    serde_json::from_str(&text).unwrap()
}

/// The validator, with format checks on (`uri`, `uri-reference`, ...). The official
/// schema's own `run.language` pattern, `^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$`, has an
/// unescaped `]` that the `jsonschema` crate's meta-validation (strict ECMA-262 regex
/// syntax) rejects, and that meta-validation cannot be turned off. The file stays as
/// published; the in-memory copy escapes that one `]` (same meaning in ECMA-262 non-Unicode
/// mode). Our output never sets `language`.
fn validator() -> jsonschema::Validator {
    const BAD: &str = "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$";
    const ESCAPED: &str = "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$";
    fn patch(v: &mut Value, n: &mut usize) {
        match v {
            Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    if k == "pattern" && x == BAD {
                        *x = Value::from(ESCAPED);
                        *n += 1;
                    } else {
                        patch(x, n);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| patch(x, n)),
            _ => {}
        }
    }
    let mut schema = schema();
    let mut patched = 0;
    patch(&mut schema, &mut patched);
    assert!(patched > 0, "schema changed: revisit this patch");
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap()
}

fn validate(log: &Value) {
    let validator = validator();
    let errors: Vec<String> = validator
        .iter_errors(log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "SARIF does not validate:\n{}",
        errors.join("\n")
    );
}

#[test]
fn sarif_of_every_rule_example_validates_against_the_2_1_0_schema() {
    let s = scanner();
    let mut findings = Vec::new();
    let mut parts = Vec::new();
    for (i, rule) in s.rules().iter().enumerate() {
        let r = rendered(&rule.examples[0], 100 + i as u64);
        // Paths that need encoding: spaces, non-ASCII, `#`.
        let path = format!("src/dir {i}/файл#{i}.env");
        findings.extend(s.scan(&path, r.text.as_bytes()));
        parts.extend(r.secret_parts);
    }
    assert!(findings.len() >= s.rules().len());
    let log = to_sarif(&findings, s.rules(), airlock_scan::VERSION);
    validate(&log);

    let run = &log["runs"][0];
    assert_eq!(log["version"], "2.1.0");
    assert_eq!(run["tool"]["driver"]["name"], "airlock-scan");
    assert_eq!(
        run["tool"]["driver"]["rules"].as_array().unwrap().len(),
        s.rules().len()
    );
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), findings.len());
    for (res, f) in results.iter().zip(&findings) {
        assert_eq!(res["ruleId"], f.rule_id.as_str());
        let idx = res["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(
            run["tool"]["driver"]["rules"][idx]["id"],
            f.rule_id.as_str()
        );
        assert_eq!(
            res["partialFingerprints"][FINGERPRINT_KEY],
            f.fingerprint.as_str()
        );
        let region = &res["locations"][0]["physicalLocation"]["region"];
        assert_eq!(region["startLine"], f.line);
        assert_eq!(region["startColumn"], f.column);
        assert!(
            res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
                .starts_with("src/dir%20")
        );
    }
    let text = serde_json::to_string(&log).unwrap();
    for p in parts.iter().filter(|p| p.len() >= 8) {
        assert!(!text.contains(p.as_str()), "SARIF holds a secret part");
    }
}

#[test]
fn empty_and_path_only_results_validate() {
    validate(&to_sarif(&[], scanner().rules(), "0.0.0"));
    let (s, _) = airlock_scan::Scanner::from_gitleaks_toml(
        "[[rules]]\nid = \"pem-file\"\npath = '''\\.pem$'''\n",
    )
    .unwrap();
    let f = s.scan("certs/server.pem", b"x\n");
    assert_eq!(f.len(), 1);
    validate(&to_sarif(&f, s.rules(), "0.0.0"));
}

/// A deliberately broken log is rejected: the validation is not vacuous.
#[test]
fn the_schema_check_can_fail() {
    let mut log = to_sarif(&[], scanner().rules(), "1.0.0");
    log["version"] = Value::from("2.0.0");
    let validator = validator();
    assert!(!validator.is_valid(&log));
    let mut log = to_sarif(&[], scanner().rules(), "1.0.0");
    log["runs"][0]["results"] = serde_json::json!([{ "ruleId": "x", "locations": [{ "physicalLocation": { "region": { "startLine": 0 } } }] }]);
    assert!(!validator.is_valid(&log));
    // Formats are checked: an unencoded path is not a URI reference.
    let f = scanner().scan("a b.env", rendered("t=ghp_{{a:36}}", 1).text.as_bytes());
    let mut log = to_sarif(&f, scanner().rules(), "1.0.0");
    assert!(validator.is_valid(&log));
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] =
        Value::from("a b.env");
    assert!(!validator.is_valid(&log));
}
