//! Arbitrary text through every output of `airlock_core::text`: every hidden character marked,
//! no control byte on a terminal line, nothing unescaped in HTML, no table cell split, no code
//! span or fence closed early.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    airlock_testkit::core::text(data);
});
