#!/usr/bin/env python3
"""Example generator: asks any OpenAI-compatible chat-completions endpoint for a unified
diff, applies it in the workdir, and reports the model the endpoint says answered.

Contract (docs/FORMATS.md): cwd = workdir; $AIRLOCK_PROMPT_FILE, $AIRLOCK_WORKDIR and
$AIRLOCK_REPORT are set; the worker computes the diff itself afterwards.

Configuration, first found wins:
  base URL  front matter `base_url:` in the prompt, else $OPENAI_BASE_URL
            (e.g. https://api.openai.com/v1; the request must allow its host:port as egress)
  model     front matter `model:` in the prompt, else $OPENAI_MODEL
  API key   the variable named by $AIRLOCK_API_KEY_ENV (default OPENAI_API_KEY); pass it
            with `airlock-worker run --pass-env OPENAI_API_KEY ...`. Never logged.
Front matter is an optional block at the very top of the prompt (it is part of the signed
request, so the trusted side chooses endpoint and model):
  ---
  base_url: https://api.example.com/v1
  model: some-model
  ---
  <the prompt>

Network: through $HTTPS_PROXY / $HTTP_PROXY (the worker's egress proxy) when set, always as
a CONNECT tunnel (TLS inside for https, plain HTTP inside for http; the proxy forwards
nothing but tunnels), else directly.

Applying: no `git apply` on the worker and `patch` may be absent or follow symlinks, so the
small applier below does it: unified diff only, exact context (a hunk may move, never
fuzz), every path relative and inside the workdir, no symlinks, all files or none.

Exit codes: 0 applied (or the model answered with an empty diff), 1 failure (message on
stderr), 2 usage.
"""

import http.client
import json
import os
import re
import ssl
import sys
import urllib.parse

MAX_RESPONSE_BYTES = 8 << 20
MAX_CONTEXT_BYTES = 256 << 10
MAX_FILE_BYTES = 64 << 10
TIMEOUT_SECS = float(os.environ.get("AIRLOCK_GEN_TIMEOUT", "600"))

SYSTEM = (
    "You are a careful software engineer. You are given a repository and a task. Answer "
    "with exactly one unified diff (git style: '--- a/path', '+++ b/path', '@@' hunks with "
    "correct line counts and three lines of context) inside one ```diff fenced block, and "
    "nothing else. Use '--- /dev/null' for new files. Do not touch files you were not asked "
    "to change."
)


class Fail(Exception):
    pass


# ---------------------------------------------------------------- configuration


def read_prompt(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    meta = {}
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        for i, line in enumerate(lines[1:], start=1):
            if line.strip() == "---":
                text = "\n".join(lines[i + 1 :])
                break
            key, sep, value = line.partition(":")
            if not sep:
                meta = {}
                break
            meta[key.strip().lower()] = value.strip()
        else:
            meta = {}
    return meta, text.strip()


def config(meta):
    base = meta.get("base_url") or os.environ.get("OPENAI_BASE_URL", "")
    model = meta.get("model") or os.environ.get("OPENAI_MODEL", "")
    key_env = os.environ.get("AIRLOCK_API_KEY_ENV", "OPENAI_API_KEY")
    key = os.environ.get(key_env, "")
    if not base or not model:
        raise Fail("no base URL or model: set base_url/model in the prompt's front matter "
                   "or OPENAI_BASE_URL/OPENAI_MODEL")
    url = urllib.parse.urlsplit(base)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise Fail("base URL must be http:// or https:// with a host")
    return url, model, key, key_env


# ---------------------------------------------------------------- context


def repo_context(root):
    parts, used = [], 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            if os.path.getsize(path) > MAX_FILE_BYTES:
                parts.append("=== %s (omitted: large)\n" % rel)
                continue
            with open(path, "rb") as f:
                data = f.read()
            if b"\0" in data:
                continue
            chunk = "=== %s\n%s\n" % (rel, data.decode("utf-8", errors="replace"))
            if used + len(chunk) > MAX_CONTEXT_BYTES:
                parts.append("=== %s (omitted: context full)\n" % rel)
                continue
            parts.append(chunk)
            used += len(chunk)
    return "".join(parts)


# ---------------------------------------------------------------- HTTP through the proxy


def proxy_for(scheme):
    names = ("HTTPS_PROXY", "https_proxy") if scheme == "https" else ("HTTP_PROXY", "http_proxy")
    for n in names:
        v = os.environ.get(n)
        if v:
            p = urllib.parse.urlsplit(v)
            if p.scheme != "http" or not p.hostname:
                raise Fail("%s must be http://host:port" % n)
            return p.hostname, p.port or 80
    return None


def post_json(url, path, body, key):
    port = url.port or (443 if url.scheme == "https" else 80)
    proxy = proxy_for(url.scheme)
    target = (proxy[0], proxy[1]) if proxy else (url.hostname, port)
    if url.scheme == "https":
        conn = http.client.HTTPSConnection(
            *target, timeout=TIMEOUT_SECS, context=ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(*target, timeout=TIMEOUT_SECS)
    if proxy:
        conn.set_tunnel(url.hostname, port)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    try:
        conn.request("POST", path, body=json.dumps(body).encode(), headers=headers)
        resp = conn.getresponse()
        data = resp.read(MAX_RESPONSE_BYTES + 1)
    except OSError as e:
        # The proxy's refusal names its rule in the tunnel error (e.g. egress.not-allowed).
        raise Fail("request to %s:%d failed: %s" % (url.hostname, port, e))
    finally:
        conn.close()
    if len(data) > MAX_RESPONSE_BYTES:
        raise Fail("response larger than %d bytes" % MAX_RESPONSE_BYTES)
    if resp.status != 200:
        raise Fail("endpoint answered HTTP %d" % resp.status)
    try:
        return json.loads(data)
    except ValueError:
        raise Fail("endpoint answered something that is not JSON")


def ask_model(url, model, key, prompt, context):
    path = url.path.rstrip("/") + "/chat/completions"
    body = {
        "model": model,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Task:\n%s\n\nRepository:\n%s" % (prompt, context)},
        ],
    }
    reply = post_json(url, path, body, key)
    try:
        content = reply["choices"][0]["message"]["content"] or ""
    except (KeyError, IndexError, TypeError):
        raise Fail("no choices[0].message.content in the response")
    usage = reply.get("usage") or {}
    report = {"model": str(reply.get("model") or "")[:200] or None}
    for ours, theirs in (("tokens_in", "prompt_tokens"), ("tokens_out", "completion_tokens")):
        if isinstance(usage.get(theirs), int) and usage[theirs] >= 0:
            report[ours] = usage[theirs]
    return content, report


# ---------------------------------------------------------------- the diff


def extract_diff(content):
    m = re.search(r"```(?:diff|patch)?[ \t]*\n(.*?)```", content, re.S)
    text = m.group(1) if m else content
    start = re.search(r"^(diff --git |--- )", text, re.M)
    return text[start.start():] if start else ""


HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def strip_path(p):
    p = p.split("\t")[0].strip()
    if p == "/dev/null":
        return None
    if p.startswith(("a/", "b/")):
        p = p[2:]
    return p


def parse_diff(text):
    """[(old_path or None, new_path or None, [(old_start, [lines])])]: each hunk line keeps
    its ' ', '-' or '+' prefix; '\\ No newline' marks the previous line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    files, i = [], 0
    while i < len(lines):
        if lines[i].startswith("diff --git "):
            # An empty file created or deleted has a git header and no ---/+++ lines.
            j = i + 1
            while j < len(lines) and not lines[j].startswith(("diff --git ", "--- ")):
                j += 1
            if j >= len(lines) or lines[j].startswith("diff --git "):
                names = lines[i][len("diff --git "):].split(" ")
                if len(names) == 2:
                    header = lines[i + 1:j]
                    if any(h.startswith("new file mode") for h in header):
                        files.append((None, strip_path(names[1]), []))
                    elif any(h.startswith("deleted file mode") for h in header):
                        files.append((strip_path(names[0]), None, []))
            i = j
            continue
        if not lines[i].startswith("--- "):
            i += 1
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
            raise Fail("diff: '---' without '+++' at line %d" % (i + 1))
        old, new = strip_path(lines[i][4:]), strip_path(lines[i + 1][4:])
        i += 2
        hunks = []
        while i < len(lines) and lines[i].startswith("@@"):
            m = HUNK.match(lines[i])
            if not m:
                raise Fail("diff: bad hunk header at line %d" % (i + 1))
            old_start = int(m.group(1))
            old_left = int(m.group(2)) if m.group(2) is not None else 1
            new_left = int(m.group(4)) if m.group(4) is not None else 1
            i += 1
            body = []
            while i < len(lines) and (old_left > 0 or new_left > 0):
                line = lines[i]
                tag = line[:1]
                if line == "":
                    line, tag = " ", " "  # an empty context line whose space was lost
                if tag == " ":
                    old_left, new_left = old_left - 1, new_left - 1
                elif tag == "-":
                    old_left -= 1
                elif tag == "+":
                    new_left -= 1
                elif tag == "\\":
                    body.append(line)
                    i += 1
                    continue
                else:
                    raise Fail("diff: unexpected line %d in a hunk" % (i + 1))
                body.append(line)
                i += 1
            if old_left != 0 or new_left != 0:
                raise Fail("diff: hunk line counts do not match its body")
            while i < len(lines) and lines[i].startswith("\\"):
                body.append(lines[i])
                i += 1
            hunks.append((old_start, body))
        files.append((old, new, hunks))
    return files


def safe_path(root, rel):
    if rel is None:
        return None
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in rel:
        raise Fail("diff: path %r is not a plain relative path" % rel)
    if parts[0] == ".git":
        raise Fail("diff: path %r is inside .git" % rel)
    path = os.path.join(root, *parts)
    cur = root
    for p in parts:
        cur = os.path.join(cur, p)
        if os.path.islink(cur):
            raise Fail("diff: path %r goes through a symlink" % rel)
    if not os.path.realpath(path).startswith(os.path.realpath(root) + os.sep):
        raise Fail("diff: path %r leaves the workdir" % rel)
    return path


def split_keep(data):
    """Lines without their newline, and whether the last one had none."""
    if data == "":
        return [], False
    lines = data.split("\n")
    if lines[-1] == "":
        lines.pop()
        return lines, False
    return lines, True


def apply_file(old_text, hunks, name):
    old, old_no_eol = split_keep(old_text)
    out, pos, new_no_eol = [], 0, old_no_eol
    for old_start, body in hunks:
        want, repl, prev, new_side_no_eol = [], [], None, False
        for line in body:
            if line.startswith("\\"):
                # "\ No newline at end of file" belongs to the line before it.
                new_side_no_eol = new_side_no_eol or prev in (" ", "+")
                continue
            tag, text = line[0], line[1:]
            prev = tag
            if tag in " -":
                want.append(text)
            if tag in " +":
                repl.append(text)
        at = find(old, want, max(old_start - 1, 0), pos)
        if at is None:
            raise Fail("diff: hunk at line %d of %s does not apply" % (old_start, name))
        if at + len(want) == len(old):
            new_no_eol = new_side_no_eol
        out.extend(old[pos:at])
        out.extend(repl)
        pos = at + len(want)
    out.extend(old[pos:])
    if not out:
        return ""
    return "\n".join(out) + ("" if new_no_eol else "\n")


def find(lines, want, hint, floor):
    n = len(want)
    if n == 0:
        return min(max(hint, floor), len(lines))
    for delta in range(0, len(lines) + 1):
        for at in (hint - delta, hint + delta) if delta else (hint,):
            if floor <= at <= len(lines) - n and lines[at:at + n] == want:
                return at
    return None


def apply_diff(root, text):
    files = parse_diff(text)
    writes = []
    for old, new, hunks in files:
        old_path, new_path = safe_path(root, old), safe_path(root, new)
        if old_path is None and new_path is None:
            raise Fail("diff: /dev/null on both sides")
        if old_path is not None:
            if not os.path.isfile(old_path):
                raise Fail("diff: %s does not exist" % old)
            with open(old_path, encoding="utf-8", newline="") as f:
                before = f.read()
        else:
            if os.path.lexists(new_path):
                raise Fail("diff: %s already exists" % new)
            before = ""
        after = apply_file(before, hunks, old or new)
        if new_path is None:
            if after != "":
                raise Fail("diff: deleting %s but its content does not match" % old)
            writes.append((old_path, None))
        else:
            if old_path is not None and old_path != new_path:
                writes.append((old_path, None))
            writes.append((new_path, after))
    for path, content in writes:
        if content is None:
            os.remove(path)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(content)
    return len(files)


# ---------------------------------------------------------------- main


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) > 1:
        print("usage: openai-chat.py (configured by the prompt and the environment)",
              file=sys.stderr)
        return 2
    root = os.path.realpath(os.environ.get("AIRLOCK_WORKDIR") or os.getcwd())
    prompt_file = os.environ.get("AIRLOCK_PROMPT_FILE")
    if not prompt_file:
        print("openai-chat: AIRLOCK_PROMPT_FILE is not set", file=sys.stderr)
        return 2
    try:
        meta, prompt = read_prompt(prompt_file)
        url, model, key, key_env = config(meta)
        print("openai-chat: asking %s (model %s, key from %s: %s)" % (
            url.hostname, model, key_env, "set" if key else "unset"), file=sys.stderr)
        content, report = ask_model(url, model, key, prompt, repo_context(root))
        report_path = os.environ.get("AIRLOCK_REPORT")
        if report_path:
            with open(report_path, "w") as f:
                json.dump({k: v for k, v in report.items() if v is not None}, f)
        diff = extract_diff(content)
        if not diff.strip():
            print("openai-chat: the model answered without a diff", file=sys.stderr)
            return 0
        n = apply_diff(root, diff)
        print("openai-chat: applied a diff touching %d file(s); model reported %r" % (
            n, report.get("model")), file=sys.stderr)
        return 0
    except Fail as e:
        print("openai-chat: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
