//! Steps 2 and 3: the patch the fetch kept from the verified artifact, checked against the
//! signed packet and read by the strict parser.
//!
//! Guards against: an artifact without `patch.diff` or with one over its cap
//! (`artifact-incomplete`), a patch that is not the one the packet signs
//! (`diff-digest-mismatch`), and everything the strict parser refuses (`diff-refused`,
//! `binary-patch-refused`, `mode-change-symlink`, with the parser's rule id in the reason).
//! Does not check: what the patch changes (the later steps do).

use airlock_core::diff::{self, parse_patch, DiffError, DiffLimits, ParsedPatch};
use airlock_core::digest::Sha256Digest;

use super::policy::Verdict;
use super::Stop;
use crate::fetch::MAX_PATCH_BYTES;
use crate::reasons::ReasonCode;
use crate::report::Reason;

/// Step 2: the fetch read the artifact through the safe reader (every tar rule, exact member
/// names) and re-hashed it on the way; `patch.diff` must be there and within the cap.
pub fn patch_member(patch: Option<Vec<u8>>) -> Result<Vec<u8>, Reason> {
    let incomplete = |detail: String, rule: &str| {
        Reason::new(ReasonCode::ArtifactIncomplete, Verdict::Reject, detail).rule(rule)
    };
    match patch {
        None => Err(incomplete(
            "artifact.tar.gz has no patch.diff".to_owned(),
            "artifact.missing-member",
        )),
        Some(bytes) if bytes.len() as u64 > MAX_PATCH_BYTES => Err(incomplete(
            format!("patch.diff is larger than {MAX_PATCH_BYTES} bytes"),
            diff::rule::TOO_LARGE,
        )),
        Some(bytes) => Ok(bytes),
    }
}

/// Step 3: `patch_bytes` must hash to the packet's `signed` digest, then pass the strict
/// parser.
pub fn parse_signed_patch(patch_bytes: &[u8], signed: Sha256Digest) -> Result<ParsedPatch, Stop> {
    let digest = Sha256Digest::of_bytes(patch_bytes);
    if digest != signed {
        return Err(Stop::Reject(Reason::new(
            ReasonCode::DiffDigestMismatch,
            Verdict::Reject,
            format!("patch.diff hashes to sha256:{digest}; the signed packet says sha256:{signed}"),
        )));
    }
    parse_patch(patch_bytes, &DiffLimits::default()).map_err(|e| Stop::Reject(diff_refusal(&e)))
}

/// A strict-parser refusal of `patch.diff`, as a reject:
/// `diff.binary` → `binary-patch-refused`; `diff.mode` naming a symlink → `mode-change-symlink`;
/// every other rule (`diff.git-dir`, `diff.parent-dir`, `diff.abs-path`, …) → `diff-refused`.
/// The rule id is kept in [`Reason::rule`].
pub fn diff_refusal(e: &DiffError) -> Reason {
    let rule = e.rule();
    let text = e.to_string();
    let code = match rule {
        diff::rule::BINARY => ReasonCode::BinaryPatchRefused,
        diff::rule::MODE if text.contains("(symlink)") => ReasonCode::ModeChangeSymlink,
        _ => ReasonCode::DiffRefused,
    };
    let mut reason = Reason::new(code, Verdict::Reject, format!("patch.diff: {text}")).rule(rule);
    reason.path = match e {
        DiffError::Rejected { section, .. } if section != "-" => Some(section.clone()),
        _ => None,
    };
    reason
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modify(path: &str) -> String {
        format!("diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n")
    }

    #[test]
    fn diff_refusals_map_binary_and_symlink_to_their_own_codes() {
        let bin =
            "diff --git a/a.bin b/a.bin\nnew file mode 100644\nGIT binary patch\nliteral 1\nAQ\n\n";
        let e = parse_patch(bin.as_bytes(), &DiffLimits::default()).unwrap_err();
        assert_eq!(diff_refusal(&e).code, ReasonCode::BinaryPatchRefused);
        let link = "diff --git a/l b/l\nold mode 100644\nnew mode 120000\n";
        let e = parse_patch(link.as_bytes(), &DiffLimits::default()).unwrap_err();
        let r = diff_refusal(&e);
        assert_eq!(
            (r.code, r.rule.as_deref()),
            (ReasonCode::ModeChangeSymlink, Some("diff.mode"))
        );
        let git = modify(".git/config");
        let e = parse_patch(git.as_bytes(), &DiffLimits::default()).unwrap_err();
        let r = diff_refusal(&e);
        assert_eq!(
            (r.code, r.rule.as_deref()),
            (ReasonCode::DiffRefused, Some("diff.git-dir"))
        );
        let up = modify("../x");
        let e = parse_patch(up.as_bytes(), &DiffLimits::default()).unwrap_err();
        assert_eq!(diff_refusal(&e).rule.as_deref(), Some("diff.parent-dir"));
    }
}
