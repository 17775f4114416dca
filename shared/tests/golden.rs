//! Golden documents of each release through today's readers (docs/FORMATS.md, "Evolution"):
//! every file `fixtures/golden/expect.tsv` lists is accepted, or refused with the rule id the
//! table names. The documents are written by `fixtures/golden/generate.py` (its header says
//! where each release's documents come from); this test never writes them.
//!
//! Guards against: a change that makes an older release's documents unreadable inside the
//! reading window (a REQUIRED member added under an unchanged tag, as 0.6.0 did), an extensible
//! object that starts refusing unknown members, and a closed one that starts ignoring them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::path::{Path, PathBuf};

use airlock_core::format::{
    self, ArtifactPredicate, BundlePredicate, JobRecord, Manifest, Packet, Request,
    MAX_ENVELOPE_BYTES,
};
use airlock_core::keys::SigningKey;
use airlock_core::token::{self, JobClaims};
use pasetors::keys::AsymmetricSecretKey;
use pasetors::version4::{PublicToken, V4};

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden")
}

/// The rule id of a refusal, or `accept`.
fn read(reader: &str, bytes: &[u8]) -> String {
    let rule = |r: Result<(), format::FormatError>| match r {
        Ok(()) => "accept".to_owned(),
        Err(e) => e.rule().to_owned(),
    };
    match reader {
        "packet" => rule(Packet::from_json(bytes).map(drop)),
        "request" => rule(Request::from_json(bytes).map(drop)),
        "manifest" => rule(Manifest::from_json(bytes).map(drop)),
        "job-record" => rule(
            format::parse_json::<JobRecord>(bytes, MAX_ENVELOPE_BYTES, "job record")
                .and_then(|r| r.check()),
        ),
        "artifact-predicate" => rule(
            format::parse_json::<ArtifactPredicate>(bytes, MAX_ENVELOPE_BYTES, "predicate")
                .map(drop),
        ),
        "bundle-predicate" => rule(
            format::parse_json::<BundlePredicate>(bytes, MAX_ENVELOPE_BYTES, "predicate").map(drop),
        ),
        "token" => match verify_payload(bytes) {
            Ok(_) => "accept".to_owned(),
            Err(e) => rule_in(&e.to_string()),
        },
        other => panic!("expect.tsv names an unknown reader {other:?}"),
    }
}

/// The rule id in a message: the last `(family.id)`.
fn rule_in(msg: &str) -> String {
    msg.rsplit('(')
        .find_map(|p| p.split_once(')').map(|(id, _)| id.to_owned()))
        .filter(|id| id.contains('.') && !id.contains(' '))
        .unwrap_or_else(|| panic!("no rule id in {msg:?}"))
}

/// Signs a stored token payload with the worked example's trusted key (seed 32 x 0x01) and
/// verifies it at its `iat`.
fn verify_payload(payload: &[u8]) -> Result<JobClaims, token::TokenError> {
    let seed = [0x01u8; 32];
    let kp = ed25519_dalek::SigningKey::from_bytes(&seed).to_keypair_bytes();
    let sk = AsymmetricSecretKey::<V4>::from(&kp[..]).unwrap();
    let text = std::str::from_utf8(payload).unwrap().trim_end();
    let signed = PublicToken::sign(&sk, text.as_bytes(), None, None).unwrap();
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let iat = token::parse_rfc3339_utc(v["iat"].as_str().unwrap()).unwrap();
    let trusted = SigningKey::from_seed(seed).public();
    token::verify_token(&signed, &trusted, iat).map(|c| c.into_inner())
}

fn table() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(golden().join("expect.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 3, "expect.tsv: {l:?}");
            (f[0].to_owned(), f[1].to_owned(), f[2].to_owned())
        })
        .collect()
}

#[test]
fn every_golden_document_is_read_as_its_table_says() {
    let rows = table();
    let mut wrong = Vec::new();
    for (path, reader, expect) in &rows {
        let bytes = std::fs::read(golden().join(path)).unwrap();
        let got = read(reader, &bytes);
        if &got != expect {
            wrong.push(format!("{path}: expected {expect}, got {got}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // Every release's every document kind is covered.
    for release in ["0.6.0", "pre-0.6.0"] {
        for reader in [
            "packet",
            "request",
            "manifest",
            "token",
            "artifact-predicate",
        ] {
            assert!(
                rows.iter()
                    .any(|(p, r, e)| p.starts_with(&format!("{release}/"))
                        && r == reader
                        && e == "accept"),
                "no accepted {reader} of {release}"
            );
        }
    }
}

#[test]
fn every_golden_file_is_in_the_table() {
    let rows = table();
    for dir in ["0.6.0", "pre-0.6.0", "contract"] {
        for e in std::fs::read_dir(golden().join(dir)).unwrap() {
            let name = format!("{dir}/{}", e.unwrap().file_name().to_string_lossy());
            assert!(
                rows.iter().any(|(p, _, _)| *p == name),
                "{name} is not in expect.tsv"
            );
        }
    }
}

/// Today's writers still write 0.6.0's bytes when nothing newer is set: the 0.6.0 packet
/// re-serialised, and the 0.6.0 token payload as minted from the same claims.
#[test]
fn todays_writers_reproduce_the_0_6_0_documents() {
    for name in ["packet.json", "request.json", "manifest.json"] {
        let bytes = std::fs::read(golden().join("0.6.0").join(name)).unwrap();
        let again = match name {
            "packet.json" => format::to_json_bytes(&Packet::from_json(&bytes).unwrap()),
            "request.json" => format::to_json_bytes(&Request::from_json(&bytes).unwrap()),
            _ => format::to_json_bytes(&Manifest::from_json(&bytes).unwrap()),
        };
        assert_eq!(
            String::from_utf8(again).unwrap(),
            String::from_utf8(bytes).unwrap(),
            "{name}"
        );
        let p =
            Packet::from_json(&std::fs::read(golden().join("0.6.0/packet.json")).unwrap()).unwrap();
        assert_eq!(
            p.to_json_for(format::Reader::Release0_6),
            format::to_json_bytes(&p)
        );
    }
    let payload = std::fs::read(golden().join("0.6.0/token-payload.json")).unwrap();
    let claims = verify_payload(&payload).unwrap();
    let trusted = SigningKey::from_seed([0x01; 32]);
    let minted = token::mint_token(&trusted, &claims, 1_795_940_647, 20 * 60).unwrap();
    let body = minted.expose().strip_prefix("v4.public.").unwrap();
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(body)
        .unwrap();
    let minted_payload = &raw[..raw.len() - 64];
    assert_eq!(
        std::str::from_utf8(minted_payload).unwrap(),
        std::str::from_utf8(&payload).unwrap().trim_end()
    );
}
