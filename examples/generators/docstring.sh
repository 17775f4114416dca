#!/bin/sh
# Example generator: an ordinary source edit. Stands in for an LLM coding CLI: it reads the
# prompt, edits the workdir, and reports which model answered. Contract (docs/FORMATS.md):
# cwd = workdir; $AIRLOCK_PROMPT_FILE, $AIRLOCK_WORKDIR, $AIRLOCK_REPORT are set.
set -eu
cd "$AIRLOCK_WORKDIR"
test -s "$AIRLOCK_PROMPT_FILE"
cat > src/calc.py <<'PY'
def add(a: int, b: int) -> int:
    """Return the sum of a and b."""
    return a + b


def sub(a: int, b: int) -> int:
    """Return a minus b."""
    return a - b
PY
cat >> tests/test_calc.py <<'PY'


def test_sub():
    assert sub(3, 2) == 1
PY
sed -i 's/^from calc import add$/from calc import add, sub/' tests/test_calc.py
printf '{"model": "example-model-2026-01", "tokens_in": 812, "tokens_out": 164}\n' > "$AIRLOCK_REPORT"
