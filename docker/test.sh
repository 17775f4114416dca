#!/usr/bin/env bash
# The worker image, built and run for real (docker/README.md says what this shows).
#
# Builds the static worker and the test store (scripts/release.sh), the images FROM scratch,
# starts the store with docker-compose on an internal network, and on the host (the trusted
# side) submits jobs to it. Each job runs through one worker container: Docker's default
# profile, docker/seccomp-sandbox.json with an unmasked /proc, and that profile alone. The
# generator (docker/generators/probe.sh, busybox sh) edits a file and tries to reach the
# store and the host from inside the worker's sandbox; the trusted side fetches and gates what came back, and this script prints
# the sandbox mode each worker got and what each probe saw.
#
# Needs a running Docker engine and docker-compose (scripts/ci-docker.sh installs and starts
# them). Without an engine: skipped with a message, or a failure when CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
repo_root=$PWD
started=$(date +%s)

skip() {
  if [ "${CI:-}" = "true" ]; then
    echo "FAIL: docker test cannot run under CI: $*" >&2
    exit 1
  fi
  echo "SKIP: docker test: $*" >&2
  exit 0
}
command -v docker >/dev/null || skip "no docker CLI (scripts/ci-docker.sh installs one)"
command -v docker-compose >/dev/null || skip "no docker-compose (apt-get install docker-compose)"
docker info >/dev/null 2>&1 || skip "no Docker engine answers (start dockerd as root)"
busybox=$(command -v busybox || true)
static() { ! ldd "$1" 2>&1 | grep -q "=>"; }
[ -n "$busybox" ] && static "$busybox" ||
  skip "no static busybox (apt-get install busybox-static)"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# ---- binaries: the static worker and test store, the host's airlock ----------------------
release=$(bash scripts/release.sh -p airlock-worker)
bash scripts/release.sh -p airlock-tests --example s3-server >/dev/null
cargo build --quiet --locked -p airlock
airlock="${CARGO_TARGET_DIR:-$repo_root/target}/debug/airlock"

work=$(mktemp -d /tmp/airlock-docker-test.XXXXXX)
project="airlock-test-$$"
compose=(docker-compose -p "$project" -f "$repo_root/docker/compose.yaml")
proxy_pid=""
cleanup() {
  [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null || true
  "${compose[@]}" down -v --remove-orphans -t 0 >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

ctx="$work/ctx"
mkdir -p "$ctx"
install -m 0555 "$release/airlock-worker" "$ctx/airlock-worker"
install -m 0555 "$release/examples/s3-server" "$ctx/s3-server"
install -m 0555 "$busybox" "$ctx/busybox"
cp docker/Dockerfile "$ctx/Dockerfile"
# Printed in docker/README.md: the worker is static and the image holds nothing else.
static "$ctx/airlock-worker" || fail "the worker is not a static binary"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export AIRLOCK_DOCKER_CTX="$ctx" AIRLOCK_STORE_PORT="$port"
export AIRLOCK_TRUSTED_PUB="$work/home/trusted.pub" AIRLOCK_GENERATORS="$work/generators"
export AIRLOCK_SECCOMP_PROFILE="$repo_root/docker/seccomp-sandbox.json"

# ---- the trusted home and a repository ---------------------------------------------------
export AWS_ACCESS_KEY_ID=airlock-test-access AWS_SECRET_ACCESS_KEY=airlock-test-secret-0123456789
export AWS_REGION=us-east-1 AWS_ENDPOINT="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true
"$airlock" --home "$work/home" init --store s3://airlock >/dev/null
git init -q -b main "$work/repo"
printf '# sample\n' > "$work/repo/README.md"
git -C "$work/repo" add -A
git -C "$work/repo" -c user.name=t -c user.email=t@example.invalid commit -q -m initial

# ---- images and the store ----------------------------------------------------------------
t0=$(date +%s)
"${compose[@]}" build -q store worker >/dev/null
"${compose[@]}" up -d store >/dev/null 2>&1
store_ip=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "${project}_store_1")
[ -n "$store_ip" ] || fail "the store container has no address"
# The host reaches the store on the internal network through a TCP forwarder on the host, at
# the address the token's presigned URLs name (127.0.0.1:PORT, as the worker sees it).
python3 - "$port" "$store_ip" <<'PY' &
import socket, sys, threading
port, ip = int(sys.argv[1]), sys.argv[2]
ls = socket.create_server(("127.0.0.1", port))
def pipe(a, b):
    try:
        while (d := a.recv(65536)):
            b.sendall(d)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
while True:
    c, _ = ls.accept()
    try:
        u = socket.create_connection((ip, port), timeout=5)
    except OSError:
        c.close()
        continue
    u.settimeout(None)
    for a, b in ((c, u), (u, c)):
        threading.Thread(target=pipe, args=(a, b), daemon=True).start()
PY
proxy_pid=$!
ready=""
for _ in $(seq 100); do
  if printf 'GET / HTTP/1.0\r\n\r\n' | "$busybox" timeout 2 "$busybox" nc -w 1 127.0.0.1 "$port" 2>/dev/null | grep -q "^HTTP/"; then
    ready=1
    break
  fi
  sleep 0.1
done
[ -n "$ready" ] || fail "the store does not answer through the host forwarder"
echo "images built and store up in $(( $(date +%s) - t0 )) s (store $store_ip:$port)"

mkdir -p "$work/generators"
cp docker/generators/probe.sh "$work/generators/"
# Only addresses this test made: the store, and the host's side of the test's own internal
# network (its gateway). No probe is ever aimed at an address outside this machine.
host_ip=$(docker network inspect -f '{{range .IPAM.Config}}{{.Gateway}}{{end}}' "${project}_generation")
{
  echo "store-loopback 127.0.0.1 $port"
  echo "store-internal $store_ip $port"
  echo "host ${host_ip:-172.17.0.1} 22"
} > "$work/generators/probe.targets"

# Control: outside the sandbox, in the worker's network namespace, the store answers and
# nothing else does. The probes inside the sandbox below are refused by the sandbox, not by
# a target that happens to be down.
control=$("${compose[@]}" run --rm -T --entrypoint /opt/airlock/bin/busybox worker \
  sh -c 'cd /tmp 2>/dev/null; while read -r n h p; do a=$({ printf "GET / HTTP/1.0\r\n\r\n"; /opt/airlock/bin/busybox sleep 2; } | /opt/airlock/bin/busybox timeout 5 /opt/airlock/bin/busybox nc -w 3 "$h" "$p" 2>&1 | /opt/airlock/bin/busybox head -n 1); echo "$n $h:$p: ${a:-no answer}"; done < /opt/airlock/generators/probe.targets' 2>&1 | tr -d '\r')
echo "control, worker container outside the sandbox:"
echo "$control" | sed 's/^/  /'
echo "$control" | grep -q "^store-loopback .*HTTP/" || fail "control: the store did not answer the worker container"

# ---- one job per worker container ----------------------------------------------------------
printf 'Probe the network from the sandbox.\n' > "$work/prompt.txt"
completed=0
summary=""
# default: compose's worker service (Docker's default seccomp profile).
# seccomp-sandbox: the same image with docker/seccomp-sandbox.json and the unmasked /proc the
#   namespace sandbox mounts (`systempaths=unconfined`; compose 1.29 cannot pass it, so
#   `docker run` in the store's network namespace, every other option as in compose.yaml).
# seccomp-only: the profile without the unmasked /proc: the worker must refuse, not fall back.
run_worker() {
  local variant=$1 token=$2
  local gen=(/opt/airlock/bin/busybox sh /opt/airlock/generators/probe.sh)
  local args=(run --trusted-pub /airlock/keys/trusted.pub --work-root /run/airlock -- "${gen[@]}")
  if [ "$variant" = default ]; then
    "${compose[@]}" run --rm -T -e AIRLOCK_JOB_TOKEN="$token" worker "${args[@]}"
    return
  fi
  local opts=(--security-opt "seccomp=$AIRLOCK_SECCOMP_PROFILE")
  [ "$variant" = seccomp-sandbox ] && opts+=(--security-opt systempaths=unconfined)
  docker run --rm --network "container:${project}_store_1" --user 65532:65532 --read-only \
    --cap-drop ALL --security-opt no-new-privileges:true "${opts[@]}" \
    --tmpfs /run/airlock:rw,nosuid,nodev,size=1g,mode=0711,uid=65532,gid=65532 \
    -v "$AIRLOCK_TRUSTED_PUB:/airlock/keys/trusted.pub:ro" \
    -v "$AIRLOCK_GENERATORS:/opt/airlock/generators:ro" \
    --pids-limit 1024 --memory 2g -e AIRLOCK_JOB_TOKEN="$token" \
    airlock-worker:busybox "${args[@]}"
}

for service in default seccomp-sandbox seccomp-only; do
  token="$work/token-$service"
  job=$("$airlock" --home "$work/home" submit --json --ttl 10m --repo "$work/repo" \
    --prompt-file "$work/prompt.txt" --token-out "$token" | python3 -c 'import json,sys; print(json.load(sys.stdin)["job"])')
  set +e
  run_out=$(run_worker "$service" "$(cat "$token")" 2>&1)
  run_rc=$?
  set -e
  echo "--- $service: worker exit $run_rc"
  echo "$run_out" | tail -n 5 | sed 's/^/  /'
  if [ "$service" = seccomp-only ]; then
    [ "$run_rc" = 1 ] && echo "$run_out" | grep -q "sandbox" ||
      fail "seccomp-only: the worker ran the generator without the /proc it needs"
    summary+="$service: refused before the generator ran: $(echo "$run_out" | grep sandbox | tail -n 1)"$'\n'
    continue
  fi
  if [ "$run_rc" != 0 ]; then
    echo "$run_out" | grep -qi "sandbox" || fail "$service: the worker failed for another reason than its sandbox"
    summary+="$service: refused to run the generator (no sandbox it accepts): $(echo "$run_out" | grep -i sandbox | tail -n 1)"$'\n'
    continue
  fi
  fetched=$("$airlock" --home "$work/home" fetch "$job" --json) || fail "$service: fetch refused the artifact"
  sandbox=$(echo "$fetched" | python3 -c 'import json,sys; print(json.load(sys.stdin)["sandbox"])')
  set +e
  "$airlock" --home "$work/home" gate "$job" --repo "$work/repo" --json > "$work/gate-$service.json"
  gate_rc=$?
  set -e
  decision=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["decision"])' "$work/gate-$service.json")
  [ "$gate_rc" = 0 ] || [ "$gate_rc" = 3 ] || fail "$service: gate exit $gate_rc ($decision)"
  # What the generator saw, as it came back through the signed, gated patch.
  artifact=$(echo "$fetched" | python3 -c 'import json,sys; print(json.load(sys.stdin)["artifact"])')
  egress=$(python3 - "$artifact" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    patch = t.extractfile("patch.diff").read().decode()
lines, on = [], False
for l in patch.splitlines():
    if l.startswith("diff --git"):
        on = l.endswith(" b/egress.txt")
    elif on and l.startswith("+") and not l.startswith("+++"):
        lines.append(l[1:])
print("\n".join(lines))
PY
)
  targets=$(grep -c . "$work/generators/probe.targets")
  [ "$(echo "$egress" | grep -c .)" = "$targets" ] || fail "$service: expected $targets probe lines, got: $egress"
  if echo "$egress" | grep -q "HTTP/"; then
    fail "$service: the generator reached something from its sandbox: $egress"
  fi
  completed=$((completed + 1))
  summary+="$service: sandbox $sandbox, gate $decision (exit $gate_rc); generator egress:"$'\n'"$(echo "$egress" | sed 's/^/    /')"$'\n'
done

echo
echo "== result"
printf '%s' "$summary"
[ "$completed" = 2 ] || fail "default and seccomp-sandbox must each complete their job ($completed did)"
echo "PASS: docker test in $(( $(date +%s) - started )) s"
