//! Unit tests of `policy.rs`.
use super::*;
use crate::classify::classify_path;
use std::collections::HashSet;

fn decide(policy: &Policy, path: &str) -> Reason {
    policy.decide_path(path, &classify_path(path, None))
}

#[test]
fn every_bucket_has_its_own_code() {
    let codes: HashSet<ReasonCode> = Bucket::ALL.iter().map(|b| code_for_bucket(*b)).collect();
    assert_eq!(codes.len(), Bucket::ALL.len());
}

#[test]
fn verdicts_order_so_the_max_is_the_decision() {
    assert!(Verdict::Queue < Verdict::Human && Verdict::Human < Verdict::Reject);
    let p = Policy::default();
    let reasons = [
        decide(&p, "src/main.rs"),
        decide(&p, ".github/workflows/ci.yml"),
        decide(&p, "docs/index.md"),
    ];
    assert_eq!(
        reasons.iter().map(|r| r.verdict).max(),
        Some(Verdict::Human)
    );
}

#[test]
fn default_policy_sends_sensitive_buckets_to_a_human() {
    let p = Policy::default();
    for b in Bucket::ALL {
        let expected = match b {
            Bucket::Src | Bucket::Tests | Bucket::Docs | Bucket::Other => Verdict::Queue,
            _ => Verdict::Human,
        };
        assert_eq!(p.bucket_verdict(b), expected, "{b}");
    }
    let r = decide(&p, ".github/workflows/ci.yml");
    assert_eq!(
        (r.verdict, r.code.code()),
        (Verdict::Human, "ci-path-changed")
    );
    assert!(r.detail.contains("ci.github-workflow"), "{}", r.detail);
    let r = decide(&p, "CLAUDE.md");
    assert_eq!(
        (r.verdict, r.code.code()),
        (Verdict::Human, "agent-config-changed")
    );
    let r = decide(&p, "src/k8sclient.go");
    assert_eq!(
        (r.verdict, r.code.code()),
        (Verdict::Queue, "src-path-changed")
    );
    assert_eq!(r.path.as_deref(), Some("src/k8sclient.go"));
    assert_eq!(p.limits(), PolicyLimits::default());
}

#[test]
fn documented_default_toml_is_the_default_policy() {
    let parsed = Policy::from_toml(DEFAULT_POLICY_TOML).unwrap();
    assert_eq!(parsed.canonical_json(), Policy::default().canonical_json());
    assert_eq!(
        Policy::from_toml("").unwrap().digest(),
        Policy::default().digest()
    );
}

#[test]
fn default_digest_is_pinned() {
    // Changing the canonical form changes every digest in the ledger: do it on purpose.
    assert_eq!(
        Policy::default().canonical_json(),
        r#"{"format":"airlock.policy/v1","buckets":{"ci":"human","iac":"human","deps":"human","build":"human","governance":"human","agent":"human","src":"queue","tests":"queue","docs":"queue","other":"queue"},"limits":{"max_changed_files":null,"max_changed_lines":null},"paths":[]}"#
    );
    assert_eq!(Policy::default().digest().to_hex(), DEFAULT_DIGEST);
}

const DEFAULT_DIGEST: &str = "bed68f3522cdc7dbbae2080e1a1237eae40f2f1571318c3efd445c85c893cced";

#[test]
fn toml_overrides_buckets_and_limits() {
    let p = Policy::from_toml(
        r#"
        [buckets]
        docs = "human"
        ci = "reject"
        [limits]
        max_changed_files = 10
        "#,
    )
    .unwrap();
    assert_eq!(decide(&p, "docs/index.md").verdict, Verdict::Human);
    assert_eq!(decide(&p, ".circleci/config.yml").verdict, Verdict::Reject);
    assert_eq!(decide(&p, "Cargo.lock").verdict, Verdict::Human);
    assert_eq!(decide(&p, "src/lib.rs").verdict, Verdict::Queue);
    assert_eq!(p.limits().max_changed_files, Some(10));
    assert_eq!(p.limits().max_changed_lines, None);
    assert_ne!(p.digest(), Policy::default().digest());
}

#[test]
fn path_rule_beats_bucket_and_first_match_wins() {
    let p = Policy::from_toml(
        r#"
        [[paths]]
        glob = ".github/workflows/docs.yml"
        verdict = "queue"
        reason = "docs deploy only; reviewed by docs team"

        [[paths]]
        glob = "secrets/**"
        verdict = "reject"
        reason = "never generated"

        [[paths]]
        glob = "*.md"
        verdict = "human"
        reason = "prose is reviewed"

        [[paths]]
        glob = "README.md"
        verdict = "queue"
        reason = "shadowed by the rule above"
        "#,
    )
    .unwrap();
    let r = decide(&p, ".github/workflows/docs.yml");
    assert_eq!(
        (r.verdict, r.code.code(), r.policy_rule),
        (Verdict::Queue, "policy-path-rule", Some(0))
    );
    assert!(r.detail.contains("docs deploy only"), "{}", r.detail);
    assert_eq!(
        decide(&p, ".github/workflows/ci.yml").code,
        ReasonCode::CiPathChanged
    );
    assert_eq!(decide(&p, "secrets/prod.env").verdict, Verdict::Reject);
    // A link named `secrets` in place of the directory is caught too.
    assert_eq!(decide(&p, "secrets").verdict, Verdict::Reject);
    assert_eq!(decide(&p, "secretsx.txt").verdict, Verdict::Queue);
    let r = decide(&p, "README.md");
    assert_eq!((r.verdict, r.policy_rule), (Verdict::Human, Some(2)));
    // No `/`: the name at any depth.
    assert_eq!(decide(&p, "docs/deep/guide.md").policy_rule, Some(2));
}

#[test]
fn queue_exception_does_not_widen_by_case_but_restrictions_catch_every_spelling() {
    let p = Policy::from_toml(
        r#"
        [[paths]]
        glob = ".github/workflows/docs.yml"
        verdict = "queue"
        reason = "docs deploy"
        [[paths]]
        glob = "secrets/**"
        verdict = "reject"
        reason = "never generated"
        "#,
    )
    .unwrap();
    let r = decide(&p, ".GitHub/workflows/Docs.yml");
    assert_eq!(
        (r.verdict, r.code),
        (Verdict::Human, ReasonCode::CiPathChanged)
    );
    assert_eq!(decide(&p, "Secrets/prod.env").verdict, Verdict::Reject);
    assert_eq!(decide(&p, "SECRETS./x").verdict, Verdict::Reject);
}

#[test]
fn unknown_fields_buckets_and_verdicts_are_refused() {
    for bad in [
        "bucket = {}",
        "[buckets]\nfrontend = \"human\"",
        "[buckets]\nci = \"maybe\"",
        "[buckets]\nCI = \"human\"",
        "[limits]\nmax_files = 3",
        "[[paths]]\nglobs = \"x\"\nverdict = \"queue\"\nreason = \"r\"",
        "[[paths]]\nglob = \"x\"\nverdict = \"queue\"",
        "[[paths]]\nglob = \"x\"\nverdict = \"queue\"\nreason = \"r\"\nexcept = \"y\"",
        "version = \"1\"",
        "[limits]\nmax_changed_files = -1",
        "not toml at all [",
    ] {
        let err = Policy::from_toml(bad).unwrap_err();
        assert_eq!(err.rule(), "policy.parse", "{bad:?}: {err}");
        assert!(err.to_string().contains("policy.parse"), "{err}");
    }
}

#[test]
fn invalid_values_are_refused_with_their_rule_id() {
    let cases = [
        ("version = 2", "policy.version"),
        ("[limits]\nmax_changed_lines = 0", "policy.zero-limit"),
        (
            "[[paths]]\nglob = \"a/[\"\nverdict = \"human\"\nreason = \"r\"",
            "policy.bad-glob",
        ),
        (
            "[[paths]]\nglob = \" \"\nverdict = \"human\"\nreason = \"r\"",
            "policy.bad-glob",
        ),
        (
            "[[paths]]\nglob = \"a/**\"\nverdict = \"human\"\nreason = \"  \"",
            "policy.empty-reason",
        ),
    ];
    for (text, rule) in cases {
        let err = Policy::from_toml(text).unwrap_err();
        assert_eq!(err.rule(), rule, "{text:?}: {err}");
        assert!(err.to_string().contains(rule), "{err}");
    }
    let long = format!(
        "[[paths]]\nglob = \"{}\"\nverdict = \"human\"\nreason = \"r\"",
        "a".repeat(MAX_GLOB_BYTES + 1)
    );
    assert_eq!(
        Policy::from_toml(&long).unwrap_err().rule(),
        "policy.bad-glob"
    );
    let many =
        "[[paths]]\nglob = \"a\"\nverdict = \"human\"\nreason = \"r\"\n".repeat(MAX_PATH_RULES + 1);
    assert_eq!(
        Policy::from_toml(&many).unwrap_err().rule(),
        "policy.too-many-rules"
    );
    let huge = format!("# {}", "x".repeat(MAX_POLICY_BYTES as usize));
    assert_eq!(
        Policy::from_toml(&huge).unwrap_err().rule(),
        "policy.too-large"
    );
}

#[test]
fn from_file_names_the_file_and_caps_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("policy.toml");
    std::fs::write(&f, "[buckets]\nsrc = \"human\"\n").unwrap();
    assert_eq!(
        Policy::from_file(&f).unwrap().bucket_verdict(Bucket::Src),
        Verdict::Human
    );
    std::fs::write(&f, "[buckets]\nsrc = \"yes\"\n").unwrap();
    let err = Policy::from_file(&f).unwrap_err();
    assert_eq!(err.rule(), "policy.parse");
    assert!(err.to_string().contains("policy.toml"), "{err}");
    std::fs::write(&f, vec![b'#'; MAX_POLICY_BYTES as usize + 10]).unwrap();
    assert_eq!(
        Policy::from_file(&f).unwrap_err().rule(),
        "policy.too-large"
    );
    let missing = Policy::from_file(&dir.path().join("nope.toml")).unwrap_err();
    assert_eq!(missing.rule(), "policy.read");
}

#[test]
fn unused_rules_are_reported() {
    let p = Policy::from_toml(
        r#"
        [[paths]]
        glob = "docs/generated/**"
        verdict = "queue"
        reason = "regenerated"
        [[paths]]
        glob = "legacy/**"
        verdict = "reject"
        reason = "frozen"
        "#,
    )
    .unwrap();
    let unused = p.unused_rules(["docs/generated/api.md", "src/main.rs"]);
    assert_eq!(
        unused,
        vec![UnusedRule {
            index: 1,
            glob: "legacy/**".to_owned()
        }]
    );
    assert!(unused[0].to_string().contains("policy.unused-rule"));
    assert!(p.unused_rules(["legacy/x", "docs/generated/y"]).is_empty());
    assert_eq!(p.unused_rules(Vec::<String>::new()).len(), 2);
}

#[test]
fn limits_take_the_stricter_of_request_and_policy() {
    let request = JobLimits {
        max_changed_files: 20,
        max_changed_lines: 1000,
        ..JobLimits::default()
    };
    let p = Policy::from_toml("[limits]\nmax_changed_files = 5\nmax_changed_lines = 5000").unwrap();
    assert!(p.check_limits(&request, 5, 1000).is_empty());
    let r = p.check_limits(&request, 6, 1001);
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].verdict, r[0].code.code()),
        (Verdict::Reject, "changed-files-over-limit")
    );
    assert!(r[0].detail.contains("limit 5 (policy)"), "{}", r[0].detail);
    assert_eq!(r[1].code.code(), "changed-lines-over-limit");
    assert!(
        r[1].detail.contains("limit 1000 (request)"),
        "{}",
        r[1].detail
    );
    assert_eq!(Policy::default().check_limits(&request, 21, 0).len(), 1);
}

#[test]
fn equivalent_files_share_a_digest_and_rule_order_matters() {
    let explicit = Policy::from_toml("[buckets]\nci = \"human\"\nsrc = \"queue\"").unwrap();
    assert_eq!(explicit.digest(), Policy::default().digest());
    let a = "[[paths]]\nglob = \"a\"\nverdict = \"human\"\nreason = \"r\"\n";
    let b = "[[paths]]\nglob = \"b\"\nverdict = \"human\"\nreason = \"r\"\n";
    let ab = Policy::from_toml(&format!("{a}{b}")).unwrap();
    let ba = Policy::from_toml(&format!("{b}{a}")).unwrap();
    assert_ne!(ab.digest(), ba.digest());
}
