//! A PASETO v4.public job token verified at a fixed time, then the same bytes as a payload signed
//! by the trusted fuzz key; accepted claims must mint again.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = airlock_testkit::core::token(data);
});
