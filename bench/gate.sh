#!/usr/bin/env bash
# Benchmark (not a test): `airlock gate` on a job whose diff changes ~1,000 lines, against
# the baseline `git apply --check` of the same patch alone, same run, median of N runs.
# The gate does much more (fetch + verify, the bundle's listing, strict parse, apply with real
# git in a scratch directory, secret scan, classification, ledger); budget: at most 10x the
# baseline (docs/PERFORMANCE.md).
#
# Usage: bench/gate.sh [RUNS]        GATE_BENCH_TREE_FILES=10000 for a 10,000-file tree
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
# GATE_BENCH_TREE_FILES=N: the repository also holds N more files (sources in 100 packages,
# with a Makefile, a package.json and a script per package, and 10 workflows running scripts),
# so that the classification's tree layers have a real tree to read.
if [ -n "${GATE_BENCH_TREE_FILES:-}" ]; then
  python3 - "$repo" "$GATE_BENCH_TREE_FILES" <<'PY'
import os, sys
repo, n = sys.argv[1], int(sys.argv[2])
def put(path, text, mode=0o644):
    full = os.path.join(repo, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)
    os.chmod(full, mode)
made = 0
for p in range(100):
    put(f"pkg/p{p:03}/Makefile", f"check:\n\t./tools/check-{p}.sh\n\tpython3 gen.py\n")
    put(f"pkg/p{p:03}/package.json", '{"scripts": {"build": "node build.js"}}\n')
    put(f"pkg/p{p:03}/tools/check-{p}.sh", "#!/bin/sh\n. ./lib.sh\n", 0o755)
    made += 3
for w in range(10):
    runs = "".join(f"      - run: ./pkg/p{w * 10 + k:03}/tools/check-{w * 10 + k}.sh\n" for k in range(10))
    put(f".github/workflows/w{w}.yml", "on: push\njobs:\n  t:\n    steps:\n" + runs)
    made += 1
i = 0
while made < n:
    put(f"pkg/p{i % 100:03}/src/f{i}.py", f"def f_{i}():\n    return {i}\n")
    i += 1
    made += 1
PY
fi
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
