#!/bin/sh
# Example generator: a source edit that also changes a CI workflow. A CI edit runs with the
# repository's secrets on the next push, so the default policy sends it to a human.
set -eu
cd "$AIRLOCK_WORKDIR"
cat > src/calc.py <<'PY'
def add(a: int, b: int) -> int:
    """Return the sum of a and b."""
    return a + b
PY
cat >> .github/workflows/ci.yml <<'YML'
      - run: python -m pytest -q
YML
printf '{"model": "example-model-2026-01", "tokens_in": 640, "tokens_out": 98}\n' > "$AIRLOCK_REPORT"
