#!/bin/sh
# aider (PyPI aider-chat) as an airlock generator. No arguments: reads $AIRLOCK_PROMPT_FILE,
# asks for $AIRLOCK_MODEL when set (with the provider prefix $AIDER_PROVIDER, default
# `openai/`), runs aider non-interactively through its Python entry point, and writes
# $AIRLOCK_REPORT from each completion the model server returned: the `model` it answered
# with and its `usage`, per model (aider's main and weak models).
#   airlock-worker run ... --readable ~/.airlock-agents/aider --home-template DIR \
#     --pass-env OPENAI_API_KEY -- /path/to/aider.sh
# DIR/.aider.conf.yml sets the API base and options (docs/GENERATORS.md).
# airlock-needs: aider
set -eu
# aider's interpreter: the one its entry script names (its virtualenv's).
py=$(sed -n '1s/^#!//p' "$(command -v aider)")
set -- --message-file "$AIRLOCK_PROMPT_FILE" --yes-always --no-stream --no-pretty
if [ -n "${AIRLOCK_MODEL:-}" ]; then set -- "$@" --model "${AIDER_PROVIDER-openai/}$AIRLOCK_MODEL"; fi
exec "$py" - "$@" <<'PY'
import json, os, sys

from aider import models
from aider.main import main

usage = {}
send = models.Model.send_completion


def counted(self, *args, **kwargs):
    hashed, completion = send(self, *args, **kwargs)
    name = getattr(completion, "model", None)
    u = getattr(completion, "usage", None)
    if isinstance(name, str) and name and u is not None:
        e = usage.setdefault(name[:200], [0, 0])
        e[0] += int(getattr(u, "prompt_tokens", 0) or 0)
        e[1] += int(getattr(u, "completion_tokens", 0) or 0)
    return hashed, completion


models.Model.send_completion = counted
status = 1
try:
    status = main(sys.argv[1:]) or 0
finally:
    report = {"models": [{"name": n, "tokens_in": i, "tokens_out": o} for n, (i, o) in usage.items()][:16]}
    with open(os.environ["AIRLOCK_REPORT"], "w") as f:
        json.dump(report, f)
sys.exit(status)
PY
