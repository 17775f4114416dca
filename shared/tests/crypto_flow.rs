//! The crypto path as the two binaries use it, through the public API only: the trusted side
//! mints a token carrying a per-job key and signs the bundle statement; the worker verifies
//! both with the pinned trusted key and signs its artifact with the job key; the fetcher
//! accepts the artifact only under that job's key.

use airlock_core::digest::Sha256Digest;
use airlock_core::dsse::{self, Statement};
use airlock_core::jobid::JobId;
use airlock_core::keys::{self, SigningKey};
use airlock_core::limits::JobLimits;
use airlock_core::token::{self, BundleRef, DropTargets, JobClaims, JobKey};

const NOW: u64 = 1_795_940_647;
const MAX_ENVELOPE: usize = 1024 * 1024;

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ArtifactPredicate {
    job: JobId,
    bundle_sha256: Sha256Digest,
}

#[test]
fn worker_artifact_is_accepted_only_under_its_job_key() {
    let dir = tempfile::tempdir().unwrap();
    // Trusted side: keys on disk.
    let trusted = SigningKey::generate();
    keys::write_private_key(&dir.path().join("trusted.key"), &trusted).unwrap();
    keys::write_public_key(&dir.path().join("trusted.pub"), &trusted.public()).unwrap();
    let trusted = keys::load_private_key(&dir.path().join("trusted.key")).unwrap();

    let job = JobId::new(NOW, [7; airlock_core::jobid::RANDOM_BYTES]);
    let job_key = SigningKey::generate();
    let job_pub = job_key.public();
    let bundle = b"pretend this is a bundle";
    let bundle_sha = Sha256Digest::of_bytes(bundle);
    let root = dir.path().display().to_string();
    let claims = JobClaims {
        job: job.clone(),
        bundle: BundleRef {
            url: format!("file://{root}/inbox/{job}/bundle.tar.gz"),
            sha256: bundle_sha,
            max_bytes: 1 << 20,
        },
        bundle_envelope_url: format!("file://{root}/inbox/{job}/bundle.dsse.json"),
        drop: DropTargets {
            checkpoint: format!("file://{root}/drop/{job}/checkpoint.tar.gz"),
            checkpoint_envelope: format!("file://{root}/drop/{job}/checkpoint.dsse.json"),
            checkpoint_1: format!("file://{root}/drop/{job}/checkpoint.1.tar.gz"),
            checkpoint_1_envelope: format!("file://{root}/drop/{job}/checkpoint.1.dsse.json"),
            artifact: format!("file://{root}/drop/{job}/artifact.tar.gz"),
            artifact_envelope: format!("file://{root}/drop/{job}/artifact.dsse.json"),
            artifact_envelope_get: None,
        },
        job_key: JobKey::from_signing_key(&job_key),
        limits: JobLimits::default(),
        model_key: None,
        formats: None,
        resume: None,
    };
    drop(job_key);
    let tok = token::mint_token(&trusted, &claims, NOW, 20 * 60).unwrap();
    let bundle_env = dsse::sign_statement(
        &Statement::new(
            "bundle.tar.gz",
            bundle_sha,
            "urn:airlock:predicate:test-bundle:v1",
            serde_json::json!({"job": job}),
        ),
        &trusted,
    )
    .to_json_pretty();

    // Worker: pinned trusted public key from a file, token and bundle envelope verified.
    let pinned = keys::load_public_key(&dir.path().join("trusted.pub")).unwrap();
    let verified = token::verify_token(tok.expose(), &pinned, NOW + 5).unwrap();
    let st =
        dsse::verify_envelope(&bundle_env, std::slice::from_ref(&pinned), MAX_ENVELOPE).unwrap();
    assert_eq!(
        st.subject_digest("bundle.tar.gz"),
        Some(verified.bundle.sha256)
    );
    let worker_key = verified.job_key.signing_key().unwrap();
    let artifact_sha = Sha256Digest::of_bytes(b"artifact bytes");
    let artifact_env = dsse::sign_statement(
        &Statement::new(
            "artifact.tar.gz",
            artifact_sha,
            "urn:airlock:predicate:test-artifact:v1",
            serde_json::to_value(ArtifactPredicate {
                job: verified.job.clone(),
                bundle_sha256: verified.bundle.sha256,
            })
            .unwrap(),
        ),
        &worker_key,
    )
    .to_json_pretty();

    // Fetcher: only the job key (from the trusted record) is pinned.
    let st =
        dsse::verify_envelope(&artifact_env, std::slice::from_ref(&job_pub), MAX_ENVELOPE).unwrap();
    let pred = st
        .expect_predicate::<ArtifactPredicate>("urn:airlock:predicate:test-artifact:v1")
        .unwrap();
    assert_eq!(pred.job, job);
    assert_eq!(pred.bundle_sha256, bundle_sha);
    assert_eq!(st.subject_digest("artifact.tar.gz"), Some(artifact_sha));

    // The trusted key must not stand in for the job key, nor the job key for the trusted key.
    let err = dsse::verify_envelope(&artifact_env, std::slice::from_ref(&pinned), MAX_ENVELOPE)
        .unwrap_err();
    assert!(
        err.to_string().contains("dsse.no-trusted-signature"),
        "{err}"
    );
    let err = dsse::verify_envelope(&bundle_env, std::slice::from_ref(&job_pub), MAX_ENVELOPE)
        .unwrap_err();
    assert!(
        err.to_string().contains("dsse.no-trusted-signature"),
        "{err}"
    );
    // A token verified under the job key (a worker forging its own token) is refused.
    let err = token::verify_token(tok.expose(), &job_pub, NOW + 5).unwrap_err();
    assert!(err.to_string().contains("token.signature"), "{err}");
}

#[test]
fn worker_forged_token_with_its_own_job_key_is_refused() {
    let trusted = SigningKey::generate();
    let job_key = SigningKey::generate();
    let job = JobId::new(NOW, [1; airlock_core::jobid::RANDOM_BYTES]);
    let url = "https://store.example.com/x".to_string();
    let claims = JobClaims {
        job,
        bundle: BundleRef {
            url: url.clone(),
            sha256: Sha256Digest::of_bytes(b""),
            max_bytes: 1,
        },
        bundle_envelope_url: url.clone(),
        drop: DropTargets {
            checkpoint: url.clone(),
            checkpoint_envelope: url.clone(),
            checkpoint_1: url.clone(),
            checkpoint_1_envelope: url.clone(),
            artifact: url.clone(),
            artifact_envelope: url,
            artifact_envelope_get: None,
        },
        job_key: JobKey::from_signing_key(&job_key),
        limits: JobLimits::default(),
        model_key: None,
        formats: None,
        resume: None,
    };
    // A worker holding the job key mints a longer-lived token for itself.
    let forged = token::mint_token(&job_key, &claims, NOW, 24 * 3600).unwrap();
    let err = token::verify_token(forged.expose(), &trusted.public(), NOW).unwrap_err();
    assert!(err.to_string().contains("token.signature"), "{err}");
}
