#!/usr/bin/env bash
# Benchmark (not a test): `airlock scan` on the standard corpus against ripgrep searching the
# same tree with the same rules' regexes as one alternation, same run, median of N runs.
# Throughput is bytes of the tree per second; target: airlock >= 0.5x ripgrep's throughput.
# Also re-checks `airlock pack --redact` against `git archive | gzip -6` (bench/pack.sh).
#
# Usage: bench/scan.sh [RUNS]      env: CORPUS=dir (default target/bench/cpython)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-5}"
CORPUS="${CORPUS:-$PWD/target/bench/cpython}"
SHARED="$(cd .. && pwd)/shared"
command -v rg >/dev/null || { apt-get update -qq && apt-get install -y -qq ripgrep >/dev/null; }
bash "$SHARED/bench/make-corpus.sh" "$CORPUS" >&2
cargo build --release --quiet -p airlock
A="$PWD/target/release/airlock"
work="$(mktemp -d "${TMPDIR:-/tmp}/airlock-bench-scan.XXXXXX")"
trap 'rm -rf "$work"' EXIT
"$A" scan --print-regex > "$work/re.txt"

a_t=(); r_t=()
for i in $(seq "$RUNS"); do
  s=$(date +%s.%N); "$A" -q scan "$CORPUS" >/dev/null || true; e=$(date +%s.%N)
  a_t+=("$(echo "$e - $s" | bc)")
  # -uuu: no ignore files, hidden files, binary files too (like airlock, which sniffs them);
  # --no-unicode-ish flags are not needed: the alternation is byte-oriented.
  s=$(date +%s.%N); rg -uuu -c -f "$work/re.txt" "$CORPUS" --glob '!.git' >/dev/null || true; e=$(date +%s.%N)
  r_t+=("$(echo "$e - $s" | bc)")
done
bytes=$(find "$CORPUS" -path "$CORPUS/.git" -prune -o -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
python3 - "$bytes" "${a_t[*]}" "${r_t[*]}" <<'PY'
import statistics, sys
b = int(sys.argv[1])
a = [float(x) for x in sys.argv[2].split()]
r = [float(x) for x in sys.argv[3].split()]
ma, mr = statistics.median(a), statistics.median(r)
print(f"tree: {b/2**20:.1f} MiB")
print(f"airlock scan   median {ma*1000:.0f} ms  {b/ma/2**20:.0f} MiB/s  runs {' '.join(f'{x*1000:.0f}' for x in a)}")
print(f"rg (same regexes, one alternation)  median {mr*1000:.0f} ms  {b/mr/2**20:.0f} MiB/s  runs {' '.join(f'{x*1000:.0f}' for x in r)}")
print(f"throughput ratio airlock/rg: {mr/ma:.2f}x (target >= 0.5x)")
PY
