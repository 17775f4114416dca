//! `request.json`: accepted requests must re-encode to bytes that parse to an equal value.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = airlock_testkit::core::request(data);
});
