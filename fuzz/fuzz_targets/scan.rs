//! Any bytes through the secret scanner in every form (text with its decoded and joined
//! pieces, UTF-16, binary printable runs): no panic, and work linear in the input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = airlock_scan::fuzzing::scan(data);
});
