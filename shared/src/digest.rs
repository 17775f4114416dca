//! Streaming SHA-256: a digest type with one strict text form, and readers/writers that hash
//! what passes through them.
//!
//! Guards against: digests spelled several ways (uppercase, short, prefixed) being compared as
//! strings, and whole files being read into memory to hash them. Every hash here is computed in
//! 64 KiB chunks.
//!
//! On `Ok`: a [`Sha256Digest`] is exactly 32 bytes; its only text form is 64 lowercase hex digits.
//!
//! Does not check: sizes. Wrap an untrusted reader in a limited reader first; these helpers
//! count bytes but never stop reading.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use sha2::{Digest as _, Sha256};

/// Size of the buffer used by [`sha256_reader`] and [`sha256_file`].
pub const CHUNK_BYTES: usize = 64 * 1024;

/// A digest could not be parsed or did not match.
#[derive(Debug, thiserror::Error)]
pub enum DigestError {
    /// The text is not exactly 64 lowercase hex digits.
    #[error("sha256 digest {shown:?} is malformed (digest.hex): expected exactly 64 lowercase hex digits")]
    Malformed {
        /// The offending text, truncated to 80 characters.
        shown: String,
    },
    /// Bytes did not hash to the digest they were bound to.
    #[error("{what}: sha256 mismatch (digest.mismatch): expected {expected}, got {actual}")]
    Mismatch {
        /// What was hashed (a file, an object key, a member name).
        what: String,
        /// The digest the signed metadata named.
        expected: Sha256Digest,
        /// The digest of the bytes actually seen.
        actual: Sha256Digest,
    },
}

/// A SHA-256 digest. Its text form (Display, serde) is 64 lowercase hex digits, nothing else.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sha256Digest(pub [u8; 32]);

impl Sha256Digest {
    /// Hashes a byte slice already in memory.
    pub fn of_bytes(bytes: &[u8]) -> Sha256Digest {
        Sha256Digest(Sha256::digest(bytes).into())
    }

    /// Parses exactly 64 lowercase hex digits (rule `digest.hex`). Uppercase, prefixes
    /// (`sha256:`), whitespace and other lengths are refused.
    pub fn from_hex(s: &str) -> Result<Sha256Digest, DigestError> {
        let b = s.as_bytes();
        let ok = b.len() == 64 && b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
        let mut out = [0u8; 32];
        if !ok || hex::decode_to_slice(b, &mut out).is_err() {
            return Err(DigestError::Malformed {
                shown: s.chars().take(80).collect(),
            });
        }
        Ok(Sha256Digest(out))
    }

    /// The lowercase hex form (same as Display).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Returns `Ok` when `actual` equals `self`, else [`DigestError::Mismatch`] naming `what`.
    pub fn expect_eq(&self, what: &str, actual: Sha256Digest) -> Result<(), DigestError> {
        if *self == actual {
            Ok(())
        } else {
            Err(DigestError::Mismatch {
                what: what.to_owned(),
                expected: *self,
                actual,
            })
        }
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Digest({})", hex::encode(self.0))
    }
}

impl std::str::FromStr for Sha256Digest {
    type Err = DigestError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Sha256Digest::from_hex(s)
    }
}

/// Lowercase hex in documents (JSON); the 32 bytes as they are in a binary encoding that says
/// it is not for people (the pack cache's postcard metadata), which reads 14,000 of them.
impl serde::Serialize for Sha256Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&hex::encode(self.0))
        } else {
            serde::Serialize::serialize(&self.0, s)
        }
    }
}

impl<'de> serde::Deserialize<'de> for Sha256Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if !d.is_human_readable() {
            return <[u8; 32] as serde::Deserialize>::deserialize(d).map(Sha256Digest);
        }
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Sha256Digest::from_hex(&s).map_err(serde::de::Error::custom)
    }
}

/// Hashes everything `reader` yields, in 64 KiB chunks. Returns the digest and the byte count.
pub fn sha256_reader(mut reader: impl Read) -> io::Result<(Sha256Digest, u64)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut total: u64 = 0;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        total += n as u64;
    }
    Ok((Sha256Digest(hasher.finalize().into()), total))
}

/// Hashes a file in 64 KiB chunks without reading it into memory. Errors name the path.
pub fn sha256_file(path: &Path) -> io::Result<(Sha256Digest, u64)> {
    let file = File::open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    sha256_reader(file).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// A writer that hashes and counts every byte written through it.
pub struct HashingWriter<W: Write> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> HashingWriter<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hasher: Sha256::new(),
            written: 0,
        }
    }

    /// Returns the inner writer, the digest of the bytes written and their count.
    /// Does not flush: flush first if the inner writer buffers.
    pub fn finish(self) -> (W, Sha256Digest, u64) {
        (
            self.inner,
            Sha256Digest(self.hasher.finalize().into()),
            self.written,
        )
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Hash only what the inner writer accepted.
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A reader that hashes and counts every byte read through it.
pub struct HashingReader<R: Read> {
    inner: R,
    hasher: Sha256,
    read: u64,
}

impl<R: Read> HashingReader<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        HashingReader {
            inner,
            hasher: Sha256::new(),
            read: 0,
        }
    }

    /// The digest and count of the bytes read so far (the reader keeps going).
    pub fn digest_so_far(&self) -> (Sha256Digest, u64) {
        (
            Sha256Digest(self.hasher.clone().finalize().into()),
            self.read,
        )
    }

    /// Returns the inner reader, the digest of the bytes read and their count. Bytes not yet
    /// read from `inner` are not included: drain it first to hash a whole stream.
    pub fn finish(self) -> (R, Sha256Digest, u64) {
        (
            self.inner,
            Sha256Digest(self.hasher.finalize().into()),
            self.read,
        )
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.read += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    #[test]
    fn known_vectors() {
        assert_eq!(Sha256Digest::of_bytes(b"").to_string(), EMPTY);
        assert_eq!(Sha256Digest::of_bytes(b"abc").to_string(), ABC);
        let (d, n) = sha256_reader(&b"abc"[..]).unwrap();
        assert_eq!((d.to_string().as_str(), n), (ABC, 3));
    }

    #[test]
    fn rejects_uppercase_short_long_prefixed_and_spaced_hex() {
        let upper = ABC.to_uppercase();
        let prefixed = format!("sha256:{ABC}");
        let spaced = format!(" {ABC}");
        let long = format!("{ABC}0");
        for bad in [
            "",
            &ABC[..63],
            long.as_str(),
            upper.as_str(),
            prefixed.as_str(),
            spaced.as_str(),
            "g".repeat(64).as_str(),
            "+".repeat(64).as_str(),
        ] {
            let err = Sha256Digest::from_hex(bad).unwrap_err();
            assert!(err.to_string().contains("digest.hex"), "{err}");
        }
        assert_eq!(Sha256Digest::from_hex(ABC).unwrap().to_hex(), ABC);
    }

    #[test]
    fn serde_uses_lowercase_hex_only() {
        let d = Sha256Digest::of_bytes(b"abc");
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, format!("\"{ABC}\""));
        assert_eq!(serde_json::from_str::<Sha256Digest>(&json).unwrap(), d);
        let upper = format!("\"{}\"", ABC.to_uppercase());
        assert!(serde_json::from_str::<Sha256Digest>(&upper).is_err());
        assert!(serde_json::from_str::<Sha256Digest>("[1,2]").is_err());
        assert!(format!("{d:?}").contains(ABC));
    }

    #[test]
    fn streaming_matches_in_memory_across_chunk_boundaries() {
        let data: Vec<u8> = (0..(CHUNK_BYTES * 2 + 17))
            .map(|i| (i % 251) as u8)
            .collect();
        let expected = Sha256Digest::of_bytes(&data);
        assert_eq!(
            sha256_reader(&data[..]).unwrap(),
            (expected, data.len() as u64)
        );

        let mut w = HashingWriter::new(Vec::new());
        for chunk in data.chunks(1000) {
            w.write_all(chunk).unwrap();
        }
        let (inner, d, n) = w.finish();
        assert_eq!((d, n), (expected, data.len() as u64));
        assert_eq!(inner, data);

        let mut r = HashingReader::new(&data[..]);
        let mut half = vec![0u8; 100];
        r.read_exact(&mut half).unwrap();
        assert_eq!(
            r.digest_so_far(),
            (Sha256Digest::of_bytes(&data[..100]), 100)
        );
        io::copy(&mut r, &mut io::sink()).unwrap();
        let (_, d, n) = r.finish();
        assert_eq!((d, n), (expected, data.len() as u64));
    }

    #[test]
    fn file_hash_and_missing_file_names_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.bin");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(sha256_file(&p).unwrap().0.to_string(), ABC);
        let missing = dir.path().join("missing.bin");
        let err = sha256_file(&missing).unwrap_err();
        assert!(err.to_string().contains("missing.bin"), "{err}");
    }

    #[test]
    fn mismatch_names_what_and_rule() {
        let a = Sha256Digest::of_bytes(b"a");
        let b = Sha256Digest::of_bytes(b"b");
        assert!(a.expect_eq("bundle.tar.gz", a).is_ok());
        let err = a.expect_eq("bundle.tar.gz", b).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("bundle.tar.gz") && msg.contains("digest.mismatch"),
            "{msg}"
        );
    }
}
