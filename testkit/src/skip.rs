//! The one way a test skips: it prints `SKIPPED: <why>` and returns, or, when the `CI`
//! variable is set to anything but the empty string, fails (a runner must provide what the
//! test needs: a skip there is a failure).
//!
//! Guards against: silent skips (a test that needs a kernel feature, an engine or a package
//! and passes without it), helpers that disagree on what counts as CI (`CI` set, or set to
//! `true`), and a skip decided from an error message's wording instead of a rule id.

/// Whether this run is CI: `CI` set and not empty.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty())
}

/// Skips the calling test for `why` (what is missing and how to get it); panics under CI.
/// The caller returns right after.
pub fn skip(why: &str) {
    assert!(!in_ci(), "SKIPPED in CI (a skip is a failure here): {why}");
    eprintln!("SKIPPED: {why}");
}

/// The rule id the sandbox gives when it cannot confine a generator on this machine.
pub const SANDBOX_UNAVAILABLE: &str = "sandbox.unavailable";

/// Whether `stderr` of a failed worker run names the rule id `rule` (in parentheses, as every
/// refusal line writes it): the key a test skips on, never the message text around it.
pub fn names_rule(stderr: &[u8], rule: &str) -> bool {
    String::from_utf8_lossy(stderr).contains(&format!("({rule})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_id_is_matched_in_parentheses_only() {
        let line = b"error: sandbox unavailable (sandbox.unavailable): no user namespaces";
        assert!(names_rule(line, SANDBOX_UNAVAILABLE));
        assert!(!names_rule(
            b"the sandbox.unavailable rule",
            SANDBOX_UNAVAILABLE
        ));
        assert!(!names_rule(b"error: sandbox failed", SANDBOX_UNAVAILABLE));
    }
}
