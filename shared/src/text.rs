//! The one way untrusted (worker or repository) text is shown to a person or written into a
//! line another tool parses: a terminal, Markdown, HTML, a git trailer or a ledger `detail`.
//! Worker text is stored raw; it is neutralised here, where it is output, per medium.
//!
//! Guards against: escape sequences that retitle a terminal, erase lines or forge report lines
//! (every C0/C1 control, DEL and ESC is marked, so no control byte reaches the output); text
//! that reorders or hides itself (bidirectional controls, zero-width and other invisible
//! characters, Unicode tag characters that carry a hidden message to a reviewer bot);
//! Markdown breakout (a `|` splitting a table cell, backticks closing a code span or fence,
//! links, images and raw HTML becoming live); HTML injection; a newline in a git trailer or a
//! ledger line forging another trailer or line; and unbounded text (cut with a visible marker).
//!
//! # The hidden set
//! [`is_hidden`] is the single definition of "invisible, bidirectional or control". Each such
//! character is replaced by a visible `<U+XXXX>` token (in HTML, a highlighted `&lt;U+XXXX&gt;`),
//! never dropped, so a reviewer sees that something was there. The set is:
//! - every `Cc` control: C0 (U+0000–U+001F, which holds ESC, CR, LF, TAB), DEL (U+007F) and C1
//!   (U+0080–U+009F, which holds the 8-bit CSI U+009B): they drive terminals;
//! - bidirectional controls U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069 (Trojan Source,
//!   CVE-2021-42574): they make text read in another order than it is stored;
//! - line and paragraph separators U+2028, U+2029: they break a line where no newline shows;
//! - Unicode's `Default_Ignorable_Code_Point` set (DerivedCoreProperties.txt, Unicode 15),
//!   the characters a renderer draws as nothing: U+00AD, U+034F, U+115F–U+1160, U+17B4–U+17B5,
//!   U+180B–U+180F, U+200B–U+200F, U+2060–U+206F, U+3164, U+FE00–U+FE0F (variation
//!   selectors), U+FEFF, U+FFA0, U+FFF0–U+FFF8, U+1BCA0–U+1BCA3, U+1D173–U+1D17A and
//!   U+E0000–U+E0FFF (tag characters U+E0000–U+E007F, which spell an invisible ASCII message,
//!   and variation selectors U+E0100–U+E01EF);
//! - interlinear annotation controls U+FFF9–U+FFFB, which hide the annotated text.
//!
//! Not marked: visible look-alikes (homoglyphs, the many width spaces U+2000–U+200A that render
//! as spacing); they show as something, and [`is_hidden`] is about what shows as nothing or
//! acts on the display. The price of the set is that emoji sequences joined by U+200D or
//! styled by U+FE0F show their joiners as tokens; worker text is names, logs and paths, and a
//! reviewer must see every byte that could hide something.
//!
//! # Per medium
//! - [`terminal`]: one line, every hidden character (newline and tab too) marked, cut at `max`.
//!   [`terminal_block`] keeps newlines (for a log tail) and marks everything else.
//! - [`md_code`] (a code span), [`md_cell`] (a code span inside a GFM table cell: `|` escaped
//!   as `\|`, which GFM reads inside a cell even within a code span), [`md_fence`] (a fenced
//!   block whose fence is longer than any backtick run inside) and [`md_text`] (plain text
//!   with every ASCII punctuation character backslash-escaped, so no link, image, emphasis,
//!   entity or HTML can form).
//! - [`html`] and [`html_block`]: `& < > " '` escaped, hidden characters as a visible mark;
//!   [`md_html`] for HTML inside Markdown. The block forms ([`md_fence`], [`html_block`])
//!   keep newlines and tabs, which a browser renders as spacing; a terminal gets no tab.
//! - [`trailer`]: one line for a git trailer value. [`detail`]: one line for a ledger entry.
//! - [`truncate`]: cut at a character boundary with a visible `…[N more characters]` marker.
//!
//! Does not check: whether the text is true; callers decide what to show.

use std::fmt::Write as _;

/// Characters shown before a one-line value is cut, when the caller has no better bound.
pub const LINE_MAX: usize = 200;

/// Whether `c` is invisible, bidirectional or a control: it is never output as itself, only as
/// a visible `<U+XXXX>` token. See the module header for why each range is here.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00ad}'
            | '\u{034f}'
            | '\u{061c}'
            | '\u{115f}'..='\u{1160}'
            | '\u{17b4}'..='\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fffb}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}')
}

/// Whether `s` holds any [`is_hidden`] character.
pub fn has_hidden(s: &str) -> bool {
    s.chars().any(is_hidden)
}

/// The visible token for `c`: `<U+202E>`.
pub fn token(c: char) -> String {
    format!("<U+{:04X}>", c as u32)
}

/// The hidden characters in `s`, as their tokens, in order (what every medium must mark).
pub fn hidden_tokens(s: &str) -> Vec<String> {
    s.chars().filter(|&c| is_hidden(c)).map(token).collect()
}

/// `s` cut to `max` characters; a cut is followed by a visible `…[N more characters]` marker.
pub fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((at, _)) => {
            let more = s[at..].chars().count();
            format!("{}…[{more} more characters]", &s[..at])
        }
    }
}

/// Marks hidden characters (except those `keep` allows) after cutting to `max` characters.
fn marked(s: &str, max: usize, keep: fn(char) -> bool) -> String {
    let cut = truncate(s, max);
    let mut out = String::with_capacity(cut.len());
    for c in cut.chars() {
        if is_hidden(c) && !keep(c) {
            let _ = write!(out, "<U+{:04X}>", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

fn none(_: char) -> bool {
    false
}

fn newline(c: char) -> bool {
    c == '\n'
}

/// What a code block shows as itself: line breaks and tabs (rendered as space, acting on nothing).
fn code_block(c: char) -> bool {
    c == '\n' || c == '\t'
}

/// One line for a terminal: every hidden character marked (newline and tab included), cut at
/// `max` characters. No control byte reaches the output.
pub fn terminal(s: &str, max: usize) -> String {
    marked(s, max, none)
}

/// [`terminal`] with [`LINE_MAX`].
pub fn line(s: &str) -> String {
    terminal(s, LINE_MAX)
}

/// Several lines for a terminal (a log tail): newlines kept, every other hidden character
/// (CR, tab, ESC, bidi...) marked, cut at `max` characters.
pub fn terminal_block(s: &str, max: usize) -> String {
    marked(s, max, newline)
}

/// One line for a git trailer value: nothing that could end the line or start another trailer.
pub fn trailer(s: &str, max: usize) -> String {
    terminal(s, max)
}

/// One line for a ledger entry's `detail`: the ledger is shown on terminals and pages later.
pub fn detail(s: &str, max: usize) -> String {
    terminal(s, max)
}

/// Backticks to open and close a code span or fence around `s`: one more than its longest run.
fn fence_for(s: &str, min: usize) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(min))
}

fn span(s: &str) -> String {
    let fence = fence_for(s, 1);
    // CommonMark strips one space from each end of a span that starts and ends with one; pad
    // so a leading or trailing backtick cannot join the fence.
    let pad = if s.is_empty() || s.starts_with(['`', ' ']) || s.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// A Markdown code span holding `s` (one line, marked, cut at `max`), fenced by more backticks
/// than any run inside it, so the text cannot close it and become markup, a link or HTML.
/// Not for a table cell: use [`md_cell`].
pub fn md_code(s: &str, max: usize) -> String {
    span(&terminal(s, max))
}

/// A code span for a GFM table cell: as [`md_code`], with `|` written `\|` (GFM splits cells
/// before it parses code spans and reads `\|` as a `|` inside the cell, code spans included).
pub fn md_cell(s: &str, max: usize) -> String {
    span(&terminal(s, max).replace('|', "\\|"))
}

/// A fenced code block holding `s` (lines and tabs kept, everything else hidden marked, cut at
/// `max`), its fence longer than any backtick run inside, so no line can close it. `lang` is
/// the caller's own info string (`diff`, `text`), never worker text.
pub fn md_fence(lang: &str, s: &str, max: usize) -> String {
    let body = marked(s, max, code_block);
    let fence = fence_for(&body, 3);
    format!("{fence}{lang}\n{body}\n{fence}\n")
}

/// Plain Markdown text (one line, marked, cut at `max`) with every ASCII punctuation character
/// backslash-escaped: no link, image, emphasis, entity, HTML or table cell can form.
pub fn md_text(s: &str, max: usize) -> String {
    let shown = terminal(s, max);
    let mut out = String::with_capacity(shown.len());
    for c in shown.chars() {
        if c.is_ascii_punctuation() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn html_with(s: &str, max: usize, keep: fn(char) -> bool) -> String {
    let cut = truncate(s, max);
    let mut out = String::with_capacity(cut.len());
    for c in cut.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if is_hidden(c) && !keep(c) => {
                let _ = write!(
                    out,
                    "<mark class=\"ctl\" title=\"invisible or control character\">&lt;U+{:04X}&gt;</mark>",
                    c as u32
                );
            }
            c => out.push(c),
        }
    }
    out
}

/// One line of HTML text (element content or a quoted attribute value): `& < > " '` escaped,
/// every hidden character a visible mark, cut at `max`.
pub fn html(s: &str, max: usize) -> String {
    html_with(s, max, none)
}

/// [`html`] keeping newlines and tabs, for a `<pre>` block.
pub fn html_block(s: &str, max: usize) -> String {
    html_with(s, max, code_block)
}

/// Text for HTML inside Markdown (a `<summary>`): [`terminal`]'s marked line, HTML-escaped,
/// with the backtick and `|` also written as entities so no Markdown code span or table cell
/// can form around it.
pub fn md_html(s: &str, max: usize) -> String {
    // Marked as plain `<U+XXXX>` text first (then escaped): no element of ours in the Markdown.
    html(&terminal(s, max), usize::MAX)
        .replace('`', "&#96;")
        .replace('|', "&#124;")
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
