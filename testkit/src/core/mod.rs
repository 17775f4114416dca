//! Entry points for the fuzz targets in `fuzz/` over `airlock-core`'s boundary parsers: one
//! function per parser, each taking arbitrary bytes. Development only: this crate's unit tests
//! run every helper on the committed fixtures and on mutated inputs, so the helpers cannot
//! rot, and no library a binary links carries them.
//!
//! Guards against: parsers that panic, hang or allocate without bound on hostile bytes, and
//! encoders and parsers that disagree (a document we accept but cannot write back, or write
//! in a form we then refuse).
//! On return: the parser under test handled the input without panicking and, where an encoder
//! exists, every invariant below held. A helper panics only when an invariant is broken: that
//! panic is the bug report (keep the input as a fixture, see `fuzz/README.md`).
//! Does not check: anything needing the file system or a clock; times are fixed
//! ([`FUZZ_NOW_UNIX`]) and keys are fixed seeds ([`fuzz_trusted_key`]).
//!
//! Invariants asserted:
//! - `manifest`, `request`, `packet`: a document that parses re-encodes (with
//!   [`format::to_json_bytes`]) to bytes that parse to an equal value, and re-encoding that
//!   value gives the same bytes again.
//! - `dsse_envelope`: the input is tried as an envelope under the pinned fuzz key, and then as a
//!   payload that the fuzz key signs. A signed payload is either refused for a payload rule
//!   only (`dsse.canonical`, `dsse.statement`, `dsse.statement-type`, `dsse.subject`) or
//!   accepted, and then it is byte-for-byte the canonical encoding of the statement, and
//!   re-signing the statement verifies to an equal statement. Predicates that parse as one of
//!   the three predicate types survive a JSON round trip.
//! - `token`: the input is tried as a token and then as a payload that the fuzz key signs. A
//!   signed UTF-8 payload is either refused for a claim rule only, or accepted, and then
//!   minting the same claims again verifies to equal claims.
//! - `tar_read`: the input is read as an artifact and as a bundle (and, gzip-compressed, as a
//!   raw tar stream). An accepted archive, rewritten by the deterministic writer in bytewise
//!   order, reads back to the same members with the same content, and rewriting is
//!   byte-identical.
//! - `diff_parse`: a patch that parses has sections in strictly increasing path order and
//!   counts equal to its lines; an added file applies to nothing, a deleted file applies to
//!   the text its `-` lines spell.
//! - `comments`: every comment kept passes [`format::check_comment`]; the kept comments
//!   written back with [`format::to_jsonl`] parse to the same comments with no refusal, and
//!   writing those again gives the same bytes.
//! - `text`: every output of [`airlock_core::text`] marks each hidden character of the input, in
//!   order; the one-line forms hold no hidden character (so no control byte), the HTML no
//!   unescaped `<`, `>`, `&` or quote, a table cell no bare `|` or newline; a code span or
//!   fence is never closed before its end; Markdown text has every punctuation escaped.

use std::io::Write;

use base64::Engine as _;
use pasetors::keys::AsymmetricSecretKey;
use pasetors::version4::{PublicToken, V4};
use serde::de::DeserializeOwned;
use serde::Serialize;

use airlock_core::diff::{self, DiffLimits, FileKind, LineKind, ParsedPatch};
use airlock_core::digest::Sha256Digest;
use airlock_core::dsse::{self, Envelope, EnvelopeError, Signature, Statement, PAYLOAD_TYPE};
use airlock_core::format::{
    self, ArtifactPredicate, BundlePredicate, JobRecord, Manifest, Packet, Request,
    MAX_ENVELOPE_BYTES, MAX_MANIFEST_BYTES, MAX_PACKET_BYTES, MAX_REQUEST_BYTES,
    PREDICATE_ARTIFACT, PREDICATE_BUNDLE, PREDICATE_JOB_RECORD,
};
use airlock_core::keys::SigningKey;
use airlock_core::limits::TarLimits;
use airlock_core::tar::{read_members, AllowedNames, DeterministicTarWriter, MemberKind, TarError};
use airlock_core::token::{self, JobClaims, TokenError};

/// The `now` every token check uses: 2026-11-29T08:24:07Z.
pub const FUZZ_NOW_UNIX: u64 = 1_795_940_647;

/// Content kept in memory per archive for the tar round trip; larger archives are only read.
const TAR_ROUND_TRIP_BYTES: u64 = 8 * 1024 * 1024;

const B64: base64::engine::general_purpose::GeneralPurpose =
    base64::engine::general_purpose::STANDARD;

/// Whether the parser accepted the input (on any of the paths a helper tries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Accepted, and the round trip held.
    Accepted,
    /// Refused with an error (the normal case for random bytes).
    Rejected,
}

impl Outcome {
    fn any(self, other: Outcome) -> Outcome {
        if self == Outcome::Accepted || other == Outcome::Accepted {
            Outcome::Accepted
        } else {
            Outcome::Rejected
        }
    }
}

/// The pinned key of the fuzz helpers: the trusted key for tokens and the only pinned key for
/// envelopes (seed: 32 bytes of 0x01, as in the worked example of `docs/FORMATS.md`).
pub fn fuzz_trusted_key() -> SigningKey {
    SigningKey::from_seed([0x01; 32])
}

/// Encodes, re-parses and compares a JSON document; shared by the three document helpers.
fn json_round_trip<T>(
    value: &T,
    max: usize,
    parse: impl Fn(&[u8]) -> Result<T, format::FormatError>,
) where
    T: Serialize + PartialEq + std::fmt::Debug,
{
    let bytes = format::to_json_bytes(value);
    if bytes.len() > max {
        // A compact document near the cap may grow when pretty-printed; not a bug.
        return;
    }
    match parse(&bytes) {
        Ok(back) => {
            assert_eq!(&back, value, "re-encoded document parsed to another value");
            assert_eq!(
                format::to_json_bytes(&back),
                bytes,
                "encoding is not deterministic"
            );
        }
        Err(e) => panic!("our own encoding of an accepted document is refused: {e}"),
    }
}

/// `manifest.json`: [`Manifest::from_json`], then the encode/parse round trip.
pub fn manifest(data: &[u8]) -> Outcome {
    match Manifest::from_json(data) {
        Ok(m) => {
            json_round_trip(&m, MAX_MANIFEST_BYTES, Manifest::from_json);
            Outcome::Accepted
        }
        Err(_) => Outcome::Rejected,
    }
}

/// `request.json`: [`Request::from_json`], then the encode/parse round trip.
pub fn request(data: &[u8]) -> Outcome {
    match Request::from_json(data) {
        Ok(r) => {
            json_round_trip(&r, MAX_REQUEST_BYTES, Request::from_json);
            Outcome::Accepted
        }
        Err(_) => Outcome::Rejected,
    }
}

/// `packet.json`: [`Packet::from_json`], then the encode/parse round trip.
pub fn packet(data: &[u8]) -> Outcome {
    match Packet::from_json(data) {
        Ok(p) => {
            json_round_trip(&p, MAX_PACKET_BYTES, Packet::from_json);
            Outcome::Accepted
        }
        Err(_) => Outcome::Rejected,
    }
}

/// A predicate that deserializes into `T` must serialize back to a value that deserializes
/// to an equal `T`.
fn predicate_round_trip<T>(predicate: &serde_json::Value) -> Option<T>
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let parsed: T = serde_json::from_value(predicate.clone()).ok()?;
    let value = match serde_json::to_value(&parsed) {
        Ok(v) => v,
        Err(e) => panic!("an accepted predicate does not serialize: {e}"),
    };
    match serde_json::from_value::<T>(value) {
        Ok(back) => assert_eq!(back, parsed, "predicate round trip changed the value"),
        Err(e) => panic!("our own encoding of an accepted predicate is refused: {e}"),
    }
    Some(parsed)
}

/// Checks a statement that verified: canonical bytes, re-signing, and its predicates.
fn statement_round_trip(statement: &Statement, payload: Option<&[u8]>, key: &SigningKey) {
    let canonical = statement.canonical_bytes();
    if let Some(payload) = payload {
        assert_eq!(
            canonical, payload,
            "an accepted payload is not the canonical encoding of its statement"
        );
    }
    let envelope = dsse::sign_statement(statement, key).to_json_pretty();
    match dsse::verify_envelope(&envelope, &[key.public()], usize::MAX) {
        Ok(back) => assert_eq!(&*back, statement, "re-signed statement changed"),
        Err(e) => panic!("a re-signed accepted statement is refused: {e}"),
    }
    let predicate = &statement.predicate;
    predicate_round_trip::<BundlePredicate>(predicate);
    predicate_round_trip::<ArtifactPredicate>(predicate);
    if let Some(record) = predicate_round_trip::<JobRecord>(predicate) {
        let _ = record.check();
    }
}

/// DSSE: the input as an envelope (pinned fuzz key), then as a payload signed by that key.
pub fn dsse_envelope(data: &[u8]) -> Outcome {
    let key = fuzz_trusted_key();
    let pinned = [key.public()];

    let as_envelope = match dsse::verify_envelope(data, &pinned, MAX_ENVELOPE_BYTES) {
        Ok(statement) => {
            for t in [PREDICATE_BUNDLE, PREDICATE_ARTIFACT, PREDICATE_JOB_RECORD] {
                let _ = statement.expect_predicate::<serde_json::Value>(t);
            }
            let _ = statement.expect_predicate::<BundlePredicate>(PREDICATE_BUNDLE);
            let _ = statement.expect_predicate::<ArtifactPredicate>(PREDICATE_ARTIFACT);
            let _ = statement.expect_predicate::<JobRecord>(PREDICATE_JOB_RECORD);
            statement_round_trip(&statement, None, &key);
            Outcome::Accepted
        }
        Err(_) => Outcome::Rejected,
    };

    // Nobody can forge the fuzz key's signature, so sign the bytes as a payload to reach the
    // canonical-JSON and statement rules behind the signature check.
    let envelope = Envelope {
        payload: B64.encode(data),
        payload_type: PAYLOAD_TYPE.to_owned(),
        signatures: vec![Signature {
            keyid: key.public().key_id(),
            sig: B64.encode(key.sign(&dsse::pae(PAYLOAD_TYPE, data))),
        }],
    };
    let as_payload = match dsse::verify_envelope(&envelope.to_json_pretty(), &pinned, usize::MAX) {
        Ok(statement) => {
            statement_round_trip(&statement, Some(data), &key);
            Outcome::Accepted
        }
        Err(e) => {
            assert!(
                matches!(
                    e,
                    EnvelopeError::Canonical { .. }
                        | EnvelopeError::Statement { .. }
                        | EnvelopeError::StatementType { .. }
                        | EnvelopeError::Subject { .. }
                ),
                "a correctly signed envelope was refused for a non-payload rule: {e}"
            );
            Outcome::Rejected
        }
    };
    as_envelope.any(as_payload)
}

/// Signs `payload` as a v4.public token with no footer, as the trusted side does.
fn sign_token_payload(key: &SigningKey, payload: &[u8]) -> Option<String> {
    // Seed followed by public key: the secret-key form pasetors expects.
    let seed = hex::decode(key.seed_hex().as_str()).ok()?;
    let kp = [seed.as_slice(), &key.public().raw()].concat();
    let sk = AsymmetricSecretKey::<V4>::from(&kp[..]).ok()?;
    PublicToken::sign(&sk, payload, None, None).ok()
}

/// Mints the same claims again and checks they verify to equal claims.
fn token_round_trip(key: &SigningKey, claims: &JobClaims) {
    match token::mint_token(key, claims, FUZZ_NOW_UNIX, 600) {
        Ok(t) => match token::verify_token(t.expose(), &key.public(), FUZZ_NOW_UNIX + 1) {
            Ok(back) => assert!(&*back == claims, "re-minted token changed the claims"),
            Err(e) => panic!("a re-minted token of accepted claims is refused: {e}"),
        },
        // Only size can stop a re-mint of claims that verified.
        Err(TokenError::TooLarge { .. }) => {}
        Err(e) => panic!("accepted claims cannot be minted again: {e}"),
    }
}

/// Job token: the input as a token (trusted key = fuzz key, now = [`FUZZ_NOW_UNIX`]), then as
/// a payload signed by the fuzz key.
pub fn token(data: &[u8]) -> Outcome {
    let key = fuzz_trusted_key();
    let public = key.public();

    let as_token = match std::str::from_utf8(data)
        .ok()
        .map(|text| token::verify_token(text, &public, FUZZ_NOW_UNIX))
    {
        Some(Ok(claims)) => {
            token_round_trip(&key, &claims);
            Outcome::Accepted
        }
        _ => Outcome::Rejected,
    };

    let Some(signed) = sign_token_payload(&key, data) else {
        // An empty payload cannot be signed (PASETO forbids it).
        return as_token;
    };
    let as_payload = match token::verify_token(&signed, &public, FUZZ_NOW_UNIX) {
        Ok(claims) => {
            token_round_trip(&key, &claims);
            Outcome::Accepted
        }
        Err(e) => {
            if std::str::from_utf8(data).is_ok() && signed.len() <= token::MAX_TOKEN_BYTES {
                assert!(
                    !matches!(
                        e,
                        TokenError::TooLarge { .. }
                            | TokenError::Header { .. }
                            | TokenError::Footer
                            | TokenError::Format { .. }
                            | TokenError::Signature { .. }
                            | TokenError::Mint { .. }
                    ),
                    "a correctly signed token was refused for a non-claim rule: {e}"
                );
            }
            Outcome::Rejected
        }
    };
    as_token.any(as_payload)
}

/// One member read by [`read_all`], with its content when kept.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReadMember {
    path: String,
    kind: MemberKind,
    executable: bool,
    content: Option<Vec<u8>>,
}

/// Reads every member, keeping content up to [`TAR_ROUND_TRIP_BYTES`] in total.
fn read_all(
    tar_gz: &[u8],
    limits: &TarLimits,
    allowed: &AllowedNames,
) -> Result<Vec<ReadMember>, TarError> {
    let mut kept = 0u64;
    let mut members = Vec::new();
    read_members(tar_gz, limits, allowed, |m, body| {
        let content = if kept.saturating_add(m.size) <= TAR_ROUND_TRIP_BYTES {
            kept = kept.saturating_add(m.size);
            let mut buf = Vec::new();
            body.read_to_end(&mut buf)?;
            Some(buf)
        } else {
            None
        };
        members.push(ReadMember {
            path: m.path.clone(),
            kind: m.kind,
            executable: m.executable,
            content,
        });
        Ok(())
    })?;
    Ok(members)
}

/// Writes `members` (sorted bytewise) with the deterministic writer.
fn rewrite(members: &[ReadMember], limits: &TarLimits) -> Result<Vec<u8>, TarError> {
    let mut w = DeterministicTarWriter::with_limits(Vec::new(), limits.clone());
    for m in members {
        match (m.kind, &m.content) {
            (MemberKind::Dir, _) => w.append_dir(&m.path)?,
            (MemberKind::File, Some(c)) => {
                w.append_file(&m.path, m.executable, c.len() as u64, c.as_slice())?
            }
            (MemberKind::File, None) => unreachable!("rewrite called without content"),
        }
    }
    w.finish()
}

/// Reads one archive under one preset; on `Ok`, rewrites it and checks the round trip.
fn tar_case(tar_gz: &[u8], limits: &TarLimits, allowed: &AllowedNames) -> Outcome {
    let Ok(mut members) = read_all(tar_gz, limits, allowed) else {
        return Outcome::Rejected;
    };
    if members
        .iter()
        .any(|m| m.kind == MemberKind::File && m.content.is_none())
    {
        return Outcome::Accepted;
    }
    members.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    let first = match rewrite(&members, limits) {
        Ok(bytes) => bytes,
        Err(e) => panic!("the writer refuses members the reader accepted: {e}"),
    };
    // The rewrite may compress better than the input; the ratio is not what is tested here.
    let relaxed = TarLimits {
        max_compression_ratio: u64::MAX,
        ..limits.clone()
    };
    match read_all(&first, &relaxed, allowed) {
        Ok(back) => assert_eq!(back, members, "rewritten archive reads back differently"),
        Err(e) => panic!("the reader refuses the writer's rewrite of an accepted archive: {e}"),
    }
    match rewrite(&members, limits) {
        Ok(second) => assert!(second == first, "the writer is not deterministic"),
        Err(e) => panic!("the writer failed the second time: {e}"),
    }
    Outcome::Accepted
}

/// Gzip-compresses `data` (for reaching the tar layer behind the gzip CRC).
fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    // Writing to a Vec cannot fail.
    let _ = gz.write_all(data);
    gz.finish().unwrap_or_default()
}

/// Tar: the input as a tar.gz under the artifact and the bundle presets, then the input
/// gzip-compressed (as a raw tar stream) under both.
pub fn tar_read(data: &[u8]) -> Outcome {
    let artifact = (TarLimits::artifact(), AllowedNames::artifact());
    let bundle = (TarLimits::bundle(), AllowedNames::Bundle);
    let mut outcome = Outcome::Rejected;
    let compressed = gzip(data);
    for input in [data, compressed.as_slice()] {
        for (limits, allowed) in [&artifact, &bundle] {
            outcome = outcome.any(tar_case(input, limits, allowed));
        }
    }
    outcome
}

/// The old-side text of a deleted section, spelled by its `-` lines.
fn deleted_text(patch: &diff::FilePatch) -> Vec<u8> {
    let mut old = Vec::new();
    for h in &patch.hunks {
        for l in &h.lines {
            if l.kind != LineKind::Added {
                old.extend_from_slice(l.text.as_bytes());
                if !l.no_newline {
                    old.push(b'\n');
                }
            }
        }
    }
    old
}

/// Checks what must hold for any patch [`diff::parse_patch`] accepts.
fn patch_invariants(p: &ParsedPatch) {
    for w in p.files.windows(2) {
        assert!(
            w[0].path.as_bytes() < w[1].path.as_bytes(),
            "sections not in strictly increasing path order"
        );
    }
    for f in &p.files {
        let lines = f.hunks.iter().flat_map(|h| h.lines.iter());
        let added = lines.clone().filter(|l| l.kind == LineKind::Added).count() as u64;
        let removed = lines.filter(|l| l.kind == LineKind::Removed).count() as u64;
        assert_eq!((f.added, f.removed), (added, removed), "section counts lie");
        let touched = f.touched_old_lines();
        assert!(
            touched.windows(2).all(|w| w[0] < w[1]),
            "touched old lines not increasing"
        );
        match f.kind {
            FileKind::Added => match diff::apply_file(None, f) {
                Ok(Some(_)) => {}
                Ok(None) => panic!("an added file applies to a deletion"),
                Err(e) => panic!("an accepted added file does not apply to nothing: {e}"),
            },
            FileKind::Deleted => {
                let old = deleted_text(f);
                match diff::apply_file(Some(&old), f) {
                    Ok(None) => {}
                    Ok(Some(_)) => panic!("a deleted file applies to content"),
                    Err(e) => panic!("a deleted file does not apply to its own lines: {e}"),
                }
            }
            FileKind::Modified | FileKind::ModeChange => {}
        }
    }
    assert_eq!(p.files_changed(), p.files.len() as u64);
}

/// `patch.diff`: [`diff::parse_patch`] with the default limits, then the invariants above.
pub fn diff_parse(data: &[u8]) -> Outcome {
    match diff::parse_patch(data, &DiffLimits::default()) {
        Ok(p) => {
            patch_invariants(&p);
            Outcome::Accepted
        }
        Err(_) => Outcome::Rejected,
    }
}

/// `comments.jsonl`: [`format::parse_comments`], then the write/parse round trip of the kept
/// comments. Accepted: at least one comment kept and none refused.
pub fn comments(data: &[u8]) -> Outcome {
    let parsed = format::parse_comments(data);
    let kept: Vec<&format::Comment> = parsed.kept.iter().map(|(_, c)| c).collect();
    for c in &kept {
        assert!(
            format::check_comment(c).is_ok(),
            "kept a comment that breaks a rule"
        );
    }
    let bytes = format::to_jsonl(kept.iter().copied());
    let again = format::parse_comments(&bytes);
    assert!(
        again.refused.is_empty(),
        "written comments refused: {:?}",
        again.refused
    );
    let back: Vec<&format::Comment> = again.kept.iter().map(|(_, c)| c).collect();
    assert_eq!(back, kept, "comments changed in a round trip");
    assert_eq!(
        format::to_jsonl(back),
        bytes,
        "writing is not deterministic"
    );
    if !kept.is_empty() && parsed.refused.is_empty() {
        Outcome::Accepted
    } else {
        Outcome::Rejected
    }
}

/// Valid inputs for each helper, built by this crate's own encoders: the seed corpus of
/// `fuzz/corpus/<target>/` and of the unit tests. Keys and times are the fixed fuzz ones.
pub fn seed_corpus() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    seeds::all()
}

mod seeds;
#[cfg(test)]
mod tests;
mod text;

pub use text::text;
