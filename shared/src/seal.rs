//! Sealing to a worker's key: the age v1 file format (<https://age-encryption.org/v1>) with its
//! X25519 recipient, so a fleet ticket or a renewed enrolment is a real age file that the
//! `age` tool opens with the worker's identity file, and that only that worker can open.
//!
//! Built on primitives already in both binaries: X25519 from `curve25519-dalek` (ed25519's
//! curve), HKDF-SHA-256, HMAC-SHA-256 and ChaCha20-Poly1305 from `ring` (rustls's provider).
//!
//! Guards against: a ticket read by anyone but its worker (the file key is wrapped to the
//! worker's X25519 key only; the store, another worker or a thief of the enrolment file hold
//! nothing that opens it), a tampered header (HMAC under a key derived from the file key) or
//! payload (every 64 KiB chunk authenticated, the last one marked, so truncation and
//! reordering are refused), a low-order share (all-zero shared secret refused, as age does),
//! and oversized input (the caller's cap is checked before anything is parsed; at most
//! [`MAX_STANZAS`] stanzas, each line at most [`MAX_LINE`] bytes). Errors name the rule
//! (`seal.*`), never a key or plaintext byte.
//! Does not check: who sealed the file (age has no sender authentication): what is inside
//! is verified by its own signature (a job token, a signed enrolment).

use base64::engine::general_purpose::STANDARD_NO_PAD as B64;
use base64::Engine as _;
use curve25519_dalek::montgomery::MontgomeryPoint;
use ring::{aead, hkdf, hmac};
use zeroize::{Zeroize, Zeroizing};

/// The age v1 intro line.
pub const INTRO: &str = "age-encryption.org/v1";
/// The recipient's bech32 human-readable part (`age1…`).
pub const RECIPIENT_HRP: &str = "age";
/// The identity's bech32 human-readable part (`AGE-SECRET-KEY-1…`, upper case).
pub const IDENTITY_HRP: &str = "age-secret-key-";
/// Most recipient stanzas read from a header.
pub const MAX_STANZAS: usize = 8;
/// Longest header line read.
pub const MAX_LINE: usize = 1024;
const CHUNK: usize = 64 * 1024;
const TAG: usize = 16;
const X25519_LABEL: &[u8] = b"age-encryption.org/v1/X25519";

/// Sealing or opening failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The sealed file is larger than the caller's cap; nothing was parsed.
    #[error("sealed file: too large (seal.too-large): limit {limit} bytes, seen {seen}")]
    TooLarge {
        /// The cap.
        limit: usize,
        /// Bytes seen.
        seen: usize,
    },
    /// The header is not an age v1 header of the accepted shape.
    #[error("sealed file: malformed age header (seal.header): {0}")]
    Header(&'static str),
    /// No stanza opens with this identity: sealed to another key.
    #[error("sealed file: not sealed to this worker's key (seal.recipient)")]
    NotForUs,
    /// The header MAC or a payload chunk does not authenticate.
    #[error("sealed file: does not authenticate (seal.integrity): {0}")]
    Integrity(&'static str),
    /// A key string is not a well-formed `age1…` / `AGE-SECRET-KEY-1…`.
    #[error("key: not a well-formed age {0} (seal.key)")]
    Key(&'static str),
    /// No randomness or a primitive refused.
    #[error("sealing failed (seal.crypto): {0}")]
    Crypto(&'static str),
}

/// A worker's public key (an age X25519 recipient).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recipient(pub [u8; 32]);

/// A worker's private key (an age X25519 identity). Zeroized on drop; no `Debug`.
pub struct Identity(Zeroizing<[u8; 32]>);

impl Recipient {
    /// Parses `age1…` (bech32, lower case).
    pub fn parse(s: &str) -> Result<Recipient, SealError> {
        let data = crate::bech32::decode(s.trim(), RECIPIENT_HRP)
            .ok_or(SealError::Key("recipient (age1…)"))?;
        let bytes: [u8; 32] = data
            .as_slice()
            .try_into()
            .map_err(|_| SealError::Key("recipient (age1…)"))?;
        Ok(Recipient(bytes))
    }

    /// `age1…`.
    pub fn encode(&self) -> String {
        crate::bech32::encode(RECIPIENT_HRP, &self.0)
    }
}

impl Identity {
    /// A new random identity.
    pub fn generate() -> Result<Identity, SealError> {
        let mut k = Zeroizing::new([0u8; 32]);
        random(&mut k[..])?;
        Ok(Identity(k))
    }

    /// Parses `AGE-SECRET-KEY-1…`, or an age identity file (comment lines `#` skipped; the
    /// first key line is taken).
    pub fn parse(text: &str) -> Result<Identity, SealError> {
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .ok_or(SealError::Key("identity (AGE-SECRET-KEY-1…)"))?;
        let lower = Zeroizing::new(line.to_ascii_lowercase());
        if line != line.to_ascii_uppercase() {
            return Err(SealError::Key("identity (AGE-SECRET-KEY-1…)"));
        }
        let mut data = crate::bech32::decode(&lower, IDENTITY_HRP)
            .ok_or(SealError::Key("identity (AGE-SECRET-KEY-1…)"))?;
        let mut k = Zeroizing::new([0u8; 32]);
        if data.len() != 32 {
            data.zeroize();
            return Err(SealError::Key("identity (AGE-SECRET-KEY-1…)"));
        }
        k.copy_from_slice(&data);
        data.zeroize();
        Ok(Identity(k))
    }

    /// `AGE-SECRET-KEY-1…` (upper case, as age writes it).
    pub fn encode(&self) -> Zeroizing<String> {
        Zeroizing::new(crate::bech32::encode(IDENTITY_HRP, &self.0[..]).to_ascii_uppercase())
    }

    /// The public half.
    pub fn recipient(&self) -> Recipient {
        Recipient(MontgomeryPoint::mul_base_clamped(*self.0).to_bytes())
    }
}

fn random(out: &mut [u8]) -> Result<(), SealError> {
    use rand_core::RngCore;
    rand_core::OsRng
        .try_fill_bytes(out)
        .map_err(|_| SealError::Crypto("no OS randomness"))
}

/// HKDF-SHA-256 with a 32-byte output.
fn hkdf32(ikm: &[u8], salt: &[u8], info: &[u8]) -> Result<Zeroizing<[u8; 32]>, SealError> {
    let mut out = Zeroizing::new([0u8; 32]);
    let info = [info];
    hkdf::Salt::new(hkdf::HKDF_SHA256, salt)
        .extract(ikm)
        .expand(&info, hkdf::HKDF_SHA256)
        .and_then(|okm| okm.fill(&mut out[..]))
        .map_err(|_| SealError::Crypto("hkdf"))?;
    Ok(out)
}

fn aead_key(key: &[u8; 32]) -> Result<aead::LessSafeKey, SealError> {
    aead::UnboundKey::new(&aead::CHACHA20_POLY1305, key)
        .map(aead::LessSafeKey::new)
        .map_err(|_| SealError::Crypto("aead key"))
}

fn header_mac_key(file_key: &[u8; 16]) -> Result<hmac::Key, SealError> {
    let k = hkdf32(file_key, b"", b"header")?;
    Ok(hmac::Key::new(hmac::HMAC_SHA256, &k[..]))
}

/// The X25519 wrap key for `share` to `recipient` from the shared secret.
fn wrap_key(
    shared: &MontgomeryPoint,
    share: &[u8; 32],
    recipient: &[u8; 32],
) -> Result<Zeroizing<[u8; 32]>, SealError> {
    if shared.to_bytes() == [0u8; 32] {
        return Err(SealError::Integrity("low-order X25519 share"));
    }
    let mut salt = [0u8; 64];
    salt[..32].copy_from_slice(share);
    salt[32..].copy_from_slice(recipient);
    hkdf32(&shared.to_bytes(), &salt, X25519_LABEL)
}

/// Seals `plaintext` to `to`: an age v1 file with one X25519 stanza.
pub fn seal(to: &Recipient, plaintext: &[u8]) -> Result<Vec<u8>, SealError> {
    let mut file_key = Zeroizing::new([0u8; 16]);
    random(&mut file_key[..])?;
    let mut eph = Zeroizing::new([0u8; 32]);
    random(&mut eph[..])?;
    let share = MontgomeryPoint::mul_base_clamped(*eph).to_bytes();
    let shared = MontgomeryPoint(to.0).mul_clamped(*eph);
    let wrap = wrap_key(&shared, &share, &to.0)?;
    let mut body = file_key.to_vec();
    aead_key(&wrap)?
        .seal_in_place_append_tag(
            aead::Nonce::assume_unique_for_key([0u8; 12]),
            aead::Aad::empty(),
            &mut body,
        )
        .map_err(|_| SealError::Crypto("wrap"))?;
    let mut header = format!(
        "{INTRO}\n-> X25519 {}\n{}\n---",
        B64.encode(share),
        B64.encode(&body)
    );
    let mac = hmac::sign(&header_mac_key(&file_key)?, header.as_bytes());
    header.push(' ');
    header.push_str(&B64.encode(mac.as_ref()));
    header.push('\n');
    let mut out = header.into_bytes();
    let mut nonce = [0u8; 16];
    random(&mut nonce)?;
    out.extend_from_slice(&nonce);
    let payload = aead_key(&*hkdf32(&file_key[..], &nonce, b"payload")?)?;
    let chunks: Vec<&[u8]> = if plaintext.is_empty() {
        vec![&[]]
    } else {
        plaintext.chunks(CHUNK).collect()
    };
    for (i, chunk) in chunks.iter().enumerate() {
        let mut buf = chunk.to_vec();
        payload
            .seal_in_place_append_tag(
                chunk_nonce(i as u64, i + 1 == chunks.len()),
                aead::Aad::empty(),
                &mut buf,
            )
            .map_err(|_| SealError::Crypto("payload"))?;
        out.extend_from_slice(&buf);
        buf.zeroize();
    }
    Ok(out)
}

fn chunk_nonce(counter: u64, last: bool) -> aead::Nonce {
    let mut n = [0u8; 12];
    n[3..11].copy_from_slice(&counter.to_be_bytes());
    n[11] = u8::from(last);
    aead::Nonce::assume_unique_for_key(n)
}

/// One header line, without its newline, from `rest`; advances `rest`.
fn next_line<'a>(rest: &mut &'a [u8]) -> Result<&'a str, SealError> {
    let end = rest
        .iter()
        .take(MAX_LINE + 1)
        .position(|&b| b == b'\n')
        .ok_or(SealError::Header(
            "a line is longer than 1 KiB or unterminated",
        ))?;
    let line = std::str::from_utf8(&rest[..end]).map_err(|_| SealError::Header("not ASCII"))?;
    if !line.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        return Err(SealError::Header("not printable ASCII"));
    }
    *rest = &rest[end + 1..];
    Ok(line)
}

fn b64(s: &str) -> Result<Vec<u8>, SealError> {
    B64.decode(s)
        .map_err(|_| SealError::Header("bad base64 (age: canonical, unpadded)"))
}

/// Opens an age v1 file sealed to `id`, at most `max` bytes in total.
pub fn open(id: &Identity, sealed: &[u8], max: usize) -> Result<Zeroizing<Vec<u8>>, SealError> {
    if sealed.len() > max {
        return Err(SealError::TooLarge {
            limit: max,
            seen: sealed.len(),
        });
    }
    let mut rest = sealed;
    if next_line(&mut rest)? != INTRO {
        return Err(SealError::Header("not an age v1 file"));
    }
    let ours = id.recipient();
    let mut file_key: Option<Zeroizing<[u8; 16]>> = None;
    let mut stanzas = 0;
    let mac_line = loop {
        let line = next_line(&mut rest)?;
        if line.starts_with("---") {
            break line;
        }
        let args = line
            .strip_prefix("-> ")
            .ok_or(SealError::Header("expected a stanza or the MAC line"))?;
        stanzas += 1;
        if stanzas > MAX_STANZAS {
            return Err(SealError::Header("more than 8 stanzas"));
        }
        // The body: lines of 64 columns, ended by a shorter one.
        let mut body = String::new();
        loop {
            let l = next_line(&mut rest)?;
            body.push_str(l);
            if l.len() < 64 {
                break;
            }
            if body.len() > 4 * MAX_LINE {
                return Err(SealError::Header("stanza body too long"));
            }
        }
        let mut words = args.split(' ');
        if words.next() != Some("X25519") || file_key.is_some() {
            continue;
        }
        let (Some(share), None) = (words.next(), words.next()) else {
            return Err(SealError::Header("X25519 stanza takes one argument"));
        };
        let share: [u8; 32] = b64(share)?
            .try_into()
            .map_err(|_| SealError::Header("X25519 share is not 32 bytes"))?;
        let mut body = b64(&body)?;
        if body.len() != 16 + TAG {
            return Err(SealError::Header("X25519 body is not 32 bytes"));
        }
        let shared = MontgomeryPoint(share).mul_clamped(*id.0);
        let wrap = wrap_key(&shared, &share, &ours.0)?;
        if let Ok(k) = aead_key(&wrap)?.open_in_place(
            aead::Nonce::assume_unique_for_key([0u8; 12]),
            aead::Aad::empty(),
            &mut body,
        ) {
            let mut fk = Zeroizing::new([0u8; 16]);
            fk.copy_from_slice(k);
            file_key = Some(fk);
        }
        body.zeroize();
    };
    let file_key = file_key.ok_or(SealError::NotForUs)?;
    let mac = mac_line
        .strip_prefix("--- ")
        .ok_or(SealError::Header("MAC line"))
        .and_then(b64)?;
    let header_len = sealed.len() - rest.len() - 1 - (mac_line.len() - 3);
    hmac::verify(&header_mac_key(&file_key)?, &sealed[..header_len], &mac)
        .map_err(|_| SealError::Integrity("header MAC"))?;
    let (nonce, mut chunks) = rest
        .split_at_checked(16)
        .ok_or(SealError::Integrity("payload shorter than its nonce"))?;
    let payload = aead_key(&*hkdf32(&file_key[..], nonce, b"payload")?)?;
    let mut out = Zeroizing::new(Vec::with_capacity(chunks.len()));
    let mut counter = 0u64;
    loop {
        let take = chunks.len().min(CHUNK + TAG);
        let last = take == chunks.len();
        if take < TAG {
            return Err(SealError::Integrity("truncated payload"));
        }
        let mut buf = chunks[..take].to_vec();
        let plain = payload
            .open_in_place(chunk_nonce(counter, last), aead::Aad::empty(), &mut buf)
            .map_err(|_| SealError::Integrity("payload chunk"))?;
        if last && plain.is_empty() && counter > 0 {
            return Err(SealError::Integrity("empty last chunk after a full one"));
        }
        out.extend_from_slice(plain);
        buf.zeroize();
        chunks = &chunks[take..];
        counter += 1;
        if last {
            return Ok(out);
        }
    }
}

#[cfg(test)]
#[path = "seal_tests.rs"]
mod tests;
