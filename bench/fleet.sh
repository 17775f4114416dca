#!/usr/bin/env bash
# Benchmark (not a test): the fleet at scale. W `airlock-worker serve` processes (default 8)
# enrolled with `airlock fleet enroll`, against the in-process S3 server (s3s + s3s-fs, SigV4,
# the tests' server as a program: docker/s3-server.rs), N trivial jobs (default 1000) queued
# with `submit --fleet`, dispatched, fetched and GATED by one `airlock watch`. A fifth of the
# workers are killed with SIGKILL mid-job (at a third of the run) and restarted.
#
# Prints: jobs/s end to end from the first dispatch to the last gate (target >= 50 on this
# 2-core machine; the ratio to it), the submit rate on its own, and the check: every submitted
# job ends with exactly one gated final artifact along its re-dispatch chain (state.json's
# `superseded`), none lost, no superseded job gated; re-dispatches counted (each one is a
# documented re-run of a killed worker's job).
#
# Usage: bench/fleet.sh [N] [W]      env: KEEP=dir (keep the run's files), TMPDIR, AIRLOCK_RELEASE,
#                                        REQUESTS=1 (store requests per job, by kind)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-1000}"
W="${2:-8}"

RELEASE="${AIRLOCK_RELEASE:-$(bash scripts/release.sh -p airlock -p airlock-worker)}" # AIRLOCK_RELEASE: a directory holding both release binaries (and examples/s3-server, if built)
EXAMPLES="$RELEASE/examples" # the S3 server beside the binaries, else built here
[ -x "$EXAMPLES/s3-server" ] || EXAMPLES="$(bash scripts/release.sh -p airlock-tests --example s3-server)/examples"
work="$(mktemp -d "${TMPDIR:-/tmp}/airlock-bench-fleet.XXXXXX")"
pids=()
cleanup() {
  for p in "${pids[@]}" $(cat "$work/restarted.pids" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp -a "$work/." "$KEEP/"; fi
  tail -3 "$work/watch.err" 2>/dev/null >&2 || true
  rm -rf "$work" "${data:-}"
}
trap cleanup EXIT
# CPU time (user + system, children reaped included) of a live process, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
chmod 755 "$work"
mkdir -p "$work/bin"
cp "$RELEASE/airlock" "$RELEASE/airlock-worker" "$EXAMPLES/s3-server" "$work/bin/"
A="$work/bin/airlock"
WK="$work/bin/airlock-worker"

# The store: the tests' S3 server, its objects on tmpfs when there is one.
data="/dev/shm/airlock-bench-fleet.$$"
[ -d /dev/shm ] || data="$work/s3"
mkdir -p "$data"
port=$((20000 + RANDOM % 20000))
# REQUESTS=1: the server writes its requests by kind every second (costs it some CPU).
[ -n "${REQUESTS:-}" ] && export S3_SERVER_SUMMARY="$work/s3.requests"
"$work/bin/s3-server" "$data" "$port" 2>"$work/s3.log" &
s3pid=$!
pids+=($!)
disown
for _ in $(seq 50); do grep -q listening "$work/s3.log" && break; sleep 0.1; done
# The test server's fixed credentials (tests/s3.rs).
export AWS_ACCESS_KEY_ID=airlock-test-access AWS_SECRET_ACCESS_KEY=airlock-test-secret-0123456789
export AWS_REGION=us-east-1 AWS_ENDPOINT="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true

export AIRLOCK_HOME="$work/home"
"$A" init --store "s3://airlock/bench" >/dev/null

repo="$work/repo"
mkdir -p "$repo/src"
echo "a" > "$repo/src/a.txt"
git -C "$repo" init -q -b main
git -C "$repo" -c user.name=bench -c user.email=b@example.invalid add -A
git -C "$repo" -c user.name=bench -c user.email=b@example.invalid commit -q -m init
printf '#!/bin/sh\necho "edit $$" >> src/a.txt\n' > "$work/gen.sh"
chmod 755 "$work/gen.sh"
echo "append a line" > "$work/prompt"

start_worker() {
  local name="$1"
  mkdir -p "$work/w/$name"
  env -i PATH=/usr/bin:/bin HOME="$work/w/$name" "$WK" serve --enrollment "$work/$name.enrol" \
    --key "$work/keys/$name" --trusted-pub "$work/home/trusted.pub" \
    --work-root "$work/w/$name" -- "$work/gen.sh" 2>>"$work/$name.log" &
  pids+=($!)
  echo "$!" >> "$work/restarted.pids"
  disown
}

for i in $(seq 1 "$W"); do
  "$WK" keygen --out "$work/keys/w$i" >/dev/null 2>&1
  "$A" fleet enroll "w$i" --worker-pub "$work/keys/w$i/worker.pub" --out "$work/w$i.enrol" --heartbeat 1s >/dev/null
done

t0=$(date +%s.%N)
for _ in $(seq 1 "$N"); do
  "$A" -q submit --fleet --repo "$repo" --prompt-file "$work/prompt" --json >/dev/null
done
t1=$(date +%s.%N)
echo "submitted $N jobs in $(echo "$t1 - $t0" | bc) s ($(echo "scale=1; $N / ($t1 - $t0)" | bc) submits/s)" >&2

for i in $(seq 1 "$W"); do start_worker "w$i"; done
# The killer: once a third of the jobs have dropped (the workers run ahead of the gates), SIGKILL
# a fifth of the workers while they run a job, then restart them.
kill_n=$(( (W + 4) / 5 ))
(
  while :; do
    g=$( (ls "$data/airlock/bench/drop" 2>/dev/null || true) | wc -l)
    [ "$g" -ge $((N / 3)) ] && break
    sleep 0.1
  done
  # Mid-job: a worker whose heartbeat (read from the server's files, not watch's books, which
  # lag) says it runs a job and which has a child process (the sandbox) at that moment.
  victims=$(python3 - "$data/airlock/bench/fleet" "$kill_n" "$work/cpu.killed" \
    $(for i in $(seq 1 "$W"); do echo "w$i:$(pgrep -f "serve --enrollment $work/w$i.enrol" | head -1)"; done) <<'EOF'
import json, os, signal, sys, time
fleet, n, cpu_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
pids = dict(a.split(":", 1) for a in sys.argv[4:] if not a.endswith(":"))
def busy(name):
    try:
        h = json.load(open(f"{fleet}/{name}/heartbeat.json"))
    except (OSError, ValueError):
        return None
    return h.get("job") if h.get("state") == "busy" else None
def children(pid):
    try:
        return any(open(f"/proc/{pid}/task/{t}/children").read().split()
                   for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return False
killed, end = [], time.time() + 30
while len(killed) < n and time.time() < end:
    for name, pid in sorted(pids.items()):
        if name in killed or len(killed) >= n:
            continue
        job = busy(name)
        if job and children(pid):
            stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            os.kill(int(pid), signal.SIGKILL)
            with open(cpu_file, "a") as f:
                f.write(f"{sum(int(x) for x in stat[11:15])}\n")
            print(f"killed {name} mid-job (pid {pid}, job {job})", file=sys.stderr)
            killed.append(name)
    time.sleep(0.005)
print(" ".join(killed))
EOF
)
  sleep 3
  for v in $victims; do start_worker "$v"; done
) &
killer=$!
s3_before=$(cpu_ticks "$s3pid")
[ -n "${REQUESTS:-}" ] && { sleep 1.1; cp "$work/s3.requests" "$work/s3.requests.before"; }
t2=$(date +%s.%N)
TIMEFORMAT='%3U %3S'
{ time "$A" -q watch --jobs 2 --max-jobs "$N" --poll-max 1s --repo "$repo" >"$work/watch.out" 2>"$work/watch.err"; } 2>"$work/watch.time"
t3=$(date +%s.%N)
kill "$killer" 2>/dev/null || true
# CPU per job, by party: the workers (live ones, and the killed ones at their kill; each with
# its sandboxes and generators), watch (dispatch, fetch, gate, with the git it runs), the S3
# server (its CPU while watch ran).
wk=0
for p in $(cat "$work/restarted.pids"); do wk=$((wk + $(cpu_ticks "$p"))); done
for t in $(cat "$work/cpu.killed" 2>/dev/null); do wk=$((wk + t)); done
s3=$(( $(cpu_ticks "$s3pid") - s3_before ))
read -r wu ws < "$work/watch.time"
tck=$(getconf CLK_TCK)
echo "cpu per job: workers $(echo "scale=1; $wk * 1000 / $tck / $N" | bc) ms, watch $(echo "scale=1; ($wu + $ws) * 1000 / $N" | bc) ms (user $wu s, system $ws s), s3 server $(echo "scale=1; $s3 * 1000 / $tck / $N" | bc) ms"

if [ -n "${REQUESTS:-}" ]; then
  sleep 1.1
  python3 - "$work/s3.requests.before" "$work/s3.requests" "$N" <<'EOF'
import sys
def read(p):
    out = {}
    for line in open(p):
        n, kind = line.split(None, 1)
        out[kind.strip()] = int(n)
    return out
a, b, n = read(sys.argv[1]), read(sys.argv[2]), int(sys.argv[3])
d = sorted(((b[k] - a.get(k, 0), k) for k in b), reverse=True)
print(f"store requests per job while the fleet ran: {sum(x for x, _ in d) / n:.1f}")
for x, k in d:
    if x:
        print(f"  {x / n:6.2f}  {k}")
EOF
fi
rate=$(echo "scale=1; $N / ($t3 - $t2)" | bc)
echo "fleet: $N jobs dispatched, run and gated in $(echo "$t3 - $t2" | bc) s by $W workers: $rate jobs/s (target >= 50: ratio $(echo "scale=2; $rate / 50" | bc))"

# The check: one gated artifact per submitted job, along its chain.
"$A" status --json > "$work/status.json"
python3 - "$work/home/fleet/state.json" "$work/status.json" "$N" <<'EOF'
import json, sys
state = json.load(open(sys.argv[1]))
status = json.load(open(sys.argv[2]))
n = int(sys.argv[3])
sup = state.get("superseded", {})
gated = {j["job"] for j in status if j.get("decision")}
replaced = set(sup.values())
originals = [j["job"] for j in status if j["job"] not in replaced]
bad = 0
for job in originals:
    chain = [job]
    while chain[-1] in sup:
        chain.append(sup[chain[-1]])
    g = [j for j in chain if j in gated]
    if len(g) != 1 or g[0] != chain[-1]:
        bad += 1
print(f"check: {len(originals)} submitted, {len(gated)} gated, {len(sup)} re-dispatched "
      f"(killed workers' jobs), {bad} without exactly one gated artifact")
sys.exit(1 if bad or len(originals) != n else 0)
EOF
