#!/usr/bin/env python3
"""Classify the held-out set with `airlock classify --repo` against each real tree (clones under
MIRROR, one `owner+name/repo` git directory each); print the recall of risky paths (verdict
human) and the over-flag rate of harmless ones.
Usage: heldout.py AIRLOCK_BINARY classify-heldout.tsv [MIRROR]   (QUIET=1: the figures only)"""
import os
import json, subprocess, sys, collections
BIN = sys.argv[1]; TSV = sys.argv[2]; MIRROR = sys.argv[3] if len(sys.argv) > 3 else "/work/.mirror"
RISKY = {"ci", "iac", "deps", "build", "governance", "agent"}
by = collections.defaultdict(list)
for l in open(TSV):
    if l.startswith('#') or not l.strip(): continue
    repo, path, label = l.rstrip('\n').split('\t')[:3]
    by[repo].append((path, label))
rn = rc = hn = hf = 0; miss = []; fa = []
for repo, rows in by.items():
    d = f"{MIRROR}/{repo.replace('/', '+')}/repo"
    out = subprocess.run([BIN, 'classify', '--repo', d, '--json'], input='\n'.join(p for p, _ in rows) + '\n',
                         capture_output=True, text=True)
    if out.returncode != 0:
        print(repo, out.stderr[:300]); continue
    got = {r['path']: r for r in json.loads(out.stdout)}
    for path, label in rows:
        r = got[path]; human = r['verdict'] != 'queue'
        line = f"{repo} {path}: {label}, got {r['bucket']} ({r['rule']}){' ' + r['because'] if r.get('because') else ''}"
        if label in RISKY:
            rn += 1; rc += human
            if not human: miss.append(line)
        else:
            hn += 1; hf += human
            if human: fa.append(line)
if not os.environ.get("QUIET"):
    print("missed:"); print('\n'.join('  ' + m for m in miss))
    print("over-flagged:"); print('\n'.join('  ' + m for m in fa))
print(f"held-out: {rn+hn} paths, {len(by)} repositories; recall {rc}/{rn} = {100*rc/rn:.1f}%, over-flag {hf}/{hn} = {100*hf/hn:.1f}%")
