//! The text module's rules, pinned on named hostile strings. The properties over generated
//! strings (every medium, cut or whole) live with the fuzz harness (`airlock-testkit`,
//! `core/text.rs`), which runs them as unit tests and as a fuzz target.

use super::*;

#[test]
fn every_listed_range_is_hidden() {
    for c in [
        '\u{0}',
        '\u{1b}',
        '\u{7f}',
        '\u{80}',
        '\u{9b}',
        '\u{9f}',
        '\n',
        '\t',
        '\r',
        '\u{ad}',
        '\u{34f}',
        '\u{61c}',
        '\u{115f}',
        '\u{1160}',
        '\u{17b4}',
        '\u{180e}',
        '\u{200b}',
        '\u{200d}',
        '\u{200e}',
        '\u{200f}',
        '\u{2028}',
        '\u{2029}',
        '\u{202a}',
        '\u{202e}',
        '\u{2060}',
        '\u{2064}',
        '\u{2066}',
        '\u{2069}',
        '\u{206a}',
        '\u{206f}',
        '\u{3164}',
        '\u{fe00}',
        '\u{fe0f}',
        '\u{feff}',
        '\u{ffa0}',
        '\u{fff9}',
        '\u{fffb}',
        '\u{1d173}',
        '\u{e0000}',
        '\u{e0041}',
        '\u{e007f}',
        '\u{e0100}',
        '\u{e01ef}',
    ] {
        assert!(is_hidden(c), "{:04X}", c as u32);
    }
    for c in [
        'a', ' ', '|', '`', '<', '\u{a0}', '\u{2000}', 'é', '中', '\u{fffc}', '😀',
    ] {
        assert!(!is_hidden(c), "{:04X}", c as u32);
    }
}

#[test]
fn terminal_marks_escape_sequences_and_bidi() {
    assert_eq!(
        line("\u{1b}]0;pwned\u{7}\u{1b}[2K\rqueue: ok"),
        "<U+001B>]0;pwned<U+0007><U+001B>[2K<U+000D>queue: ok"
    );
    assert_eq!(line("gpt\u{202e}txt.exe"), "gpt<U+202E>txt.exe");
    assert_eq!(line("csi\u{9b}31m"), "csi<U+009B>31m");
    assert_eq!(terminal_block("a\r\nb\tc", 100), "a<U+000D>\nb<U+0009>c");
}

#[test]
fn tag_characters_show_as_tokens() {
    assert_eq!(line("x\u{e0041}\u{e007f}"), "x<U+E0041><U+E007F>");
}

#[test]
fn truncation_is_visible_and_on_a_character_boundary() {
    assert_eq!(truncate("héllo", 2), "hé…[3 more characters]");
    assert_eq!(truncate("héllo", 5), "héllo");
    assert_eq!(
        line(&"x".repeat(300)).chars().count(),
        200 + "…[100 more characters]".chars().count()
    );
}

#[test]
fn markdown_cell_cannot_split_or_close() {
    assert_eq!(md_cell("a|b", 50), "`a\\|b`");
    assert_eq!(md_cell("`x`", 50), "`` `x` ``");
    assert_eq!(md_cell("a\nb", 50), "`a<U+000A>b`");
    assert_eq!(md_code("a|b", 50), "`a|b`");
    assert_eq!(md_code("", 50), "`  `");
    assert_eq!(md_fence("text", "```\nx", 50), "````text\n```\nx\n````\n");
    assert_eq!(
        md_text("[x](https://e) <b>", 50),
        "\\[x\\]\\(https\\:\\/\\/e\\) \\<b\\>"
    );
}

#[test]
fn html_escapes_and_marks() {
    assert_eq!(
        html("<a href='x'>&\u{202e}", 50),
        "&lt;a href=&#39;x&#39;&gt;&amp;<mark class=\"ctl\" title=\"invisible or control character\">&lt;U+202E&gt;</mark>"
    );
    assert_eq!(html_block("a\nb", 50), "a\nb");
}
