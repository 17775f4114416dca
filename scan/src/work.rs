//! A count of the scanner's own work, for the fuzz harness's linear-time check
//! (`fuzzing.rs`): the bytes of every text handed to the keyword pass, and the bytes walked
//! by the scanner's own loops outside the automata (literal and percent-escape walks, line
//! placement, decoding, printable runs).
//!
//! Guards against: a pass that re-walks the same bytes once per hit (quadratic in a
//! hostile file) going unnoticed; the counts are deterministic, so a bound on them cannot
//! flake under load as a time bound would.
//! Compiled to nothing outside `cfg(fuzzing)` and tests.

/// What one scan cost, in bytes.
#[cfg(any(fuzzing, test))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// Bytes of every text scanned by the keyword pass (the file, decoded pieces, runs).
    pub text: u64,
    /// Bytes walked by the scanner's own loops.
    pub walk: u64,
}

#[cfg(any(fuzzing, test))]
thread_local! {
    static WORK: std::cell::Cell<Work> = const { std::cell::Cell::new(Work { text: 0, walk: 0 }) };
}

/// Counts `bytes` of text handed to the keyword pass.
#[inline]
pub(crate) fn text(bytes: usize) {
    #[cfg(any(fuzzing, test))]
    WORK.with(|w| {
        let mut v = w.get();
        v.text = v.text.saturating_add(bytes as u64);
        w.set(v);
    });
    let _ = bytes;
}

/// Counts `bytes` walked by one of the scanner's own loops.
#[inline]
pub(crate) fn walk(bytes: usize) {
    #[cfg(any(fuzzing, test))]
    WORK.with(|w| {
        let mut v = w.get();
        v.walk = v.walk.saturating_add(bytes as u64);
        w.set(v);
    });
    let _ = bytes;
}

/// Runs `f` and returns what it cost on this thread.
#[cfg(any(fuzzing, test))]
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, Work) {
    let before = WORK.with(|w| w.replace(Work::default()));
    let r = f();
    let spent = WORK.with(|w| w.replace(before));
    (r, spent)
}
