use super::common::{describe, rendered};
use airlock_scan::{ScanError, Scanner};

fn ids(s: &Scanner, path: &str, text: &str) -> Vec<String> {
    s.scan(path, text.as_bytes())
        .into_iter()
        .map(|f| f.rule_id)
        .collect()
}

const AIRLOCK_CONFIG: &str = r#"
[scan]
disabled_rules = ["jwt", "not-a-rule"]
max_file_bytes = 1048576

[allowlist]
paths = ["docs/examples/**", "**/*.snap"]
stopwords = ["notasecret"]

[[rules]]
id = "acme-api-key"
description = "ACME API key"
regex = '''\b(acme_[a-z0-9]{32})\b'''
keywords = ["acme_"]
entropy = 3.0
scope = "line"
examples = ["key = acme_{{l:32}}"]
false_positives = ["key = acme_<key>"]
[[rules.allowlists]]
regexes = ['''^acme_test''']

[[rules]]
id = "github-pat-classic"
description = "override of the built-in rule"
regex = '''\b(ghp_[A-Za-z0-9]{36})\b'''
keywords = ["ghp_"]
"#;

#[test]
fn airlock_config_adds_disables_overrides_and_allowlists() {
    let (s, warnings) = Scanner::from_config_toml(AIRLOCK_CONFIG).unwrap();
    let w: Vec<String> = warnings.iter().map(|w| w.to_string()).collect();
    assert!(
        w.iter()
            .any(|m| m.contains("not-a-rule") && m.contains("scan.disabled_rules")),
        "{w:?}"
    );
    assert!(
        w.iter()
            .any(|m| m.contains("github-pat-classic") && m.contains("replaces")),
        "{w:?}"
    );
    assert_eq!(s.max_file_bytes(), 1 << 20);
    assert!(s.rules().iter().all(|r| r.id != "jwt"));
    // Fallbacks stay last.
    assert!(s.rules().last().unwrap().fallback);

    let r = rendered(
        "ACME=acme_{{l:32}}\nGH=ghp_{{a:36}}\nJWT=eyJhbGciOiJIUzI1NiJ9.eyJ{{u64:40}}.{{u64:43}}\n",
        1,
    );
    assert_eq!(
        ids(&s, "app/.env", &r.text),
        ["acme-api-key", "github-pat-classic"]
    );
    assert!(
        ids(&s, "docs/examples/a/.env", &r.text).is_empty(),
        "glob path allowlist"
    );
    assert!(s.is_path_allowlisted("ui/__snapshots__/x.snap"));
    let test_key = rendered("ACME=acme_test{{l:28}}\n", 2);
    assert!(ids(&s, "x", &test_key.text).is_empty(), "rule allowlist");
    let stop = rendered("token = \"ghp_{{a:26}}notasecret\"\n", 3);
    assert!(ids(&s, "x", &stop.text).is_empty(), "global stopword");
}

#[test]
fn airlock_config_is_strict() {
    let err = Scanner::from_config_toml("[scan]\nuse_defaults = false\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("use_defaults") && err.contains("scan.config"),
        "{err}"
    );
    let err =
        Scanner::from_config_toml("[[rules]]\nid = \"x\"\nregex = '''(?<=a)b'''\n").unwrap_err();
    assert!(
        matches!(&err, ScanError::RuleRegex { rule_id, .. } if rule_id == "x"),
        "{err}"
    );
    let err = Scanner::from_config_toml("[[rules]]\nid = \"bad id\"\nregex = 'x'\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("scan.rule-invalid"), "{err}");
    let err = Scanner::from_config_toml("[[rules]]\nid = \"needs-a-regex\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("needs-a-regex") && err.contains("neither"),
        "{err}"
    );
}

#[test]
fn airlock_config_rejects_rules_whose_examples_disagree() {
    let cfg = "[[rules]]\nid = \"acme\"\nregex = 'acme_[a-z]{8}'\nexamples = [\"acme_{{d:8}}\"]\n";
    let err = Scanner::from_config_toml(cfg).unwrap_err();
    assert!(
        matches!(&err, ScanError::RuleExample { rule_id, kind: "true-positive", index: 0, .. } if rule_id == "acme"),
        "{err}"
    );
    let cfg =
        "[[rules]]\nid = \"acme\"\nregex = 'acme_[a-z]{8}'\nfalse_positives = [\"acme_{{L:8}}\"]\n";
    let err = Scanner::from_config_toml(cfg).unwrap_err().to_string();
    assert!(
        err.contains("false-positive example #0 is reported"),
        "{err}"
    );
}

fn gitleaks() -> (Scanner, Vec<String>) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/gitleaks-small.toml"
    ))
    .unwrap();
    let (s, w) = Scanner::from_gitleaks_toml(&text).unwrap();
    (s, w.iter().map(|w| w.to_string()).collect())
}

#[test]
fn gitleaks_config_loads_and_reports_what_it_ignores() {
    let (s, w) = gitleaks();
    for needle in [
        "extend.useDefault",
        "no-such-rule",
        "rules.severity",
        "allowlist.commits",
        "ghost-rule",
    ] {
        assert!(
            w.iter().any(|m| m.contains(needle)),
            "no warning about {needle}: {w:#?}"
        );
    }
    assert!(s.rules().iter().any(|r| r.id == "acme-api-key"));
    assert!(
        s.rules().iter().any(|r| r.id == "aws-access-key-id"),
        "useDefault keeps built-in rules"
    );
    assert!(s.rules().iter().all(|r| r.id != "jwt"), "disabledRules");
    let acme = s.rules().iter().find(|r| r.id == "acme-api-key").unwrap();
    assert_eq!(acme.tags, ["internal", "api"]);
    assert_eq!(acme.secret_group, Some(1));
}

#[test]
fn gitleaks_rules_fire() {
    let (s, _) = gitleaks();
    let r = rendered(
        "ACME_API_KEY = \"acme_{{l:32}}\"\nlegacy = ACMELEGACY{{A:20}}\n",
        7,
    );
    let f = s.scan("app/settings.py", r.text.as_bytes());
    assert_eq!(describe(&f), "app/settings.py:1: acme-api-key");
    // The secret group is the key, not the assignment.
    assert_eq!(&r.text.as_bytes()[f[0].start..f[0].start + 5], b"acme_");
    // Path-scoped rule only in .env/.ini files.
    assert_eq!(
        ids(&s, "deploy/prod.env", &r.text),
        ["acme-api-key", "acme-legacy-token"]
    );
    // Path-only rule reports the file.
    assert_eq!(ids(&s, "certs/server.pem", "anything\n"), ["pem-file"]);
    // Keyword anywhere in the file, match elsewhere (gitleaks semantics).
    let sess = rendered("# uses acme-session-store\n\n\nid = sess-{{h:24}}\n", 8);
    assert_eq!(ids(&s, "x.cfg", &sess.text), ["acme-session"]);
    assert!(ids(
        &s,
        "x.cfg",
        &sess.text.replace("acme-session-store", "store")
    )
    .is_empty());
}

#[test]
fn gitleaks_allowlists_apply() {
    let (s, _) = gitleaks();
    for (text, why) in [
        (
            "ACME_API_KEY = \"acme_test{{l:28}}\"\n",
            "rule regex allowlist",
        ),
        ("ACME_API_KEY = \"acme_0000{{l:28}}\"\n", "rule stopword"),
        (
            "ACME_API_KEY = \"acme_{{l:32}}\"  # acme-ok\n",
            "targeted line allowlist",
        ),
        ("ACME_API_KEY = \"acme_{{l:27}}dummy\"\n", "global stopword"),
    ] {
        let r = rendered(text, 9);
        // (The built-in generic rule may still see an api-key assignment; not this rule.)
        assert!(
            !ids(&s, "a.py", &r.text).contains(&"acme-api-key".to_string()),
            "{why}"
        );
    }
    let r = rendered("ACME_API_KEY = \"acme_{{l:32}}\"\n", 9);
    assert!(
        ids(&s, "tests/fixtures/a.py", &r.text).is_empty(),
        "global path allowlist"
    );
    assert!(s.is_path_allowlisted("tests/fixtures/a.py"));
}

#[test]
fn gitleaks_regex_rust_cannot_compile_names_the_rule() {
    let cfg = "[[rules]]\nid = \"lookbehind\"\nregex = '''(?<=token=)[a-z]{10}'''\n";
    let err = Scanner::from_gitleaks_toml(cfg).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(&err, ScanError::RuleRegex { rule_id, .. } if rule_id == "lookbehind"),
        "{msg}"
    );
    assert!(
        msg.contains("rule `lookbehind`") && msg.contains("scan.rule-regex"),
        "{msg}"
    );
    let err = Scanner::from_gitleaks_toml("[[rules]]\ndescription = \"no id\"\nregex = 'x'\n")
        .unwrap_err();
    assert!(err.to_string().contains("missing `id`"), "{err}");
    let err = Scanner::from_gitleaks_toml(
        "[[rules]]\nid = \"a\"\nregex = 'x'\n[[rules]]\nid = \"a\"\nregex = 'y'\n",
    )
    .unwrap_err();
    assert!(err.to_string().contains("duplicate"), "{err}");
}
