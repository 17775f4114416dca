//! Test modules (one line each on what they cover).

/// Real agent CLIs (Claude Code, Codex CLI, aider) in the sandbox against stand-in model servers.
mod agents;
/// Review jobs by real agent CLIs (Claude Code, Codex CLI, aider) against the stand-in, which
/// answers with comments: the docs/GENERATORS.md review recipe end to end.
mod agents_review;
/// `az://` on Azurite (the emulator from npm): a job through the real worker, a bundle in
/// blocks, the fleet, the write-once refusal (409), SAS URLs scoped to one blob each.
mod azure;
/// Blast radius from content and tree: a manifest under `src/`, a script a workflow runs (human).
mod blast_radius;
mod blast_radius_fed;
/// Blast radius of files that run or are read because of where they sit or what reads them (a
/// directory a Dockerfile copies onto `/`, a setup action's version file, a copied release): human.
mod blast_radius_image;
/// Blast radius of files tools run by convention under names that read as tests, pages or
/// source (`tests/config.nims`, `docs/make.jl`, `Eldev`, an rc script): human.
mod blast_radius_implicit;
/// Cleanup against a hostile tree: 5,000 levels under a worker limited to 1,024 open files.
mod cleanup;
/// Mixed versions: the previous release's binaries (scripts/build-previous-release.sh) against
/// today's, both ways: a job completes, or the worker refuses before running with the version
/// message.
mod compat;
/// Out of disk: a tiny tmpfs work root filled, the job's `--max-disk-bytes` passed: a signed
/// partial packet saying `disk`, verified by fetch, sent to a human by the gate.
mod disk;
/// Dispatch, trusted side: submit's egress refusal, the scoped model key, `no-change`, failed
/// runs' log tails and the egress log in reports, checkpoints and `resubmit`.
mod dispatch;
/// Egress: submit --egress -> worker's proxy -> the packet's egress log; the example
/// OpenAI-compatible generator against a stand-in endpoint; refusals in the fallback.
mod egress;
/// Fault campaign (issue 28): every failure domain as a scenario repeated with random timing,
/// outcomes counted, one table; any violation fails (N from `AIRLOCK_FAULTS_N`, CI: 20).
mod faults;
/// The fleet: `serve` workers enrolled with `fleet enroll`, `submit --fleet`, dispatch, lost
/// workers and re-dispatch in `watch`, on file:// and S3; a hostile enrolled worker.
mod fleet;
/// submit -> worker -> gate end to end: decisions, review branch content, checkout untouched.
mod gate;
/// Hostile worker: crafted artifacts signed with a real job key; `gate` must reject each (exit 4).
mod hostile_worker;
/// The source tree's shape: no import circle in any crate, no long file on the trusted side.
mod layout;
/// `airlock init` and `airlock pack`: selection, scanning, redaction, determinism, bad input.
mod pack;
/// The scanner's evaluation corpus through `airlock pack`: refused with a line per secret,
/// and with `--redact` no secret byte in the bundle; the trusted home never ships.
mod pack_corpus;
/// A pack (and `scan --rev`) of a checked-out revision reads the working tree only where a file
/// is the committed blob: a dirty or hostile working tree (edits, links, a FIFO) packs and scans
/// the revision's bytes.
mod pack_worktree;
/// One test per fixed defect (`issue_<n>_<what>`), each failing before its fix.
mod regression;
/// Issue 37's last red-team failures: `--json` escapes DEL/C1, no report publishes a secret
/// value, a final packet held to its closed sets at the gate.
mod report_hygiene;
/// Review and evidence: approve/decline, model drift, compare, gc keeping envelopes, audit
/// export verified offline, the HTML report in headless Chromium, the GitHub recipes.
mod review;
/// Review jobs (issue 41): comments through the real worker, the gate's anchors and limits,
/// every surface (JSON, text, Markdown, HTML in Chromium, SARIF against the schema), hostile comments.
mod review_comments;
/// Hostile review comments through the real worker and from a hostile worker: each refused or
/// neutralised, nothing written outside the job directory.
mod review_comments_hostile;
/// Stores: the whole flow through an in-process S3 server (SigV4), token scope, faults, gc, watch.
mod store;
/// Untrusted text: one hostile model name through every output (terminal, Markdown, HTML,
/// trailers, ledger), marked alike; `show` says what the gate classified.
mod untrusted_text;
/// `airlock-worker`: real generators, refusals before anything runs, reclaim, signals, watch.
mod worker;
/// `airlock-worker` with installed agents: --readable, --home-template, --allow-local,
/// .gitignore'd outputs, failures in words and their exit codes.
mod worker_install;
