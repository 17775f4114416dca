//! `comments.jsonl`: kept comments pass every rule and survive a write/parse round trip.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = airlock_testkit::core::comments(data);
});
