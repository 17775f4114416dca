#!/bin/sh
# Codex CLI (npm @openai/codex) as an airlock generator. No arguments: reads
# $AIRLOCK_PROMPT_FILE, asks for $AIRLOCK_MODEL when set, runs `codex exec --json`
# non-interactively (its own sandbox off: airlock's is the boundary), and writes
# $AIRLOCK_REPORT: tokens from the `turn.completed` events; the model is the one asked for
# unless Codex says the server answered with another (`model rerouted: A -> B`, from the
# server's `openai-model` response header).
#   airlock-worker run ... --readable ~/.airlock-agents/npm --home-template DIR \
#     --pass-env OPENAI_API_KEY -- /path/to/codex.sh
# DIR/.codex/config.toml names the model provider (docs/GENERATORS.md).
# airlock-needs: codex python3
set -eu
out="${TMPDIR:-/tmp}/codex.jsonl"
set -- exec --json --skip-git-repo-check --sandbox danger-full-access
if [ -n "${AIRLOCK_MODEL:-}" ]; then set -- "$@" --model "$AIRLOCK_MODEL"; fi
status=0
codex "$@" - < "$AIRLOCK_PROMPT_FILE" > "$out" || status=$?
cat "$out"
python3 - "$out" > "$AIRLOCK_REPORT" <<'PY' || true
import json, os, re, sys
model, tin, tout, turns = os.environ.get("AIRLOCK_MODEL"), 0, 0, 0
for line in open(sys.argv[1], errors="replace"):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if not isinstance(e, dict):
        continue
    item = e.get("item") or {}
    if e.get("type") == "item.completed" and item.get("type") == "error":
        m = re.match(r"model rerouted: (\S+) -> (\S+)", str(item.get("message", "")))
        if m:
            model = m.group(2)
    if e.get("type") == "turn.completed":
        u = e.get("usage") or {}
        turns += 1
        tin += int(u.get("input_tokens", 0))
        tout += int(u.get("output_tokens", 0)) + int(u.get("reasoning_output_tokens", 0))
report = {}
if turns:
    report = {"tokens_in": tin, "tokens_out": tout}
    if model:
        report["model"] = model[:200]
        report["models"] = [{"name": model[:200], "tokens_in": tin, "tokens_out": tout}]
print(json.dumps(report))
PY
exit "$status"
