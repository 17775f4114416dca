//! `submit --egress` destinations the worker's egress proxy can never reach, refused on the
//! trusted side before anything is packed (rule `submit.egress-unreachable`).
//!
//! Guards against: a job that can only fail on the worker (its model server on loopback, a
//! private address or a metadata service), and a refusal line that points an operator at a
//! grant that cannot help (`--allow-local` never reaches link-local or metadata addresses).

use airlock_core::format::EgressRule;
use anyhow::Result;

/// Names that always resolve to where the worker's egress proxy never connects: loopback
/// (RFC 6761 `localhost`) and the cloud metadata services' names (link-local addresses).
const UNREACHABLE_NAMES: &[(&str, &str)] = &[
    ("localhost", "egress.address.loopback"),
    ("metadata.google.internal", "egress.address.link-local"),
    ("metadata.goog", "egress.address.link-local"),
];

/// Refuses an `--egress` destination the worker's egress proxy can never reach (rule
/// `submit.egress-unreachable`): an IPv4 literal the proxy's address rules refuse
/// (loopback, private, shared, link-local and metadata, unspecified, multicast, reserved),
/// a numeric host that is not a canonical dotted quad (resolvers read `127.1` or
/// `2130706433` as loopback), `localhost` or a name under it, and the metadata services'
/// names. The error points at the worker operator's grant, `--allow-local`.
pub fn check_egress_reachable(rule: &EgressRule) -> Result<()> {
    let host = rule.host.as_str();
    let last = host.rsplit('.').next().unwrap_or(host);
    let numeric =
        !last.is_empty() && (last.bytes().all(|c| c.is_ascii_digit()) || last.starts_with("0x"));
    let why = if numeric {
        match host.parse::<std::net::Ipv4Addr>() {
            Ok(ip) if ip.to_string() == host => {
                airlock_sandbox::egress::address_refusal(std::net::IpAddr::V4(ip))
            }
            _ => Some("egress.address.non-canonical"),
        }
    } else {
        UNREACHABLE_NAMES
            .iter()
            .find(|(name, _)| {
                host == *name || host.strip_suffix(name).is_some_and(|p| p.ends_with('.'))
            })
            .map(|(_, rule)| *rule)
    };
    let Some(why) = why else {
        return Ok(());
    };
    let dest = format!("{host}:{}", rule.port);
    Err(crate::exit::Refused(unreachable_line(&dest, why)).into())
}

/// The one line of `submit.egress-unreachable` for `dest` (refused by the proxy's rule
/// `why`): it points at the worker's `--allow-local` only when the worker would take that
/// grant (loopback, private and shared addresses, `localhost`); a metadata or link-local
/// address, or a name that only resolves there, no grant reaches.
pub fn unreachable_line(dest: &str, why: &str) -> String {
    if airlock_sandbox::LocalGrant::parse(dest).is_ok() {
        format!(
            "--egress {dest} refused (submit.egress-unreachable): the worker's egress proxy never connects there ({why}); a model server on the worker host or its network is granted by the worker's operator: airlock-worker run --allow-local {dest}"
        )
    } else {
        format!(
            "--egress {dest} refused (submit.egress-unreachable): the worker's egress proxy never connects there ({why}), and no grant reaches it (the worker's --allow-local takes loopback, private and shared addresses and localhost only)"
        )
    }
}
