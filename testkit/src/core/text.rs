//! The `text` helper: every medium of `airlock_core::text` on arbitrary input.

/// `text`: the input (lossily UTF-8) through every medium of [`airlock_core::text`].
pub fn text(data: &[u8]) {
    use airlock_core::text::*;
    let s = &String::from_utf8_lossy(data);
    let max = s.chars().count() + 1;
    let tokens = hidden_tokens(s);
    let marks = |out: &str, html: bool| {
        // Every hidden character of the input shows as its token, in order.
        let mut rest = out;
        for t in &tokens {
            let want = if html {
                t.replace('<', "&lt;").replace('>', "&gt;")
            } else {
                t.clone()
            };
            match rest.find(&want) {
                Some(at) => rest = &rest[at + want.len()..],
                None => panic!("{t} not marked in {out:?}"),
            }
        }
    };
    for out in [terminal(s, max), trailer(s, max), detail(s, max)] {
        assert!(!has_hidden(&out), "hidden character in {out:?}");
        marks(&out, false);
    }
    let block = terminal_block(s, max);
    assert!(!block.chars().any(|c| is_hidden(c) && c != '\n'));
    let summary = md_html(s, max);
    assert!(!summary.contains(['`', '|', '<', '>', '"', '\'']));
    assert!(!has_hidden(&summary));
    let html_out = html(s, max);
    assert!(!has_hidden(&html_out));
    let stripped = html_out
        .replace(
            "<mark class=\"ctl\" title=\"invisible or control character\">",
            "",
        )
        .replace("</mark>", "");
    assert!(
        !stripped.contains(['<', '>', '"', '\'']),
        "unescaped in {html_out:?}"
    );
    assert!(
        stripped
            .match_indices('&')
            .all(|(i, _)| ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"]
                .iter()
                .any(|e| stripped[i..].starts_with(e))),
        "raw & in {html_out:?}"
    );
    marks(&html_out, true);
    let code = md_code(s, max);
    assert_closed_span(&code);
    marks(&code, false);
    let cell = md_cell(s, max);
    assert!(!cell.contains('\n'));
    assert!(
        cell.match_indices('|')
            .all(|(i, _)| i > 0 && cell.as_bytes()[i - 1] == b'\\'),
        "bare | in {cell:?}"
    );
    assert_closed_span(&cell);
    let fenced = md_fence("text", s, max);
    let fence: String = fenced.chars().take_while(|&c| c == '`').collect();
    assert!(fenced.ends_with(&format!("\n{fence}\n")));
    let inner = &fenced[fence.len()..fenced.len() - fence.len() - 1];
    assert!(
        !inner.contains(fence.as_str()),
        "fence closed early: {fenced:?}"
    );
    let text = md_text(s, max);
    let mut escaped = false;
    for c in text.chars() {
        assert!(escaped || !c.is_ascii_punctuation() || c == '\\');
        escaped = !escaped && c == '\\';
    }
}

/// A code span whose opening fence is found again only at its very end.
fn assert_closed_span(code: &str) {
    use airlock_core::text::has_hidden;
    assert!(!has_hidden(code), "hidden character in {code:?}");
    let fence: String = code.chars().take_while(|&c| c == '`').collect();
    let inner = &code[fence.len()..code.len() - fence.len()];
    assert!(code.ends_with(fence.as_str()));
    // No run of exactly the fence's length inside, nor one touching either end.
    let runs = inner.split(|c| c != '`').filter(|r| !r.is_empty());
    for r in runs {
        assert!(r.len() < fence.len(), "span closed early: {code:?}");
    }
    assert!(!inner.starts_with('`') && !inner.ends_with('`'));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::Lcg;

    /// Hostile strings every output of airlock must neutralise alike (the end-to-end test in
    /// `tests/suite/untrusted_text.rs` feeds such strings through the binaries).
    const HOSTILE: &[&str] = &[
        "\u{1b}]0;pwned\u{7}\u{1b}[2K\rqueue: ok",
        "gpt\u{202e}txt.exe",
        "// tidy helper\u{e0041}\u{e0070}\u{e0070}\u{e0072}\u{e006f}\u{e0076}\u{e0065}",
        "a|b`c``d` <img src=x onerror=alert(1)> [x](https://evil)",
        "soft\u{ad}hy\u{180e}phen\u{2061}\u{fff9}x\u{fffb}\u{3164}\u{115f}\u{34f}\u{fe0f}\u{2028}",
        "csi\u{9b}31m\u{7f}",
    ];

    /// A character biased towards those that matter to the text module.
    fn char(g: &mut Lcg) -> char {
        const PICK: &[char] = &[
            '`',
            '|',
            '\n',
            '\r',
            '<',
            '>',
            '&',
            '"',
            '\'',
            '\\',
            '[',
            ']',
            '(',
            ')',
            '!',
            ' ',
            '\u{1b}',
            '\u{9b}',
            '\u{7f}',
            '\u{202e}',
            '\u{2066}',
            '\u{200b}',
            '\u{feff}',
            '\u{e0041}',
            '\u{ad}',
            '\u{2028}',
            'a',
            'é',
        ];
        match g.below(4) {
            0 => char::from_u32(g.below(0x11_0000) as u32).unwrap_or('x'),
            1 => char::from_u32(g.below(0x3000) as u32).unwrap_or('x'),
            _ => *g.pick(PICK),
        }
    }

    #[test]
    fn hostile_strings_hold_every_invariant() {
        for s in HOSTILE {
            text(s.as_bytes());
        }
    }

    #[test]
    fn arbitrary_strings_hold_every_invariant() {
        let mut g = Lcg(0x9e37_79b9_7f4a_7c15);
        for _ in 0..4000 {
            let len = g.below(40);
            let s: String = (0..len).map(|_| char(&mut g)).collect();
            text(s.as_bytes());
        }
    }

    #[test]
    fn cutting_never_leaves_a_control_or_open_span() {
        use airlock_core::text::{has_hidden, html, md_cell, terminal};
        let mut g = Lcg(7);
        for _ in 0..2000 {
            let len = g.below(30);
            let s: String = (0..len).map(|_| char(&mut g)).collect();
            let max = g.below(12);
            assert!(!has_hidden(&terminal(&s, max)), "{s:?} cut at {max}");
            assert!(!has_hidden(&md_cell(&s, max)), "{s:?} cut at {max}");
            assert!(!html(&s, max).contains("<U+"), "{s:?} cut at {max}");
        }
    }
}
