#!/usr/bin/env bash
# Benchmark (not a test): N jobs (default 200) through the in-process S3 server (s3s +
# s3s-fs, SigV4 enforced: the same server as tests/suite/store.rs) with K lanes at once
# (default 4), each lane running the real release binaries for one job after another:
# `airlock submit` -> `airlock-worker run` (token only, a trivial generator) -> `airlock fetch`.
# The repository is a small subset of the standard corpus: the `json/` and `email/` packages
# of the CPython standard library, committed as their own repository.
#
# Prints jobs/s (target: >= 50 on a 2-core machine), end-to-end latency and overhead
# (generator time subtracted) at p50/p99, each stage's p50/p99, the server's requests per
# job by kind, and a check that no job was lost or attributed to the wrong job (every job
# fetched, its packet names it, its patch carries its own per-job nonce and no other).
#
# The S3 server stands in for a remote store, whose CPU and disks are not the trusted host's or
# the worker's, so it is kept out of the binaries' way: its objects on a tmpfs (/dev/shm; on this
# machine's ext4 each s3s-fs PUT creates and renames three files), one runtime thread pinned to
# the last CPU (s3s-fs hands every file operation to a blocking thread; across CPUs each hand-off
# is an inter-processor interrupt, a VM exit here). Together: 15 -> 7.5-8 ms of server (and
# driver) CPU per job in a 4-lane run. S3_DATA_DIR=/tmp S3_THREADS=2 S3_PIN=off is the earlier
# setting. The binaries under test run on every CPU; home, repository and worker run
# directories stay under TMPDIR. docs/STORES.md (Throughput) has the figures.
#
# Every job packs the same revision, so after the first one `submit` reuses the pack cache
# (the scanned, compressed files part; .airlock/cache/pack): what a user submitting many prompts
# on one commit gets. AIRLOCK_PACK_CACHE=off makes every submit pack every file again.
#
# Usage: bench/jobs.sh [N] [K]      env: CORPUS=dir (default target/bench/cpython)
#                                        KEEP=dir (keep the run's files there)
#                                        AIRLOCK_PACK_CACHE=off (no pack cache)
#                                        S3_DATA_DIR=dir (the S3 server's objects;
#                                          default /dev/shm, else TMPDIR)
#                                        S3_THREADS=n (default 1), S3_PIN=off
#                                        TMPDIR (the run's files)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-200}"
K="${2:-4}"
CORPUS="${CORPUS:-$PWD/target/bench/cpython}"
SHARED="$(cd .. && pwd)/shared"

bash "$SHARED/bench/make-corpus.sh" "$CORPUS" >&2
# Two builds: with `--example`, cargo builds that example only, not the packages' binaries.
RELEASE="$(bash scripts/release.sh -p airlock -p airlock-worker)"
bash scripts/release.sh -p airlock-tests --example bench-jobs >/dev/null

work="$(mktemp -d "${TMPDIR:-/tmp}/airlock-bench-jobs.XXXXXX")"
trap 'rm -rf "$work"' EXIT
small="$work/repo"
mkdir -p "$small"
git -C "$CORPUS" archive HEAD json email | tar -x -C "$small"
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
export GIT_AUTHOR_DATE="2024-01-01T00:00:00Z" GIT_COMMITTER_DATE="2024-01-01T00:00:00Z"
git -C "$small" init -q -b main
git -C "$small" add -A -f .
git -C "$small" commit -q -m "json + email from the corpus"
echo "repo: json/ + email/ from the corpus: $(git -C "$small" ls-files | wc -l) files, $(du -sk --exclude=.git "$small" | cut -f1) KiB" >&2

# Private copies: another build replacing the release binaries mid-run would break the worker's
# re-exec of itself (its /proc/self/exe would point at a deleted file).
mkdir -p "$work/bin"
cp "$RELEASE/airlock" "$RELEASE/airlock-worker" "$work/bin/"

keep=()
[ -n "${KEEP:-}" ] && keep=(--keep "$KEEP")
"$RELEASE/examples/bench-jobs" \
  --airlock "$work/bin/airlock" \
  --worker "$work/bin/airlock-worker" \
  --repo "$small" --jobs "$N" --lanes "$K" "${keep[@]}"
