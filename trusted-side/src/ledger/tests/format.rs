//! The ledger's text forms: pinned heads, rule ids, entry names, the signed predicate bytes,
//! the event wire form.

use super::*;

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
