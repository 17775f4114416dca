//! Replaces found secrets with `[REDACTED:<rule-id>]` markers, keeping the line structure.
//!
//! Guards against: leaking any byte of a secret into a redacted copy, and shifting line
//! numbers (diffs against the redacted tree must line up with the original).
//! On return: every byte inside a finding's range is gone except line breaks and the
//! spaces/tabs at the edges of each line of the range (kept so indentation survives);
//! each non-blank line of a range holds one marker; overlapping ranges are merged (the
//! marker names the rule of the earliest finding); the number of `\n` is unchanged.
//! Does not check: that `findings` belong to `content` (ranges outside it are ignored).

use crate::engine::Finding;

/// The marker that replaces one line of a secret.
pub fn marker(rule_id: &str) -> String {
    format!("[REDACTED:{rule_id}]")
}

/// Returns `content` with every finding's byte range replaced (see the module doc).
pub fn redact(content: &[u8], findings: &[Finding]) -> Vec<u8> {
    let mut ranges: Vec<(usize, usize, &str)> = findings
        .iter()
        .filter(|f| f.start < f.end && f.end <= content.len())
        .map(|f| (f.start, f.end, f.rule_id.as_str()))
        .collect();
    // Earliest first; for equal starts, the longest first so it names the merged range.
    ranges.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut merged: Vec<(usize, usize, &str)> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.0 < last.1 => last.1 = last.1.max(r.1),
            _ => merged.push(r),
        }
    }

    let mut out = Vec::with_capacity(content.len());
    let mut pos = 0;
    for (start, end, rule) in merged {
        out.extend_from_slice(content.get(pos..start).unwrap_or_default());
        let mark = marker(rule);
        let body = content.get(start..end).unwrap_or_default();
        let mut first = true;
        for seg in body.split(|&b| b == b'\n') {
            if !first {
                out.push(b'\n');
            }
            first = false;
            redact_segment(seg, &mark, &mut out);
        }
        pos = end;
    }
    out.extend_from_slice(content.get(pos..).unwrap_or_default());
    out
}

/// One line (no `\n`) of a secret range: keep edge whitespace and a trailing `\r`,
/// replace the rest by one marker.
fn redact_segment(seg: &[u8], mark: &str, out: &mut Vec<u8>) {
    let is_ws = |b: &u8| *b == b' ' || *b == b'\t';
    let (body, cr) = match seg.strip_suffix(b"\r") {
        Some(b) => (b, true),
        None => (seg, false),
    };
    let lead = body.iter().take_while(|b| is_ws(b)).count();
    let rest = body.get(lead..).unwrap_or_default();
    let trail = rest.iter().rev().take_while(|b| is_ws(b)).count();
    let middle_len = rest.len() - trail;
    out.extend_from_slice(body.get(..lead).unwrap_or_default());
    if middle_len > 0 {
        out.extend_from_slice(mark.as_bytes());
    }
    out.extend_from_slice(rest.get(middle_len..).unwrap_or_default());
    if cr {
        out.push(b'\r');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(rule: &str, start: usize, end: usize) -> Finding {
        Finding {
            rule_id: rule.into(),
            path: "p".into(),
            line: 1,
            column: 1,
            end_line: 1,
            end_column: 1,
            start,
            end,
            fingerprint: String::new(),
        }
    }

    #[test]
    fn keeps_lines_and_indentation() {
        let c = b"key: |\n  AAAA\n  BBBB\r\nnext";
        let s = 7;
        let e = 7 + "  AAAA\n  BBBB".len();
        let out = redact(c, &[f("r", s, e)]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "key: |\n  [REDACTED:r]\n  [REDACTED:r]\r\nnext"
        );
    }

    #[test]
    fn overlapping_ranges_merge_under_the_first_rule() {
        let c = b"abcdefghij";
        let out = redact(c, &[f("b", 4, 8), f("a", 2, 6)]);
        assert_eq!(out, b"ab[REDACTED:a]ij");
    }

    #[test]
    fn out_of_range_findings_are_ignored() {
        let c = b"short";
        assert_eq!(redact(c, &[f("a", 3, 99), f("b", 4, 2)]), c.to_vec());
    }
}
