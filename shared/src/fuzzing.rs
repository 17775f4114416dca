//! Entry points for the fuzz targets in `fuzz/`: one function per boundary parser, each taking
//! arbitrary bytes. Not a stable API: compiled only under `cfg(fuzzing)` (set by `cargo fuzz`)
//! and for this crate's unit tests, which run every helper on the committed fixtures and on
//! mutated inputs, so the helpers cannot rot and the worker does not carry them.
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
//! - `text`: every output of [`crate::text`] marks each hidden character of the input, in
//!   order; the one-line forms hold no hidden character (so no control byte), the HTML no
//!   unescaped `<`, `>`, `&` or quote, a table cell no bare `|` or newline; a code span or
//!   fence is never closed before its end; Markdown text has every punctuation escaped.

use std::io::Write;

use base64::Engine as _;
use pasetors::keys::AsymmetricSecretKey;
use pasetors::version4::{PublicToken, V4};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::diff::{self, DiffLimits, FileKind, LineKind, ParsedPatch};
use crate::digest::Sha256Digest;
use crate::dsse::{self, Envelope, EnvelopeError, Signature, Statement, PAYLOAD_TYPE};
use crate::format::{
    self, ArtifactPredicate, BundlePredicate, JobRecord, Manifest, Packet, Request,
    MAX_ENVELOPE_BYTES, MAX_MANIFEST_BYTES, MAX_PACKET_BYTES, MAX_REQUEST_BYTES,
    PREDICATE_ARTIFACT, PREDICATE_BUNDLE, PREDICATE_JOB_RECORD,
};
use crate::keys::SigningKey;
use crate::limits::TarLimits;
use crate::tar::{read_members, AllowedNames, DeterministicTarWriter, MemberKind, TarError};
use crate::token::{self, JobClaims, TokenError};

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
    let kp = key.keypair_bytes();
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

/// Valid inputs for each helper, built by this crate's own encoders: the seed corpus of
/// `fuzz/corpus/<target>/` and of the unit tests. Keys and times are the fixed fuzz ones.
pub fn seed_corpus() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    seeds::all()
}

mod seeds {
    use super::*;
    use crate::format::{
        EgressAttempt, EgressRule, ExitInfo, ExitKind, FileEntry, Packer, Redaction, RefusedPath,
        Source, Timings, MANIFEST_FORMAT, MODEL_UNREPORTED, PACKET_FORMAT,
    };
    use crate::jobid::JobId;
    use crate::limits::JobLimits;
    use crate::token::{BundleRef, DropTargets, JobKey};

    pub(super) fn all() -> Vec<(&'static str, Vec<Vec<u8>>)> {
        vec![
            ("manifest", vec![format::to_json_bytes(&manifest())]),
            ("request", requests()),
            ("packet", vec![format::to_json_bytes(&packet())]),
            ("dsse_envelope", envelopes()),
            ("token", tokens()),
            ("tar_read", tarballs()),
            ("diff_parse", patches()),
        ]
    }

    fn job() -> JobId {
        JobId::new(FUZZ_NOW_UNIX, [0x3f; crate::jobid::RANDOM_BYTES])
    }

    fn source() -> Source {
        Source {
            repo: "example".into(),
            revision: "0123456789abcdef0123456789abcdef01234567".into(),
            tree: "89abcdef0123456789abcdef0123456789abcdef".into(),
        }
    }

    pub(super) fn manifest() -> Manifest {
        Manifest {
            format: MANIFEST_FORMAT.into(),
            packer: Packer {
                name: "airlock".into(),
                version: crate::VERSION.into(),
            },
            source: source(),
            request_sha256: Sha256Digest::of_bytes(b"request"),
            files: vec![
                FileEntry {
                    path: "README.md".into(),
                    size: 6,
                    mode: "0644".into(),
                    sha256: Sha256Digest::of_bytes(b"hello\n"),
                },
                FileEntry {
                    path: "src/caf\u{e9}.sh".into(),
                    size: 0,
                    mode: "0755".into(),
                    sha256: Sha256Digest::of_bytes(b""),
                },
            ],
            redactions: vec![Redaction {
                path: "README.md".into(),
                line: 1,
                rule: "aws-access-key".into(),
                fingerprint: "3f2a".into(),
            }],
            skipped: [("deny:.env*".to_owned(), 2), ("pack.symlink".to_owned(), 1)]
                .into_iter()
                .collect(),
            omitted: Vec::new(),
        }
    }

    fn requests() -> Vec<Vec<u8>> {
        let plain = Request::new("Fix the \"bug\"\n".into(), "model-x".into());
        let mut egress = plain.clone();
        egress.egress = vec![EgressRule {
            host: "api.example.com".into(),
            port: 443,
        }];
        vec![
            format::to_json_bytes(&plain),
            format::to_json_bytes(&egress),
        ]
    }

    pub(super) fn packet() -> Packet {
        Packet {
            format: PACKET_FORMAT.into(),
            job: job(),
            run_id: "0123456789abcdef".into(),
            bundle_sha256: Sha256Digest::of_bytes(b"bundle"),
            model_requested: "model-x".into(),
            model_reported: MODEL_UNREPORTED.into(),
            tokens_in: Some(10),
            tokens_out: None,
            models: Vec::new(),
            diff_sha256: Sha256Digest::of_bytes(b""),
            files_changed: 1,
            lines_added: 2,
            lines_removed: 0,
            refused: vec![RefusedPath {
                path: "link".into(),
                reason: "diff.symlink".into(),
            }],
            ignored: 0,
            limits_hit: vec!["wall-clock".into()],
            exit: ExitInfo {
                kind: ExitKind::Exited,
                code: Some(0),
            },
            timings: Timings {
                started_at_ms: FUZZ_NOW_UNIX * 1000,
                finished_at_ms: FUZZ_NOW_UNIX * 1000 + 5,
                generator_ms: 4,
            },
            worker_version: crate::VERSION.into(),
            sandbox: "none".into(),
            egress: vec![EgressAttempt {
                destination: "api.example.com:443".into(),
                allowed: false,
                reason: Some("egress.denied".into()),
                bytes_up: 0,
                bytes_down: 0,
                at_ms: FUZZ_NOW_UNIX * 1000 + 1,
            }],
            partial: false,
        }
    }

    fn statements() -> Vec<Statement> {
        let bundle = BundlePredicate {
            job: job(),
            manifest_sha256: Sha256Digest::of_bytes(b"manifest"),
            request_sha256: Sha256Digest::of_bytes(b"request"),
            source: source(),
        };
        let artifact = ArtifactPredicate {
            job: job(),
            run_id: "0123456789abcdef".into(),
            bundle_sha256: Sha256Digest::of_bytes(b"bundle"),
            packet_sha256: Sha256Digest::of_bytes(b"packet"),
            partial: true,
            seq: None,
        };
        let record = JobRecord {
            format: format::JOB_RECORD_FORMAT.into(),
            job: job(),
            job_public_key: SigningKey::from_seed([0x02; 32]).public().raw_hex(),
            bundle_sha256: Sha256Digest::of_bytes(b"bundle"),
            request_sha256: Sha256Digest::of_bytes(b"request"),
            prompt_sha256: Sha256Digest::of_bytes(b"prompt"),
            model_requested: "model-x".into(),
            revision: source().revision,
            issued_at: FUZZ_NOW_UNIX,
            expires_at: FUZZ_NOW_UNIX + 1200,
            limits: crate::limits::JobLimits::default(),
        };
        vec![
            Statement::new(
                "bundle.tar.gz",
                Sha256Digest::of_bytes(b"bundle"),
                PREDICATE_BUNDLE,
                value(&bundle),
            ),
            Statement::new(
                "artifact.tar.gz",
                Sha256Digest::of_bytes(b"artifact"),
                PREDICATE_ARTIFACT,
                value(&artifact),
            ),
            Statement::new(
                "bundle.tar.gz",
                Sha256Digest::of_bytes(b"bundle"),
                PREDICATE_JOB_RECORD,
                value(&record),
            ),
        ]
    }

    /// Each statement signed by the fuzz key, and its bare canonical payload.
    fn envelopes() -> Vec<Vec<u8>> {
        let key = fuzz_trusted_key();
        let mut out = Vec::new();
        for s in statements() {
            out.push(dsse::sign_statement(&s, &key).to_json_pretty());
            out.push(s.canonical_bytes());
        }
        out
    }

    fn claims(base: &str) -> JobClaims {
        let job = job();
        JobClaims {
            bundle: BundleRef {
                url: if base.starts_with("https:") {
                    format!("{base}/inbox/{job}/bundle.tar.gz?X-Amz-Signature=00")
                } else {
                    format!("{base}/inbox/{job}/bundle.tar.gz")
                },
                sha256: Sha256Digest::of_bytes(b"bundle"),
                max_bytes: 1 << 20,
            },
            bundle_envelope_url: format!("{base}/inbox/{job}/bundle.dsse.json"),
            drop: DropTargets {
                checkpoint: format!("{base}/drop/{job}/checkpoint.tar.gz"),
                checkpoint_envelope: format!("{base}/drop/{job}/checkpoint.dsse.json"),
                checkpoint_1: format!("{base}/drop/{job}/checkpoint.1.tar.gz"),
                checkpoint_1_envelope: format!("{base}/drop/{job}/checkpoint.1.dsse.json"),
                artifact: format!("{base}/drop/{job}/artifact.tar.gz"),
                artifact_envelope: format!("{base}/drop/{job}/artifact.dsse.json"),
                artifact_envelope_get: None,
            },
            job_key: JobKey::from_signing_key(&SigningKey::from_seed([0x02; 32])),
            limits: JobLimits::default(),
            model_key: None,
            formats: None,
            resume: None,
            job,
        }
    }

    /// Tokens minted by the fuzz key at [`FUZZ_NOW_UNIX`], and their bare payloads.
    fn tokens() -> Vec<Vec<u8>> {
        let key = fuzz_trusted_key();
        let mut out = Vec::new();
        for base in ["https://store.example.com/bucket", "file:///srv/airlock"] {
            let c = claims(base);
            if let Ok(t) = token::mint_token(&key, &c, FUZZ_NOW_UNIX, 1200) {
                out.push(t.expose().as_bytes().to_vec());
                let body = t.expose().trim_start_matches("v4.public.");
                if let Ok(raw) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(body) {
                    out.push(raw[..raw.len().saturating_sub(64)].to_vec());
                }
            }
        }
        out
    }

    fn tarballs() -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut w = DeterministicTarWriter::with_limits(Vec::new(), TarLimits::artifact());
        let members: [(&str, &[u8]); 3] = [
            ("generator.log", b"ran\n"),
            ("packet.json", b"{}\n"),
            ("patch.diff", b""),
        ];
        let mut ok = true;
        for (name, body) in members {
            ok &= w.append_file(name, false, body.len() as u64, body).is_ok();
        }
        if let (true, Ok(bytes)) = (ok, w.finish()) {
            out.push(bytes);
        }
        let mut w = DeterministicTarWriter::new(Vec::new());
        let long = format!("files/{}/x.sh", "d".repeat(120));
        let ok = w.append_dir("files").is_ok()
            && w.append_file(&long, true, 3, &b"#!x"[..]).is_ok()
            && w.append_file("files/hello.txt", false, 6, &b"hello\n"[..])
                .is_ok()
            && w.append_file("manifest.json", false, 3, &b"{}\n"[..])
                .is_ok()
            && w.append_file("request.json", false, 3, &b"{}\n"[..])
                .is_ok();
        if let (true, Ok(bytes)) = (ok, w.finish()) {
            out.push(bytes);
        }
        out
    }

    fn patches() -> Vec<Vec<u8>> {
        vec![
            b"diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n".to_vec(),
            b"diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-only\n\\ No newline at end of file\n".to_vec(),
            b"diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n".to_vec(),
            b"diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n".to_vec(),
        ]
    }

    /// `serde_json::to_value` for a seed; our plain structs always serialize.
    fn value<T: Serialize>(v: &T) -> serde_json::Value {
        serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
    }
}

/// `text`: the input (lossily UTF-8) through every medium of [`crate::text`].
pub fn text(data: &[u8]) {
    use crate::text::*;
    let s = &String::from_utf8_lossy(data);
    let max = s.chars().count() + 1;
    let tokens = hidden_tokens(s);
    let marks = |out: &str, html: bool| {
        // Every hidden character of the input shows as its token, in order.
        let mut rest = out;
        for t in &tokens {
            let want = if html {
                t.replace('<', "&lt;").replace('>', "&gt;")
            } else {
                t.clone()
            };
            match rest.find(&want) {
                Some(at) => rest = &rest[at + want.len()..],
                None => panic!("{t} not marked in {out:?}"),
            }
        }
    };
    for out in [terminal(s, max), trailer(s, max), detail(s, max)] {
        assert!(!has_hidden(&out), "hidden character in {out:?}");
        marks(&out, false);
    }
    let block = terminal_block(s, max);
    assert!(!block.chars().any(|c| is_hidden(c) && c != '\n'));
    let summary = md_html(s, max);
    assert!(!summary.contains(['`', '|', '<', '>', '"', '\'']));
    assert!(!has_hidden(&summary));
    let html_out = html(s, max);
    assert!(!has_hidden(&html_out));
    let stripped = html_out
        .replace(
            "<mark class=\"ctl\" title=\"invisible or control character\">",
            "",
        )
        .replace("</mark>", "");
    assert!(
        !stripped.contains(['<', '>', '"', '\'']),
        "unescaped in {html_out:?}"
    );
    assert!(
        stripped
            .match_indices('&')
            .all(|(i, _)| ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"]
                .iter()
                .any(|e| stripped[i..].starts_with(e))),
        "raw & in {html_out:?}"
    );
    marks(&html_out, true);
    let code = md_code(s, max);
    assert_closed_span(&code);
    marks(&code, false);
    let cell = md_cell(s, max);
    assert!(!cell.contains('\n'));
    assert!(
        cell.match_indices('|')
            .all(|(i, _)| i > 0 && cell.as_bytes()[i - 1] == b'\\'),
        "bare | in {cell:?}"
    );
    assert_closed_span(&cell);
    let fenced = md_fence("text", s, max);
    let fence: String = fenced.chars().take_while(|&c| c == '`').collect();
    assert!(fenced.ends_with(&format!("\n{fence}\n")));
    let inner = &fenced[fence.len()..fenced.len() - fence.len() - 1];
    assert!(
        !inner.contains(fence.as_str()),
        "fence closed early: {fenced:?}"
    );
    let text = md_text(s, max);
    let mut escaped = false;
    for c in text.chars() {
        assert!(escaped || !c.is_ascii_punctuation() || c == '\\');
        escaped = !escaped && c == '\\';
    }
}

/// A code span whose opening fence is found again only at its very end.
fn assert_closed_span(code: &str) {
    use crate::text::has_hidden;
    assert!(!has_hidden(code), "hidden character in {code:?}");
    let fence: String = code.chars().take_while(|&c| c == '`').collect();
    let inner = &code[fence.len()..code.len() - fence.len()];
    assert!(code.ends_with(fence.as_str()));
    // No run of exactly the fence's length inside, nor one touching either end.
    let runs = inner.split(|c| c != '`').filter(|r| !r.is_empty());
    for r in runs {
        assert!(r.len() < fence.len(), "span closed early: {code:?}");
    }
    assert!(!inner.starts_with('`') && !inner.ends_with('`'));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::io::Read;
    use std::path::{Path, PathBuf};

    type Helper = fn(&[u8]) -> Outcome;

    /// Knuth's MMIX linear congruential generator: fixed seed, same inputs on every run.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            self.0 >> 16
        }

        fn below(&mut self, n: usize) -> usize {
            if n == 0 {
                0
            } else {
                (self.next() % n as u64) as usize
            }
        }

        fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
            &items[self.below(items.len())]
        }
    }

    /// Byte strings that tend to matter to our parsers.
    const INTERESTING: &[&[u8]] = &[
        b"\0",
        b"\xff",
        b"\"",
        b"\\",
        b"/",
        b"..",
        b"{",
        b"}",
        b"[",
        b"]",
        b",",
        b":",
        b"null",
        b"-1",
        b"18446744073709551616",
        b"\n",
        b"\xc3",
        b"\xe2\x80\xae",
        b"=",
        b".",
        b"0",
        b"\\u0000",
        b"ustar",
        b"@@ -1 +1 @@\n",
        b"diff --git a/x b/x\n",
    ];

    /// One to four random edits of `input`, sometimes splicing in part of another seed.
    fn mutate(rng: &mut Lcg, input: &[u8], pool: &[Vec<u8>]) -> Vec<u8> {
        let mut out = input.to_vec();
        for _ in 0..=rng.below(4) {
            let len = out.len();
            match rng.below(9) {
                0 if len > 0 => {
                    let i = rng.below(len);
                    out[i] ^= 1 << rng.below(8);
                }
                1 if len > 0 => {
                    let i = rng.below(len);
                    out[i] = rng.next() as u8;
                }
                2 => {
                    let i = rng.below(len + 1);
                    let s = *rng.pick(INTERESTING);
                    out.splice(i..i, s.iter().copied());
                }
                3 if len > 0 => {
                    let i = rng.below(len);
                    let n = 1 + rng.below((len - i).min(64));
                    out.drain(i..i + n);
                }
                4 if len > 0 => {
                    let i = rng.below(len);
                    let n = 1 + rng.below((len - i).min(64));
                    let chunk: Vec<u8> = out[i..i + n].to_vec();
                    let at = rng.below(len + 1);
                    out.splice(at..at, chunk);
                }
                5 => out.truncate(rng.below(len + 1)),
                6 if !pool.is_empty() => {
                    let other = rng.pick(pool);
                    let from = rng.below(other.len() + 1);
                    let to = from + rng.below(other.len() - from + 1);
                    let at = rng.below(len + 1);
                    out.splice(at..at, other[from..to].iter().copied());
                }
                7 if len > 0 => {
                    let i = rng.below(len);
                    out[i] = b'0' + rng.below(10) as u8;
                }
                _ => {
                    let i = rng.below(len + 1);
                    out.insert(i, rng.next() as u8);
                }
            }
        }
        out
    }

    /// A random leaf-level edit of a JSON value: change a value's type or content, drop or
    /// add a member, grow or shrink an array.
    fn mutate_json(rng: &mut Lcg, v: &mut Value) {
        match v {
            Value::Object(map) if !map.is_empty() && rng.below(4) != 0 => {
                let keys: Vec<String> = map.keys().cloned().collect();
                let k = rng.pick(&keys).clone();
                match rng.below(8) {
                    0 => {
                        map.remove(&k);
                    }
                    1 => {
                        map.insert(format!("{k}x"), Value::Bool(true));
                    }
                    _ => {
                        if let Some(child) = map.get_mut(&k) {
                            mutate_json(rng, child);
                        }
                    }
                }
            }
            Value::Array(items) if !items.is_empty() && rng.below(4) != 0 => match rng.below(6) {
                0 => {
                    items.pop();
                }
                1 => {
                    let dup = items[rng.below(items.len())].clone();
                    items.push(dup);
                }
                _ => {
                    let i = rng.below(items.len());
                    mutate_json(rng, &mut items[i]);
                }
            },
            _ => {
                let new = match rng.below(12) {
                    0 => Value::Null,
                    1 => Value::Bool(rng.below(2) == 0),
                    2 => Value::from(0u64),
                    3 => Value::from(u64::MAX),
                    4 => Value::from(-1i64),
                    5 => Value::from(1.5f64),
                    6 => Value::String(String::new()),
                    7 => Value::String("../x".into()),
                    8 => Value::String("\u{202e}\n\"".into()),
                    9 => Value::Array(vec![]),
                    10 => match &*v {
                        Value::String(s) => {
                            let mut s = s.clone();
                            if !s.is_empty() && rng.below(2) == 0 {
                                let mut cut = rng.below(s.len());
                                while !s.is_char_boundary(cut) {
                                    cut -= 1;
                                }
                                s.truncate(cut);
                            } else {
                                s.push(char::from(b'a' + rng.below(26) as u8));
                            }
                            Value::String(s)
                        }
                        Value::Number(n) => Value::from(n.as_u64().unwrap_or(0).wrapping_add(1)),
                        other => other.clone(),
                    },
                    _ => v.clone(),
                };
                *v = new;
            }
        }
    }

    fn seeds(target: &str) -> Vec<Vec<u8>> {
        seed_corpus()
            .into_iter()
            .find(|(t, _)| *t == target)
            .map(|(_, s)| s)
            .unwrap_or_else(|| panic!("no seeds for {target}"))
    }

    /// Every committed fixture file (any format), with its path.
    fn fixtures() -> Vec<(PathBuf, Vec<u8>)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut out = Vec::new();
        let mut stack = vec![root];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let bytes = std::fs::read(&path).unwrap();
                    out.push((path, bytes));
                }
            }
        }
        out.sort();
        out
    }

    /// Runs `helper` on `rounds` mutations of the seeds (bytes, and for JSON seeds structural
    /// edits), returning (accepted, rejected).
    fn fuzz(helper: Helper, pool: &[Vec<u8>], rounds: usize, seed: u64) -> (usize, usize) {
        let mut rng = Lcg(seed);
        let (mut accepted, mut rejected) = (0, 0);
        for _ in 0..rounds {
            let base = rng.pick(pool);
            let input = match serde_json::from_slice::<Value>(base) {
                Ok(mut v) if rng.below(2) == 0 => {
                    for _ in 0..=rng.below(2) {
                        mutate_json(&mut rng, &mut v);
                    }
                    if rng.below(2) == 0 {
                        format::to_json_bytes(&v)
                    } else {
                        serde_json::to_vec(&v).unwrap()
                    }
                }
                _ => mutate(&mut rng, base, pool),
            };
            match helper(&input) {
                Outcome::Accepted => accepted += 1,
                Outcome::Rejected => rejected += 1,
            }
        }
        (accepted, rejected)
    }

    const ROUNDS: usize = 2500;

    #[test]
    fn every_seed_is_accepted_by_its_helper() {
        // (target, helper, number of seeds: a seed builder that silently fails shows here)
        let helpers: [(&str, Helper, usize); 7] = [
            ("manifest", manifest, 1),
            ("request", request, 2),
            ("packet", packet, 1),
            ("dsse_envelope", dsse_envelope, 6),
            ("token", token, 4),
            ("tar_read", tar_read, 2),
            ("diff_parse", diff_parse, 4),
        ];
        for (name, helper, count) in helpers {
            let s = seeds(name);
            assert_eq!(s.len(), count, "{name}: seeds missing");
            for (i, input) in s.iter().enumerate() {
                assert_eq!(helper(input), Outcome::Accepted, "{name}: seed {i} refused");
            }
        }
    }

    #[test]
    fn every_helper_survives_every_committed_fixture() {
        let all = fixtures();
        assert!(all.len() >= 50, "fixtures missing: {}", all.len());
        for (path, bytes) in &all {
            let name = path.file_name().unwrap().to_string_lossy();
            let outcomes = [
                tar_read(bytes),
                manifest(bytes),
                request(bytes),
                packet(bytes),
                dsse_envelope(bytes),
                token(bytes),
                diff_parse(bytes),
            ];
            // A fixture named `ok--*` is a valid input of its format: some helper accepts it.
            if name.starts_with("ok--") {
                assert!(
                    outcomes.contains(&Outcome::Accepted),
                    "{} refused",
                    path.display()
                );
            }
            if name.ends_with(".tar.gz") && name.starts_with("ok--") {
                assert_eq!(outcomes[0], Outcome::Accepted, "{}", path.display());
            }
        }
    }

    #[test]
    fn tar_read_survives_mutated_archives_and_raw_tar_streams() {
        let mut pool = seeds("tar_read");
        for (_, bytes) in fixtures() {
            if bytes.len() <= 64 * 1024 {
                pool.push(bytes);
            }
        }
        // The decompressed streams too: `tar_read` gzips its input, which reaches the tar
        // layer behind the gzip CRC.
        let raw: Vec<Vec<u8>> = pool
            .iter()
            .filter_map(|gz| {
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(gz.as_slice())
                    .take(64 * 1024)
                    .read_to_end(&mut out)
                    .ok()
                    .map(|_| out)
            })
            .collect();
        assert!(raw.len() >= 10, "too few raw tar streams: {}", raw.len());
        let (a1, r1) = fuzz(tar_read, &pool, ROUNDS / 2, 1);
        let (a2, r2) = fuzz(tar_read, &raw, ROUNDS, 2);
        assert!(r1 > 0 && r2 > 0, "nothing refused: {r1} {r2}");
        assert!(
            a2 > 0,
            "no mutated raw tar stream was accepted: the round trip never ran"
        );
        let _ = a1;
    }

    #[test]
    fn manifest_survives_mutations() {
        let (a, r) = fuzz(manifest, &seeds("manifest"), ROUNDS, 3);
        assert!(a > 0 && r > 0, "accepted {a}, rejected {r}");
    }

    #[test]
    fn request_survives_mutations() {
        let (a, r) = fuzz(request, &seeds("request"), ROUNDS, 4);
        assert!(a > 0 && r > 0, "accepted {a}, rejected {r}");
    }

    #[test]
    fn packet_survives_mutations() {
        let (a, r) = fuzz(packet, &seeds("packet"), ROUNDS, 5);
        assert!(a > 0 && r > 0, "accepted {a}, rejected {r}");
    }

    #[test]
    fn dsse_envelope_survives_mutations() {
        let (a, r) = fuzz(dsse_envelope, &seeds("dsse_envelope"), ROUNDS, 6);
        assert!(a > 0 && r > 0, "accepted {a}, rejected {r}");
    }

    #[test]
    fn token_survives_mutations() {
        let (a, r) = fuzz(token, &seeds("token"), ROUNDS, 7);
        assert!(a > 0 && r > 0, "accepted {a}, rejected {r}");
    }

    #[test]
    fn diff_parse_survives_mutated_patches() {
        let mut pool = seeds("diff_parse");
        for (path, bytes) in fixtures() {
            if path
                .extension()
                .is_some_and(|e| e == "diff" || e == "patch")
            {
                pool.push(bytes);
            }
        }
        let (a, r) = fuzz(diff_parse, &pool, ROUNDS, 8);
        assert!(a > 0 && r > 0, "accepted {a}, rejected {r}");
    }

    #[test]
    fn helpers_survive_empty_and_tiny_inputs() {
        // An empty patch is a valid patch that changes nothing.
        assert_eq!(diff_parse(b""), Outcome::Accepted);
        assert_eq!(diff_parse(b"\0"), Outcome::Rejected);
        let helpers: [Helper; 6] = [manifest, request, packet, dsse_envelope, token, tar_read];
        for helper in helpers {
            for input in [
                &b""[..],
                b"\0",
                b"{}",
                b"[]",
                b"null",
                b"v4.public.",
                b"\x1f\x8b",
            ] {
                assert_eq!(helper(input), Outcome::Rejected, "{input:?}");
            }
        }
    }

    /// The round-trip assertion is live: a parser that changes the value is caught.
    #[test]
    #[should_panic(expected = "re-encoded document parsed to another value")]
    fn json_round_trip_catches_a_parser_that_changes_the_value() {
        let m = seeds::manifest();
        json_round_trip(&m, MAX_MANIFEST_BYTES, |b| {
            Manifest::from_json(b).map(|mut back| {
                back.files.pop();
                back
            })
        });
    }

    /// The signed-payload path asserts that only payload rules refuse a correctly signed
    /// envelope; a non-canonical payload is one of those.
    #[test]
    fn dsse_signed_payload_path_refuses_non_canonical_json() {
        let pretty = serde_json::to_vec_pretty(&serde_json::json!({"_type": "x"})).unwrap();
        assert_eq!(dsse_envelope(&pretty), Outcome::Rejected);
    }

    /// Found by this helper: a directory whose path is exactly `max_path_bytes` long is
    /// accepted by the reader, and the writer's rewrite of it must be too (it named it `path/`,
    /// one byte over: `tar.path-too-long`).
    #[test]
    fn tar_round_trip_keeps_a_directory_at_max_path_length() {
        let mut path = String::from("files");
        while path.len() < 1024 - 201 {
            path.push('/');
            path.push_str(&"a".repeat(200));
        }
        while path.len() < 1024 {
            path.push('b');
        }
        let mut header = ::tar::Header::new_gnu();
        header.set_entry_type(::tar::EntryType::Directory);
        header.set_mode(0o755);
        header.set_size(0);
        let mut b = ::tar::Builder::new(Vec::new());
        b.append_data(&mut header, &path, std::io::empty()).unwrap();
        let tar = b.into_inner().unwrap();
        let gz = gzip(&tar);
        let bundle = (TarLimits::bundle(), AllowedNames::Bundle);
        assert_eq!(read_all(&gz, &bundle.0, &bundle.1).unwrap().len(), 1);
        assert_eq!(tar_case(&gz, &bundle.0, &bundle.1), Outcome::Accepted);
    }

    /// Writes the seed corpus to `fuzz/corpus/<target>/seed-<n>`. Run by hand after a format
    /// change: `cargo test -p airlock-core fuzzing::tests::write_seed_corpus -- --ignored`.
    #[test]
    #[ignore = "writes fuzz/corpus; run by hand after a format change"]
    fn write_seed_corpus() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
        for (target, inputs) in seed_corpus() {
            let dir = root.join(target);
            std::fs::create_dir_all(&dir).unwrap();
            for (i, input) in inputs.iter().enumerate() {
                std::fs::write(dir.join(format!("seed-{i}")), input).unwrap();
            }
        }
    }
}
