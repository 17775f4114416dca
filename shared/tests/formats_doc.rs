//! `docs/FORMATS.md` against the code: every rejection rule id the code emits is in the spec's
//! rule table, no stale id of an enumerable family lingers there, and the worked examples are
//! byte for byte what the code produces.
//!
//! Rule ids are collected three ways: from the enumerations (`TarRule::all()`, `PathRule::ALL`,
//! `diff::rule::ALL`), by probing `fileurl` with bad input, and by scanning the non-test source
//! of `shared/src`, `worker-side/src` and `trusted-side/src` for string literals that are, or
//! contain a parenthesised, rule id of a known family (the `#[error("... (dsse.json) ...")]`
//! messages, `rule: "manifest.order"` fields, the worker's `bundle refused (bundle.job)`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use airlock_core::digest::Sha256Digest;
use airlock_core::dsse::{self, Statement, PAYLOAD_TYPE};
use airlock_core::jobid::JobId;
use airlock_core::keys::SigningKey;
use airlock_core::limits::JobLimits;
use airlock_core::paths::PathRule;
use airlock_core::tar::{DeterministicTarWriter, TarRule};
use airlock_core::token::{self, BundleRef, DropTargets, JobClaims, JobKey};
use base64::Engine as _;

/// Rule-id families: the part before the first dot.
const FAMILIES: &[&str] = &[
    "digest", "key", "dsse", "jobid", "token", "fileurl", "format", "manifest", "request",
    "packet", "record", "limit", "path", "tar", "diff", "bundle", "resume",
];

/// Literals shaped like rule ids that are not: token claim paths named in `token.url` errors.
const NOT_RULE_IDS: &[&str] = &["bundle.url", "resume.url"];

/// Literal suffixes that make `manifest.json` (or `MANIFEST.in`) a file name, not a rule id.
const FILE_SUFFIXES: &[&str] = &[
    "json", "gz", "md", "log", "diff", "txt", "rs", "sh", "toml", "in",
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn formats_md() -> String {
    std::fs::read_to_string(repo_root().join("docs/FORMATS.md")).unwrap()
}

/// `word.word(-word)*` with lowercase ASCII letters and digits.
fn is_rule_id(s: &str) -> bool {
    let Some((family, rest)) = s.split_once('.') else {
        return false;
    };
    let word = |w: &str| {
        !w.is_empty()
            && w.bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    };
    word(family) && rest.split('-').all(word)
}

/// The ids in the first column of the table under `## Rejection rules`.
fn rule_table(doc: &str) -> Vec<String> {
    let start = doc
        .find("\n## Rejection rules\n")
        .expect("docs/FORMATS.md has no `## Rejection rules` section");
    let section = &doc[start + 1..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    let mut ids = Vec::new();
    for line in section[..end].lines() {
        let Some(cell) = line.strip_prefix("| `") else {
            continue;
        };
        let Some((id, _)) = cell.split_once('`') else {
            continue;
        };
        if is_rule_id(id) {
            ids.push(id.to_owned());
        }
    }
    ids
}

/// Ids of `code` that `table` lacks.
fn missing<'a>(table: &BTreeSet<String>, code: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    code.into_iter()
        .filter(|id| !table.contains(*id))
        .map(str::to_owned)
        .collect()
}

/// Rule ids in the string literals of one source text, before its `#[cfg(test)]` module.
fn ids_in_source(text: &str) -> BTreeSet<String> {
    let code = text.split("\n#[cfg(test)]").next().unwrap_or(text);
    let mut out = BTreeSet::new();
    let family_ok = |id: &str| {
        let (family, rest) = id.split_once('.').unwrap_or(("", ""));
        FAMILIES.contains(&family) && !FILE_SUFFIXES.contains(&rest) && !NOT_RULE_IDS.contains(&id)
    };
    for line in code.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        // Odd-numbered pieces between quotes are literals (our sources have no `\"` next to
        // a rule id).
        for literal in line.split('"').skip(1).step_by(2) {
            if is_rule_id(literal) && family_ok(literal) {
                out.insert(literal.to_owned());
            }
            for piece in literal.split('(').skip(1) {
                if let Some((id, _)) = piece.split_once(')') {
                    if is_rule_id(id) && family_ok(id) {
                        out.insert(id.to_owned());
                    }
                }
            }
        }
    }
    out
}

fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn rule_table_is_well_formed() {
    let ids = rule_table(&formats_md());
    assert!(ids.len() >= 120, "rule table too small: {} ids", ids.len());
    let unique: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(
        unique.len(),
        ids.len(),
        "an id appears twice in the rule table"
    );
    for id in &ids {
        let family = id.split('.').next().unwrap();
        assert!(FAMILIES.contains(&family), "unknown family in table: {id}");
    }
}

#[test]
fn every_enumerated_rule_id_is_documented_and_none_is_stale() {
    let table: BTreeSet<String> = rule_table(&formats_md()).into_iter().collect();
    let tar: Vec<&str> = TarRule::all().into_iter().map(TarRule::id).collect();
    let path: Vec<&str> = PathRule::ALL.iter().map(|r| r.id()).collect();
    let diff: Vec<&str> = airlock_core::diff::rule::ALL.to_vec();
    for (family, ids) in [("tar", &tar), ("path", &path), ("diff", &diff)] {
        let lacking = missing(&table, ids.iter().copied());
        assert!(
            lacking.is_empty(),
            "docs/FORMATS.md rule table lacks {family} ids: {lacking:?}"
        );
        let prefix = format!("{family}.");
        let stale: Vec<&String> = table
            .iter()
            .filter(|id| id.starts_with(&prefix) && !ids.contains(&id.as_str()))
            .collect();
        assert!(
            stale.is_empty(),
            "docs/FORMATS.md documents {family} ids the code no longer has: {stale:?}"
        );
    }
}

#[test]
fn every_fileurl_rule_is_documented() {
    use airlock_core::fileurl::{file_url_to_path, path_to_file_url};
    let table: BTreeSet<String> = rule_table(&formats_md()).into_iter().collect();
    let mut seen = BTreeSet::new();
    let rule_of = |e: airlock_core::fileurl::FileUrlError| format!("fileurl.{}", e.rule);
    seen.insert(rule_of(path_to_file_url(Path::new("rel/x")).unwrap_err()));
    for bad in [
        "https://x/y",
        "file://host/x",
        "file:///x?q",
        "file:///x%2Fy",
        "file:///x%zz",
        "file:///a/../b",
    ] {
        seen.insert(rule_of(file_url_to_path(bad).unwrap_err()));
    }
    assert!(seen.len() >= 6, "probes found only {seen:?}");
    let lacking = missing(&table, seen.iter().map(String::as_str));
    assert!(lacking.is_empty(), "rule table lacks {lacking:?}");
}

#[test]
fn every_rule_id_in_the_source_is_documented() {
    let table: BTreeSet<String> = rule_table(&formats_md()).into_iter().collect();
    let mut files = Vec::new();
    // The worker and the trusted side refuse with spec ids too (`bundle.*` is the worker's).
    for dir in ["shared/src", "worker-side/src", "trusted-side/src"] {
        rust_sources(&repo_root().join(dir), &mut files);
    }
    files.sort();
    let mut found = BTreeSet::new();
    let mut lacking = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for id in ids_in_source(&text) {
            if !table.contains(&id) {
                lacking.push(format!("{id} ({})", file.display()));
            }
            found.insert(id);
        }
    }
    // The scan must see the families that have no enumeration, or it proves nothing.
    for family in [
        "digest", "key", "dsse", "jobid", "token", "format", "manifest", "request", "packet",
        "record", "bundle",
    ] {
        assert!(
            found.iter().any(|id| id.starts_with(&format!("{family}."))),
            "source scan found no {family}.* id: the scan is broken"
        );
    }
    assert!(found.len() >= 60, "source scan found only {}", found.len());
    assert!(
        lacking.is_empty(),
        "rule ids in the code but not in docs/FORMATS.md's rule table:\n{}",
        lacking.join("\n")
    );
}

/// The check can fail: a table without an id, or a source with an undocumented one, is caught.
#[test]
fn checks_catch_an_undocumented_id() {
    let doc = formats_md().replace("| `tar.link` |", "| tar-link-removed |");
    let table: BTreeSet<String> = rule_table(&doc).into_iter().collect();
    let tar: Vec<&str> = TarRule::all().into_iter().map(TarRule::id).collect();
    assert_eq!(missing(&table, tar), ["tar.link"]);
    let src = "#[error(\"x (dsse.brand-new): y\")]\nlet r = \"manifest.json\";\nlet q = \"token.fresh\";\n#[cfg(test)]\nmod tests { \"tar.only-in-tests\" }\n";
    let ids: Vec<String> = ids_in_source(src).into_iter().collect();
    assert_eq!(ids, ["dsse.brand-new", "token.fresh"]);
}

/// Asserts `doc` contains `needle` verbatim, naming the example when it does not.
fn assert_documented(doc: &str, what: &str, needle: &str) {
    assert!(
        doc.contains(needle),
        "docs/FORMATS.md: the {what} differs from what the code produces; expected:\n{needle}"
    );
}

#[test]
fn worked_dsse_example_matches_the_code() {
    let doc = formats_md();
    let key = SigningKey::from_seed([0x01; 32]);
    assert_documented(&doc, "private key PEM", key.to_pkcs8_pem().as_str());
    assert_documented(&doc, "public key PEM", &key.public().to_spki_pem());
    assert_documented(&doc, "raw public key", &key.public().raw_hex());
    assert_documented(&doc, "key id", &key.public().key_id());

    let statement = Statement::new(
        "hello.txt",
        Sha256Digest::of_bytes(b"hello\n"),
        "urn:airlock:predicate:example:v1",
        serde_json::json!({
            "n": 1,
            "job": "20261129T082407Z-01010101010101010101",
            "text": "caf\u{e9} \"q\"\n",
        }),
    );
    let payload = statement.canonical_bytes();
    let payload_text = String::from_utf8(payload.clone()).unwrap();
    assert_documented(&doc, "canonical payload", &format!("\n{payload_text}\n"));
    assert_documented(&doc, "payload length", &format!("({} bytes", payload.len()));
    let pae = String::from_utf8(dsse::pae(PAYLOAD_TYPE, &payload)).unwrap();
    assert_documented(&doc, "PAE", &format!("\n{pae}\n"));
    let envelope = dsse::sign_statement(&statement, &key).to_json_pretty();
    let envelope = String::from_utf8(envelope).unwrap();
    assert_documented(&doc, "envelope", &format!("```json\n{envelope}```"));
    // And it verifies, so the example is a valid envelope.
    dsse::verify_envelope(envelope.as_bytes(), &[key.public()], 1 << 20).unwrap();
}

#[test]
fn worked_token_example_matches_the_code() {
    let doc = formats_md();
    let trusted = SigningKey::from_seed([0x01; 32]);
    let job = JobId::new(1_795_940_647, [0x3f; 10]);
    let url = |key: String| format!("https://store.example.com/b/{key}?sig=x");
    let claims = JobClaims {
        bundle: BundleRef {
            url: url(format!("inbox/{job}/bundle.tar.gz")),
            sha256: Sha256Digest::of_bytes(b"bundle"),
            max_bytes: 1 << 20,
        },
        bundle_envelope_url: url(format!("inbox/{job}/bundle.dsse.json")),
        drop: DropTargets {
            checkpoint: url(format!("drop/{job}/checkpoint.tar.gz")),
            checkpoint_envelope: url(format!("drop/{job}/checkpoint.dsse.json")),
            checkpoint_1: url(format!("drop/{job}/checkpoint.1.tar.gz")),
            checkpoint_1_envelope: url(format!("drop/{job}/checkpoint.1.dsse.json")),
            artifact: url(format!("drop/{job}/artifact.tar.gz")),
            artifact_envelope: url(format!("drop/{job}/artifact.dsse.json")),
            artifact_envelope_get: None,
        },
        job_key: JobKey::from_signing_key(&SigningKey::from_seed([0x02; 32])),
        limits: JobLimits::default(),
        model_key: None,
        formats: None,
        resume: None,
        job,
    };
    let minted = token::mint_token(&trusted, &claims, 1_795_940_647, 20 * 60).unwrap();
    let text = minted.expose();
    let body = text.strip_prefix("v4.public.").unwrap();
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(body)
        .unwrap();
    let (payload, sig) = raw.split_at(raw.len() - 64);
    let payload = std::str::from_utf8(payload).unwrap();
    assert_documented(&doc, "token payload", &format!("\n{payload}\n"));
    assert_documented(&doc, "token signature", &hex::encode(sig));
    assert_documented(&doc, "token length", &format!("{} characters", text.len()));
    assert!(token::verify_token(text, &trusted.public(), 1_795_940_647).is_ok());
}

#[test]
fn worked_tar_example_matches_the_code() {
    let doc = formats_md();
    let mut w = DeterministicTarWriter::new(Vec::new());
    w.append_file("files/hello.txt", false, 6, &b"hello\n"[..])
        .unwrap();
    w.append_file("files/run.sh", true, 10, &b"#!/bin/sh\n"[..])
        .unwrap();
    let gz = w.finish().unwrap();
    assert_eq!(&gz[..10], b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff");
    assert_documented(&doc, "gzip header", "`1f 8b 08 00 00 00 00 00 00 ff`");
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_end(&mut tar)
        .unwrap();
    assert_documented(
        &doc,
        "tar stream size",
        &format!("tar stream of {} bytes", tar.len()),
    );
    assert_documented(
        &doc,
        "tar stream digest",
        &Sha256Digest::of_bytes(&tar).to_hex(),
    );
    // The compressed bytes depend on the deflate implementation (zlib-rs here); if the backend
    // changes, update the example and say so in the commit.
    assert_documented(&doc, "gzip size", &format!("it is {} bytes", gz.len()));
    assert_documented(&doc, "gzip digest", &Sha256Digest::of_bytes(&gz).to_hex());
}
