#!/usr/bin/env bash
# Benchmark-like (not part of CI at this N): the fault campaign of tests/suite/faults/ at full
# N (issue 28): each scenario (worker SIGKILL, network cut or stalled mid-upload, store errors
# on the trusted side, trusted host SIGKILL mid-gate, two workers on one token, worker clock
# skew) repeated N times with random timing. Prints the seed and one table: scenario, runs,
# outcomes, violations, seconds. Any violation fails it (exit 1). CI runs the same test with
# N=20 as part of `cargo test --workspace`.
#
# Usage: bench/faults.sh [N]     (default 100)
#   env: AIRLOCK_FAULTS_SEED=S replays a campaign; AIRLOCK_FAULTS_ONLY=a,b runs only those
#        scenarios (names as in the table). Needs libfaketime (scripts/ci-install-faketime.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-100}"
bash scripts/ci-install-faketime.sh
cargo build -q -p airlock -p airlock-worker
log="$(mktemp "${TMPDIR:-/tmp}/airlock-faults.XXXXXX")"
trap 'rm -f "$log"' EXIT
start=$(date +%s)
status=0
AIRLOCK_FAULTS_N="$N" cargo test -q -p airlock-tests --test all \
    suite::faults::fault_campaign_every_scenario_holds_its_invariants -- --exact >"$log" 2>&1 || status=$?
# The campaign writes its table past the test harness's capture; violations are listed after it.
sed -n '/^fault campaign (seed/,/^$/p' "$log"
if ! grep -q '^fault campaign (seed' "$log"; then
    tail -40 "$log"
    echo "bench/faults.sh: the campaign printed no table" >&2
    status=1
fi
grep '^VIOLATION' "$log" | head -50 || true
echo "total: $(( $(date +%s) - start )) s, exit $status"
exit "$status"
