#!/usr/bin/env bash
# Installs the real agent CLIs that tests/suite/agents.rs runs end to end, the way a user
# would and OUTSIDE the system roots (the worker makes them readable with --readable):
#   $AIRLOCK_AGENTS_DIR/npm     npm prefix: Claude Code, Codex CLI, Gemini CLI, opencode
#                               (npm install -g --prefix)
#   $AIRLOCK_AGENTS_DIR/aider   virtualenv: aider                    (python3 -m venv; pip)
# Default AIRLOCK_AGENTS_DIR: ~/.airlock-agents. Versions are pinned; an install that is
# already there at the pinned version is kept. Needs node/npm (>= 20) and python3 (>= 3.10).
set -euo pipefail

dir="${AIRLOCK_AGENTS_DIR:-$HOME/.airlock-agents}"
claude_code="2.1.332"
codex="0.171.0"
gemini="0.61.0"
opencode="1.18.33"
aider="0.86.2"

for tool in node npm python3; do
  command -v "$tool" >/dev/null || { echo "ci-install-agents: $tool is missing (need node/npm >= 20, python3 >= 3.10 with venv)" >&2; exit 1; }
done

start=$SECONDS
mkdir -p "$dir"

npm_version() { # the installed version of package $1 in the prefix, or nothing
  local pj="$dir/npm/lib/node_modules/$1/package.json"
  [ -f "$pj" ] && node -p "require('$pj').version" || true
}
if [ "$(npm_version @anthropic-ai/claude-code)" != "$claude_code" ] ||
  [ "$(npm_version @openai/codex)" != "$codex" ]; then
  # Claude Code's postinstall copies its native binary over the bin/claude.exe placeholder.
  npm install --global --prefix "$dir/npm" --no-audit --no-fund --loglevel=error \
    --allow-scripts=@anthropic-ai/claude-code \
    "@anthropic-ai/claude-code@$claude_code" "@openai/codex@$codex"
fi

if [ "$(npm_version @google/gemini-cli)" != "$gemini" ] ||
  [ "$(npm_version opencode-ai)" != "$opencode" ]; then
  # opencode's postinstall links its platform binary (an optional dependency) into bin/.
  npm install --global --prefix "$dir/npm" --no-audit --no-fund --loglevel=error \
    --allow-scripts=opencode-ai \
    "@google/gemini-cli@$gemini" "opencode-ai@$opencode"
fi

if ! "$dir/aider/bin/python" -m pip show aider-chat 2>/dev/null | grep -qx "Version: $aider"; then
  python3 -m venv "$dir/aider"
  "$dir/aider/bin/pip" install --quiet --disable-pip-version-check "aider-chat==$aider"
fi

"$dir/npm/bin/claude" --version
"$dir/npm/bin/codex" --version
"$dir/npm/bin/gemini" --version
"$dir/npm/bin/opencode" --version
"$dir/aider/bin/aider" --version
echo "agents installed in $dir in $((SECONDS - start)) s"
