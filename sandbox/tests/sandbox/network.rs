//! Every probe runs three ways: namespace mode and the forced landlock+seccomp fallback
//! with the network denied, and namespace mode with egress GRANTED (a proxy allowing one
//! destination): granting egress must not open any of these paths, and none of the probes
//! may even reach the proxy.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::net::UnixListener;

use airlock_sandbox::egress::{EgressRule, ProxyConfig};
use airlock_sandbox::{EgressProxy, Mode, Network, SandboxSpec};

use crate::support::*;

/// How a probe runs: the mode, and the egress proxy when egress is granted.
struct Net {
    mode: Mode,
    proxy: Option<EgressProxy>,
}

impl Net {
    fn deny(mode: Mode) -> Net {
        Net { mode, proxy: None }
    }

    fn egress(mode: Mode) -> Net {
        let proxy = EgressProxy::start(
            vec![EgressRule::new("api.test.invalid", 443)],
            ProxyConfig::default(),
        )
        .unwrap();
        Net {
            mode,
            proxy: Some(proxy),
        }
    }

    fn with_network(&self, mut s: SandboxSpec) -> SandboxSpec {
        if self.proxy.is_some() {
            s.network = Network::Egress;
        }
        s
    }

    fn python(&self, f: &Fixture, code: &str) -> SandboxSpec {
        self.with_network(f.python(self.mode, code))
    }

    fn spec(&self, f: &Fixture, program: &str, args: &[&str]) -> SandboxSpec {
        self.with_network(f.spec(self.mode, program, args))
    }

    /// A blocked probe; with egress, the proxy must not have seen it either.
    fn expect_blocked(&self, f: &Fixture, spec: &SandboxSpec, what: &str) -> String {
        let log = f.expect_blocked_with(spec, what, self.proxy.as_ref());
        if let Some(p) = &self.proxy {
            let l = p.log();
            assert!(l.attempts.is_empty(), "{what}: reached the proxy: {l:?}");
        }
        log
    }
}

/// One `#[test]` per probe and way: `namespaces::`, `fallback::`, `namespaces_with_egress::`.
macro_rules! network_probes {
    ($($attack:ident),* $(,)?) => {
        mod namespaces {
            $(
                #[test]
                fn $attack() {
                    if let Some(m) = $crate::support::require(airlock_sandbox::Mode::Namespaces) {
                        super::$attack(&super::Net::deny(m));
                    }
                }
            )*
        }
        mod fallback {
            $(
                #[test]
                fn $attack() {
                    if let Some(m) = $crate::support::require(airlock_sandbox::Mode::LandlockSeccomp) {
                        super::$attack(&super::Net::deny(m));
                    }
                }
            )*
        }
        mod namespaces_with_egress {
            $(
                #[test]
                fn $attack() {
                    if let Some(m) = $crate::support::require(airlock_sandbox::Mode::Namespaces) {
                        super::$attack(&super::Net::egress(m));
                    }
                }
            )*
        }
    };
}

network_probes!(
    blocks_tcp_to_host_loopback,
    blocks_tcp_to_metadata_endpoint,
    blocks_dns_lookup,
    blocks_udp_to_host_loopback,
    blocks_raw_and_packet_sockets,
    blocks_netlink_socket,
    blocks_curl_and_wget,
    blocks_unix_socket_to_a_host_daemon,
    blocks_unix_datagrams_and_abstract_names_of_every_kind,
    blocks_io_uring_setup,
);

/// Python that connects to `host:port` and exits 0 (a breach) if it gets through.
fn tcp_probe(host: &str, port: u16) -> String {
    format!(
        r#"
import socket, sys
try:
    s = socket.create_connection(({host:?}, {port}), timeout=5)
except OSError as e:
    print("blocked:", e)
    sys.exit(3)
print("CONNECTED")
"#
    )
}

fn blocks_tcp_to_host_loopback(net: &Net) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let f = Fixture::new();
    let log = net.expect_blocked(
        &f,
        &net.python(&f, &tcp_probe("127.0.0.1", port)),
        "tcp to host loopback",
    );
    assert!(log.contains("blocked:"), "{log}");
    listener.set_nonblocking(true).unwrap();
    let accepted = listener.accept();
    assert!(
        matches!(&accepted, Err(e) if e.kind() == ErrorKind::WouldBlock),
        "the host listener saw a connection: {accepted:?}"
    );
}

fn blocks_tcp_to_metadata_endpoint(net: &Net) {
    let f = Fixture::new();
    let log = net.expect_blocked(
        &f,
        &net.python(&f, &tcp_probe("169.254.169.254", 80)),
        "metadata endpoint",
    );
    assert!(log.contains("blocked:"), "{log}");
}

fn blocks_dns_lookup(net: &Net) {
    let f = Fixture::new();
    let code = r#"
import socket, sys
try:
    print(socket.getaddrinfo("airlock-dns-probe.example.com", 443))
except OSError as e:
    print("blocked:", e)
    sys.exit(3)
"#;
    let log = net.expect_blocked(&f, &net.python(&f, code), "dns lookup");
    assert!(log.contains("blocked:"), "{log}");
}

fn blocks_udp_to_host_loopback(net: &Net) {
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = sock.local_addr().unwrap().port();
    let f = Fixture::new();
    let code = format!(
        r#"
import socket, sys
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"leak", ("127.0.0.1", {port}))
except OSError as e:
    print("blocked:", e)
    sys.exit(3)
"#
    );
    net.expect_blocked(&f, &net.python(&f, &code), "udp to host loopback");
    sock.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 16];
    assert!(matches!(sock.recv_from(&mut buf), Err(e) if e.kind() == ErrorKind::WouldBlock));
}

fn blocks_raw_and_packet_sockets(net: &Net) {
    let f = Fixture::new();
    let code = r#"
import socket, sys
opened = []
for fam, typ, proto in [
    (socket.AF_PACKET, socket.SOCK_RAW, 0x0300),
    (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
    (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6),
    (socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP),
]:
    try:
        socket.socket(fam, typ, proto)
        opened.append(fam)
    except OSError as e:
        print("blocked:", fam, e)
if opened:
    print("OPENED", opened)
sys.exit(0 if opened else 3)
"#;
    let log = net.expect_blocked(&f, &net.python(&f, code), "raw/packet socket");
    assert!(!log.contains("OPENED"), "{log}");
}

fn blocks_netlink_socket(net: &Net) {
    let f = Fixture::new();
    let code = r#"
import socket, sys
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
except OSError as e:
    print("blocked:", e)
    sys.exit(3)
"#;
    net.expect_blocked(&f, &net.python(&f, code), "netlink socket");
}

fn blocks_curl_and_wget(net: &Net) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let f = Fixture::new();
    let mut ran = 0;
    for (tool, args) in [
        (
            "/usr/bin/curl",
            vec![
                "-sS".to_string(),
                "-m".into(),
                "5".into(),
                format!("http://127.0.0.1:{port}/"),
            ],
        ),
        (
            "/usr/bin/curl",
            vec![
                "-sS".into(),
                "-m".into(),
                "5".into(),
                "http://169.254.169.254/latest/meta-data/".into(),
            ],
        ),
        (
            "/usr/bin/curl",
            vec![
                "-sS".into(),
                "-m".into(),
                "5".into(),
                "https://example.com/".into(),
            ],
        ),
        (
            "/usr/bin/wget",
            vec![
                "-q".into(),
                "-T".into(),
                "5".into(),
                "-t".into(),
                "1".into(),
                "-O-".into(),
                format!("http://127.0.0.1:{port}/"),
            ],
        ),
        (
            "/usr/bin/wget",
            vec![
                "-q".into(),
                "-T".into(),
                "5".into(),
                "-t".into(),
                "1".into(),
                "-O-".into(),
                "http://169.254.169.254/".into(),
            ],
        ),
    ] {
        if !std::path::Path::new(tool).exists() {
            skip(&format!("{tool} not installed (apt-get install curl wget)"));
            continue;
        }
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        if net.proxy.is_some() {
            // Direct attempts here; going through the proxy is tested in `egress`.
            let direct: &[&str] = if tool.ends_with("curl") {
                &["--noproxy", "*"]
            } else {
                &["--no-proxy"]
            };
            args.splice(0..0, direct.iter().copied());
        }
        net.expect_blocked(
            &f,
            &net.spec(&f, tool, &args),
            &format!("{tool} {}", args.join(" ")),
        );
        ran += 1;
    }
    listener.set_nonblocking(true).unwrap();
    assert!(matches!(listener.accept(), Err(e) if e.kind() == ErrorKind::WouldBlock));
    assert!(ran > 0, "no curl/wget probe ran");
    println!("{ran} curl/wget probes ran");
}

/// A daemon's unix socket (standing for a container runtime's) is out of reach, even with
/// permissions that would let anyone connect.
fn blocks_unix_socket_to_a_host_daemon(net: &Net) {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new();
    let path = f.path("daemon.sock");
    let listener = UnixListener::bind(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let code = format!(
        r#"
import socket, sys
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect({:?})
except OSError as e:
    print("blocked:", e)
    sys.exit(3)
print("CONNECTED")
"#,
        path.display().to_string()
    );
    net.expect_blocked(&f, &net.python(&f, &code), "unix socket of a host daemon");
    listener.set_nonblocking(true).unwrap();
    assert!(matches!(listener.accept(), Err(e) if e.kind() == ErrorKind::WouldBlock));
}

/// Python that tries every way a unix socket could name a host socket: `socket(AF_UNIX, T)`
/// then `connect`/`sendto`; `socketpair(AF_UNIX, T)` then `connect(AF_UNSPEC)` and
/// `sendto`/`sendmsg` with a name; `bind` to an abstract name and to a path; for T in
/// datagram, seqpacket and stream, and for a path and an abstract name. A send the pair's own
/// peer received (a seqpacket pair ignores the name) stays inside and is no breach. Exits 0
/// (a breach) if anything else got through.
const PY_UNIX_CLASS: &str = r#"
import ctypes, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
PATH, ABSTRACT, BOUND = sys.argv[1], "\0" + sys.argv[2], os.path.join(os.getcwd(), "bound.sock")
breaches = []
def attempt(what, f):
    try:
        r = f()
    except OSError as e:
        print("blocked:", what, "->", e)
        return
    if r == "peer":
        print("stayed in the pair:", what)
        return
    breaches.append(what)
    print("BREACH:", what)
def unspec(s):
    sa = (ctypes.c_ushort * 8)()
    if libc.connect(s.fileno(), sa, 16) != 0:
        e = ctypes.get_errno()
        print("  connect(AF_UNSPEC):", os.strerror(e))
def to_peer(b):
    b.setblocking(False)
    try:
        return "peer" if b.recv(16) == b"leak" else None
    except OSError:
        return None
TYPES = {"dgram": socket.SOCK_DGRAM, "seqpacket": socket.SOCK_SEQPACKET, "stream": socket.SOCK_STREAM}
for tname, typ in TYPES.items():
    for aname, addr in (("path", PATH), ("abstract", ABSTRACT)):
        def sock_connect():
            s = socket.socket(socket.AF_UNIX, typ)
            s.connect(addr)
            s.send(b"leak")
        def sock_sendto():
            socket.socket(socket.AF_UNIX, typ).sendto(b"leak", addr)
        def pair_sendto():
            a, b = socket.socketpair(socket.AF_UNIX, typ)
            unspec(a)
            a.sendto(b"leak", addr)
            return to_peer(b)
        def pair_sendmsg():
            a, b = socket.socketpair(socket.AF_UNIX, typ)
            unspec(a)
            a.sendmsg([b"leak"], [], 0, addr)
            return to_peer(b)
        attempt(f"socket({tname}) connect {aname}", sock_connect)
        attempt(f"socket({tname}) sendto {aname}", sock_sendto)
        attempt(f"socketpair({tname}) sendto {aname}", pair_sendto)
        attempt(f"socketpair({tname}) sendmsg {aname}", pair_sendmsg)
    def pair_bind_abstract():
        a, b = socket.socketpair(socket.AF_UNIX, typ)
        a.bind("\0airlock-probe-bound-" + tname + sys.argv[2])
    def pair_bind_path():
        a, b = socket.socketpair(socket.AF_UNIX, typ)
        a.bind(BOUND + "." + tname)
    attempt(f"socketpair({tname}) bind abstract", pair_bind_abstract)
    attempt(f"socketpair({tname}) bind path", pair_bind_path)
print(len(breaches), "breaches")
sys.exit(0 if breaches else 3)
"#;

/// The campaign's finding 1: a datagram pair re-aimed at a host datagram socket (`/dev/log`,
/// the journal) after `connect(AF_UNSPEC)`, and binds to abstract names in the host's
/// namespace. The host's datagram listeners, on a path anyone may write and on an abstract
/// name, receive nothing, whatever the socket type.
fn blocks_unix_datagrams_and_abstract_names_of_every_kind(net: &Net) {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let f = Fixture::new();
    let path = f.path("host-log.sock");
    let by_path = UnixDatagram::bind(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let name = format!("airlock-probe-{}", nonce());
    let by_name = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap();
    let spec = net.spec(
        &f,
        PYTHON,
        &["-c", PY_UNIX_CLASS, &path.display().to_string(), &name],
    );
    let log = net.expect_blocked(&f, &spec, "unix datagrams and abstract names");
    assert!(log.contains("0 breaches"), "{log}");
    for (what, sock) in [("path", &by_path), ("abstract name", &by_name)] {
        sock.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 16];
        let got = sock.recv(&mut buf);
        assert!(
            matches!(&got, Err(e) if e.kind() == ErrorKind::WouldBlock),
            "the host's datagram socket on a {what} received {got:?}\n{log}"
        );
    }
    // No socket file was made in the workdir either.
    let made: Vec<_> = std::fs::read_dir(&f.work)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(made.is_empty(), "{made:?}");
}

/// io_uring operations are not seen by seccomp: the ring itself must not be available.
fn blocks_io_uring_setup(net: &Net) {
    let f = Fixture::new();
    let code = r#"
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
fd = libc.syscall(425, 8, params)  # io_uring_setup, same number on x86_64 and aarch64
print("io_uring_setup ->", fd, "errno", ctypes.get_errno())
sys.exit(0 if fd >= 0 else 3)
"#;
    let log = net.expect_blocked(&f, &net.python(&f, code), "io_uring_setup");
    assert!(log.contains(&format!("errno {}", libc::ENOSYS)), "{log}");
}
