//! Shared helpers: render templates, check coverage of secret parts.

use airlock_scan::testgen::{render, split_path, Rendered, Rng};
use airlock_scan::{Finding, Scanner};
use std::sync::OnceLock;

/// The default scanner, built once per test binary.
pub fn scanner() -> &'static Scanner {
    static S: OnceLock<Scanner> = OnceLock::new();
    S.get_or_init(|| Scanner::with_default_rules().expect("default rules compile"))
}

/// The default scanner with the small-input keyword automaton (what the gate uses).
pub fn small_input_scanner() -> &'static Scanner {
    static S: OnceLock<Scanner> = OnceLock::new();
    S.get_or_init(|| {
        Scanner::with_default_rules()
            .expect("default rules compile")
            .with_small_inputs()
    })
}

/// Renders a template with a seed (an `@path=` line is dropped; see [`example`]).
pub fn rendered(template: &str, seed: u64) -> Rendered {
    render(split_path(template).1, &mut Rng::new(seed))
}

/// The path an example is scanned under (its `@path=` line, else `example.txt`) and the
/// rendered example.
pub fn example(template: &str, seed: u64) -> (String, Rendered) {
    let (path, body) = split_path(template);
    (
        path.unwrap_or("example.txt").to_string(),
        render(body, &mut Rng::new(seed)),
    )
}

/// Secret parts (8+ bytes) of `r` that no finding of `rule_id` covers.
pub fn uncovered<'a>(
    text: &str,
    r: &'a Rendered,
    findings: &[Finding],
    rule_id: &str,
) -> Vec<&'a str> {
    r.secret_parts
        .iter()
        .filter(|p| p.len() >= 8)
        .filter(|p| {
            let mut from = 0;
            let mut all_covered = true;
            let mut seen = false;
            while let Some(i) = text[from..].find(p.as_str()) {
                seen = true;
                let (s, e) = (from + i, from + i + p.len());
                if !findings
                    .iter()
                    .any(|f| f.rule_id == rule_id && f.start <= s && e <= f.end)
                {
                    all_covered = false;
                }
                from = s + 1;
            }
            !seen || !all_covered
        })
        .map(String::as_str)
        .collect()
}

/// `path:line: rule` lines for messages (never values).
pub fn describe(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| f.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
