#!/usr/bin/env bash
# CI: installs a Docker engine, docker-compose and a static busybox (Debian packages) when
# missing, starts dockerd when none answers, then runs docker/test.sh (the worker image built
# and run for real). Needs root for apt-get and dockerd. Under CI=true a missing engine fails
# the run; elsewhere docker/test.sh skips with a message.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v docker-compose >/dev/null || need+=(docker-compose)
[ -x /bin/busybox ] && ! ldd /bin/busybox 2>&1 | grep -q "=>" || need+=(busybox-static)
if [ "${#need[@]}" -gt 0 ] && [ "$(id -u)" = 0 ]; then
  echo "installing ${need[*]} (apt-get)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if command -v dockerd >/dev/null && ! docker info >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "starting dockerd (log: /tmp/airlock-ci-dockerd.log)" >&2
  nohup dockerd >/tmp/airlock-ci-dockerd.log 2>&1 &
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
fi
exec bash docker/test.sh
