//! A tar.gz read as an artifact and as a bundle (and, gzipped, as a raw tar stream); accepted
//! archives must survive a rewrite by the deterministic writer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = airlock_testkit::core::tar_read(data);
});
