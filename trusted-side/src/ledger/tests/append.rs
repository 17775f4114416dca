//! Appending: an invalid tail is refused, the tail hint is only a hint, concurrent hosts
//! stay contiguous, worker text is bounded.

use super::*;

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
