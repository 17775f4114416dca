//! Private keys and keystores in binary form: a DER PKCS#12 (`.p12`/`.pfx`), PKCS#8 or
//! PKCS#1/SEC1 structure, a Java keystore (JKS, JCEKS), found in a file's raw bytes or in
//! a decoded base64 value.
//!
//! Guards against: a key that travels without its PEM armour (a `.p12` in the tree, a
//! keystore as one base64 line in a `.properties` file). Reads at most the first few
//! headers through a bounded cursor; never allocates.
//! Does not check: whether the structure is complete or the key valid; a certificate or
//! a public key (`SEQUENCE { SEQUENCE ...` with no version integer) is not reported.

/// Rule id for a PKCS#12 keystore.
pub const PKCS12: &str = "keystore-pkcs12";
/// Rule id for a Java keystore.
pub const JKS: &str = "keystore-jks";
/// Rule id for a DER private key (PKCS#8, PKCS#1 RSA, SEC1 EC).
pub const DER_KEY: &str = "private-key-der";

/// One DER header: tag, content start, content end.
fn header(b: &[u8], at: usize) -> Option<(u8, usize, usize)> {
    let tag = *b.get(at)?;
    let first = *b.get(at + 1)?;
    let (len, start) = if first < 0x80 {
        (usize::from(first), at + 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 3 {
            return None;
        }
        let mut len = 0usize;
        for k in 0..n {
            len = len << 8 | usize::from(*b.get(at + 2 + k)?);
        }
        (len, at + 2 + n)
    };
    Some((tag, start, start.checked_add(len)?))
}

/// The rule id of the key or keystore `bytes` starts with, if any.
pub fn key_structure(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\xfe\xed\xfe\xed") || bytes.starts_with(b"\xce\xce\xce\xce") {
        return Some(JKS);
    }
    let (tag, body, end) = header(bytes, 0)?;
    // The outer SEQUENCE must be long enough to be a key and may be cut short (a truncated
    // value is still a leak), but not claim more than a few times what is there.
    if tag != 0x30 || end - body < 32 {
        return None;
    }
    let (vtag, vstart, vend) = header(bytes, body)?;
    if vtag != 0x02 || vend != vstart + 1 {
        return None;
    }
    let version = *bytes.get(vstart)?;
    let (ntag, _, _) = header(bytes, vend)?;
    match (version, ntag) {
        // PFX ::= SEQUENCE { version INTEGER {v3(3)}, authSafe ContentInfo, ... }
        (3, 0x30) => Some(PKCS12),
        // PrivateKeyInfo ::= SEQUENCE { version 0, algorithm AlgorithmIdentifier, ... }
        // RSAPrivateKey ::= SEQUENCE { version 0, modulus INTEGER, ... }
        (0, 0x30) | (0, 0x02) => Some(DER_KEY),
        // OneAsymmetricKey v2 (RFC 5958), ECPrivateKey (RFC 5915: version 1, OCTET STRING)
        (1, 0x30) | (1, 0x04) => Some(DER_KEY),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_keys_and_keystores_not_certificates() {
        // PKCS#8 header of an Ed25519 key (RFC 8410 example).
        let pkcs8 = b"\x30\x2e\x02\x01\x00\x30\x05\x06\x03\x2b\x65\x70\x04\x22\x04\x20\
            aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        assert_eq!(key_structure(pkcs8), Some(DER_KEY));
        let p12 = b"\x30\x82\x0a\x71\x02\x01\x03\x30\x82\x0a\x37\x06\x09";
        assert_eq!(key_structure(p12), Some(PKCS12));
        let cert = b"\x30\x82\x03\x0d\x30\x82\x01\xf5\xa0\x03\x02\x01\x02";
        assert_eq!(key_structure(cert), None);
        let spki = b"\x30\x82\x01\x22\x30\x0d\x06\x09\x2a\x86\x48";
        assert_eq!(key_structure(spki), None);
        assert_eq!(
            key_structure(b"\xfe\xed\xfe\xed\x00\x00\x00\x02"),
            Some(JKS)
        );
        assert_eq!(key_structure(b""), None);
    }
}
