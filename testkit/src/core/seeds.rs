//! Valid inputs for each helper, built by `airlock-core`'s own encoders: the seed corpus of
//! `fuzz/corpus/<target>/` and of the unit tests. Keys and times are the fixed fuzz ones.

use super::*;
use airlock_core::format::{
    EgressAttempt, EgressRule, ExitInfo, ExitKind, FileEntry, Packer, Redaction, RefusedPath,
    Source, Timings, MANIFEST_FORMAT, MODEL_UNREPORTED, PACKET_FORMAT,
};
use airlock_core::jobid::JobId;
use airlock_core::limits::JobLimits;
use airlock_core::token::{BundleRef, DropTargets, JobKey};

pub fn all() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    vec![
        ("manifest", vec![format::to_json_bytes(&manifest())]),
        ("request", requests()),
        ("packet", vec![format::to_json_bytes(&packet())]),
        ("dsse_envelope", envelopes()),
        ("token", tokens()),
        ("tar_read", tarballs()),
        ("diff_parse", patches()),
        ("comments", comment_files()),
    ]
}

fn comment_files() -> Vec<Vec<u8>> {
    vec![
        b"{\"path\":\"src/a.rs\",\"line\":3,\"severity\":\"warning\",\"body\":\"Check `x`.\"}\n".to_vec(),
        b"{\"path\":\"a\",\"start_line\":1,\"end_line\":4,\"severity\":\"note\",\"body\":\"b\",\"suggestion\":\"x\\n\"}\n\n{\"path\":\"d/e.py\",\"line\":9,\"severity\":\"error\",\"body\":\"\\u202e\"}\n".to_vec(),
    ]
}

fn job() -> JobId {
    JobId::new(FUZZ_NOW_UNIX, [0x3f; airlock_core::jobid::RANDOM_BYTES])
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
            version: airlock_core::VERSION.into(),
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
        worker_version: airlock_core::VERSION.into(),
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
        comments: 0,
        comments_refused: 0,
        review_edits: 0,
        resumed_from: None,
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
        limits: airlock_core::limits::JobLimits::default(),
        kind: Default::default(),
        resumed_from: None,
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
