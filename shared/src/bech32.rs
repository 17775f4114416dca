//! Bech32 (BIP 173) as age writes its keys (`age1…`, `AGE-SECRET-KEY-1…`): lower-case
//! encode and decode with the checksum, without BIP 173's 90-character limit (age's keys are
//! longer than Bitcoin addresses but far below [`MAX_LEN`]).
//!
//! Guards against: mistyped or truncated keys (the checksum), mixed case, other
//! human-readable parts, and padding bits that are not zero.

const CHARSET: &[u8; 32] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";
const GEN: [u32; 5] = [
    0x3b6a_57b2,
    0x2650_8e6d,
    0x1ea1_19fa,
    0x3d42_33dd,
    0x2a14_62b3,
];
/// Longest string decoded.
pub const MAX_LEN: usize = 256;

fn polymod(values: impl Iterator<Item = u8>) -> u32 {
    let mut chk: u32 = 1;
    for v in values {
        let b = chk >> 25;
        chk = ((chk & 0x01ff_ffff) << 5) ^ u32::from(v);
        for (i, g) in GEN.iter().enumerate() {
            if (b >> i) & 1 == 1 {
                chk ^= g;
            }
        }
    }
    chk
}

fn hrp_expand(hrp: &str) -> impl Iterator<Item = u8> + '_ {
    hrp.bytes()
        .map(|b| b >> 5)
        .chain(std::iter::once(0))
        .chain(hrp.bytes().map(|b| b & 31))
}

/// Regroups bits: 8 -> 5 (`pad`) or 5 -> 8 (no padding; non-zero padding refused).
fn convert(data: &[u8], from: u32, to: u32, pad: bool) -> Option<Vec<u8>> {
    let (mut acc, mut bits) = (0u32, 0u32);
    let max = (1u32 << to) - 1;
    let mut out = Vec::with_capacity(data.len() * from as usize / to as usize + 1);
    for &v in data {
        acc = (acc << from) | u32::from(v);
        bits += from;
        while bits >= to {
            bits -= to;
            out.push(((acc >> bits) & max) as u8);
        }
    }
    if pad {
        if bits > 0 {
            out.push(((acc << (to - bits)) & max) as u8);
        }
    } else if bits >= from || ((acc << (to - bits)) & max) != 0 {
        return None;
    }
    Some(out)
}

/// `hrp` + `1` + data + checksum, lower case.
pub fn encode(hrp: &str, data: &[u8]) -> String {
    let five = convert(data, 8, 5, true).unwrap_or_default();
    let chk = polymod(hrp_expand(hrp).chain(five.iter().copied()).chain([0u8; 6])) ^ 1;
    let mut s = String::with_capacity(hrp.len() + 1 + five.len() + 6);
    s.push_str(hrp);
    s.push('1');
    for v in five
        .iter()
        .copied()
        .chain((0..6).map(|i| ((chk >> (5 * (5 - i))) & 31) as u8))
    {
        s.push(char::from(CHARSET[usize::from(v)]));
    }
    s
}

/// The data of a lower-case bech32 string with human-readable part `hrp`, or `None`.
pub fn decode(s: &str, hrp: &str) -> Option<Vec<u8>> {
    if s.len() > MAX_LEN || s.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let pos = s.rfind('1')?;
    if &s[..pos] != hrp || s.len() < pos + 7 {
        return None;
    }
    let five: Vec<u8> = s[pos + 1..]
        .bytes()
        .map(|c| CHARSET.iter().position(|&x| x == c).map(|p| p as u8))
        .collect::<Option<_>>()?;
    if polymod(hrp_expand(hrp).chain(five.iter().copied())) != 1 {
        return None;
    }
    convert(&five[..five.len() - 6], 5, 8, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_a_flipped_character() {
        let data: Vec<u8> = (0u8..32).collect();
        let s = encode("age", &data);
        assert!(s.starts_with("age1"));
        assert_eq!(decode(&s, "age").unwrap(), data);
        let mut bad = s.clone().into_bytes();
        let last = bad.len() - 1;
        bad[last] = if bad[last] == b'q' { b'p' } else { b'q' };
        assert!(decode(std::str::from_utf8(&bad).unwrap(), "age").is_none());
        assert!(decode(&s.to_ascii_uppercase(), "age").is_none());
        assert!(decode(&s, "other").is_none());
    }

    #[test]
    fn the_bip173_test_vector_checks() {
        // BIP 173's valid "a12uel5l" (hrp "a", no data).
        assert_eq!(decode("a12uel5l", "a").unwrap(), Vec::<u8>::new());
    }
}
