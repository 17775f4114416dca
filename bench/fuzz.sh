#!/usr/bin/env bash
# Fuzzing campaign (not a test): runs every cargo-fuzz target in fuzz/ for SECONDS each and
# prints one table: target, executions, coverage (libFuzzer's `cov:` edges), crashes. A crash
# leaves its input under fuzz/artifacts/<target>/ and makes the script fail; fuzz/README.md
# says how a crash becomes a fixture and a regression test.
#
# Usage: bench/fuzz.sh [SECONDS] [TARGET...]     (default 60 s, every target in fuzz/Cargo.toml)
#        bench/fuzz.sh --check                     (every target type-checks; what CI runs)
# Installs what it needs when missing: the nightly toolchain (rustup) and cargo-fuzz.
# .ci/run runs `bench/fuzz.sh --check`: every target still compiles against today's helpers,
# on the stable toolchain, without a sanitizer build of the whole tree; the targets' seeds and
# mutations of them run in `cargo test` (each crate's fuzzing tests and airlock-testkit).
# A campaign is `bench/fuzz.sh 1800`.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--check" ]; then
  # `cfg(fuzzing)` is what cargo-fuzz sets; the fuzz crate keeps its own lock file out of git.
  RUSTFLAGS="--cfg fuzzing" cargo check --quiet --manifest-path fuzz/Cargo.toml --bins \
    --target-dir target/fuzz-check
  echo "fuzz targets: $(sed -n 's/^name = "\([a-z_]*\)"$/\1/p' fuzz/Cargo.toml | grep -vc '^airlock-fuzz$') compile" >&2
  exit 0
fi
SECONDS_PER_TARGET="${1:-60}"
shift || true

if ! rustup toolchain list | grep -q '^nightly'; then
  echo "installing the nightly toolchain (rustup; libFuzzer needs it)" >&2
  rustup toolchain install nightly --profile minimal >&2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz (crates.io)" >&2
  cargo install cargo-fuzz --locked --quiet >&2
fi

if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(sed -n 's/^name = "\([a-z_]*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^airlock-fuzz$')
fi

# One build of every target first, so the time budget goes to fuzzing.
cargo +nightly fuzz build --fuzz-dir fuzz >&2

logs="$(mktemp -d "${TMPDIR:-/tmp}/airlock-fuzz.XXXXXX")"
trap 'rm -rf "$logs"' EXIT
failed=0
rows=()
for t in "${targets[@]}"; do
  log="$logs/$t.log"
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  # A private copy of the committed seeds, so the run's new inputs are never committed by accident.
  work_corpus="$logs/corpus-$t"
  mkdir -p "$work_corpus"
  set +e
  cargo +nightly fuzz run --fuzz-dir fuzz "$t" "$work_corpus" "fuzz/corpus/$t" -- \
    -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 -rss_limit_mb=2048 \
    -artifact_prefix="fuzz/artifacts/$t/" >"$log" 2>&1
  status=$?
  set -e
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)"
  if [ "$status" -ne 0 ]; then
    crashes="$(grep -c '^artifact_prefix=\|Test unit written to' "$log" || true)"
    [ "$crashes" -gt 0 ] || crashes=1
    failed=1
    echo "== $t failed (exit $status); last lines of its log:" >&2
    tail -n 30 "$log" >&2
  else
    crashes=0
  fi
  rows+=("$(printf '%-16s %12s %10s %8s' "$t" "${execs:-?}" "${cov:-?}" "$crashes")")
done

printf '%-16s %12s %10s %8s\n' target executions coverage crashes
printf '%s\n' "${rows[@]}"
if [ "$failed" -ne 0 ]; then
  echo "error: a fuzz target crashed or failed to run; its input is under fuzz/artifacts/ (fuzz/README.md: make it a fixture and a regression test)" >&2
  exit 1
fi
