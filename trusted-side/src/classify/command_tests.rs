use super::command::*;
use crate::gate::policy::Policy;

#[test]
fn classify_table_is_aligned_and_decides_the_strictest_verdict() {
    let policy = Policy::default();
    let rows = classify_rows(
        paths_from_lines("src/main.rs\r\n\n  \nconfig.yaml\n.github/workflows/ci.yml\n"),
        &policy,
        |p| (p == "config.yaml").then(|| b"apiVersion: v1\nkind: Pod\n".to_vec()),
    );
    assert_eq!(rows.len(), 3);
    assert!(rows[1].content_checked && !rows[0].content_checked);
    assert_eq!(rows[1].rule, "iac.k8s-content");
    let out = render_table(&rows, "default", &policy);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["PATH", "BUCKET", "RULE", "VERDICT", "REASON"]
    );
    let col = lines[0].find("BUCKET").unwrap();
    for l in &lines[1..4] {
        assert_eq!(l.chars().nth(col - 1), Some(' '), "{l:?}");
        assert_ne!(l.chars().nth(col), Some(' '), "{l:?}");
    }
    assert!(
        lines[2].starts_with("config.yaml ") && lines[2].contains(" iac "),
        "{out}"
    );
    assert!(
        out.contains("decision: human (3 paths: 1 queue, 2 human, 0 reject; policy default "),
        "{out}"
    );
    let json = serde_json::to_value(&rows).unwrap();
    assert_eq!(json[2]["reason"], "ci-path-changed");
    assert_eq!(json[2]["verdict"], "human");
    assert_eq!(json[0]["bucket"], "src");
}

#[test]
fn classify_table_escapes_a_path_that_would_rewrite_the_terminal() {
    let policy = Policy::default();
    let rows = classify_rows(vec!["x\u{1b}[2Jy".to_owned()], &policy, |_| None);
    let out = render_table(&rows, "default", &policy);
    assert!(!out.contains('\u{1b}'), "{out:?}");
    assert!(out.contains("x<U+001B>[2Jy"), "{out}");
    assert!(out.contains("(1 path: 1 queue"), "{out}");
}

#[test]
fn printable_escapes_terminal_controls() {
    assert_eq!(printable("a\u{1b}[2Jb"), "a<U+001B>[2Jb");
    assert_eq!(printable("x\u{202e}y"), "x<U+202E>y");
    assert_eq!(printable("src/main.rs"), "src/main.rs");
}
