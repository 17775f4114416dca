//! Unit tests of the store facade (memory and file:// backends, prefixes, capped reads).

use super::*;

fn memory_with_prefix(prefix: &str) -> Store {
    Store {
        inner: Arc::new(object_store::memory::InMemory::new()),
        signer: None,
        local_root: None,
        local: None,
        prefix: ObjPath::from(prefix),
        rt: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
        url: format!("memory:///{prefix}"),
        quiet: true,
    }
}

fn noise(n: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn only_local_and_memory_creates_count_as_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let url = airlock_core::fileurl::path_to_file_url(dir.path()).unwrap();
    let local = Store::open(&url).unwrap();
    assert!(local.create_is_atomic());
    // Both creates of one key: the first wins, the second reports it exists.
    assert!(local.put_new("ledger/x", b"1").unwrap());
    assert!(!local.put_new("ledger/x", b"2").unwrap());
    assert_eq!(
        local.get_bytes("ledger/x", 8).unwrap().as_deref(),
        Some(&b"1"[..])
    );
    assert!(Store::open("memory://").unwrap().create_is_atomic());
    let s3 = Store::from_parts(
        Arc::new(object_store::memory::InMemory::new()),
        None,
        "s3://bucket/prefix",
    )
    .unwrap();
    assert!(!s3.create_is_atomic());
}

#[test]
fn large_file_goes_up_in_parts_and_comes_back_identical() {
    let store = Store::open("memory://").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("big");
    let data = noise(PART_BYTES * 2 + 12_345);
    std::fs::write(&src, &data).unwrap();
    store.put_file("inbox/j/bundle.tar.gz", &src).unwrap();
    let dest = dir.path().join("back");
    let (digest, n) = store
        .get_to_file("inbox/j/bundle.tar.gz", u64::MAX, &dest)
        .unwrap()
        .unwrap();
    assert_eq!(n, data.len() as u64);
    assert_eq!(digest, Sha256Digest::of_bytes(&data));
    assert_eq!(std::fs::read(&dest).unwrap(), data);
}

#[test]
fn reads_over_the_cap_fail_with_store_too_large_and_leave_no_file() {
    // Through object_store (memory) and the file store's in-place path alike.
    let root = tempfile::tempdir().unwrap();
    let file_url = airlock_core::fileurl::path_to_file_url(root.path()).unwrap();
    for url in ["memory://", file_url.as_str()] {
        let store = Store::open(url).unwrap();
        store
            .put_bytes("drop/j/artifact.tar.gz", &[7u8; 100])
            .unwrap();
        let err = store
            .get_bytes("drop/j/artifact.tar.gz", 99)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("store.too-large") && err.contains("99"),
            "{url}: {err}"
        );
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("a");
        assert!(store
            .get_to_file("drop/j/artifact.tar.gz", 99, &dest)
            .is_err());
        assert!(
            !dest.exists(),
            "{url}: a capped download left a file behind"
        );
        assert_eq!(store.get_bytes("drop/j/nothing", 99).unwrap(), None);
    }
}

#[test]
fn put_new_writes_once() {
    let store = Store::open("memory://").unwrap();
    assert!(store.put_new("records/j.dsse.json", b"first").unwrap());
    assert!(!store.put_new("records/j.dsse.json", b"second").unwrap());
    assert_eq!(
        store
            .get_bytes("records/j.dsse.json", 100)
            .unwrap()
            .unwrap(),
        b"first"
    );
}

#[test]
fn prefix_scopes_every_key_and_a_sibling_prefix_is_invisible() {
    let store = memory_with_prefix("team/airlock");
    store.put_bytes("drop/j/artifact.dsse.json", b"x").unwrap();
    // A neighbour whose prefix starts with ours, written straight to the bucket.
    let bucket = store.inner.clone();
    store
        .rt
        .block_on(bucket.put(
            &ObjPath::from("team/airlock-other/drop/k/artifact.dsse.json"),
            PutPayload::from_static(b"y"),
        ))
        .unwrap();
    let keys: Vec<String> = store
        .list("drop/")
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    assert_eq!(keys, vec!["drop/j/artifact.dsse.json".to_owned()]);
    assert_eq!(store.list("").unwrap().len(), 1);
    store.delete("drop/j/artifact.dsse.json").unwrap();
    store.delete("drop/j/artifact.dsse.json").unwrap(); // absent is fine
    assert!(store.list("drop/").unwrap().is_empty());
}

#[test]
fn file_store_hands_out_paths_and_memory_store_refuses_worker_urls() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let url = airlock_core::fileurl::path_to_file_url(&root).unwrap();
    let store = Store::open(&url).unwrap();
    assert_eq!(store.local_root(), Some(root.as_path()));
    let u = store
        .worker_url(
            "drop/j/artifact.tar.gz",
            Access::PutNew,
            Duration::from_secs(60),
        )
        .unwrap();
    assert_eq!(
        airlock_core::fileurl::file_url_to_path(&u).unwrap(),
        root.join("drop/j/artifact.tar.gz")
    );
    let mem = Store::open("memory://").unwrap();
    assert!(mem.local_root().is_none());
    let err = mem
        .worker_url(
            "inbox/j/bundle.tar.gz",
            Access::Get,
            Duration::from_secs(60),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("memory://"), "{err}");
}
