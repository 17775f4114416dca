//! Object keys in the store. Every key airlock reads or writes is built here, from a [`JobId`]
//! (which cannot contain separators), so no caller assembles a key from untrusted text.

use crate::jobid::JobId;

/// `inbox/<job>/bundle.tar.gz`: the packed, redacted tree; trusted writes, worker reads.
pub fn inbox_bundle(job: &JobId) -> String {
    format!("inbox/{job}/bundle.tar.gz")
}
/// `inbox/<job>/bundle.dsse.json`: statement over the bundle digest, trusted key.
pub fn inbox_bundle_envelope(job: &JobId) -> String {
    format!("inbox/{job}/bundle.dsse.json")
}
/// `drop/<job>/checkpoint.tar.gz`: partial artifact, overwritten while the generator runs.
pub fn drop_checkpoint(job: &JobId) -> String {
    format!("drop/{job}/checkpoint.tar.gz")
}
/// `drop/<job>/checkpoint.dsse.json`: statement over the checkpoint digest, job key.
pub fn drop_checkpoint_envelope(job: &JobId) -> String {
    format!("drop/{job}/checkpoint.dsse.json")
}
/// `drop/<job>/artifact.tar.gz`: the final artifact, written once.
pub fn drop_artifact(job: &JobId) -> String {
    format!("drop/{job}/artifact.tar.gz")
}
/// `drop/<job>/artifact.dsse.json`: statement over the artifact digest, job key; written last.
pub fn drop_artifact_envelope(job: &JobId) -> String {
    format!("drop/{job}/artifact.dsse.json")
}
/// `records/<job>.dsse.json`: the trusted-signed job record.
pub fn job_record(job: &JobId) -> String {
    format!("records/{job}.dsse.json")
}
/// `ledger/`: prefix of the hash-chained audit ledger.
pub const LEDGER_PREFIX: &str = "ledger/";
