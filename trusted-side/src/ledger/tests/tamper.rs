//! Tampering with the chain: edits, drops, swaps, forks, stray or malformed objects. Each
//! test asserts the first broken entry and its rule id.

use super::*;

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
