use super::*;
use crate::classify_path;

const FIXTURES: &str = include_str!("../tests/data/classify/content.txt");

/// (path, executable, expected rule, content) of each fixture.
fn fixtures() -> Vec<(String, bool, String, String)> {
    let mut out: Vec<(String, bool, String, String)> = Vec::new();
    for line in FIXTURES.lines() {
        if let Some(head) = line.strip_prefix("--- ") {
            let (path, rule) = head.split_once(" => ").unwrap();
            let (path, exec) = match path.strip_suffix(" [x]") {
                Some(p) => (p, true),
                None => (path, false),
            };
            out.push((path.to_owned(), exec, rule.to_owned(), String::new()));
        } else if let Some(last) = out.last_mut() {
            last.3.push_str(line);
            last.3.push('\n');
        }
    }
    out
}

#[test]
fn fixture_contents_classify_by_what_they_are() {
    let fx = fixtures();
    assert!(fx.len() >= 18);
    for (path, exec, rule, content) in fx {
        let change = crate::reach::Change {
            path: &path,
            new: Some(content.as_bytes()),
            executable: exec,
        };
        let got = crate::classify_change(&[change], &crate::reach::MemTree::new());
        assert_eq!(got[0].class.rule, rule, "{path}");
    }
}

#[test]
fn content_never_lowers_a_bucket_the_name_decided() {
    let pod = b"apiVersion: v1\nkind: Pod\n";
    for (path, rule) in [
        (".github/workflows/deploy.yml", "ci.github-workflow"),
        ("Cargo.toml", "deps.manifest"),
        (".vscode/settings.json", "agent.editor-config"),
        ("CODEOWNERS", "governance.codeowners"),
        ("testdata/pod.yaml", "tests.fixture-dir"),
    ] {
        assert_eq!(classify_path(path, Some(pod)).rule, rule, "{path}");
    }
}

#[test]
fn hostile_content_is_read_within_limits_without_panicking() {
    // Past the window: not seen.
    let mut late = vec![b' '; HEAD_MAX_BYTES];
    late.extend_from_slice(b"\napiVersion: v1\nkind: Pod\n");
    assert_eq!(detect("x.yaml", &late, false), None);
    // Invalid UTF-8, NULs, deep nesting, a huge single line: no panic, no hit.
    let mut junk = vec![0xff, 0xfe, 0, 0, b'{'];
    junk.extend(std::iter::repeat_n(b'[', 200_000));
    assert_eq!(detect("x.json", &junk, false), None);
    assert_eq!(
        detect("x.yaml", b"apiVersion: v1\n\xff\xfe\nkind: Pod\n", false).map(|h| h.rule),
        Some("iac.k8s-content")
    );
    // A YAML bomb is not expanded: anchors are text here.
    let bomb = b"a: &a [\"x\",\"x\"]\nb: &b [*a,*a]\nc: &c [*b,*b]\nd: [*c,*c]\n";
    assert_eq!(detect("x.yaml", bomb, false), None);
    assert_eq!(detect("x.yaml", b"", false), None);
    // Both Kubernetes keys must be in one document.
    assert_eq!(
        detect("x.yaml", b"apiVersion: v1\n---\nkind: Pod\n", false),
        None
    );
}

#[test]
fn a_script_outside_a_tooling_directory_is_not_raised() {
    assert_eq!(detect("lib/tool", b"#!/bin/sh\n", false), None);
    assert_eq!(detect("app/main.py", b"x = 1\n", true), None);
    assert!(in_tooling_dir("a/Scripts/x"));
    assert!(!in_tooling_dir("scripts"));
}

#[test]
fn every_content_rule_has_a_fixture() {
    let used: Vec<String> = fixtures().into_iter().map(|f| f.2).collect();
    for (id, _) in RULES {
        assert!(
            used.iter().any(|u| u == id),
            "{id} has no fixture in content.txt"
        );
    }
}

#[test]
fn public_keys_are_trust_material_whatever_their_name() {
    let classify = |path: &str, content: &[u8]| {
        let change = crate::reach::Change {
            path,
            new: Some(content),
            executable: false,
        };
        crate::classify_change(&[change], &crate::reach::MemTree::new())[0]
            .class
            .rule
    };
    for (path, key) in [
        (
            ".cosign/cosign.pub",
            &b"-----BEGIN PUBLIC KEY-----\nMFkw\n"[..],
        ),
        (
            "keys/release.pem",
            b"-----BEGIN RSA PUBLIC KEY-----\nMIIB\n",
        ),
        (
            "signing/ssh2.key",
            b"---- BEGIN SSH2 PUBLIC KEY ----\nAAAA\n",
        ),
        (
            "minisign.key",
            b"untrusted comment: minisign public key ABC\nRWQ\n",
        ),
        (
            "security/allowed_signers",
            b"\n\necdsa-sha2-nistp256 AAAAE2VjZHNh example@x\n",
        ),
    ] {
        assert_eq!(
            classify(path, key),
            "governance.signing-key-content",
            "{path}"
        );
    }
    // Not a key: a private key's marker, a key only mentioned in prose, a key under a test
    // directory (a test input, the name decides first), and a multi-byte start.
    for (path, text) in [
        (
            "notes/key.txt",
            &b"see -----BEGIN PUBLIC KEY----- below"[..],
        ),
        ("tests/keys/fake_rsa.pub", b"ssh-rsa AAAAB3Nza fake@test\n"),
        (
            "data/start.bin",
            "\u{202e}-----BEGIN PUBLIC KEY-----".as_bytes(),
        ),
    ] {
        assert_ne!(
            classify(path, text),
            "governance.signing-key-content",
            "{path}"
        );
    }
}
