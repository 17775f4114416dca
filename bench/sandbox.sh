#!/usr/bin/env bash
# Benchmark (not a test): the sandbox's start-up overhead per job against a plain child
# process, as a ratio measured in one run, and that overhead as a percentage of a 1-second
# generator run (target: under 5%). See sandbox/examples/sandbox_bench.rs for what is timed.
#
# Usage: bench/sandbox.sh [RUNS] [LONG_RUNS]     (defaults 200 and 5)
set -euo pipefail
cd "$(dirname "$0")/.."
exec "$(bash scripts/release.sh -p airlock-sandbox --example sandbox_bench)/examples/sandbox_bench" "${1:-200}" "${2:-5}"
