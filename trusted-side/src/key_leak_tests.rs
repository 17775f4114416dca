//! The model key is found raw and encoded, at any alignment and across chunk boundaries, and
//! a finding never holds the key.

use super::*;
use base64::Engine as _;

const KEY: &[u8] = b"sk-live-0123456789abcdefXYZ";

fn found_in(text: &[u8]) -> Option<&'static str> {
    let n = Needles::of(KEY, &[]).unwrap();
    // Fed in 7-byte chunks, so a match always spans chunks.
    let mut s = n.scanner("generator.log");
    for chunk in text.chunks(7) {
        s.feed(chunk);
    }
    let finding = s.finding();
    if let Some(f) = &finding {
        assert!(!f.as_bytes().windows(KEY.len()).any(|w| w == KEY), "{f}");
        assert!(
            f.contains("model-key-leaked") && f.contains("generator.log"),
            "{f}"
        );
    }
    finding.map(|_| n.find(text).unwrap())
}

#[test]
fn every_encoding_is_found_at_every_alignment() {
    let b64 = base64::engine::general_purpose::STANDARD;
    let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    for lead in 0..3usize {
        let mut bytes = b"xyz"[..lead].to_vec();
        bytes.extend_from_slice(KEY);
        bytes.extend_from_slice(b"tail!");
        let e = b64.encode(&bytes);
        assert_eq!(
            found_in(format!("log: {e}\n").as_bytes()),
            Some("base64"),
            "{lead}"
        );
        let e = url.encode(&bytes);
        assert!(
            found_in(format!("log: {e}\n").as_bytes()).is_some(),
            "{lead}"
        );
    }
    let mut text = b"key=".to_vec();
    text.extend_from_slice(KEY);
    assert_eq!(found_in(&text), Some("raw"));
    assert_eq!(found_in(hex::encode(KEY).as_bytes()), Some("hex"));
    assert_eq!(found_in(hex::encode_upper(KEY).as_bytes()), Some("hex"));
    let rev: Vec<u8> = KEY.iter().rev().copied().collect();
    assert_eq!(found_in(&rev), Some("reversed"));
    let odd = b"sk+live/0123456789abcdef=XYZ";
    let n = Needles::of(odd, &[]).unwrap();
    assert_eq!(
        n.find(b"q=sk%2Blive%2F0123456789abcdef%3DXYZ&"),
        Some("percent-encoded")
    );
    assert_eq!(
        n.find(b"q=sk%2blive%2f0123456789abcdef%3dXYZ&"),
        Some("percent-encoded")
    );
}

#[test]
fn ordinary_text_and_parts_of_the_key_are_not_findings() {
    assert_eq!(
        found_in(b"an ordinary log line\nsk-live-0123 456789abcdefXYZ\n"),
        None
    );
    assert_eq!(found_in(&KEY[..KEY.len() - 1]), None);
    assert!(Needles::of(b"short", &[]).is_none());
}

#[test]
fn the_kept_key_is_0600_and_created_once() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let job = JobId::parse("20260101T000000Z-00112233445566778899").unwrap();
    let key = ModelKey::new(String::from_utf8(KEY.to_vec()).unwrap()).unwrap();
    keep(home.path(), &job, &key).unwrap();
    let path = kept_path(home.path(), &job);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(Needles::load(home.path(), &job).is_some());
    assert!(keep(home.path(), &job, &key).is_err(), "created new only");
}

#[test]
fn the_key_with_its_punctuation_changed_is_found_by_its_long_run() {
    // `/` to `_` (to fit a file name) and `+` to `-`: the 19-character run is still there.
    assert_eq!(
        found_in(b"refused: xsk_live_0123456789abcdefXYZ.txt"),
        Some("key fragment")
    );
    // A run shorter than 16 characters is not searched on its own.
    let n = Needles::of(b"sk-short/run-0123456789abcde", &[]).unwrap();
    assert_eq!(n.find(b"0123456789abcde"), None);
}

#[test]
fn a_fragment_that_is_the_job_id_is_not_a_needle_but_the_whole_key_still_is() {
    // A minting command that puts the job id in the key: the job id is in every packet.
    let job = b"20260101T000000Z-00112233445566778899";
    let key = b"sk-scopedKEY7f3a9c-1-20260101T000000Z-00112233445566778899";
    let n = Needles::of(key, &[job]).unwrap();
    assert_eq!(
        n.find(b"{\"job\":\"20260101T000000Z-00112233445566778899\"}"),
        None
    );
    assert_eq!(n.find(key), Some("raw"));
    // Without the job id as public, the same run is a fragment (the rule is the public set).
    let n = Needles::of(key, &[]).unwrap();
    assert_eq!(n.find(b"00112233445566778899"), Some("key fragment"));
}
