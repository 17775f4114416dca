//! Ledger tests: a real `file://` store in a temp dir, real signatures, and one test per way
//! of tampering with the chain. Each asserts the first broken entry and its rule id.

use std::path::{Path, PathBuf};
use std::process::Command;

use airlock_core::digest::Sha256Digest;
use airlock_core::dsse::{self, Statement};
use airlock_core::jobid::JobId;
use airlock_core::keys::{PublicKey, SigningKey};

use super::entry::*;
use super::*;

const T0: u64 = 1_800_000_000;

fn job(n: u8) -> JobId {
    JobId::new(T0 + u64::from(n), [n; airlock_core::jobid::RANDOM_BYTES])
}

fn open(dir: &Path) -> Store {
    Store::open(&airlock_core::fileurl::path_to_file_url(dir).unwrap()).unwrap()
}

fn submit(prompt: &str) -> Event {
    Event::Submit {
        prompt_sha256: Sha256Digest::of_bytes(prompt.as_bytes()),
        prompt: prompt.to_owned(),
        model_requested: "example/model-1".into(),
        revision: "0123456789abcdef0123456789abcdef01234567".into(),
        bundle_sha256: Sha256Digest::of_bytes(b"bundle"),
        request_sha256: Sha256Digest::of_bytes(b"request"),
        expires_at: T0 + 1200,
        model_key_fingerprint: None,
        redispatch_of: None,
        resumed_from: None,
    }
}

fn fetch() -> Event {
    fetch_reporting("example/model-1-2026")
}

fn fetch_reporting(model: &str) -> Event {
    Event::Fetch {
        run_id: "run-1".into(),
        artifact_sha256: Sha256Digest::of_bytes(b"artifact"),
        packet_sha256: Sha256Digest::of_bytes(b"packet"),
        model_reported: model.into(),
        partial: false,
    }
}

fn gate(decision: &str, reasons: &[&str]) -> Event {
    Event::Gate {
        decision: decision.into(),
        reasons: reasons.iter().map(|r| (*r).to_owned()).collect(),
        policy_sha256: Sha256Digest::of_bytes(b"policy"),
        gate_version: "0.1.0".into(),
        artifact_sha256: Sha256Digest::of_bytes(b"artifact"),
        diff_sha256: Sha256Digest::of_bytes(b"diff"),
        files: Vec::new(),
    }
}

fn reject(code: &str) -> Event {
    reject_with(
        code,
        format!("artifact.tar.gz: member \"../x\": rejected ({code})"),
    )
}

fn reject_with(code: &str, detail: String) -> Event {
    Event::Reject {
        stage: "fetch".into(),
        reason_code: code.into(),
        detail,
    }
}

struct Fixture {
    dir: tempfile::TempDir,
    store: Store,
    key: SigningKey,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        Fixture {
            dir,
            store,
            key: SigningKey::generate(),
        }
    }

    /// Five entries: submit j1, submit j2, fetch j1, gate j1, reject j2.
    fn seeded() -> Fixture {
        let fx = Fixture::new();
        let events = [
            (job(1), submit("add a --verbose flag\nand test it")),
            (job(2), submit("other job")),
            (job(1), fetch()),
            (
                job(1),
                gate("human", &["ci-path-changed: .github/workflows/ci.yml"]),
            ),
            (job(2), reject("tar.parent-dir")),
        ];
        for (i, (j, e)) in events.into_iter().enumerate() {
            let seq = append(&fx.store, &fx.key, &j, e, T0 + 10 * i as u64).unwrap();
            assert_eq!(seq, i as u64 + 1);
        }
        fx
    }

    fn trusted(&self) -> PublicKey {
        self.key.public()
    }

    fn ledger_dir(&self) -> PathBuf {
        self.dir.path().join("ledger")
    }

    fn bytes(&self, seq: u64) -> Vec<u8> {
        self.store
            .get_bytes(&entry_key(seq), MAX_ENTRY_BYTES as u64)
            .unwrap()
            .unwrap()
    }

    fn entry(&self, seq: u64) -> LedgerEntry {
        open_entry(&entry_key(seq), seq, &self.bytes(seq), &self.trusted()).unwrap()
    }

    fn digest(&self, seq: u64) -> Sha256Digest {
        Sha256Digest::of_bytes(&self.bytes(seq))
    }

    /// Entry `seq` about job 9 (`gate queue`) at `at`, chained to entry `prev`: what the
    /// forgery tests write or hint at.
    fn queue_entry(&self, seq: u64, prev: u64, at: u64) -> LedgerEntry {
        LedgerEntry {
            seq,
            prev: Some(self.digest(prev)),
            at,
            job: job(9),
            event: gate("queue", &[]),
        }
    }

    /// Writes `entry` at its own seq, signed by `key`, overwriting.
    fn forge(&self, entry: &LedgerEntry, key: &SigningKey) {
        self.store
            .put_bytes(&entry_key(entry.seq), &seal(entry, key).unwrap())
            .unwrap();
    }

    fn put(&self, seq: u64, bytes: &[u8]) {
        self.store.put_bytes(&entry_key(seq), bytes).unwrap();
    }

    fn verify(&self) -> Result<VerifyReport> {
        verify(&self.store, &self.trusted())
    }

    /// The first broken entry `verify` reports (panics if the ledger verifies).
    fn broken(&self) -> BrokenEntry {
        broken_of(self.verify())
    }
}

fn broken_of(r: Result<VerifyReport>) -> BrokenEntry {
    let err = r.expect_err("ledger verified but should not have");
    match err.downcast_ref::<LedgerError>() {
        Some(LedgerError::Broken(b)) => b.clone(),
        _ => panic!("not a broken-ledger error: {err:#}"),
    }
}

fn assert_broken(b: &BrokenEntry, seq: u64, rule: &str) {
    assert_eq!(
        (b.key.as_str(), b.rule),
        (entry_key(seq).as_str(), rule),
        "{b}"
    );
    let shown = b.to_string();
    assert!(
        shown.starts_with(&format!("{}: rejected ({rule}): ", entry_key(seq))),
        "{shown}"
    );
}

mod append;
mod bom;
mod format;
mod model_history;
mod offline;
mod tamper;
