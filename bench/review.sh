#!/usr/bin/env bash
# Benchmark (not a test): `airlock gate` on a review job with 200 comments (20 files of 100
# lines, 10 comments each: lines and ranges, all three severities, a suggestion on every
# fifth), against the baseline: the gate of the same kind of job with 1 comment, same run,
# median of N gates each. Both are full gates (fetch and verify, bundle listing, parse, anchors
# read with one `git cat-file --batch`, secret scan of every body, ledger append); the
# difference is what 199 more comments cost. Budget: the 200-comment gate well under a second
# (docs/PERFORMANCE.md).
#
# Usage: bench/review.sh [RUNS]      env: AIRLOCK_BIN=dir (binaries to use instead of the
#                                         static release build, e.g. target/debug)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-7}"
BIN="${AIRLOCK_BIN:-$(bash scripts/release.sh)}"
A="$BIN/airlock"; W="$BIN/airlock-worker"
work="$(mktemp -d "${TMPDIR:-/tmp}/airlock-bench-review.XXXXXX")"
wr_root=/dev/shm
{ [ -d "$wr_root" ] && [ -w "$wr_root" ]; } || wr_root="$work"
wr="$(mktemp -d "$wr_root/airlock-bench-review-wr.XXXXXX")"
trap 'rm -rf "$work" "$wr"' EXIT
chmod 755 "$work" "$wr"

repo="$work/repo"; mkdir -p "$repo/src"
for f in $(seq -w 1 20); do
  for l in $(seq 1 100); do echo "def f_${f}_${l}(x):  # line $l"; done > "$repo/src/mod_$f.py"
done
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=b -c user.email=b@example.invalid commit -q -m base

# Two generators that write their comments to $AIRLOCK_COMMENTS (the comments are in the
# script: the sandbox does not let the generator read this directory).
python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
sev = ["note", "warning", "error"]
def comments(n):
    out = []
    for i in range(n):
        f, k = i // 10 + 1, i % 10
        c = {"path": f"src/mod_{f:02}.py", "severity": sev[i % 3],
             "body": f"Comment {i}: `f_{f:02}_{k * 10 + 1}` could take a **None**; see [the docs](https://docs.python.org/3/).\nSecond line."}
        if i % 2:
            c["start_line"], c["end_line"] = k * 10 + 1, k * 10 + 3
        else:
            c["line"] = k * 10 + 1
        if i % 5 == 0:
            c["suggestion"] = f"def f_{f:02}_{k * 10 + 1}(x=None):  # line {k * 10 + 1}\n"
        out.append(json.dumps(c))
    return "\n".join(out)
for name, n in (("gen200.sh", 200), ("gen1.sh", 1)):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\nset -e\ncat > \"$AIRLOCK_COMMENTS\" <<'EOF'\n" + comments(n) + "\nEOF\n")
    os.chmod(path, 0o755)
PY
echo "review" > "$work/prompt.txt"
"$A" --home "$work/home" -q init >/dev/null

submit_and_run() { # $1 generator -> prints the job id
  local out job
  out="$("$A" --home "$work/home" -q submit --kind review --repo "$repo" \
        --prompt-file "$work/prompt.txt" --token-out "$work/t-$RANDOM$RANDOM" --json)"
  job="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["job"])' <<<"$out")"
  "$W" run --token-file "$(ls -t "$work"/t-* | head -1)" --trusted-pub "$work/home/trusted.pub" \
       --work-root "$wr" -- "$1" 2>/dev/null || true
  echo "$job"
}
many=(); one=()
for i in $(seq "$RUNS"); do
  many+=("$(submit_and_run "$work/gen200.sh")")
  one+=("$(submit_and_run "$work/gen1.sh")")
done

gate_t=(); base_t=(); count=""
for i in $(seq 0 $((RUNS - 1))); do
  s=$EPOCHREALTIME
  out="$("$A" --home "$work/home" -q gate "${many[$i]}" --repo "$repo" --json || true)"
  e=$EPOCHREALTIME; gate_t+=("$s:$e")
  count="$(python3 -c 'import json,sys; print(len(json.load(sys.stdin)["comments"]))' <<<"$out")"
  s=$EPOCHREALTIME
  "$A" --home "$work/home" -q gate "${one[$i]}" --repo "$repo" --json >/dev/null || true
  e=$EPOCHREALTIME; base_t+=("$s:$e")
done
python3 - "$count" "${gate_t[*]}" "${base_t[*]}" <<'PY'
import statistics, sys
count = sys.argv[1]
span = lambda t: float(t.split(":")[1]) - float(t.split(":")[0])
g = [span(x) for x in sys.argv[2].split()]
b = [span(x) for x in sys.argv[3].split()]
mg, mb = statistics.median(g), statistics.median(b)
print(f"comments gated: {count} (of 200)")
print(f"airlock gate, 200 comments  median {mg*1000:.1f} ms  runs {' '.join(f'{x*1000:.0f}' for x in g)}")
print(f"airlock gate, 1 comment     median {mb*1000:.1f} ms  runs {' '.join(f'{x*1000:.0f}' for x in b)}")
print(f"ratio 200/1: {mg/mb:.2f}x; budget: 200 comments well under 1 s ({mg*1000:.0f} ms)")
PY
