#!/usr/bin/env bash
# Installs libfaketime (Debian's `libfaketime`) for the fault campaign's clock-skew scenario
# (tests/suite/faults/clock.rs): the worker runs with LD_PRELOAD and FAKETIME=±N seconds, so
# its clock is moved without any test hook in the binary. Idempotent; run by .ci/run.
set -euo pipefail
if ! ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends libfaketime >/dev/null
fi
