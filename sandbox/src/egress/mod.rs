//! Egress as a capability: an HTTP `CONNECT` proxy that runs outside the sandbox (threads
//! of the worker) and admits only the destinations the signed request allows.
//!
//! How it is wired (namespace mode): the sandbox's network namespace gets its loopback up
//! and one listening socket, `127.0.0.1:`[`EGRESS_PROXY_PORT`](crate::EGRESS_PROXY_PORT),
//! created inside the namespace by the helper and handed to the supervisor over the
//! helper's unix socket (`SCM_RIGHTS`). The proxy accepts on it from the worker's own
//! network namespace, so the generator reaches the proxy and nothing else: the namespace
//! has no other interface or route, seccomp allows only TCP stream sockets, landlock only a
//! connect to that port. The proxy then:
//!
//! 1. reads one request head (bounded in size and time) and parses `CONNECT host:port`
//!    (anything else is refused: no plain-HTTP forwarding);
//! 2. checks `host:port` against the allowlist (exact, case-insensitive host; exact port);
//! 3. resolves the name itself ([`Resolve`], by default the system resolver);
//! 4. refuses the destination if ANY address it resolved to is loopback, link-local
//!    (incl. the metadata addresses), private/shared, unspecified, multicast, broadcast,
//!    reserved, or one of this host's own addresses (see the rule ids below);
//! 5. connects to exactly the addresses it checked (no second lookup, so no DNS
//!    rebinding between check and use), answers `200`, and relays bytes both ways;
//! 6. logs the attempt either way: destination, allowed or the refusing rule id, the
//!    address, bytes up and down, unix time in milliseconds.
//!
//! # Guarantees
//! - Every connection the proxy accepts has a log entry, or is refused (`503`) once the
//!   log holds `max_log_entries`, and then counted in [`EgressLog::unlogged`].
//! - Bounded: concurrent connections, head size, head deadline, connect timeout, idle
//!   timeout on tunnels; two threads per open tunnel.
//! - When a [`Serving`] is dropped (the sandbox run ended) its listener is closed, its
//!   tunnels are shut down and their threads joined: the log is final.
//!
//! # Not guaranteed
//! - What flows inside an allowed tunnel (usually TLS the proxy cannot read): an allowed
//!   destination can receive anything the generator sends it.
//! - That a global address is not, in fact, reachable infrastructure of the worker's own
//!   provider (a NAT gateway's public address, say); the allowlist names hosts the trusted
//!   side chose, and the rest of the path is theirs.
//!
//! # Rule ids (the `reason` of a refused attempt)
//! `egress.not-allowed`, `egress.method`, `egress.malformed`, `egress.header-too-large`,
//! `egress.header-timeout`, `egress.too-many-connections`, `egress.resolve-failed`,
//! `egress.address.{unspecified,loopback,private,link-local,multicast,broadcast,reserved,
//! this-host}`, `egress.connect-failed`, `egress.unfinished` (the run ended before the
//! proxy decided), `egress.internal`; `egress.log-full` is only sent to the client.

mod address;
mod explain;
mod head;
#[cfg(target_os = "linux")]
mod proxy;

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::error::SandboxError;

pub use address::{is_this_host, refusal as address_refusal};
#[cfg(target_os = "linux")]
pub use proxy::{EgressProxy, Serving};

/// Rule id: no allowlist entry matches the requested `host:port`.
pub const NOT_ALLOWED: &str = "egress.not-allowed";
/// Rule id: `max_connections` tunnels are already open.
pub const TOO_MANY_CONNECTIONS: &str = "egress.too-many-connections";
/// Rule id: the name did not resolve (or to nothing).
pub const RESOLVE_FAILED: &str = "egress.resolve-failed";
/// Rule id: no address of the destination accepted a connection in time.
pub const CONNECT_FAILED: &str = "egress.connect-failed";
/// Rule id: the proxy stopped (the run ended) before it decided.
pub const UNFINISHED: &str = "egress.unfinished";
/// Rule id: the proxy could not handle the connection (e.g. no thread).
pub const INTERNAL: &str = "egress.internal";
/// Rule id: the log is full; the connection was refused and only counted.
pub const LOG_FULL: &str = "egress.log-full";
/// Marks an admitted attempt to a destination the worker's operator granted
/// ([`LocalGrant`]): the allowlist and the address checks did not apply.
pub const LOCAL_GRANT: &str = "egress.local-grant";

/// Every rule id a refused attempt can carry.
pub const RULE_IDS: &[&str] = &[
    NOT_ALLOWED,
    head::METHOD,
    head::MALFORMED,
    head::HEADER_TOO_LARGE,
    head::HEADER_TIMEOUT,
    TOO_MANY_CONNECTIONS,
    RESOLVE_FAILED,
    address::UNSPECIFIED,
    address::LOOPBACK,
    address::PRIVATE,
    address::LINK_LOCAL,
    address::MULTICAST,
    address::BROADCAST,
    address::RESERVED,
    address::THIS_HOST,
    CONNECT_FAILED,
    UNFINISHED,
    INTERNAL,
    LOG_FULL,
];

/// Most allowlist entries one proxy takes.
pub const MAX_RULES: usize = 64;

/// One allowed destination: exactly this host name (or IP literal) and port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EgressRule {
    /// Lowercase DNS name (`a-z 0-9 . -`, 1 to 253 bytes), no wildcard.
    pub host: String,
    /// TCP port, not 0.
    pub port: u16,
}

impl EgressRule {
    /// `host:port`.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        EgressRule {
            host: host.into(),
            port,
        }
    }

    fn check(&self, field: &str) -> Result<(), SandboxError> {
        let h = &self.host;
        let ok = !h.is_empty()
            && h.len() <= 253
            && h.bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-')
            && self.port != 0;
        if ok {
            Ok(())
        } else {
            Err(SandboxError::Spec {
                field: field.to_owned(),
                rule: "sandbox.egress.rule",
                reason: "an egress host must be a lowercase DNS name (a-z 0-9 . -, at most 253 \
                         bytes) and its port non-zero"
                    .into(),
            })
        }
    }
}

impl fmt::Display for EgressRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// Name resolution for the proxy. Called once per admitted `CONNECT` with an allowed host
/// name (IP literals are never resolved); every address returned is checked, and the proxy
/// connects only to those.
pub trait Resolve: Send + Sync {
    /// The addresses of `host`.
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<IpAddr>>;
}

/// The system resolver (`getaddrinfo`: `/etc/hosts`, then DNS), in the worker's network
/// namespace.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<IpAddr>> {
        Ok((host, port).to_socket_addrs()?.map(|a| a.ip()).collect())
    }
}

/// TEST ONLY: a stand-in for a real API endpoint. An allowed `host:port` is connected to
/// exactly `addr`, without resolving and WITHOUT the address checks (a test endpoint listens
/// on this host's loopback, which the checks rightly refuse). Production never sets one;
/// every attempt through one is marked [`Attempt::test_endpoint`], and the worker records
/// that in the packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestEndpoint {
    /// The allowed host this endpoint stands in for.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// Where the proxy connects instead.
    pub addr: SocketAddr,
}

impl TestEndpoint {
    /// Parses `host:port=ip:port` (the form the worker's test-only environment variable
    /// uses).
    pub fn parse(s: &str) -> Result<TestEndpoint, SandboxError> {
        let bad = || SandboxError::Spec {
            field: "test endpoint".into(),
            rule: "sandbox.egress.test-endpoint",
            reason: "expected host:port=ip:port".into(),
        };
        let (from, to) = s.split_once('=').ok_or_else(bad)?;
        let (host, port) = from.rsplit_once(':').ok_or_else(bad)?;
        let port: u16 = port.parse().map_err(|_| bad())?;
        let addr: SocketAddr = to.parse().map_err(|_| bad())?;
        let e = TestEndpoint {
            host: host.to_owned(),
            port,
            addr,
        };
        EgressRule::new(host, port).check("test endpoint")?;
        Ok(e)
    }
}

/// The worker operator's grant of one model server on the worker host or its private network
/// (`airlock-worker run --allow-local HOST:PORT`): loopback or private addresses only (never
/// link-local, where the metadata services live). A `CONNECT` to exactly `host:port` (or a
/// plain-HTTP request in absolute form to it: local model servers speak plain HTTP) is
/// connected to `addr` without the allowlist and without the address checks, and logged
/// marked [`LOCAL_GRANT`]. Only the worker's own configuration creates one: nothing in a
/// request can.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalGrant {
    /// The host as the generator asks for it: an IP literal's text, or `localhost`.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Where the proxy connects.
    pub addr: SocketAddr,
}

impl LocalGrant {
    /// Parses `HOST:PORT`: HOST an IPv4 literal, `[IPv6]` or `localhost` (127.0.0.1), whose
    /// address is loopback or private (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7).
    pub fn parse(s: &str) -> Result<LocalGrant, SandboxError> {
        let bad = |reason: &str| SandboxError::Spec {
            field: format!("local grant {s:?}"),
            rule: "sandbox.egress.local-grant",
            reason: reason.to_owned(),
        };
        let t = head::parse_authority_strict(s)
            .ok_or_else(|| bad("expected HOST:PORT with HOST an IP address or localhost"))?;
        let ip = match t.ip {
            Some(ip) => ip.to_canonical(),
            None if t.host == "localhost" => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            None => {
                return Err(bad(
                    "HOST must be an IP address or localhost (no name is resolved)",
                ))
            }
        };
        match address::refusal(ip) {
            Some(address::LOOPBACK) | Some(address::PRIVATE) => {}
            _ => {
                return Err(bad(
                    "only a loopback or private (RFC 1918) address can be granted; public \
                     destinations belong in the request's egress allowlist",
                ))
            }
        }
        Ok(LocalGrant {
            host: t.host,
            port: t.port,
            addr: SocketAddr::new(ip, t.port),
        })
    }
}

impl fmt::Display for LocalGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.addr {
            SocketAddr::V6(_) if self.host != "localhost" => {
                write!(f, "[{}]:{}", self.host, self.port)
            }
            _ => write!(f, "{}:{}", self.host, self.port),
        }
    }
}

/// Limits and plumbing of an [`EgressProxy`].
#[derive(Clone)]
pub struct ProxyConfig {
    /// Tunnels (and pending requests) open at once; more are refused with `503`.
    pub max_connections: usize,
    /// Largest request head (request line and headers), bytes.
    pub max_header_bytes: usize,
    /// Time allowed for the whole request head to arrive.
    pub header_timeout: Duration,
    /// Time allowed to connect to the destination (per address tried).
    pub connect_timeout: Duration,
    /// A tunnel with no byte in either direction for this long is closed. Long by default:
    /// a non-streaming model call can sit silent for minutes.
    pub idle_timeout: Duration,
    /// Log entries kept; connections beyond are refused and only counted.
    pub max_log_entries: usize,
    /// Name resolution (default [`SystemResolver`]).
    pub resolver: Arc<dyn Resolve>,
    /// TEST ONLY; see [`TestEndpoint`]. Empty in production.
    pub unsafe_test_endpoints: Vec<TestEndpoint>,
    /// The worker operator's grants of local destinations; see [`LocalGrant`].
    pub local_grants: Vec<LocalGrant>,
}

impl Default for ProxyConfig {
    /// 16 connections, 8 KiB heads within 10 s, 10 s connect, 300 s idle, 512 log entries,
    /// the system resolver, no test endpoint.
    fn default() -> Self {
        ProxyConfig {
            max_connections: 16,
            max_header_bytes: 8 << 10,
            header_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            max_log_entries: 512,
            resolver: Arc::new(SystemResolver),
            unsafe_test_endpoints: Vec::new(),
            local_grants: Vec::new(),
        }
    }
}

impl fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("max_connections", &self.max_connections)
            .field("max_header_bytes", &self.max_header_bytes)
            .field("header_timeout", &self.header_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_log_entries", &self.max_log_entries)
            .field("unsafe_test_endpoints", &self.unsafe_test_endpoints)
            .field("local_grants", &self.local_grants)
            .finish_non_exhaustive()
    }
}

impl ProxyConfig {
    fn check(&self) -> Result<(), SandboxError> {
        let zero = |field: &str| SandboxError::Spec {
            field: field.to_owned(),
            rule: "sandbox.egress.limit-zero",
            reason: "must be greater than zero".into(),
        };
        if self.max_connections == 0 {
            return Err(zero("max_connections"));
        }
        if self.max_header_bytes == 0 {
            return Err(zero("max_header_bytes"));
        }
        if self.max_log_entries == 0 {
            return Err(zero("max_log_entries"));
        }
        for (name, d) in [
            ("header_timeout", self.header_timeout),
            ("connect_timeout", self.connect_timeout),
            ("idle_timeout", self.idle_timeout),
        ] {
            if d.is_zero() {
                return Err(zero(name));
            }
        }
        Ok(())
    }
}

/// Checks the allowlist and the config (shared by every platform's `EgressProxy::start`).
pub(crate) fn check_setup(rules: &[EgressRule], config: &ProxyConfig) -> Result<(), SandboxError> {
    if (rules.is_empty() && config.local_grants.is_empty()) || rules.len() > MAX_RULES {
        return Err(SandboxError::Spec {
            field: "egress".into(),
            rule: "sandbox.egress.rules",
            reason: format!(
                "{} rules: an egress proxy needs 1 to {MAX_RULES} (or a local grant)",
                rules.len()
            ),
        });
    }
    for (i, r) in rules.iter().enumerate() {
        r.check(&format!("egress[{i}]"))?;
    }
    config.check()
}

/// One connection attempt through the proxy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attempt {
    /// `host:port` as asked (validated and re-formatted), or `-` when the request did not
    /// parse far enough to tell.
    pub destination: String,
    /// A tunnel was opened.
    pub allowed: bool,
    /// The rule id that refused it (see the module docs); `None` when allowed.
    pub reason: Option<&'static str>,
    /// The address connected to, when allowed.
    pub address: Option<SocketAddr>,
    /// Allowed through a TEST-ONLY [`TestEndpoint`] (no resolution, no address checks).
    pub test_endpoint: bool,
    /// Allowed through the operator's [`LocalGrant`] (no allowlist, no address checks).
    pub local_grant: bool,
    /// Bytes from the generator to the destination.
    pub bytes_up: u64,
    /// Bytes from the destination to the generator.
    pub bytes_down: u64,
    /// Unix milliseconds when the connection was accepted (the worker's clock).
    pub at_ms: u64,
}

/// The proxy's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EgressLog {
    /// Every logged attempt, in order of arrival.
    pub attempts: Vec<Attempt>,
    /// Connections refused without an entry because the log was full.
    pub unlogged: u64,
}

#[cfg(not(target_os = "linux"))]
mod unsupported_proxy {
    use super::*;

    /// Never constructed on this platform.
    #[derive(Debug, Clone)]
    pub struct EgressProxy {
        never: std::convert::Infallible,
    }

    /// Never constructed on this platform.
    #[derive(Debug)]
    pub struct Serving {
        _never: std::convert::Infallible,
    }

    #[allow(missing_docs)]
    impl EgressProxy {
        /// Always `SandboxError::Unavailable`: only Linux is supported.
        pub fn start(rules: Vec<EgressRule>, config: ProxyConfig) -> Result<Self, SandboxError> {
            check_setup(&rules, &config)?;
            Err(SandboxError::Unavailable {
                reason: "the egress proxy is implemented for Linux only".into(),
            })
        }
        pub fn serve(&self, _: std::net::TcpListener) -> Result<Serving, SandboxError> {
            match self.never {}
        }
        pub fn log(&self) -> EgressLog {
            match self.never {}
        }
        pub fn rules(&self) -> &[EgressRule] {
            match self.never {}
        }
    }
}
#[cfg(not(target_os = "linux"))]
pub use unsupported_proxy::{EgressProxy, Serving};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_are_unique_and_namespaced() {
        let set: std::collections::BTreeSet<_> = RULE_IDS.iter().collect();
        assert_eq!(set.len(), RULE_IDS.len());
        assert!(RULE_IDS.iter().all(|r| r.starts_with("egress.")));
    }

    #[test]
    fn refuses_bad_rules_and_empty_allowlists() {
        let c = ProxyConfig::default();
        for rules in [
            vec![],
            vec![EgressRule::new("API.example.com", 443)],
            vec![EgressRule::new("api.example.com", 0)],
            vec![EgressRule::new("*.example.com", 443)],
            vec![EgressRule::new("", 443)],
            vec![EgressRule::new("a".repeat(254), 443)],
            vec![EgressRule::new("a.example", 443); MAX_RULES + 1],
        ] {
            assert!(check_setup(&rules, &c).is_err(), "{rules:?}");
        }
        check_setup(&[EgressRule::new("api.example.com", 443)], &c).unwrap();
        let zero = ProxyConfig {
            idle_timeout: Duration::ZERO,
            ..ProxyConfig::default()
        };
        let e = check_setup(&[EgressRule::new("a.example", 443)], &zero).unwrap_err();
        assert_eq!(e.rule(), "sandbox.egress.limit-zero");
    }

    #[test]
    fn test_endpoint_parses_strictly() {
        let e = TestEndpoint::parse("api.test.invalid:443=127.0.0.1:5555").unwrap();
        assert_eq!(e.host, "api.test.invalid");
        assert_eq!(e.port, 443);
        assert_eq!(e.addr, "127.0.0.1:5555".parse().unwrap());
        for bad in [
            "api.test.invalid:443",
            "api.test.invalid=127.0.0.1:1",
            "API.test:443=127.0.0.1:1",
            "a.test:443=localhost:1",
            "a.test:0=127.0.0.1:1",
        ] {
            assert!(TestEndpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn local_grant_takes_loopback_and_private_literals_only() {
        for (good, addr) in [
            ("127.0.0.1:18080", "127.0.0.1:18080"),
            ("localhost:11434", "127.0.0.1:11434"),
            ("[::1]:8000", "[::1]:8000"),
            ("10.0.0.5:8000", "10.0.0.5:8000"),
            ("192.168.1.20:11434", "192.168.1.20:11434"),
            ("172.16.3.4:80", "172.16.3.4:80"),
        ] {
            let g = LocalGrant::parse(good).unwrap();
            assert_eq!(g.addr, addr.parse().unwrap(), "{good}");
            assert_eq!(g.to_string(), good);
        }
        for bad in [
            "169.254.169.254:80",
            "8.8.8.8:53",
            "0.0.0.0:80",
            "224.0.0.1:80",
            "model.lan:8000",
            "127.0.0.1",
            "127.0.0.1:0",
            "[fe80::1]:80",
        ] {
            let e = LocalGrant::parse(bad).unwrap_err();
            assert_eq!(e.rule(), "sandbox.egress.local-grant", "{bad}");
        }
    }

    #[test]
    fn a_proxy_with_only_local_grants_is_accepted() {
        let c = ProxyConfig {
            local_grants: vec![LocalGrant::parse("127.0.0.1:1").unwrap()],
            ..ProxyConfig::default()
        };
        check_setup(&[], &c).unwrap();
        assert!(check_setup(&[], &ProxyConfig::default()).is_err());
    }
}
