#!/usr/bin/env bash
# Installs what a static musl release build needs when it is missing: the target's standard
# library, with rustup, and a C compiler for musl, Debian's musl-tools (ring builds C code; cc
# uses `musl-gcc`). Does nothing when both are there, or when CARGO_BUILD_TARGET names a target
# that is not musl. Run by scripts/release.sh; apt-get needs root (or run it yourself:
# `sudo apt-get install musl-tools`).
set -euo pipefail
target="${CARGO_BUILD_TARGET:-x86_64-unknown-linux-musl}"
case "$target" in
  *-linux-musl) ;;
  *) exit 0 ;;
esac
if ! rustup target list --installed | grep -qx "$target"; then
  echo "installing the Rust standard library for $target (rustup)" >&2
  rustup target add "$target"
fi
if ! command -v musl-gcc >/dev/null; then
  if [ "$(id -u)" != 0 ]; then
    echo "error: building for $target needs musl-gcc: sudo apt-get install musl-tools" >&2
    exit 1
  fi
  echo "installing musl-tools (apt-get)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq musl-tools >/dev/null
fi
