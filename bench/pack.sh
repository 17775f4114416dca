#!/usr/bin/env bash
# Benchmark (not a test): `airlock pack --redact` against the baseline
# `git archive HEAD | gzip -6` on the standard corpus (the CPython standard library as a git
# repository), in the same run, alternating, median of N runs. Prints both times, the ratio
# (target: pack <= 1.0x the baseline), pack's peak RSS (target < 64 MiB) and the number of
# findings redacted (the corpus's test files hold real key material).
# The pack cache is off for the measured runs (AIRLOCK_PACK_CACHE=off: every run packs every
# file); one extra run with the cache warm shows what a second submit of the same revision
# costs.
#
# Usage: bench/pack.sh [RUNS]      env: CORPUS=dir (default target/bench/cpython)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-5}"
CORPUS="${CORPUS:-$PWD/target/bench/cpython}"
SHARED="$(cd .. && pwd)/shared"
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }

bash "$SHARED/bench/make-corpus.sh" "$CORPUS" >&2
AIRLOCK="$(bash scripts/release.sh -p airlock)/airlock"
work="$(mktemp -d "${TMPDIR:-/tmp}/airlock-bench-pack.XXXXXX")"
trap 'rm -rf "$work"' EXIT
"$AIRLOCK" --home "$work/home" init >/dev/null
echo "Refactor nothing; this is a benchmark." > "$work/prompt.txt"

measure() { # prints "seconds maxrss_kib" of the command
  /usr/bin/time -f "%e %M" -o "$work/t" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  cat "$work/t"
}
pack_t=(); pack_m=(); base_t=()
for i in $(seq "$RUNS"); do
  rm -rf "$work/out"
  read -r t m < <(measure env AIRLOCK_PACK_CACHE=off "$AIRLOCK" --home "$work/home" -q pack \
      --repo "$CORPUS" --prompt-file "$work/prompt.txt" --redact --out "$work/out")
  pack_t+=("$t"); pack_m+=("$m")
  read -r t _ < <(measure bash -c "git -C '$CORPUS' archive HEAD | gzip -6")
  base_t+=("$t")
done
"$AIRLOCK" --home "$work/home" -q pack --repo "$CORPUS" --prompt-file "$work/prompt.txt" \
  --redact --json --out "$work/out2" > "$work/summary.json"
# The cache is warm now (the run above filled it).
rm -rf "$work/out3"
read -r warm _ < <(measure "$AIRLOCK" --home "$work/home" -q pack --repo "$CORPUS" \
    --prompt-file "$work/prompt.txt" --redact --out "$work/out3")
cmp -s "$work/out2/bundle.tar.gz" "$work/out3/bundle.tar.gz" \
  || { echo "a cache hit gave other bytes than a fresh pack" >&2; exit 1; }

python3 - "$work/summary.json" "${pack_t[*]}" "${base_t[*]}" "${pack_m[*]}" "$warm" <<'PY'
import json, statistics, sys
s = json.load(open(sys.argv[1]))
pt = [float(x) for x in sys.argv[2].split()]
bt = [float(x) for x in sys.argv[3].split()]
pm = [int(x) for x in sys.argv[4].split()]
p, b = statistics.median(pt), statistics.median(bt)
print(f"corpus: {s['files']} files, {s['bytes']/2**20:.1f} MiB packed, bundle {s['bundle_bytes']/2**20:.1f} MiB")
print(f"redacted: {sum(s['redacted'].values())} findings in {s['redacted_files']} files ({', '.join(f'{k} {v}' for k, v in s['redacted'].items())})")
print(f"skipped: {sum(s['skipped'].values())} paths ({', '.join(f'{k} {v}' for k, v in s['skipped'].items())})")
print(f"airlock pack --redact      median {p:.2f} s  (runs: {' '.join(f'{x:.2f}' for x in pt)})")
print(f"git archive | gzip -6      median {b:.2f} s  (runs: {' '.join(f'{x:.2f}' for x in bt)})")
print(f"ratio pack/baseline: {p/b:.2f}x (target <= 1.00x)")
print(f"pack peak RSS: {max(pm)/1024:.1f} MiB (target < 64 MiB)")
print(f"same revision again, pack cache warm: {float(sys.argv[5]):.2f} s (same bundle bytes)")
PY
