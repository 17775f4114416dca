use super::common::{rendered, scanner};
use airlock_scan::testgen::{render, Rng};
use airlock_scan::{Rule, Scanner, SkipReason};
use std::path::PathBuf;

#[test]
fn parallel_scan_matches_sequential_and_reports_skips_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(11);
    let mut files = Vec::new();
    let mut expected = Vec::new();
    for i in 0..40 {
        let text = if i % 3 == 0 {
            render(
                "# config\ntoken = \"ghp_{{a:36}}\"\nregion = \"eu-west-1\"\n",
                &mut rng,
            )
            .text
        } else {
            format!("plain file {i}\nnothing here\n")
        };
        let p = dir.path().join(format!("f{i:02}.txt"));
        std::fs::write(&p, &text).unwrap();
        expected.extend(scanner().scan(&format!("f{i:02}.txt"), text.as_bytes()));
        files.push((format!("f{i:02}.txt"), p));
    }
    // A binary file is scanned by its printable runs (and counted as scanned).
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0tEXtComment\0".to_vec();
    png.extend(render("token=ghp_{{a:36}}", &mut rng).text.as_bytes());
    png.extend(b"\0\0\0\0IEND");
    let bin = dir.path().join("image.png");
    std::fs::write(&bin, &png).unwrap();
    expected.extend(scanner().scan("image.png", &png));
    files.push(("image.png".into(), bin));
    let big = dir.path().join("big.txt");
    std::fs::write(&big, vec![b'a'; 5000]).unwrap();
    files.push(("big.txt".into(), big));
    files.push(("sub".into(), dir.path().to_path_buf()));

    let s = Scanner::with_default_rules()
        .unwrap()
        .with_max_file_bytes(4096);
    for threads in [1, 2, 0] {
        let report = s.scan_files_parallel(files.clone(), threads).unwrap();
        assert_eq!(report.findings, expected, "threads={threads}");
        assert!(report.findings.iter().any(|f| f.path == "image.png"));
        assert_eq!(report.files_scanned, 41);
        let reasons: Vec<_> = report
            .skipped
            .iter()
            .map(|k| (k.path.as_str(), k.reason.clone()))
            .collect();
        assert_eq!(
            reasons,
            vec![
                (
                    "big.txt",
                    SkipReason::TooLarge {
                        size: 5000,
                        limit: 4096
                    }
                ),
                ("sub", SkipReason::NotRegularFile),
            ]
        );
    }
}

#[test]
fn unreadable_file_is_an_error_naming_the_path() {
    let missing = PathBuf::from("/nonexistent/airlock-scan-test/file.txt");
    let err = scanner()
        .scan_files_parallel(vec![("file.txt".into(), missing)], 2)
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("/nonexistent/airlock-scan-test/file.txt") && msg.contains("scan.io"),
        "{msg}"
    );
}

#[cfg(unix)]
#[test]
fn fifo_is_skipped_not_opened() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !matches!(status, Ok(s) if s.success()) {
        eprintln!("skipped: mkfifo not available");
        return;
    }
    let report = scanner()
        .scan_files_parallel(vec![("pipe".into(), fifo)], 1)
        .unwrap();
    assert_eq!(report.skipped[0].reason, SkipReason::NotRegularFile);
}

/// A minified file: one multi-megabyte line with a keyword every few bytes. Windows merge,
/// so the regex runs over the line once per rule rather than once per hit.
#[test]
fn very_long_line_with_many_keyword_hits() {
    let mut rng = Rng::new(3);
    let mut line = String::with_capacity(3 << 20);
    let mut secrets = 0;
    while line.len() < 2 << 20 {
        line.push_str("{\"key\":\"a\",\"token\":1,\"auth\":null,\"secret\":false},");
        if line.len().is_multiple_of(97) {
            line.push_str(&render("{\"gh\":\"ghp_{{a:36}}\"},", &mut rng).text);
            secrets += 1;
        }
    }
    let s = scanner();
    let findings = s.scan("bundle.min.js", line.as_bytes());
    assert_eq!(
        findings
            .iter()
            .filter(|f| f.rule_id == "github-pat-classic")
            .count(),
        secrets
    );
    assert!(findings.iter().all(|f| f.line == 1));
}

#[test]
fn positions_are_one_based_code_points() {
    let r = rendered("é = 1\n  ü: \"ghp_{{a:36}}\"\n", 4);
    let f = &scanner().scan("x.yaml", r.text.as_bytes())[0];
    assert_eq!((f.line, f.column), (2, 7));
    assert_eq!((f.end_line, f.end_column), (2, 7 + 40));
    assert_eq!(&r.text.as_bytes()[f.start..f.start + 4], b"ghp_");
}

#[test]
fn binary_content_is_scanned_by_its_printable_runs() {
    let r = rendered("\0\0ghp_{{a:36}}\0\x01", 4);
    assert!(airlock_scan::is_binary(r.text.as_bytes()));
    let s = scanner().scan_content("x.bin", r.text.as_bytes());
    assert_eq!(s.form, airlock_scan::Form::Binary);
    assert!(!s.form.redactable());
    assert_eq!(s.findings.len(), 1, "{:?}", s.findings);
    assert_eq!(s.findings[0].start, 2);
    assert_eq!(s.findings[0].rule_id, "github-pat-classic");
}

#[test]
fn utf16_text_is_decoded_and_scanned() {
    let r = rendered("# settings\ntoken = \"ghp_{{a:36}}\"\n", 5);
    for le in [true, false] {
        let mut bytes = Vec::new();
        for u in r.text.encode_utf16() {
            bytes.extend(if le { u.to_le_bytes() } else { u.to_be_bytes() });
        }
        let s = scanner().scan_content("x.txt", &bytes);
        assert_eq!(s.form, airlock_scan::Form::Utf16);
        assert_eq!(s.findings.len(), 1);
        assert_eq!(s.findings[0].line, 2);
    }
}

#[test]
fn encoded_and_split_secrets_are_found_at_the_encoded_bytes() {
    let r = rendered("ghp_{{a:36}}", 6);
    let b64 = airlock_scan::eval::keys::base64(format!("GITHUB_TOKEN={}\n", r.text).as_bytes());
    let text = format!("a: 1\nconfig: {b64}\n");
    let f = scanner().scan("x.yaml", text.as_bytes());
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(&text[f[0].start..f[0].end], b64);
    let clean = airlock_scan::redact(text.as_bytes(), &f);
    assert!(scanner().scan("x.yaml", &clean).is_empty());
    let (a, b) = r.text.split_at(17);
    let js = format!("// x\nconst token = \"{a}\" +\n  \"{b}\";\n");
    let f = scanner().scan("x.js", js.as_bytes());
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].line, 2);
    let clean = String::from_utf8(airlock_scan::redact(js.as_bytes(), &f)).unwrap();
    assert!(!clean.contains(a) && !clean.contains(b), "{clean}");
    assert_eq!(clean.lines().count(), 3);
}

#[test]
fn scanner_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Scanner>();
}

/// Hostile shapes: each must finish (linear work) and give the obvious answer.
#[test]
fn hostile_inputs_stay_linear_and_correct() {
    let s = scanner();
    let mut rng = Rng::new(21);
    // 20k key blocks back to back: one finding each.
    let mut many = String::new();
    for _ in 0..20_000 {
        many.push_str(
            &render(
                "-----BEGIN RSA PRIVATE KEY-----\n{{b64:40}}\n-----END RSA PRIVATE KEY-----\n",
                &mut rng,
            )
            .text,
        );
    }
    assert_eq!(s.scan("keys.pem", many.as_bytes()).len(), 20_000);
    // 50k headers with no body: nothing.
    let headers = "-----BEGIN RSA PRIVATE KEY-----\n".repeat(50_000);
    assert!(s.scan("h.txt", headers.as_bytes()).is_empty());
    // Keyword soup without values.
    let soup = "ghp_ key= token: secret password= AKIA sk_live_ eyJ. -----BEGIN ".repeat(40_000);
    assert!(s.scan("soup.txt", soup.as_bytes()).is_empty());
    // Unclosed marker openers everywhere.
    let markers = "[REDACTED:".repeat(100_000);
    assert!(s.scan("m.txt", markers.as_bytes()).is_empty());
    // Random printable bytes, 2 MiB, no NUL: whatever is found, no panic and sane ranges.
    let noise: Vec<u8> = (0..2 << 20)
        .map(|_| 1 + (rng.next_u64() % 255) as u8)
        .collect();
    for f in s.scan("noise.bin", &noise) {
        assert!(f.start < f.end && f.end <= noise.len());
    }
}

#[test]
fn keywords_at_the_edges_of_the_file() {
    let s = scanner();
    let r = rendered("ghp_{{a:36}}", 1);
    assert_eq!(s.scan("a", r.text.as_bytes()).len(), 1);
    let r = rendered("x=1\npassword={{a:20}}", 2);
    let f = s.scan("a", r.text.as_bytes());
    assert_eq!((f.len(), f[0].line), (1, 2));
    assert!(s.scan("a", b"").is_empty());
    assert!(s.scan("a", b"ghp_").is_empty());
}

#[test]
fn regex_alternation_compiles_as_one_pattern() {
    let alt = scanner().regex_alternation();
    // Byte-oriented, like the scanner and like ripgrep.
    let re = regex_automata::meta::Builder::new()
        .syntax(regex_automata::util::syntax::Config::new().utf8(false))
        .build(&alt);
    assert!(re.is_ok(), "the alternation does not compile");
    let r = rendered("t = ghp_{{a:36}}", 1);
    assert!(re.unwrap().is_match(r.text.as_bytes()));
}

#[test]
fn every_builtin_regex_compiles() {
    // The default scanner compiles regexes on first use; this forces all of them, so no
    // search over real input can meet a build error in a built-in rule or allowlist.
    Scanner::with_default_rules()
        .unwrap()
        .compile_all()
        .unwrap();
}

#[test]
fn bad_regex_syntax_is_still_refused_when_the_rules_load() {
    let mut r = Rule::new("broken", "ghp_(unclosed");
    r.keywords = vec!["ghp_".into()];
    let e = Scanner::new(vec![r], vec![]).unwrap_err().to_string();
    assert!(
        e.contains("rule `broken`") && e.contains("scan.rule-regex"),
        "{e}"
    );
    // A missing capture group is found without compiling, too.
    let mut r = Rule::new("no-group", "ghp_[a-z]{4}");
    r.secret_group = Some(1);
    let e = Scanner::new(vec![r], vec![]).unwrap_err().to_string();
    assert!(e.contains("secret group 1 does not exist"), "{e}");
}

#[test]
fn a_rule_too_big_to_compile_fails_closed_on_first_use() {
    // Parses (so the rule set loads) but its compiled NFA exceeds REGEX_SIZE_LIMIT.
    let mut big = Rule::new("too-big", "(?:tok[a-z]{1000}){1000}");
    big.keywords = vec!["tok".into()];
    let mut allow = Rule::new("allowed-by-a-huge-allowlist", "ghp_([a-z]{8})");
    allow.keywords = vec!["ghp_".into()];
    allow.allowlists = vec![airlock_scan::Allowlist {
        // Would allow the secret below if it could be built.
        regexes: vec!["(?:[a-z]{1000}){1000}|^abcdefgh$".into()],
        ..Default::default()
    }];
    let s = Scanner::new(vec![big, allow], vec![]).unwrap();
    let e = s.compile_all().unwrap_err().to_string();
    assert!(e.contains("rule `too-big`"), "{e}");
    // The rule cannot run: the file is reported at its start, not passed.
    let f = s.scan("cfg.txt", b"x = 1\ny = tok\n");
    assert_eq!(f.len(), 1);
    assert_eq!((f[0].rule_id.as_str(), f[0].line), ("too-big", 1));
    // An allowlist that cannot be built allows nothing.
    let small = Scanner::new(
        vec![{
            let mut r = Rule::new("same-allowlist-small", "ghp_([a-z]{8})");
            r.keywords = vec!["ghp_".into()];
            r.allowlists = vec![airlock_scan::Allowlist {
                regexes: vec!["^abcdefgh$".into()],
                ..Default::default()
            }];
            r
        }],
        vec![],
    )
    .unwrap();
    assert!(small.scan("cfg.txt", b"key = ghp_abcdefgh\n").is_empty());
    let f = s.scan("cfg.txt", b"key = ghp_abcdefgh\n");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].rule_id, "allowed-by-a-huge-allowlist");
    // Without a keyword hit nothing is compiled or reported.
    assert!(s.scan("cfg.txt", b"nothing here\n").is_empty());
}

#[test]
fn builtin_rules_pass_the_full_check() {
    // `with_default_rules` skips parsing its own constants when it loads; the full check
    // (syntax, nesting, secret groups) must hold for every one of them.
    let s = Scanner::with_default_rules().unwrap();
    let full = Scanner::new(s.rules().to_vec(), s.global_allowlists().to_vec()).unwrap();
    full.compile_all().unwrap();
    // And the load checks it skips (valid, unique ids; a regex or a path each): `new` ran
    // them, and loaded the same rules.
    assert_eq!(full.rules(), s.rules());
}

#[test]
fn the_default_detectors_are_the_default_rules_without_their_templates() {
    let rules = Scanner::with_default_rules().unwrap();
    let detectors = Scanner::with_default_detectors().unwrap();
    assert_eq!(rules.rules().len(), detectors.rules().len());
    let mut seen = 0;
    for (r, d) in rules.rules().iter().zip(detectors.rules()) {
        let mut stripped = r.clone();
        stripped.examples.clear();
        stripped.false_positives.clear();
        stripped.sample = None;
        assert_eq!(&stripped, d, "{}", r.id);
        // And they find the same things in the rule's own examples.
        for (i, ex) in r.examples.iter().enumerate() {
            let text = rendered(ex, 7 + i as u64).text;
            let ids = |s: &Scanner| -> Vec<String> {
                s.scan("config/app.env", text.as_bytes())
                    .into_iter()
                    .map(|f| format!("{}:{}", f.rule_id, f.line))
                    .collect()
            };
            assert_eq!(ids(&rules), ids(&detectors), "{} example {i}", r.id);
            seen += 1;
        }
    }
    assert!(seen > 100, "only {seen} examples");
}
