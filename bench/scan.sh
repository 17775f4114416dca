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
A="$(bash scripts/release.sh -p airlock)/airlock"
work="$(mktemp -d "${TMPDIR:-/tmp}/airlock-bench-scan.XXXXXX")"
trap 'rm -rf "$work"' EXIT
"$A" scan --print-regex > "$work/all.txt"
# ripgrep's default (line) mode refuses patterns that must match a newline (the multi-line
# private-key rules). Baseline 1 runs rg in line mode on the patterns it accepts (fewer
# rules: rg's job is easier); baseline 2 runs rg -U (multiline, whole-file matching: the
# same semantics as airlock) on every pattern. The ratio is taken against the faster one.
: > "$work/line.txt"
while IFS= read -r p; do
  rc=0; printf '' | rg -q -e "$p" - 2>/dev/null || rc=$?
  [ "$rc" -le 1 ] && printf '%s\n' "$p" >> "$work/line.txt"
done < "$work/all.txt"
n_all=$(wc -l < "$work/all.txt"); n_line=$(wc -l < "$work/line.txt")
# Sanity: both baselines must run without a regex error (a refused pattern file makes rg
# exit 2 in a few ms, which once passed for a fast baseline).
for args in "-f $work/line.txt" "-U -f $work/all.txt"; do
  rc=0; rg -uu -c $args "$CORPUS" --glob '!.git' >/dev/null 2>"$work/err" || rc=$?
  [ "$rc" -le 1 ] || { echo "rg $args failed: $(cat "$work/err")" >&2; exit 1; }
done

a_t=(); r_t=(); u_t=()
for i in $(seq "$RUNS"); do
  s=$(date +%s.%N); "$A" -q scan "$CORPUS" >/dev/null || true; e=$(date +%s.%N)
  a_t+=("$(echo "$e - $s" | bc)")
  # -uu: no ignore files, hidden files; binary files skipped at the first NUL (airlock sniffs
  # and skips them too).
  s=$(date +%s.%N); rg -uu -c -f "$work/line.txt" "$CORPUS" --glob '!.git' >/dev/null || true; e=$(date +%s.%N)
  r_t+=("$(echo "$e - $s" | bc)")
  s=$(date +%s.%N); rg -U -uuu -c -f "$work/all.txt" "$CORPUS" --glob '!.git' >/dev/null || true; e=$(date +%s.%N)
  u_t+=("$(echo "$e - $s" | bc)")
done
bytes=$(find "$CORPUS" -path "$CORPUS/.git" -prune -o -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
python3 - "$bytes" "${a_t[*]}" "${r_t[*]}" "${u_t[*]}" "$n_all" "$n_line" <<'PY'
import statistics, sys
b = int(sys.argv[1])
a, r, u = ([float(x) for x in sys.argv[i].split()] for i in (2, 3, 4))
n_all, n_line = sys.argv[5], sys.argv[6]
ma, mr, mu = statistics.median(a), statistics.median(r), statistics.median(u)
runs = lambda xs: " ".join(f"{x*1000:.0f}" for x in xs)
print(f"tree: {b/2**20:.1f} MiB")
print(f"airlock scan ({n_all} rules)  median {ma*1000:.0f} ms  {b/ma/2**20:.0f} MiB/s  runs {runs(a)}")
print(f"rg line mode ({n_line} patterns rg accepts)  median {mr*1000:.0f} ms  {b/mr/2**20:.0f} MiB/s  runs {runs(r)}")
print(f"rg -U ({n_all} patterns)  median {mu*1000:.0f} ms  {b/mu/2**20:.0f} MiB/s  runs {runs(u)}")
best = min(mr, mu)
print(f"throughput ratio airlock/rg (faster rg baseline): {best/ma:.2f}x (target >= 0.5x)")
PY
