#!/bin/sh
# Claude Code (npm @anthropic-ai/claude-code) as an airlock generator. No arguments: reads
# $AIRLOCK_PROMPT_FILE, asks for $AIRLOCK_MODEL when set, runs `claude -p` non-interactively
# with its stream-json output, and writes $AIRLOCK_REPORT: usage per model from the run's
# `modelUsage`, named as the server answered (each assistant message's `model`).
#   airlock-worker run ... --readable ~/.airlock-agents/npm --home-template DIR \
#     --pass-env ANTHROPIC_API_KEY -- /path/to/claude-code.sh
# DIR/.claude/settings.json sets ANTHROPIC_BASE_URL and the permissions (docs/GENERATORS.md).
# airlock-needs: claude python3
set -eu
out="${TMPDIR:-/tmp}/claude-code.jsonl"
set -- -p --output-format stream-json --verbose --permission-mode acceptEdits \
  --max-turns "${CLAUDE_MAX_TURNS:-40}"
if [ -n "${AIRLOCK_MODEL:-}" ]; then set -- "$@" --model "$AIRLOCK_MODEL"; fi
status=0
claude "$@" < "$AIRLOCK_PROMPT_FILE" > "$out" || status=$?
cat "$out"
python3 - "$out" > "$AIRLOCK_REPORT" <<'PY' || true
import json, sys
served, usage = [], {}
for line in open(sys.argv[1], errors="replace"):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if not isinstance(e, dict):
        continue
    m = (e.get("message") or {}).get("model") if e.get("type") == "assistant" else None
    if isinstance(m, str) and m not in served:
        served.append(m)
    if e.get("type") == "result" and isinstance(e.get("modelUsage"), dict):
        usage = e["modelUsage"]
# modelUsage is keyed by the name asked for; the server's name is the assistant messages'.
def answered(asked):
    same = [s for s in served if s == asked or s.startswith(asked)]
    if same:
        return same[-1]
    return served[-1] if len(usage) == 1 and served else asked
models = [{"name": answered(k)[:200],
           "tokens_in": int(v.get("inputTokens", 0)) + int(v.get("cacheReadInputTokens", 0))
           + int(v.get("cacheCreationInputTokens", 0)),
           "tokens_out": int(v.get("outputTokens", 0))}
          for k, v in usage.items() if isinstance(v, dict)][:16]
report = {"models": models}
if served:
    report["model"] = served[-1][:200]
print(json.dumps(report))
PY
exit "$status"
