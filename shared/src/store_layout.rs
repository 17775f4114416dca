//! Object keys in the store. Every key airlock reads or writes is built here, from a [`JobId`]
//! (which cannot contain separators), so no caller assembles a key from untrusted text.

use crate::format::fleet::WorkerName;
use crate::jobid::JobId;

/// `inbox/<job>/bundle.tar.gz`: the packed, redacted tree; trusted writes, worker reads.
pub fn inbox_bundle(job: &JobId) -> String {
    format!("inbox/{job}/bundle.tar.gz")
}
/// `inbox/<job>/bundle.dsse.json`: statement over the bundle digest, trusted key.
pub fn inbox_bundle_envelope(job: &JobId) -> String {
    format!("inbox/{job}/bundle.dsse.json")
}
/// `inbox/<job>/resume.diff`: the gated checkpoint patch of the job this one resumes from,
/// copied here by the trusted side (never a slot the old worker can still write).
pub fn inbox_resume(job: &JobId) -> String {
    format!("inbox/{job}/resume.diff")
}
/// Checkpoint slots: the worker writes each checkpoint into the slot that does not hold the
/// latest complete pair, so a kill mid-write tears only that slot and the other still verifies.
pub const CHECKPOINT_SLOTS: u8 = 2;

/// The object names of checkpoint slot `slot` (0 or 1): slot 0 is `checkpoint.tar.gz` and
/// `checkpoint.dsse.json` (the single-slot names of older drops), slot 1 is
/// `checkpoint.1.tar.gz` and `checkpoint.1.dsse.json`.
pub fn checkpoint_slot_names(slot: u8) -> (&'static str, &'static str) {
    if slot == 0 {
        ("checkpoint.tar.gz", "checkpoint.dsse.json")
    } else {
        ("checkpoint.1.tar.gz", "checkpoint.1.dsse.json")
    }
}
/// `drop/<job>/checkpoint[.1].tar.gz`: partial artifact of slot `slot`, overwritten in turn.
pub fn drop_checkpoint(job: &JobId, slot: u8) -> String {
    format!("drop/{job}/{}", checkpoint_slot_names(slot).0)
}
/// `drop/<job>/checkpoint[.1].dsse.json`: statement over slot `slot`'s checkpoint, job key.
pub fn drop_checkpoint_envelope(job: &JobId, slot: u8) -> String {
    format!("drop/{job}/{}", checkpoint_slot_names(slot).1)
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
/// `fleet/<name>/`: one worker's prefix; its enrolment reaches nothing else.
pub fn fleet_prefix(name: &WorkerName) -> String {
    format!("fleet/{name}/")
}
/// `fleet/<name>/mailbox/<slot>.age`: a ticket sealed to the worker; trusted writes, worker reads.
pub fn fleet_mailbox(name: &WorkerName, slot: usize) -> String {
    format!("fleet/{name}/mailbox/{slot}.age")
}
/// `fleet/<name>/mailbox/renewal.age`: the renewed enrolment sealed to the worker.
pub fn fleet_renewal(name: &WorkerName) -> String {
    format!("fleet/{name}/mailbox/renewal.age")
}
/// `fleet/<name>/heartbeat.json`: the worker's heartbeat; worker writes, trusted reads.
pub fn fleet_heartbeat(name: &WorkerName) -> String {
    format!("fleet/{name}/heartbeat.json")
}
