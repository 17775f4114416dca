//! A DSSE envelope verified against the pinned fuzz key, then the same bytes as a payload signed by
//! that key; accepted statements must be canonical and re-sign.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = airlock_testkit::core::dsse_envelope(data);
});
