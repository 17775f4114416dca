//! Built-in allowlist checks (placeholders, public values, digests, word-like names) and
//! Shannon entropy. Pure functions over a candidate secret taken from a scanned file.
//!
//! Guards against: false positives on documentation values, templated configs, digests
//! and names. Every check is bounded by the length of the candidate (no regex here).
//! Does not check: whether a value is live; that is never attempted.

use crate::rule::Check;

/// Shannon entropy of `bytes`, in bits per byte (0.0 for empty input).
pub fn shannon_entropy(bytes: &[u8]) -> f64 {
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let n = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Secrets longer than this are never judged placeholders (a key block's body can hold a
/// few letters that spell `dummy` by chance).
const PLACEHOLDER_MAX_LEN: usize = 512;

/// Case-insensitive substrings that mark a documentation or template value.
const PLACEHOLDER_WORDS: &[&[u8]] = &[
    b"example",
    b"changeme",
    b"change_me",
    b"change-me",
    b"placeholder",
    b"your_",
    b"your-",
    b"yourapi",
    b"yourtoken",
    b"yoursecret",
    b"yourkey",
    b"yourpassword",
    b"_here",
    b"-here",
    b"dummy",
    b"notreal",
    b"not_real",
    b"not-real",
    b"not_a_real",
    b"fake_",
    b"_fake",
    b"fakekey",
    b"faketoken",
    b"replace_me",
    b"replaceme",
    b"replace-me",
    b"insert_",
    b"insert-",
    b"redacted",
    b"1234567",
    b"abcdefg",
    b"0123456",
];

/// Template and interpolation openers.
const TEMPLATE_MARKS: &[&[u8]] = &[b"${", b"{{", b"$(", b"%(", b"#{", b"<%", b"%s"];

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

/// The always-on check: any value holding a redaction marker word. Keeps
/// `[REDACTED:<rule>]` markers from ever being reported, whatever the rule.
pub fn is_redaction_marker(secret: &[u8]) -> bool {
    secret.len() >= 8
        && secret
            .windows(8)
            .any(|w| w.eq_ignore_ascii_case(b"redacted"))
}

/// Placeholders: templates, documentation values, masks, trivial values.
pub fn is_placeholder(secret: &[u8]) -> bool {
    if secret.is_empty() {
        return true;
    }
    if secret.len() > PLACEHOLDER_MAX_LEN {
        return false;
    }
    if TEMPLATE_MARKS.iter().any(|m| contains(secret, m)) {
        return true;
    }
    if secret.first() == Some(&b'<') && secret.last() == Some(&b'>') {
        return true;
    }
    // `$NAME` shell/env reference.
    if let Some(rest) = secret.strip_prefix(b"$") {
        if !rest.is_empty()
            && rest
                .first()
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
            && rest.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            return true;
        }
    }
    let lower = secret.to_ascii_lowercase();
    if PLACEHOLDER_WORDS.iter().any(|w| contains(&lower, w)) {
        return true;
    }
    // Masks: `xxxx…`, `****`, `....`, `####`.
    let alnum = secret.iter().filter(|c| c.is_ascii_alphanumeric()).count();
    let xs = lower.iter().filter(|&&c| c == b'x').count();
    if max_run(&lower, |c| c == b'x') >= 6 || (xs >= 4 && xs * 10 >= alnum * 3) {
        return true;
    }
    if max_run(secret, |c| c == b'*') >= 3
        || max_run(secret, |c| c == b'.') >= 3
        || max_run(secret, |c| c == b'#') >= 4
    {
        return true;
    }
    // One character repeated over a good part of the value (not a run of `A`s inside a
    // key blob: the OpenSSH key header has eleven), or almost no variety.
    let run = longest_repeat(secret);
    if run >= 8 && run * 3 >= secret.len() {
        return true;
    }
    if secret.len() >= 8 && distinct(secret) <= 3 {
        return true;
    }
    false
}

fn max_run(s: &[u8], pred: impl Fn(u8) -> bool) -> usize {
    let (mut best, mut cur) = (0, 0);
    for &c in s {
        if pred(c) {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}

fn longest_repeat(s: &[u8]) -> usize {
    let (mut best, mut cur, mut prev) = (0, 0, None);
    for &c in s {
        if Some(c) == prev {
            cur += 1;
        } else {
            cur = 1;
            prev = Some(c);
        }
        best = best.max(cur);
    }
    best
}

fn distinct(s: &[u8]) -> usize {
    let mut seen = [false; 256];
    let mut n = 0;
    for &c in s {
        if !seen[usize::from(c)] {
            seen[usize::from(c)] = true;
            n += 1;
        }
    }
    n
}

/// SSH public key blob prefixes (base64 of the key type string).
const SSH_PUBLIC_BLOBS: &[&[u8]] = &[
    b"AAAAB3NzaC1yc2E",
    b"AAAAB3NzaC1kc3M",
    b"AAAAC3NzaC1lZDI1NTE5",
    b"AAAAE2VjZHNhLXNoYTItbmlzdHA",
    b"AAAAGnNrLXNzaC1lZDI1NTE5",
];

/// Known public values: lockfile integrity hashes, SSH public key blobs, base64-encoded
/// PEM certificates and public keys.
pub fn is_known_public(secret: &[u8]) -> bool {
    for prefix in [&b"sha1-"[..], b"sha256-", b"sha384-", b"sha512-"] {
        if let Some(rest) = secret.strip_prefix(prefix) {
            let body = rest
                .strip_suffix(b"==")
                .or_else(|| rest.strip_suffix(b"="))
                .unwrap_or(rest);
            if body.len() >= 20
                && body
                    .iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
            {
                return true;
            }
        }
    }
    SSH_PUBLIC_BLOBS.iter().any(|p| secret.starts_with(p))
        || BASE64_PUBLIC_PEM.iter().any(|p| secret.starts_with(p))
}

/// Base64 of `-----BEGIN CERTIFICATE-----` and `-----BEGIN PUBLIC KEY-----` (kubeconfig
/// `certificate-authority-data` and friends).
const BASE64_PUBLIC_PEM: &[&[u8]] = &[
    b"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
    b"LS0tLS1CRUdJTiBQVUJMSUMgS0VZLS0tLS0",
];

fn is_hex_digest(s: &[u8]) -> bool {
    matches!(s.len(), 32 | 40 | 64 | 96 | 128)
        && (s.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
            || s.iter().all(|c| matches!(c, b'0'..=b'9' | b'A'..=b'F')))
}

fn is_uuid(s: &[u8]) -> bool {
    s.len() == 36
        && s.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Names that make a hex or UUID value a credential rather than an identifier.
const STRONG_NAMES: &[&[u8]] = &[
    b"secret",
    b"passw",
    b"pwd",
    b"token",
    b"private",
    b"credential",
    b"auth",
    b"apikey",
    b"api_key",
    b"api-key",
    b"api.key",
    b"accesskey",
    b"access_key",
    b"access-key",
];

/// A digest or UUID whose name (the text of the match before the secret) is not a
/// credential name.
pub fn is_digest_or_uuid(secret: &[u8], name: &[u8]) -> bool {
    if !(is_hex_digest(secret) || is_uuid(secret)) {
        return false;
    }
    let lower = name.to_ascii_lowercase();
    !STRONG_NAMES.iter().any(|w| contains(&lower, w))
}

fn is_word(seg: &[u8]) -> bool {
    let letters = seg.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    let (word, digits) = seg.split_at(letters);
    if !digits.iter().all(u8::is_ascii_digit) {
        return false;
    }
    if word.is_empty() {
        return !digits.is_empty();
    }
    let all_lower = word.iter().all(u8::is_ascii_lowercase);
    let all_upper = word.iter().all(u8::is_ascii_uppercase);
    let capitalized = word.first().is_some_and(u8::is_ascii_uppercase)
        && word
            .get(1..)
            .is_some_and(|r| r.iter().all(u8::is_ascii_lowercase));
    all_lower || all_upper || capitalized
}

fn word_segments(secret: &[u8]) -> Option<usize> {
    let mut n = 0;
    for seg in secret.split(|c| !c.is_ascii_alphanumeric()) {
        if seg.is_empty() {
            continue;
        }
        if !is_word(seg) {
            return None;
        }
        n += 1;
    }
    Some(n)
}

/// Every part between separators is a plain word or number.
pub fn is_word_like(secret: &[u8]) -> bool {
    word_segments(secret).is_some_and(|n| n >= 1)
}

/// Like [`is_word_like`], for values of two or more parts.
pub fn is_word_like_multi(secret: &[u8]) -> bool {
    word_segments(secret).is_some_and(|n| n >= 2)
}

/// `a.b`, `self.password`, `this.props.token` (parts are names: letters, `_`, `$`, then
/// optional trailing digits).
pub fn is_dotted_identifier(secret: &[u8]) -> bool {
    let mut parts = 0;
    for part in secret.split(|c| *c == b'.') {
        // Letters, `_` and `$`, digits only at the end (`user2`): `s3cr3t` is not a name.
        let letters = part
            .iter()
            .take_while(|c| c.is_ascii_alphabetic() || **c == b'_' || **c == b'$')
            .count();
        let ok = letters > 0
            && part
                .get(letters..)
                .is_some_and(|d| d.iter().all(u8::is_ascii_digit));
        if !ok {
            return false;
        }
        parts += 1;
    }
    parts >= 2
}

/// Runs one built-in check. `name` is the text of the match before the secret.
pub fn run_check(check: Check, secret: &[u8], name: &[u8]) -> bool {
    match check {
        Check::Placeholder => is_placeholder(secret),
        Check::KnownPublic => is_known_public(secret),
        Check::DigestOrUuid => is_digest_or_uuid(secret, name),
        Check::WordLike => is_word_like(secret),
        Check::WordLikeMulti => is_word_like_multi(secret),
        Check::DottedIdentifier => is_dotted_identifier(secret),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_bounds() {
        assert_eq!(shannon_entropy(b""), 0.0);
        assert_eq!(shannon_entropy(b"aaaa"), 0.0);
        assert!((shannon_entropy(b"ab") - 1.0).abs() < 1e-9);
        assert!(shannon_entropy(b"0123456789abcdef") > 3.99);
    }

    #[test]
    fn placeholders_are_recognised() {
        for p in [
            &b"${API_TOKEN}"[..],
            b"{{ .Values.token }}",
            b"<your-token>",
            b"changeme",
            b"xxxxxxxxxxxxxxxxxxxx",
            b"ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            b"your_api_key_here",
            b"AKIAIOSFODNN7EXAMPLE",
            b"********",
            b"$DB_PASSWORD",
            b"aaaaaaaaaaaaaaaaaaaa",
            b"[REDACTED:jwt]",
        ] {
            assert!(is_placeholder(p), "{}", String::from_utf8_lossy(p));
        }
        for s in [
            &b"q8Zr2LmT0vXc4Nw7Ka1s"[..],
            b"Summer2024!",
            b"ghp_4Fq9ZtL2mVx8Rk1Wc6Jp0Yd3Nb7Hs5Ga2Qe9",
        ] {
            assert!(!is_placeholder(s), "{}", String::from_utf8_lossy(s));
        }
    }

    #[test]
    fn long_blocks_are_never_placeholders() {
        let mut block = b"-----BEGIN RSA PRIVATE KEY-----\n".to_vec();
        block.extend(std::iter::repeat_n(b'x', 600));
        assert!(!is_placeholder(&block));
        assert!(is_redaction_marker(b"[REDACTED:private-key-pem]"));
    }

    #[test]
    fn known_public_values() {
        assert!(is_known_public(b"sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="));
        assert!(is_known_public(
            b"AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
        ));
        assert!(!is_known_public(b"sha512-short"));
    }

    #[test]
    fn digests_uuids_words_identifiers() {
        let sha1 = b"da39a3ee5e6b4b0d3255bfef95601890afd80709";
        assert!(is_digest_or_uuid(sha1, b"cache_key = \""));
        assert!(!is_digest_or_uuid(sha1, b"SECRET_KEY = \""));
        assert!(is_digest_or_uuid(
            b"123e4567-e89b-12d3-a456-426614174000",
            b"request_key: "
        ));
        assert!(is_word_like(b"user_profile_12345"));
        assert!(is_word_like(b"my-tls-secret"));
        assert!(!is_word_like(b"q8Zr2LmT0vXc4Nw7Ka1s"));
        assert!(!is_word_like_multi(b"Summer2024!"));
        assert!(is_word_like_multi(b"confirm_password"));
        assert!(is_dotted_identifier(b"self.password"));
        assert!(!is_dotted_identifier(b"s3cr3t.Pa55"));
    }
}
