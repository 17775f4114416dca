#!/usr/bin/env bash
# Benchmark (not a test): the fixed cost of one worker job, generator excluded, against the
# seed approach, on the standard corpus (the CPython standard library as a git repository),
# in the same run, alternating, median of N runs.
#
#   worker: airlock-worker run -- /bin/true  (token verify, fetch, bundle verify, unpack,
#           manifest check, workdir copy, sandbox start, diff, pack, sign, drop, clean up)
#   seed:   git clone --depth 1 file://CORPUS + git add -A + git diff --cached
#
# Prints both medians, the ratio (target: worker <= 0.5x the seed approach) and the worker's
# peak RSS (target < 32 MiB whatever the bundle size). The corpus's test files hold real key
# material, so jobs are submitted with --redact.
#
# On ext4 without a journal, creating a file within minutes of deleting thousands in the same
# block group costs the inode allocator a scan past every recently deleted inode of the group
# (ext4 `recently_deleted`, a 60-360 s window), for each file created. The seed approach clones
# where the previous seed was just removed and pays it; the worker marks its work root
# `chattr +T` (workspace.rs), so that each run lands in a block group of its own, and does not.
# The worker removes its run directory inside its time (the seed's `rm -rf` is not timed); with
# `-o discard` and no journal every freed directory block is discarded synchronously, which
# the worker overlaps on several threads. Wall times on a busy machine are noisy; the cpu
# column is steadier. TMPDIR=/dev/shm runs both sides on tmpfs, without either effect.
#
# Usage: bench/worker.sh [RUNS]      env: CORPUS=dir (default target/bench/cpython), TMPDIR
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-5}"
CORPUS="${CORPUS:-$PWD/target/bench/cpython}"
SHARED="$(cd .. && pwd)/shared"
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }

bash "$SHARED/bench/make-corpus.sh" "$CORPUS" >&2
RELEASE="$(bash scripts/release.sh)"
AIRLOCK="$RELEASE/airlock"
WORKER="$RELEASE/airlock-worker"
work="$(mktemp -d "${TMPDIR:-/tmp}/airlock-bench-worker.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# As root the generator runs as nobody: the work root must be reachable.
chmod 755 "$work"
"$AIRLOCK" --home "$work/home" init >/dev/null
echo "Change nothing; this is a benchmark." > "$work/prompt.txt"

# One job per run (the final artifact is write-once), plus one to warm the page cache.
for i in $(seq 0 "$RUNS"); do
  "$AIRLOCK" --home "$work/home" -q submit --repo "$CORPUS" --prompt-file "$work/prompt.txt" \
    --redact --ttl 1h --token-out "$work/$i.token" >/dev/null
done
bundle="$(find "$work/home/store/inbox" -name bundle.tar.gz | head -n1)"

# Prints "wall_ms cpu_ms maxrss_kib" of the command (cpu: user + system); any exit status but 0
# and $OK_EXIT stops the benchmark with the command's stderr.
measure() {
  local t0 t1 u s m rc=0
  t0=$(date +%s%N)
  /usr/bin/time -f "%U %S %M" -o "$work/rss" "$@" >/dev/null 2>"$work/err" || rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne "${OK_EXIT:-0}" ]; then cat "$work/err" >&2; exit 1; fi
  t1=$(date +%s%N)
  # (GNU time writes "Command exited with non-zero status N" first when it did.)
  read -r u s m < <(tail -n 1 "$work/rss")
  echo "$(( (t1 - t0) / 1000000 )) $(python3 -c "print(round(($u + $s) * 1000))") $m"
}
run_worker() { # /bin/true changes nothing: the worker drops an empty artifact and exits 5
  OK_EXIT=5 measure "$WORKER" run --token-file "$work/$1.token" --trusted-pub "$work/home/trusted.pub" \
    --work-root "$work/wr" -- /bin/true
}
run_seed() {
  rm -rf "$work/seed"
  measure bash -c "git clone -q --depth 1 'file://$CORPUS' '$work/seed' \
    && git -C '$work/seed' add -A && git -C '$work/seed' diff --cached"
}

run_worker 0 >/dev/null
run_seed >/dev/null
worker_t=(); worker_c=(); worker_m=(); seed_t=(); seed_c=()
for i in $(seq "$RUNS"); do
  read -r t c m < <(run_worker "$i")
  worker_t+=("$t"); worker_c+=("$c"); worker_m+=("$m")
  read -r t c _ < <(run_seed)
  seed_t+=("$t"); seed_c+=("$c")
done

python3 - "$bundle" "$CORPUS" "${worker_t[*]}" "${seed_t[*]}" "${worker_m[*]}" \
  "${worker_c[*]}" "${seed_c[*]}" <<'PY'
import os, statistics, subprocess, sys
bundle, corpus = sys.argv[1], sys.argv[2]
ints = lambda a: [int(x) for x in a.split()]
wt, st, wm, wc, sc = (ints(a) for a in sys.argv[3:8])
files = len(subprocess.run(["git", "-C", corpus, "ls-files"], capture_output=True, text=True).stdout.splitlines())
w, s = statistics.median(wt), statistics.median(st)
runs = lambda xs: ' '.join(f'{x/1000:.3f}' for x in xs)
print(f"corpus: {files} files in git, bundle {os.path.getsize(bundle)/2**20:.1f} MiB; load average {os.getloadavg()[0]:.1f}")
print(f"airlock-worker run -- /bin/true        median {w/1000:.3f} s wall, {statistics.median(wc)/1000:.3f} s cpu  (wall runs: {runs(wt)})")
print(f"git clone --depth 1 + add -A + diff    median {s/1000:.3f} s wall, {statistics.median(sc)/1000:.3f} s cpu  (wall runs: {runs(st)})")
print(f"ratio worker/seed: {w/s:.2f}x wall, {statistics.median(wc)/statistics.median(sc):.2f}x cpu (target <= 0.50x)")
print(f"worker peak RSS: {max(wm)/1024:.1f} MiB (target < 32 MiB)")
PY
