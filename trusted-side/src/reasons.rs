//! Every reason code the trusted side can give for a verdict: one enum, one stable kebab-case
//! id each, as `TarRule` does for tar rules. Fetch refusals, gate checks and policy reasons
//! all draw from [`ReasonCode`]; the ledger, the report and `docs/FORMATS.md` ("Gate decisions
//! and reason codes") use its ids. Adding a code is one line in the table below (a test keeps
//! the ids unique and documented).

use std::fmt;

/// Which hop gives a code: a refusal of the fetch is recorded as a `reject` of stage `fetch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The fetch refused the artifact.
    Fetch,
    /// The gate's checks or the policy.
    Gate,
    /// Fleet dispatch (`airlock watch` with enrolled workers): what it refused a worker.
    Fleet,
}

impl Stage {
    /// As written in the ledger's `reject` entries.
    pub const fn as_str(self) -> &'static str {
        match self {
            Stage::Fetch => "fetch",
            Stage::Gate => "gate",
            Stage::Fleet => "fleet",
        }
    }
}

macro_rules! reason_codes {
    ($($variant:ident = $id:literal, $stage:ident, $doc:literal;)*) => {
        /// Why a reason was given. [`ReasonCode::code`] is stable: it is in ledgers and reports.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ReasonCode {
            $(#[doc = $doc] $variant,)*
        }

        impl ReasonCode {
            /// Every code, in documentation order.
            #[cfg_attr(not(test), allow(dead_code, reason = "read by the uniqueness and docs tests"))]
            pub const ALL: &'static [ReasonCode] = &[$(ReasonCode::$variant,)*];

            /// The stable kebab-case id.
            pub const fn code(self) -> &'static str {
                match self {
                    $(ReasonCode::$variant => $id,)*
                }
            }

            /// The hop that gives it.
            pub const fn stage(self) -> Stage {
                match self {
                    $(ReasonCode::$variant => Stage::$stage,)*
                }
            }
        }
    };
}

reason_codes! {
    CiPathChanged = "ci-path-changed", Gate, "A `ci` path changed.";
    IacPathChanged = "iac-path-changed", Gate, "An `iac` path changed.";
    DepsPathChanged = "deps-path-changed", Gate, "A `deps` path changed.";
    BuildPathChanged = "build-path-changed", Gate, "A `build` path changed.";
    GovernancePathChanged = "governance-path-changed", Gate, "A `governance` path changed.";
    AgentConfigChanged = "agent-config-changed", Gate, "An `agent` path changed.";
    SrcPathChanged = "src-path-changed", Gate, "A `src` path changed.";
    TestsPathChanged = "tests-path-changed", Gate, "A `tests` path changed.";
    DocsPathChanged = "docs-path-changed", Gate, "A `docs` path changed.";
    OtherPathChanged = "other-path-changed", Gate, "An `other` path changed.";
    EntryPointReachesPath = "entry-point-reaches-path", Gate, "A path a CI, build, editor or agent entry point of the packed tree runs or reads changed (`ci.reached`, `build.reached`, `agent.reached`); the detail names the entry point.";
    ExecutableConfigChanged = "executable-config-changed", Gate, "Configuration that runs code or drives a tool, claimed by no named rule, changed (`build.executable-config`, `build.tool-dotfile`, `build.root-executable`).";
    PolicyPathRule = "policy-path-rule", Gate, "A `[[paths]]` rule of the policy decided.";
    ChangedFilesOverLimit = "changed-files-over-limit", Gate, "More files changed than the effective limit.";
    ChangedLinesOverLimit = "changed-lines-over-limit", Gate, "More lines changed than the effective limit.";
    DiffRefused = "diff-refused", Gate, "The strict parser refused the diff (path, `.git/`, traversal, syntax).";
    BinaryPatchRefused = "binary-patch-refused", Gate, "A binary patch.";
    ModeChangeExecutable = "mode-change-executable", Gate, "A file became executable.";
    ModeChangeSymlink = "mode-change-symlink", Gate, "A file became a symlink.";
    RedactedLineTouched = "redacted-line-touched", Gate, "A hunk touches a line redacted at pack time.";
    ApplyFailed = "apply-failed", Gate, "The patch does not apply to the packed revision.";
    SecretInAddedLine = "secret-in-added-line", Gate, "An added line holds something secret-like.";
    SecretInWorkerText = "secret-in-worker-text", Gate, "The worker's generator.log or review.md, or a comment's body or suggestion, holds something secret-like (`reject`; the log's tail is withheld from every output).";
    PartialResult = "partial-result", Gate, "The worker reported a partial result.";
    BundleDigestMismatch = "bundle-digest-mismatch", Gate, "The bundle in the inbox does not hash to the record's digest.";
    BundleRefused = "bundle-refused", Gate, "The bundle or its manifest is unreadable, or names another revision.";
    ArtifactIncomplete = "artifact-incomplete", Gate, "The artifact has no `patch.diff`, or one over its cap.";
    DiffDigestMismatch = "diff-digest-mismatch", Gate, "`patch.diff` does not hash to the packet's `diff_sha256`.";
    PathNotPacked = "path-not-packed", Gate, "A modified, deleted or mode-changed path is not in the bundle.";
    DeniedPathAdded = "denied-path-added", Gate, "An added path is on the pack deny-list.";
    PathCollision = "path-collision", Gate, "An added path exists or collides with a packed path.";
    NewDirectory = "new-directory", Gate, "An added path creates a directory not in the packed tree.";
    PacketMismatch = "packet-mismatch", Gate, "The packet disagrees with the diff or the record.";
    ResumePatchRefused = "resume-patch-refused", Gate, "A re-dispatched job's inherited patch (`inbox/<job>/resume.diff`, pinned by the job record's `resumed_from`) is missing, over its cap, not the pinned digest or refused by the strict parser (`resume.missing`, `resume.too-large`, `resume.digest`, `resume.parse`; `reject`): what the worker started from cannot be shown.";
    ResumeClaimMismatch = "resume-claim-mismatch", Gate, "The packet's `resumed_from` (the worker's claim) is not the job record's (`packet.resumed-from`; `human`): the worker's account of what it started from is not what it was given.";
    Unsandboxed = "unsandboxed", Gate, "The worker ran the generator without a sandbox.";
    WorkerLimitHit = "worker-limit-hit", Gate, "The worker hit a limit: the diff may be cut short.";
    ModelDrift = "model-drift", Gate, "The model reported answers this model request for the first time among the jobs a person approved (`[models] drift` in the policy, default `human`).";
    ModelUnseen = "model-unseen", Gate, "No job a person approved asked for this model before, so the answer is not a baseline for drift (`[models] drift` in the policy, default `human`); approving the job makes it one.";
    ModelMismatch = "model-mismatch", Gate, "The model reported is not the model requested nor a dated snapshot of it (docs/FORMATS.md, \"Model names\").";
    WorkerRefusedPaths = "worker-refused-paths", Gate, "The worker left files out of the diff.";
    DepsUnparsed = "deps-unparsed", Gate, "A dependency manifest in the diff could not be parsed.";
    NoChange = "no-change", Gate, "The generator changed no file: nothing to review (`reject`).";
    ReviewComments = "review-comments", Gate, "The job's review comments, counted by severity (`queue`); each is listed in the report (`comments`).";
    ReviewError = "review-error", Gate, "A review job has a comment of severity `error` (`human`).";
    CommentRefused = "comment-refused", Gate, "A comment that does not anchor to a path and line range of the packed revision or the changed file, or breaks a rule of `comments.jsonl`, or one the worker refused (`human`; the detail names the comment and the rule; the rest of the review survives).";
    ReviewEditedFiles = "review-edited-files", Gate, "A review job's generator changed files: its diff is not empty, or the worker left its edits out (`reject`).";
    ArtifactTooLarge = "artifact-too-large", Fetch, "An envelope or artifact over its size cap.";
    ArtifactSignature = "artifact-signature", Fetch, "The envelope is not signed by the job key.";
    ArtifactStatement = "artifact-statement", Fetch, "The statement is malformed or names no artifact.";
    ArtifactReplay = "artifact-replay", Fetch, "The statement is for another job or bundle.";
    ArtifactDigest = "artifact-digest", Fetch, "The artifact does not hash to the signed subject.";
    ArtifactLate = "artifact-late", Fetch, "Landed after the token expired.";
    ArtifactEarly = "artifact-early", Fetch, "Landed before the job was submitted.";
    PacketDigest = "packet-digest", Fetch, "packet.json does not hash to the signed digest.";
    PacketBinding = "packet-binding", Fetch, "packet.json names another job, bundle, run or partial flag.";
    ArtifactTar = "artifact-tar", Fetch, "The safe tar reader refused the artifact.";
    PacketFormat = "packet-format", Fetch, "packet.json is malformed.";
    ArtifactSwapped = "artifact-swapped", Fetch, "A different artifact was already fetched for this job.";
    ArtifactChangedLocally = "artifact-changed-locally", Fetch, "The downloaded copy changed on disk.";
    ModelKeyLeaked = "model-key-leaked", Fetch, "The job's model key (raw, base64, base64url, hex, percent-encoded or reversed) is in something the worker returned; the detail names the member and the encoding, never the key.";
    FleetSuperseded = "fleet-superseded", Fetch, "The job was re-dispatched away from its worker (lost, revoked or unrun): what it drops later is refused, never gated (recorded as a `fetch` reject).";
    FleetHeartbeatRefused = "fleet-heartbeat-refused", Fleet, "A worker's heartbeat is over its cap, malformed, escape-laden or names another worker: it does not count as alive and the worker gets nothing.";
    FleetWorkerLost = "fleet-worker-lost", Fleet, "A worker's last heartbeat is older than 4 heartbeat intervals + 2 s: marked lost; its jobs are re-dispatched.";
    FleetTicketUnrun = "fleet-ticket-unrun", Fleet, "A worker acknowledged a ticket, moved on, and nothing landed: the job is re-dispatched; twice in a row and the worker is skipped.";
    FleetCheckpointRefused = "fleet-checkpoint-refused", Fleet, "A re-dispatched job is not resumed from its old job's checkpoint: the gate rejects that checkpoint (the detail lists its codes); the new job starts from the packed revision.";
    FleetFormats = "fleet-formats", Fleet, "A worker whose claimed formats cannot carry the job's documents is never sent it (format negotiation).";
    FleetRedispatchLimit = "fleet-redispatch-limit", Fleet, "A job's workers were lost or failed 3 times: it is left for a human (`airlock resubmit`).";
    DropNotFile = "drop-not-file", Fetch, "A drop object on a `file://` store is a link, a device, a FIFO or a directory, or sits under a linked directory (`store.link`, `store.not-file`): never followed, read or hashed.";
}

impl fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl serde::Serialize for ReasonCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_kebab_case() {
        let mut seen = std::collections::HashSet::new();
        for code in ReasonCode::ALL {
            let id = code.code();
            assert!(seen.insert(id), "duplicate reason code {id}");
            assert!(
                !id.is_empty()
                    && !id.starts_with('-')
                    && !id.ends_with('-')
                    && id.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{id} is not kebab-case"
            );
        }
    }

    #[test]
    fn every_code_is_documented_in_formats_md() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/FORMATS.md");
        let doc = std::fs::read_to_string(&path).expect("docs/FORMATS.md");
        let section = doc
            .split("## Gate decisions and reason codes")
            .nth(1)
            .expect("section present");
        let missing: Vec<&str> = ReasonCode::ALL
            .iter()
            .map(|c| c.code())
            .filter(|id| !section.contains(&format!("| `{id}` |")))
            .collect();
        assert!(missing.is_empty(), "undocumented reason codes: {missing:?}");
    }
}
