//! The body of a refusal: one line the generator's HTTP client can show ("API Error: 403
//! ..."), naming the destination, the rule and the fix. Before, every refusal was bodyless
//! and an agent said only `405 status code (no body)`.
//!
//! Guards against: echoing bytes the generator chose into the answer beyond the destination
//! the proxy already parsed (printable ASCII only, at most 300 bytes).

use super::head::METHOD;
use super::{address, NOT_ALLOWED};

/// The fix for a refusal by `rule`.
fn fix(rule: &str) -> &'static str {
    match rule {
        NOT_ALLOWED => "the job's request does not allow it: submit the job with --egress HOST:PORT for a public destination; a model server on the worker's host or network is granted by the worker's operator with airlock-worker run --allow-local HOST:PORT, HOST exactly as the generator names it (localhost and 127.0.0.1 are different grants)",
        METHOD => "only CONNECT is proxied, and plain http:// only to a destination the worker's operator granted: airlock-worker run --allow-local HOST:PORT, HOST exactly as the generator names it (localhost and 127.0.0.1 are different grants)",
        address::LOOPBACK | address::PRIVATE => "a local or private address is never reached through the request's --egress; the worker's operator grants it with airlock-worker run --allow-local HOST:PORT",
        address::LINK_LOCAL | address::UNSPECIFIED | address::MULTICAST | address::BROADCAST | address::RESERVED | address::THIS_HOST => "no grant reaches this address",
        _ => "see docs/GENERATORS.md (Network)",
    }
}

/// The refusal's body: `airlock egress proxy: DEST refused (RULE): FIX` and a newline.
pub(crate) fn body(rule: &str, destination: Option<&str>) -> String {
    let dest: String = destination
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_graphic())
        .take(300)
        .collect();
    let dest = if dest.is_empty() || dest == "-" {
        "the destination".to_owned()
    } else {
        dest
    };
    format!(
        "airlock egress proxy: {dest} refused ({rule}): {}\n",
        fix(rule)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_destination_the_rule_and_the_fix() {
        let b = body(NOT_ALLOWED, Some("localhost:18080"));
        assert!(
            b.starts_with("airlock egress proxy: localhost:18080 refused (egress.not-allowed): ")
                && b.contains("--egress HOST:PORT")
                && b.contains("--allow-local HOST:PORT"),
            "{b}"
        );
        let b = body(address::LINK_LOCAL, Some("169.254.169.254:80"));
        assert!(!b.contains("--allow-local"), "{b}");
        // Only printable ASCII of the destination, capped.
        let b = body(METHOD, Some(&format!("a\r\nX-Evil: 1{}", "x".repeat(1000))));
        assert!(
            !b.contains('\r') && b.lines().count() == 1 && b.len() < 1000,
            "{b}"
        );
        assert!(body(METHOD, None).contains("the destination"));
    }
}
