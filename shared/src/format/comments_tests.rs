use super::*;

fn line(json: &str) -> Result<Comment, CommentError> {
    parse_comment(1, json.as_bytes())
}

#[test]
fn a_line_or_a_range_with_a_severity_and_a_body_is_kept_and_round_trips() {
    let c = line(r#"{"path":"src/a.rs","line":3,"severity":"warning","body":"Check *this*."}"#)
        .unwrap();
    assert_eq!(c.range(), (3, 3));
    let r = line(r#"{"path":"a","start_line":2,"end_line":5,"severity":"note","body":"b","suggestion":"x\n"}"#)
        .unwrap();
    assert_eq!(r.range(), (2, 5));
    let bytes = to_jsonl([&c, &r]);
    let back = parse_comments(&bytes);
    assert!(back.refused.is_empty(), "{:?}", back.refused);
    assert_eq!(back.kept, vec![(1, c), (2, r)]);
}

#[test]
fn each_broken_rule_is_refused_by_its_rule_and_never_quotes_the_body() {
    let big = "b".repeat(MAX_COMMENT_BODY_BYTES + 1);
    let cases = [
        (r#"{"path":"../x","line":1,"severity":"note","body":"SECRETBODY"}"#.to_owned(), "path.parent-dir"),
        (r#"{"path":"/etc/passwd","line":1,"severity":"note","body":"SECRETBODY"}"#.to_owned(), "path.absolute"),
        (r#"{"path":".git/config","line":1,"severity":"note","body":"SECRETBODY"}"#.to_owned(), "path.git-dir"),
        (r#"{"path":"a","line":0,"severity":"note","body":"SECRETBODY"}"#.to_owned(), "comments.range"),
        (r#"{"path":"a","start_line":5,"end_line":2,"severity":"note","body":"SECRETBODY"}"#.to_owned(), "comments.range"),
        (r#"{"path":"a","line":1,"start_line":1,"end_line":2,"severity":"note","body":"SECRETBODY"}"#.to_owned(), "comments.range"),
        (r#"{"path":"a","severity":"note","body":"SECRETBODY"}"#.to_owned(), "comments.range"),
        (r#"{"path":"a","line":1,"severity":"fatal","body":"SECRETBODY"}"#.to_owned(), "format.closed-set"),
        (r#"{"path":"a","line":1,"severity":"note","body":"SECRETBODY","html":1}"#.to_owned(), "format.unknown-member"),
        (r#"{"path":"a","line":1,"severity":"note","body":"  "}"#.to_owned(), "comments.body-size"),
        (format!(r#"{{"path":"a","line":1,"severity":"note","body":"{big}"}}"#), "comments.body-size"),
        (format!(r#"{{"path":"a","line":1,"severity":"note","body":"{}"}}"#, "b".repeat(10 << 20)), "comments.line-size"),
        (r#"not json SECRETBODY"#.to_owned(), "format.json"),
    ];
    for (json, rule) in cases {
        let e = line(&json).unwrap_err();
        assert_eq!(e.rule, rule, "{json:.80}: {e}");
        assert!(!e.to_string().contains("SECRETBODY"), "{e}");
    }
    let e = parse_comment(
        7,
        b"{\"path\":\"a\",\"line\":1,\"severity\":\"note\",\"body\":\"\xff\"}",
    )
    .unwrap_err();
    assert_eq!((e.index, e.rule), (7, "comments.utf8"));
    let over = format!(
        r#"{{"path":"a","line":1,"severity":"note","body":"{}"}}"#,
        "b".repeat(MAX_COMMENT_BODY_BYTES + 1 - 200)
    );
    assert!(line(&over).is_ok());
}

#[test]
fn past_the_cap_the_rest_is_refused_as_one_error_and_the_first_ones_survive() {
    let one = r#"{"path":"a","line":1,"severity":"note","body":"b"}"#;
    let text = vec![one; 10_000].join("\n");
    let parsed = parse_comments(text.as_bytes());
    assert_eq!(parsed.kept.len(), MAX_COMMENTS);
    assert_eq!(parsed.refused.len(), 1);
    assert_eq!(parsed.refused[0].rule, "comments.too-many");
    assert_eq!(parsed.refused[0].index, MAX_COMMENTS + 1);
    assert!(parsed.refused[0].reason.contains("9000 comment(s)"));
    let huge = vec![b' '; MAX_COMMENTS_BYTES as usize + 1];
    let parsed = parse_comments(&huge);
    assert!(parsed.kept.is_empty());
    assert_eq!(parsed.refused[0].rule, "comments.too-large");
}

#[test]
fn a_bad_line_among_good_ones_is_refused_alone() {
    let text = "{\"path\":\"a\",\"line\":1,\"severity\":\"note\",\"body\":\"ok\"}\n\n{\"path\":\"../b\",\"line\":1,\"severity\":\"note\",\"body\":\"x\"}\n{\"path\":\"c\",\"line\":2,\"severity\":\"error\",\"body\":\"ok\"}\n";
    let parsed = parse_comments(text.as_bytes());
    assert_eq!(
        parsed.kept.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        vec![1, 4]
    );
    assert_eq!(parsed.refused.len(), 1);
    assert_eq!(parsed.refused[0].index, 3);
}
