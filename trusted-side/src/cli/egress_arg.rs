//! `--egress HOST:PORT` as typed on a command line, held to the request's egress rule shape.
//!
//! Guards against: a rule the worker's proxy would read differently than the person meant (a
//! URL's path, an uppercase host, port 0, a wildcard) and an address that no request may grant
//! (an IPv6 literal on the worker's own network points at the operator's `--allow-local`).

/// `HOST:PORT` -> an egress rule: the host lowercased, then held to `request.egress` (a DNS
/// name of `a-z 0-9 . -`, at most 253 bytes, no wildcard) and a port from 1 to 65535. A URL
/// is taken as its host and port (`https://h/...` is `h:443`, `http://h` is `h:80`); an IPv6
/// literal (`[::1]:18080`) is no rule: a local one points at the worker's `--allow-local`.
pub(crate) fn parse_egress(s: &str) -> Result<airlock_core::format::EgressRule, String> {
    let (authority, default_port) = match s.split_once("://") {
        Some((scheme, rest)) => {
            let port = match scheme.to_ascii_lowercase().as_str() {
                "https" => 443,
                "http" => 80,
                _ => {
                    return Err(format!(
                        "{s:?}: expected HOST:PORT or an http(s):// URL (request.egress)"
                    ))
                }
            };
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            (&rest[..end], Some(port))
        }
        None => (s, None),
    };
    if let Some(v6) = authority.strip_prefix('[') {
        let (addr, port) = v6.split_once(']').unwrap_or((v6, ""));
        let port = port.strip_prefix(':').unwrap_or("443");
        if addr.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!(
                "{s:?}: not an IPv6 address in brackets (request.egress)"
            ));
        }
        let dest = format!("[{addr}]:{port}");
        return Err(if airlock_sandbox::LocalGrant::parse(&dest).is_ok() {
            format!("{s:?}: an address on the worker's host or network, which a request never grants (request.egress); the worker's operator does: airlock-worker run --allow-local {dest}")
        } else {
            format!("{s:?}: egress rules name hosts, not IPv6 addresses (request.egress): give the host's DNS name")
        });
    }
    let (host, port) = match (authority.rsplit_once(':'), default_port) {
        (Some((h, p)), _) => (h, p.to_owned()),
        (None, Some(p)) => (authority, p.to_string()),
        (None, None) => return Err(format!("{s:?}: expected HOST:PORT (request.egress)")),
    };
    let host = host.to_ascii_lowercase();
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| format!("{s:?}: port must be 1 to 65535 (request.egress)"))?;
    let ok = !host.is_empty()
        && host.len() <= 253
        && host
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-');
    if !ok {
        return Err(format!(
            "{s:?}: host must be a DNS name of a-z 0-9 . - (no wildcard, at most 253 bytes) \
             (request.egress)"
        ));
    }
    Ok(airlock_core::format::EgressRule { host, port })
}

#[cfg(test)]
mod tests {
    use super::parse_egress;

    fn rule(s: &str) -> (String, u16) {
        let r = parse_egress(s).unwrap();
        (r.host, r.port)
    }

    #[test]
    fn an_egress_url_is_its_host_and_port() {
        assert_eq!(
            rule("https://api.anthropic.com"),
            ("api.anthropic.com".into(), 443)
        );
        assert_eq!(
            rule("HTTPS://API.example.com/v1/x?y#z"),
            ("api.example.com".into(), 443)
        );
        assert_eq!(
            rule("http://api.example.com"),
            ("api.example.com".into(), 80)
        );
        assert_eq!(
            rule("https://api.example.com:8443/v1"),
            ("api.example.com".into(), 8443)
        );
        assert_eq!(rule("api.example.com:443"), ("api.example.com".into(), 443));
        for bad in ["ftp://h", "https://", "https://h:0", "https://*.h", "h"] {
            let e = parse_egress(bad).unwrap_err();
            assert!(e.contains("request.egress"), "{bad}: {e}");
        }
    }

    #[test]
    fn an_ipv6_literal_is_named_as_such_and_a_local_one_points_at_allow_local() {
        let e = parse_egress("[::1]:18080").unwrap_err();
        assert!(
            e.contains("airlock-worker run --allow-local [::1]:18080") && !e.contains("DNS name"),
            "{e}"
        );
        let e = parse_egress("[2001:db8::1]:443").unwrap_err();
        assert!(
            e.contains("not IPv6 addresses") && !e.contains("--allow-local"),
            "{e}"
        );
        let e = parse_egress("[nope]:443").unwrap_err();
        assert!(e.contains("not an IPv6 address"), "{e}");
    }
}
