//! Which addresses the egress proxy refuses to connect to, whatever name led there.
//!
//! Guards against: a name on the allowlist (or a DNS answer for it) pointing the proxy at
//! the worker itself or its neighbourhood: loopback, link-local (169.254.0.0/16, where the
//! cloud metadata services live, and fe80::/10), private ranges (10/8, 172.16/12,
//! 192.168/16, 100.64/10 shared/CGNAT (Alibaba's metadata is 100.100.100.200), fc00::/7
//! (AWS's IPv6 metadata is fd00:ec2::254), fec0::/10), unspecified, multicast, broadcast,
//! reserved and documentation ranges, IPv4 hidden in IPv6 (mapped, compatible, NAT64
//! 64:ff9b::/96, 6to4 2002::/16, Teredo), and any address of this host (one the kernel
//! lets us bind).
//! On `None` from [`refusal`]: a global unicast address that is not this host's.
//! Does not check: what is behind a global address (a public address can still be the
//! worker's own NAT gateway or a provider's internal service); the allowlist names hosts
//! the trusted side chose.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

/// Rule id: the address is unspecified (`0.0.0.0/8`, `::`).
pub const UNSPECIFIED: &str = "egress.address.unspecified";
/// Rule id: loopback (`127.0.0.0/8`, `::1`).
pub const LOOPBACK: &str = "egress.address.loopback";
/// Rule id: private or shared (`10/8`, `172.16/12`, `192.168/16`, `100.64/10`, `fc00::/7`,
/// `fec0::/10`, `64:ff9b:1::/48`).
pub const PRIVATE: &str = "egress.address.private";
/// Rule id: link-local (`169.254/16`, incl. `169.254.169.254`; `fe80::/10`).
pub const LINK_LOCAL: &str = "egress.address.link-local";
/// Rule id: multicast (`224/4`, `ff00::/8`).
pub const MULTICAST: &str = "egress.address.multicast";
/// Rule id: limited broadcast (`255.255.255.255`).
pub const BROADCAST: &str = "egress.address.broadcast";
/// Rule id: reserved, benchmarking, documentation, protocol-assignment or tunnel ranges.
pub const RESERVED: &str = "egress.address.reserved";
/// Rule id: an address of this host (the kernel lets the proxy bind it).
pub const THIS_HOST: &str = "egress.address.this-host";

/// Why the proxy must not connect to `ip`, as a rule id; `None` for a global unicast
/// address. Does not include `egress.address.this-host`; see [`is_this_host`].
pub fn refusal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refusal_v4(v4),
        IpAddr::V6(v6) => refusal_v6(v6),
    }
}

fn refusal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    let n = u32::from(ip);
    let within = |net: u32, bits: u32| n >> (32 - bits) == net >> (32 - bits);
    if o[0] == 0 {
        Some(UNSPECIFIED)
    } else if o[0] == 127 {
        Some(LOOPBACK)
    } else if o[0] == 10
        || within(0xAC10_0000, 12)
        || within(0xC0A8_0000, 16)
        || within(0x6440_0000, 10)
    {
        Some(PRIVATE)
    } else if within(0xA9FE_0000, 16) {
        Some(LINK_LOCAL)
    } else if n == u32::MAX {
        Some(BROADCAST)
    } else if within(0xE000_0000, 4) {
        Some(MULTICAST)
    } else if within(0xF000_0000, 4)
        || within(0xC000_0000, 24) // IETF protocol assignments
        || within(0xC000_0200, 24) // TEST-NET-1
        || within(0xC633_6400, 24) // TEST-NET-2
        || within(0xCB00_7100, 24) // TEST-NET-3
        || within(0xC612_0000, 15) // benchmarking
        || within(0xC058_6300, 24)
    // 6to4 relay anycast
    {
        Some(RESERVED)
    } else {
        None
    }
}

fn refusal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let embedded =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if ip.is_unspecified() {
        return Some(UNSPECIFIED);
    }
    if ip.is_loopback() {
        return Some(LOOPBACK);
    }
    // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (deprecated compatible): the IPv4 rules apply.
    if s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0) {
        return refusal_v4(embedded(s[6], s[7])).or(if s[5] == 0 { Some(RESERVED) } else { None });
    }
    // NAT64 well-known prefix 64:ff9b::/96 reaches the embedded IPv4 address.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return refusal_v4(embedded(s[6], s[7]));
    }
    // Local-use NAT64 64:ff9b:1::/48 is a private translator.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        return Some(PRIVATE);
    }
    // 6to4 2002:AABB:CCDD::/48 reaches AA.BB.CC.DD through a relay (deprecated, RFC 7526):
    // named by its embedded address when that is refused, else refused as a tunnel.
    if s[0] == 0x2002 {
        return refusal_v4(embedded(s[1], s[2])).or(Some(RESERVED));
    }
    match s[0] {
        x if x & 0xffc0 == 0xfe80 => Some(LINK_LOCAL),
        x if x & 0xffc0 == 0xfec0 => Some(PRIVATE), // site-local (deprecated)
        x if x & 0xfe00 == 0xfc00 => Some(PRIVATE), // unique local
        x if x & 0xff00 == 0xff00 => Some(MULTICAST),
        // IETF protocol assignments 2001::/23 (Teredo 2001::/32, an IPv4 tunnel; ORCHID;
        // benchmarking), documentation (2001:db8::/32), discard-only (100::/64), and
        // anything outside global unicast 2000::/3.
        0x2001 if s[1] < 0x0200 || s[1] == 0x0db8 => Some(RESERVED),
        0x0100 if s[1..4] == [0, 0, 0] => Some(RESERVED),
        x if x & 0xe000 != 0x2000 => Some(RESERVED),
        _ => None,
    }
}

/// Whether `ip` is one of this host's own addresses: the kernel lets us bind it (this
/// covers every interface address and every local route, such as all of `127.0.0.0/8`).
/// With `ip_nonlocal_bind` set, every address looks local, which refuses everything:
/// the check fails closed.
pub fn is_this_host(ip: IpAddr) -> bool {
    UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Option<&'static str> {
        refusal(s.parse().unwrap())
    }

    #[test]
    fn refuses_every_listed_range() {
        for (addr, rule) in [
            ("0.0.0.0", UNSPECIFIED),
            ("0.1.2.3", UNSPECIFIED),
            ("127.0.0.1", LOOPBACK),
            ("127.255.255.254", LOOPBACK),
            ("10.0.0.1", PRIVATE),
            ("172.16.0.1", PRIVATE),
            ("172.31.255.255", PRIVATE),
            ("192.168.1.1", PRIVATE),
            ("100.64.0.1", PRIVATE),
            ("100.100.100.200", PRIVATE),
            ("169.254.169.254", LINK_LOCAL),
            ("169.254.170.2", LINK_LOCAL),
            ("224.0.0.1", MULTICAST),
            ("239.255.255.250", MULTICAST),
            ("255.255.255.255", BROADCAST),
            ("240.0.0.1", RESERVED),
            ("192.0.0.192", RESERVED),
            ("192.0.2.1", RESERVED),
            ("198.18.0.1", RESERVED),
            ("::", UNSPECIFIED),
            ("::1", LOOPBACK),
            ("fe80::1", LINK_LOCAL),
            ("febf::1", LINK_LOCAL),
            ("fc00::1", PRIVATE),
            ("fd00:ec2::254", PRIVATE),
            ("fec0::1", PRIVATE),
            ("ff02::1", MULTICAST),
            ("::ffff:127.0.0.1", LOOPBACK),
            ("::ffff:169.254.169.254", LINK_LOCAL),
            ("::ffff:10.1.2.3", PRIVATE),
            ("::127.0.0.1", LOOPBACK),
            ("::8.8.8.8", RESERVED),
            ("64:ff9b::a9fe:a9fe", LINK_LOCAL),
            ("64:ff9b::7f00:1", LOOPBACK),
            ("64:ff9b:1::1", PRIVATE),
            ("2002:a9fe:a9fe::1", LINK_LOCAL),
            ("2002:7f00:1::1", LOOPBACK),
            ("2002:808:808::1", RESERVED),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", RESERVED),
            ("2001:db8::1", RESERVED),
            ("100::1", RESERVED),
            ("4000::1", RESERVED),
        ] {
            assert_eq!(r(addr), Some(rule), "{addr}");
        }
    }

    #[test]
    fn admits_global_unicast() {
        for addr in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "169.253.1.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001::1",
            "64:ff9b::808:808",
        ] {
            assert_eq!(r(addr), None, "{addr}");
        }
    }

    #[test]
    fn this_host_includes_loopback_and_excludes_documentation_addresses() {
        assert!(is_this_host("127.0.0.1".parse().unwrap()));
        assert!(is_this_host("127.3.2.1".parse().unwrap()));
        assert!(!is_this_host("192.0.2.77".parse().unwrap()));
    }

    #[test]
    fn rule_ids_are_unique() {
        let ids = [
            UNSPECIFIED,
            LOOPBACK,
            PRIVATE,
            LINK_LOCAL,
            MULTICAST,
            BROADCAST,
            RESERVED,
            THIS_HOST,
        ];
        let set: std::collections::BTreeSet<_> = ids.iter().collect();
        assert_eq!(set.len(), ids.len());
    }
}
