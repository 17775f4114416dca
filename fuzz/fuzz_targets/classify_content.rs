//! Hostile paths and contents (YAML, JSON, HCL, Dockerfiles, systemd units, scripts) through the
//! gate's content classification: no panic, content never lowers what the name decided, nothing
//! past the read cap is looked at.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = airlock::fuzzing::classify_content(data);
});
