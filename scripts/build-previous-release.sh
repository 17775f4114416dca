#!/usr/bin/env bash
# Builds the previous release's two binaries (`airlock`, `airlock-worker`) for the mixed-version
# test (tests/suite/compat.rs): resolves the release's commit from RELEASES (its tag
# `v<version>` when present must name the same commit), extracts that commit with
# `git archive` into target/previous-release/src, builds there with its own target dir and
# keeps only the two binaries. Idempotent: a build of the same commit is reused
# (target/previous-release/bin/COMMIT).
# Prints the directory holding the two binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
line=$(grep -Ev '^(#|$)' RELEASES | tail -n 1)
version=${line%% *}
commit=${line##* }
if tag=$(git rev-parse -q --verify "refs/tags/v$version^{commit}" 2>/dev/null); then
  if [ "$tag" != "$commit" ]; then
    echo "build-previous-release: tag v$version is $tag, RELEASES says $commit" >&2
    exit 1
  fi
fi
git cat-file -e "$commit^{commit}" || {
  echo "build-previous-release: commit $commit of $version is not in this clone (fetch full history)" >&2
  exit 1
}
out=$root/target/previous-release
if [ "$(cat "$out/bin/COMMIT" 2>/dev/null)" = "$commit" ] \
  && [ -x "$out/bin/airlock" ] && [ -x "$out/bin/airlock-worker" ]; then
  echo "$out/bin"
  exit 0
fi
rm -rf "$out/src" "$out/bin"
mkdir -p "$out/src" "$out/bin"
git archive "$commit" | tar -x -C "$out/src"
# Without debug info or an incremental cache, and the build tree removed once the two
# binaries are copied out: only they are kept (about 2.4 GB less on the disk).
(cd "$out/src" && CARGO_TARGET_DIR="$out/target" CARGO_PROFILE_DEV_DEBUG=false CARGO_INCREMENTAL=0 \
  cargo build --locked -q -p airlock --bin airlock -p airlock-worker --bin airlock-worker >&2)
cp "$out/target/debug/airlock" "$out/target/debug/airlock-worker" "$out/bin/"
rm -rf "$out/target" "$out/src"
echo "$version" > "$out/bin/VERSION"
echo "$commit" > "$out/bin/COMMIT"
echo "$out/bin"
