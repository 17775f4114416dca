//! Entry point of the `scan` fuzz target (`fuzz/fuzz_targets/scan.rs`): any bytes through
//! [`Scanner::scan_content`] with the built-in detectors, in every form (text with its
//! decoded and joined pieces, UTF-16, binary printable runs). Not a stable API: compiled
//! only under `cfg(fuzzing)` (set by `cargo fuzz`) and for this crate's unit tests, which
//! run the helper on the committed seeds (`fuzz/corpus/scan/`) and on mutated inputs.
//!
//! Guards against: a scan that panics, or costs more than linear time, on hostile bytes.
//! Time is checked by the scanner's own deterministic work counts (`work.rs`), never by a
//! clock, so the check cannot flake on a loaded machine.
//! Invariants asserted:
//! - findings are sorted by position, non-empty ranges, lines and columns from 1, and (for
//!   text and binary files) inside the file;
//! - text handed to the keyword pass is at most [`TEXT_PER_BYTE`] times the input (plus
//!   [`BASE`]): decoded and joined pieces never multiply the input;
//! - bytes walked by the scanner's own loops are at most [`WALK_PER_BYTE`] times the input
//!   (plus [`BASE`]): no pass re-walks the file once per hit;
//! - redacting a text file's findings keeps its number of lines, and a rescan of the result
//!   reports nothing inside a `[REDACTED:...]` marker.
//!
//! Does not check: the regex engine's own search cost (regex-automata's, linear per search)
//! nor the per-match allowlist work (bounded by `LINE_CONTEXT` per match).

use std::sync::OnceLock;

use crate::content::Form;
use crate::work::{measure, Work};
use crate::{redact, Finding, Scanner};

/// Bytes of scanned text allowed per input byte: the file once, its pieces (each at most a
/// 320-byte line prefix per value of at least 8 decoded bytes) and, for a binary file, its
/// printable runs and their pieces.
pub const TEXT_PER_BYTE: u64 = 96;
/// Bytes walked by the scanner's own loops allowed per input byte.
pub const WALK_PER_BYTE: u64 = 64;
/// Allowance for any input, however short (one piece's prefixes).
pub const BASE: u64 = 4096;

/// The path every input is scanned under.
pub const FUZZ_PATH: &str = "config/settings.env";

/// Whether the scan found anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// At least one finding.
    Found,
    /// None.
    Clean,
}

fn scanner() -> &'static Scanner {
    static SCANNER: OnceLock<Scanner> = OnceLock::new();
    SCANNER.get_or_init(|| match Scanner::with_default_detectors() {
        Ok(s) => s,
        Err(e) => panic!("the built-in rules do not load: {e}"),
    })
}

/// Checks the work counts of one scan of `len` input bytes.
fn check_work(len: usize, work: Work) {
    let len = len as u64;
    assert!(
        work.text <= TEXT_PER_BYTE * len + BASE,
        "scanned text grew past linear: {} bytes for {len} input bytes",
        work.text
    );
    assert!(
        work.walk <= WALK_PER_BYTE * len + BASE,
        "the scanner's own loops walked past linear: {} bytes for {len} input bytes",
        work.walk
    );
}

fn check_findings(data: &[u8], form: Form, findings: &[Finding]) {
    for w in findings.windows(2) {
        assert!(
            (w[0].start, w[0].end) <= (w[1].start, w[1].end),
            "findings not sorted by position"
        );
    }
    for f in findings {
        assert!(f.start <= f.end, "finding ends before it starts: {f:?}");
        assert!(f.line >= 1 && f.column >= 1, "line or column 0: {f:?}");
        assert!(
            f.line <= f.end_line,
            "finding ends on an earlier line: {f:?}"
        );
        if matches!(form, Form::Text | Form::Binary | Form::Archive(_)) {
            assert!(
                f.end <= data.len(),
                "finding past the end of the file: {f:?}"
            );
        }
    }
}

/// The `[REDACTED:...]` markers in `text`, as byte ranges.
fn markers(text: &[u8]) -> Vec<(usize, usize)> {
    memchr::memmem::find_iter(text, b"[REDACTED:")
        .filter_map(|open| {
            let close = memchr::memchr(b']', text.get(open..)?)?;
            Some((open, open + close + 1))
        })
        .collect()
}

/// Redacts a text file's findings and rescans the result.
fn check_redaction(data: &[u8], findings: &[Finding]) {
    let clean = redact(data, findings);
    let lines = |b: &[u8]| memchr::memchr_iter(b'\n', b).count();
    assert_eq!(
        lines(&clean),
        lines(data),
        "redaction changed the line count"
    );
    let marks = markers(&clean);
    for f in scanner().scan(FUZZ_PATH, &clean) {
        assert!(
            !marks.iter().any(|&(s, e)| s <= f.start && f.end <= e),
            "a rescan after redaction reports a marker: {f:?}"
        );
    }
}

/// The `scan` target: one scan of `data`, then the invariants above.
pub fn scan(data: &[u8]) -> Outcome {
    let (scanned, work) = measure(|| scanner().scan_content(FUZZ_PATH, data));
    check_work(data.len(), work);
    check_findings(data, scanned.form, &scanned.findings);
    if scanned.form == Form::Text {
        check_redaction(data, &scanned.findings);
    }
    if scanned.findings.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Found
    }
}

#[cfg(test)]
#[path = "fuzzing_tests.rs"]
mod tests;
