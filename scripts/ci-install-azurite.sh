#!/usr/bin/env bash
# Installs Azurite, Microsoft's Azure Storage emulator, from its npm package, for the Azure
# tests (tests/suite/azure.rs start `azurite-blob` on a free port, tests/azurite.rs):
#   $AIRLOCK_AZURITE_DIR   npm prefix (npm install -g --prefix); the tests run
#                          $AIRLOCK_AZURITE_DIR/bin/azurite-blob
# Default AIRLOCK_AZURITE_DIR: ~/.airlock-agents/azurite. The version is pinned; an install
# already there at that version is kept (idempotent). Needs node/npm (>= 20).
set -euo pipefail

dir="${AIRLOCK_AZURITE_DIR:-$HOME/.airlock-agents/azurite}"
azurite="3.37.0"

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "ci-install-azurite: $tool is missing (need node/npm >= 20)" >&2; exit 1; }
done

start=$SECONDS
pj="$dir/lib/node_modules/azurite/package.json"
installed="$([ -f "$pj" ] && node -p "require('$pj').version" || true)"
if [ "$installed" != "$azurite" ]; then
  mkdir -p "$dir"
  npm install --global --prefix "$dir" --no-audit --no-fund --loglevel=error "azurite@$azurite"
fi

"$dir/bin/azurite-blob" --version
echo "azurite $azurite installed in $dir in $((SECONDS - start)) s"
