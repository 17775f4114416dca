#!/usr/bin/env bash
# Benchmark (not a test): `airlock pack --redact` against the baseline
# `git archive HEAD | gzip -6` on a corpus, in the same run, alternating, median of N runs.
# Corpora: `cpython` (the CPython standard library as a git repository, the default) or
# `registry` (this machine's cargo registry sources, ~/.cargo/registry/src/*, committed as one
# revision: at least 150 MB and 10,000 files on a machine that built airlock).
# Prints, against the baseline of the same run: pack's speed-up (target >= 3x), its bundle
# size (target <= 1.15x the baseline's), its peak RSS (target < 128 MiB); then an incremental
# pack: a commit changing 10 files, packed after its parent was (the pack cache warm), timed
# against a full pack (target <= 0.10x) and compared byte for byte with a pack of the same
# revision with the cache off (AIRLOCK_PACK_CACHE=off). Full packs run with the cache off.
#
# Usage: bench/pack.sh [RUNS] [cpython|registry]
#   env: CORPUS=dir (the corpus repository; default target/bench/<corpus>)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-5}"
KIND="${2:-cpython}"
CORPUS="${CORPUS:-$PWD/target/bench/$KIND}"
SHARED="${AIRLOCK_SHARED:-$(cd .. && pwd)/shared}" # the founders' shared directory (make-corpus.sh)
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }

make_registry() { # a one-commit repository of ~/.cargo/registry/src/*/ (idempotent)
  [ -d "$1/.git" ] && git -C "$1" rev-parse -q --verify HEAD >/dev/null && return
  local src
  src="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/ | head -1)"
  rm -rf "$1" && mkdir -p "$1" && cp -a "$src"/. "$1"/
  export GIT_AUTHOR_NAME=corpus GIT_AUTHOR_EMAIL=corpus@example.invalid
  export GIT_COMMITTER_NAME=corpus GIT_COMMITTER_EMAIL=corpus@example.invalid
  export GIT_AUTHOR_DATE="2024-01-01T00:00:00Z" GIT_COMMITTER_DATE="2024-01-01T00:00:00Z"
  git -C "$1" init -q -b main
  git -C "$1" config core.autocrlf false
  git -C "$1" add -A -f .
  git -C "$1" commit -q -m "cargo registry sources"
  git -C "$1" gc -q
}
case "$KIND" in
  cpython) bash "$SHARED/bench/make-corpus.sh" "$CORPUS" >&2 ;;
  registry) make_registry "$CORPUS" >&2 ;;
  *) echo "unknown corpus $KIND: use cpython or registry" >&2; exit 2 ;;
esac
# The build the README installs (`cargo build --release`): `pack` runs on the trusted host,
# where a team builds airlock that way; AIRLOCK_BIN picks another (a release build already made,
# e.g. the static musl build of scripts/release.sh, which the worker's image ships).
if [ -z "${AIRLOCK_BIN:-}" ]; then cargo build --release --quiet --locked -p airlock >&2; fi
AIRLOCK="${AIRLOCK_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/release/airlock}"
echo "measuring $AIRLOCK" >&2
work="$(mktemp -d "${TMPDIR:-/tmp}/airlock-bench-pack.XXXXXX")"
trap 'rm -rf "$work"' EXIT
"$AIRLOCK" --home "$work/home" init >/dev/null
echo "Refactor nothing; this is a benchmark." > "$work/prompt.txt"

measure() { # prints "seconds maxrss_kib cpu_seconds" of the command (cpu: user + system)
  # Wall time from the clock in nanoseconds: time's %e has a resolution of 10 ms, a tenth of
  # an incremental pack.
  local start end
  start="$(date +%s%N)"
  /usr/bin/time -f "%M %U %S" -o "$work/t" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  end="$(date +%s%N)"
  awk -v ns="$((end - start))" '{printf "%.4f %s %.2f\n", ns / 1e9, $1, $2 + $3}' "$work/t"
}
P=("$AIRLOCK" --home "$work/home" -q pack --repo "$CORPUS" --prompt-file "$work/prompt.txt" \
  --redact --out "$work/out")
OFF=(env AIRLOCK_PACK_CACHE=off)
pack_t=(); pack_m=(); base_t=(); pack_c=(); base_c=(); inc_c=()
for i in $(seq "$RUNS"); do
  rm -rf "$work/out"
  read -r t m c < <(measure "${OFF[@]}" "${P[@]}")
  pack_t+=("$t"); pack_m+=("$m"); pack_c+=("$c")
  read -r t _ c < <(measure bash -c "git -C '$CORPUS' archive HEAD | gzip -6 > '$work/base.tar.gz'")
  base_t+=("$t"); base_c+=("$c")
done
base_bytes="$(stat -c %s "$work/base.tar.gz")"
rm -rf "$work/out"; "${OFF[@]}" "${P[@]}" --json > "$work/summary.json"

# A new revision: 10 text files spread over the tree, each with a line added, committed beside
# HEAD (a temporary index; neither HEAD nor the working tree changes).
git -C "$CORPUS" ls-files -- '*.rs' '*.py' > "$work/text-files"
mapfile -t changed < <(awk -v n="$(wc -l < "$work/text-files")" 'NR % int(n / 10) == 0' "$work/text-files" | head -10)
export GIT_INDEX_FILE="$work/index"
git -C "$CORPUS" read-tree HEAD
for f in "${changed[@]}"; do
  oid="$( { git -C "$CORPUS" cat-file blob "HEAD:$f"; echo "# changed by bench/pack.sh"; } | git -C "$CORPUS" hash-object -w --stdin)"
  git -C "$CORPUS" update-index --cacheinfo "100644,$oid,$f"
done
new="$(GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.invalid GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.invalid \
  GIT_AUTHOR_DATE="2024-01-02T00:00:00Z" GIT_COMMITTER_DATE="2024-01-02T00:00:00Z" \
  git -C "$CORPUS" commit-tree -p HEAD -m "bench: 10 files changed" "$(git -C "$CORPUS" write-tree)")"
unset GIT_INDEX_FILE
inc_t=()
for i in $(seq "$RUNS"); do
  rm -rf "$work/home/cache/pack" "$work/out"
  "${P[@]}" >/dev/null # the parent, packed: the cache is warm
  rm -rf "$work/out"
  read -r t _ c < <(measure "${P[@]}" --rev "$new")
  inc_t+=("$t"); inc_c+=("$c")
done
rm -rf "$work/home/cache/pack" "$work/out"
"${P[@]}" >/dev/null
rm -rf "$work/out"
"${P[@]}" --rev "$new" --json > "$work/inc.json" # what the timed runs did
cp "$work/out/bundle.tar.gz" "$work/inc.tar.gz"
rm -rf "$work/out"
"${OFF[@]}" "${P[@]}" --rev "$new" >/dev/null
cmp -s "$work/out/bundle.tar.gz" "$work/inc.tar.gz" \
  || { echo "the incremental pack gave other bytes than a pack with the cache off" >&2; exit 1; }

python3 - "$work/summary.json" "${pack_t[*]}" "${base_t[*]}" "${pack_m[*]}" "$base_bytes" "${inc_t[*]}" "$work/inc.json" "${#changed[@]}" "${pack_c[*]}" "${base_c[*]}" "${inc_c[*]}" <<'PY'
import json, statistics, sys
s = json.load(open(sys.argv[1]))
pt = [float(x) for x in sys.argv[2].split()]
bt = [float(x) for x in sys.argv[3].split()]
pm = [int(x) for x in sys.argv[4].split()]
base_bytes = int(sys.argv[5])
it = [float(x) for x in sys.argv[6].split()]
inc = json.load(open(sys.argv[7]))
p, b, i = statistics.median(pt), statistics.median(bt), statistics.median(it)
pc, bc, ic = (statistics.median(float(x) for x in sys.argv[k].split()) for k in (9, 10, 11))
print(f"corpus: {s['files']} files, {s['bytes']/2**20:.1f} MiB packed")
print(f"redacted: {sum(s['redacted'].values())} findings in {s['redacted_files']} files")
print(f"skipped: {sum(s['skipped'].values())} paths ({', '.join(f'{k} {v}' for k, v in s['skipped'].items())})")
print(f"airlock pack --redact      median {p:.2f} s  (runs: {' '.join(f'{x:.2f}' for x in pt)})")
print(f"git archive | gzip -6      median {b:.2f} s  (runs: {' '.join(f'{x:.2f}' for x in bt)})")
print(f"speed-up vs baseline: {b/p:.2f}x (target >= 3x); CPU time (user + system) {pc:.2f} s vs {bc:.2f} s")
print(f"bundle {s['bundle_bytes']/2**20:.1f} MiB vs baseline {base_bytes/2**20:.1f} MiB: {s['bundle_bytes']/base_bytes:.3f}x (target <= 1.15x)")
print(f"pack peak RSS: {max(pm)/1024:.1f} MiB (target < 128 MiB)")
c = inc["cache"]
print(f"new revision, {sys.argv[8]} files changed, parent packed: median {i:.3f} s (runs: {' '.join(f'{x:.3f}' for x in it)}) "
      f"= {i/p:.3f}x a full pack (target <= 0.10x); CPU time {ic:.2f} s = {ic/pc:.3f}x; same bytes as with the cache off")
print(f"  files scanned {c['files_scanned']}, reused {c['files_reused']}; groups compressed {c['groups_built']}, reused {c['groups_reused']}")
PY
