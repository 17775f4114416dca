//! The egress proxy, first on its own (a client on the host's loopback), then as the only
//! way out of a namespace sandbox. A refused destination must never see a connection, and
//! every attempt must be in the log.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use airlock_sandbox::egress::{
    Attempt, EgressRule, ProxyConfig, Resolve, Serving, TestEndpoint, RULE_IDS,
};
use airlock_sandbox::{
    spawn, spawn_with_egress, EgressProxy, ExitStatus, Mode, Network, SandboxError, SandboxKind,
    EGRESS_PROXY_PORT, HELPER_SUBCOMMAND,
};

use crate::support::*;

/// Test-only names: `metadata.test.invalid` -> 169.254.169.254, `rebind.test.invalid` -> a
/// public address and loopback; everything else through the system resolver. Counts calls.
struct TestResolver {
    map: HashMap<&'static str, Vec<IpAddr>>,
    calls: AtomicUsize,
}

impl TestResolver {
    fn new() -> Arc<TestResolver> {
        let mut map = HashMap::new();
        map.insert(
            "metadata.test.invalid",
            vec!["169.254.169.254".parse().unwrap()],
        );
        map.insert(
            "rebind.test.invalid",
            vec![
                "93.184.216.34".parse().unwrap(),
                "127.0.0.1".parse().unwrap(),
            ],
        );
        Arc::new(TestResolver {
            map,
            calls: AtomicUsize::new(0),
        })
    }
}

impl Resolve for TestResolver {
    fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<IpAddr>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match self.map.get(host) {
            Some(v) => Ok(v.clone()),
            None => airlock_sandbox::egress::SystemResolver.resolve(host, port),
        }
    }
}

const API: &str = "api.test.invalid";

/// A proxy allowing `api.test.invalid:443` (the test endpoint `ep`), `localhost:<ep port>`,
/// `metadata.test.invalid:80`, `rebind.test.invalid:443` and `169.254.169.254:80`.
fn proxy_for(
    ep: &Endpoint,
    resolver: Arc<TestResolver>,
    tweak: impl FnOnce(&mut ProxyConfig),
) -> EgressProxy {
    let rules = vec![
        EgressRule::new(API, 443),
        EgressRule::new("localhost", ep.addr.port()),
        EgressRule::new("metadata.test.invalid", 80),
        EgressRule::new("rebind.test.invalid", 443),
        EgressRule::new("169.254.169.254", 80),
    ];
    let mut config = ProxyConfig {
        resolver,
        unsafe_test_endpoints: vec![TestEndpoint {
            host: API.into(),
            port: 443,
            addr: ep.addr,
        }],
        ..ProxyConfig::default()
    };
    tweak(&mut config);
    EgressProxy::start(rules, config).unwrap()
}

/// The proxy serving a listener on the host's loopback.
fn serve_on_host(proxy: &EgressProxy) -> (Serving, SocketAddr) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    (proxy.serve(l).unwrap(), addr)
}

/// Sends `head` and reads the response head: `(stream, status code, head text)`.
fn ask(proxy: SocketAddr, head: &str) -> (TcpStream, String, String) {
    let mut s = TcpStream::connect(proxy).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut b = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(1) => got.push(b[0]),
            _ => break,
        }
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    let code = text.split(' ').nth(1).unwrap_or("EOF").to_owned();
    (s, code, text)
}

fn connect(proxy: SocketAddr, dest: &str) -> (TcpStream, String, String) {
    ask(
        proxy,
        &format!("CONNECT {dest} HTTP/1.1\r\nHost: {dest}\r\n\r\n"),
    )
}

fn only(log: &[Attempt]) -> &Attempt {
    assert_eq!(log.len(), 1, "{log:#?}");
    &log[0]
}

#[test]
fn connect_to_the_allowed_endpoint_tunnels_and_is_logged_with_bytes() {
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |_| {});
    let (serving, addr) = serve_on_host(&proxy);
    let (mut s, code, head) = connect(addr, "API.test.invalid:443");
    assert_eq!(code, "200", "{head}");
    s.write_all(b"ping").unwrap();
    let mut buf = [0u8; 4];
    s.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"PING");
    drop(s);
    drop(serving);
    let log = proxy.log();
    let a = only(&log.attempts);
    assert_eq!(a.destination, "api.test.invalid:443");
    assert!(a.allowed && a.test_endpoint, "{a:?}");
    assert_eq!(a.reason, None);
    assert_eq!(a.address, Some(ep.addr));
    assert_eq!((a.bytes_up, a.bytes_down), (4, 4));
    assert!(a.at_ms > 1_700_000_000_000);
    assert_eq!(ep.accepted(), 1);
}

#[test]
fn host_not_on_the_allowlist_is_refused_and_logged() {
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |_| {});
    let (serving, addr) = serve_on_host(&proxy);
    for dest in [
        "example.com:443",
        "api.test.invalid:80",
        "api.test.invalid.:443",
    ] {
        let (_, code, head) = connect(addr, dest);
        assert_eq!(code, "403", "{dest}: {head}");
        assert!(
            head.contains("X-Airlock-Egress: egress.not-allowed"),
            "{head}"
        );
    }
    drop(serving);
    let log = proxy.log().attempts;
    let dests: Vec<&str> = log.iter().map(|a| a.destination.as_str()).collect();
    assert_eq!(
        dests,
        [
            "example.com:443",
            "api.test.invalid:80",
            "api.test.invalid.:443"
        ]
    );
    assert!(log
        .iter()
        .all(|a| !a.allowed && a.reason == Some("egress.not-allowed") && a.address.is_none()));
    assert_eq!(ep.accepted(), 0);
}

/// `localhost` is allowed by name, but the system resolver says 127.0.0.1 (or ::1).
#[test]
fn allowed_name_resolving_to_loopback_is_refused() {
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |_| {});
    let (serving, addr) = serve_on_host(&proxy);
    let (_, code, head) = connect(addr, &format!("localhost:{}", ep.addr.port()));
    assert_eq!(code, "403", "{head}");
    drop(serving);
    let log = proxy.log().attempts;
    let a = only(&log);
    assert!(!a.allowed);
    assert_eq!(a.reason, Some("egress.address.loopback"), "{a:?}");
    assert_eq!(ep.accepted(), 0, "the loopback endpoint was reached");
}

#[test]
fn allowed_name_resolving_to_the_metadata_address_is_refused() {
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |_| {});
    let (serving, addr) = serve_on_host(&proxy);
    for dest in ["metadata.test.invalid:80", "169.254.169.254:80"] {
        let (_, code, head) = connect(addr, dest);
        assert_eq!(code, "403", "{dest}: {head}");
        assert!(head.contains("egress.address.link-local"), "{head}");
    }
    drop(serving);
    let log = proxy.log().attempts;
    assert_eq!(log.len(), 2);
    assert!(log
        .iter()
        .all(|a| !a.allowed && a.reason == Some("egress.address.link-local")));
}

/// One lookup per attempt, and one bad address in the answer refuses the destination: no
/// second lookup can swap a checked address for an unchecked one.
#[test]
fn mixed_answer_with_loopback_is_refused_after_a_single_lookup() {
    let ep = Endpoint::start();
    let resolver = TestResolver::new();
    let proxy = proxy_for(&ep, Arc::clone(&resolver), |_| {});
    let (serving, addr) = serve_on_host(&proxy);
    let (_, code, _) = connect(addr, "rebind.test.invalid:443");
    assert_eq!(code, "403");
    drop(serving);
    assert_eq!(resolver.calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        only(&proxy.log().attempts).reason,
        Some("egress.address.loopback")
    );
}

#[test]
fn plain_http_through_the_proxy_is_refused_naming_the_destination() {
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |_| {});
    let (serving, addr) = serve_on_host(&proxy);
    let (mut s, code, head) = ask(
        addr,
        "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n",
    );
    // Forbidden, with a body that names the destination, the rule and the grant that is
    // missing (an agent shows it: before, "405 status code (no body)").
    assert_eq!(code, "403", "{head}");
    let mut body = Vec::new();
    let _ = s.read_to_end(&mut body);
    let body = String::from_utf8_lossy(&body);
    assert!(
        body.starts_with("airlock egress proxy: 169.254.169.254:80 refused (egress.method): ")
            && body.contains("--allow-local HOST:PORT"),
        "{body}"
    );
    let (_, code, _) = ask(addr, "GET /latest/meta-data/ HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(code, "405");
    let (_, code, _) = ask(addr, "CONNECT api.test.invalid HTTP/1.1\r\n\r\n");
    assert_eq!(code, "400");
    drop(serving);
    let log = proxy.log().attempts;
    assert_eq!(log.len(), 3);
    assert_eq!(log[0].destination, "169.254.169.254:80");
    assert_eq!(log[0].reason, Some("egress.method"));
    assert_eq!(log[1].reason, Some("egress.method"));
    assert_eq!(log[2].destination, "-");
    assert_eq!(log[2].reason, Some("egress.malformed"));
    assert_eq!(ep.accepted(), 0);
}

#[test]
fn oversized_and_silent_request_heads_are_refused() {
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |c| {
        c.max_header_bytes = 512;
        c.header_timeout = Duration::from_millis(300);
    });
    let (serving, addr) = serve_on_host(&proxy);
    let big = format!(
        "CONNECT api.test.invalid:443 HTTP/1.1\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(600)
    );
    let (_, code, _) = ask(addr, &big);
    assert_eq!(code, "431");
    // A head that never ends: refused at the deadline, not held open.
    let (_, code, _) = ask(addr, "CONNECT api.test.invalid:443 HTTP/1.1\r\n");
    assert_eq!(code, "408");
    drop(serving);
    let reasons: Vec<_> = proxy.log().attempts.iter().map(|a| a.reason).collect();
    assert_eq!(
        reasons,
        [
            Some("egress.header-too-large"),
            Some("egress.header-timeout")
        ]
    );
    assert_eq!(ep.accepted(), 0);
}

#[test]
fn connections_beyond_the_cap_are_refused_and_logged() {
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |c| c.max_connections = 1);
    let (serving, addr) = serve_on_host(&proxy);
    let (first, code, _) = connect(addr, "api.test.invalid:443");
    assert_eq!(code, "200");
    let (_, code, head) = connect(addr, "api.test.invalid:443");
    assert_eq!(code, "503", "{head}");
    assert!(head.contains("egress.too-many-connections"));
    drop(first);
    drop(serving);
    let log = proxy.log().attempts;
    assert_eq!(log.len(), 2);
    assert!(log[0].allowed);
    assert_eq!(log[1].reason, Some("egress.too-many-connections"));
}

#[test]
fn a_full_log_refuses_further_connections_and_counts_them() {
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |c| c.max_log_entries = 2);
    let (serving, addr) = serve_on_host(&proxy);
    for _ in 0..2 {
        let (_, code, _) = connect(addr, "example.com:443");
        assert_eq!(code, "403");
    }
    let (_, code, head) = connect(addr, "api.test.invalid:443");
    assert_eq!(code, "503", "{head}");
    assert!(head.contains("egress.log-full"));
    drop(serving);
    let log = proxy.log();
    assert_eq!(log.attempts.len(), 2);
    assert_eq!(log.unlogged, 1);
    assert_eq!(ep.accepted(), 0, "an unlogged connection went through");
}

/// Dropping the `Serving` (the run ended) closes open tunnels and the listener.
#[test]
fn ending_the_run_closes_open_tunnels_and_the_listener() {
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |_| {});
    let (serving, addr) = serve_on_host(&proxy);
    let (mut s, code, _) = connect(addr, "api.test.invalid:443");
    assert_eq!(code, "200");
    s.write_all(b"abc").unwrap();
    let mut buf = [0u8; 3];
    s.read_exact(&mut buf).unwrap();
    drop(serving);
    let mut rest = Vec::new();
    assert_eq!(
        s.read_to_end(&mut rest).unwrap_or(0),
        0,
        "tunnel still open"
    );
    assert!(TcpStream::connect(addr).is_err(), "listener still open");
    let a = proxy.log().attempts[0].clone();
    assert_eq!((a.bytes_up, a.bytes_down), (3, 3));
}

#[test]
fn refusal_rule_ids_are_unique() {
    let set: std::collections::BTreeSet<_> = RULE_IDS.iter().collect();
    assert_eq!(set.len(), RULE_IDS.len());
}

// ---- The proxy as the sandbox's only way out (namespace mode). ----

fn egress_spec(f: &Fixture, mode: Mode, code: &str) -> airlock_sandbox::SandboxSpec {
    let mut spec = f.python(mode, &format!("{PY_CONNECT}\n{code}"));
    spec.network = Network::Egress;
    spec
}

/// From inside: the allowed endpoint answers through the proxy; another host, a name that
/// resolves to loopback and one that resolves to the metadata address are refused. The log
/// (what goes into the packet) lists all four.
#[test]
fn sandboxed_generator_reaches_only_the_allowed_destination() {
    let Some(mode) = require(Mode::Namespaces) else {
        return;
    };
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |_| {});
    let f = Fixture::new();
    let code = format!(
        r#"
s, st = connect("api.test.invalid:443")
print("allowed", st)
s.sendall(b"hello")
print("echo", s.recv(16).decode())
for dest in ["example.com:443", "localhost:{port}", "metadata.test.invalid:80"]:
    print("refused?", dest, connect(dest)[1])
"#,
        port = ep.addr.port()
    );
    let (o, log) = f
        .run_with(&egress_spec(&f, mode, &code), Some(&proxy))
        .unwrap();
    assert_eq!(o.status, ExitStatus::Exited(0), "{log}");
    assert_eq!(o.sandbox, SandboxKind::Namespaces);
    assert!(log.contains("allowed 200\n"), "{log}");
    assert!(log.contains("echo HELLO\n"), "{log}");
    assert!(log.contains("refused? example.com:443 403\n"), "{log}");
    assert!(
        log.contains(&format!("refused? localhost:{} 403\n", ep.addr.port())),
        "{log}"
    );
    assert!(
        log.contains("refused? metadata.test.invalid:80 403\n"),
        "{log}"
    );
    let attempts = proxy.log().attempts;
    let summary: Vec<(String, bool, Option<&str>)> = attempts
        .iter()
        .map(|a| (a.destination.clone(), a.allowed, a.reason))
        .collect();
    assert_eq!(
        summary,
        [
            ("api.test.invalid:443".to_string(), true, None),
            ("example.com:443".into(), false, Some("egress.not-allowed")),
            (
                format!("localhost:{}", ep.addr.port()),
                false,
                Some("egress.address.loopback")
            ),
            (
                "metadata.test.invalid:80".into(),
                false,
                Some("egress.address.link-local")
            ),
        ]
    );
    assert_eq!((attempts[0].bytes_up, attempts[0].bytes_down), (5, 5));
    assert_eq!(ep.accepted(), 1);
}

/// The proxy variables point at the sandbox's own loopback port; the spec's own values
/// and NO_PROXY do not survive.
#[test]
fn generator_environment_points_at_the_proxy() {
    let Some(mode) = require(Mode::Namespaces) else {
        return;
    };
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |_| {});
    let f = Fixture::new();
    let mut spec = f.sh(mode, "env | sort");
    spec.network = Network::Egress;
    spec.env
        .push(("HTTPS_PROXY".into(), "http://evil.example:1".into()));
    spec.env.push(("NO_PROXY".into(), "*".into()));
    let (o, log) = f.run_with(&spec, Some(&proxy)).unwrap();
    assert!(o.status.success(), "{log}");
    let url = format!("http://127.0.0.1:{EGRESS_PROXY_PORT}");
    for k in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"] {
        assert!(log.contains(&format!("{k}={url}\n")), "{k} in\n{log}");
    }
    assert!(!log.contains("evil.example"), "{log}");
    assert!(!log.to_ascii_uppercase().contains("NO_PROXY"), "{log}");
}

/// With egress, the sandbox may connect to the proxy's port and nothing else: no other
/// port on its loopback, no bind, no listening socket of its own.
#[test]
fn with_egress_only_the_proxy_port_is_reachable_and_nothing_binds() {
    let Some(mode) = require(Mode::Namespaces) else {
        return;
    };
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |_| {});
    let f = Fixture::new();
    let code = format!(
        r#"
import errno
ok = []
s = socket.create_connection(("127.0.0.1", {EGRESS_PROXY_PORT}), timeout=5)
print("proxy port reachable")
s.close()
for host, port in [("127.0.0.1", {other}), ("127.0.0.1", 22), ("127.0.0.1", 443),
                   ("127.0.0.2", {EGRESS_PROXY_PORT}), ("::1", {EGRESS_PROXY_PORT}),
                   ("169.254.169.254", {EGRESS_PROXY_PORT}), ("10.0.0.1", {EGRESS_PROXY_PORT}),
                   ("1.1.1.1", {EGRESS_PROXY_PORT})]:
    try:
        socket.create_connection((host, port), timeout=5)
        ok.append(("connect", host, port))
    except OSError as e:
        print("blocked connect", host, port, e)
for addr in [("127.0.0.1", 0), ("127.0.0.1", 8080), ("0.0.0.0", 0)]:
    try:
        b = socket.socket()
        b.bind(addr)
        ok.append(("bind", addr))
    except OSError as e:
        print("blocked bind", addr, e)
try:
    l = socket.socket()
    l.listen(1)
    port = l.getsockname()[1]
    c = socket.create_connection(("127.0.0.1", port), timeout=5)
    ok.append(("listen", port))
except OSError as e:
    print("blocked self-connect", e)
print("OPENED" if ok else "none opened", ok)
sys.exit(0 if ok else 3)
"#,
        other = ep.addr.port()
    );
    let log = f.expect_blocked_with(
        &egress_spec(&f, mode, &code),
        "ports besides the proxy",
        Some(&proxy),
    );
    assert!(log.contains("proxy port reachable"), "{log}");
    assert!(log.contains("none opened"), "{log}");
    // Only the control connection reached the proxy (and, sending nothing, was logged).
    let log = proxy.log().attempts;
    assert_eq!(only(&log).reason, Some("egress.malformed"), "{log:?}");
}

/// The fallback cannot confine TCP to the proxy (landlock's rules are port-only, seccomp
/// cannot read connect()'s address): egress there is refused before anything starts.
#[test]
fn fallback_refuses_egress_before_starting() {
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |_| {});
    let f = Fixture::new();
    let marker = f.work.join("started");
    let mut spec = f.sh(
        Mode::LandlockSeccomp,
        &format!("touch '{}'", marker.display()),
    );
    spec.network = Network::Egress;
    let sink = f.log_sink(100);
    let err = spawn_with_egress(host(), &[HELPER_SUBCOMMAND], &spec, &sink, &proxy).unwrap_err();
    assert!(matches!(err, SandboxError::Unavailable { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("egress needs the network namespace"),
        "{err}"
    );
    assert!(!marker.exists());
    assert!(!sink.path.exists());
}

#[test]
fn egress_and_proxy_must_come_together() {
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |_| {});
    let f = Fixture::new();
    let mut spec = f.sh(Mode::Auto, "true");
    spec.network = Network::Egress;
    let err = spawn(host(), &[HELPER_SUBCOMMAND], &spec, &f.log_sink(100)).unwrap_err();
    assert_eq!(err.rule(), "sandbox.spec.egress-proxy");
    spec.network = Network::Deny;
    let err = spawn_with_egress(
        host(),
        &[HELPER_SUBCOMMAND],
        &spec,
        &f.log_sink(100),
        &proxy,
    )
    .unwrap_err();
    assert_eq!(err.rule(), "sandbox.spec.egress-proxy");
}

/// `--unsafe-no-sandbox` with egress: nothing is enforced, but the generator is still
/// pointed at the proxy (on the host's loopback) and its attempts are logged.
#[test]
fn unsandboxed_egress_still_goes_through_the_logged_proxy() {
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |_| {});
    let f = Fixture::new();
    let code = r#"
s, st = connect("api.test.invalid:443")
print("allowed", st)
s.sendall(b"hi")
print("echo", s.recv(16).decode())
"#;
    let (o, log) = f
        .run_with(&egress_spec(&f, Mode::Unsandboxed, code), Some(&proxy))
        .unwrap();
    assert_eq!(o.status, ExitStatus::Exited(0), "{log}");
    assert_eq!(o.sandbox, SandboxKind::None);
    assert!(log.contains("echo HI\n"), "{log}");
    let log = proxy.log().attempts;
    assert!(only(&log).allowed);
}

/// curl honours the proxy variables: through the proxy, only the allowlist gets anywhere,
/// and every attempt is logged; curl's direct paths are in `network`.
#[test]
fn curl_through_the_proxy_reaches_nothing_off_the_allowlist() {
    let Some(mode) = require(Mode::Namespaces) else {
        return;
    };
    if !std::path::Path::new("/usr/bin/curl").exists() {
        return skip("curl not installed");
    }
    let ep = Endpoint::start();
    let proxy = proxy_for(&ep, TestResolver::new(), |_| {});
    let f = Fixture::new();
    let urls = [
        format!("http://127.0.0.1:{}/", ep.addr.port()),
        format!("https://localhost:{}/", ep.addr.port()),
        "https://169.254.169.254/".to_string(),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "https://example.com/".to_string(),
    ];
    for url in &urls {
        let mut spec = f.spec(mode, "/usr/bin/curl", &["-fsS", "-m", "10", url]);
        spec.network = Network::Egress;
        f.expect_blocked_with(&spec, &format!("curl {url} via the proxy"), Some(&proxy));
    }
    let log = proxy.log().attempts;
    let summary: Vec<(&str, Option<&str>)> = log
        .iter()
        .map(|a| (a.destination.as_str(), a.reason))
        .collect();
    let port = ep.addr.port();
    assert_eq!(
        summary,
        [
            (format!("127.0.0.1:{port}").as_str(), Some("egress.method")),
            (
                format!("localhost:{port}").as_str(),
                Some("egress.address.loopback")
            ),
            ("169.254.169.254:443", Some("egress.not-allowed")),
            ("169.254.169.254:80", Some("egress.method")),
            ("example.com:443", Some("egress.not-allowed")),
        ]
    );
    assert_eq!(ep.accepted(), 0);
}
