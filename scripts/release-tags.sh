#!/usr/bin/env bash
# Creates the lightweight tag `v<version>` for every release line of RELEASES whose tag is
# missing, and checks that existing tags name the recorded commit. Tags may not survive a
# submission; RELEASES does.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -Ev '^(#|$)' RELEASES | while read -r version commit; do
  if have=$(git rev-parse -q --verify "refs/tags/v$version^{commit}"); then
    [ "$have" = "$commit" ] || { echo "v$version is $have, RELEASES says $commit" >&2; exit 1; }
  else
    git tag "v$version" "$commit"
    echo "tagged v$version at $commit"
  fi
done
