//! Key and keystore formats built byte for byte from their specifications, with random
//! key material: OpenSSH `openssh-key-v1` (PROTOCOL.key in OpenSSH's source), DER
//! PKCS#8 (RFC 5208), PKCS#1 (RFC 8017), SEC1 (RFC 5915), PKCS#12 (RFC 7292) and the JKS
//! header (`0xFEEDFEED`, version 2). The structures are right; the keys are not valid keys.

use crate::testgen::Rng;

fn bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next_u64() as u8).collect()
}

fn ssh_string(out: &mut Vec<u8>, s: &[u8]) {
    out.extend((s.len() as u32).to_be_bytes());
    out.extend(s);
}

/// An mpint with its top bit clear (as OpenSSH writes a positive integer).
fn mpint(rng: &mut Rng, n: usize) -> Vec<u8> {
    let mut v = bytes(rng, n);
    if let Some(b) = v.first_mut() {
        *b = (*b & 0x7f) | 0x40;
    }
    v
}

/// Standard base64 with padding.
pub fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(char::from(A[(n >> (18 - 6 * k) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn wrap(b64: &str, width: usize) -> String {
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(width)
        .map(|c| std::str::from_utf8(c).unwrap_or_default())
        .collect();
    lines.join("\n")
}

/// The OpenSSH key types generated.
pub const OPENSSH_TYPES: [&str; 4] = ["ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ssh-dss"];

/// An unencrypted OpenSSH private key of `kind` (PEM-armoured, 70-column body as
/// `ssh-keygen` writes it); an Ed25519 key with a short comment is the 399-byte default.
pub fn openssh_private_key(rng: &mut Rng, kind: &str, comment: &str) -> String {
    let mut public = Vec::new();
    let mut private = Vec::new();
    ssh_string(&mut public, kind.as_bytes());
    ssh_string(&mut private, kind.as_bytes());
    match kind {
        "ssh-ed25519" => {
            let pk = bytes(rng, 32);
            ssh_string(&mut public, &pk);
            ssh_string(&mut private, &pk);
            let mut sk = bytes(rng, 32);
            sk.extend(&pk);
            ssh_string(&mut private, &sk);
        }
        "ecdsa-sha2-nistp256" => {
            let mut point = vec![4u8];
            point.extend(bytes(rng, 64));
            for out in [&mut public, &mut private] {
                ssh_string(out, b"nistp256");
                ssh_string(out, &point);
            }
            ssh_string(&mut private, &mpint(rng, 32));
        }
        "ssh-dss" => {
            let (p, q, g, y) = (
                mpint(rng, 128),
                mpint(rng, 20),
                mpint(rng, 128),
                mpint(rng, 128),
            );
            for out in [&mut public, &mut private] {
                for v in [&p, &q, &g, &y] {
                    ssh_string(out, v);
                }
            }
            ssh_string(&mut private, &mpint(rng, 20));
        }
        _ => {
            let bits = [256usize, 384, 512][rng.below(3)];
            let (e, n) = (vec![1u8, 0, 1], mpint(rng, bits + 1));
            ssh_string(&mut public, &e);
            ssh_string(&mut public, &n);
            ssh_string(&mut private, &n);
            ssh_string(&mut private, &e);
            ssh_string(&mut private, &mpint(rng, bits));
            ssh_string(&mut private, &mpint(rng, bits / 2));
            ssh_string(&mut private, &mpint(rng, bits / 2));
            ssh_string(&mut private, &mpint(rng, bits / 2));
        }
    }
    ssh_string(&mut private, comment.as_bytes());
    let check = rng.next_u64() as u32;
    let mut section = Vec::new();
    section.extend(check.to_be_bytes());
    section.extend(check.to_be_bytes());
    section.extend(&private);
    let mut pad = 1u8;
    while section.len() % 8 != 0 {
        section.push(pad);
        pad += 1;
    }
    let mut blob = b"openssh-key-v1\0".to_vec();
    ssh_string(&mut blob, b"none");
    ssh_string(&mut blob, b"none");
    ssh_string(&mut blob, b"");
    blob.extend(1u32.to_be_bytes());
    ssh_string(&mut blob, &public);
    ssh_string(&mut blob, &section);
    format!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
        wrap(&base64(&blob), 70)
    )
}

/// The public half of the same kind, as an `authorized_keys` line (a look-alike).
pub fn openssh_public_key(rng: &mut Rng, kind: &str, comment: &str) -> String {
    let mut public = Vec::new();
    ssh_string(&mut public, kind.as_bytes());
    match kind {
        "ssh-ed25519" => ssh_string(&mut public, &bytes(rng, 32)),
        _ => {
            ssh_string(&mut public, &[1, 0, 1]);
            ssh_string(&mut public, &mpint(rng, 257));
        }
    }
    format!(
        "{} {} {comment}",
        if kind == "ssh-ed25519" {
            kind
        } else {
            "ssh-rsa"
        },
        base64(&public)
    )
}

fn der(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let n = body.len();
    if n < 0x80 {
        out.push(n as u8);
    } else if n < 0x100 {
        out.extend([0x81, n as u8]);
    } else {
        out.extend([0x82, (n >> 8) as u8, n as u8]);
    }
    out.extend(body);
    out
}

fn der_int(rng: &mut Rng, n: usize) -> Vec<u8> {
    der(0x02, &mpint(rng, n))
}

const OID_RSA: &[u8] = b"\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x01\x01";
const OID_DATA: &[u8] = b"\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x07\x01";

/// DER structures with random contents: `pkcs8`, `pkcs1`, `sec1`, `pkcs12`, `jks`.
pub fn der_key(rng: &mut Rng, kind: &str) -> Vec<u8> {
    let rsa = |rng: &mut Rng| {
        let mut body = der(0x02, &[0]);
        for n in [257, 3, 256, 129, 129, 128, 128, 128] {
            body.extend(der_int(rng, n));
        }
        der(0x30, &body)
    };
    match kind {
        "pkcs1" => rsa(rng),
        "sec1" => {
            let mut body = der(0x02, &[1]);
            body.extend(der(0x04, &bytes(rng, 32)));
            body.extend(der(0xa0, b"\x06\x08\x2a\x86\x48\xce\x3d\x03\x01\x07"));
            der(0x30, &body)
        }
        "pkcs12" => {
            let mut body = der(0x02, &[3]);
            let mut content = OID_DATA.to_vec();
            let n = 600 + rng.below(400);
            content.extend(der(0xa0, &der(0x04, &bytes(rng, n))));
            body.extend(der(0x30, &content));
            let mut mac = der(0x30, &bytes(rng, 40));
            mac.extend(der(0x04, &bytes(rng, 8)));
            mac.extend(der(0x02, &[0x08, 0x00]));
            body.extend(der(0x30, &mac));
            der(0x30, &body)
        }
        "jks" => {
            let mut out = vec![0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1];
            let alias = b"mykey";
            out.extend((alias.len() as u16).to_be_bytes());
            out.extend(alias);
            out.extend(bytes(rng, 700));
            out
        }
        _ => {
            let mut alg = OID_RSA.to_vec();
            alg.extend([0x05, 0x00]);
            let mut body = der(0x02, &[0]);
            body.extend(der(0x30, &alg));
            body.extend(der(0x04, &rsa(rng)));
            der(0x30, &body)
        }
    }
}

/// A DER certificate-shaped structure (`SEQUENCE { SEQUENCE { [0] version ...`), for
/// look-alikes: public, never a finding.
pub fn der_certificate(rng: &mut Rng) -> Vec<u8> {
    let mut tbs = der(0xa0, &der(0x02, &[2]));
    tbs.extend(der_int(rng, 16));
    tbs.extend(bytes(rng, 500));
    let mut body = der(0x30, &tbs);
    body.extend(der(0x03, &bytes(rng, 257)));
    der(0x30, &body)
}

/// PEM armour around DER bytes, 64 columns.
pub fn pem(label: &str, der: &[u8]) -> String {
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        wrap(&base64(der), 64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_ed25519_key_is_399_bytes() {
        let k = openssh_private_key(&mut Rng::new(1), "ssh-ed25519", "user@host");
        assert_eq!(k.len(), 399, "{k}");
    }

    #[test]
    fn der_kinds_are_recognised() {
        let mut rng = Rng::new(2);
        for (kind, rule) in [
            ("pkcs8", crate::der::DER_KEY),
            ("pkcs1", crate::der::DER_KEY),
            ("sec1", crate::der::DER_KEY),
            ("pkcs12", crate::der::PKCS12),
            ("jks", crate::der::JKS),
        ] {
            assert_eq!(
                crate::der::key_structure(&der_key(&mut rng, kind)),
                Some(rule),
                "{kind}"
            );
        }
        assert_eq!(crate::der::key_structure(&der_certificate(&mut rng)), None);
    }
}
