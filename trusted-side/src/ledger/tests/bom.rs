//! Reading the ledger: a job's bill of materials, refused on a broken ledger, escaped.

use super::*;

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
        text.contains("gpt<U+001B>]0;owned<U+0007><U+202E>txt.exe"),
        "{text}"
    );
}
