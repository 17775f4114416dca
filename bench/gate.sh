#!/usr/bin/env bash
# Benchmark (not a test): `airlock gate` on a job whose diff changes ~1,000 lines, against
# the baseline `git apply --check` of the same patch alone, same run, median of N runs.
# The gate does much more (fetch + verify, bundle manifest, safe unpack, strict parse,
# apply in a temporary index, secret scan, classification); budget: at most 10x the baseline
# (docs/PERFORMANCE.md).
#
# Usage: bench/gate.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-7}"
RELEASE="$(bash scripts/release.sh)"
A="$RELEASE/airlock"; W="$RELEASE/airlock-worker"
work="$(mktemp -d "${TMPDIR:-/tmp}/airlock-bench-gate.XXXXXX")"
# The worker runs on another machine in a deployment: its run directories go to a tmpfs when
# there is one, not to the trusted host's disk.
wr_root=/dev/shm
{ [ -d "$wr_root" ] && [ -w "$wr_root" ]; } || wr_root="$work"
wr="$(mktemp -d "$wr_root/airlock-bench-gate-wr.XXXXXX")"
trap 'rm -rf "$work" "$wr"' EXIT
chmod 755 "$work" "$wr"

# A repository with 20 source files of 100 lines each.
repo="$work/repo"; mkdir -p "$repo/src"
for f in $(seq -w 1 20); do
  for l in $(seq 1 100); do echo "def f_${f}_${l}(x):  # line $l"; done > "$repo/src/mod_$f.py"
done
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=b -c user.email=b@example.invalid commit -q -m base

# A generator that rewrites every second line of 10 files: 500 removed + 500 added.
cat > "$work/gen.sh" <<'SH'
#!/bin/sh
set -e
cd "$AIRLOCK_WORKDIR"
for f in 01 02 03 04 05 06 07 08 09 10; do
  sed -i 's/^\(def f_[0-9_]*[02468](x):\)  # line/\1  # edited line/' "src/mod_$f.py"
done
SH
chmod 755 "$work/gen.sh"
echo "edit" > "$work/prompt.txt"
"$A" --home "$work/home" -q init >/dev/null

jobs=()
for i in $(seq "$RUNS"); do
  out="$("$A" --home "$work/home" -q submit --repo "$repo" --prompt-file "$work/prompt.txt" \
        --token-out "$work/t$i" --json)"
  job="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["job"])' <<<"$out")"
  "$W" run --token-file "$work/t$i" --trusted-pub "$work/home/trusted.pub" \
       --work-root "$wr" -- "$work/gen.sh" 2>/dev/null
  jobs+=("$job")
done
patch="$work/patch.diff"
tar xzf "$work/home/store/drop/${jobs[0]}/artifact.tar.gz" -C "$work" patch.diff
lines=$(grep -c '^[-+][^-+]' "$patch" || true)

# Each command is timed by the shell's own clock (EPOCHREALTIME), so both sides measure
# exactly one fork, exec and wait.
gate_t=(); base_t=()
for job in "${jobs[@]}"; do
  s=$EPOCHREALTIME
  "$A" --home "$work/home" -q gate "$job" --repo "$repo" --json >/dev/null || true
  e=$EPOCHREALTIME; gate_t+=("$s:$e")
  s=$EPOCHREALTIME
  git -C "$repo" apply --check "$patch"
  e=$EPOCHREALTIME; base_t+=("$s:$e")
done
python3 - "$lines" "${gate_t[*]}" "${base_t[*]}" <<'PY'
import statistics, sys
lines = sys.argv[1]
span = lambda t: float(t.split(":")[1]) - float(t.split(":")[0])
g = [span(x) for x in sys.argv[2].split()]
b = [span(x) for x in sys.argv[3].split()]
mg, mb = statistics.median(g), statistics.median(b)
print(f"diff: {lines} changed lines")
print(f"airlock gate (full)    median {mg*1000:.1f} ms  runs {' '.join(f'{x*1000:.0f}' for x in g)}")
print(f"git apply --check      median {mb*1000:.1f} ms  runs {' '.join(f'{x*1000:.0f}' for x in b)}")
print(f"ratio gate/baseline: {mg/mb:.2f}x (budget <= 10x)")
PY
