//! The `classify_content` target: hostile paths and file contents (YAML, JSON, HCL,
//! Dockerfiles, systemd units, shebang scripts, anything) through the gate's content layer
//! ([`content::detect`]), the name and content layers together ([`classify_path`]) and the
//! whole classification of a change ([`classify_change`], with an empty tree).
//!
//! Input: text. The first line is the first file's path, `=== PATH` starts the next file (at
//! most [`MAX_FILES`]); the lines between are the file's bytes. A path ending in ` [x]` is
//! executable (as in `tests/data/classify/content.txt`).
//! Invariants asserted:
//! - content never lowers what the name decided: a name that decided `ci`, `iac`, `deps`,
//!   `build`, `governance` or `agent` keeps its bucket and rule; from `src` or `other` the
//!   bucket with content is at least as risky as with `None`; a content hit is always one of
//!   the buckets a person must review; the unclaimed-configuration fallback without content
//!   ([`UNCLAIMED_RULE`], which fails closed until the content says data or a kind) is no
//!   decision of the name: from it, content may lead anywhere `other` may;
//! - the same holds for [`classify_change`], whose tree layers may also raise `tests` and
//!   `docs` into a reviewed bucket and a `build` file into `ci`; with no content and an empty
//!   tree it says what the name says;
//! - bounded work (on one input in [`BOUNDED_EVERY`]): the first file's content repeated past the read cap and followed by a
//!   Kubernetes object, a Terraform block, a systemd unit and a Dockerfile classifies exactly
//!   as its first [`HEAD_MAX_BYTES`] (resp. [`CONTENT_HINT_MAX_BYTES`]) do: nothing past the
//!   cap is looked at.

use crate::classify::content::{self, HEAD_MAX_BYTES};
use crate::classify::reach::{Change, MemTree};
use crate::classify::{
    classify_change, classify_path, Bucket, Classification, Layer, CONTENT_HINT_MAX_BYTES,
    OTHER_RULE, UNCLAIMED_RULE,
};

/// Files per input, at most.
pub const MAX_FILES: usize = 8;

/// The bounded-work check runs on inputs whose length is a multiple of this.
pub const BOUNDED_EVERY: usize = 8;

/// What lies past the cap in the bounded-work check: one shape of each kind the layer knows.
const PAST_THE_CAP: &[u8] =
    b"\n---\napiVersion: v1\nkind: Pod\n\nresource \"aws_iam_role\" \"x\" {\n\
\n[Service]\nExecStart=/bin/sh\n\nFROM alpine\nRUN id\n\nservices:\n  x:\n    image: y\n";

/// Whether content changed any answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Some file's content moved it into another bucket or rule.
    Raised,
    /// Every file classified by its name alone.
    Kept,
}

/// One file of an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Repository-relative path (untrusted).
    pub path: String,
    /// Executable bit after the change.
    pub executable: bool,
    /// Content after the change.
    pub content: Vec<u8>,
}

fn header(line: &[u8]) -> (String, bool) {
    let path = String::from_utf8_lossy(line).into_owned();
    match path.strip_suffix(" [x]") {
        Some(p) => (p.to_owned(), true),
        None => (path, false),
    }
}

/// Splits an input into its files (see the module doc).
pub fn parse_case(data: &[u8]) -> Vec<File> {
    let mut files: Vec<File> = Vec::new();
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        let head = if i == 0 {
            Some(line)
        } else {
            line.strip_prefix(b"=== ")
        };
        if let Some(head) = head {
            if files.len() == MAX_FILES {
                break;
            }
            let (path, executable) = header(head);
            files.push(File {
                path,
                executable,
                content: Vec::new(),
            });
        } else if let Some(f) = files.last_mut() {
            f.content.extend_from_slice(line);
            f.content.push(b'\n');
        }
    }
    files
}

/// How much review a bucket asks for: the buckets a person must review, then `src`, `tests`
/// and `docs`, then `other` (a shebang moves `other` into `src`).
pub fn risk(bucket: Bucket) -> u8 {
    match bucket {
        Bucket::Other => 0,
        Bucket::Src | Bucket::Tests | Bucket::Docs => 1,
        _ => 2,
    }
}

/// Buckets only the name decides: content and the tree never move a path out of them.
fn final_by_name(bucket: Bucket) -> bool {
    matches!(
        bucket,
        Bucket::Ci | Bucket::Iac | Bucket::Deps | Bucket::Governance | Bucket::Agent
    )
}

/// What the name alone decided: the fallback that stands in for unknown content decided
/// nothing (it is `other.unmatched` until the content is read).
fn by_name(path: &str) -> Classification {
    let name = classify_path(path, None);
    if name.rule == UNCLAIMED_RULE {
        Classification {
            bucket: Bucket::Other,
            rule: OTHER_RULE,
        }
    } else {
        name
    }
}

/// The content layer's rule: `with` (name and content) never lowers `name` (name alone).
fn check_content_layer(path: &str, name: Classification, with: Classification) {
    if final_by_name(name.bucket)
        || matches!(name.bucket, Bucket::Build | Bucket::Tests | Bucket::Docs)
    {
        assert_eq!(
            with, name,
            "{path:?}: content moved a path out of what its name decided"
        );
    }
    assert!(
        risk(with.bucket) >= risk(name.bucket),
        "{path:?}: content lowered {name:?} to {with:?}"
    );
}

/// Content repeated to exactly `cap` bytes, then [`PAST_THE_CAP`].
fn past_the_cap(content: &[u8], cap: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(cap + PAST_THE_CAP.len());
    while out.len() < cap {
        out.extend_from_slice(content);
        out.push(b'\n');
    }
    out.truncate(cap);
    out.extend_from_slice(PAST_THE_CAP);
    out
}

fn check_bounded(f: &File) {
    let padded = past_the_cap(&f.content, HEAD_MAX_BYTES);
    assert_eq!(
        content::detect(&f.path, &padded, f.executable),
        content::detect(&f.path, &padded[..HEAD_MAX_BYTES], f.executable),
        "{:?}: the content layer looked past its {HEAD_MAX_BYTES}-byte cap",
        f.path
    );
    let padded = past_the_cap(&f.content, CONTENT_HINT_MAX_BYTES);
    assert_eq!(
        classify_path(&f.path, Some(padded.as_slice())),
        classify_path(&f.path, Some(&padded[..CONTENT_HINT_MAX_BYTES])),
        "{:?}: classification looked past its {CONTENT_HINT_MAX_BYTES}-byte cap",
        f.path
    );
}

/// The whole change's rule (name, content and tree layers, see [`classify_change`]).
fn check_change(files: &[File]) {
    let tree = MemTree::new();
    let changes: Vec<Change<'_>> = files
        .iter()
        .map(|f| Change {
            path: &f.path,
            new: Some(f.content.as_slice()),
            executable: f.executable,
        })
        .collect();
    let with = classify_change(&changes, &tree);
    let without: Vec<Change<'_>> = changes.iter().map(|c| Change { new: None, ..*c }).collect();
    let bare = classify_change(&without, &tree);
    assert_eq!(with.len(), files.len(), "one answer per change");
    for ((f, w), b) in files.iter().zip(&with).zip(&bare) {
        assert_eq!(
            b.class,
            classify_path(&f.path, None),
            "{:?}: no content, empty tree, yet not the name's answer",
            f.path
        );
        let name = by_name(&f.path);
        if final_by_name(name.bucket) {
            assert_eq!(w.class, name, "{:?}: a final name bucket was moved", f.path);
            assert_eq!(w.layer, Layer::Name, "{:?}", f.path);
        }
        if name.bucket == Bucket::Build {
            assert!(
                w.class == name || (w.class.bucket == Bucket::Ci && w.layer == Layer::Tree),
                "{:?}: a build path became {w:?}",
                f.path
            );
        }
        assert!(
            risk(w.class.bucket) >= risk(name.bucket),
            "{:?}: the change lowered {name:?} to {w:?}",
            f.path
        );
        if w.layer == Layer::Name {
            assert_eq!(
                w.class,
                classify_path(&f.path, None),
                "{:?}: layer says name, class differs",
                f.path
            );
        }
    }
}

/// The `classify_content` target: classifies every file of `data` and checks the invariants.
pub fn classify_content(data: &[u8]) -> Outcome {
    let files = parse_case(data);
    let mut raised = false;
    for f in &files {
        if let Some(hit) = content::detect(&f.path, &f.content, f.executable) {
            assert_eq!(
                risk(hit.bucket),
                2,
                "{:?}: a content hit into {hit:?}",
                f.path
            );
        }
        let name = by_name(&f.path);
        let with = classify_path(&f.path, Some(f.content.as_slice()));
        check_content_layer(&f.path, name, with);
        raised |= with != name;
    }
    // Two reads of a full window per check: done on one input in BOUNDED_EVERY (by length), so
    // the fuzzer keeps its pace on the other invariants; the unit tests check every seed.
    if let Some(first) = files
        .first()
        .filter(|_| data.len().is_multiple_of(BOUNDED_EVERY))
    {
        check_bounded(first);
    }
    check_change(&files);
    if raised {
        Outcome::Raised
    } else {
        Outcome::Kept
    }
}

#[cfg(test)]
#[path = "classify_content_tests.rs"]
mod tests;
