use std::io::ErrorKind;
use std::net::TcpListener;

use airlock_sandbox::Mode;

use crate::support::*;

crate::in_both_modes!(
    blocks_tcp_to_host_loopback,
    blocks_tcp_to_metadata_endpoint,
    blocks_dns_lookup,
    blocks_udp_to_host_loopback,
    blocks_raw_and_packet_sockets,
    blocks_curl_and_wget,
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

fn blocks_tcp_to_host_loopback(mode: Mode) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let f = Fixture::new();
    let log = f.expect_blocked(
        &f.python(mode, &tcp_probe("127.0.0.1", port)),
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

fn blocks_tcp_to_metadata_endpoint(mode: Mode) {
    let f = Fixture::new();
    let log = f.expect_blocked(
        &f.python(mode, &tcp_probe("169.254.169.254", 80)),
        "metadata endpoint",
    );
    assert!(log.contains("blocked:"), "{log}");
}

fn blocks_dns_lookup(mode: Mode) {
    let f = Fixture::new();
    let code = r#"
import socket, sys
try:
    print(socket.getaddrinfo("airlock-dns-probe.example.com", 443))
except OSError as e:
    print("blocked:", e)
    sys.exit(3)
"#;
    let log = f.expect_blocked(&f.python(mode, code), "dns lookup");
    assert!(log.contains("blocked:"), "{log}");
}

fn blocks_udp_to_host_loopback(mode: Mode) {
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
    f.expect_blocked(&f.python(mode, &code), "udp to host loopback");
    sock.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 16];
    assert!(matches!(sock.recv_from(&mut buf), Err(e) if e.kind() == ErrorKind::WouldBlock));
}

fn blocks_raw_and_packet_sockets(mode: Mode) {
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
    let log = f.expect_blocked(&f.python(mode, code), "raw/packet socket");
    assert!(!log.contains("OPENED"), "{log}");
}

fn blocks_curl_and_wget(mode: Mode) {
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
            println!("SKIPPED: {tool} not installed");
            continue;
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        f.expect_blocked(
            &f.spec(mode, tool, &args),
            &format!("{tool} {}", args.join(" ")),
        );
        ran += 1;
    }
    listener.set_nonblocking(true).unwrap();
    assert!(matches!(listener.accept(), Err(e) if e.kind() == ErrorKind::WouldBlock));
    println!("{ran} curl/wget probes ran");
}
