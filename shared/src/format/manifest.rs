//! `manifest.json`: what a bundle holds, file by file, and what was left out or redacted.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{check_tag, parse_json, FormatError, MAX_MANIFEST_BYTES};
use crate::digest::Sha256Digest;

/// The `format` tag of this manifest version.
pub const MANIFEST_FORMAT: &str = "airlock.manifest/v1";

/// The manifest of a bundle. Content-addressed: it names no job, host or time, so the same
/// revision, options and request pack to the same bytes. Extensible (`docs/FORMATS.md`,
/// "Evolution"): a member this version does not know is ignored; `files[]` is closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`MANIFEST_FORMAT`].
    pub format: String,
    /// The program that packed the bundle.
    pub packer: Packer,
    /// Where the tree came from.
    pub source: Source,
    /// SHA-256 of `request.json` in the same bundle.
    pub request_sha256: Sha256Digest,
    /// Every packed file, sorted by path (bytewise), as stored under `files/`.
    pub files: Vec<FileEntry>,
    /// Every redaction applied, sorted by path then line.
    pub redactions: Vec<Redaction>,
    /// Paths left out, counted per rule id (paths are not listed).
    pub skipped: BTreeMap<String, u64>,
    /// Files left out because of what they hold (an archive, or a finding that could not be
    /// redacted in place), sorted by path then rule. Absent when empty, so a manifest
    /// without omissions reads as it did before the field existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub omitted: Vec<Omission>,
}

/// The packer's name and version. Extensible.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Packer {
    /// `airlock`.
    pub name: String,
    /// Its version.
    pub version: String,
}

/// The source revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// A name for the repository (not a local path).
    pub repo: String,
    /// The full commit id that was packed.
    pub revision: String,
    /// The commit's tree id.
    pub tree: String,
}

/// One packed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    /// Relative path (the bundle member is `files/<path>`).
    pub path: String,
    /// Size in bytes as packed (after redaction).
    pub size: u64,
    /// `"0644"` or `"0755"`.
    pub mode: String,
    /// SHA-256 of the packed content.
    pub sha256: Sha256Digest,
}

impl FileEntry {
    /// Whether the file is packed executable.
    pub fn executable(&self) -> bool {
        self.mode == "0755"
    }
}

/// One redacted secret: where and which rule, never the value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redaction {
    /// File path.
    pub path: String,
    /// 1-based line where the secret started.
    pub line: u64,
    /// Rule id.
    pub rule: String,
    /// Short fingerprint of the value (not reversible for a real secret).
    pub fingerprint: String,
}

/// One file left out for its content: which rule, and the finding's fingerprint (never the
/// value). A file with several findings has one entry per finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Omission {
    /// File path.
    pub path: String,
    /// `pack.archive` (archives are never packed), or the id of the rule whose finding
    /// could not be redacted in place (a binary or UTF-16 file).
    pub rule: String,
    /// Short fingerprint of the finding's value; absent for `pack.archive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

impl Manifest {
    /// Parses and checks a manifest.
    pub fn from_json(bytes: &[u8]) -> Result<Manifest, FormatError> {
        let m: Manifest = parse_json(bytes, MAX_MANIFEST_BYTES, "manifest.json")?;
        check_tag("manifest.json", &m.format, MANIFEST_FORMAT)?;
        let mut prev: Option<&str> = None;
        for f in &m.files {
            if f.mode != "0644" && f.mode != "0755" {
                return Err(FormatError::Field {
                    what: "manifest.json",
                    field: "files[].mode",
                    rule: "manifest.mode",
                    reason: format!("{}: mode must be 0644 or 0755", f.path),
                });
            }
            crate::paths::check_relative_path(&f.path, 4096, 64).map_err(|e| {
                FormatError::Field {
                    what: "manifest.json",
                    field: "files[].path",
                    rule: "manifest.path",
                    reason: e.to_string(),
                }
            })?;
            if prev.is_some_and(|p| p.as_bytes() >= f.path.as_bytes()) {
                return Err(FormatError::Field {
                    what: "manifest.json",
                    field: "files[].path",
                    rule: "manifest.order",
                    reason: format!("{}: files must be strictly sorted", f.path),
                });
            }
            prev = Some(&f.path);
        }
        Ok(m)
    }

    /// Looks a file up by path (binary search; files are sorted).
    pub fn file(&self, path: &str) -> Option<&FileEntry> {
        self.files
            .binary_search_by(|f| f.path.as_bytes().cmp(path.as_bytes()))
            .ok()
            .and_then(|i| self.files.get(i))
    }
}
