//! ed25519 keys and key files: PKCS#8 PEM private keys (mode 0600), SPKI PEM public keys.
//!
//! Guards against: private keys readable by group/other, key files swapped for symlinks or
//! special files, oversized key files read into memory, weak (small-order) or malformed public
//! keys, non-strict signatures (ed25519 malleability), and key material leaking into logs:
//! [`SigningKey`] has no `Debug`, `Display` or `Serialize`, and zeroizes on drop.
//!
//! On `Ok`: a [`SigningKey`] is a valid ed25519 key; a [`PublicKey`] is a valid, non-weak
//! ed25519 point; [`PublicKey::verify`] passed `verify_strict`.
//!
//! Does not check: whether a key is the one you meant to trust. Pinning (comparing against the
//! trusted key or the job key in the trusted record) is the caller's job; see `dsse`.
//!
//! Key files are Unix files; the permission checks use Unix modes.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use base64::Engine as _;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey};
use ed25519_dalek::Signer as _;
use zeroize::Zeroizing;

use crate::digest::Sha256Digest;

/// Largest key file (private or public) we read, in bytes. A PEM ed25519 key is under 200.
pub const MAX_KEY_FILE_BYTES: u64 = 16 * 1024;

/// DER prefix of a PKCS#8 v1 ed25519 private key (RFC 8410 section 7); the 32-byte seed follows.
const PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];
/// DER prefix of an SPKI ed25519 public key (RFC 8410 section 4); the 32-byte key follows.
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// A key file could not be read, written or trusted.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The file system refused an operation on a key file.
    #[error("key file {path}: cannot {op} (key.io): {source}")]
    Io {
        /// The key file.
        path: String,
        /// What we tried (`open`, `create`, `read`, `write`, `sync`, `stat`).
        op: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A private key file is readable or writable by group or other.
    #[error(
        "private key {path} has mode {mode:04o}, group/other bits set (key.permissions): \
         refusing to use it; run `chmod 600 {path}`"
    )]
    InsecurePermissions {
        /// The key file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// A private key path is a symlink.
    #[error(
        "private key {path} is a symlink (key.symlink): refusing to follow it; \
         point at the real file"
    )]
    Symlink {
        /// The key file.
        path: String,
    },
    /// A key path is not a regular file (directory, FIFO, device), or changed while opening.
    #[error("key file {path} is not a regular file (key.not-file): {reason}")]
    NotAFile {
        /// The key file.
        path: String,
        /// What was found.
        reason: &'static str,
    },
    /// A key file is larger than [`MAX_KEY_FILE_BYTES`].
    #[error("key file {path}: too large (key.too-large): limit {limit} bytes, seen {seen}")]
    TooLarge {
        /// The key file.
        path: String,
        /// The limit in bytes.
        limit: u64,
        /// The size seen (at least).
        seen: u64,
    },
    /// A PEM document is not an ed25519 key of the expected kind.
    #[error("{what}: not an ed25519 {kind} PEM (key.pem): {reason}")]
    Pem {
        /// The key file, or `"PEM text"` when parsed from memory.
        what: String,
        /// `private key (PKCS#8)` or `public key (SPKI)`.
        kind: &'static str,
        /// Why it was refused (never key material).
        reason: String,
    },
    /// A hex-encoded seed is not exactly 64 lowercase hex digits.
    #[error("signing key seed is malformed (key.seed-hex): expected 64 lowercase hex digits")]
    SeedHex,
    /// Raw public key bytes are not a valid ed25519 point, or the hex is malformed.
    #[error("public key is malformed (key.public): {reason}")]
    BadPublicKey {
        /// Why.
        reason: &'static str,
    },
    /// A public key is a small-order (weak) point, for which forgeries are trivial.
    #[error("public key {key_id} is a weak, small-order point (key.weak): refusing it")]
    WeakPublicKey {
        /// Its key id.
        key_id: String,
    },
    /// A signature did not verify under the key (strict ed25519 verification).
    #[error("signature does not verify under key {key_id} (key.signature)")]
    BadSignature {
        /// The key id of the key tried.
        key_id: String,
    },
}

fn io_err(path: &Path, op: &'static str) -> impl FnOnce(std::io::Error) -> KeyError {
    let path = path.display().to_string();
    move |source| KeyError::Io { path, op, source }
}

fn pem_block(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        // base64 output is ASCII, so every chunk is valid UTF-8.
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// An ed25519 signing key. No `Debug`, `Display`, `Serialize` or `Clone`; zeroized on drop
/// (the wrapped `ed25519_dalek::SigningKey` zeroizes its secret in `Drop`).
pub struct SigningKey(ed25519_dalek::SigningKey);

impl SigningKey {
    /// Generates a fresh key from the operating system's CSPRNG.
    pub fn generate() -> SigningKey {
        SigningKey(ed25519_dalek::SigningKey::generate(&mut rand_core::OsRng))
    }

    /// Makes a key from a 32-byte seed (RFC 8032 secret key).
    pub fn from_seed(seed: [u8; 32]) -> SigningKey {
        let seed = Zeroizing::new(seed);
        SigningKey(ed25519_dalek::SigningKey::from_bytes(&seed))
    }

    /// The seed as 64 lowercase hex digits (the per-job key inside a token). Zeroized on drop.
    pub fn seed_hex(&self) -> Zeroizing<String> {
        let seed = Zeroizing::new(self.0.to_bytes());
        Zeroizing::new(hex::encode(*seed))
    }

    /// Parses a seed written by [`SigningKey::seed_hex`]: exactly 64 lowercase hex digits
    /// (rule `key.seed-hex`). The error never echoes the input.
    pub fn from_seed_hex(s: &str) -> Result<SigningKey, KeyError> {
        let b = s.as_bytes();
        if b.len() != 64 || !b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(KeyError::SeedHex);
        }
        let mut seed = Zeroizing::new([0u8; 32]);
        hex::decode_to_slice(b, &mut *seed).map_err(|_| KeyError::SeedHex)?;
        Ok(SigningKey(ed25519_dalek::SigningKey::from_bytes(&seed)))
    }

    /// The public half.
    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }

    /// Signs `msg` (pure ed25519, RFC 8032).
    pub fn sign(&self, msg: &[u8]) -> [u8; 64] {
        self.0.sign(msg).to_bytes()
    }

    /// PKCS#8 v1 PEM (RFC 8410 section 10.3 shape, `-----BEGIN PRIVATE KEY-----`), readable by
    /// OpenSSL. Zeroized on drop.
    pub fn to_pkcs8_pem(&self) -> Zeroizing<String> {
        let mut der = Zeroizing::new([0u8; 48]);
        der[..16].copy_from_slice(&PKCS8_PREFIX);
        der[16..].copy_from_slice(self.0.as_bytes());
        let b64 = Zeroizing::new(base64::engine::general_purpose::STANDARD.encode(*der));
        Zeroizing::new(format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            b64.as_str()
        ))
    }

    /// Parses a PKCS#8 PEM ed25519 private key (v1, or v2 whose embedded public key must match).
    pub fn from_pkcs8_pem(pem: &str) -> Result<SigningKey, KeyError> {
        Self::from_pkcs8_pem_named("PEM text", pem)
    }

    fn from_pkcs8_pem_named(what: &str, pem: &str) -> Result<SigningKey, KeyError> {
        ed25519_dalek::SigningKey::from_pkcs8_pem(pem)
            .map(SigningKey)
            .map_err(|e| KeyError::Pem {
                what: what.to_owned(),
                kind: "private key (PKCS#8)",
                reason: e.to_string(),
            })
    }

    /// Seed followed by public key (64 bytes), the secret-key form pasetors expects.
    pub(crate) fn keypair_bytes(&self) -> Zeroizing<[u8; 64]> {
        Zeroizing::new(self.0.to_keypair_bytes())
    }
}

/// An ed25519 public key (never a weak point).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PublicKey(ed25519_dalek::VerifyingKey);

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", hex::encode(self.0.as_bytes()))
    }
}

impl PublicKey {
    /// Makes a key from its raw 32 bytes. Refuses encodings that are not a curve point
    /// (`key.public`) and small-order points (`key.weak`).
    pub fn from_raw(raw: [u8; 32]) -> Result<PublicKey, KeyError> {
        let vk =
            ed25519_dalek::VerifyingKey::from_bytes(&raw).map_err(|_| KeyError::BadPublicKey {
                reason: "not a valid ed25519 point encoding",
            })?;
        let key = PublicKey(vk);
        if key.0.is_weak() {
            return Err(KeyError::WeakPublicKey {
                key_id: key.key_id(),
            });
        }
        Ok(key)
    }

    /// Parses 64 lowercase hex digits of a raw key (as in a job record).
    pub fn from_raw_hex(s: &str) -> Result<PublicKey, KeyError> {
        let b = s.as_bytes();
        let mut raw = [0u8; 32];
        if b.len() != 64
            || !b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
            || hex::decode_to_slice(b, &mut raw).is_err()
        {
            return Err(KeyError::BadPublicKey {
                reason: "expected 64 lowercase hex digits",
            });
        }
        PublicKey::from_raw(raw)
    }

    /// The raw 32 bytes.
    pub fn raw(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    /// The raw 32 bytes as 64 lowercase hex digits.
    pub fn raw_hex(&self) -> String {
        hex::encode(self.0.as_bytes())
    }

    /// The key id: lowercase hex SHA-256 of the raw 32-byte key. Used as the DSSE `keyid`.
    pub fn key_id(&self) -> String {
        Sha256Digest::of_bytes(self.0.as_bytes()).to_hex()
    }

    /// Verifies `sig` over `msg` with strict ed25519 rules (canonical `S`, no small-order `R`
    /// or key). A signature that is not 64 bytes fails (`key.signature`).
    pub fn verify(&self, msg: &[u8], sig: &[u8]) -> Result<(), KeyError> {
        let bad = || KeyError::BadSignature {
            key_id: self.key_id(),
        };
        let sig = ed25519_dalek::Signature::from_slice(sig).map_err(|_| bad())?;
        self.0.verify_strict(msg, &sig).map_err(|_| bad())
    }

    /// SPKI PEM (`-----BEGIN PUBLIC KEY-----`, RFC 8410 section 10.1 shape), readable by OpenSSL.
    pub fn to_spki_pem(&self) -> String {
        let mut der = Vec::with_capacity(44);
        der.extend_from_slice(&SPKI_PREFIX);
        der.extend_from_slice(self.0.as_bytes());
        pem_block("PUBLIC KEY", &der)
    }

    /// Parses an SPKI PEM ed25519 public key (refusing weak points).
    pub fn from_spki_pem(pem: &str) -> Result<PublicKey, KeyError> {
        Self::from_spki_pem_named("PEM text", pem)
    }

    fn from_spki_pem_named(what: &str, pem: &str) -> Result<PublicKey, KeyError> {
        let vk =
            ed25519_dalek::VerifyingKey::from_public_key_pem(pem).map_err(|e| KeyError::Pem {
                what: what.to_owned(),
                kind: "public key (SPKI)",
                reason: e.to_string(),
            })?;
        PublicKey::from_raw(vk.to_bytes())
    }
}

/// Writes `key` as PKCS#8 PEM to a new file created with mode 0600 (set at open, not after),
/// then fsyncs it and its directory. Refuses to overwrite an existing file.
pub fn write_private_key(path: &Path, key: &SigningKey) -> Result<(), KeyError> {
    let pem = key.to_pkcs8_pem();
    write_new_file(path, pem.as_bytes(), 0o600)
}

/// Writes `key` as SPKI PEM to a new file (mode 0644), fsynced. Refuses to overwrite.
pub fn write_public_key(path: &Path, key: &PublicKey) -> Result<(), KeyError> {
    write_new_file(path, key.to_spki_pem().as_bytes(), 0o644)
}

fn write_new_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), KeyError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(io_err(path, "create (new file, never overwritten)"))?;
    file.write_all(bytes).map_err(io_err(path, "write"))?;
    file.sync_all().map_err(io_err(path, "sync"))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err(path, "sync the directory of"))?;
    }
    Ok(())
}

/// Reads at most [`MAX_KEY_FILE_BYTES`] from an opened key file into a zeroizing buffer.
fn read_capped(path: &Path, file: &mut File) -> Result<Zeroizing<String>, KeyError> {
    let limit = MAX_KEY_FILE_BYTES;
    // Capacity fixed up front so the buffer never reallocates (and leaves no unzeroized copy).
    let mut text = Zeroizing::new(String::with_capacity(limit as usize + 1));
    file.take(limit + 1)
        .read_to_string(&mut text)
        .map_err(io_err(path, "read"))?;
    if text.len() as u64 > limit {
        return Err(KeyError::TooLarge {
            path: path.display().to_string(),
            limit,
            seen: text.len() as u64,
        });
    }
    Ok(text)
}

/// Loads a PKCS#8 PEM private key. Refuses (before reading a byte of it) a symlink
/// (`key.symlink`), anything but a regular file (`key.not-file`), any group/other permission
/// bit (`key.permissions`) and files over [`MAX_KEY_FILE_BYTES`] (`key.too-large`). The file
/// opened must be the one inspected (same device and inode), so a swap between the check and
/// the open is refused too.
pub fn load_private_key(path: &Path) -> Result<SigningKey, KeyError> {
    let shown = || path.display().to_string();
    let meta = std::fs::symlink_metadata(path).map_err(io_err(path, "stat"))?;
    if meta.file_type().is_symlink() {
        return Err(KeyError::Symlink { path: shown() });
    }
    if !meta.is_file() {
        return Err(KeyError::NotAFile {
            path: shown(),
            reason: "a directory, FIFO, socket or device",
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(KeyError::InsecurePermissions {
            path: shown(),
            mode,
        });
    }
    if meta.len() > MAX_KEY_FILE_BYTES {
        return Err(KeyError::TooLarge {
            path: shown(),
            limit: MAX_KEY_FILE_BYTES,
            seen: meta.len(),
        });
    }
    let mut file = File::open(path).map_err(io_err(path, "open"))?;
    let opened = file.metadata().map_err(io_err(path, "stat"))?;
    if opened.dev() != meta.dev() || opened.ino() != meta.ino() || !opened.is_file() {
        return Err(KeyError::NotAFile {
            path: shown(),
            reason: "the file changed between inspection and open",
        });
    }
    let mode = opened.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(KeyError::InsecurePermissions {
            path: shown(),
            mode,
        });
    }
    let text = read_capped(path, &mut file)?;
    SigningKey::from_pkcs8_pem_named(&shown(), &text)
}

/// Loads an SPKI PEM public key from a regular file of at most [`MAX_KEY_FILE_BYTES`].
pub fn load_public_key(path: &Path) -> Result<PublicKey, KeyError> {
    let mut file = File::open(path).map_err(io_err(path, "open"))?;
    let meta = file.metadata().map_err(io_err(path, "stat"))?;
    if !meta.is_file() {
        return Err(KeyError::NotAFile {
            path: path.display().to_string(),
            reason: "a directory, FIFO, socket or device",
        });
    }
    let text = read_capped(path, &mut file)?;
    PublicKey::from_spki_pem_named(&path.display().to_string(), &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 8410 section 10.3 (private key) and the RFC 8032 test 1 key pair.
    const RFC8410_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----\n\
        MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n\
        -----END PRIVATE KEY-----\n";
    const RFC8032_SEED: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
    const RFC8032_PUB: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    const RFC8032_SIG_EMPTY: &str = "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155\
                                     5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";

    fn mode_of(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn rfc8032_vector_signs_and_verifies() {
        let key = SigningKey::from_seed_hex(RFC8032_SEED).unwrap();
        assert_eq!(key.public().raw_hex(), RFC8032_PUB);
        assert_eq!(hex::encode(key.sign(b"")), RFC8032_SIG_EMPTY);
        key.public().verify(b"", &key.sign(b"")).unwrap();
        assert_eq!(key.seed_hex().as_str(), RFC8032_SEED);
        assert_eq!(&key.keypair_bytes()[32..], &key.public().raw());
    }

    #[test]
    fn rejects_tampered_message_signature_and_wrong_key() {
        let key = SigningKey::generate();
        let other = SigningKey::generate();
        let sig = key.sign(b"hello");
        key.public().verify(b"hello", &sig).unwrap();
        let err = key.public().verify(b"hellp", &sig).unwrap_err();
        assert!(err.to_string().contains("key.signature"), "{err}");
        assert!(other.public().verify(b"hello", &sig).is_err());
        for i in 0..64 {
            let mut bad = sig;
            bad[i] ^= 0x01;
            assert!(key.public().verify(b"hello", &bad).is_err(), "byte {i}");
        }
        assert!(key.public().verify(b"hello", &sig[..63]).is_err());
    }

    #[test]
    fn rejects_weak_and_malformed_public_keys() {
        // The identity point (small order).
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let err = PublicKey::from_raw(identity).unwrap_err();
        assert!(err.to_string().contains("key.weak"), "{err}");
        for bad in [
            "",
            "00",
            &RFC8032_PUB.to_uppercase(),
            &format!("{RFC8032_PUB}00"),
        ] {
            assert!(PublicKey::from_raw_hex(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            PublicKey::from_raw_hex(RFC8032_PUB).unwrap().raw_hex(),
            RFC8032_PUB
        );
    }

    #[test]
    fn rejects_malformed_seed_hex_without_echoing_it() {
        let upper = RFC8032_SEED.to_uppercase();
        for bad in [
            "",
            &RFC8032_SEED[..63],
            upper.as_str(),
            &format!("{RFC8032_SEED}0"),
        ] {
            match SigningKey::from_seed_hex(bad) {
                Ok(_) => panic!("accepted {bad:?}"),
                Err(e) => {
                    let msg = e.to_string();
                    assert!(msg.contains("key.seed-hex"), "{msg}");
                    assert!(bad.is_empty() || !msg.contains(bad), "{msg}");
                }
            }
        }
    }

    #[test]
    fn key_id_is_sha256_of_raw_key() {
        let key = PublicKey::from_raw_hex(RFC8032_PUB).unwrap();
        let expected = Sha256Digest::of_bytes(&hex::decode(RFC8032_PUB).unwrap()).to_hex();
        assert_eq!(key.key_id(), expected);
        assert_eq!(key.key_id().len(), 64);
    }

    #[test]
    fn pkcs8_pem_is_rfc8410_shape_and_round_trips() {
        let key = SigningKey::from_pkcs8_pem(RFC8410_PRIVATE).unwrap();
        assert_eq!(key.to_pkcs8_pem().as_str(), RFC8410_PRIVATE);
        let fresh = SigningKey::generate();
        let back = SigningKey::from_pkcs8_pem(&fresh.to_pkcs8_pem()).unwrap();
        assert_eq!(back.public(), fresh.public());
        // The v2 form written by ed25519-dalek (with the public key) is accepted too.
        use ed25519_dalek::pkcs8::EncodePrivateKey;
        let v2 = fresh
            .0
            .to_pkcs8_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)
            .unwrap();
        assert_eq!(
            SigningKey::from_pkcs8_pem(&v2).unwrap().public(),
            fresh.public()
        );
        let err = SigningKey::from_pkcs8_pem(&fresh.public().to_spki_pem())
            .err()
            .unwrap();
        assert!(err.to_string().contains("key.pem"), "{err}");
    }

    #[test]
    fn spki_pem_round_trips_and_matches_openssl_shape() {
        use ed25519_dalek::pkcs8::EncodePublicKey;
        let key = SigningKey::generate().public();
        let pem = key.to_spki_pem();
        assert_eq!(PublicKey::from_spki_pem(&pem).unwrap(), key);
        let reference = key
            .0
            .to_public_key_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)
            .unwrap();
        assert_eq!(pem, reference);
        let err = PublicKey::from_spki_pem(RFC8410_PRIVATE).unwrap_err();
        assert!(err.to_string().contains("key.pem"), "{err}");
    }

    #[test]
    fn private_key_file_written_0600_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("trusted.key");
        let key = SigningKey::generate();
        write_private_key(&p, &key).unwrap();
        assert_eq!(mode_of(&p), 0o600);
        assert_eq!(load_private_key(&p).unwrap().public(), key.public());
        // Never overwritten.
        let err = write_private_key(&p, &SigningKey::generate()).unwrap_err();
        assert!(err.to_string().contains("key.io"), "{err}");
        assert_eq!(load_private_key(&p).unwrap().public(), key.public());
    }

    #[test]
    fn rejects_private_key_readable_by_group_or_other() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("trusted.key");
        write_private_key(&p, &SigningKey::generate()).unwrap();
        for mode in [0o644, 0o640, 0o604, 0o660, 0o601] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            match load_private_key(&p) {
                Ok(_) => panic!("mode {mode:o} accepted"),
                Err(e) => {
                    assert!(matches!(e, KeyError::InsecurePermissions { .. }), "{e}");
                    let msg = e.to_string();
                    assert!(
                        msg.contains("chmod 600") && msg.contains("trusted.key"),
                        "{msg}"
                    );
                    assert!(!msg.contains("PRIVATE KEY"), "{msg}");
                }
            }
        }
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(load_private_key(&p).is_ok());
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert!(load_private_key(&p).is_ok());
    }

    #[test]
    fn rejects_symlinked_private_key() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.key");
        let link = dir.path().join("link.key");
        write_private_key(&real, &SigningKey::generate()).unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        match load_private_key(&link) {
            Ok(_) => panic!("symlink accepted"),
            Err(e) => assert!(e.to_string().contains("key.symlink"), "{e}"),
        }
    }

    #[test]
    fn rejects_oversize_and_non_regular_key_files() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.key");
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&big)
            .unwrap();
        f.write_all(&vec![b'A'; MAX_KEY_FILE_BYTES as usize + 1])
            .unwrap();
        drop(f);
        match load_private_key(&big) {
            Ok(_) => panic!("oversize accepted"),
            Err(e) => assert!(e.to_string().contains("key.too-large"), "{e}"),
        }
        let err = load_public_key(&big).unwrap_err();
        assert!(err.to_string().contains("key.too-large"), "{err}");

        let sub = dir.path().join("dir.key");
        std::fs::create_dir(&sub).unwrap();
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o700)).unwrap();
        match load_private_key(&sub) {
            Ok(_) => panic!("directory accepted"),
            Err(e) => assert!(e.to_string().contains("key.not-file"), "{e}"),
        }
    }

    #[test]
    fn public_key_file_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("trusted.pub");
        let key = SigningKey::generate().public();
        write_public_key(&p, &key).unwrap();
        assert_eq!(load_public_key(&p).unwrap(), key);
        let missing = dir.path().join("missing.pub");
        let err = load_public_key(&missing).unwrap_err();
        assert!(err.to_string().contains("missing.pub"), "{err}");
    }
}
