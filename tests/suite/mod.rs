//! Test modules (one line each on what they cover).

/// Dispatch, trusted side: submit's egress refusal, the scoped model key, `no-change`, failed
/// runs' log tails and the egress log in reports, checkpoints and `resubmit`.
mod dispatch;
/// Egress: submit --egress -> worker's proxy -> the packet's egress log; the example
/// OpenAI-compatible generator against a stand-in endpoint; refusals in the fallback.
mod egress;
/// submit -> worker -> gate end to end: decisions, review branch content, checkout untouched.
mod gate;
/// Hostile worker: crafted artifacts signed with a real job key; `gate` must reject each (exit 4).
mod hostile_worker;
/// `airlock init` and `airlock pack`: selection, scanning, redaction, determinism, bad input.
mod pack;
/// Review and evidence: approve/decline, model drift, compare, gc keeping envelopes, audit
/// export verified offline, the HTML report in headless Chromium, the GitHub recipes.
mod review;
/// Stores: the whole flow through an in-process S3 server (SigV4), token scope, faults, gc, watch.
mod store;
/// `airlock-worker`: real generators, refusals before anything runs, reclaim, signals, watch.
mod worker;
