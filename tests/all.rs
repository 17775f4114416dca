//! End-to-end tests: one binary, one module per concern. They drive the real built
//! `airlock` and `airlock-worker` binaries, with real `git`, in fresh temp dirs.

mod suite;
