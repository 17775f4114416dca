#!/usr/bin/env bash
# Size budget of the untrusted worker (DESIGN: its size and dependency count are features).
# Builds the release binary and fails when it outgrows either budget:
#   - the stripped binary's size in bytes;
#   - its normal dependencies: the distinct crates of `cargo tree -p airlock-worker -e normal`
#     (a crate seen again is marked ` (*)`; the mark is dropped before counting).
# The budgets sit about 20% above the figures measured when they were set (README, "Worker");
# raising one is a reviewed change with a line saying why.
#
# Usage: bench/worker-budget.sh      env: MAX_BYTES, MAX_DEPS override the budgets
set -euo pipefail
cd "$(dirname "$0")/.."
# 7.0 MiB; measured 6 286 120 bytes, static musl (scripts/release.sh). Back down from the
# 8.25 MiB that static glibc needed (7 181 072 bytes; 6 150 424 dynamic): musl is smaller, and
# the binary still runs on a host without the build host's shared libraries (README, "Worker").
# Raised to 7.25 MiB for the fleet (issue 40): `serve`, `keygen`, age v1 sealing, the
# enrolment/ticket/heartbeat formats and the resume applier measured 7 392 552 bytes
# (+151 744 over 7 240 808); a reviewed change, see the fleet branch's report.
MAX_BYTES="${MAX_BYTES:-7602176}"
MAX_DEPS="${MAX_DEPS:-149}"       # measured 124 (was 173 over 144 lines, 20 of them repeats)

RELEASE="$(bash scripts/release.sh -p airlock-worker)"
work="$(mktemp -d "${TMPDIR:-/tmp}/airlock-worker-budget.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp "$RELEASE/airlock-worker" "$work/airlock-worker"
# The release profile already strips symbols; strip again in case a profile override did not.
if command -v strip >/dev/null; then strip "$work/airlock-worker"; fi
bytes="$(stat -c %s "$work/airlock-worker")"
deps="$(cargo tree --locked -p airlock-worker -e normal --prefix none | sed 's/ (\*)$//' | sort -u | wc -l)"

printf 'airlock-worker: %d bytes stripped (budget %d), %d normal dependencies (budget %d)\n' \
  "$bytes" "$MAX_BYTES" "$deps" "$MAX_DEPS"
status=0
if [ "$bytes" -gt "$MAX_BYTES" ]; then
  echo "FAIL: the worker binary is over its size budget" >&2
  status=1
fi
if [ "$deps" -gt "$MAX_DEPS" ]; then
  echo "FAIL: the worker has more dependencies than its budget" >&2
  status=1
fi
exit "$status"
