//! Job tokens: PASETO v4.public tokens signed by the trusted key, carrying one job's claims.
//!
//! Guards against: forged tokens (ed25519 signature by the pinned trusted key, checked before
//! any claim is read), tokens for another audience, issuer or job, expired tokens (no leeway),
//! tokens from the future (more than [`CLOCK_SKEW_SECS`]), long-lived tokens (more than
//! [`MAX_LIFETIME_SECS`]), oversized tokens (checked before decoding), footers, unknown claims,
//! URLs with other schemes, plain `http` to non-loopback hosts or userinfo, and malformed job
//! keys. pasetors only checks the signature here; every claim is validated by this module
//! against the caller's `now_unix` (no clock is read).
//!
//! On `Ok`: [`verify_token`] returns [`Verified<JobClaims>`]: signed by the trusted key, valid
//! at `now_unix`, for audience [`AUDIENCE`] from issuer [`ISSUER`], `sub` equal to the job id,
//! every URL of an allowed shape and a well-formed job key.
//!
//! Does not check: that the URLs are reachable or point at this job's objects (they are
//! presigned by the trusted side), or the bundle digest (the worker checks it after download).
//!
//! Secrets: the token, its presigned URLs and the job key are secrets. [`JobToken`] and
//! [`JobKey`] have no `Debug`/`Display`/`Serialize` of their own beyond the claim encoding and
//! zeroize on drop; error messages name the claim, never its value (URLs are never printed).
//!
//! # Payload
//! The payload is JSON with exactly these members: `iss`, `aud`, `sub`, `iat`, `nbf`, `exp`
//! (times in RFC 3339 UTC, exactly `YYYY-MM-DDTHH:MM:SSZ`) and `airlock` (the [`JobClaims`]).
//! No footer and no implicit assertion.

use crate::text;
use pasetors::keys::{AsymmetricPublicKey, AsymmetricSecretKey};
use pasetors::token::UntrustedToken;
use pasetors::version4::{PublicToken, V4};
use pasetors::Public;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::digest::Sha256Digest;
use crate::jobid::{rfc3339_utc, JobId};
use crate::keys::{PublicKey, SigningKey};
use crate::limits::JobLimits;
use crate::verified::Verified;

/// The only audience a job token is for.
pub const AUDIENCE: &str = "airlock-worker";
/// The only issuer we accept.
pub const ISSUER: &str = "airlock";
/// Largest token accepted, in bytes of its text form (checked before decoding).
pub const MAX_TOKEN_BYTES: usize = 64 * 1024;
/// Longest lifetime (`exp - iat`) accepted or minted.
pub const MAX_LIFETIME_SECS: u64 = 24 * 60 * 60;
/// How far `iat`/`nbf` may lie in the future (clock skew between hosts).
pub const CLOCK_SKEW_SECS: u64 = 60;
/// Longest URL accepted in a claim.
pub const MAX_URL_BYTES: usize = 8 * 1024;

const HEADER: &str = "v4.public.";

/// A job token was malformed, expired or not for us.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The token is larger than [`MAX_TOKEN_BYTES`]; nothing was decoded.
    #[error("job token: too large (token.too-large): limit {limit} bytes, seen {seen}")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
        /// Bytes seen.
        seen: usize,
    },
    /// The token is not a PASETO `v4.public.` token.
    #[error("job token: wrong header (token.header): expected \"v4.public.\", {reason}")]
    Header {
        /// What was found (never the token).
        reason: &'static str,
    },
    /// The token has a footer; ours never do.
    #[error("job token: has a footer (token.footer): airlock tokens carry none")]
    Footer,
    /// The token body is not valid base64url or too short to hold a signature.
    #[error("job token: malformed body (token.format): {reason}")]
    Format {
        /// Why.
        reason: String,
    },
    /// The signature does not verify under the trusted key.
    #[error(
        "job token: signature does not verify under the trusted key {key_id} (token.signature)"
    )]
    Signature {
        /// The trusted key's id.
        key_id: String,
    },
    /// The payload is not the expected JSON (unknown, missing or malformed claims).
    #[error("job token: malformed claims (token.claims): {reason}")]
    Claims {
        /// The parser's reason (serde messages name fields, not values).
        reason: String,
    },
    /// A closed object of the payload has a member this version does not know (the token's
    /// objects are closed except `drop`: `docs/FORMATS.md`, "Evolution").
    #[error("job token: unknown member {member} (format.unknown-member): airlock {} does not understand it; the trusted side is newer than this worker", crate::VERSION)]
    UnknownMember {
        /// The member's name, escaped.
        member: String,
    },
    /// The token has no `exp` claim.
    #[error("job token: no exp claim (token.no-expiry): tokens must expire")]
    NoExpiry,
    /// A time claim is not RFC 3339 UTC of the exact shape `YYYY-MM-DDTHH:MM:SSZ`.
    #[error("job token: claim {claim} is not YYYY-MM-DDTHH:MM:SSZ (token.time)")]
    Time {
        /// `iat`, `nbf` or `exp`.
        claim: &'static str,
    },
    /// `exp` is at or before `now`.
    #[error("job token: expired at {exp} (token.expired): now {now}")]
    Expired {
        /// The expiry, RFC 3339.
        exp: String,
        /// The caller's now, RFC 3339.
        now: String,
    },
    /// `iat` or `nbf` is more than [`CLOCK_SKEW_SECS`] after `now`.
    #[error("job token: {claim} {at} is in the future (token.not-yet-valid): now {now}, skew allowed {CLOCK_SKEW_SECS} s")]
    NotYetValid {
        /// `iat` or `nbf`.
        claim: &'static str,
        /// Its value, RFC 3339.
        at: String,
        /// The caller's now, RFC 3339.
        now: String,
    },
    /// The lifetime (`exp - iat`) is not within (0, [`MAX_LIFETIME_SECS`]], `iat` is missing,
    /// or `nbf` is not within [`iat`, `exp`).
    #[error("job token: bad lifetime (token.lifetime): {reason}")]
    Lifetime {
        /// Why.
        reason: String,
    },
    /// `aud` is missing or not [`AUDIENCE`].
    #[error("job token: audience {seen:?} refused (token.audience): expected {AUDIENCE:?}")]
    Audience {
        /// The value seen (truncated), or `None` if missing.
        seen: Option<String>,
    },
    /// `iss` is missing or not [`ISSUER`].
    #[error("job token: issuer {seen:?} refused (token.issuer): expected {ISSUER:?}")]
    Issuer {
        /// The value seen (truncated), or `None` if missing.
        seen: Option<String>,
    },
    /// `sub` is missing or not the job id in the `airlock` claim.
    #[error("job token: subject {seen:?} is not the job {job} (token.subject)")]
    Subject {
        /// The value seen (truncated), or `None` if missing.
        seen: Option<String>,
        /// The job id of the claims.
        job: String,
    },
    /// A URL claim has a refused shape. The URL itself is never printed (presigned URLs are
    /// credentials).
    #[error("job token: url {field} refused (token.url): {reason}")]
    Url {
        /// Which claim (`bundle.url`, `drop.artifact`...).
        field: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// The job key is not 64 lowercase hex digits (an ed25519 seed).
    #[error("job token: job_key is not 64 lowercase hex digits (token.job-key)")]
    JobKey,
    /// The model key is empty, longer than [`MAX_MODEL_KEY_BYTES`], or has bytes outside
    /// printable ASCII (`!`..=`~`). The value is never printed.
    #[error("job token: model_key is not 1 to 4096 printable ASCII characters without spaces (token.model-key)")]
    ModelKey,
    /// The `formats` claim has more than 32 entries or an entry that is empty, longer than
    /// 128 bytes, or not printable ASCII without spaces.
    #[error("job token: formats claim is not at most 32 names of 1 to 128 printable ASCII characters (token.formats)")]
    FormatsShape,
    /// The token could not be made.
    #[error("job token: cannot mint (token.mint): {reason}")]
    Mint {
        /// Why.
        reason: String,
    },
}

/// The per-job ed25519 signing seed, 64 lowercase hex digits. No `Debug` or `Display`;
/// zeroized on drop. Serialized as a plain JSON string inside the token only.
#[derive(Clone, PartialEq, Eq)]
pub struct JobKey(Zeroizing<String>);

impl JobKey {
    /// Carries `key`'s seed.
    pub fn from_signing_key(key: &SigningKey) -> JobKey {
        JobKey(key.seed_hex())
    }

    /// The signing key (rule `token.job-key` if malformed).
    pub fn signing_key(&self) -> Result<SigningKey, TokenError> {
        SigningKey::from_seed_hex(&self.0).map_err(|_| TokenError::JobKey)
    }

    /// The public half of the job key.
    pub fn public(&self) -> Result<PublicKey, TokenError> {
        Ok(self.signing_key()?.public())
    }

    fn is_well_formed(&self) -> bool {
        let b = self.0.as_bytes();
        b.len() == 64 && b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
    }
}

impl Serialize for JobKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for JobKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Shape is checked by `verify_token` (rule `token.job-key`), not here, so that the
        // error names the rule and never echoes the value.
        Ok(JobKey(Zeroizing::new(String::deserialize(d)?)))
    }
}

/// Longest scoped model key accepted (LiteLLM virtual keys are about 30 bytes; a JWT from a
/// gateway fits too).
pub const MAX_MODEL_KEY_BYTES: usize = 4096;

/// The job's scoped model key: short-lived and budget-capped, minted by the trusted side for
/// this one job. It rides in the token (a bearer secret already) and nowhere else: never in
/// the bundle, the packet or the ledger, which hold only [`ModelKey::fingerprint`]. No
/// `Debug` or `Display`; zeroized on drop.
#[derive(Clone, PartialEq, Eq)]
pub struct ModelKey(Zeroizing<String>);

impl ModelKey {
    /// Takes a key, checking its shape (rule `token.model-key`).
    pub fn new(value: String) -> Result<ModelKey, TokenError> {
        let key = ModelKey(Zeroizing::new(value));
        if key.is_well_formed() {
            Ok(key)
        } else {
            Err(TokenError::ModelKey)
        }
    }

    /// The key, to hand to the generator.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `sha256:` and the first 16 hex digits of the key's SHA-256: names the key in the ledger
    /// without revealing it.
    pub fn fingerprint(&self) -> String {
        let hex = Sha256Digest::of_bytes(self.0.as_bytes()).to_string();
        format!("sha256:{}", &hex[..16])
    }

    fn is_well_formed(&self) -> bool {
        let b = self.0.as_bytes();
        !b.is_empty()
            && b.len() <= MAX_MODEL_KEY_BYTES
            && b.iter().all(|c| (b'!'..=b'~').contains(c))
    }
}

impl Serialize for ModelKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ModelKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Shape is checked by `verify_token` (rule `token.model-key`), never echoing the value.
        Ok(ModelKey(Zeroizing::new(String::deserialize(d)?)))
    }
}

/// A job token in its text form (`v4.public.…`). A secret: no `Debug` or `Display`; zeroized
/// on drop.
pub struct JobToken(Zeroizing<String>);

impl JobToken {
    /// The token text, to hand to the worker.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// The bundle the worker must fetch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleRef {
    /// Presigned GET URL (or `file://` path) of `bundle.tar.gz`.
    pub url: String,
    /// Its SHA-256; the worker refuses other bytes.
    pub sha256: Sha256Digest,
    /// Its size cap in bytes; the worker stops reading beyond it.
    pub max_bytes: u64,
}

/// Where the worker writes this job's drop objects (presigned PUT URLs or `file://` paths).
/// Extensible (`docs/FORMATS.md`, "Evolution"): a drop target this version does not know is
/// ignored (the worker does not write it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropTargets {
    /// `drop/<job>/checkpoint.tar.gz` (checkpoint slot 0).
    pub checkpoint: String,
    /// `drop/<job>/checkpoint.dsse.json` (checkpoint slot 0).
    pub checkpoint_envelope: String,
    /// `drop/<job>/checkpoint.1.tar.gz` (checkpoint slot 1). OPTIONAL: empty (absent) in
    /// tokens of releases before 0.6.0, whose jobs have one checkpoint slot.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub checkpoint_1: String,
    /// `drop/<job>/checkpoint.1.dsse.json` (checkpoint slot 1). OPTIONAL, absent together
    /// with `checkpoint_1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub checkpoint_1_envelope: String,
    /// `drop/<job>/artifact.tar.gz`.
    pub artifact: String,
    /// `drop/<job>/artifact.dsse.json`.
    pub artifact_envelope: String,
    /// Presigned GET URL of `drop/<job>/artifact.dsse.json` (optional): lets the worker see
    /// that the job is already finished before it starts the generator. Absent for
    /// `file://` stores (the worker looks at the file) and from older submitters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_envelope_get: Option<String>,
}

/// A checkpoint of an earlier job that this job resumes from (fleet re-dispatch): the trusted
/// side gated it, copied its patch into this job's own inbox, and pins its digest here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeRef {
    /// Presigned GET URL (or `file://` path) of `inbox/<job>/resume.diff`.
    pub url: String,
    /// Its SHA-256; the worker refuses other bytes.
    pub sha256: Sha256Digest,
    /// Its size cap in bytes.
    pub max_bytes: u64,
    /// The job whose checkpoint it is.
    pub from_job: JobId,
}

/// The custom `airlock` claim of a job token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobClaims {
    /// The job.
    pub job: JobId,
    /// The bundle to fetch.
    pub bundle: BundleRef,
    /// Presigned GET URL (or `file://` path) of `bundle.dsse.json`.
    pub bundle_envelope_url: String,
    /// The drop objects to write.
    pub drop: DropTargets,
    /// The per-job signing key.
    pub job_key: JobKey,
    /// The job's limits.
    pub limits: JobLimits,
    /// The job's scoped model key, when the trusted config mints one; the request names the
    /// variable the worker puts it in. Absent from tokens without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_key: Option<ModelKey>,
    /// The versions of the worker's documents the trusted side reads (packet tags, artifact
    /// predicate types): see [`crate::format::negotiate`]. OPTIONAL: absent from tokens of
    /// release 0.6.0 and earlier, meaning "0.6.0's readers".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formats: Option<Vec<String>>,
    /// The checkpoint this job resumes from. OPTIONAL: absent for a fresh job; a worker
    /// that does not know it refuses the token (`format.unknown-member`), so the fleet sends
    /// such a job only to workers whose heartbeat reads `airlock.token.resume/v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<ResumeRef>,
}

impl std::fmt::Debug for JobClaims {
    /// URLs and the job key are secrets: only the job id, digest and limits are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobClaims")
            .field("job", &self.job)
            .field("bundle_sha256", &self.bundle.sha256)
            .field("bundle_max_bytes", &self.bundle.max_bytes)
            .field("urls", &"<redacted>")
            .field("job_key", &"<redacted>")
            .field("limits", &self.limits)
            .field(
                "model_key",
                &self.model_key.as_ref().map(ModelKey::fingerprint),
            )
            .field("formats", &self.formats)
            .finish()
    }
}

impl JobClaims {
    /// The URL claims with their names, for checks.
    fn urls(&self) -> [(&'static str, &str); 8] {
        [
            ("bundle.url", &self.bundle.url),
            ("bundle_envelope_url", &self.bundle_envelope_url),
            ("drop.checkpoint", &self.drop.checkpoint),
            ("drop.checkpoint_envelope", &self.drop.checkpoint_envelope),
            ("drop.checkpoint_1", &self.drop.checkpoint_1),
            (
                "drop.checkpoint_1_envelope",
                &self.drop.checkpoint_1_envelope,
            ),
            ("drop.artifact", &self.drop.artifact),
            ("drop.artifact_envelope", &self.drop.artifact_envelope),
        ]
    }

    /// Checks every URL (rule `token.url`), the job key shape (rule `token.job-key`) and the
    /// `formats` claim's shape (rule `token.formats`). The second checkpoint slot is OPTIONAL:
    /// both of its URLs are set, or neither.
    fn check(&self) -> Result<(), TokenError> {
        let one_slot =
            self.drop.checkpoint_1.is_empty() && self.drop.checkpoint_1_envelope.is_empty();
        for (field, url) in self.urls() {
            if one_slot && field.starts_with("drop.checkpoint_1") {
                continue;
            }
            check_url(field, url)?;
        }
        if let Some(r) = &self.resume {
            check_url("resume.url", &r.url)?;
        }
        if let Some(formats) = &self.formats {
            if !crate::format::formats_claim_well_formed(formats) {
                return Err(TokenError::FormatsShape);
            }
        }
        if !self.job_key.is_well_formed() {
            return Err(TokenError::JobKey);
        }
        if self.model_key.as_ref().is_some_and(|k| !k.is_well_formed()) {
            return Err(TokenError::ModelKey);
        }
        Ok(())
    }
}

/// The token payload as we write it.
#[derive(Serialize)]
struct PayloadOut<'a> {
    iss: &'a str,
    aud: &'a str,
    sub: &'a str,
    iat: String,
    nbf: String,
    exp: String,
    airlock: &'a JobClaims,
}

/// The token payload as we read it: registered claims optional so that each missing one gets
/// its own rule, no other members.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PayloadIn {
    iss: Option<String>,
    aud: Option<String>,
    sub: Option<String>,
    iat: Option<String>,
    nbf: Option<String>,
    exp: Option<String>,
    airlock: JobClaims,
}

/// Checks one URL claim (rule `token.url`). Allowed: `https://HOST[:PORT]/…`,
/// `http://LOOPBACK[:PORT]/…` (LOOPBACK = `localhost`, `127.x.x.x` or `[::1]`) and
/// `file:///ABSOLUTE/PATH`. Refused: other schemes, uppercase schemes, userinfo (`@` in the
/// authority), backslashes, whitespace and control characters, fragments, empty hosts,
/// `file://` with a host, query or `..`/`.` segments, and URLs over [`MAX_URL_BYTES`].
pub fn check_url(field: &'static str, url: &str) -> Result<(), TokenError> {
    let refuse = |reason| Err(TokenError::Url { field, reason });
    if url.len() > MAX_URL_BYTES {
        return refuse("longer than 8 KiB");
    }
    if url.bytes().any(|c| c <= b' ' || c == 0x7f) {
        return refuse("contains whitespace or control characters");
    }
    if url.contains('\\') {
        return refuse("contains a backslash");
    }
    if url.contains('#') {
        return refuse("contains a fragment");
    }
    if let Some(path) = url.strip_prefix("file://") {
        if !path.starts_with('/') {
            return refuse("file URL must be file:///absolute/path (no host)");
        }
        if path.contains('?') {
            return refuse("file URL has a query");
        }
        if path.split('/').any(|seg| seg == ".." || seg == ".") {
            return refuse("file URL has a . or .. segment");
        }
        if path == "/" || path.ends_with('/') {
            return refuse("file URL names a directory");
        }
        return Ok(());
    }
    let (rest, https) = if let Some(rest) = url.strip_prefix("https://") {
        (rest, true)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (rest, false)
    } else {
        return refuse("scheme must be https://, http:// (loopback only) or file://");
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    if authority.contains('@') {
        return refuse("contains userinfo (user@host)");
    }
    let (host, port) = split_host_port(authority);
    if let Some(port) = port {
        let ok = !port.is_empty()
            && port.len() <= 5
            && port.bytes().all(|c| c.is_ascii_digit())
            && port.parse::<u32>().is_ok_and(|p| (1..=65535).contains(&p));
        if !ok {
            return refuse("port is not a number in 1..=65535");
        }
    }
    if host.is_empty() {
        return refuse("empty host");
    }
    let host_ok = if host.starts_with('[') {
        host.len() > 2
            && host.ends_with(']')
            && host[1..host.len() - 1]
                .bytes()
                .all(|c| c.is_ascii_hexdigit() || c == b':' || c == b'.')
    } else {
        host.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
    };
    if !host_ok {
        return refuse("host has characters outside [A-Za-z0-9.-] or a malformed [IPv6]");
    }
    if !https && !is_loopback(host) {
        return refuse("plain http is allowed only to localhost, 127.0.0.0/8 or [::1]");
    }
    Ok(())
}

/// Splits `host[:port]` / `[v6][:port]`.
fn split_host_port(authority: &str) -> (&str, Option<&str>) {
    if authority.starts_with('[') {
        match authority.find(']') {
            Some(i) => {
                let (host, rest) = authority.split_at(i + 1);
                match rest.strip_prefix(':') {
                    Some(port) => (host, Some(port)),
                    // Anything after `]` but a port makes the host malformed.
                    None if rest.is_empty() => (host, None),
                    None => (authority, None),
                }
            }
            None => (authority, None),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    }
}

fn is_loopback(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") || host == "[::1]" {
        return true;
    }
    let parts: Vec<&str> = host.split('.').collect();
    parts.len() == 4
        && parts[0] == "127"
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|c| c.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
                && (p.len() == 1 || !p.starts_with('0'))
        })
}

/// Days from 1970-01-01 to the civil date (Howard Hinnant's `days_from_civil`), for y >= 1970.
fn days_from_civil(y: u64, m: u64, d: u64) -> u64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses exactly `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC, no fraction, no offset, no leap
/// second, year 1970..=9999) to unix seconds. The inverse of [`rfc3339_utc`].
pub fn parse_rfc3339_utc(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u64> {
        let digits = &b[r];
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(
            digits
                .iter()
                .fold(0u64, |acc, c| acc * 10 + u64::from(c - b'0')),
        )
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = match mo {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if y < 1970 || d == 0 || d > month_days || h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec)
}

/// Mints a job token for `claims`, valid from `issued_at_unix` for `ttl_secs` seconds, signed
/// by `trusted`. Refuses to mint what [`verify_token`] would refuse: a ttl of 0 or over
/// [`MAX_LIFETIME_SECS`] (`token.lifetime`), bad URLs (`token.url`), a malformed job key
/// (`token.job-key`).
pub fn mint_token(
    trusted: &SigningKey,
    claims: &JobClaims,
    issued_at_unix: u64,
    ttl_secs: u64,
) -> Result<JobToken, TokenError> {
    if ttl_secs == 0 || ttl_secs > MAX_LIFETIME_SECS {
        return Err(TokenError::Lifetime {
            reason: format!("ttl {ttl_secs} s is not within 1..={MAX_LIFETIME_SECS} s"),
        });
    }
    let exp = issued_at_unix
        .checked_add(ttl_secs)
        .filter(|e| parse_rfc3339_utc(&rfc3339_utc(*e)) == Some(*e))
        .ok_or_else(|| TokenError::Lifetime {
            reason: "expiry not representable as YYYY-MM-DDTHH:MM:SSZ".into(),
        })?;
    claims.check()?;
    let payload = PayloadOut {
        iss: ISSUER,
        aud: AUDIENCE,
        sub: claims.job.as_str(),
        iat: rfc3339_utc(issued_at_unix),
        nbf: rfc3339_utc(issued_at_unix),
        exp: rfc3339_utc(exp),
        airlock: claims,
    };
    let bytes = Zeroizing::new(serde_json::to_vec(&payload).map_err(|e| TokenError::Mint {
        reason: e.to_string(),
    })?);
    sign_payload(trusted, &bytes)
}

/// Signs raw payload bytes as a v4.public token with no footer and no implicit assertion.
fn sign_payload(trusted: &SigningKey, payload: &[u8]) -> Result<JobToken, TokenError> {
    let kp = trusted.keypair_bytes();
    let sk = AsymmetricSecretKey::<V4>::from(&kp[..]).map_err(|e| TokenError::Mint {
        reason: e.to_string(),
    })?;
    let token = PublicToken::sign(&sk, payload, None, None).map_err(|e| TokenError::Mint {
        reason: e.to_string(),
    })?;
    let token = JobToken(Zeroizing::new(token));
    if token.0.len() > MAX_TOKEN_BYTES {
        return Err(TokenError::TooLarge {
            limit: MAX_TOKEN_BYTES,
            seen: token.0.len(),
        });
    }
    Ok(token)
}

/// Verifies a job token against the pinned trusted key at `now_unix`.
///
/// In order: size (`token.too-large`, before decoding); header exactly `v4.public.`
/// (`token.header`); no footer (`token.footer`); body decodes (`token.format`); signature
/// (`token.signature`); payload JSON with only the expected members (`token.claims`); `exp`
/// present (`token.no-expiry`); `iss` (`token.issuer`); `aud` (`token.audience`); `sub` equals
/// `airlock.job` (`token.subject`); times well formed (`token.time`); `now < exp`
/// (`token.expired`); `iat`, `nbf` at most [`CLOCK_SKEW_SECS`] after now
/// (`token.not-yet-valid`); `iat` present, `0 < exp - iat <= 24 h`, `iat <= nbf < exp`
/// (`token.lifetime`); URLs (`token.url`); job key (`token.job-key`); model key, if any
/// (`token.model-key`).
///
/// The token must be exactly the minted text: callers trim a trailing newline from a file.
pub fn verify_token(
    token: &str,
    trusted: &PublicKey,
    now_unix: u64,
) -> Result<Verified<JobClaims>, TokenError> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(TokenError::TooLarge {
            limit: MAX_TOKEN_BYTES,
            seen: token.len(),
        });
    }
    if !token.starts_with(HEADER) {
        let reason = if token.starts_with("v4.local.") {
            "found a v4.local token"
        } else if token.starts_with("v4.") {
            "found another v4 purpose"
        } else if token.starts_with('v') && token.contains(".public.") {
            "found another PASETO version"
        } else {
            "not a PASETO token"
        };
        return Err(TokenError::Header { reason });
    }
    match token.split('.').count() {
        3 => {}
        4 => return Err(TokenError::Footer),
        _ => {
            return Err(TokenError::Format {
                reason: "expected exactly three dot-separated parts".into(),
            })
        }
    }
    let untrusted =
        UntrustedToken::<Public, V4>::try_from(token).map_err(|e| TokenError::Format {
            reason: e.to_string(),
        })?;
    let signature_error = || TokenError::Signature {
        key_id: trusted.key_id(),
    };
    let pk = AsymmetricPublicKey::<V4>::from(&trusted.raw()).map_err(|_| signature_error())?;
    let checked =
        PublicToken::verify(&pk, &untrusted, None, None).map_err(|_| signature_error())?;
    if !checked.footer().is_empty() {
        return Err(TokenError::Footer);
    }

    // Signed by the trusted key from here on; validate every claim ourselves.
    let payload: PayloadIn = serde_json::from_str(checked.payload()).map_err(|e| {
        match crate::format::from_serde("job token", &e) {
            crate::format::FormatError::UnknownMember { member, .. } => {
                TokenError::UnknownMember { member }
            }
            _ => TokenError::Claims {
                reason: e.to_string(),
            },
        }
    })?;
    let Some(exp_text) = payload.exp.as_deref() else {
        return Err(TokenError::NoExpiry);
    };
    if payload.iss.as_deref() != Some(ISSUER) {
        return Err(TokenError::Issuer {
            seen: payload.iss.as_deref().map(|s| text::terminal(s, 80)),
        });
    }
    if payload.aud.as_deref() != Some(AUDIENCE) {
        return Err(TokenError::Audience {
            seen: payload.aud.as_deref().map(|s| text::terminal(s, 80)),
        });
    }
    let claims = payload.airlock;
    if payload.sub.as_deref() != Some(claims.job.as_str()) {
        return Err(TokenError::Subject {
            seen: payload.sub.as_deref().map(|s| text::terminal(s, 80)),
            job: claims.job.to_string(),
        });
    }
    let time = |claim: &'static str, text: Option<&str>| -> Result<Option<u64>, TokenError> {
        text.map(|t| parse_rfc3339_utc(t).ok_or(TokenError::Time { claim }))
            .transpose()
    };
    let exp = time("exp", Some(exp_text))?.ok_or(TokenError::NoExpiry)?;
    let iat = time("iat", payload.iat.as_deref())?;
    let nbf = time("nbf", payload.nbf.as_deref())?;
    if now_unix >= exp {
        return Err(TokenError::Expired {
            exp: rfc3339_utc(exp),
            now: rfc3339_utc(now_unix),
        });
    }
    let horizon = now_unix.saturating_add(CLOCK_SKEW_SECS);
    for (claim, at) in [("iat", iat), ("nbf", nbf)] {
        if let Some(at) = at.filter(|at| *at > horizon) {
            return Err(TokenError::NotYetValid {
                claim,
                at: rfc3339_utc(at),
                now: rfc3339_utc(now_unix),
            });
        }
    }
    let Some(iat) = iat else {
        return Err(TokenError::Lifetime {
            reason: "no iat claim, lifetime unknown".into(),
        });
    };
    if exp <= iat || exp - iat > MAX_LIFETIME_SECS {
        return Err(TokenError::Lifetime {
            reason: format!(
                "exp - iat = {} s, allowed 1..={MAX_LIFETIME_SECS} s",
                exp as i128 - iat as i128
            ),
        });
    }
    if let Some(nbf) = nbf {
        if nbf < iat || nbf >= exp {
            return Err(TokenError::Lifetime {
                reason: "nbf is not within [iat, exp)".into(),
            });
        }
    }
    claims.check()?;
    Ok(Verified::new(claims))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const T0: u64 = 1_795_940_647; // 2026-11-29T08:24:07Z
    const TTL: u64 = 20 * 60;

    fn claims() -> JobClaims {
        let job = JobId::new(T0, [0x3f; crate::jobid::RANDOM_BYTES]);
        let base = format!("https://store.example.com/bucket/drop/{job}");
        JobClaims {
            bundle: BundleRef {
                url: format!("https://store.example.com/bucket/inbox/{job}/bundle.tar.gz?X-Amz-Signature=abc"),
                sha256: Sha256Digest::of_bytes(b"bundle"),
                max_bytes: 1 << 20,
            },
            bundle_envelope_url: format!("https://store.example.com/bucket/inbox/{job}/bundle.dsse.json"),
            drop: DropTargets {
                checkpoint: format!("{base}/checkpoint.tar.gz"),
                checkpoint_envelope: format!("{base}/checkpoint.dsse.json"),
                checkpoint_1: format!("{base}/checkpoint.1.tar.gz"),
                checkpoint_1_envelope: format!("{base}/checkpoint.1.dsse.json"),
                artifact: format!("{base}/artifact.tar.gz"),
                artifact_envelope: format!("{base}/artifact.dsse.json"),
                artifact_envelope_get: None,
            },
            job_key: JobKey::from_signing_key(&SigningKey::generate()),
            limits: JobLimits::default(),
            model_key: None,
            formats: None,
            resume: None,
            job,
        }
    }

    fn payload_value(c: &JobClaims, iat: u64, exp: u64) -> Value {
        json!({
            "iss": ISSUER, "aud": AUDIENCE, "sub": c.job.as_str(),
            "iat": rfc3339_utc(iat), "nbf": rfc3339_utc(iat), "exp": rfc3339_utc(exp),
            "airlock": serde_json::to_value(c).unwrap(),
        })
    }

    /// Signs a hand-built payload with the trusted key, bypassing `mint_token`'s checks, so
    /// that the verifier's own validation is what refuses it.
    fn sign_value(key: &SigningKey, v: &Value) -> String {
        sign_payload(key, &serde_json::to_vec(v).unwrap())
            .unwrap()
            .expose()
            .to_owned()
    }

    fn err_of(r: Result<Verified<JobClaims>, TokenError>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn round_trip_mint_verify() {
        let trusted = SigningKey::generate();
        let c = claims();
        let token = mint_token(&trusted, &c, T0, TTL).unwrap();
        assert!(token.expose().starts_with("v4.public."));
        let v = verify_token(token.expose(), &trusted.public(), T0 + 1).unwrap();
        assert_eq!(*v, c);
        // The job key survives and signs.
        let jk = v.job_key.signing_key().unwrap();
        assert_eq!(jk.public(), c.job_key.public().unwrap());
        // Debug never shows secrets.
        let dbg = format!("{v:?}");
        assert!(!dbg.contains("X-Amz-Signature") && !dbg.contains(c.job_key.0.as_str()));
        // Valid right up to one second before exp, and with `iat` up to the skew ahead.
        assert!(verify_token(token.expose(), &trusted.public(), T0 + TTL - 1).is_ok());
        assert!(verify_token(token.expose(), &trusted.public(), T0 - CLOCK_SKEW_SECS).is_ok());
    }

    #[test]
    fn model_key_round_trips_never_shows_and_is_shape_checked() {
        let trusted = SigningKey::generate();
        let secret = "sk-scoped-0123456789abcdef";
        let c = JobClaims {
            model_key: Some(ModelKey::new(secret.into()).unwrap()),
            ..claims()
        };
        let token = mint_token(&trusted, &c, T0, TTL).unwrap();
        let v = verify_token(token.expose(), &trusted.public(), T0 + 1).unwrap();
        assert_eq!(v.model_key.as_ref().map(ModelKey::expose), Some(secret));
        let dbg = format!("{v:?}");
        assert!(!dbg.contains(secret), "{dbg}");
        let fp = c.model_key.as_ref().unwrap().fingerprint();
        assert!(fp.starts_with("sha256:") && fp.len() == 23, "{fp}");
        assert!(dbg.contains(&fp), "{dbg}");
        // A token without a key has no `model_key` member at all (older workers read it).
        let plain = mint_token(&trusted, &claims(), T0, TTL).unwrap();
        let v = verify_token(plain.expose(), &trusted.public(), T0 + 1).unwrap();
        assert!(v.model_key.is_none());
        for bad in [
            "",
            "has space",
            "tab\tkey",
            "é",
            &"k".repeat(MAX_MODEL_KEY_BYTES + 1),
        ] {
            assert!(
                matches!(ModelKey::new(bad.into()), Err(TokenError::ModelKey)),
                "{bad:?}"
            );
            let mut p = payload_value(&claims(), T0, T0 + TTL);
            p["airlock"]["model_key"] = json!(bad);
            let e = err_of(verify_token(
                &sign_value(&trusted, &p),
                &trusted.public(),
                T0 + 1,
            ));
            assert!(
                e.contains("token.model-key") && (bad.is_empty() || !e.contains(bad)),
                "{e}"
            );
        }
    }

    #[test]
    fn payload_shape_is_exact() {
        let trusted = SigningKey::generate();
        let c = claims();
        let token = mint_token(&trusted, &c, T0, TTL).unwrap();
        let untrusted = UntrustedToken::<Public, V4>::try_from(token.expose()).unwrap();
        let v: Value = serde_json::from_slice(untrusted.untrusted_payload()).unwrap();
        assert_eq!(v, payload_value(&c, T0, T0 + TTL));
        assert_eq!(v["exp"], "2026-11-29T08:44:07Z");
    }

    #[test]
    fn rejects_expired_token_without_leeway() {
        let trusted = SigningKey::generate();
        let token = mint_token(&trusted, &claims(), T0, TTL).unwrap();
        for now in [T0 + TTL, T0 + TTL + 1, T0 + 10 * TTL] {
            let msg = err_of(verify_token(token.expose(), &trusted.public(), now));
            assert!(msg.contains("token.expired"), "{msg}");
        }
    }

    #[test]
    fn rejects_token_not_yet_valid() {
        let trusted = SigningKey::generate();
        let token = mint_token(&trusted, &claims(), T0, TTL).unwrap();
        let msg = err_of(verify_token(
            token.expose(),
            &trusted.public(),
            T0 - CLOCK_SKEW_SECS - 1,
        ));
        assert!(msg.contains("token.not-yet-valid"), "{msg}");
        // nbf alone in the future (iat now).
        let c = claims();
        let mut v = payload_value(&c, T0, T0 + TTL);
        v["nbf"] = json!(rfc3339_utc(T0 + 600));
        let msg = err_of(verify_token(
            &sign_value(&trusted, &v),
            &trusted.public(),
            T0,
        ));
        assert!(msg.contains("token.not-yet-valid"), "{msg}");
    }

    #[test]
    fn rejects_token_signed_by_wrong_key() {
        let trusted = SigningKey::generate();
        let attacker = SigningKey::generate();
        let token = mint_token(&attacker, &claims(), T0, TTL).unwrap();
        let msg = err_of(verify_token(token.expose(), &trusted.public(), T0));
        assert!(msg.contains("token.signature"), "{msg}");
    }

    #[test]
    fn rejects_any_flipped_byte_in_token_body() {
        let trusted = SigningKey::generate();
        let token = mint_token(&trusted, &claims(), T0, TTL).unwrap();
        let body = token.expose().strip_prefix(HEADER).unwrap();
        let raw = base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, body)
            .unwrap();
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 0x01;
            let t = format!(
                "{HEADER}{}",
                base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, &bad)
            );
            let msg = err_of(verify_token(&t, &trusted.public(), T0));
            assert!(msg.contains("token.signature"), "byte {i}: {msg}");
        }
    }

    #[test]
    fn rejects_missing_expiry_signed_by_trusted_key() {
        let trusted = SigningKey::generate();
        let mut v = payload_value(&claims(), T0, T0 + TTL);
        v.as_object_mut().unwrap().remove("exp");
        let msg = err_of(verify_token(
            &sign_value(&trusted, &v),
            &trusted.public(),
            T0,
        ));
        assert!(msg.contains("token.no-expiry"), "{msg}");
        v["exp"] = Value::Null;
        let msg = err_of(verify_token(
            &sign_value(&trusted, &v),
            &trusted.public(),
            T0,
        ));
        assert!(msg.contains("token.no-expiry"), "{msg}");
    }

    #[test]
    fn rejects_wrong_audience_signed_by_trusted_key() {
        let trusted = SigningKey::generate();
        for aud in [
            json!("airlock-trusted"),
            json!(["airlock-worker"]),
            Value::Null,
        ] {
            let mut v = payload_value(&claims(), T0, T0 + TTL);
            v["aud"] = aud;
            let msg = err_of(verify_token(
                &sign_value(&trusted, &v),
                &trusted.public(),
                T0,
            ));
            assert!(
                msg.contains("token.audience") || msg.contains("token.claims"),
                "{msg}"
            );
        }
        let mut v = payload_value(&claims(), T0, T0 + TTL);
        v["aud"] = json!("airlock-trusted");
        let msg = err_of(verify_token(
            &sign_value(&trusted, &v),
            &trusted.public(),
            T0,
        ));
        assert!(msg.contains("token.audience"), "{msg}");
        v.as_object_mut().unwrap().remove("aud");
        let msg = err_of(verify_token(
            &sign_value(&trusted, &v),
            &trusted.public(),
            T0,
        ));
        assert!(msg.contains("token.audience"), "{msg}");
    }

    #[test]
    fn rejects_wrong_issuer_and_subject() {
        let trusted = SigningKey::generate();
        let mut v = payload_value(&claims(), T0, T0 + TTL);
        v["iss"] = json!("someone-else");
        let msg = err_of(verify_token(
            &sign_value(&trusted, &v),
            &trusted.public(),
            T0,
        ));
        assert!(msg.contains("token.issuer"), "{msg}");
        let mut v = payload_value(&claims(), T0, T0 + TTL);
        v["sub"] = json!(JobId::new(T0, [0; crate::jobid::RANDOM_BYTES]).as_str());
        let msg = err_of(verify_token(
            &sign_value(&trusted, &v),
            &trusted.public(),
            T0,
        ));
        assert!(msg.contains("token.subject"), "{msg}");
    }

    #[test]
    fn rejects_lifetime_over_a_day_and_refuses_to_mint_it() {
        let trusted = SigningKey::generate();
        let c = claims();
        let v = payload_value(&c, T0, T0 + MAX_LIFETIME_SECS + 1);
        let msg = err_of(verify_token(
            &sign_value(&trusted, &v),
            &trusted.public(),
            T0,
        ));
        assert!(msg.contains("token.lifetime"), "{msg}");
        let v = payload_value(&c, T0, T0 + MAX_LIFETIME_SECS);
        assert!(verify_token(&sign_value(&trusted, &v), &trusted.public(), T0).is_ok());
        let mut v = payload_value(&c, T0, T0 + TTL);
        v.as_object_mut().unwrap().remove("iat");
        let msg = err_of(verify_token(
            &sign_value(&trusted, &v),
            &trusted.public(),
            T0,
        ));
        assert!(msg.contains("token.lifetime"), "{msg}");
        for ttl in [0, MAX_LIFETIME_SECS + 1, u64::MAX] {
            match mint_token(&trusted, &c, T0, ttl) {
                Ok(_) => panic!("minted ttl {ttl}"),
                Err(e) => assert!(e.to_string().contains("token.lifetime"), "{e}"),
            }
        }
    }

    #[test]
    fn rejects_malformed_times() {
        let trusted = SigningKey::generate();
        for bad in [
            "2026-11-29T08:24:07+00:00",
            "2026-11-29T08:24:07.5Z",
            "2026-11-29 08:24:07Z",
            "2026-11-29t08:24:07z",
            "1795940647",
        ] {
            let mut v = payload_value(&claims(), T0, T0 + TTL);
            v["exp"] = json!(bad);
            let msg = err_of(verify_token(
                &sign_value(&trusted, &v),
                &trusted.public(),
                T0,
            ));
            assert!(msg.contains("token.time"), "{bad}: {msg}");
        }
        let mut v = payload_value(&claims(), T0, T0 + TTL);
        v["exp"] = json!(T0 + TTL);
        let msg = err_of(verify_token(
            &sign_value(&trusted, &v),
            &trusted.public(),
            T0,
        ));
        assert!(msg.contains("token.claims"), "{msg}");
    }

    #[test]
    fn rejects_unknown_claims_of_closed_objects_and_footer() {
        let trusted = SigningKey::generate();
        for (at, name) in [
            (None, "jti"),
            (Some("airlock"), "extra"),
            (Some("bundle"), "mirror"),
        ] {
            let mut v = payload_value(&claims(), T0, T0 + TTL);
            let obj = match at {
                None => &mut v,
                Some("airlock") => &mut v["airlock"],
                Some(o) => &mut v["airlock"][o],
            };
            obj[name] = json!("x");
            let msg = err_of(verify_token(
                &sign_value(&trusted, &v),
                &trusted.public(),
                T0,
            ));
            assert!(msg.contains("(format.unknown-member)"), "{name}: {msg}");
            assert!(msg.contains(name), "{name}: {msg}");
        }

        let c = claims();
        let payload = serde_json::to_vec(&payload_value(&c, T0, T0 + TTL)).unwrap();
        let kp = trusted.keypair_bytes();
        let sk = AsymmetricSecretKey::<V4>::from(&kp[..]).unwrap();
        let with_footer = PublicToken::sign(&sk, &payload, Some(b"kid"), None).unwrap();
        let msg = err_of(verify_token(&with_footer, &trusted.public(), T0));
        assert!(msg.contains("token.footer"), "{msg}");
        // An implicit assertion we do not use: the signature cannot match.
        let with_ia = PublicToken::sign(&sk, &payload, None, Some(b"x")).unwrap();
        let msg = err_of(verify_token(&with_ia, &trusted.public(), T0));
        assert!(msg.contains("token.signature"), "{msg}");
    }

    #[test]
    fn an_unknown_drop_target_is_ignored() {
        let trusted = SigningKey::generate();
        let c = claims();
        let mut v = payload_value(&c, T0, T0 + TTL);
        v["airlock"]["drop"]["checkpoint_2"] = json!("https://example.invalid/c2");
        let got = verify_token(&sign_value(&trusted, &v), &trusted.public(), T0).unwrap();
        assert_eq!(got.into_inner(), c);
    }

    #[test]
    fn a_token_from_before_the_second_checkpoint_slot_verifies_with_one_slot() {
        let trusted = SigningKey::generate();
        let mut v = payload_value(&claims(), T0, T0 + TTL);
        let drop = v["airlock"]["drop"].as_object_mut().unwrap();
        drop.remove("checkpoint_1");
        drop.remove("checkpoint_1_envelope");
        let got = verify_token(&sign_value(&trusted, &v), &trusted.public(), T0)
            .unwrap()
            .into_inner();
        assert!(got.drop.checkpoint_1.is_empty() && got.drop.checkpoint_1_envelope.is_empty());
        // One of the pair without the other is not an older token: its URL is checked.
        let mut v = payload_value(&claims(), T0, T0 + TTL);
        v["airlock"]["drop"]
            .as_object_mut()
            .unwrap()
            .remove("checkpoint_1");
        let msg = err_of(verify_token(
            &sign_value(&trusted, &v),
            &trusted.public(),
            T0,
        ));
        assert!(
            msg.contains("token.url") && msg.contains("drop.checkpoint_1"),
            "{msg}"
        );
    }

    #[test]
    fn the_formats_claim_round_trips_is_absent_when_unset_and_is_shape_checked() {
        let trusted = SigningKey::generate();
        let token = mint_token(&trusted, &claims(), T0, TTL).unwrap();
        let v = verify_token(token.expose(), &trusted.public(), T0).unwrap();
        assert_eq!(v.formats, None);
        let c = JobClaims {
            formats: Some(
                crate::format::READS
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect(),
            ),
            ..claims()
        };
        let token = mint_token(&trusted, &c, T0, TTL).unwrap();
        let v = verify_token(token.expose(), &trusted.public(), T0).unwrap();
        assert_eq!(v.into_inner(), c);
        let mut v = payload_value(&claims(), T0, T0 + TTL);
        v["airlock"]["formats"] = json!(["airlock.packet/v1", "a b"]);
        let msg = err_of(verify_token(
            &sign_value(&trusted, &v),
            &trusted.public(),
            T0,
        ));
        assert!(msg.contains("(token.formats)"), "{msg}");
    }

    #[test]
    fn rejects_wrong_header_and_garbage() {
        let trusted = SigningKey::generate();
        let token = mint_token(&trusted, &claims(), T0, TTL).unwrap();
        let body = token.expose().strip_prefix(HEADER).unwrap();
        for (t, rule) in [
            (format!("v4.local.{body}"), "token.header"),
            (format!("v3.public.{body}"), "token.header"),
            (format!("V4.public.{body}"), "token.header"),
            (format!("v4.public.{body}\n"), "token.format"),
            ("v4.public.".to_string(), "token.format"),
            ("v4.public.!!!".to_string(), "token.format"),
            ("v4.public.AAAA".to_string(), "token.format"),
            (String::new(), "token.header"),
        ] {
            let msg = err_of(verify_token(&t, &trusted.public(), T0));
            assert!(msg.contains(rule), "{t:?}: {msg}");
        }
    }

    #[test]
    fn rejects_oversize_token_before_decoding() {
        let trusted = SigningKey::generate();
        let big = format!("v4.public.{}", "A".repeat(MAX_TOKEN_BYTES));
        let msg = err_of(verify_token(&big, &trusted.public(), T0));
        assert!(msg.contains("token.too-large"), "{msg}");
        let junk = "\u{0}".repeat(MAX_TOKEN_BYTES + 1);
        let msg = err_of(verify_token(&junk, &trusted.public(), T0));
        assert!(msg.contains("token.too-large"), "{msg}");
    }

    #[test]
    fn rejects_bad_urls_without_printing_them() {
        let trusted = SigningKey::generate();
        let bad_urls = [
            "ftp://store.example.com/x",
            "HTTPS://store.example.com/x",
            "http://store.example.com/x",
            "http://10.0.0.1/x",
            "http://169.254.169.254/latest/meta-data",
            "http://127.0.0.1.evil.com/x",
            "http://localhost.evil.com/x",
            "https://user:secret@store.example.com/x",
            "https://store.example.com@evil.com/x",
            "http://evil.com\\@127.0.0.1/x",
            "https:///x",
            "https://store.example.com:99999/x",
            "https://store.example.com:/x",
            "https://store example.com/x",
            "https://store.example.com/x#frag",
            "https://[::1/x",
            "file://host/etc/passwd",
            "file:relative/path",
            "file:///tmp/job/../../etc/passwd",
            "file:///tmp/dir/",
            "javascript:alert(1)",
            "",
        ];
        for bad in bad_urls {
            let mut c = claims();
            c.drop.artifact = bad.to_string();
            let v = payload_value(&c, T0, T0 + TTL);
            let msg = err_of(verify_token(
                &sign_value(&trusted, &v),
                &trusted.public(),
                T0,
            ));
            assert!(
                msg.contains("token.url") && msg.contains("drop.artifact"),
                "{bad}: {msg}"
            );
            if !bad.is_empty() {
                assert!(!msg.contains(bad), "{msg}");
            }
            // And mint refuses to make it.
            match mint_token(&trusted, &c, T0, TTL) {
                Ok(_) => panic!("minted {bad}"),
                Err(e) => assert!(e.to_string().contains("token.url"), "{e}"),
            }
        }
        for good in [
            "https://store.example.com/bucket/x?X-Amz-Signature=abc&b=c",
            "https://store.example.com:9000/x",
            "https://[2001:db8::1]:443/x",
            "http://127.0.0.1:9000/bucket/x",
            "http://127.1.2.3/x",
            "http://localhost:8080/x",
            "http://[::1]:9000/x",
            "file:///tmp/airlock/drop/job/artifact.tar.gz",
        ] {
            let mut c = claims();
            c.bundle.url = good.to_string();
            let token = mint_token(&trusted, &c, T0, TTL).unwrap();
            assert!(
                verify_token(token.expose(), &trusted.public(), T0).is_ok(),
                "{good}"
            );
        }
    }

    #[test]
    fn rejects_malformed_job_key() {
        let trusted = SigningKey::generate();
        let good = claims().job_key.0.to_string();
        for bad in [
            String::new(),
            good.to_uppercase(),
            good[..63].to_string(),
            format!("{good}00"),
        ] {
            let mut c = claims();
            c.job_key = JobKey(Zeroizing::new(bad.clone()));
            let v = payload_value(&c, T0, T0 + TTL);
            let msg = err_of(verify_token(
                &sign_value(&trusted, &v),
                &trusted.public(),
                T0,
            ));
            assert!(msg.contains("token.job-key"), "{msg}");
            assert!(bad.is_empty() || !msg.contains(&bad), "{msg}");
            assert!(mint_token(&trusted, &c, T0, TTL).is_err());
        }
    }

    #[test]
    fn rfc3339_parser_is_exact_inverse() {
        for t in [
            0,
            59,
            86_399,
            86_400,
            951_782_400, // 2000-02-29
            T0,
            4_107_542_399,   // 2100-02-28T23:59:59Z
            253_402_300_799, // 9999-12-31T23:59:59Z
        ] {
            assert_eq!(parse_rfc3339_utc(&rfc3339_utc(t)), Some(t), "{t}");
        }
        for t in (0..4_000_000_000u64).step_by(7_777_777) {
            assert_eq!(parse_rfc3339_utc(&rfc3339_utc(t)), Some(t), "{t}");
        }
        for bad in [
            "2026-02-29T00:00:00Z",
            "2100-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z",
            "2026-01-00T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T00:60:00Z",
            "2026-01-01T00:00:60Z",
            "1969-12-31T23:59:59Z",
            "2026-01-01T00:00:00",
            "+026-01-01T00:00:00Z",
            "2026-1-01T00:00:00Z",
            "２026-01-01T00:00:00Z",
        ] {
            assert_eq!(parse_rfc3339_utc(bad), None, "{bad}");
        }
    }
}
