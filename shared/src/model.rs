//! Model names: when the name a model server answered with counts as the model a request
//! asked for. APIs answer an alias (`claude-sonnet-4-5`) with a dated snapshot
//! (`claude-sonnet-4-5-20250929`); a reviewer must not be told "mismatch" for that, and must
//! be told for another model family. One definition, used by the gate's `model-mismatch` and
//! `model-drift` and documented in `docs/FORMATS.md` ("Model names").
//!
//! Guards against: a lookalike passing as a snapshot (`M-2026120` , `M-20261203x`,
//! `M-mini-20261203`, `M-20261399` are not snapshots of `M`), and a prefix match standing in
//! for a family match (`gpt-4` does not answer `gpt-4o`).

/// `model_requested` when nothing specific was asked for (`airlock submit` without
/// `--model`): no model reaches the generator and no name is compared.
pub const MODEL_UNSPECIFIED: &str = "unspecified";

/// Whether `reported` (the name the server answered with) answers `requested` (the request's
/// model): the same name, or a dated snapshot of it, that is `requested` followed by exactly
/// one of `-YYYYMMDD`, `-YYYY-MM-DD` or `@YYYYMMDD` (a real calendar month 01-12 and day
/// 01-31). Anything else, including another family sharing a prefix, does not match.
pub fn answers(requested: &str, reported: &str) -> bool {
    if requested.is_empty() {
        return false;
    }
    if reported == requested {
        return true;
    }
    let Some(rest) = reported.strip_prefix(requested) else {
        return false;
    };
    let b = rest.as_bytes();
    match b.first() {
        Some(b'-') if b.len() == 9 => date(&b[1..5], &b[5..7], &b[7..9]),
        Some(b'-') if b.len() == 11 && b[5] == b'-' && b[8] == b'-' => {
            date(&b[1..5], &b[6..8], &b[9..11])
        }
        Some(b'@') if b.len() == 9 => date(&b[1..5], &b[5..7], &b[7..9]),
        _ => false,
    }
}

fn date(year: &[u8], month: &[u8], day: &[u8]) -> bool {
    let n = |d: &[u8]| -> Option<u32> {
        d.iter().try_fold(0u32, |acc, c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    matches!((n(year), n(month), n(day)), (Some(y), Some(m), Some(d)) if y >= 1970 && (1..=12).contains(&m) && (1..=31).contains(&d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dated_snapshot_answers_its_alias() {
        for got in [
            "claude-sonnet-4-5",
            "claude-sonnet-4-5-20250929",
            "claude-sonnet-4-5-2025-09-29",
            "claude-sonnet-4-5@20250929",
        ] {
            assert!(answers("claude-sonnet-4-5", got), "{got}");
        }
        assert!(answers("M", "M-20261203"));
    }

    #[test]
    fn another_family_or_a_lookalike_does_not() {
        for got in [
            "claude-opus-4-1-20250805",
            "claude-sonnet-4-5-mini-20250929",
            "claude-sonnet-4-50",
            "claude-sonnet-4-5-2025092",
            "claude-sonnet-4-5-202509299",
            "claude-sonnet-4-5-20251329",
            "claude-sonnet-4-5-20250900",
            "claude-sonnet-4-5-2025-0929",
            "claude-sonnet-4-5-2025_09_29",
            "claude-sonnet-4-5@2025-09-29",
            "claude-sonnet-4-5-20250929-20250929",
            "claude-sonnet-4-5-１２３４５６７８",
            "claude-sonnet-4",
            "",
        ] {
            assert!(!answers("claude-sonnet-4-5", got), "{got}");
        }
        assert!(!answers("gpt-4", "gpt-4o"));
        assert!(!answers("gpt-4", "gpt-4o-20240513"));
        // A request for a snapshot is not answered by the alias nor by another snapshot.
        assert!(!answers("M-20261203", "M"));
        assert!(!answers("M-20261203", "M-20261204"));
        assert!(!answers("", "-20261203"));
    }
}
