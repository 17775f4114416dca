#!/usr/bin/env bash
# One command, no setup: builds airlock and airlock-worker, then runs `airlock demo`, which
# creates an example repository, a trusted home with a local file store (no server, no
# account) in a temp dir, and sends three jobs through the real worker: an ordinary edit
# (queue), an edit touching CI (human), and an artifact tampered with on the way back (reject).
set -euo pipefail
cd "$(dirname "$0")/.."
# Static release binaries (scripts/release.sh installs the musl target when missing).
exec "$(bash scripts/release.sh)/airlock" demo
