#!/usr/bin/env bash
# Benchmark (not a test): `airlock scan` on the standard corpus, scanning every byte
# (binaries by their printable runs, UTF-16 decoded, one level of base64/percent decoding,
# joined string literals), against kingfisher (`pip install kingfisher-bin`;
# `kingfisher scan --no-validate --git-history none`) on the same tree in the same run,
# alternating, median of N runs. Throughput is bytes of the tree per second; target: airlock
# >= 5x kingfisher's throughput. Then re-checks `airlock pack --redact` against
# `git archive | gzip -6` (bench/pack.sh; target: pack at least 2x faster).
#
# Usage: bench/scan.sh [RUNS]      env: CORPUS=dir (default target/bench/cpython)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-5}"
CORPUS="${CORPUS:-$PWD/target/bench/cpython}"
SHARED="$(cd .. && pwd)/shared"
[ -d "$SHARED/bench" ] || SHARED=/work/shared
command -v kingfisher >/dev/null || pip install -q kingfisher-bin >&2
bash "$SHARED/bench/make-corpus.sh" "$CORPUS" >&2
A="$(bash scripts/release.sh -p airlock)/airlock"

a_t=(); k_t=()
for i in $(seq "$RUNS"); do
  s=$(date +%s.%N); "$A" -q scan "$CORPUS" >/dev/null || true; e=$(date +%s.%N)
  a_t+=("$(echo "$e - $s" | bc)")
  s=$(date +%s.%N)
  kingfisher scan --no-validate --git-history none "$CORPUS" >/dev/null 2>&1 || true
  e=$(date +%s.%N)
  k_t+=("$(echo "$e - $s" | bc)")
done
bytes=$(find "$CORPUS" -path "$CORPUS/.git" -prune -o -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
findings=$("$A" -q scan "$CORPUS" --json 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["findings"]))' || echo "?")
python3 - "$bytes" "${a_t[*]}" "${k_t[*]}" "$findings" "$(kingfisher --version 2>/dev/null | head -1)" <<'PY'
import statistics, sys
b = int(sys.argv[1])
a, k = ([float(x) for x in sys.argv[i].split()] for i in (2, 3))
ma, mk = statistics.median(a), statistics.median(k)
runs = lambda xs: " ".join(f"{x*1000:.0f}" for x in xs)
print(f"tree: {b/2**20:.1f} MiB")
print(f"airlock scan (every byte; {sys.argv[4]} findings)  median {ma*1000:.0f} ms  {b/ma/2**20:.0f} MiB/s  runs {runs(a)}")
print(f"{sys.argv[5] or 'kingfisher'} --no-validate --git-history none  median {mk*1000:.0f} ms  {b/mk/2**20:.0f} MiB/s  runs {runs(k)}")
print(f"throughput ratio airlock/kingfisher: {mk/ma:.2f}x (target >= 5x)")
PY
bash bench/pack.sh "$RUNS"
