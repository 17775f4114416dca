#!/usr/bin/env bash
# Posts a gated review job's comments as a GitHub pull-request review with line comments,
# with the trusted CI's token (GH_TOKEN of the workflow that gates; never the worker's: the
# worker holds no GitHub credential at all).
#
#   post-review.sh JOB PR
#
# Gates JOB (`airlock gate --json --github-review`), refuses to post a rejected review (exit
# 4: a secret in a comment, edits in a review job), and posts the payload airlock wrote:
# `event: COMMENT` on the packed revision (`commit_id`), one line comment per comment that
# passed the gate, each body airlock's Markdown (the worker's text inside a fence: no link,
# image or HTML of the worker's goes live). GitHub takes line comments only on lines of the
# pull request's diff: if it refuses the review (422), the comments are posted again folded
# into the review's body, under the headings airlock wrote. This script adds no text of the
# worker's itself; it only moves what airlock rendered.
#
# Run from the checkout the jobs were packed from. Environment:
#   AIRLOCK       the airlock binary (default: airlock); AIRLOCK_HOME its home (default .airlock)
#   REPO          owner/name (default: $GITHUB_REPOSITORY)
#   OUT_DIR       where the payload is written (default: airlock-reports)
#   GH            the GitHub CLI (default: gh); GH=none prints what would be posted instead
# Exit: 0 posted (or printed), 4 the review was rejected and nothing posted, 1 an error.
set -euo pipefail
job="${1:?usage: post-review.sh JOB PR}"
pr="${2:?usage: post-review.sh JOB PR}"
AIRLOCK="${AIRLOCK:-airlock}"
export AIRLOCK_HOME="${AIRLOCK_HOME:-.airlock}"
REPO="${REPO:-${GITHUB_REPOSITORY:-}}"
OUT_DIR="${OUT_DIR:-airlock-reports}"
GH="${GH:-gh}"
mkdir -p "$OUT_DIR"
payload="$OUT_DIR/$job.review.json"
status=0
"$AIRLOCK" gate "$job" --repo . --json --github-review "$payload" > "$OUT_DIR/$job.gate.json" || status=$?
case "$status" in
  0|3) ;;
  4) echo "job $job was rejected (see $OUT_DIR/$job.gate.json): no review posted" >&2; exit 4 ;;
  *) echo "airlock gate failed ($status): no review posted" >&2; exit 1 ;;
esac
# The API takes exactly GitHub's members: drop `headings` (airlock's, for the fallback).
python3 - "$payload" "$OUT_DIR/$job.lines.json" "$OUT_DIR/$job.folded.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
headings = p.pop("headings")
json.dump(p, open(sys.argv[2], "w"))
folded = {k: p[k] for k in ("commit_id", "event")}
parts = [p["body"]]
for h, c in zip(headings, p["comments"]):
    parts.append(h + "\n\n" + c["body"])
folded["body"] = "\n\n".join(parts)
json.dump(folded, open(sys.argv[3], "w"))
PY
endpoint="repos/$REPO/pulls/$pr/reviews"
if [ "$GH" = none ]; then
    echo "would run: gh api --method POST $endpoint --input $OUT_DIR/$job.lines.json"
    echo "fallback:  gh api --method POST $endpoint --input $OUT_DIR/$job.folded.json"
    exit 0
fi
if ! "$GH" api --method POST "$endpoint" --input "$OUT_DIR/$job.lines.json" >/dev/null; then
    echo "GitHub refused the line comments (lines outside the pull request's diff?); posting them in the review body" >&2
    "$GH" api --method POST "$endpoint" --input "$OUT_DIR/$job.folded.json" >/dev/null
fi
echo "posted the review of job $job on pull request #$pr"
