//! Reads and parses the head of one proxy request written by the sandboxed generator:
//! `CONNECT host:port HTTP/1.1`, header lines, an empty line.
//!
//! Guards against: heads that never end (size cap, overall deadline, not per read: a
//! byte every few seconds does not keep the connection), non-ASCII or control bytes in the
//! request line, methods other than `CONNECT` (no plain-HTTP forwarding, so no request
//! smuggling through the proxy), authorities that are not exactly `host:port` (userinfo,
//! paths, empty or zero ports, over-long or odd names, IPv6 without brackets), and
//! untrusted text reaching the log (only a re-formatted, validated `host:port` is logged).
//! On `Ok`: a lowercase host of `a-z 0-9 . -` (1 to 253 bytes) or an IP literal, and a port
//! from 1 to 65535; plus whatever bytes followed the head (forwarded to the destination).
//! Does not check: the header lines (ignored, never forwarded), or whether the destination
//! is allowed; the proxy does that.

use std::io::{ErrorKind, Read};
use std::net::{IpAddr, Ipv6Addr, TcpStream};
use std::time::Instant;

/// Rule id: the request is not `CONNECT`.
pub const METHOD: &str = "egress.method";
/// Rule id: the request head does not parse.
pub const MALFORMED: &str = "egress.malformed";
/// Rule id: the request head is larger than `max_header_bytes`.
pub const HEADER_TOO_LARGE: &str = "egress.header-too-large";
/// Rule id: the request head did not arrive within `header_timeout`.
pub const HEADER_TIMEOUT: &str = "egress.header-timeout";

/// Where the generator asked to go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// Lowercase name, or the IP literal's text (IPv6 without brackets).
    pub(crate) host: String,
    pub(crate) port: u16,
    /// Set when the host is an IP literal (never resolved).
    pub(crate) ip: Option<IpAddr>,
}

impl Target {
    /// `host:port`, `[v6]:port` for IPv6 literals.
    pub(crate) fn destination(&self) -> String {
        match self.ip {
            Some(IpAddr::V6(_)) => format!("[{}]:{}", self.host, self.port),
            _ => format!("{}:{}", self.host, self.port),
        }
    }
}

/// A request the proxy answers with an error status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    pub(crate) rule: &'static str,
    /// The HTTP status line's code and reason.
    pub(crate) status: &'static str,
    /// The destination, when it could be told (a non-CONNECT request in absolute form).
    pub(crate) destination: Option<String>,
}

fn refused(rule: &'static str, status: &'static str) -> Refused {
    Refused {
        rule,
        status,
        destination: None,
    }
}

/// Reads until the empty line ending the head: `(head, bytes after it)`.
pub(crate) fn read_head(
    mut stream: &TcpStream,
    max_bytes: usize,
    deadline: Instant,
) -> Result<(Vec<u8>, Vec<u8>), Refused> {
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(refused(HEADER_TIMEOUT, "408 Request Timeout"));
        }
        if stream.set_read_timeout(Some(left)).is_err() {
            return Err(refused(MALFORMED, "400 Bad Request"));
        }
        let n = match stream.read(&mut chunk) {
            Ok(0) => return Err(refused(MALFORMED, "400 Bad Request")),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(refused(HEADER_TIMEOUT, "408 Request Timeout"))
            }
            Err(_) => return Err(refused(MALFORMED, "400 Bad Request")),
        };
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = find_end(&buf[from..]) {
            let end = from + pos + 4;
            if end > max_bytes {
                return Err(refused(
                    HEADER_TOO_LARGE,
                    "431 Request Header Fields Too Large",
                ));
            }
            let rest = buf.split_off(end);
            return Ok((buf, rest));
        }
        if buf.len() > max_bytes {
            return Err(refused(
                HEADER_TOO_LARGE,
                "431 Request Header Fields Too Large",
            ));
        }
    }
}

fn find_end(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n")
}

/// Parses a complete head (ending in the empty line).
pub(crate) fn parse_connect(head: &[u8]) -> Result<Target, Refused> {
    let bad = || refused(MALFORMED, "400 Bad Request");
    let line_end = head.windows(2).position(|w| w == b"\r\n").ok_or_else(bad)?;
    let line = &head[..line_end];
    if line.is_empty() || !line.iter().all(|&b| (0x20..0x7f).contains(&b)) {
        return Err(bad());
    }
    let line = std::str::from_utf8(line).map_err(|_| bad())?;
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(bad());
    }
    if method != "CONNECT" {
        return Err(Refused {
            rule: METHOD,
            status: "405 Method Not Allowed",
            destination: absolute_form_destination(target),
        });
    }
    parse_authority(target, None).ok_or_else(bad)
}

/// A plain-HTTP request in absolute form (`GET http://host:port/path HTTP/1.1`), for a
/// destination the worker's operator granted (`--allow-local`) and only there: the target
/// and the head rewritten for the origin (origin-form request line; `Proxy-*`, `Connection`
/// and `Keep-Alive` headers dropped; `Connection: close`, so that each request takes its own
/// pass through the proxy and its own log entry). `None` for anything else (continuation
/// lines, bytes outside printable ASCII, `https://`).
pub(crate) fn parse_forward(head: &[u8]) -> Option<(Target, Vec<u8>)> {
    let text = std::str::from_utf8(head).ok()?;
    let body = text.strip_suffix("\r\n\r\n")?;
    let mut lines = body.split("\r\n");
    let line = lines.next()?;
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
    };
    if !token(method) || method == "CONNECT" || (version != "HTTP/1.1" && version != "HTTP/1.0") {
        return None;
    }
    let rest = target.strip_prefix("http://")?;
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    let t = parse_authority(authority, Some(80))?;
    if !path.bytes().all(|c| (0x21..0x7f).contains(&c)) {
        return None;
    }
    let path = match path.chars().next() {
        None => "/".to_owned(),
        Some('?') => format!("/{path}"),
        Some(_) => path.to_owned(),
    };
    let mut out = format!("{method} {path} {version}\r\n");
    for h in lines {
        if h.starts_with([' ', '\t']) || !h.bytes().all(|c| c == b'\t' || (0x20..0x7f).contains(&c))
        {
            return None;
        }
        let (name, _) = h.split_once(':')?;
        let lower = name.trim().to_ascii_lowercase();
        if lower.starts_with("proxy-") || lower == "connection" || lower == "keep-alive" {
            continue;
        }
        out.push_str(h);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    Some((t, out.into_bytes()))
}

/// `host:port` (or `[v6]:port`), the port required.
pub(crate) fn parse_authority_strict(a: &str) -> Option<Target> {
    parse_authority(a, None)
}

/// `host:port` (or `[v6]:port`); `default_port` when the port may be omitted.
fn parse_authority(a: &str, default_port: Option<u16>) -> Option<Target> {
    let (host, port, ip) = if let Some(rest) = a.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        let v6: Ipv6Addr = h.parse().ok()?;
        let port = match after.strip_prefix(':') {
            Some(p) => p,
            None if after.is_empty() => "",
            None => return None,
        };
        (v6.to_string(), port, Some(IpAddr::V6(v6)))
    } else {
        let (h, p) = match a.rsplit_once(':') {
            Some((h, p)) => (h, p),
            None => (a, ""),
        };
        if h.is_empty()
            || h.len() > 253
            || !h
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'-')
        {
            return None;
        }
        let h = h.to_ascii_lowercase();
        let ip = h.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4);
        (h, p, ip)
    };
    let port = if port.is_empty() {
        default_port?
    } else {
        if port.len() > 5 || !port.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        port.parse::<u16>().ok().filter(|p| *p != 0)?
    };
    Some(Target { host, port, ip })
}

/// `http://host[:port]/...` -> `host:port`, for the log of a refused plain-HTTP request.
fn absolute_form_destination(target: &str) -> Option<String> {
    let (rest, default) = if let Some(r) = target.strip_prefix("http://") {
        (r, 80)
    } else if let Some(r) = target.strip_prefix("https://") {
        (r, 443)
    } else {
        return None;
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    parse_authority(authority, Some(default)).map(|t| t.destination())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_rewrites_an_absolute_form_request_for_the_origin() {
        let (t, head) = parse_forward(
            b"POST http://127.0.0.1:18080/v1/messages?beta=true HTTP/1.1\r\nHost: 127.0.0.1:18080\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n",
        )
        .unwrap();
        assert_eq!(t.destination(), "127.0.0.1:18080");
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "POST /v1/messages?beta=true HTTP/1.1\r\nHost: 127.0.0.1:18080\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
        );
        let (t, head) = parse_forward(b"GET http://localhost HTTP/1.0\r\n\r\n").unwrap();
        assert_eq!(t.destination(), "localhost:80");
        assert!(head.starts_with(b"GET / HTTP/1.0\r\n"));
    }

    #[test]
    fn forward_refuses_folds_https_and_connect() {
        for bad in [
            "GET https://a:443/ HTTP/1.1\r\n\r\n",
            "CONNECT a:443 HTTP/1.1\r\n\r\n",
            "GET http://a:1/ HTTP/1.1\r\nX: y\r\n folded\r\n\r\n",
            "GET http://a:1/\x01 HTTP/1.1\r\n\r\n",
            "GET /relative HTTP/1.1\r\n\r\n",
        ] {
            assert!(parse_forward(bad.as_bytes()).is_none(), "{bad:?}");
        }
    }

    fn parse(s: &str) -> Result<Target, Refused> {
        parse_connect(s.as_bytes())
    }

    #[test]
    fn parses_connect_and_lowercases_the_host() {
        let t = parse("CONNECT API.Example.COM:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(t.host, "api.example.com");
        assert_eq!(t.port, 443);
        assert_eq!(t.ip, None);
        assert_eq!(t.destination(), "api.example.com:443");
        let t = parse("CONNECT 169.254.169.254:80 HTTP/1.0\r\n\r\n").unwrap();
        assert_eq!(t.ip, Some("169.254.169.254".parse().unwrap()));
        let t = parse("CONNECT [::FFFF:127.0.0.1]:443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(t.destination(), "[::ffff:127.0.0.1]:443");
    }

    #[test]
    fn refuses_other_methods_naming_the_destination() {
        let r = parse("GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\n\r\n").unwrap_err();
        assert_eq!(r.rule, METHOD);
        assert_eq!(r.destination.as_deref(), Some("169.254.169.254:80"));
        let r = parse("connect a.example:443 HTTP/1.1\r\n\r\n").unwrap_err();
        assert_eq!(r.rule, METHOD);
        assert_eq!(r.destination, None);
    }

    #[test]
    fn refuses_malformed_authorities() {
        for line in [
            "CONNECT a.example HTTP/1.1",
            "CONNECT a.example: HTTP/1.1",
            "CONNECT a.example:0 HTTP/1.1",
            "CONNECT a.example:65536 HTTP/1.1",
            "CONNECT a.example:+443 HTTP/1.1",
            "CONNECT a.example:0443443 HTTP/1.1",
            "CONNECT user@a.example:443 HTTP/1.1",
            "CONNECT a.example:443/x HTTP/1.1",
            "CONNECT a_b.example:443 HTTP/1.1",
            "CONNECT ::1:443 HTTP/1.1",
            "CONNECT [::1]443 HTTP/1.1",
            "CONNECT [not-v6]:443 HTTP/1.1",
            "CONNECT :443 HTTP/1.1",
            "CONNECT  a.example:443 HTTP/1.1",
            "CONNECT a.example:443 HTTP/2",
            "CONNECT a.example:443",
            "CONNECT a.example:443 HTTP/1.1 extra",
            "CONNECT a.\u{e9}xample:443 HTTP/1.1",
            "CONNECT a.example:443\tHTTP/1.1",
        ] {
            let r = parse(&format!("{line}\r\n\r\n")).unwrap_err();
            assert_eq!(r.rule, MALFORMED, "{line:?}");
        }
        let long = format!("CONNECT {}.example:443 HTTP/1.1\r\n\r\n", "a".repeat(250));
        assert_eq!(parse(&long).unwrap_err().rule, MALFORMED);
    }

    #[test]
    fn finds_the_end_of_the_head() {
        assert_eq!(find_end(b"a\r\n\r\nrest"), Some(1));
        assert_eq!(find_end(b"a\r\n\r"), None);
        assert_eq!(find_end(b"a\n\n"), None);
    }
}
