#!/usr/bin/env python3
"""Held-out sampling (classify-heldout.tsv): per repository, group HEAD's files by (top dir, extension or name), draw
up to N groups (seed 42), unusual types first, one file per group; fill to N from the rest."""
import os, random, subprocess, sys
COMMON = {'.py','.js','.ts','.go','.rs','.java','.kt','.cs','.rb','.ex','.exs','.c','.h','.cc','.cpp','.hpp','.md','.rst','.txt','.json','.png','.svg','.jpg','.html','.css','.tsx','.jsx','.snap','.yaml','.yml','.lua','.vim','.scala'}
N = 20
MIRROR = '/work/.mirror'
repos = sys.argv[1:]
rng = random.Random(42)
for repo in repos:
    d = f"{MIRROR}/{repo.replace('/', '+')}/repo"
    out = subprocess.run(['git', '-C', d, 'ls-tree', '-r', '-z', 'HEAD'], capture_output=True, check=True).stdout
    files = []
    for ent in out.split(b'\0'):
        if not ent: continue
        meta, path = ent.split(b'\t', 1)
        mode, kind, _ = meta.split()
        if kind != b'blob' or mode == b'120000': continue
        try: p = path.decode()
        except UnicodeDecodeError: continue
        if not p.isascii() or any(c in p for c in '\t\n"\\'): continue
        files.append(p)
    groups = {}
    for p in files:
        top = p.split('/')[0] if '/' in p else ''
        base = p.rsplit('/', 1)[-1]
        ext = os.path.splitext(base)[1].lower() or base
        groups.setdefault((top, ext), []).append(p)
    keys = sorted(groups)
    rng.shuffle(keys)
    keys.sort(key=lambda k: k[1] in COMMON)
    picked = [rng.choice(sorted(groups[k])) for k in keys[:N]]
    rest = sorted(set(files) - set(picked))
    rng.shuffle(rest)
    picked += rest[:max(0, N - len(picked))]
    for p in sorted(picked):
        print(f"{repo}\t{p}")
