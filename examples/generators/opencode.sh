#!/bin/sh
# opencode (npm opencode-ai) as an airlock generator. No arguments: reads
# $AIRLOCK_PROMPT_FILE, runs `opencode run --format json` non-interactively with the model
# $AIRLOCK_MODEL of the provider $OPENCODE_PROVIDER (default `local`, defined in
# ~/.config/opencode/opencode.json), and writes $AIRLOCK_REPORT: tokens summed over its
# `step_finish` events. opencode does not say which model the server answered with, so the
# report names none (the packet says `unreported`).
#   airlock-worker run ... --readable ~/.airlock-agents/npm --home-template DIR \
#     --pass-env OPENAI_API_KEY -- /path/to/opencode.sh
# airlock-needs: opencode python3
set -eu
out="${TMPDIR:-/tmp}/opencode.jsonl"
set -- run --format json
if [ -n "${AIRLOCK_MODEL:-}" ]; then set -- "$@" --model "${OPENCODE_PROVIDER:-local}/$AIRLOCK_MODEL"; fi
status=0
OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 \
  opencode "$@" "$(cat "$AIRLOCK_PROMPT_FILE")" < /dev/null > "$out" || status=$?
cat "$out"
python3 - "$out" > "$AIRLOCK_REPORT" <<'PY' || true
import json, sys
tin = tout = steps = 0
for line in open(sys.argv[1], errors="replace"):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if isinstance(e, dict) and e.get("type") == "step_finish":
        t = (e.get("part") or {}).get("tokens") or {}
        c = t.get("cache") or {}
        steps += 1
        tin += int(t.get("input", 0)) + int(c.get("read", 0)) + int(c.get("write", 0))
        tout += int(t.get("output", 0)) + int(t.get("reasoning", 0))
print(json.dumps({"tokens_in": tin, "tokens_out": tout} if steps else {}))
PY
exit "$status"
