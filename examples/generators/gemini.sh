#!/bin/sh
# Gemini CLI (npm @google/gemini-cli) as an airlock generator. No arguments: reads
# $AIRLOCK_PROMPT_FILE, asks for $AIRLOCK_MODEL when set, runs `gemini -p` non-interactively
# (--yolo: tool calls approved; the sandbox is the boundary) with its JSON output, and writes
# $AIRLOCK_REPORT from `stats.models`, which Gemini CLI keys by the `modelVersion` the
# server answered with.
#   airlock-worker run ... --readable ~/.airlock-agents/npm --home-template DIR \
#     --pass-env GEMINI_API_KEY -- /path/to/gemini.sh
# DIR/.gemini/settings.json selects API-key auth; GOOGLE_GEMINI_BASE_URL (--pass-env) points
# at a local model server (docs/GENERATORS.md).
# airlock-needs: gemini python3
set -eu
out="${TMPDIR:-/tmp}/gemini.json"
# Node reserves ~10 GiB of address space per WebAssembly memory for its trap handler; the
# sandbox's 16 GiB address-space limit then fails the second one ("Out of memory: Cannot
# allocate Wasm memory"). Bounds checks instead of guard regions need no reservation.
export NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--disable-wasm-trap-handler"
set -- --output-format json --yolo --skip-trust
if [ -n "${AIRLOCK_MODEL:-}" ]; then set -- "$@" --model "$AIRLOCK_MODEL"; fi
status=0
gemini "$@" -p "$(cat "$AIRLOCK_PROMPT_FILE")" < /dev/null > "$out" || status=$?
cat "$out"
python3 - "$out" > "$AIRLOCK_REPORT" <<'PY' || true
import json, sys
try:
    stats = json.load(open(sys.argv[1], errors="replace")).get("stats") or {}
except ValueError:
    stats = {}
models = []
for name, m in (stats.get("models") or {}).items():
    t = (m or {}).get("tokens") or {}
    models.append({"name": name[:200], "tokens_in": int(t.get("prompt", 0)),
                   "tokens_out": int(t.get("candidates", 0)) + int(t.get("thoughts", 0))})
# The main model answered the `main` role; without roles, the one with most tokens out.
main = [n for n, m in (stats.get("models") or {}).items() if "main" in ((m or {}).get("roles") or {})]
report = {"models": models[:16]}
if main:
    report["model"] = main[0][:200]
print(json.dumps(report))
PY
exit "$status"
