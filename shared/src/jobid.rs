//! Job identifiers: a UTC time prefix and 80 random bits, e.g. `20261129T082407Z-3f9a0c1d2e4b5a6978c0`.
//!
//! Guards against: job ids used as path or object-key components carrying separators, dots or
//! unexpected characters. A `JobId` can only hold the exact shape below, so joining it into an
//! object key or a directory name cannot escape.

use std::fmt;

/// Number of random bytes in a job id (80 bits).
pub const RANDOM_BYTES: usize = 10;
const TIME_LEN: usize = 16; // YYYYMMDDTHHMMSSZ
const LEN: usize = TIME_LEN + 1 + RANDOM_BYTES * 2;

/// Why a string is not a job id.
#[derive(Debug, thiserror::Error)]
#[error(
    "job id {shown:?} is malformed (jobid.shape): expected YYYYMMDDTHHMMSSZ-<20 lowercase hex>"
)]
pub struct JobIdError {
    /// The offending value, truncated to 64 characters.
    pub shown: String,
}

/// A validated job id.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct JobId(String);

impl JobId {
    /// Makes a job id from the current time (unix seconds, passed in) and random bytes.
    pub fn new(now_unix: u64, random: [u8; RANDOM_BYTES]) -> JobId {
        let (y, mo, d, h, mi, s) = civil_from_unix(now_unix);
        JobId(format!(
            "{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z-{}",
            hex::encode(random)
        ))
    }

    /// Parses and validates a job id.
    pub fn parse(s: &str) -> Result<JobId, JobIdError> {
        let err = || JobIdError {
            shown: s.chars().take(64).collect(),
        };
        let b = s.as_bytes();
        if b.len() != LEN {
            return Err(err());
        }
        let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        let ok = digits(0..8)
            && b[8] == b'T'
            && digits(9..15)
            && b[15] == b'Z'
            && b[16] == b'-'
            && b[17..]
                .iter()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c));
        if ok {
            Ok(JobId(s.to_owned()))
        } else {
            Err(err())
        }
    }

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for JobId {
    type Err = JobIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JobId::parse(s)
    }
}

impl<'de> serde::Deserialize<'de> for JobId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        JobId::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Converts unix seconds to (year, month, day, hour, minute, second) in UTC.
/// Howard Hinnant's `civil_from_days`, valid for every date after 1970.
pub fn civil_from_unix(t: u64) -> (u64, u64, u64, u64, u64, u64) {
    let days = t / 86_400;
    let rem = t % 86_400;
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d, rem / 3600, (rem % 3600) / 60, rem % 60)
}

/// Formats unix seconds as RFC 3339 UTC, e.g. `2026-11-29T08:24:07Z`.
pub fn rfc3339_utc(t: u64) -> String {
    let (y, mo, d, h, mi, s) = civil_from_unix(t);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_formats_time() {
        let id = JobId::new(1_795_940_647, [0xab; RANDOM_BYTES]);
        assert_eq!(id.as_str(), "20261129T082407Z-abababababababababab");
        assert_eq!(JobId::parse(id.as_str()).unwrap(), id);
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn rejects_separators_and_wrong_shapes() {
        for bad in [
            "",
            "../20261129T082407Z-abababababababab",
            "20261129T082407Z-ABABABABABABABABABAB",
            "20261129T082407Z/abababababababababab",
            "20261129T082407Z-ababababababababab/.",
            "2026112xT082407Z-abababababababababab",
        ] {
            assert!(JobId::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
