#!/usr/bin/env bash
# Gates what has landed and opens one pull request per job that needs review: runs
# `airlock watch --once --review-branch`, then for every gated job whose decision is `queue`
# or `human` and whose review branch is not on the remote yet: writes the `--md` report,
# pushes `airlock/<job>`, and opens a pull request with the report as its body, labelled
# `airlock:<decision>`. Rejected jobs get no branch and no pull request.
#
# Run from the checkout of the repository the jobs were packed from (full history).
# Environment:
#   AIRLOCK        the airlock binary (default: airlock)
#   AIRLOCK_HOME   its home (default: .airlock)
#   REMOTE         where review branches go (default: origin)
#   BASE           the pull requests' base branch (default: main)
#   OUT_DIR        where report bodies are written (default: airlock-reports)
#   GH             the GitHub CLI (default: gh); GH=none prints the `gh` command instead of
#                  running it (the tests use this: the `gh` call itself is not tested)
# Exit: 0 when every job was handled, 1 otherwise.
set -euo pipefail
AIRLOCK="${AIRLOCK:-airlock}"
export AIRLOCK_HOME="${AIRLOCK_HOME:-.airlock}"
REMOTE="${REMOTE:-origin}"
BASE="${BASE:-main}"
OUT_DIR="${OUT_DIR:-airlock-reports}"
GH="${GH:-gh}"
mkdir -p "$OUT_DIR"

# Gate everything that landed. A job that could not be gated makes watch exit 1: go on with
# the others, and fail at the end.
status=0
"$AIRLOCK" watch --once --review-branch --repo . >&2 || status=1

# JOB STATE CHECKPOINT LANDED DECISION REVIEW: the timestamps hold no spaces.
"$AIRLOCK" status | awk 'NR > 1 && $2 == "gated" && ($5 == "queue" || $5 == "human") { print $1, $5 }' |
while read -r job decision; do
    branch="airlock/$job"
    git rev-parse --verify --quiet "refs/heads/$branch" >/dev/null || continue
    if git ls-remote --exit-code "$REMOTE" "refs/heads/$branch" >/dev/null 2>&1; then
        continue # pushed on an earlier run: its pull request exists
    fi
    body="$OUT_DIR/$job.md"
    "$AIRLOCK" show "$job" --md "$body" >/dev/null
    git push --quiet "$REMOTE" "refs/heads/$branch:refs/heads/$branch"
    title="airlock: job $job ($decision)"
    label="airlock:$decision"
    if [ "$GH" = none ]; then
        printf 'would run: gh pr create --base %s --head %s --title %q --body-file %s --label %s\n' \
            "$BASE" "$branch" "$title" "$body" "$label"
    else
        "$GH" label create "$label" --force >/dev/null 2>&1 || true
        "$GH" pr create --base "$BASE" --head "$branch" --title "$title" \
            --body-file "$body" --label "$label"
    fi
    echo "opened review for $job ($decision): $branch"
done
exit "$status"
