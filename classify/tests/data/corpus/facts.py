#!/usr/bin/env python3
"""Adds the facts column of classify-corpus.tsv from local clones of the corpus repositories.

For every row, reads the REAL file and tree at the clone's HEAD and records, comma-separated:
  exec            the file is executable (mode 100755)
  shebang         the file starts with "#!"
  k8s cfn ansible compose systemd dockerfile
                  what its content is (top-level apiVersion+kind; AWSTemplateFormatVersion or
                  Resources with AWS:: types; a play list with hosts+tasks/roles; services with
                  image/build; [Unit]/[Service] with Exec*=; FROM then RUN/COPY/CMD)
  run-by=E        a CI or build entry point E of the real tree names the file as a token
  run-by=E>S      ... or names a script S that names the file (one level of indirection)
No file content is copied: the test builds small content of that kind (tests/data/corpus/*).
Usage: facts.py MIRROR_DIR < classify-corpus.tsv > classify-corpus.tsv.new
MIRROR_DIR holds one bare clone per repository, named owner+name/repo.
"""
import os, re, subprocess, sys

ENTRY = re.compile(r'(^|/)\.github/workflows/[^/]+\.ya?ml$|(^|/)action\.ya?ml$|gitlab-ci\.ya?ml$|^\.gitlab/ci/'
                   r'|^\.circleci/|azure-pipelines[^/]*\.ya?ml$|^eng/pipelines/|(^|/)jenkinsfile[^/]*$|^\.drone\.ya?ml$'
                   r'|^\.buildkite/.*\.ya?ml$|^\.travis\.yml$|^\.zuul\.ya?ml$|^zuul\.d/|^ci/|(^|/)makefile$'
                   r'|(^|/)gnumakefile$|\.mk$|(^|/)justfile$|(^|/)package\.json$|(^|/)tox\.ini$|(^|/)noxfile\.py$', re.I)
RUNNABLE = re.compile(r'\.(sh|bash|zsh|ps1|bat|cmd|py|rb|pl|js|mjs|cjs|ts|php|lua|groovy|go|awk)$', re.I)

def git(repo, *args):
    return subprocess.run(['git', '-C', repo, *args], capture_output=True).stdout

def tokens(text):
    for raw in re.split(r'[\s\'"`(;|&<>,\[\]=]+', text):
        t = raw
        for sep in ('}/', ')/'):
            if sep in t: t = t[t.rindex(sep) + 2:]
        if t.startswith('$'): t = t[t.index('/') + 1:] if '/' in t else ''
        t = t.rstrip(':)}\\')
        if t and '://' not in t: yield t

def norm(p):
    out = []
    for c in p.split('/'):
        if c in ('', '.'): continue
        if c == '..':
            if not out: return None
            out.pop()
        else: out.append(c)
    return '/'.join(out) or None

def named(path, text, files):
    base = path.rsplit('/', 1)[0] if '/' in path else ''
    found = set()
    for line in text.splitlines():
        if line.strip().startswith(('paths:', 'paths-ignore:')): continue
        for t in tokens(line):
            for cand in (t, base + '/' + t):
                p = norm(cand)
                if p and p in files and p != path:
                    found.add(p); break
    return found

def kinds(b):
    t = b.decode('utf-8', 'replace')
    out = []
    if re.search(r'^apiVersion:', t, re.M) and re.search(r'^kind:', t, re.M): out.append('k8s')
    if 'AWSTemplateFormatVersion' in t or (re.search(r'^Resources:', t, re.M) and 'AWS::' in t): out.append('cfn')
    if re.search(r'^\s{0,4}-?\s*hosts:', t, re.M) and re.search(r'^\s{0,4}-?\s*(tasks|roles|import_playbook):', t, re.M): out.append('ansible')
    if re.search(r'^services:', t, re.M) and re.search(r'^\s+(image|build):', t, re.M): out.append('compose')
    if re.search(r'^\[(Unit|Service)\]', t, re.M) and re.search(r'^Exec\w*=', t, re.M): out.append('systemd')
    lines = [l.strip() for l in t.splitlines() if l.strip() and not l.strip().startswith('#')]
    if lines and lines[0].upper().startswith('FROM ') and any(l.split()[0].upper() in ('RUN', 'COPY', 'CMD', 'ENTRYPOINT') for l in lines[1:]): out.append('dockerfile')
    if t.startswith('#!'): out.append('shebang')
    return out

def main():
    mirror = sys.argv[1]
    cache = {}
    for line in sys.stdin:
        line = line.rstrip('\n')
        if line.startswith('#') or not line.strip():
            print(line); continue
        repo, path, label = line.split('\t')[:3]
        g = os.path.join(mirror, repo.replace('/', '+'), 'repo')
        if repo not in cache:
            files = {}
            for rec in git(g, 'ls-tree', '-r', '-z', 'HEAD').split(b'\0'):
                if not rec: continue
                meta, p = rec.split(b'\t', 1)
                mode, kind, oid = meta.decode().split()
                if kind == 'blob': files[p.decode('utf-8', 'replace')] = (mode, oid)
            level1 = {}
            for e in [p for p in files if ENTRY.search(p)][:4096]:
                text = git(g, 'cat-file', '-p', files[e][1])[:262144].decode('utf-8', 'replace')
                for p in named(e, text, files):
                    if RUNNABLE.search(p) or files[p][0] == '100755': level1.setdefault(p, e)
            reach = {p: e for p, e in level1.items()}
            for s, e in list(level1.items()):
                if ENTRY.search(s): continue
                text = git(g, 'cat-file', '-p', files[s][1])[:262144].decode('utf-8', 'replace')
                for p in named(s, text, files):
                    if p not in reach and (RUNNABLE.search(p) or files[p][0] == '100755'): reach[p] = e + '>' + s
            cache[repo] = (files, reach)
        files, reach = cache[repo]
        facts = []
        if path in files:
            mode, oid = files[path]
            if mode == '100755': facts.append('exec')
            facts += kinds(git(g, 'cat-file', '-p', oid)[:65536])
            if path in reach: facts.append('run-by=' + reach[path])
            parts = path.split('/')
            for n in range(len(parts) - 1, 0, -1):
                d = '/'.join(parts[:n])
                if d + '/Chart.yaml' in files:
                    facts.append('pkg=' + d + '/Chart.yaml'); break
                if d + '/metadata.hcl' in files and d + '/variables.hcl' in files:
                    facts.append('pkg=' + d + '/metadata.hcl+variables.hcl'); break
        print('\t'.join([repo, path, label] + ([','.join(facts)] if facts else [])))

main()
