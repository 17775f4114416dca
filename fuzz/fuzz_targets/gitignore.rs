//! Any `.gitignore` files and paths through the worker's matcher: no panic, nothing
//! re-included below an ignored directory, each file rules only its own subtree.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = airlock_worker::fuzzing::gitignore(data);
});
