#!/usr/bin/env bash
# Prints the directory of the release binaries. .cargo/config.toml builds for the machine's
# own target tuple by name (so that static linking reaches the binaries and not the
# proc-macros), and cargo then writes to target/<tuple>/release/ instead of target/release/.
# Used by examples/quickstart.sh and the bench scripts, from the repository's root:
#   RELEASE="$(bash bench/release-dir.sh)"
set -euo pipefail
tuple="$(rustc -vV | sed -n 's/^host: //p')"
echo "${CARGO_TARGET_DIR:-$PWD/target}/$tuple/release"
