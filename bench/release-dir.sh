#!/usr/bin/env bash
# Prints the directory of the release binaries. .cargo/config.toml builds for a target named
# explicitly (x86_64-unknown-linux-musl, unless CARGO_BUILD_TARGET says otherwise), and cargo
# then writes to target/<tuple>/release/ instead of target/release/.
# Used by examples/quickstart.sh and the bench scripts, from the repository's root:
#   RELEASE="$(bash bench/release-dir.sh)"
set -euo pipefail
tuple="${CARGO_BUILD_TARGET:-$(sed -n 's/^target = "\(.*\)"$/\1/p' .cargo/config.toml)}"
if [ "$tuple" = host-tuple ]; then tuple="$(rustc -vV | sed -n 's/^host: //p')"; fi
echo "${CARGO_TARGET_DIR:-$PWD/target}/$tuple/release"
