//! The one wall clock every crate reads: unix seconds and milliseconds.
//!
//! Guards against: copies of the same conversion drifting apart (one saturating, another
//! panicking on a clock before 1970). A clock before the epoch reads as 0, which every
//! expiry check treats as long ago; callers that must refuse such a clock check for 0.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the unix epoch (0 if the clock is before it).
pub fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Milliseconds since the unix epoch (0 if the clock is before it; saturates far ahead).
pub fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_milliseconds_agree() {
        let (s, ms) = (now_unix(), now_unix_ms());
        assert!(s > 1_600_000_000, "a clock after 2020: {s}");
        assert!(ms / 1000 >= s && ms / 1000 <= s + 1, "{s} s vs {ms} ms");
    }
}
