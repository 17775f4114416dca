//! DSSE envelopes over in-toto Statement v1 payloads, ed25519 only.
//!
//! Guards against: forged or re-signed metadata (the verifier takes pinned keys from the caller
//! and never a key named by the envelope), oversized envelopes (size checked before parsing),
//! type confusion (`payloadType`, `_type` and `predicateType` are exact), lenient encodings
//! (non-canonical base64, unknown fields, duplicate keys, non-canonical JSON payloads), and
//! ambiguous subjects (duplicate names).
//!
//! On `Ok`: [`verify_envelope`] returns a [`Verified<Statement>`] whose payload bytes were signed
//! by one of the pinned keys, no signature by a pinned key failed, and the statement has the
//! in-toto v1 type and at least one subject with distinct names.
//!
//! Does not check: which subject or predicate type the caller expected, the predicate's own
//! rules, or time windows. Use [`Verified::subject_digest`] and
//! [`Verified::expect_predicate`], then the predicate's own checks.
//!
//! # Canonical payload
//! The payload is the statement encoded as compact JSON: no insignificant whitespace, object
//! members sorted by key (byte order), no duplicate keys, strings escaped only where JSON
//! requires it (`\"`, `\\`, and control characters as `\b \f \n \r \t` or `\u00xx` in
//! lowercase hex), every other character as raw UTF-8, numbers as integers (floats in
//! shortest round-trip form). [`sign_statement`] writes exactly that and [`verify_envelope`]
//! refuses anything else (`dsse.canonical`), so every reader of a signed payload sees the same
//! document.

use crate::text;
use base64::Engine as _;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::digest::Sha256Digest;
use crate::keys::{PublicKey, SigningKey};
use crate::verified::Verified;

/// The only `payloadType` we sign or accept.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// The only statement `_type` we sign or accept.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";

const B64: base64::engine::general_purpose::GeneralPurpose =
    base64::engine::general_purpose::STANDARD;

/// A DSSE envelope or statement was malformed or not signed by a pinned key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnvelopeError {
    /// The envelope is larger than the caller's limit; nothing was parsed.
    #[error("envelope: too large (dsse.too-large): limit {limit} bytes, seen {seen}")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
        /// Bytes seen.
        seen: usize,
    },
    /// The envelope is not strict DSSE JSON (unknown or missing fields, trailing data...).
    #[error("envelope: malformed JSON (dsse.json): {reason}")]
    Json {
        /// The parser's reason.
        reason: String,
    },
    /// `payloadType` is not [`PAYLOAD_TYPE`].
    #[error(
        "envelope: payloadType {seen:?} refused (dsse.payload-type): expected {PAYLOAD_TYPE:?}"
    )]
    PayloadType {
        /// The value seen, truncated to 80 characters.
        seen: String,
    },
    /// A base64 field is not canonical standard base64 (with padding, no trailing bits).
    #[error("envelope: {field} is not canonical standard base64 (dsse.base64)")]
    Base64 {
        /// `payload` or `signatures[].sig`.
        field: &'static str,
    },
    /// No signature was made by a pinned key.
    #[error(
        "envelope: no signature by a pinned key (dsse.no-trusted-signature): pinned key ids \
         {pinned:?}, envelope key ids {seen:?}"
    )]
    NoTrustedSignature {
        /// Key ids of the pinned keys.
        pinned: Vec<String>,
        /// Key ids named by the envelope (at most 8, each truncated to 80 characters).
        seen: Vec<String>,
    },
    /// A signature names a pinned key id but does not verify under that key.
    #[error("envelope: signature by pinned key {keyid} does not verify (dsse.bad-signature)")]
    BadSignature {
        /// The pinned key id.
        keyid: String,
    },
    /// The payload is not canonical JSON (see the module docs).
    #[error("envelope: payload is not canonical JSON (dsse.canonical): {reason}")]
    Canonical {
        /// What differs.
        reason: &'static str,
    },
    /// The payload is not a strict in-toto Statement.
    #[error("envelope: payload is not an in-toto statement (dsse.statement): {reason}")]
    Statement {
        /// Why.
        reason: String,
    },
    /// The statement `_type` is not [`STATEMENT_TYPE`].
    #[error(
        "statement: _type {seen:?} refused (dsse.statement-type): expected {STATEMENT_TYPE:?}"
    )]
    StatementType {
        /// The value seen, truncated to 80 characters.
        seen: String,
    },
    /// The statement has no subject, or two subjects with one name.
    #[error("statement: bad subject list (dsse.subject): {reason}")]
    Subject {
        /// Why.
        reason: String,
    },
    /// The statement's `predicateType` is not the one the caller expected.
    #[error(
        "statement: predicateType {seen:?} refused (dsse.predicate-type): expected {expected:?}"
    )]
    PredicateType {
        /// The expected type.
        expected: String,
        /// The type seen, truncated to 80 characters.
        seen: String,
    },
    /// The predicate does not have the caller's type's shape.
    #[error("statement: predicate {predicate_type:?} malformed (dsse.predicate): {reason}")]
    Predicate {
        /// The statement's predicate type.
        predicate_type: String,
        /// The parser's reason.
        reason: String,
    },
}

/// DSSE v1 pre-authentication encoding, the bytes actually signed:
/// `"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body`, lengths in ASCII decimal bytes.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let head = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    );
    let mut out = Vec::with_capacity(head.len() + payload.len());
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(payload);
    out
}

/// A DSSE envelope (JSON form).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// The payload, standard base64 with padding.
    pub payload: String,
    /// Always [`PAYLOAD_TYPE`].
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// Signatures over `pae(payloadType, payload)`.
    pub signatures: Vec<Signature>,
}

/// One DSSE signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    /// Lowercase hex SHA-256 of the raw ed25519 public key ([`PublicKey::key_id`]).
    pub keyid: String,
    /// The 64-byte ed25519 signature, standard base64 with padding.
    pub sig: String,
}

impl Envelope {
    /// The envelope as pretty-printed JSON (members in the order payload, payloadType,
    /// signatures; keyid before sig), ending with a newline.
    pub fn to_json_pretty(&self) -> Vec<u8> {
        let signatures = self
            .signatures
            .iter()
            .map(|s| {
                let mut m = Map::new();
                m.insert("keyid".into(), Value::String(s.keyid.clone()));
                m.insert("sig".into(), Value::String(s.sig.clone()));
                Value::Object(m)
            })
            .collect();
        let mut m = Map::new();
        m.insert("payload".into(), Value::String(self.payload.clone()));
        m.insert(
            "payloadType".into(),
            Value::String(self.payload_type.clone()),
        );
        m.insert("signatures".into(), Value::Array(signatures));
        // The keys above are inserted in sorted order, so the output is the same whether or
        // not serde_json keeps insertion order.
        let mut out = format!("{:#}", Value::Object(m)).into_bytes();
        out.push(b'\n');
        out
    }
}

/// An in-toto Statement v1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Statement {
    /// Always [`STATEMENT_TYPE`] (JSON `_type`).
    #[serde(rename = "_type")]
    pub statement_type: String,
    /// What the statement is about: name and sha256 of each artifact.
    pub subject: Vec<Subject>,
    /// The predicate's type URI (JSON `predicateType`), e.g. `urn:airlock:predicate:bundle:v1`.
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    /// The predicate; read it with [`Verified::expect_predicate`].
    pub predicate: Value,
}

/// One subject of a statement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subject {
    /// The artifact's name (e.g. `bundle.tar.gz`).
    pub name: String,
    /// Its digests; only sha256.
    pub digest: DigestSet,
}

/// The digest set of a subject: exactly one sha256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DigestSet {
    /// Lowercase hex SHA-256.
    pub sha256: Sha256Digest,
}

impl Statement {
    /// A statement with one subject.
    pub fn new(
        subject_name: &str,
        digest: Sha256Digest,
        predicate_type: &str,
        predicate: Value,
    ) -> Statement {
        Statement {
            statement_type: STATEMENT_TYPE.to_owned(),
            subject: vec![Subject {
                name: subject_name.to_owned(),
                digest: DigestSet { sha256: digest },
            }],
            predicate_type: predicate_type.to_owned(),
            predicate,
        }
    }

    /// The statement as a JSON value (infallible; same shape as its `Serialize`).
    fn to_value(&self) -> Value {
        let subject = self
            .subject
            .iter()
            .map(|s| {
                let mut digest = Map::new();
                digest.insert("sha256".into(), Value::String(s.digest.sha256.to_hex()));
                let mut m = Map::new();
                m.insert("name".into(), Value::String(s.name.clone()));
                m.insert("digest".into(), Value::Object(digest));
                Value::Object(m)
            })
            .collect();
        let mut m = Map::new();
        m.insert("_type".into(), Value::String(self.statement_type.clone()));
        m.insert("subject".into(), Value::Array(subject));
        m.insert(
            "predicateType".into(),
            Value::String(self.predicate_type.clone()),
        );
        m.insert("predicate".into(), self.predicate.clone());
        Value::Object(m)
    }

    /// The canonical payload bytes (see the module docs).
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let mut out = String::new();
        write_canonical(&self.to_value(), &mut out);
        out.into_bytes()
    }
}

/// Writes `v` as canonical JSON: compact, keys sorted by byte order, minimal escaping.
fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_canonical_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical_str(k, out);
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
    }
}

fn write_canonical_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Signs `statement` with `key`: payload = canonical JSON of the statement, one signature
/// whose `keyid` is the key's [`PublicKey::key_id`].
pub fn sign_statement(statement: &Statement, key: &SigningKey) -> Envelope {
    let payload = statement.canonical_bytes();
    let sig = key.sign(&pae(PAYLOAD_TYPE, &payload));
    Envelope {
        payload: B64.encode(&payload),
        payload_type: PAYLOAD_TYPE.to_owned(),
        signatures: vec![Signature {
            keyid: key.public().key_id(),
            sig: B64.encode(sig),
        }],
    }
}

/// Decodes canonical standard base64 (padding required, no trailing bits): re-encoding the
/// result must give back the input exactly. Rule `dsse.base64`.
fn decode_canonical_b64(field: &'static str, s: &str) -> Result<Vec<u8>, EnvelopeError> {
    let bytes = B64.decode(s).map_err(|_| EnvelopeError::Base64 { field })?;
    if B64.encode(&bytes) != s {
        return Err(EnvelopeError::Base64 { field });
    }
    Ok(bytes)
}

/// Verifies a DSSE envelope against pinned keys and returns its statement.
///
/// In order:
/// 1. `dsse.too-large`: the envelope MUST NOT exceed `max_bytes`; checked before parsing.
/// 2. `dsse.json`: the envelope MUST be a JSON object with exactly `payload`, `payloadType`
///    and `signatures` (each signature exactly `keyid` and `sig`).
/// 3. `dsse.payload-type`: `payloadType` MUST be `application/vnd.in-toto+json`.
/// 4. `dsse.base64`: `payload` and every considered `sig` MUST be canonical standard base64.
/// 5. Signatures whose `keyid` is not a pinned key's id are ignored. `dsse.bad-signature`:
///    every signature whose `keyid` is a pinned key's id MUST verify (strict ed25519) over
///    `PAE(payloadType, payload)` under that pinned key. `dsse.no-trusted-signature`: at least
///    one MUST. The key is never taken from the envelope.
/// 6. `dsse.canonical`: the payload MUST be canonical JSON (module docs).
/// 7. `dsse.statement`: the payload MUST be a Statement with exactly `_type`, `subject`,
///    `predicateType`, `predicate`; `dsse.statement-type`: `_type` MUST be
///    `https://in-toto.io/Statement/v1`; `dsse.subject`: at least one subject, names distinct.
pub fn verify_envelope(
    bytes: &[u8],
    pinned: &[PublicKey],
    max_bytes: usize,
) -> Result<Verified<Statement>, EnvelopeError> {
    if bytes.len() > max_bytes {
        return Err(EnvelopeError::TooLarge {
            limit: max_bytes,
            seen: bytes.len(),
        });
    }
    let env: Envelope = serde_json::from_slice(bytes).map_err(|e| EnvelopeError::Json {
        reason: e.to_string(),
    })?;
    if env.payload_type != PAYLOAD_TYPE {
        return Err(EnvelopeError::PayloadType {
            seen: text::terminal(&env.payload_type, 80),
        });
    }
    let payload = decode_canonical_b64("payload", &env.payload)?;
    let message = pae(PAYLOAD_TYPE, &payload);

    let pinned_ids: Vec<(String, &PublicKey)> = pinned.iter().map(|k| (k.key_id(), k)).collect();
    let mut trusted = false;
    for s in &env.signatures {
        let Some((keyid, key)) = pinned_ids.iter().find(|(id, _)| *id == s.keyid) else {
            continue;
        };
        let sig = decode_canonical_b64("signatures[].sig", &s.sig)?;
        if key.verify(&message, &sig).is_err() {
            return Err(EnvelopeError::BadSignature {
                keyid: keyid.clone(),
            });
        }
        trusted = true;
    }
    if !trusted {
        return Err(EnvelopeError::NoTrustedSignature {
            pinned: pinned_ids.into_iter().map(|(id, _)| id).collect(),
            seen: env
                .signatures
                .iter()
                .take(8)
                .map(|s| text::terminal(&s.keyid, 80))
                .collect(),
        });
    }

    // Signed by a pinned key from here on; still parse strictly.
    let value: Value = serde_json::from_slice(&payload).map_err(|e| EnvelopeError::Statement {
        reason: e.to_string(),
    })?;
    let mut canonical = String::with_capacity(payload.len());
    write_canonical(&value, &mut canonical);
    if canonical.as_bytes() != payload.as_slice() {
        return Err(EnvelopeError::Canonical {
            reason: "re-encoding the payload gives different bytes (whitespace, key order, \
                     escaping or duplicate keys)",
        });
    }
    let statement: Statement =
        serde_json::from_value(value).map_err(|e| EnvelopeError::Statement {
            reason: e.to_string(),
        })?;
    if statement.statement_type != STATEMENT_TYPE {
        return Err(EnvelopeError::StatementType {
            seen: text::terminal(&statement.statement_type, 80),
        });
    }
    if statement.subject.is_empty() {
        return Err(EnvelopeError::Subject {
            reason: "no subject".into(),
        });
    }
    let mut names: Vec<&str> = statement.subject.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(EnvelopeError::Subject {
            reason: format!("subject name {:?} appears twice", text::terminal(w[0], 80)),
        });
    }
    Ok(Verified::new(statement))
}

impl Verified<Statement> {
    /// The sha256 of the subject called `name`, if there is one (names are distinct).
    pub fn subject_digest(&self, name: &str) -> Option<Sha256Digest> {
        self.subject
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.digest.sha256)
    }

    /// Deserializes the predicate into `T` (use a `deny_unknown_fields` type). Rule
    /// `dsse.predicate`. Does not check `predicateType`; prefer [`Self::expect_predicate`].
    pub fn predicate_as<T: DeserializeOwned>(&self) -> Result<Verified<T>, EnvelopeError> {
        serde_json::from_value::<T>(self.predicate.clone())
            .map(Verified::new)
            .map_err(|e| EnvelopeError::Predicate {
                predicate_type: text::terminal(&self.predicate_type, 80),
                reason: e.to_string(),
            })
    }

    /// Checks `predicateType` equals `predicate_type` (rule `dsse.predicate-type`), then
    /// deserializes the predicate into `T` (rule `dsse.predicate`).
    pub fn expect_predicate<T: DeserializeOwned>(
        &self,
        predicate_type: &str,
    ) -> Result<Verified<T>, EnvelopeError> {
        if self.predicate_type != predicate_type {
            return Err(EnvelopeError::PredicateType {
                expected: predicate_type.to_owned(),
                seen: text::terminal(&self.predicate_type, 80),
            });
        }
        self.predicate_as()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 1024 * 1024;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Pred {
        job: String,
        n: u64,
    }

    fn statement() -> Statement {
        Statement::new(
            "bundle.tar.gz",
            Sha256Digest::of_bytes(b"bundle"),
            "urn:airlock:predicate:test:v1",
            serde_json::json!({"job": "j1", "n": 7}),
        )
    }

    fn envelope_json(env: &Envelope) -> Vec<u8> {
        serde_json::to_vec(env).unwrap()
    }

    fn rule_of(r: Result<Verified<Statement>, EnvelopeError>) -> String {
        r.unwrap_err().to_string()
    }

    /// Signs an arbitrary payload (not necessarily a canonical statement) with `key`.
    fn sign_raw(payload: &[u8], payload_type: &str, key: &SigningKey) -> Envelope {
        Envelope {
            payload: B64.encode(payload),
            payload_type: payload_type.to_owned(),
            signatures: vec![Signature {
                keyid: key.public().key_id(),
                sig: B64.encode(key.sign(&pae(payload_type, payload))),
            }],
        }
    }

    #[test]
    fn pae_matches_dsse_spec_example() {
        // From the DSSE protocol spec test vector.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
        assert_eq!(pae("", b""), b"DSSEv1 0  0 ".to_vec());
    }

    #[test]
    fn round_trip_sign_verify_and_read_predicate() {
        let key = SigningKey::generate();
        let env = sign_statement(&statement(), &key);
        let pretty = env.to_json_pretty();
        assert_eq!(pretty.last(), Some(&b'\n'));
        let v = verify_envelope(&pretty, &[key.public()], MAX).unwrap();
        assert_eq!(*v, statement());
        assert_eq!(
            v.subject_digest("bundle.tar.gz"),
            Some(Sha256Digest::of_bytes(b"bundle"))
        );
        assert_eq!(v.subject_digest("other"), None);
        let p: Verified<Pred> = v.expect_predicate("urn:airlock:predicate:test:v1").unwrap();
        assert_eq!(
            *p,
            Pred {
                job: "j1".into(),
                n: 7
            }
        );
        let err = v
            .expect_predicate::<Pred>("urn:airlock:predicate:other:v1")
            .unwrap_err();
        assert!(err.to_string().contains("dsse.predicate-type"), "{err}");
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Other {
            job: String,
        }
        let err = v.predicate_as::<Other>().unwrap_err();
        assert!(err.to_string().contains("dsse.predicate"), "{err}");
        // Compact and pretty JSON are the same envelope.
        assert!(verify_envelope(&envelope_json(&env), &[key.public()], MAX).is_ok());
    }

    #[test]
    fn canonical_bytes_agree_with_serde_shape() {
        let st = statement();
        let via_serde: Value = serde_json::to_value(&st).unwrap();
        assert_eq!(via_serde, st.to_value());
        let bytes = st.canonical_bytes();
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.starts_with("{\"_type\":\"https://in-toto.io/Statement/v1\",\"predicate\":{\"job\":\"j1\",\"n\":7},\"predicateType\":"), "{text}");
    }

    #[test]
    fn canonical_strings_escape_only_what_json_requires() {
        let mut out = String::new();
        write_canonical_str("a\"b\\c\n\u{1}\u{7f}é\u{2028}/", &mut out);
        assert_eq!(out, "\"a\\\"b\\\\c\\n\\u0001\u{7f}é\u{2028}/\"");
        // And serde_json reads it back to the same string.
        let back: String = serde_json::from_str(&out).unwrap();
        assert_eq!(back, "a\"b\\c\n\u{1}\u{7f}é\u{2028}/");
    }

    #[test]
    fn rejects_any_single_flipped_byte_in_payload_or_signature() {
        let key = SigningKey::generate();
        let pinned = [key.public()];
        let env = sign_statement(&statement(), &key);
        let payload = B64.decode(&env.payload).unwrap();
        for i in 0..payload.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = payload.clone();
                bad[i] ^= bit;
                let mut e = env.clone();
                e.payload = B64.encode(&bad);
                let err = verify_envelope(&envelope_json(&e), &pinned, MAX).unwrap_err();
                assert!(
                    matches!(err, EnvelopeError::BadSignature { .. }),
                    "payload byte {i}: {err}"
                );
            }
        }
        let sig = B64.decode(&env.signatures[0].sig).unwrap();
        assert_eq!(sig.len(), 64);
        for i in 0..sig.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = sig.clone();
                bad[i] ^= bit;
                let mut e = env.clone();
                e.signatures[0].sig = B64.encode(&bad);
                let err = verify_envelope(&envelope_json(&e), &pinned, MAX).unwrap_err();
                assert!(
                    matches!(err, EnvelopeError::BadSignature { .. }),
                    "sig byte {i}: {err}"
                );
            }
        }
    }

    #[test]
    fn rejects_envelope_signed_by_another_key() {
        let key = SigningKey::generate();
        let attacker = SigningKey::generate();
        let env = sign_statement(&statement(), &attacker);
        let msg = rule_of(verify_envelope(&envelope_json(&env), &[key.public()], MAX));
        assert!(msg.contains("dsse.no-trusted-signature"), "{msg}");
        // No pinned keys at all: nothing is trusted.
        let msg = rule_of(verify_envelope(&envelope_json(&env), &[], MAX));
        assert!(msg.contains("dsse.no-trusted-signature"), "{msg}");
    }

    #[test]
    fn rejects_attacker_signature_relabelled_with_pinned_keyid() {
        let key = SigningKey::generate();
        let attacker = SigningKey::generate();
        let mut env = sign_statement(&statement(), &attacker);
        env.signatures[0].keyid = key.public().key_id();
        let msg = rule_of(verify_envelope(&envelope_json(&env), &[key.public()], MAX));
        assert!(msg.contains("dsse.bad-signature"), "{msg}");
    }

    #[test]
    fn ignores_unknown_keyids_but_not_bad_pinned_ones() {
        let key = SigningKey::generate();
        let attacker = SigningKey::generate();
        let mut env = sign_statement(&statement(), &key);
        let extra = sign_statement(&statement(), &attacker).signatures[0].clone();
        env.signatures.insert(0, extra);
        env.signatures.push(Signature {
            keyid: "not-a-key".into(),
            sig: "!!not base64!!".into(),
        });
        assert!(verify_envelope(&envelope_json(&env), &[key.public()], MAX).is_ok());
        // A second signature claiming the pinned keyid that does not verify poisons it.
        let mut bad = env.signatures[1].clone();
        bad.sig = B64.encode([0u8; 64]);
        env.signatures.push(bad);
        let msg = rule_of(verify_envelope(&envelope_json(&env), &[key.public()], MAX));
        assert!(msg.contains("dsse.bad-signature"), "{msg}");
    }

    #[test]
    fn rejects_wrong_payload_type_even_if_signed() {
        let key = SigningKey::generate();
        let payload = statement().canonical_bytes();
        let env = sign_raw(&payload, "application/json", &key);
        let msg = rule_of(verify_envelope(&envelope_json(&env), &[key.public()], MAX));
        assert!(msg.contains("dsse.payload-type"), "{msg}");
    }

    #[test]
    fn rejects_oversize_before_parsing() {
        let key = SigningKey::generate();
        // Not even JSON: the size check must come first.
        let junk = vec![b'{'; 2048];
        let msg = rule_of(verify_envelope(&junk, &[key.public()], 1024));
        assert!(msg.contains("dsse.too-large"), "{msg}");
        let env = sign_statement(&statement(), &key).to_json_pretty();
        let msg = rule_of(verify_envelope(&env, &[key.public()], env.len() - 1));
        assert!(msg.contains("dsse.too-large"), "{msg}");
        assert!(verify_envelope(&env, &[key.public()], env.len()).is_ok());
    }

    #[test]
    fn rejects_unknown_fields_and_trailing_data() {
        let key = SigningKey::generate();
        let env = sign_statement(&statement(), &key);
        let mut v: Value = serde_json::to_value(&env).unwrap();
        v["publicKey"] = Value::String(key.public().raw_hex());
        let msg = rule_of(verify_envelope(
            &serde_json::to_vec(&v).unwrap(),
            &[key.public()],
            MAX,
        ));
        assert!(msg.contains("dsse.json"), "{msg}");
        let mut v: Value = serde_json::to_value(&env).unwrap();
        v["signatures"][0]["cert"] = Value::String("x".into());
        let msg = rule_of(verify_envelope(
            &serde_json::to_vec(&v).unwrap(),
            &[key.public()],
            MAX,
        ));
        assert!(msg.contains("dsse.json"), "{msg}");
        let mut trailing = envelope_json(&env);
        trailing.extend_from_slice(b"{}");
        let msg = rule_of(verify_envelope(&trailing, &[key.public()], MAX));
        assert!(msg.contains("dsse.json"), "{msg}");
    }

    #[test]
    fn rejects_non_canonical_base64() {
        let key = SigningKey::generate();
        let env = sign_statement(&statement(), &key);
        let variants = [
            env.payload.trim_end_matches('=').to_owned(), // unpadded (if padded)
            env.payload.replace('+', "-").replace('/', "_"), // url-safe alphabet
            format!("{}\n", env.payload),
        ];
        for p in variants {
            if p == env.payload {
                continue;
            }
            let mut e = env.clone();
            e.payload = p;
            let msg = rule_of(verify_envelope(&envelope_json(&e), &[key.public()], MAX));
            assert!(msg.contains("dsse.base64"), "{msg}");
        }
        // Non-zero trailing bits: "QQ==" is canonical for "A", "QR==" decodes to it too.
        assert!(decode_canonical_b64("payload", "QQ==").is_ok());
        assert!(decode_canonical_b64("payload", "QR==").is_err());
        let mut e = env.clone();
        let mut sig = e.signatures[0].sig.clone();
        sig.pop();
        sig.pop();
        e.signatures[0].sig = sig;
        let msg = rule_of(verify_envelope(&envelope_json(&e), &[key.public()], MAX));
        assert!(msg.contains("dsse.base64"), "{msg}");
    }

    #[test]
    fn rejects_signed_non_canonical_payloads() {
        let key = SigningKey::generate();
        let canonical = String::from_utf8(statement().canonical_bytes()).unwrap();
        let pretty = serde_json::to_string_pretty(&statement()).unwrap();
        let dup = canonical.replacen("{\"_type\"", "{\"_type\":\"x\",\"_type\"", 1);
        let escaped = canonical.replacen("bundle.tar.gz", "bundle\\u002etar.gz", 1);
        for payload in [pretty, dup, escaped] {
            let env = sign_raw(payload.as_bytes(), PAYLOAD_TYPE, &key);
            let msg = rule_of(verify_envelope(&envelope_json(&env), &[key.public()], MAX));
            assert!(msg.contains("dsse.canonical"), "{payload}: {msg}");
        }
    }

    #[test]
    fn rejects_wrong_statement_type_missing_subject_and_duplicates() {
        let key = SigningKey::generate();
        let pin = [key.public()];
        let check = |st: &Statement, rule: &str| {
            let env = sign_statement(st, &key);
            let msg = rule_of(verify_envelope(&envelope_json(&env), &pin, MAX));
            assert!(msg.contains(rule), "{msg}");
        };
        let mut st = statement();
        st.statement_type = "https://in-toto.io/Statement/v0.1".into();
        check(&st, "dsse.statement-type");
        let mut st = statement();
        st.subject.clear();
        check(&st, "dsse.subject");
        let mut st = statement();
        st.subject.push(st.subject[0].clone());
        check(&st, "dsse.subject");
        // Extra member in the statement, or a second digest algorithm: unknown fields.
        let mut v = statement().to_value();
        v["extra"] = Value::Bool(true);
        let mut payload = String::new();
        write_canonical(&v, &mut payload);
        let env = sign_raw(payload.as_bytes(), PAYLOAD_TYPE, &key);
        let msg = rule_of(verify_envelope(&envelope_json(&env), &pin, MAX));
        assert!(msg.contains("dsse.statement"), "{msg}");
        let mut v = statement().to_value();
        v["subject"][0]["digest"]["sha512"] = Value::String("00".into());
        let mut payload = String::new();
        write_canonical(&v, &mut payload);
        let env = sign_raw(payload.as_bytes(), PAYLOAD_TYPE, &key);
        let msg = rule_of(verify_envelope(&envelope_json(&env), &pin, MAX));
        assert!(msg.contains("dsse.statement"), "{msg}");
        // Uppercase digest.
        let mut v = statement().to_value();
        v["subject"][0]["digest"]["sha256"] =
            Value::String(Sha256Digest::of_bytes(b"x").to_hex().to_uppercase());
        let mut payload = String::new();
        write_canonical(&v, &mut payload);
        let env = sign_raw(payload.as_bytes(), PAYLOAD_TYPE, &key);
        let msg = rule_of(verify_envelope(&envelope_json(&env), &pin, MAX));
        assert!(msg.contains("dsse.statement"), "{msg}");
    }
}
