#!/bin/sh
# opencode (npm opencode-ai) as an airlock generator. No arguments: reads
# $AIRLOCK_PROMPT_FILE, runs `opencode run --format json` non-interactively with the model
# $AIRLOCK_MODEL of the provider $OPENCODE_PROVIDER (default `local`, defined in
# ~/.config/opencode/opencode.json), and writes $AIRLOCK_REPORT: usage per model, named as
# the server answered. opencode keeps only the name it asked for, so the wrapper adds a
# plugin (airlock-report.js, in the generator's private ~/.config/opencode/plugin/) that
# reads each model response as opencode receives it and notes the response's `model` and
# `usage`; nothing in the request or the answer is changed.
#   airlock-worker run ... --readable ~/.airlock-agents/npm --home-template DIR \
#     --pass-env OPENAI_API_KEY -- /path/to/opencode.sh
# airlock-needs: opencode python3
set -eu
tmp="${TMPDIR:-/tmp}"
out="$tmp/opencode.jsonl"
seen="$tmp/opencode-answers.jsonl"
plugins="$HOME/.config/opencode/plugin"
mkdir -p "$plugins"
: > "$seen"
cat > "$plugins/airlock-report.js" <<'JS'
// airlock: notes the model name and usage of each model server response (one JSON line
// per response in $AIRLOCK_OPENCODE_ANSWERS). Reads a copy of the body; opencode gets the
// response unchanged. Written by examples/generators/opencode.sh.
import { appendFileSync } from "node:fs"
const file = process.env.AIRLOCK_OPENCODE_ANSWERS
const inner = globalThis.fetch
const num = (v) => (Number.isSafeInteger(v) && v >= 0 ? v : 0)
function note(seen, j) {
  if (!j || typeof j !== "object") return false
  const m = [j.model, j.response?.model, j.message?.model, j.modelVersion].find((x) => typeof x === "string")
  if (m && !seen.model) seen.model = m
  for (const u of [j.usage, j.response?.usage, j.message?.usage, j.usageMetadata]) {
    if (!u || typeof u !== "object") continue
    seen.in = Math.max(seen.in, num(u.prompt_tokens) || num(u.input_tokens) || num(u.promptTokenCount))
    seen.out = Math.max(seen.out, num(u.completion_tokens) || num(u.output_tokens) || num(u.candidatesTokenCount))
  }
  // An OpenAI chat-completions stream carries its usage in its last chunk.
  return Number.isSafeInteger(j.usage?.completion_tokens)
}
// One line per response: at a chat-completions stream's usage chunk (before opencode sees
// the end of the stream and may exit), else at the end of the body.
function write(seen) {
  if (seen.model && !seen.written) appendFileSync(file, JSON.stringify({ model: seen.model, in: seen.in, out: seen.out }) + "\n")
  seen.written = true
}
async function read(body) {
  const seen = { model: null, in: 0, out: 0, written: false }
  const dec = new TextDecoder()
  const r = body.getReader()
  let buf = ""
  let all = ""
  for (;;) {
    const { done, value } = await r.read()
    if (done) break
    const text = dec.decode(value, { stream: true })
    buf += text
    if (all.length < 1 << 20) all += text
    let i
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i).trim()
      buf = buf.slice(i + 1)
      if (line.startsWith("data:")) {
        try { if (note(seen, JSON.parse(line.slice(5)))) write(seen) } catch {}
      }
    }
  }
  if (!seen.model) {
    try { note(seen, JSON.parse(all)) } catch {}
  }
  write(seen)
}
if (file && typeof inner === "function") {
  globalThis.fetch = async (...args) => {
    const res = await inner(...args)
    if (!res.body || !res.ok) return res
    try {
      const [mine, theirs] = res.body.tee()
      read(mine).catch(() => {})
      return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers })
    } catch {
      return res
    }
  }
}
export const AirlockReport = async () => ({})
JS
set -- run --format json
if [ -n "${AIRLOCK_MODEL:-}" ]; then set -- "$@" --model "${OPENCODE_PROVIDER:-local}/$AIRLOCK_MODEL"; fi
status=0
AIRLOCK_OPENCODE_ANSWERS="$seen" OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 \
  opencode "$@" "$(cat "$AIRLOCK_PROMPT_FILE")" < /dev/null > "$out" || status=$?
cat "$out"
python3 - "$seen" > "$AIRLOCK_REPORT" <<'PY' || true
import json, sys
usage, order = {}, []
for line in open(sys.argv[1], errors="replace"):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    m = e.get("model") if isinstance(e, dict) else None
    if not isinstance(m, str) or not m:
        continue
    m = m[:200]
    if m not in usage:
        usage[m] = [0, 0]
        order.append(m)
    usage[m][0] += int(e.get("in") or 0)
    usage[m][1] += int(e.get("out") or 0)
models = [{"name": m, "tokens_in": usage[m][0], "tokens_out": usage[m][1]} for m in order][:16]
print(json.dumps({"models": models} if models else {}))
PY
exit "$status"
