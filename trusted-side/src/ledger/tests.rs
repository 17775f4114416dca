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

#[test]
fn appends_five_entries_that_chain_and_verify() {
    let fx = Fixture::seeded();
    let report = fx.verify().unwrap();
    assert_eq!(report.entries, 5);
    assert_eq!(
        report.head,
        Some(LedgerHead {
            seq: 5,
            sha256: fx.digest(5)
        })
    );
    assert_eq!(report.first_at, Some(T0));
    assert_eq!(report.last_at, Some(T0 + 40));
    assert_eq!(report.trusted_key_id, fx.trusted().key_id());
    assert_eq!(fx.entry(1).prev, None);
    for seq in 2..=5 {
        assert_eq!(fx.entry(seq).prev, Some(fx.digest(seq - 1)), "entry {seq}");
        assert_eq!(fx.entry(seq).seq, seq);
    }
    let names: Vec<String> = fx
        .store
        .list(LEDGER_PREFIX)
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    assert_eq!(names[0], "ledger/000000000001.dsse.json");
    assert_eq!(names.len(), 5);
    // The head pins, and verifies against itself.
    let head = report.head.unwrap();
    let pinned = verify_pinned(&fx.store, &fx.trusted(), &head).unwrap();
    assert_eq!(pinned.pinned, Some(head));
    assert!(report.to_string().contains(&format!("head {head}")));
}

#[test]
fn empty_ledger_verifies_with_no_head() {
    let fx = Fixture::new();
    let report = fx.verify().unwrap();
    assert_eq!((report.entries, report.head), (0, None));
}

#[test]
fn rejects_entry_edited_and_resigned_by_another_key() {
    let fx = Fixture::seeded();
    let attacker = SigningKey::generate();
    let mut e = fx.entry(3);
    if let Event::Fetch { model_reported, .. } = &mut e.event {
        *model_reported = "a-cheaper-model".into();
    }
    fx.forge(&e, &attacker);
    assert_broken(&fx.broken(), 3, rule::SIGNATURE);
}

#[test]
fn rejects_entry_edited_without_resigning() {
    let fx = Fixture::seeded();
    let original: dsse::Envelope = serde_json::from_slice(&fx.bytes(4)).unwrap();
    let mut e = fx.entry(4);
    if let Event::Gate {
        decision, reasons, ..
    } = &mut e.event
    {
        *decision = "queue".into();
        reasons.clear();
    }
    // A canonical payload of the edited statement, under the ORIGINAL signature.
    let edited = serde_json::from_slice::<dsse::Envelope>(&seal(&e, &fx.key).unwrap()).unwrap();
    let spliced = dsse::Envelope {
        payload: edited.payload,
        ..original
    };
    fx.put(4, &spliced.to_json_pretty());
    assert_broken(&fx.broken(), 4, rule::SIGNATURE);
}

#[test]
fn rejects_any_flipped_byte_in_an_entry_file() {
    let fx = Fixture::seeded();
    let good = fx.bytes(2);
    for i in (0..good.len()).step_by(7) {
        let mut bad = good.clone();
        bad[i] ^= 0x01;
        fx.put(2, &bad);
        let b = fx.broken();
        // Whatever the byte, entry 2 itself is named; a flip inside JSON whitespace or
        // structure is malformed, inside the payload or signature it fails the signature.
        assert_eq!(b.key, entry_key(2), "byte {i}: {b}");
        assert!(
            [rule::SIGNATURE, rule::MALFORMED].contains(&b.rule),
            "byte {i}: {b}"
        );
    }
    fx.put(2, &good);
    fx.verify().unwrap();
}

#[test]
fn detects_dropped_middle_entry_as_gap() {
    let fx = Fixture::seeded();
    fx.store.delete(&entry_key(3)).unwrap();
    let b = fx.broken();
    assert_broken(&b, 3, rule::GAP);
    assert!(b.reason.contains("000000000004"), "{b}");
}

#[test]
fn detects_dropped_first_entry_as_gap() {
    let fx = Fixture::seeded();
    fx.store.delete(&entry_key(1)).unwrap();
    assert_broken(&fx.broken(), 1, rule::GAP);
}

#[test]
fn detects_swapped_entries() {
    let fx = Fixture::seeded();
    let (two, four) = (fx.bytes(2), fx.bytes(4));
    fx.put(2, &four);
    fx.put(4, &two);
    assert_broken(&fx.broken(), 2, rule::SEQ_MISMATCH);
}

#[test]
fn detects_entry_moved_to_the_next_free_name() {
    // Reordering by moving: entry 3 deleted and re-added as 6 (the tail).
    let fx = Fixture::seeded();
    let three = fx.bytes(3);
    fx.store.delete(&entry_key(3)).unwrap();
    fx.put(6, &three);
    assert_broken(&fx.broken(), 3, rule::GAP);
    fx.put(3, &fx.bytes(2));
    assert_broken(&fx.broken(), 3, rule::SEQ_MISMATCH);
}

#[test]
fn trusted_key_resign_of_an_edit_is_caught_by_the_next_prev() {
    let fx = Fixture::seeded();
    let mut e = fx.entry(3);
    if let Event::Fetch {
        artifact_sha256, ..
    } = &mut e.event
    {
        *artifact_sha256 = Sha256Digest::of_bytes(b"swapped artifact");
    }
    fx.forge(&e, &fx.key); // keeps seq, prev and at
    let b = fx.broken();
    assert_broken(&b, 4, rule::PREV_MISMATCH);
    assert!(b.reason.contains(&fx.digest(3).to_hex()), "{b}");
}

#[test]
fn resigned_edit_of_the_tail_needs_a_pinned_head() {
    let fx = Fixture::seeded();
    let head = fx.verify().unwrap().head.unwrap();
    let mut e = fx.entry(5);
    if let Event::Reject { detail, .. } = &mut e.event {
        *detail = "nothing to see".into();
    }
    fx.forge(&e, &fx.key);
    // Without a pin the rewritten tail is indistinguishable from a genuine one...
    assert_eq!(fx.verify().unwrap().entries, 5);
    // ...with the pin it is caught.
    let b = broken_of(verify_pinned(&fx.store, &fx.trusted(), &head));
    assert_broken(&b, 5, rule::PIN_MISMATCH);
}

#[test]
fn truncated_tail_is_caught_only_against_a_pinned_head() {
    let fx = Fixture::seeded();
    let head = fx.verify().unwrap().head.unwrap();
    fx.store.delete(&entry_key(5)).unwrap();
    fx.store.delete(&entry_key(4)).unwrap();
    let report = fx.verify().unwrap();
    assert_eq!(report.entries, 3);
    assert!(report.to_string().contains("pinned head"), "{report}");
    let b = broken_of(verify_pinned(&fx.store, &fx.trusted(), &head));
    assert_broken(&b, 4, rule::TRUNCATED);
    // An older pin still passes: the ledger only grew past it.
    let old = LedgerHead {
        seq: 2,
        sha256: fx.digest(2),
    };
    verify_pinned(&fx.store, &fx.trusted(), &old).unwrap();
}

#[test]
fn detects_fork_two_entries_with_the_same_prev() {
    let fx = Fixture::seeded();
    // Entry 6 claims entry 4 as its predecessor, as entry 5 does: two branches.
    let six = LedgerEntry {
        seq: 6,
        prev: Some(fx.digest(4)),
        at: T0 + 100,
        job: job(3),
        event: submit("branch"),
    };
    fx.forge(&six, &fx.key);
    let b = fx.broken();
    assert_broken(&b, 6, rule::FORK);
    assert!(b.reason.contains("entry 4"), "{b}");
}

#[test]
fn detects_entry_overwritten_by_a_racing_host_on_a_non_atomic_store() {
    // Host A appends 6 and 7; host B, having read tail 5, overwrites 6 (check-then-write).
    let fx = Fixture::seeded();
    append(&fx.store, &fx.key, &job(1), gate("queue", &[]), T0 + 60).unwrap();
    append(&fx.store, &fx.key, &job(1), gate("queue", &[]), T0 + 70).unwrap();
    let b6 = LedgerEntry {
        seq: 6,
        prev: Some(fx.digest(5)),
        at: T0 + 61,
        job: job(4),
        event: submit("host B"),
    };
    fx.forge(&b6, &fx.key);
    assert_broken(&fx.broken(), 7, rule::PREV_MISMATCH);
}

#[test]
fn detects_time_going_backwards() {
    let fx = Fixture::seeded();
    let six = LedgerEntry {
        seq: 6,
        prev: Some(fx.digest(5)),
        at: T0 + 39,
        job: job(1),
        event: gate("queue", &[]),
    };
    fx.forge(&six, &fx.key);
    assert_broken(&fx.broken(), 6, rule::TIME);
}

#[test]
fn detects_prev_on_first_entry_and_null_prev_later() {
    let fx = Fixture::new();
    let one = LedgerEntry {
        seq: 1,
        prev: Some(Sha256Digest::of_bytes(b"genesis?")),
        at: T0,
        job: job(1),
        event: submit("x"),
    };
    fx.forge(&one, &fx.key);
    assert_broken(&fx.broken(), 1, rule::PREV_MISMATCH);

    let fx = Fixture::seeded();
    let mut three = fx.entry(3);
    three.prev = None;
    fx.forge(&three, &fx.key);
    assert_broken(&fx.broken(), 3, rule::PREV_MISMATCH);
}

#[test]
fn rejects_stray_objects_under_the_ledger_prefix() {
    for name in [
        "ledger/notes.txt",
        "ledger/6.dsse.json",
        "ledger/000000000006.json",
        "ledger/0000000000006.dsse.json",
        "ledger/00000000000a.dsse.json",
        "ledger/sub/000000000006.dsse.json",
    ] {
        let fx = Fixture::seeded();
        fx.store.put_bytes(name, &fx.bytes(5)).unwrap();
        let b = fx.broken();
        assert_eq!((b.key.as_str(), b.rule), (name, rule::NAME), "{b}");
    }
    let fx = Fixture::seeded();
    fx.store
        .put_bytes("ledger/000000000000.dsse.json", &fx.bytes(1))
        .unwrap();
    assert_eq!(fx.broken().rule, rule::NAME);
}

#[test]
fn rejects_malformed_entries_even_when_signed_by_the_trusted_key() {
    let fx = Fixture::seeded();
    let sign_at_6 = |predicate_type: &str, predicate: serde_json::Value| {
        let st = Statement::new(
            &subject_name(6),
            Sha256Digest::of_bytes(&canonical_json(&predicate)),
            predicate_type,
            predicate,
        );
        fx.put(6, &dsse::sign_statement(&st, &fx.key).to_json_pretty());
    };
    let good = serde_json::to_value(LedgerEntry {
        seq: 6,
        prev: Some(fx.digest(5)),
        at: T0 + 50,
        job: job(1),
        event: gate("queue", &[]),
    })
    .unwrap();
    // Sanity: the genuine shape verifies.
    sign_at_6(PREDICATE_LEDGER_ENTRY, good.clone());
    fx.verify().unwrap();

    let mut cases: Vec<(&str, String, serde_json::Value)> = Vec::new();
    cases.push((
        "wrong predicate type",
        "urn:airlock:predicate:bundle:v1".into(),
        good.clone(),
    ));
    let mut v = good.clone();
    v.as_object_mut().unwrap().remove("prev");
    cases.push(("prev absent", PREDICATE_LEDGER_ENTRY.into(), v));
    let mut v = good.clone();
    v["extra"] = true.into();
    cases.push(("unknown entry field", PREDICATE_LEDGER_ENTRY.into(), v));
    let mut v = good.clone();
    v["event"]["extra"] = true.into();
    cases.push(("unknown event field", PREDICATE_LEDGER_ENTRY.into(), v));
    let mut v = good.clone();
    v["event"]["kind"] = "approve".into();
    cases.push(("unknown kind", PREDICATE_LEDGER_ENTRY.into(), v));
    let mut v = good.clone();
    v["job"] = "../../etc".into();
    cases.push(("bad job id", PREDICATE_LEDGER_ENTRY.into(), v));
    let mut v = good.clone();
    v["prev"] = fx.digest(5).to_hex().to_uppercase().into();
    cases.push(("uppercase digest", PREDICATE_LEDGER_ENTRY.into(), v));
    for (what, ty, v) in cases {
        sign_at_6(&ty, v);
        let b = fx.broken();
        assert_eq!(
            (b.key.as_str(), b.rule),
            (entry_key(6).as_str(), rule::MALFORMED),
            "{what}: {b}"
        );
    }

    // Subject digest not over the predicate.
    let st = Statement::new(
        &subject_name(6),
        Sha256Digest::of_bytes(b"something else"),
        PREDICATE_LEDGER_ENTRY,
        good.clone(),
    );
    fx.put(6, &dsse::sign_statement(&st, &fx.key).to_json_pretty());
    assert_broken(&fx.broken(), 6, rule::MALFORMED);
    // Subject name of another entry.
    let st = Statement::new(
        &subject_name(7),
        Sha256Digest::of_bytes(&canonical_json(&good)),
        PREDICATE_LEDGER_ENTRY,
        good.clone(),
    );
    fx.put(6, &dsse::sign_statement(&st, &fx.key).to_json_pretty());
    assert_broken(&fx.broken(), 6, rule::SEQ_MISMATCH);
    // Garbage, and an oversized file.
    fx.put(6, b"not json");
    assert_broken(&fx.broken(), 6, rule::MALFORMED);
    fx.put(6, &vec![b' '; MAX_ENTRY_BYTES + 1]);
    assert_broken(&fx.broken(), 6, rule::MALFORMED);
}

#[test]
fn rejects_recorded_prompt_that_does_not_match_its_digest() {
    let fx = Fixture::seeded();
    let mut e = fx.entry(2);
    if let Event::Submit { prompt, .. } = &mut e.event {
        *prompt = "a different prompt".into();
    }
    fx.forge(&e, &fx.key);
    assert_broken(&fx.broken(), 2, rule::MALFORMED);
    // And append refuses to write such an event in the first place.
    let mut bad = submit("p");
    if let Event::Submit { prompt, .. } = &mut bad {
        *prompt = "q".into();
    }
    let err = append(&fx.store, &fx.key, &job(1), bad, T0).unwrap_err();
    assert!(err.to_string().contains("ledger.bad-event"), "{err}");
    // Nor a reject at an unknown stage; and verify refuses one signed anyway.
    let mut odd = reject("x");
    if let Event::Reject { stage, .. } = &mut odd {
        *stage = "submit".into();
    }
    let err = append(&fx.store, &fx.key, &job(1), odd.clone(), T0).unwrap_err();
    assert!(err.to_string().contains("ledger.bad-event"), "{err}");
    let fx = Fixture::seeded();
    let six = LedgerEntry {
        seq: 6,
        prev: Some(fx.digest(5)),
        at: T0 + 50,
        job: job(1),
        event: odd,
    };
    fx.forge(&six, &fx.key);
    assert_broken(&fx.broken(), 6, rule::MALFORMED);
}

#[test]
fn append_refuses_to_extend_an_invalid_tail() {
    let fx = Fixture::seeded();
    let attacker = SigningKey::generate();
    let six = fx.queue_entry(6, 5, T0 + 60);
    fx.forge(&six, &attacker);
    let err = append(&fx.store, &fx.key, &job(1), gate("queue", &[]), T0 + 70).unwrap_err();
    let msg = format!("{err:#}");
    assert!(msg.contains("ledger.signature"), "{msg}");
    assert!(msg.contains("000000000006"), "{msg}");
    assert!(fx.store.head(&entry_key(7)).unwrap().is_none());
}

fn hint(fx: &Fixture) -> Option<Vec<u8>> {
    fx.store
        .get_bytes(TAIL_HINT, MAX_ENTRY_BYTES as u64)
        .unwrap()
}

#[test]
fn append_writes_the_tail_hint_beside_the_ledger() {
    let fx = Fixture::seeded();
    // A byte-for-byte copy of the last entry, signature included.
    assert_eq!(hint(&fx), Some(fx.bytes(5)));
    // Outside `ledger/`: verify (and the offline verifier) never see it.
    assert!(fx.dir.path().join(TAIL_HINT).is_file());
    assert_eq!(fx.verify().unwrap().entries, 5);
    append(&fx.store, &fx.key, &job(1), gate("queue", &[]), T0 + 50).unwrap();
    assert_eq!(hint(&fx), Some(fx.bytes(6)));
}

#[test]
fn an_append_from_the_hints_copy_reads_no_entry() {
    let fx = Fixture::seeded();
    // Entry 5 is gone from `ledger/` but its copy is the hint: the append chains to the copy
    // without reading `ledger/` (no entry read, no listing), so the gap stays visible to
    // verify instead of being papered over by an append after entry 4.
    let five = fx.bytes(5);
    fx.store.delete(&entry_key(5)).unwrap();
    let seq = append(&fx.store, &fx.key, &job(1), gate("queue", &[]), T0 + 50).unwrap();
    assert_eq!(seq, 6);
    assert_eq!(fx.entry(6).prev, Some(Sha256Digest::of_bytes(&five)));
    let err = fx.verify().unwrap_err();
    assert!(format!("{err:#}").contains(rule::GAP), "{err:#}");
    // Put back, the chain is whole.
    fx.put(5, &five);
    assert_eq!(fx.verify().unwrap().entries, 6);
}

#[test]
fn a_hint_that_is_not_a_trusted_entry_is_skipped_and_the_append_lands_at_the_tail() {
    let fx = Fixture::seeded();
    let attacker = SigningKey::generate();
    // A forged copy of a later entry (it would fork the chain if trusted), a torn copy, an
    // entry numbered 0, a copy of an old real entry (lagging): each append still lands at
    // the true next number, chained to the real tail.
    let forged = |seq: u64, key: &SigningKey| seal(&fx.queue_entry(seq, 5, T0 + 60), key).unwrap();
    let torn = fx.bytes(5)[..100].to_vec();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("forged", forged(40, &attacker)),
        ("torn", torn),
        ("numbered 0", forged(0, &fx.key)),
        ("lagging", fx.bytes(2)),
    ];
    for (i, (what, bytes)) in cases.iter().enumerate() {
        fx.store.put_bytes(TAIL_HINT, bytes).unwrap();
        let seq = append(&fx.store, &fx.key, &job(1), gate("queue", &[]), T0 + 70).unwrap();
        assert_eq!(seq, 6 + i as u64, "hint {what}");
        assert_eq!(fx.entry(seq).prev, Some(fx.digest(seq - 1)), "hint {what}");
        assert_eq!(hint(&fx), Some(fx.bytes(seq)), "hint {what}");
        // The probe a gate reads ahead ignores it the same way.
        fx.store.put_bytes(TAIL_HINT, bytes).unwrap();
        let probe = probe_tail(&fx.store, &fx.trusted());
        assert_eq!(probe.tail.is_some(), *what == "lagging", "hint {what}");
    }
    assert_eq!(fx.verify().unwrap().entries, 5 + cases.len() as u64);
}

#[test]
fn a_lagging_wrong_or_missing_hint_still_appends_at_the_real_tail() {
    let fx = Fixture::seeded();
    // Old-style hints (a number, as written before hints held a copy of the entry).
    // Behind (another host wrote it late), ahead of the ledger (entries removed, or a hostile
    // write), not a canonical number, absent: each append lands at the true next number.
    let cases: [Option<&[u8]>; 8] = [
        Some(b"2\n"),
        Some(b"1\n"),
        Some(b"9\n"),
        Some(b"999999999999\n"),
        Some(b"07\n"),
        Some(b"x\n"),
        Some(b"6"),
        None,
    ];
    for (i, case) in cases.iter().enumerate() {
        match case {
            Some(bytes) => fx.store.put_bytes(TAIL_HINT, bytes).unwrap(),
            None => fx.store.delete(TAIL_HINT).unwrap(),
        }
        let seq = append(&fx.store, &fx.key, &job(1), gate("queue", &[]), T0 + 50).unwrap();
        assert_eq!(seq, 6 + i as u64, "hint {case:?}");
        assert_eq!(hint(&fx), Some(fx.bytes(seq)));
    }
    let report = fx.verify().unwrap();
    assert_eq!(report.entries, 5 + cases.len() as u64);
}

#[test]
fn append_all_chains_its_events_in_order_and_sets_the_hint_once_to_the_last() {
    let fx = Fixture::seeded();
    // A stale hint: the first event finds the real tail, the next ones chain to what was
    // just written.
    fx.store.put_bytes(TAIL_HINT, b"2\n").unwrap();
    let seqs = append_all(
        &fx.store,
        &fx.key,
        &job(3),
        vec![fetch(), gate("reject", &["x"]), reject("tar.parent-dir")],
        T0 + 50,
    )
    .unwrap();
    assert_eq!(seqs, [6, 7, 8]);
    assert_eq!(hint(&fx), Some(fx.bytes(8)));
    let kinds: Vec<&str> = (6..=8).map(|s| fx.entry(s).event.kind()).collect();
    assert_eq!(kinds, ["fetch", "gate", "reject"]);
    for seq in 6..=8 {
        assert_eq!(fx.entry(seq).prev, Some(fx.digest(seq - 1)), "entry {seq}");
        assert_eq!(fx.entry(seq).job, job(3));
    }
    assert_eq!(fx.verify().unwrap().entries, 8);
    // Nothing to append: nothing written, the hint untouched.
    assert!(append_all(&fx.store, &fx.key, &job(3), vec![], T0 + 60)
        .unwrap()
        .is_empty());
    assert_eq!(fx.verify().unwrap().entries, 8);
}

#[test]
fn a_tail_read_ahead_is_used_and_a_stale_one_costs_only_a_retry() {
    let fx = Fixture::seeded();
    // Fresh: the appends chain to the probed tail.
    let probe = probe_tail(&fx.store, &fx.trusted());
    let appended =
        append_all_after(&fx.store, &fx.key, &job(3), vec![fetch()], T0 + 50, probe).unwrap();
    assert_eq!(appended.seqs, [6]);
    // The entry it returns is a tail candidate for the next append (the gate's verdict after
    // its fetch entry), which chains to it whatever the hint says meanwhile.
    fx.store.put_bytes(TAIL_HINT, b"not a hint").unwrap();
    let next = append_all_after(
        &fx.store,
        &fx.key,
        &job(3),
        vec![fetch()],
        T0 + 55,
        appended.tail,
    )
    .unwrap();
    assert_eq!(next.seqs, [7]);
    assert_eq!(fx.entry(7).prev, Some(fx.digest(6)));
    // Stale: another append lands between the probe and the append.
    let stale = probe_tail(&fx.store, &fx.trusted());
    append(&fx.store, &fx.key, &job(1), gate("queue", &[]), T0 + 60).unwrap();
    let seqs = append_all_after(
        &fx.store,
        &fx.key,
        &job(3),
        vec![gate("human", &["x"]), reject("tar.parent-dir")],
        T0 + 70,
        stale,
    )
    .unwrap()
    .seqs;
    assert_eq!(seqs, [9, 10]);
    assert_eq!(fx.verify().unwrap().entries, 10);
    assert_eq!(fx.entry(9).prev, Some(fx.digest(8)));
    // A hint to an entry that does not open gives an empty probe; the append then refuses
    // the invalid tail itself.
    let attacker = SigningKey::generate();
    let eleven = fx.queue_entry(11, 10, T0 + 80);
    fx.forge(&eleven, &attacker);
    fx.store.put_bytes(TAIL_HINT, b"11\n").unwrap();
    let probe = probe_tail(&fx.store, &fx.trusted());
    let Err(err) = append_all_after(&fx.store, &fx.key, &job(1), vec![fetch()], T0 + 90, probe)
    else {
        panic!("an append after an invalid tail must be refused");
    };
    assert!(format!("{err:#}").contains("ledger.signature"), "{err:#}");
}

#[test]
fn append_all_checks_every_event_before_writing_any() {
    let fx = Fixture::seeded();
    let bad = Event::Reject {
        stage: "elsewhere".into(),
        reason_code: "x".into(),
        detail: "d".into(),
    };
    let err = append_all(&fx.store, &fx.key, &job(3), vec![fetch(), bad], T0 + 50).unwrap_err();
    assert!(
        matches!(
            err.downcast_ref::<LedgerError>(),
            Some(LedgerError::BadEvent { .. })
        ),
        "{err:#}"
    );
    assert_eq!(
        fx.verify().unwrap().entries,
        5,
        "an event was written before the check"
    );
}

#[test]
fn a_hint_to_an_invalid_entry_is_refused_like_an_invalid_tail() {
    let fx = Fixture::seeded();
    let attacker = SigningKey::generate();
    let three = fx.queue_entry(3, 2, T0 + 20);
    fx.forge(&three, &attacker);
    fx.store.put_bytes(TAIL_HINT, b"3\n").unwrap();
    let err = append(&fx.store, &fx.key, &job(1), gate("queue", &[]), T0 + 70).unwrap_err();
    assert!(format!("{err:#}").contains("ledger.signature"), "{err:#}");
    assert!(fx.store.head(&entry_key(6)).unwrap().is_none());
}

#[test]
fn append_never_goes_back_in_time_when_a_host_clock_lags() {
    let fx = Fixture::seeded(); // last at = T0 + 40
    let seq = append(&fx.store, &fx.key, &job(1), gate("queue", &[]), T0 + 5).unwrap();
    assert_eq!(fx.entry(seq).at, T0 + 40);
    fx.verify().unwrap();
}

#[test]
fn append_bounds_worker_controlled_text() {
    let fx = Fixture::new();
    let long = "x".repeat(100_000);
    let r = reject_with("tar.parent-dir", format!("é{long}"));
    let seq = append(&fx.store, &fx.key, &job(1), r, T0).unwrap();
    let Event::Reject { detail, .. } = fx.entry(seq).event else {
        panic!("not a reject")
    };
    assert!(detail.len() <= entry::MAX_TEXT_BYTES, "{}", detail.len());
    assert!(detail.ends_with("...(cut)"));
    let many: Vec<String> = (0..10_000).map(|i| format!("reason-{i}")).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let seq = append(&fx.store, &fx.key, &job(1), gate("reject", &refs), T0).unwrap();
    let Event::Gate { reasons, .. } = fx.entry(seq).event else {
        panic!("not a gate")
    };
    assert_eq!(reasons.len(), entry::MAX_REASONS);
    assert!(
        reasons.last().unwrap().contains("more reasons"),
        "{:?}",
        reasons.last()
    );
    fx.verify().unwrap();
}

#[test]
fn show_job_returns_the_bill_of_materials() {
    let fx = Fixture::seeded();
    let bom = show_job(&fx.store, &fx.trusted(), &job(1)).unwrap();
    assert_eq!(bom.job, job(1));
    assert_eq!(bom.entries, vec![1, 3, 4]);
    let s = bom.submit.as_ref().unwrap();
    assert_eq!((s.seq, s.at), (1, T0));
    assert_eq!(s.event.prompt, "add a --verbose flag\nand test it");
    assert_eq!(
        s.event.prompt_sha256,
        Sha256Digest::of_bytes(b"add a --verbose flag\nand test it")
    );
    assert_eq!(s.event.model_requested, "example/model-1");
    assert_eq!(s.event.bundle_sha256, Sha256Digest::of_bytes(b"bundle"));
    assert_eq!(bom.fetches.len(), 1);
    assert_eq!(bom.fetches[0].event.model_reported, "example/model-1-2026");
    assert_eq!(
        bom.fetches[0].event.artifact_sha256,
        Sha256Digest::of_bytes(b"artifact")
    );
    assert_eq!(bom.gates.len(), 1);
    assert_eq!(bom.decision.as_deref(), Some("human"));
    assert_eq!(
        bom.gates[0].event.policy_sha256,
        Sha256Digest::of_bytes(b"policy")
    );
    assert!(bom.rejects.is_empty());
    assert!(bom.notes.is_empty(), "{:?}", bom.notes);
    assert_eq!(bom.ledger.entries, 5);

    let text = bom.to_string();
    for needle in [
        "decision        human",
        "model requested example/model-1",
        "model reported  example/model-1-2026",
        "    | add a --verbose flag",
        "    - ci-path-changed: .github/workflows/ci.yml",
        &Sha256Digest::of_bytes(b"policy").to_hex(),
    ] {
        assert!(text.contains(needle), "{needle:?} missing in:\n{text}");
    }
    let json: serde_json::Value = serde_json::to_value(&bom).unwrap();
    assert_eq!(json["submit"]["seq"], 1);
    assert_eq!(json["submit"]["model_requested"], "example/model-1");
    assert_eq!(
        json["fetches"][0]["packet_sha256"],
        Sha256Digest::of_bytes(b"packet").to_hex()
    );
    assert_eq!(json["decision"], "human");
    assert_eq!(json["ledger"]["head"]["seq"], 5);

    let other = show_job(&fx.store, &fx.trusted(), &job(2)).unwrap();
    assert_eq!(other.entries, vec![2, 5]);
    assert_eq!(other.rejects.len(), 1);
    assert_eq!(other.rejects[0].event.reason_code, "tar.parent-dir");
    assert_eq!(other.decision, None);
    assert!(other.to_string().contains("reject at fetch (entry 5"));

    let err = show_job(&fx.store, &fx.trusted(), &job(7)).unwrap_err();
    assert!(err.to_string().contains("ledger.unknown-job"), "{err}");
}

#[test]
fn show_job_refuses_a_broken_ledger() {
    let fx = Fixture::seeded();
    fx.store.delete(&entry_key(2)).unwrap();
    let err = show_job(&fx.store, &fx.trusted(), &job(1)).unwrap_err();
    assert!(err.to_string().contains("ledger.gap"), "{err}");
}

#[test]
fn bill_of_materials_escapes_terminal_control_from_the_worker() {
    let fx = Fixture::new();
    append(&fx.store, &fx.key, &job(1), submit("p"), T0).unwrap();
    let f = fetch_reporting("gpt\u{1b}]0;owned\u{7}\u{202e}txt.exe");
    append(&fx.store, &fx.key, &job(1), f, T0).unwrap();
    let text = show_job(&fx.store, &fx.trusted(), &job(1))
        .unwrap()
        .to_string();
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{202e}'));
    assert!(
        text.contains("gpt\\u{1b}]0;owned\\u{7}\\u{202e}txt.exe"),
        "{text}"
    );
}

#[test]
fn concurrent_appends_from_two_hosts_stay_contiguous() {
    let dir = tempfile::tempdir().unwrap();
    let key = SigningKey::generate();
    const EACH: u64 = 20;
    let seqs: Vec<Vec<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2u8)
            .map(|host| {
                let dir = dir.path();
                let key = &key;
                s.spawn(move || {
                    // Each "host" has its own store handle on the same directory.
                    let store = open(dir);
                    (0..EACH)
                        .map(|i| {
                            append(&store, key, &job(host), gate("queue", &[]), T0 + i).unwrap()
                        })
                        .collect::<Vec<u64>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<u64> = seqs.concat();
    all.sort_unstable();
    assert_eq!(all, (1..=2 * EACH).collect::<Vec<_>>());
    let report = verify(&open(dir.path()), &key.public()).unwrap();
    assert_eq!(report.entries, 2 * EACH);
}

#[test]
fn ledger_head_text_form_is_strict() {
    let d = Sha256Digest::of_bytes(b"x");
    let head = LedgerHead { seq: 42, sha256: d };
    assert_eq!(head.to_string(), format!("42:{d}"));
    assert_eq!(head.to_string().parse::<LedgerHead>().unwrap(), head);
    for bad in [
        String::new(),
        format!("042:{d}"),
        format!("0:{d}"),
        format!("+4:{d}"),
        format!("4:{}", d.to_hex().to_uppercase()),
        format!("4:sha256:{d}"),
        format!("4 :{d}"),
        format!("1000000000000:{d}"),
        "4".into(),
    ] {
        let err = bad.parse::<LedgerHead>().unwrap_err();
        assert!(err.to_string().contains("ledger.head"), "{bad:?}: {err}");
    }
}

#[test]
fn rule_ids_are_unique_and_dotted() {
    let mut ids = rule::ALL.to_vec();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), rule::ALL.len());
    assert!(ids.iter().all(|id| id.starts_with("ledger.")));
}

#[test]
fn entry_names_are_exact() {
    assert_eq!(entry_key(7), "ledger/000000000007.dsse.json");
    assert_eq!(parse_entry_key("ledger/000000000007.dsse.json"), Some(7));
    assert_eq!(parse_entry_key(&entry_key(MAX_SEQ)), Some(MAX_SEQ));
    for bad in [
        "ledger/000000000000.dsse.json",
        "ledger/00000000007.dsse.json",
        "ledger/+00000000007.dsse.json",
        "ledger/000000000007.dsse.json.tmp",
        "other/000000000007.dsse.json",
    ] {
        assert_eq!(parse_entry_key(bad), None, "{bad}");
    }
}

#[test]
fn canonical_predicate_bytes_are_the_bytes_inside_the_signed_payload() {
    // The subject digest is over canonical_json(predicate); it must be exactly the
    // `predicate` member of the payload airlock-core signs, for every kind of text.
    let tricky =
        "tab\t nl\n cr\r nul\u{0} bell\u{7} del\u{7f} quote\" bs\\ é \u{2028} 😀 </script>";
    let entry = LedgerEntry {
        seq: 3,
        prev: None,
        at: T0,
        job: job(1),
        event: submit(tricky),
    };
    let v = serde_json::to_value(&entry).unwrap();
    let inner = canonical_json(&v);
    let st = Statement::new("s", Sha256Digest::of_bytes(b""), PREDICATE_LEDGER_ENTRY, v);
    let payload = st.canonical_bytes();
    let mut needle = b"\"predicate\":".to_vec();
    needle.extend_from_slice(&inner);
    needle.extend_from_slice(b",\"predicateType\"");
    assert!(
        payload
            .windows(needle.len())
            .any(|w| w == needle.as_slice()),
        "{}\nvs\n{}",
        String::from_utf8_lossy(&payload),
        String::from_utf8_lossy(&inner)
    );
    // And an entry with that prompt round-trips through the ledger.
    let fx = Fixture::new();
    append(&fx.store, &fx.key, &job(1), submit(tricky), T0).unwrap();
    fx.verify().unwrap();
}

#[test]
fn event_wire_form_is_tagged_by_kind() {
    let v = serde_json::to_value(reject("tar.link")).unwrap();
    assert_eq!(v["kind"], "reject");
    assert_eq!(v["stage"], "fetch");
    let v = serde_json::to_value(gate("queue", &[])).unwrap();
    assert_eq!(v["kind"], "gate");
    let back: Event = serde_json::from_value(v).unwrap();
    assert_eq!(back, gate("queue", &[]));
    let mut v = serde_json::to_value(reject("x")).unwrap();
    v.as_object_mut().unwrap().remove("detail");
    assert!(
        serde_json::from_value::<Event>(v).is_err(),
        "detail must be present"
    );
}

// ---- offline verification with standard tools (examples/verify-ledger.py) ----

const SKIP: i32 = 77;

fn python_verifier() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("examples")
        .join("verify-ledger.py")
}

/// Runs the Python verifier; `None` (after printing why) if it cannot run outside CI.
fn run_python(
    ledger: &Path,
    trusted: &std::ffi::OsStr,
    pin: Option<&LedgerHead>,
) -> Option<std::process::Output> {
    let mut cmd = Command::new("python3");
    cmd.arg(python_verifier()).arg(ledger).arg(trusted);
    if let Some(pin) = pin {
        cmd.arg("--head").arg(pin.to_string());
    }
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set and python3 cannot run: {e}"
            );
            println!("SKIPPED: python3 not available ({e})");
            return None;
        }
    };
    if out.status.code() == Some(SKIP) {
        let why = String::from_utf8_lossy(&out.stderr);
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set and the offline ledger verifier cannot run: {why}"
        );
        println!("SKIPPED: securesystemslib not installed (pip install securesystemslib)");
        return None;
    }
    Some(out)
}

/// The Python verifier must reach the same verdict as `verify`: same head, or the same first
/// broken entry and rule.
fn assert_python_agrees(fx: &Fixture, pin: Option<&LedgerHead>) -> bool {
    let rust = match pin {
        Some(p) => verify_pinned(&fx.store, &fx.trusted(), p),
        None => fx.verify(),
    };
    let raw_hex = fx.trusted().raw_hex();
    let Some(out) = run_python(&fx.ledger_dir(), raw_hex.as_ref(), pin) else {
        return false;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match rust {
        Ok(report) => {
            assert!(
                out.status.success(),
                "python refused a good ledger:\n{stdout}\n{stderr}"
            );
            let head = report
                .head
                .map(|h| h.to_string())
                .unwrap_or_else(|| "none".into());
            let want = format!("OK: {} entries, head {head}", report.entries);
            assert!(
                stdout.contains(&want),
                "{want:?} not in:\n{stdout}\n{stderr}"
            );
        }
        Err(e) => {
            let b = broken_of(Err(e));
            assert_eq!(
                out.status.code(),
                Some(1),
                "python accepted a broken ledger ({b}):\n{stdout}\n{stderr}"
            );
            let want = format!("{}: rejected ({})", b.key, b.rule);
            assert!(
                stderr.contains(&want),
                "rust says {b}\npython says:\n{stderr}"
            );
        }
    }
    true
}

#[test]
fn offline_python_verifier_agrees_with_verify() {
    let fx = Fixture::seeded();
    if !assert_python_agrees(&fx, None) {
        return;
    }
    let head = fx.verify().unwrap().head.unwrap();
    assert_python_agrees(&fx, Some(&head));
    // The trusted key as the SPKI PEM file `airlock init` writes.
    let pem = fx.dir.path().join("trusted.pub");
    std::fs::write(&pem, fx.trusted().to_spki_pem()).unwrap();
    let out = run_python(&fx.ledger_dir(), pem.as_os_str(), None).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("OK: 5 entries, head {head}")),
        "{stdout}"
    );
    // Another key: every entry refused, the first one named.
    let other = SigningKey::generate().public().raw_hex();
    let out = run_python(&fx.ledger_dir(), other.as_ref(), None).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{}: rejected (ledger.signature)", entry_key(1))),
        "{stderr}"
    );

    // Tampering, one case at a time on fresh copies.
    type Tamper = fn(&Fixture);
    let cases: [(&str, Tamper); 9] = [
        ("resigned by another key", |fx| {
            let mut e = fx.entry(3);
            e.at += 1;
            fx.forge(&e, &SigningKey::generate());
        }),
        ("edited without resigning", |fx| {
            let original: dsse::Envelope = serde_json::from_slice(&fx.bytes(4)).unwrap();
            let mut e = fx.entry(4);
            e.job = job(9);
            let edited: dsse::Envelope =
                serde_json::from_slice(&seal(&e, &fx.key).unwrap()).unwrap();
            fx.put(
                4,
                &dsse::Envelope {
                    payload: edited.payload,
                    ..original
                }
                .to_json_pretty(),
            );
        }),
        ("dropped", |fx| fx.store.delete(&entry_key(2)).unwrap()),
        ("swapped", |fx| {
            let (a, b) = (fx.bytes(2), fx.bytes(3));
            fx.put(2, &b);
            fx.put(3, &a);
        }),
        ("trusted re-sign of an edit", |fx| {
            let mut e = fx.entry(2);
            e.job = job(8);
            fx.forge(&e, &fx.key);
        }),
        ("fork", |fx| {
            let six = LedgerEntry {
                seq: 6,
                prev: Some(fx.digest(3)),
                at: T0 + 99,
                job: job(1),
                event: fetch(),
            };
            fx.forge(&six, &fx.key);
        }),
        ("time", |fx| {
            let six = LedgerEntry {
                seq: 6,
                prev: Some(fx.digest(5)),
                at: 1,
                job: job(1),
                event: fetch(),
            };
            fx.forge(&six, &fx.key);
        }),
        ("stray", |fx| {
            fx.store.put_bytes("ledger/README", b"hi").unwrap()
        }),
        ("prompt digest", |fx| {
            let mut e = fx.entry(1);
            if let Event::Submit { prompt, .. } = &mut e.event {
                prompt.push('!');
            }
            fx.forge(&e, &fx.key);
        }),
    ];
    for (what, tamper) in cases {
        let fx = Fixture::seeded();
        tamper(&fx);
        assert!(fx.verify().is_err(), "{what}: rust accepted");
        println!("case: {what}");
        assert_python_agrees(&fx, None);
    }
    // Truncation against the pin.
    let fx = Fixture::seeded();
    let head = fx.verify().unwrap().head.unwrap();
    fx.store.delete(&entry_key(5)).unwrap();
    assert_python_agrees(&fx, None);
    assert_python_agrees(&fx, Some(&head));
}

/// Two hosts on one remote-like store (a shared in-memory backend), each with its own copy of
/// the tail hint in a directory of its own.
fn two_hosts(
    caches: &tempfile::TempDir,
) -> (Store, Store, std::sync::Arc<object_store::memory::InMemory>) {
    let inner = std::sync::Arc::new(object_store::memory::InMemory::new());
    let host = |name: &str| {
        Store::from_parts(inner.clone(), None, "memory://shared")
            .unwrap()
            .with_hint_cache(&caches.path().join(name))
    };
    (host("a"), host("b"), inner)
}

#[test]
fn a_hosts_copy_of_the_hint_is_its_first_tail_candidate() {
    let caches = tempfile::tempdir().unwrap();
    let (a, b, _) = two_hosts(&caches);
    let key = SigningKey::generate();
    for n in 1..=2 {
        assert_eq!(
            append(&a, &key, &job(n), fetch(), T0).unwrap(),
            u64::from(n)
        );
    }
    // Host a's copy is the store's hint, byte for byte.
    let copy = a.cached_hint(TAIL_HINT, MAX_ENTRY_BYTES as u64).unwrap();
    assert_eq!(
        Some(copy.clone()),
        a.get_bytes(TAIL_HINT, MAX_ENTRY_BYTES as u64).unwrap()
    );
    assert_eq!(b.cached_hint(TAIL_HINT, MAX_ENTRY_BYTES as u64), None);
    // With the store's hint unusable, host a still starts from its own copy; host b has none.
    a.put_bytes(TAIL_HINT, b"not an entry").unwrap();
    let probe = probe_tail(&a, &key.public());
    assert!(probe.cached);
    assert!(matches!(probe.tail, Some(Tail::At(2, d, _)) if d == Sha256Digest::of_bytes(&copy)));
    let probe = probe_tail(&b, &key.public());
    assert!(!probe.cached && probe.tail.is_none());
    assert_eq!(append(&a, &key, &job(3), fetch(), T0).unwrap(), 3);
    assert_eq!(verify(&a, &key.public()).unwrap().entries, 3);
}

#[test]
fn a_copy_behind_the_tail_costs_a_lost_race_and_the_chain_stays_whole() {
    let caches = tempfile::tempdir().unwrap();
    let (a, b, _) = two_hosts(&caches);
    let key = SigningKey::generate();
    assert_eq!(append(&a, &key, &job(1), submit("one"), T0).unwrap(), 1);
    // Host b appends twice: host a's copy (entry 1) is now two entries behind.
    assert_eq!(append(&b, &key, &job(2), submit("two"), T0 + 1).unwrap(), 2);
    assert_eq!(append(&b, &key, &job(2), fetch(), T0 + 2).unwrap(), 3);
    let probe = probe_tail(&a, &key.public());
    assert!(probe.cached && matches!(probe.tail, Some(Tail::At(1, ..))));
    // Read ahead or not, host a lands after host b's entries and chains to the last.
    let appended = append_all_after(&a, &key, &job(1), vec![fetch()], T0 + 3, probe).unwrap();
    assert_eq!(appended.seqs, vec![4]);
    assert_eq!(
        append(&a, &key, &job(1), gate("queue", &[]), T0 + 4).unwrap(),
        5
    );
    assert_eq!(
        append(&b, &key, &job(2), gate("queue", &[]), T0 + 5).unwrap(),
        6
    );
    let report = verify(&a, &key.public()).unwrap();
    assert_eq!(report.entries, 6);
    let entry = |seq: u64| {
        a.get_bytes(&entry_key(seq), MAX_ENTRY_BYTES as u64)
            .unwrap()
            .unwrap()
    };
    let four = open_entry(&entry_key(4), 4, &entry(4), &key.public()).unwrap();
    assert_eq!(four.prev, Some(Sha256Digest::of_bytes(&entry(3))));
}

#[test]
fn a_copy_that_does_not_open_is_no_candidate() {
    let caches = tempfile::tempdir().unwrap();
    let (a, _, _) = two_hosts(&caches);
    let key = SigningKey::generate();
    let other = SigningKey::generate();
    assert_eq!(append(&a, &key, &job(1), fetch(), T0).unwrap(), 1);
    let copy_path = std::fs::read_dir(caches.path().join("a"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(TAIL_HINT))
        .unwrap();
    // Torn, and signed by another key: neither is a candidate; the store's hint is read.
    for bad in [b"{\"payload".to_vec(), {
        let forged = LedgerEntry {
            seq: 9,
            prev: None,
            at: T0,
            job: job(1),
            event: fetch(),
        };
        seal(&forged, &other).unwrap()
    }] {
        std::fs::write(&copy_path, &bad).unwrap();
        let probe = probe_tail(&a, &key.public());
        assert!(!probe.cached && matches!(probe.tail, Some(Tail::At(1, ..))));
    }
    assert_eq!(
        append(&a, &key, &job(1), gate("queue", &[]), T0).unwrap(),
        2
    );
    assert_eq!(verify(&a, &key.public()).unwrap().entries, 2);
}

#[test]
fn a_file_store_keeps_no_copy_of_its_hint() {
    let fx = Fixture::new();
    let caches = tempfile::tempdir().unwrap();
    let store = open(fx.dir.path()).with_hint_cache(caches.path());
    append(&store, &fx.key, &job(1), fetch(), T0).unwrap();
    assert!(hint(&fx).is_some());
    assert_eq!(store.cached_hint(TAIL_HINT, MAX_ENTRY_BYTES as u64), None);
    assert_eq!(std::fs::read_dir(caches.path()).unwrap().count(), 0);
}
