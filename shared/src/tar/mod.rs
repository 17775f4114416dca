//! Deterministic tar.gz writer and a limited, link-free reader for bundles and artifacts.
//!
//! Guards against: traversal, absolute paths, links (symbolic, hard, and link targets smuggled
//! in pax or GNU headers), devices, FIFOs, sparse files, duplicate, colliding or unlisted
//! members, bombs (entry count, member and total size, compression ratio), trailing or
//! concatenated data, truncation. Every check has a rule id ([`TarRule`]) that appears in the
//! error message and in the name of a fixture under `shared/tests/fixtures/tar/`.
//! On `Ok`: see [`read::read_members`] and [`read::unpack_into`].
//! Does not check: signatures or digests of the archive (verify those before unpacking), nor
//! what the members contain.
//!
//! The `tar` crate's own `Archive::unpack` / `Entry::unpack` are never used: they create
//! links pointing outside the destination, write FIFOs as files, keep 0777 and silently skip
//! `..` members. We iterate raw headers and apply our own rules instead.

mod names;
pub mod read;
pub mod write;

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::paths::{display_cut, PathError, PathRule};

pub use read::{
    read_members, unpack_into, AllowedNames, Member, MemberKind, ReadSummary, UnpackSummary,
    ARTIFACT_MEMBERS, BUNDLE_FILES_DIR, BUNDLE_TOP_FILES,
};
pub use write::{Cut, DeterministicTarWriter, GZIP_HEADER};

/// Label used in messages until the caller names the archive with [`TarError::with_label`].
pub const DEFAULT_LABEL: &str = "archive";

/// The rule an archive or member broke; [`TarRule::id`] is stable and appears in messages
/// and fixture names (`shared/tests/fixtures/tar/<rule-id>--<defect>.tar.gz`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TarRule {
    /// `tar.link`: a symbolic link, or a link target carried by a pax `linkpath`, a GNU long
    /// link header or the link field of a non-link header.
    Link,
    /// `tar.hardlink`: a hard link.
    Hardlink,
    /// `tar.device`: a character or block device.
    Device,
    /// `tar.fifo`: a FIFO.
    Fifo,
    /// `tar.sparse`: a GNU sparse file (old or pax `GNU.sparse.*` form).
    Sparse,
    /// `tar.entry-type`: any other entry type (contiguous, pax global header, unknown...).
    EntryType,
    /// `tar.pax`: a pax extended header that is malformed, too large, or has a key we do not
    /// accept (only `path`, `mtime`, `atime`, `ctime`, `uid`, `gid`, `uname`, `gname`).
    Pax,
    /// `tar.header`: a malformed header (checksum, magic, numbers, duplicated extensions).
    Header,
    /// `tar.mode`: setuid, setgid or sticky bit in the header mode.
    Mode,
    /// `tar.non-utf8`: a member name that is not UTF-8.
    NonUtf8,
    /// `tar.nul-padding`: a byte other than NUL after the NUL that ends a header's name,
    /// link name or ustar prefix field (`a\0../x`: two readers must never see two names).
    NulPadding,
    /// `tar.<suffix>`: a path rule from [`crate::paths`] (`tar.parent-dir`, `tar.absolute`...).
    Path(PathRule),
    /// `tar.unlisted-member`: a name that is not allowed in this archive.
    UnlistedMember,
    /// `tar.duplicate`: the same member twice.
    Duplicate,
    /// `tar.collision`: two names that differ only by case or Unicode normalisation, or a
    /// regular file that is also used as a directory.
    Collision,
    /// `tar.too-many-entries`: more members than allowed.
    TooManyEntries,
    /// `tar.entry-too-large`: one member larger than allowed.
    EntryTooLarge,
    /// `tar.total-too-large`: all members (or the raw stream) larger than allowed.
    TotalTooLarge,
    /// `tar.ratio`: decompressed bytes per compressed byte above the cap (a gzip bomb).
    Ratio,
    /// `tar.trailing-data`: bytes after the end-of-archive marker or after the gzip stream,
    /// including a second (concatenated) gzip member.
    TrailingData,
    /// `tar.truncated`: the archive or the gzip stream ends early, or the end-of-archive
    /// marker is missing.
    Truncated,
    /// `tar.gzip`: not a gzip stream, or a corrupt one (bad header, deflate data or CRC).
    Gzip,
    /// `tar.out-of-order`: the writer was given a path not strictly after the previous one.
    OutOfOrder,
    /// `tar.size-mismatch`: the writer's reader yielded more or fewer bytes than declared.
    SizeMismatch,
    /// `tar.dest-exists`: the unpack destination already exists.
    DestExists,
    /// `tar.io`: reading or writing local files failed (not the archive's fault).
    Io,
}

impl TarRule {
    /// Every rule (path rules included), for documentation and uniqueness tests.
    pub fn all() -> Vec<TarRule> {
        let mut v = vec![
            TarRule::Link,
            TarRule::Hardlink,
            TarRule::Device,
            TarRule::Fifo,
            TarRule::Sparse,
            TarRule::EntryType,
            TarRule::Pax,
            TarRule::Header,
            TarRule::Mode,
            TarRule::NonUtf8,
            TarRule::NulPadding,
            TarRule::UnlistedMember,
            TarRule::Duplicate,
            TarRule::Collision,
            TarRule::TooManyEntries,
            TarRule::EntryTooLarge,
            TarRule::TotalTooLarge,
            TarRule::Ratio,
            TarRule::TrailingData,
            TarRule::Truncated,
            TarRule::Gzip,
            TarRule::OutOfOrder,
            TarRule::SizeMismatch,
            TarRule::DestExists,
            TarRule::Io,
        ];
        v.extend(PathRule::ALL.iter().map(|r| TarRule::Path(*r)));
        v
    }

    /// Stable rule id, e.g. `tar.parent-dir`.
    pub fn id(self) -> &'static str {
        match self {
            TarRule::Link => "tar.link",
            TarRule::Hardlink => "tar.hardlink",
            TarRule::Device => "tar.device",
            TarRule::Fifo => "tar.fifo",
            TarRule::Sparse => "tar.sparse",
            TarRule::EntryType => "tar.entry-type",
            TarRule::Pax => "tar.pax",
            TarRule::Header => "tar.header",
            TarRule::Mode => "tar.mode",
            TarRule::NonUtf8 => "tar.non-utf8",
            TarRule::NulPadding => "tar.nul-padding",
            TarRule::Path(p) => match p {
                PathRule::Empty => "tar.empty-path",
                PathRule::Control => "tar.control",
                PathRule::Absolute => "tar.absolute",
                PathRule::Backslash => "tar.backslash",
                PathRule::Drive => "tar.drive",
                PathRule::ParentDir => "tar.parent-dir",
                PathRule::Dot => "tar.dot",
                PathRule::EmptyComponent => "tar.empty-component",
                PathRule::GitDir => "tar.git-dir",
                PathRule::TooLong => "tar.path-too-long",
                PathRule::ComponentTooLong => "tar.component-too-long",
                PathRule::TooDeep => "tar.path-too-deep",
            },
            TarRule::UnlistedMember => "tar.unlisted-member",
            TarRule::Duplicate => "tar.duplicate",
            TarRule::Collision => "tar.collision",
            TarRule::TooManyEntries => "tar.too-many-entries",
            TarRule::EntryTooLarge => "tar.entry-too-large",
            TarRule::TotalTooLarge => "tar.total-too-large",
            TarRule::Ratio => "tar.ratio",
            TarRule::TrailingData => "tar.trailing-data",
            TarRule::Truncated => "tar.truncated",
            TarRule::Gzip => "tar.gzip",
            TarRule::OutOfOrder => "tar.out-of-order",
            TarRule::SizeMismatch => "tar.size-mismatch",
            TarRule::DestExists => "tar.dest-exists",
            TarRule::Io => "tar.io",
        }
    }

    /// What the numbers of a [`TarError::TooLarge`] with this rule measure.
    fn measure(self) -> &'static str {
        match self {
            TarRule::TooManyEntries => "too many members",
            TarRule::EntryTooLarge => "member too large (bytes)",
            TarRule::TotalTooLarge => "archive too large (bytes)",
            TarRule::Ratio => "compression ratio too high (a gzip bomb)",
            TarRule::Pax => "pax header too large (bytes)",
            TarRule::Path(p) => p.reason(),
            _ => "too large",
        }
    }
}

impl fmt::Display for TarRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// A tarball broke a rule, or reading/writing it failed.
///
/// Messages look like `artifact.tar.gz: member "../x": rejected (tar.parent-dir): leaves the
/// job directory`. The label is [`DEFAULT_LABEL`] until the caller sets it with
/// [`TarError::with_label`]. Member names are escaped and cut to 200 characters.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TarError {
    /// A member broke a rule.
    Member {
        /// The archive (e.g. `artifact.tar.gz`).
        label: String,
        /// The member name (cut for display).
        member: String,
        /// The rule.
        rule: TarRule,
        /// Why, in words.
        reason: String,
    },
    /// A count or size limit was exceeded.
    TooLarge {
        /// The archive.
        label: String,
        /// The member, when one is concerned.
        member: Option<String>,
        /// The rule.
        rule: TarRule,
        /// The limit.
        limit: u64,
        /// The value seen (at least).
        seen: u64,
    },
    /// The archive as a whole broke a rule (gzip, trailing data, truncation, destination).
    Archive {
        /// The archive.
        label: String,
        /// The rule.
        rule: TarRule,
        /// Why, in words.
        reason: String,
    },
    /// Local I/O failed (`tar.io`): creating a file, writing the output...
    Io {
        /// The archive.
        label: String,
        /// The member, when one is concerned.
        member: Option<String>,
        /// What was being done (may name a local path, never archive content).
        op: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Unpacking failed and removing the half-written destination failed too.
    Cleanup {
        /// The destination that may remain.
        dest: PathBuf,
        /// Why removal failed.
        #[source]
        source: io::Error,
        /// Why unpacking failed.
        cause: Box<TarError>,
    },
}

fn write_member_prefix(
    f: &mut fmt::Formatter<'_>,
    label: &str,
    member: Option<&str>,
) -> fmt::Result {
    match member {
        Some(m) => write!(f, "{label}: member {m:?}: "),
        None => write!(f, "{label}: "),
    }
}

impl fmt::Display for TarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TarError::Member {
                label,
                member,
                rule,
                reason,
            } => {
                write_member_prefix(f, label, Some(member))?;
                write!(f, "rejected ({rule}): {reason}")
            }
            TarError::TooLarge {
                label,
                member,
                rule,
                limit,
                seen,
            } => {
                write_member_prefix(f, label, member.as_deref())?;
                write!(
                    f,
                    "rejected ({rule}): {}: limit {limit}, seen {seen}",
                    rule.measure()
                )
            }
            TarError::Archive {
                label,
                rule,
                reason,
            } => write!(f, "{label}: rejected ({rule}): {reason}"),
            TarError::Io {
                label,
                member,
                op,
                source,
            } => {
                write_member_prefix(f, label, member.as_deref())?;
                write!(f, "{op} failed ({}): {source}", TarRule::Io)
            }
            TarError::Cleanup {
                dest,
                source,
                cause,
            } => write!(
                f,
                "{cause}; removing the partial destination {} failed too ({}): {source}",
                dest.display(),
                TarRule::Io
            ),
        }
    }
}

impl TarError {
    /// The rule that was broken (for [`TarError::Cleanup`], the rule of the original error).
    pub fn rule(&self) -> TarRule {
        match self {
            TarError::Member { rule, .. }
            | TarError::TooLarge { rule, .. }
            | TarError::Archive { rule, .. } => *rule,
            TarError::Io { .. } => TarRule::Io,
            TarError::Cleanup { cause, .. } => cause.rule(),
        }
    }

    /// The member concerned, if any (cut for display).
    pub fn member(&self) -> Option<&str> {
        match self {
            TarError::Member { member, .. } => Some(member),
            TarError::TooLarge { member, .. } | TarError::Io { member, .. } => member.as_deref(),
            TarError::Archive { .. } => None,
            TarError::Cleanup { cause, .. } => cause.member(),
        }
    }

    /// Names the archive in the message (e.g. `artifact.tar.gz`).
    pub fn with_label(self, label: impl Into<String>) -> Self {
        let label = label.into();
        match self {
            TarError::Member {
                member,
                rule,
                reason,
                ..
            } => TarError::Member {
                label,
                member,
                rule,
                reason,
            },
            TarError::TooLarge {
                member,
                rule,
                limit,
                seen,
                ..
            } => TarError::TooLarge {
                label,
                member,
                rule,
                limit,
                seen,
            },
            TarError::Archive { rule, reason, .. } => TarError::Archive {
                label,
                rule,
                reason,
            },
            TarError::Io {
                member, op, source, ..
            } => TarError::Io {
                label,
                member,
                op,
                source,
            },
            TarError::Cleanup {
                dest,
                source,
                cause,
            } => TarError::Cleanup {
                dest,
                source,
                cause: Box::new(cause.with_label(label)),
            },
        }
    }

    /// A member-level rejection; for callers whose visitor rejects a member's content.
    pub fn member_rejected(member: &str, rule: TarRule, reason: impl Into<String>) -> Self {
        TarError::Member {
            label: DEFAULT_LABEL.to_owned(),
            member: display_cut(member),
            rule,
            reason: reason.into(),
        }
    }

    /// A local I/O failure while handling `member`.
    pub fn io(member: Option<&str>, op: impl Into<String>, source: io::Error) -> Self {
        TarError::Io {
            label: DEFAULT_LABEL.to_owned(),
            member: member.map(display_cut),
            op: op.into(),
            source,
        }
    }

    pub(crate) fn archive(rule: TarRule, reason: impl Into<String>) -> Self {
        TarError::Archive {
            label: DEFAULT_LABEL.to_owned(),
            rule,
            reason: reason.into(),
        }
    }

    pub(crate) fn too_large(member: Option<&str>, rule: TarRule, limit: u64, seen: u64) -> Self {
        TarError::TooLarge {
            label: DEFAULT_LABEL.to_owned(),
            member: member.map(display_cut),
            rule,
            limit,
            seen,
        }
    }

    /// Maps a path rule violation of `member` to the matching `tar.*` rule.
    pub(crate) fn from_path(member: &str, e: &PathError) -> Self {
        match e {
            PathError::TooLarge {
                rule, limit, seen, ..
            } => TarError::too_large(Some(member), TarRule::Path(*rule), *limit, *seen),
            PathError::Rejected { rule, .. } => {
                TarError::member_rejected(member, TarRule::Path(*rule), rule.reason())
            }
        }
    }
}

/// A read error inside a visitor (for `?` in closures). The reader records errors of the
/// member stream itself and reports those (with their rule) in preference to this one.
impl From<io::Error> for TarError {
    fn from(source: io::Error) -> Self {
        TarError::io(None, "read", source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_are_unique_and_prefixed() {
        let all = TarRule::all();
        let mut ids: Vec<_> = all.iter().map(|r| r.id()).collect();
        assert!(ids.iter().all(|id| id.starts_with("tar.")));
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), all.len());
    }

    #[test]
    fn message_names_label_member_rule_and_reason() {
        let e = TarError::member_rejected(
            "../x",
            TarRule::Path(PathRule::ParentDir),
            "leaves the job directory",
        )
        .with_label("artifact.tar.gz");
        assert_eq!(
            e.to_string(),
            "artifact.tar.gz: member \"../x\": rejected (tar.parent-dir): leaves the job directory"
        );
        let e = TarError::too_large(Some("files/z"), TarRule::EntryTooLarge, 10, 11);
        assert_eq!(
            e.to_string(),
            "archive: member \"files/z\": rejected (tar.entry-too-large): member too large (bytes): limit 10, seen 11"
        );
    }

    #[test]
    fn hostile_member_names_are_escaped_and_cut() {
        let name = format!("a\u{1b}[2J{}", "b".repeat(500));
        let e = TarError::member_rejected(&name, TarRule::Path(PathRule::Control), "x");
        let s = e.to_string();
        assert!(!s.contains('\u{1b}'));
        assert!(s.len() < 300, "{}", s.len());
    }
}
