#!/usr/bin/env bash
# One command, no setup: builds airlock, makes an example git repository, a trusted home
# (keys + a local file store, no server) in a temp dir, and packs a signed bundle.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --release -p airlock
AIRLOCK="$PWD/target/release/airlock"
work="$(mktemp -d "${TMPDIR:-/tmp}/airlock-quickstart.XXXXXX")"
echo "working in $work"

repo="$work/example-repo"
mkdir -p "$repo/src"
cat > "$repo/src/calc.py" <<'PY'
def add(a, b):
    return a + b
PY
printf 'DATABASE_URL=postgres://app:do-not-ship@db/prod\n' > "$repo/.env"
printf '# example\n' > "$repo/README.md"
git -C "$repo" init -q -b main
git -C "$repo" add -A -f .
git -C "$repo" -c user.name=example -c user.email=example@example.invalid commit -q -m "example"
printf 'Add type hints and a docstring to add().\n' > "$work/prompt.txt"

"$AIRLOCK" --home "$work/.airlock" init
"$AIRLOCK" --home "$work/.airlock" pack --repo "$repo" --prompt-file "$work/prompt.txt" \
  --model example-model --out "$work/out"
echo
echo "bundle and envelope in $work/out (.env was never packed)"
