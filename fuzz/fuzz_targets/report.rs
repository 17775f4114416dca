//! A review page built from hostile worker text through the HTML and Markdown reports: no
//! `<script`, no raw bidi control, no `<` unescaped, no code span or fence closed by the input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = airlock::fuzzing::report(data);
});
