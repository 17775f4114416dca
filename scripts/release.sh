#!/usr/bin/env bash
# Builds the static release binaries (`airlock`, `airlock-worker`) and prints their directory
# on stdout (everything else goes to stderr). Static musl binaries need no library on the
# machine that runs them: the worker image is `FROM scratch`, and a binary copied to a worker
# runs there as it is. Installs the musl target and musl-gcc when missing
# (scripts/musl-toolchain.sh). Used by the Dockerfile, examples/quickstart.sh and bench/.
#
#   RELEASE="$(bash scripts/release.sh)"            # both binaries
#   RELEASE="$(bash scripts/release.sh -p airlock)" # cargo's package selection, to build less
#
# CARGO_BUILD_TARGET picks another musl target (e.g. aarch64-unknown-linux-musl).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_BUILD_TARGET:-x86_64-unknown-linux-musl}"
CARGO_BUILD_TARGET="$target" bash scripts/musl-toolchain.sh >&2
if [ "$#" -eq 0 ]; then set -- -p airlock -p airlock-worker; fi
cargo build --release --quiet --locked --target "$target" "$@" >&2
echo "${CARGO_TARGET_DIR:-$PWD/target}/$target/release"
