#!/usr/bin/env bash
# What the worker's install tests (tests/suite/worker_install.rs, sandbox/tests/sandbox/
# readable.rs) need on a fresh machine: a system python3 that can make a virtualenv
# (/usr/bin/python3 -m venv) and /usr/bin/node. Under CI=true a missing one fails the tests.
set -euo pipefail
need=()
/usr/bin/python3 -m venv --help >/dev/null 2>&1 || need+=(python3-venv)
[ -x /usr/bin/node ] || need+=(nodejs)
if [ "${#need[@]}" -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
