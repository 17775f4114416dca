//! The chain of signatures shown on a review page: trusted key -> job record -> bundle
//! envelope -> job key -> artifact envelope -> the job's ledger entries.
//!
//! Guards against: a page vouching for an envelope it did not check: every link is verified
//! here under the key the chain names (the trusted key for the record, the bundle and the
//! ledger; the job key from the record for the artifact), and each link shows its own
//! status instead of failing the whole page.

use std::path::Path;

use airlock_core::digest::Sha256Digest;
use airlock_core::dsse::verify_envelope;
use airlock_core::format::MAX_ENVELOPE_BYTES;
use airlock_core::jobid::JobId;
use airlock_core::keys::PublicKey;
use airlock_core::store_layout as layout;

use crate::ledger::entry::{entry_key, MAX_ENTRY_BYTES};
use crate::ledger::BillOfMaterials;
use crate::report::page::ChainLink;
use crate::store::Store;

/// The chain of signatures: trusted key -> job record -> bundle envelope -> job key ->
/// artifact envelope -> the job's ledger entries, each verified here.
pub(super) fn chain(
    home: &Path,
    store: &Store,
    trusted: &PublicKey,
    job: &JobId,
    bom: &BillOfMaterials,
) -> Vec<ChainLink> {
    let mut out = vec![ChainLink {
        what: "trusted key".into(),
        location: home.join("trusted.pub").display().to_string(),
        key_id: trusted.key_id(),
        digest: "-".into(),
        status: "pinned in this home".into(),
    }];
    let file_digest = |b: &[u8]| format!("envelope sha256:{}", Sha256Digest::of_bytes(b));
    let link =
        |what: &str, key: String, key_id: String, digest: String, status: String| ChainLink {
            what: what.into(),
            location: key,
            key_id,
            digest,
            status,
        };
    // The bundle envelope, trusted key.
    let bkey = layout::inbox_bundle_envelope(job);
    out.push(match store.get_bytes(&bkey, MAX_ENVELOPE_BYTES as u64) {
        Ok(Some(b)) => match verify_envelope(&b, std::slice::from_ref(trusted), MAX_ENVELOPE_BYTES)
        {
            Ok(st) => link(
                "bundle envelope",
                bkey,
                trusted.key_id(),
                format!(
                    "bundle.tar.gz sha256:{} ({})",
                    st.subject_digest("bundle.tar.gz")
                        .map_or_else(|| "-".into(), |d| d.to_string()),
                    file_digest(&b)
                ),
                "verified (trusted key)".into(),
            ),
            Err(e) => link(
                "bundle envelope",
                bkey,
                "-".into(),
                file_digest(&b),
                format!("NOT VERIFIED: {e}"),
            ),
        },
        Ok(None) => link(
            "bundle envelope",
            bkey,
            "-".into(),
            "-".into(),
            "missing from the store".into(),
        ),
        Err(e) => link(
            "bundle envelope",
            bkey,
            "-".into(),
            "-".into(),
            format!("unreadable: {e:#}"),
        ),
    });
    // The job record, trusted key; it names the job key.
    let rkey = layout::job_record(job);
    let record = crate::fetch::load_record(store, trusted, job);
    let record_bytes = store
        .get_bytes(&rkey, MAX_ENVELOPE_BYTES as u64)
        .ok()
        .flatten()
        .unwrap_or_default();
    let job_key = match &record {
        Ok(r) => {
            out.push(link(
                "job record",
                rkey,
                trusted.key_id(),
                format!(
                    "bundle sha256:{} ({})",
                    r.bundle_sha256,
                    file_digest(&record_bytes)
                ),
                "verified (trusted key)".into(),
            ));
            PublicKey::from_raw_hex(&r.job_public_key).ok()
        }
        Err(e) => {
            out.push(link(
                "job record",
                rkey,
                "-".into(),
                "-".into(),
                format!("NOT VERIFIED: {e:#}"),
            ));
            None
        }
    };
    match &job_key {
        Some(k) => out.push(link(
            "job key",
            "named by the job record".into(),
            k.key_id(),
            format!("public key {}", k.raw_hex()),
            "one key per job; its private half lived only in the job token".into(),
        )),
        None => out.push(link(
            "job key",
            "-".into(),
            "-".into(),
            "-".into(),
            "unknown (no verified record)".into(),
        )),
    }
    // The artifact envelope, job key: the store's, else the home's kept copy.
    let akey = layout::drop_artifact_envelope(job);
    let kept = crate::fetch::job_dir(home, job).join("artifact.dsse.json");
    let (where_, bytes) = match store
        .get_bytes(&akey, MAX_ENVELOPE_BYTES as u64)
        .ok()
        .flatten()
    {
        Some(b) => (akey, Some(b)),
        None => (kept.display().to_string(), std::fs::read(&kept).ok()),
    };
    let judged = bom.gates.last().map(|g| g.event.artifact_sha256);
    out.push(match (bytes, &job_key) {
        (Some(b), Some(k)) => {
            match verify_envelope(&b, std::slice::from_ref(k), MAX_ENVELOPE_BYTES) {
                Ok(st) => {
                    let d = st.subject_digest("artifact.tar.gz");
                    let status = match (d, judged) {
                        (Some(d), Some(j)) if d == j => {
                            "verified (job key); the digest the gate judged".to_owned()
                        }
                        (Some(_), Some(j)) => {
                            format!("verified (job key), but the gate judged sha256:{j}")
                        }
                        _ => "verified (job key)".to_owned(),
                    };
                    link(
                        "artifact envelope",
                        where_,
                        k.key_id(),
                        format!(
                            "artifact.tar.gz sha256:{} ({})",
                            d.map_or_else(|| "-".into(), |d| d.to_string()),
                            file_digest(&b)
                        ),
                        status,
                    )
                }
                Err(e) => link(
                    "artifact envelope",
                    where_,
                    "-".into(),
                    file_digest(&b),
                    format!("NOT VERIFIED: {e}"),
                ),
            }
        }
        (Some(b), None) => link(
            "artifact envelope",
            where_,
            "-".into(),
            file_digest(&b),
            "no job key to verify it with".into(),
        ),
        (None, _) => link(
            "artifact envelope",
            where_,
            "-".into(),
            "-".into(),
            "not found (never landed?)".into(),
        ),
    });
    // The job's ledger entries (the ledger verified in full to build `bom`).
    let mut kinds: Vec<(u64, &str)> = Vec::new();
    kinds.extend(bom.submit.iter().map(|x| (x.seq, "submit")));
    kinds.extend(bom.fetches.iter().map(|x| (x.seq, "fetch")));
    kinds.extend(bom.gates.iter().map(|x| (x.seq, "gate")));
    kinds.extend(bom.rejects.iter().map(|x| (x.seq, "reject")));
    kinds.extend(bom.reviews.iter().map(|x| (x.seq, x.event.decision)));
    kinds.sort();
    let head = bom
        .ledger
        .head
        .map_or_else(|| "-".into(), |h| h.to_string());
    for (seq, kind) in kinds {
        let key = entry_key(seq);
        let digest = store
            .get_bytes(&key, MAX_ENTRY_BYTES as u64)
            .ok()
            .flatten()
            .map_or_else(|| "-".into(), |b| file_digest(&b));
        out.push(link(
            &format!("ledger entry {seq} ({kind})"),
            key,
            trusted.key_id(),
            digest,
            format!("verified (trusted key); chain intact to head {head}"),
        ));
    }
    out
}
