//! Format negotiation between the trusted side and a worker of another release.
//!
//! The job token (signed by the trusted key) may name, in its OPTIONAL `formats` claim, the
//! versions of the documents the worker writes that the trusted side reads: packet tags and
//! artifact predicate types. The worker writes the newest of those it can write, or refuses
//! the job before running anything (rule `token.formats`) with a message naming both lists.
//! A token without the claim comes from a trusted side of release 0.6.0 or earlier, whose
//! readers refuse every member they do not know: the worker then writes exactly the members
//! 0.6.0 knows ([`Reader::Release0_6`]).
//!
//! Guards against: a worker writing a document its trusted side cannot read (the job would
//! run, spend model tokens, and be refused at fetch), and a hostile or garbled claim (bounded
//! count and length, checked with the token's other claims).

use super::{COMMENTS_FORMAT, PACKET_FORMAT, PREDICATE_ARTIFACT};

/// The versions this build's trusted side reads, newest first; the trusted side puts them in
/// every token it mints. `docs/FORMATS.md` ("Evolution") lists each and its window.
pub const READS: &[&str] = &[PACKET_FORMAT, PREDICATE_ARTIFACT, COMMENTS_FORMAT];
/// The versions this build's worker writes, newest first, per document.
pub const WRITES: &[&[&str]] = &[&[PACKET_FORMAT], &[PREDICATE_ARTIFACT]];

/// Largest number of entries and longest entry accepted in the `formats` claim.
pub const MAX_FORMATS: usize = 32;
/// Longest entry of the `formats` claim, in bytes.
pub const MAX_FORMAT_BYTES: usize = 128;

/// Who reads what the worker writes, as the token says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// No `formats` claim: a trusted side of release 0.6.0 (or earlier), whose readers refuse
    /// unknown members everywhere. The worker writes only the members that release knows.
    Release0_6,
    /// A trusted side that names its formats and follows the contract of `docs/FORMATS.md`:
    /// unknown members of extensible objects are ignored. The worker writes these versions.
    Contract {
        /// The packet tag to write.
        packet: &'static str,
        /// The artifact predicate type to write.
        artifact_predicate: &'static str,
    },
}

/// The trusted side reads nothing this worker writes (rule `token.formats`).
#[derive(Debug, thiserror::Error)]
#[error("job token: the trusted side reads formats [{theirs}], this airlock-worker {ours_version} writes [{ours}]: no common version of the {document} (token.formats); upgrade the older side")]
pub struct NegotiationError {
    /// The trusted side's list, escaped.
    pub theirs: String,
    /// This worker's version.
    pub ours_version: &'static str,
    /// What this worker writes.
    pub ours: String,
    /// The document without a common version.
    pub document: &'static str,
}

/// Picks what to write for a token's `formats` claim (`None`: the claim is absent).
pub fn negotiate(formats: Option<&[String]>) -> Result<Reader, NegotiationError> {
    let Some(theirs) = formats else {
        return Ok(Reader::Release0_6);
    };
    let pick = |ours: &[&'static str], document: &'static str| {
        ours.iter()
            .copied()
            .find(|v| theirs.iter().any(|t| t == v))
            .ok_or_else(|| NegotiationError {
                theirs: theirs
                    .iter()
                    .take(MAX_FORMATS)
                    .map(|t| super::shown_value(t))
                    .collect::<Vec<_>>()
                    .join(", "),
                ours_version: crate::VERSION,
                ours: WRITES
                    .iter()
                    .flat_map(|w| w.iter())
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", "),
                document,
            })
    };
    let (packets, predicates) = (WRITES[0], WRITES[1]);
    Ok(Reader::Contract {
        packet: pick(packets, "packet")?,
        artifact_predicate: pick(predicates, "artifact statement")?,
    })
}

/// Whether the trusted side reads the `comments.jsonl` artifact member: its token's `formats`
/// claim names [`COMMENTS_FORMAT`]. A trusted side that does not (0.6.0 and earlier) refuses an
/// artifact member it does not know, so the worker leaves the member out for it.
pub fn reads_comments(formats: Option<&[String]>) -> bool {
    formats.is_some_and(|f| f.iter().any(|v| v == COMMENTS_FORMAT))
}

/// Whether `formats` is a claim of an acceptable shape: at most `MAX_FORMATS` entries of
/// 1..=`MAX_FORMAT_BYTES` printable ASCII bytes without spaces.
pub fn formats_claim_well_formed(formats: &[String]) -> bool {
    formats.len() <= MAX_FORMATS
        && formats.iter().all(|f| {
            !f.is_empty() && f.len() <= MAX_FORMAT_BYTES && f.bytes().all(|c| c.is_ascii_graphic())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn no_claim_means_the_previous_release() {
        assert_eq!(negotiate(None).unwrap(), Reader::Release0_6);
    }

    #[test]
    fn the_newest_common_version_is_written_and_unknown_newer_ones_are_skipped() {
        let theirs = v(&[
            "airlock.packet/v9",
            PACKET_FORMAT,
            "urn:airlock:predicate:artifact:v9",
            PREDICATE_ARTIFACT,
        ]);
        assert_eq!(
            negotiate(Some(&theirs)).unwrap(),
            Reader::Contract {
                packet: PACKET_FORMAT,
                artifact_predicate: PREDICATE_ARTIFACT
            }
        );
    }

    #[test]
    fn no_common_version_refuses_naming_both_sides() {
        let theirs = v(&["airlock.packet/v2", PREDICATE_ARTIFACT, "\u{1b}[31m"]);
        let e = negotiate(Some(&theirs)).unwrap_err().to_string();
        assert!(e.contains("(token.formats)"), "{e}");
        assert!(e.contains("airlock.packet/v2"), "{e}");
        assert!(e.contains(PACKET_FORMAT), "{e}");
        assert!(e.contains(crate::VERSION), "{e}");
        assert!(e.contains("of the packet"), "{e}");
        assert!(!e.contains('\u{1b}'), "escape reached the message: {e}");
    }

    #[test]
    fn claim_shape_is_bounded() {
        assert!(formats_claim_well_formed(&v(READS)));
        assert!(formats_claim_well_formed(&[]));
        assert!(!formats_claim_well_formed(&v(&[""])));
        assert!(!formats_claim_well_formed(&v(&["a b"])));
        assert!(!formats_claim_well_formed(&["x".repeat(129)]));
        assert!(!formats_claim_well_formed(&vec!["x".to_owned(); 33]));
    }
}
