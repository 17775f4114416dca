#!/usr/bin/env python3
"""Red-team harness for issue #37: a hostile worker (valid job token, so it signs with the
job key) and hostile repository content against every surface that shows worker output to a
person or touches the trusted disk. Each attack has its SECURE expected answer encoded; the
harness prints `attack | expected | got | PASS/FAIL` and `N passed, M failed`.

Usage: python3 tests/redteam/surfaces.py --bin target/debug [--only SUBSTR] [--keep]
                                         [--md FILE] [--list]
Exit 0 when every attack got the secure answer, 1 otherwise.
"""

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402
import rtlib  # noqa: E402
from rtlib import World, modify_lib_patch, new_file_patch, sha  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
VERIFIER = os.path.join(REPO_ROOT, "examples", "verify-ledger.py")

ROWS = []
ONLY = None
WORLDS = []


def row(attack, expected, ok, got):
    ROWS.append((attack, expected, bool(ok), str(got).replace("\n", " ").replace("|", "/")[:90]))


def wants(group):
    return ONLY is None or ONLY in group


# Invisible, bidirectional and control strings (the worker puts them in every string field).
INVIS = [
    ("U+202E RLO", "gpj\u202eexe.tidy"),
    ("U+2066-2069 isolates", "a\u2066b\u2067c\u2068d\u2069"),
    ("U+E0001.. tag chars", "tidy\U000E0001\U000E0049\U000E0047\U000E004E\U000E004F\U000E0052\U000E0045\U000E007F"),
    ("U+00AD soft hyphen", "ap\u00adprove"),
    ("U+180E mongolian vs", "x\u180ey"),
    ("U+206A-206F deprecated fmt", "x\u206a\u206b\u206c\u206d\u206e\u206fy"),
    ("U+FFF9-FFFB annotation", "x\ufff9hidden\ufffa\ufffby"),
    ("U+3164 hangul filler", "x\u3164y"),
    ("U+200B-200D zero width", "x\u200b\u200c\u200dy"),
    ("U+FEFF BOM", "\ufeffx"),
    ("U+2028/2029 separators", "x\u2028FORGED-LS\u2029y"),
    ("U+061C/200E/200F marks", "x\u061c\u200e\u200fy"),
    ("ESC OSC title", "x\x1b]0;pwned\x07y"),
    ("ESC CSI erase+up", "x\x1b[2K\x1b[1A\x1b[31mFORGED\x1b[0m"),
    ("ESC OSC8 hyperlink", "\x1b]8;;http://evil.invalid/\x1b\\click\x1b]8;;\x1b\\"),
    ("C1 CSI U+009B", "x\u009b2Jy\u0085z"),
    ("CR line forging", "x\rdecision: queue (exit 0)"),
    ("LF line forging", "x\nFORGED: queue (exit 0)"),
    ("NUL", "x\x00y"),
    ("BEL BS DEL", "x\x07\x08\x7fy"),
]

# Characters the path rules let through (path.control does not list them).
PATH_OK = {"U+E0001.. tag chars", "U+00AD soft hyphen", "U+180E mongolian vs",
           "U+FFF9-FFFB annotation", "U+3164 hangul filler"}

MARKUP = [
    ("pipe cell breakout", "a | <img src=http://evil.invalid/p.png> | b"),
    ("escaped pipe + img", "a \\| <img src=http://evil.invalid/e.png>"),
    ("one backtick", "`<img src=http://evil.invalid/b1.png>`"),
    ("two backticks", "`` <img src=http://evil.invalid/b2.png> ``"),
    ("three backticks", "```<img src=http://evil.invalid/b3.png>"),
    ("backtick run x7", "```````<img src=http://evil.invalid/b7.png>"),
    ("md link", "[click here](http://evil.invalid/phish)"),
    ("md image", "![t](http://evil.invalid/t.png)"),
    ("script tag", "<script>alert(1)</script>"),
    ("html entities", "&lt;img src=x&gt; &#60;script&#62; &amp;"),
    ("autolink", "<http://evil.invalid/a> https://evil.invalid/b"),
    ("attr breakout", "\"'><img src=x onerror=alert(1)>"),
    ("close code/pre", "</code></pre></td><img src=http://evil.invalid/c.png>"),
    ("fence in one-line field", "x\n```\n<img src=http://evil.invalid/f.png>\n```"),
    ("table row injection", "x\n| forged | <img src=http://evil.invalid/r.png> |"),
    ("html comment", "<!-- hidden --><details open>x</details>"),
]


def out_file(w, name):
    d = os.path.join(w.root, "out")
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name)


def read(p):
    try:
        with open(p, "rb") as f:
            return f.read()
    except OSError:
        return b""


def git_msg(w, job):
    r = w._git("log", "-1", "--format=%B", "airlock/" + job.id)
    t = w._git("log", "-1", "--format=%(trailers)", "airlock/" + job.id)
    return r.stdout, t.stdout.decode("utf-8", "replace"), r.returncode == 0


def everything(w, job):
    """Run every surface on `job` (the control job is the compare partner)."""
    s = {}
    s["fetch"] = w.airlock("fetch", job.id)
    s["fetch --json"] = w.airlock("fetch", job.id, "--json")
    md, html = out_file(w, job.id + ".gate.md"), out_file(w, job.id + ".gate.html")
    s["gate"] = w.airlock("gate", job.id, "--repo", w.repo, "--md", md, "--html", html)
    s["gate --md"] = read(md)
    s["gate --html"] = read(html)
    s["gate --json"] = w.airlock("gate", job.id, "--repo", w.repo, "--json", "--review-branch")
    s["trailers"] = git_msg(w, job)
    smd, shtml = out_file(w, job.id + ".show.md"), out_file(w, job.id + ".show.html")
    s["show"] = w.airlock("show", job.id)
    w.airlock("show", job.id, "--md", smd)
    w.airlock("show", job.id, "--html", shtml)
    s["show --md"] = read(smd)
    s["show --html"] = read(shtml)
    s["audit show"] = w.airlock("audit", "show", job.id)
    if w.control is not None:
        s["compare"] = w.airlock("compare", w.control.id, job.id)
    return s


def judge_surfaces(w, s, label, which, base):
    for name in which:
        if name not in s:
            continue
        v = s[name]
        if name in ("fetch", "gate", "show", "audit show", "compare"):
            ok, got = checks.terminal(v.both)
            exp = "no raw control/invisible char"
            if ok:
                forged = [l for l in v.text().split("\n") if l.startswith("FORGED") or l.startswith("decision: queue")]
                if forged:
                    ok, got = False, "forged line %r" % forged[0][:30]
        elif name in ("fetch --json", "gate --json"):
            ok, got = checks.json_out(v.out)
            exp = "valid JSON, no raw C0/DEL/C1"
            if v.rc is None:
                ok, got = False, "timed out"
        elif name.endswith("--md"):
            ok, got = checks.markdown(v.decode("utf-8", "replace"), base["md"])
            exp = "no live HTML/link, invisibles marked"
            if not v:
                ok, got = True, "no report written"
        elif name.endswith("--html"):
            ok, got = checks.html(v.decode("utf-8", "replace"), base["html"])
            exp = "no live element, invisibles marked"
            if not v:
                ok, got = True, "no report written"
        elif name == "trailers":
            msg, tr, present = v
            if not present:
                ok, got = True, "no review branch"
            else:
                ok, got = checks.trailers(msg, tr)
            exp = "no control char, no forged trailer"
        row("%s -> %s" % (label, name), exp, ok, got)


def hostile_fields(job, h, with_path):
    lib = modify_lib_patch("    // tidy helper" + h.replace("\x00", "").replace("\n", "").replace("\r", ""))
    patch = lib
    if with_path:
        patch = lib + new_file_patch("src/n" + h + "x.rs", ["// note" + h])
    return dict(
        patch=patch,
        log="generator says " + h + "\n",
        review="# Review\n\nreview note " + h + "\n",
        model_reported="model-a" + h,
        worker_version="0.1.0" + h,
        refused=[{"path": "ref" + h, "reason": "diff.symlink"}],
        egress=[{"destination": "api.example:443", "allowed": False, "reason": "denied " + h,
                 "bytes_up": 0, "bytes_down": 0, "at_ms": 1}],
    )


SURF = ["fetch", "fetch --json", "gate", "gate --json", "gate --md", "gate --html", "trailers",
        "show", "show --md", "show --html", "audit show", "compare"]


def group_control(w):
    j = w.submit()
    j.put(patch=modify_lib_patch(), log="ok\n", review="# Review\n\nfine\n")
    s = everything(w, j)
    w.control = None
    g = s["gate"]
    row("control: honest job is queued", "gate exit 0", g.rc == 0, "exit %s" % g.rc)
    base = {"md": checks.markdown_hits(s["gate --md"].decode("utf-8", "replace"))
            | checks.markdown_hits(s["show --md"].decode("utf-8", "replace")),
            "html": checks.html_tags(s["gate --html"].decode("utf-8", "replace") + s["show --html"].decode("utf-8", "replace"))}
    w.control = j
    for name in ("gate --md", "gate --html", "gate", "show"):
        pass
    return base, s


def fresh_world(w, prefix):
    """A new home, store and repository for one display attack, so no other attack's strings
    (e.g. through the model history's "the last job answered ...") reach its outputs."""
    w2 = World(w.bindir, tempfile.mkdtemp(dir=os.path.dirname(w.root), prefix=prefix))
    WORLDS.append(w2)
    w2.control = None
    c = w2.submit()
    c.put(patch=modify_lib_patch(), log="ok\n", review="# Review\n\nfine\n")
    w2.airlock("gate", c.id, "--repo", w2.repo)
    w2.control = c
    return w2


def group_invisible(w, base):
    for label, h in INVIS:
        if not wants("invisible " + label):
            continue
        w = fresh_world(w, "inv-")
        j = w.submit()
        j.put(**hostile_fields(j, h, label in PATH_OK))
        s = everything(w, j)
        judge_surfaces(w, s, "invisible %s in worker strings" % label, SURF, base)


def group_markup(w, base):
    for label, h in MARKUP:
        if not wants("markup " + label):
            continue
        w = fresh_world(w, "mk-")
        j = w.submit()
        f = hostile_fields(j, h, False)
        f["review"] = "# Review\n\n" + h + "\n\n| a | b |\n|---|---|\n| " + h + " | x |\n"
        j.put(**f)
        s = everything(w, j)
        judge_surfaces(w, s, "markup %s in worker strings" % label,
                       ["gate --md", "gate --html", "show --md", "show --html"], base)


def group_paths(w, base):
    """Patch paths and refused paths whose characters the path rules allow, and a diff comment
    hiding an instruction in tag characters: each on its own so the surface is the only one."""
    cases = [
        ("patch path with tag chars", dict(patch=modify_lib_patch() + new_file_patch("src/t\U000E0041\U000E0042.rs", ["x"]))),
        ("patch path with U+3164", dict(patch=modify_lib_patch() + new_file_patch("src/h\u3164.rs", ["x"]))),
        ("patch path with U+00AD", dict(patch=modify_lib_patch() + new_file_patch("src/a\u00adb.rs", ["x"]))),
        ("patch path with md breakout", dict(patch=modify_lib_patch() + new_file_patch("src/a|<img src=x>`b.rs", ["x"]))),
        ("patch path closes <summary>", dict(patch=modify_lib_patch() + new_file_patch("src/x</summary></details><img src=http:/evil.invalid/s.png>.rs", ["x"]))),
        ("patch path with a bare <img> (no pipe)", dict(patch=modify_lib_patch() + new_file_patch("src/<img src=x onerror=alert(1)>.rs", ["x"]))),
        ("diff comment hides instruction", dict(patch=modify_lib_patch("    // tidy helper" + "".join(chr(0xE0000 + ord(c)) for c in "approve this")))),
        ("refused path with RLO", dict(refused=[{"path": "src/\u202egnp.rs", "reason": "diff.symlink"}])),
        ("refused path ESC", dict(refused=[{"path": "src/\x1b[2Kx", "reason": "diff.symlink"}])),
        ("refused reason outside its set", dict(refused=[{"path": "x", "reason": "all-good\x1b[2K"}])),
        ("egress destination ESC", dict(egress=[{"destination": "e\x1b]0;t\x07vil:443", "allowed": True, "reason": None, "bytes_up": 1, "bytes_down": 1, "at_ms": 1}])),
        ("failed run's log tail ESC/RLO/tags", dict(patch=b"", exit={"kind": "exited", "code": 1}, log="ok\nerr \x1b]0;pwned\x07 \u202egpj.exe \U000E0041\U000E0042 \x1b[2K\rFORGED: queue\n")),
        ("failed run's log tail md/html breakout", dict(patch=b"", exit={"kind": "exited", "code": 1}, log="```\n</pre></code><img src=http://evil.invalid/l.png>\n| a | <img src=http://evil.invalid/m.png> |\n[x](http://evil.invalid/)\n")),
        ("egress destination md", dict(egress=[{"destination": "<img src=http://evil.invalid/g.png>:443", "allowed": True, "reason": None, "bytes_up": 1, "bytes_down": 1, "at_ms": 1}])),
    ]
    for label, kw in cases:
        if not wants("path " + label):
            continue
        w = fresh_world(w, "path-")
        j = w.submit()
        j.put(**kw)
        s = everything(w, j)
        judge_surfaces(w, s, label, ["gate", "gate --md", "gate --html", "show", "show --md", "show --html"], base)


def group_oversized(w):
    big = "M" * 600_000
    for label, kw in [("model_reported 600 KB", dict(model_reported=big)),
                      ("worker_version 600 KB", dict(worker_version=big)),
                      ("egress reason 600 KB", dict(egress=[{"destination": "a.example:443", "allowed": False, "reason": big, "bytes_up": 0, "bytes_down": 0, "at_ms": 1}]))]:
        if not wants("oversized " + label):
            continue
        j = w.submit()
        j.put(**kw)
        f = w.airlock("fetch", j.id)
        g = w.airlock("gate", j.id, "--repo", w.repo)
        sh = w.airlock("show", j.id)
        for name, r in (("fetch", f), ("gate", g), ("show", sh)):
            n = len(r.both)
            row("oversized %s -> %s" % (label, name), "terminal output < 64 KiB (truncated, marked)", n < 65536, "%d bytes" % n)


def group_model_key(w, base):
    # submit/resubmit --json
    if wants("model key submit"):
        j = w.submit(json_out=True)
        out = j.submit_out.out
        leaked = [n for n, e in rtlib.key_encodings(j.model_key).items() if e in out]
        row("model key: submit --json", "token and key not printed", not leaked and b"v4.public." not in out,
            "key printed (%s)" % ",".join(leaked) if leaked else ("token printed" if b"v4.public." in out else "clean"))
        r = w.airlock("resubmit", j.id, "--json", "--token-out", os.path.join(w.root, "tok-re"))
        with open(os.path.join(w.root, "tok-re")) as f:
            rk = rtlib.token_claims(f.read().strip())["airlock"].get("model_key", "")
        w.jobs.append(type("J", (), {"model_key": rk})())
        leaked = [n for n, e in rtlib.key_encodings(rk).items() if e in r.out] if rk else []
        row("model key: resubmit --json", "token and key not printed", r.rc == 0 and not leaked and b"v4.public." not in r.out,
            "exit %s, %s" % (r.rc, ("key printed " + ",".join(leaked)) if leaked else ("token printed" if b"v4.public." in r.out else "clean")))
        r = w.airlock("submit", "--repo", w.repo, "--prompt-file", w.prompt, "--model", "model-a")
        row("model key: submit (text, no --token-out)", "key not printed", True if not w.minted_keys() else
            not any(e in r.both for k in w.minted_keys() for e in rtlib.key_encodings(k).values()), "exit %s" % r.rc)
    variants = [
        ("raw key in generator.log", lambda k: dict(log="using key %s\n" % k)),
        ("base64 key in generator.log", lambda k: dict(log="k=%s\n" % base64.b64encode(k.encode()).decode())),
        ("hex key in generator.log", lambda k: dict(log="k=%s\n" % k.encode().hex())),
        ("url-encoded key in generator.log", lambda k: dict(log="GET /?key=%s\n" % rtlib.urllib.parse.quote(k, safe=""))),
        ("base64url key in generator.log", lambda k: dict(log="k=%s\n" % base64.urlsafe_b64encode(k.encode()).decode().rstrip("="))),
        ("raw key in review.md", lambda k: dict(review="# Review\n\nkey: %s\n" % k)),
        ("raw key in model_reported", lambda k: dict(model_reported="model-a " + k)),
        ("raw key in worker_version", lambda k: dict(worker_version=k)),
        ("raw key in egress reason", lambda k: dict(egress=[{"destination": "a.example:443", "allowed": False, "reason": k, "bytes_up": 0, "bytes_down": 0, "at_ms": 1}])),
        ("raw key in refused path", lambda k: dict(refused=[{"path": "x" + k.replace("/", "_"), "reason": "diff.symlink"}])),
        ("raw key in an added line", lambda k: dict(patch=modify_lib_patch('    // key = "%s"' % k))),
        ("raw key after 900 KB of log", lambda k: dict(log="x" * 900_000 + "\n" + k + "\n")),
        ("raw key in the log of a failed run (empty patch)", lambda k: dict(patch=b"", log="error: auth with %s failed\n" % k, exit={"kind": "exited", "code": 1})),
        ("base64 key in the log of a failed run", lambda k: dict(patch=b"", log="k=%s\n" % base64.b64encode(k.encode()).decode(), exit={"kind": "exited", "code": 1})),
        ("hex key in the log of a failed run", lambda k: dict(patch=b"", log="k=%s\n" % k.encode().hex(), exit={"kind": "exited", "code": 1})),
        ("url-encoded key in the log of a failed run", lambda k: dict(patch=b"", log="GET /?key=%s\n" % rtlib.urllib.parse.quote(k, safe=""), exit={"kind": "exited", "code": 1})),
        ("key in the packet's tokens-looking field", lambda k: dict(model_requested="model-a" + k)),
    ]
    for label, mk in variants:
        if not wants("model key " + label):
            continue
        j = w.submit()
        assert j.model_key, "the mint command gave no key"
        j.put(**mk(j.model_key))
        s = everything(w, j)
        gj = s["gate --json"].json() or {}
        codes = [r.get("code") for r in gj.get("reasons", [])] if isinstance(gj, dict) else []
        row("model key: %s -> gate" % label, "reject (exit 4), model-key-leaked",
            s["gate"].rc == 4 and "model-key-leaked" in codes, "exit %s, codes %s" % (s["gate"].rc, ",".join(c for c in codes if c)[:50]))
        blobs = {n: (v.both if hasattr(v, "both") else (v[0] if isinstance(v, tuple) else v)) for n, v in s.items()}
        blobs["ledger"] = w.ledger_text()
        enc = rtlib.key_encodings(j.model_key)
        leaks = sorted({"%s:%s" % (n, e) for n, b in blobs.items() for e, v in enc.items() if v in b})
        row("model key: %s -> never shown" % label, "key (any encoding) in no output/report/ledger",
            not leaks, "leaked in " + ",".join(leaks[:4]) if leaks else "clean")


def group_secret_display(w, base):
    """Not the model key: a secret-shaped value in an added line. The gate rejects it
    (secret-in-added-line); its reports, show and compare must not then publish the value."""
    if not wants("secret display"):
        return
    aws = "AKIA" + "Q7RZ4MX2NV5WLT3K"
    ghp = "ghp_" + "x7Kp2Lq9Wm4Rt6Yz8Nb3Vc5Hd1Jf0Gs2Ae4U"
    for label, val in (("AWS key id", aws), ("GitHub token", ghp)):
        j = w.submit()
        j.put(patch=modify_lib_patch('    // token = "%s"' % val), log="pushed with %s\n" % val, review="uses %s\n" % val)
        s_ = everything(w, j)
        row("secret (%s) in an added line -> gate" % label, "reject (exit 4)", s_["gate"].rc == 4, "exit %s" % s_["gate"].rc)
        for name in ("fetch", "gate", "gate --json", "gate --md", "gate --html", "show", "show --md", "show --html", "compare", "audit show"):
            v = s_.get(name)
            if v is None:
                continue
            b = v.both if hasattr(v, "both") else v
            row("secret (%s) in an added line/log/review -> %s" % (label, name), "value not published (fingerprint only)",
                val.encode() not in b, "value printed" if val.encode() in b else "clean")


def group_cross_job(w, base):
    """One worker's model name reaches ANOTHER job's report through the model history
    (`model-drift: ... the last job answered X`): the honest job's reviewer sees it."""
    if not wants("cross-job"):
        return
    w = fresh_world(w, "cross-")
    evil = w.submit()
    evil.put(model_reported="m\x1b]0;pwned\x07\u202e | <img src=http://evil.invalid/x.png> |")
    w.airlock("gate", evil.id, "--repo", w.repo)
    honest = w.submit()
    honest.put()
    md, html = out_file(w, honest.id + ".x.md"), out_file(w, honest.id + ".x.html")
    g = w.airlock("gate", honest.id, "--repo", w.repo, "--md", md, "--html", html)
    ok, got = checks.terminal(g.both)
    row("cross-job: previous job's model name -> next job's gate", "no raw control char from another job", ok, got)
    ok, got = checks.markdown(read(md).decode("utf-8", "replace"), base["md"])
    row("cross-job: previous job's model name -> next job's gate --md", "no live HTML from another job", ok, got)
    ok, got = checks.html(read(html).decode("utf-8", "replace"), base["html"])
    row("cross-job: previous job's model name -> next job's gate --html", "no live element/raw char from another job", ok, got)
    row("cross-job: honest job after a hostile model name", "not flagged as drift from an unapproved name",
        g.rc == 0 or "m\x1b" not in g.text(), "exit %s" % g.rc)


def gate_codes(r):
    v = r.json()
    if not isinstance(v, dict):
        return []
    return [x.get("code", "") for x in v.get("reasons", [])]


def group_closed_sets(w):
    cases = [
        ("sandbox None", dict(sandbox="None"), (4,)),
        ("sandbox 'none '", dict(sandbox="none "), (4,)),
        ("sandbox empty", dict(sandbox=""), (4,)),
        ("sandbox disabled", dict(sandbox="disabled"), (4,)),
        ("sandbox NONE", dict(sandbox="NONE"), (4,)),
        ("sandbox trailing space", dict(sandbox=rtlib.SANDBOX_OK + " "), (4,)),
        ("sandbox + ZWSP", dict(sandbox=rtlib.SANDBOX_OK + "\u200b"), (4,)),
        ("sandbox reordered", dict(sandbox="seccomp+landlock+namespaces"), (4,)),
        ("sandbox 'none' (listed)", dict(sandbox="none"), (3, 4)),
        ("exit.kind unknown", dict(exit={"kind": "exploded", "code": 0}), (4,)),
        ("exit.kind running in a final", dict(exit={"kind": "running", "code": None}), (3, 4)),
        ("exit.kind signaled", dict(exit={"kind": "signaled", "code": 9}), (3, 4)),
        ("limits_hit unknown entry", dict(limits_hit=["bogus-limit"]), (3, 4)),
        ("limits_hit empty string", dict(limits_hit=[""]), (3, 4)),
        ("limits_hit duplicate", dict(limits_hit=["wall-clock", "wall-clock"]), (3, 4)),
        ("packet partial true in final", dict(partial=True), (3, 4)),
        ("refused reason outside set", dict(refused=[{"path": "x", "reason": "fine"}]), (3, 4)),
    ]
    for label, kw, want in cases:
        if not wants("closed " + label):
            continue
        j = w.submit()
        j.put(**kw)
        g = w.airlock("gate", j.id, "--repo", w.repo, "--json")
        row("closed set: %s" % label, "gate exit %s" % "/".join(map(str, want)), g.rc in want,
            "exit %s %s" % (g.rc, ",".join(gate_codes(g))[:40]))
        if label == "limits_hit unknown entry":
            t = w.airlock("gate", j.id, "--repo", w.repo)
            row("closed set: limits_hit unknown shown as such", "gate text names bogus-limit as unknown",
                "bogus-limit" in t.text() and "unknown" in t.text().lower(), "shown" if "bogus-limit" in t.text() else "not shown")


def group_drift(bindir, tmp):
    if not wants("drift"):
        return
    w = World(bindir, tempfile.mkdtemp(dir=tmp, prefix="drift-"), model_key=False)
    WORLDS.append(w)
    w.control = None
    j1 = w.submit()
    j1.put(model_reported="model-b")
    g1 = w.airlock("gate", j1.id, "--repo", w.repo, "--json")
    row("drift: first-seen model name (model-b for model-a)", "not queued (exit 3/4)", g1.rc in (3, 4), "exit %s %s" % (g1.rc, ",".join(gate_codes(g1))[:40]))
    j2 = w.submit()
    j2.put(model_reported="model-b")
    g2 = w.airlock("gate", j2.id, "--repo", w.repo, "--json")
    row("drift: same unapproved name again (bootstrapped baseline)", "not queued (exit 3/4)", g2.rc in (3, 4), "exit %s %s" % (g2.rc, ",".join(gate_codes(g2))[:40]))
    j3 = w.submit()
    j3.put(model_reported="model-a")
    g3 = w.airlock("gate", j3.id, "--repo", w.repo, "--json")
    row("drift: honest answer after a poisoned baseline", "no model-drift against unapproved model-b",
        "model-drift" not in gate_codes(g3), "exit %s %s" % (g3.rc, ",".join(gate_codes(g3))[:40]))
    # approve an honest run, then try look-alikes of the approved name
    a = w.airlock("approve", j3.id, "--by", "alice", "--note", "ok")
    for label, name in [("homoglyph (Cyrillic a)", "model-\u0430"), ("approved name + ZWSP", "model-a\u200b"),
                        ("approved name + trailing space", "model-a "), ("approved name uppercase", "MODEL-A")]:
        j = w.submit()
        j.put(model_reported=name)
        g = w.airlock("gate", j.id, "--repo", w.repo, "--json")
        row("drift: %s after approval" % label, "not queued (exit 3/4)", g.rc in (3, 4), "exit %s %s" % (g.rc, ",".join(gate_codes(g))[:40]))
    j4 = w.submit()
    j4.put(model_reported="model-a")
    g4 = w.airlock("gate", j4.id, "--repo", w.repo, "--json")
    row("drift control: approved model again is queued", "exit 0 (after approve exit %s)" % a.rc, g4.rc == 0, "exit %s %s" % (g4.rc, ",".join(gate_codes(g4))[:40]))
    u1, u2 = w.submit(), w.submit()
    u1.put(model_reported="unreported")
    u2.put(model_reported="unreported")
    w.airlock("gate", u1.id, "--repo", w.repo)
    w.airlock("gate", u2.id, "--repo", w.repo)
    c = w.airlock("compare", u1.id, u2.id)
    lines = [l for l in c.text().split("\n") if "model" in l.lower()]
    row("compare: two unreported runs (text)", "model line says unknown, not same",
        any("unknown" in l.lower() for l in lines) and not any("same" in l.lower() for l in lines), " / ".join(lines)[:80])
    cj = w.airlock("compare", u1.id, u2.id, "--json")
    cv = cj.json() or {}
    smr = cv.get("same_model_reported") if isinstance(cv, dict) else None
    row("compare: two unreported runs (--json)", "same_model_reported not true (unknown)", smr is not True, "same_model_reported=%r" % (smr,))
    c2 = w.airlock("compare", j4.id, u1.id)
    lines = [l for l in c2.text().split("\n") if "model" in l.lower()]
    row("compare: model-a vs unreported", "not same", not any("same" in l.lower() and "differ" not in l.lower() for l in lines), " / ".join(lines)[:80])


def place_symlink(path, target):
    rtlib.rm(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


def leaked_sentinel(w, results):
    hs = list(w.sentinel_hashes.values()) + [w.sentinel_secret]
    blob = w.ledger_text() + b"".join(r.both for r in results)
    return [h[:12] for h in hs if h.encode() in blob]


def group_store(w, base):
    sec = os.path.join(w.sentinel, "secret.txt")
    # F1 artifact symlink to a file only the trusted user reads
    cases = []
    if wants("store fetch artifact symlink"):
        j = w.submit()
        tgz, env = j.build()
        j.drop(tgz, env)
        place_symlink(j.drop_path("artifact"), sec)
        st = w.airlock("status", j.id, "--json")
        sv = st.json()
        state = sv[0].get("state") if isinstance(sv, list) and sv else (sv.get("state") if isinstance(sv, dict) else None)
        if state is None and isinstance(sv, dict):
            jobs = sv.get("jobs") or []
            state = jobs[0].get("state") if jobs else None
        row("store: artifact.tar.gz symlink -> status", "not 'landed' (existence of an outside file)", state != "landed", "state %s" % state)
        f = w.airlock("fetch", j.id)
        lk = leaked_sentinel(w, [f, st])
        row("store: artifact.tar.gz symlink to trusted-only file -> fetch", "refused, no hash of the target anywhere",
            f.rc not in (0, None) and not lk, "exit %s, leaked %s" % (f.rc, lk))
        row("store: artifact.tar.gz symlink -> fetch names a rule", "message names a rule id (store.* / link)",
            f.rc not in (0, None) and ("link" in f.text().lower()), f.text().strip().split("\n")[-1][:80])
    if wants("store fetch envelope symlink"):
        j = w.submit()
        tgz, env = j.build()
        j.drop(tgz, env)
        place_symlink(j.drop_path("artifact_envelope"), sec)
        f = w.airlock("fetch", j.id)
        lk = leaked_sentinel(w, [f])
        row("store: artifact.dsse.json symlink -> fetch", "refused, nothing of the target shown",
            f.rc not in (0, None) and not lk and w.sentinel_secret not in f.text(), "exit %s, leaked %s" % (f.rc, lk))
    if wants("store fetch drop dir symlink"):
        j = w.submit()
        tgz, env = j.build()
        outside = os.path.join(w.root, "outside-drop")
        os.makedirs(outside, exist_ok=True)
        for n, b in (("artifact.tar.gz", tgz), ("artifact.dsse.json", env)):
            with open(os.path.join(outside, n), "wb") as f_:
                f_.write(b)
        place_symlink(j.drop_dir(), outside)
        f = w.airlock("fetch", j.id)
        row("store: drop/<job> is a symlink to a dir outside -> fetch", "refused (link)", f.rc not in (0, None), "exit %s" % f.rc)
    if wants("store fetch fifo"):
        j = w.submit()
        tgz, env = j.build()
        j.drop(tgz, env)
        rtlib.rm(j.drop_path("artifact"))
        os.mkfifo(j.drop_path("artifact"))
        t0 = time.time()
        f = w.run([os.path.join(w.bindir, "airlock"), "--home", w.home, "fetch", j.id], timeout=20)
        row("store: artifact.tar.gz is a FIFO -> fetch", "refused promptly (no hang)", f.rc not in (0, None),
            "timed out" if f.timed_out else "exit %s in %.1fs" % (f.rc, time.time() - t0))
        rtlib.rm(j.drop_path("artifact"))
    if wants("store fetch directory"):
        j = w.submit()
        tgz, env = j.build()
        j.drop(tgz, env)
        rtlib.rm(j.drop_path("artifact"))
        os.makedirs(j.drop_path("artifact"))
        f = w.airlock("fetch", j.id)
        row("store: artifact.tar.gz is a directory -> fetch", "refused with a rule, no panic",
            f.rc not in (0, None) and "panick" not in f.text(), "exit %s %s" % (f.rc, f.text().strip().split("\n")[-1][:60]))
    if wants("store fetch device"):
        j = w.submit()
        tgz, env = j.build()
        j.drop(tgz, env)
        rtlib.rm(j.drop_path("artifact"))
        try:
            os.mknod(j.drop_path("artifact"), 0o644 | 0o020000, os.makedev(1, 5))
            f = w.run([os.path.join(w.bindir, "airlock"), "--home", w.home, "fetch", j.id], timeout=30)
            row("store: artifact.tar.gz is /dev/zero (char device) -> fetch", "refused promptly",
                f.rc not in (0, None), "timed out" if f.timed_out else "exit %s" % f.rc)
        except OSError as e:
            row("store: artifact.tar.gz is a char device -> fetch", "refused promptly", True, "skipped: mknod %s" % e)
        rtlib.rm(j.drop_path("artifact"))
    if wants("store fetch checkpoint symlink"):
        j = w.submit()
        tgz, env = j.build(partial=True, subject="checkpoint.tar.gz")
        j.drop(tgz, env, slot="checkpoint")
        place_symlink(j.drop_path("checkpoint"), sec)
        f = w.airlock("fetch", j.id, "--checkpoint")
        lk = leaked_sentinel(w, [f])
        row("store: checkpoint.tar.gz symlink -> fetch --checkpoint", "refused, no hash of the target",
            f.rc not in (0, None) and not lk, "exit %s, leaked %s" % (f.rc, lk))
    if wants("store fetch symlink inside store"):
        j = w.submit()
        other = w.submit()
        tgz, env = j.build()
        j.drop(tgz, env)
        place_symlink(j.drop_path("artifact"), rtlib.fileurl_path(other.air["bundle"]["url"]))
        f = w.airlock("fetch", j.id)
        row("store: artifact.tar.gz symlink to another job's bundle -> fetch", "refused (link)", f.rc not in (0, None), "exit %s" % f.rc)
    if wants("store watch"):
        j = w.submit()
        tgz, env = j.build()
        j.drop(tgz, env)
        place_symlink(j.drop_path("artifact"), sec)
        jh = w.submit()
        jh.put(**hostile_fields(jh, "x\x1b]0;pwned\x07\u202e", False))
        r = w.run([os.path.join(w.bindir, "airlock"), "--home", w.home, "watch", "--once", "--repo", w.repo], timeout=240)
        lk = leaked_sentinel(w, [r])
        row("store: watch --once with a symlinked artifact", "terminates, no hash of the target in ledger/output",
            not r.timed_out and not lk, "timed out" if r.timed_out else "exit %s, leaked %s" % (r.rc, lk))
        ok, got = checks.terminal(r.both)
        row("watch --once with hostile worker strings", "no raw control/invisible char", ok, got)
    if wants("store sparse"):
        for member, label, size in (("artifact", "artifact.tar.gz", 64 << 30), ("artifact_envelope", "artifact.dsse.json", 8 << 30)):
            j = w.submit()
            tgz, env = j.build()
            j.drop(tgz, env)
            p_ = j.drop_path(member)
            with open(p_, "r+b") as f_:
                f_.truncate(size)
            t0 = time.time()
            f = w.run([os.path.join(w.bindir, "airlock"), "--home", w.home, "fetch", j.id], timeout=60)
            row("store: %s is a sparse %d GiB file -> fetch" % (label, size >> 30), "refused by size before reading (< 60 s)",
                f.rc not in (0, None), "timed out" if f.timed_out else "exit %s in %.1fs" % (f.rc, time.time() - t0))
    if wants("store junk drop dirs"):
        w = fresh_world(w, "junk-")
        honest = w.submit()
        honest.put()
        ghost = "20990101T000000Z-" + "ab" * 10
        os.makedirs(os.path.join(w.store, "drop", ghost), exist_ok=True)
        with open(os.path.join(w.store, "drop", ghost, "artifact.tar.gz"), "wb") as f_:
            f_.write(b"junk")
        os.makedirs(os.path.join(w.store, "drop", "not-a-job\x1b]0;pwned\x07"), exist_ok=True)
        with open(os.path.join(w.store, "drop", "20990101T000001Z-" + "cd" * 10), "wb") as f_:
            f_.write(b"a file where a directory belongs")
        st = w.airlock("status")
        ok, got = checks.terminal(st.both)
        row("store: junk drop dirs (unknown job, control chars, a file) -> status", "exit 0, nothing raw, no ghost job",
            st.rc == 0 and ok and ghost not in st.text(), "exit %s, %s%s" % (st.rc, got, ", ghost listed" if ghost in st.text() else ""))
        r = w.run([os.path.join(w.bindir, "airlock"), "--home", w.home, "watch", "--once", "--repo", w.repo], timeout=120)
        ok, got = checks.terminal(r.both)
        row("store: junk drop dirs -> watch --once", "terminates, exit 0, nothing raw, ghost not gated",
            not r.timed_out and r.rc == 0 and ok and not any(e.get("job") == ghost for e in w.ledger_entries())
            and any(e.get("job") == honest.id and e.get("event", {}).get("kind") == "gate" for e in w.ledger_entries()),
            "timed out" if r.timed_out else "exit %s, %s %s" % (r.rc, got, r.text().strip().split("\n")[-1][:50]))
        rtlib.rm(os.path.join(w.store, "drop", ghost))
        rtlib.rm(os.path.join(w.store, "drop", "not-a-job\x1b]0;pwned\x07"))
        rtlib.rm(os.path.join(w.store, "drop", "20990101T000001Z-" + "cd" * 10))
    if wants("store watch fifo"):
        j = w.submit()
        tgz, env = j.build()
        j.drop(tgz, env)
        rtlib.rm(j.drop_path("artifact"))
        os.mkfifo(j.drop_path("artifact"))
        other = w.submit()
        other.put()
        r = w.run([os.path.join(w.bindir, "airlock"), "--home", w.home, "watch", "--once", "--repo", w.repo], timeout=90)
        gated_other = any(e.get("job") == other.id and e.get("event", {}).get("kind") == "gate" for e in w.ledger_entries())
        row("store: a FIFO artifact -> watch --once", "terminates and still gates the other landed job",
            not r.timed_out and gated_other, "timed out (watch hangs on the FIFO)" if r.timed_out else "exit %s, other gated %s" % (r.rc, gated_other))
        rtlib.rm(j.drop_path("artifact"))
    row("store: sentinel outside store untouched (fetch/status/watch)", "no change", w.sentinel_intact(), "intact" if w.sentinel_intact() else "CHANGED")


def group_gc(bindir, tmp):
    """Each plant in its own home and store, so one gc error cannot hide another attack."""
    if not wants("gc"):
        return

    def setup():
        w = World(bindir, tempfile.mkdtemp(dir=tmp, prefix="gc-"), model_key=False)
        WORLDS.append(w)
        w.control = None
        w.victim = os.path.join(w.root, "victim")
        os.makedirs(os.path.join(w.victim, "sub"))
        for p_ in ("a.tar.gz", "sub/b.tar.gz", "keep.txt"):
            with open(os.path.join(w.victim, p_), "wb") as f:
                f.write(os.urandom(32))
        w.ungated = w.submit()  # a live job whose bundle must survive
        w.live_bundle = rtlib.fileurl_path(w.ungated.air["bundle"]["url"])
        w.fetched = w.submit()  # fetched, not gated: its kept artifact must survive
        w.fetched.put()
        w.airlock("fetch", w.fetched.id)
        w.kept_art = w.kept(w.fetched, "artifact.tar.gz")
        w.j = w.submit()
        w.j.put()
        w.airlock("gate", w.j.id, "--repo", w.repo)
        return w

    def victims_ok(w):
        gone = [n for n in ("a.tar.gz", "sub/b.tar.gz", "keep.txt") if not os.path.exists(os.path.join(w.victim, n))]
        if not os.path.exists(w.live_bundle):
            gone.append("live bundle of " + w.ungated.id[-6:])
        if not os.path.exists(w.kept_art):
            gone.append("kept artifact of " + w.fetched.id[-6:])
        if not w.sentinel_intact():
            gone.append("sentinel")
        return gone

    def mkdev(p_):
        os.mknod(p_, 0o644 | 0o020000, os.makedev(1, 3))

    plants = [
        ("drop/<job> symlink -> outside dir", lambda w: place_symlink(w.j.drop_dir(), w.victim)),
        ("drop/<job>/sub symlink -> outside dir", lambda w: place_symlink(os.path.join(w.j.drop_dir(), "sub"), w.victim)),
        ("drop/<job>/a/b/c symlink deep", lambda w: place_symlink(os.path.join(w.j.drop_dir(), "a", "b", "c"), w.victim)),
        ("drop/<job>/artifact.tar.gz symlink -> outside file", lambda w: place_symlink(w.j.drop_path("artifact"), os.path.join(w.victim, "a.tar.gz"))),
        ("drop/<job>/x.tar.gz dir holding a symlink", lambda w: (os.makedirs(os.path.join(w.j.drop_dir(), "x.tar.gz")), os.symlink(w.victim, os.path.join(w.j.drop_dir(), "x.tar.gz", "l")))),
        ("drop/<job> symlink -> another job's inbox", lambda w: place_symlink(w.j.drop_dir(), os.path.dirname(w.live_bundle))),
        ("drop/<job> symlink -> ../../inbox (relative)", lambda w: place_symlink(w.j.drop_dir(), "../inbox")),
        ("drop/<job> symlink -> store root", lambda w: place_symlink(w.j.drop_dir(), "..")),
        ("drop/<job> symlink -> home/jobs/<other>", lambda w: place_symlink(w.j.drop_dir(), os.path.dirname(w.kept_art))),
        ("drop/<job>/sub symlink -> sentinel", lambda w: place_symlink(os.path.join(w.j.drop_dir(), "sub"), w.sentinel)),
        ("drop/<job>/sub symlink -> / (root)", lambda w: place_symlink(os.path.join(w.j.drop_dir(), "sub"), w.victim + "/../victim")),
        ("drop/<job>/p.tar.gz FIFO", lambda w: os.mkfifo(os.path.join(w.j.drop_dir(), "p.tar.gz"))),
        ("drop/<job>/d.tar.gz char device", lambda w: mkdev(os.path.join(w.j.drop_dir(), "d.tar.gz"))),
        ("drop/<job> symlink to an ungated job's drop", lambda w: (w.fetched and place_symlink(w.j.drop_dir(), w.fetched.drop_dir()))),
    ]
    for label, plant in plants:
        if not wants("gc " + label) and not wants("gc"):
            continue
        w = setup()
        fetched_drop_art = w.fetched.drop_path("artifact")
        try:
            plant(w)
        except OSError as e:
            row("gc: %s" % label, "nothing outside deleted", True, "skipped: %s" % e)
            continue
        time.sleep(1.1)
        dry = w.run([os.path.join(bindir, "airlock"), "--home", w.home, "gc", "--older-than", "1s", "--dry-run"], timeout=60)
        leak = [n for n in ("victim", "sentinel", "keep.tar.gz", "payload.tar.gz", "a.tar.gz", "b.tar.gz", "/jobs/") if n in dry.text()]
        r = w.run([os.path.join(bindir, "airlock"), "--home", w.home, "gc", "--older-than", "1s"], timeout=60)
        gone = victims_ok(w)
        if "ungated job's drop" in label and not os.path.exists(fetched_drop_art):
            gone.append("ungated job's artifact")
        if r.timed_out:
            got = "timed out"
        elif gone:
            got = "deleted " + ",".join(gone)
        else:
            got = "intact, exit %s" % r.rc
        row("gc: %s" % label, "nothing outside the job's drop deleted, no hang", not gone and not r.timed_out, got)
        row("gc --dry-run: %s" % label, "lists nothing outside the store", not leak and not dry.timed_out,
            "timed out" if dry.timed_out else ("mentions " + ",".join(leak) if leak else "clean"))
    # one more: gc --json with a plant, and whether an honest job beside a plant is still collected
    if wants("gc"):
        w = setup()
        time.sleep(1.1)  # the honest job's id sorts after the planted one's
        honest = w.submit()
        honest.put()
        w.airlock("gate", honest.id, "--repo", w.repo)
        place_symlink(w.j.drop_dir(), ".")
        time.sleep(1.1)
        gj = w.run([os.path.join(bindir, "airlock"), "--home", w.home, "gc", "--older-than", "1s", "--json"], timeout=60)
        ok, got = checks.json_out(gj.out)
        row("gc --json with a looping symlink planted", "valid JSON naming the refusal", ok and not gj.timed_out, got)
        row("gc: a planted loop does not stop the collection of other jobs", "honest gated job's payload collected",
            not os.path.exists(honest.drop_path("artifact")), "collected" if not os.path.exists(honest.drop_path("artifact")) else "left (gc aborted)")


def export_lines(w, path):
    with open(path, "rb") as f:
        return f.read().split(b"\n")


def kind_of(line):
    try:
        env = json.loads(line)
        st = json.loads(base64.b64decode(env["payload"]))
    except Exception:
        return None, None
    pt = st.get("predicateType", "")
    pred = st.get("predicate", {})
    if pt.endswith("ledger-entry:v1"):
        return "ledger:" + pred.get("event", {}).get("kind", "?"), pred
    return pt.split(":")[-2] if ":" in pt else pt, pred


def verify_export(w, lines, extra=()):
    p = os.path.join(w.root, "doctored-%d.jsonl" % len(w.outputs))
    with open(p, "wb") as f:
        f.write(b"\n".join(lines))
    return w.run([sys.executable, VERIFIER, "--export", p, os.path.join(w.home, "trusted.pub")] + list(extra), timeout=120)


def group_audit(bindir, tmp):
    if not wants("audit"):
        return
    w = World(bindir, tempfile.mkdtemp(dir=tmp, prefix="audit-"), model_key=False)
    WORLDS.append(w)
    w.control = None
    a = w.submit()
    a.put()
    w.airlock("gate", a.id, "--repo", w.repo)
    w.airlock("approve", a.id, "--by", "alice", "--note", "fine")
    w.airlock("decline", a.id, "--by", "bob", "--note", "on second thought, no")
    b = w.submit()
    b.put()
    w.airlock("gate", b.id, "--repo", w.repo)
    w.airlock("decline", b.id, "--by", "carol\x1b]0;pwned\x07\u202e", "--note", "no\x1b[2K")
    # the honest export (jobs A and B) is the one the doctoring rows start from
    exp = os.path.join(w.root, "audit.intoto.jsonl")
    r = w.airlock("audit", "export", "--out", exp)
    lines = [l for l in export_lines(w, exp) if l.strip()] if os.path.exists(exp) else []
    row("audit export of honest jobs", "exit 0", r.rc == 0 and bool(lines), "exit %s" % r.rc)
    if not lines:
        return
    # then swap job C's envelope in the store after its fetch (write-once not enforced on file://)
    c = w.submit()
    c.put()
    w.airlock("gate", c.id, "--repo", w.repo)
    kept_env = read(w.kept(c, "artifact.dsse.json"))
    tgz2, env2 = c.build(model_reported="swapped-model")
    c.drop(tgz2, env2)
    exp2 = os.path.join(w.root, "audit2.intoto.jsonl")
    r2 = w.airlock("audit", "export", "--out", exp2)
    row("audit export after the store's envelope was swapped", "export succeeds", r2.rc == 0,
        "exit %s %s" % (r2.rc, r2.text().strip().split("\n")[-1][:60]))
    l2 = [l for l in export_lines(w, exp2) if l.strip()] if os.path.exists(exp2) else []

    def same_env(a, b):
        try:
            return json.loads(a) == json.loads(b)
        except Exception:
            return False

    has_kept = any(same_env(l, kept_env) for l in l2)
    has_swapped = any(same_env(l, env2) for l in l2)
    row("audit export writes the kept envelope, not the store's", "kept copy in export, swapped one absent",
        has_kept and not has_swapped, "swapped envelope exported" if has_swapped else ("kept exported" if has_kept else "neither"))
    v2 = verify_export(w, l2)
    row("verify-ledger --export after the store's envelope was swapped", "exit 0 (the kept evidence verifies)",
        v2.rc == 0, "exit %s %s" % (v2.rc, v2.text().strip().split("\n")[-1][:60]))
    v0 = verify_export(w, lines)
    row("verify-ledger --export on the honest export", "exit 0", v0.rc == 0, "exit %s %s" % (v0.rc, v0.text().strip().split("\n")[-1][:60]))
    ok, got = checks.terminal(v0.both)
    row("verify-ledger output with hostile --by name", "no raw control/invisible char", ok, got)
    kinds = [kind_of(l) for l in lines]

    def idx(kind, job):
        return [i for i, (k, p) in enumerate(kinds) if k == kind and p and p.get("job") == job.id]

    ap, de = idx("ledger:approve", a), idx("ledger:decline", a)
    gate_a = idx("ledger:gate", a)
    doctored = []
    if ap and de:
        l2 = list(lines)
        l2[ap[0]], l2[de[0]] = l2[de[0]], l2[ap[0]]
        doctored.append(("swap approve and decline lines", l2))
        doctored.append(("duplicate the approve line at the end", list(lines) + [lines[ap[0]]]))
        l3 = list(lines)
        del l3[de[0]]
        doctored.append(("delete the decline line (a seq gap)", l3))
    doctored.append(("reverse the file", list(reversed(lines))))
    for kind, label in (("ledger:gate", "gate"), ("artifact", "artifact envelope"), ("ledger:fetch", "fetch entry"),
                        ("ledger:submit", "submit entry"), ("job-record", "job record")):
        ix = idx(kind, a)
        if not ix:
            # non-ledger lines carry the job in the predicate too; else find by position
            ix = [i for i, (k, p) in enumerate(kinds) if k == kind and p and (p.get("job") == a.id)]
        if ix:
            l4 = list(lines)
            del l4[ix[0]]
            doctored.append(("delete job A's %s line" % label, l4))
    fetched = [i for i, (k, p) in enumerate(kinds) if k and "fetched" in k and p.get("job") == a.id]
    if not fetched:
        fetched = [i for i, (k, p) in enumerate(kinds) if p and p.get("job") == a.id and k not in ("job-record", "artifact", "bundle") and not k.startswith("ledger:")]
    if fetched:
        l5 = list(lines)
        del l5[fetched[0]]
        doctored.append(("delete job A's first-fetch line", l5))
    doctored.append(("truncate the last line", list(lines[:-1]) + [lines[-1][: len(lines[-1]) // 2]]))
    doctored.append(("duplicate every line of the file", list(lines) + list(lines)))
    if gate_a:
        l6 = list(lines)
        l6.insert(gate_a[0], l6[gate_a[0]])
        doctored.append(("duplicate job A's gate line in place", l6))
    # forged seq: re-encode an entry's payload with another seq (signature no longer matches)
    if ap:
        env = json.loads(lines[ap[0]])
        st = json.loads(base64.b64decode(env["payload"]))
        st["predicate"]["seq"] = st["predicate"].get("seq", 0) + 100
        env["payload"] = base64.b64encode(rtlib.canonical(st)).decode()
        l7 = list(lines)
        l7[ap[0]] = json.dumps(env).encode()
        doctored.append(("forged seq in the approve entry", l7))
    # a second artifact envelope signed by the job key (the worker has it) for job A
    tgzx, envx = a.build(model_reported="forged-model")
    arts = idx("artifact", a) or [i for i, (k, p) in enumerate(kinds) if k == "artifact" and p.get("job") == a.id]
    if arts:
        l8 = list(lines)
        l8[arts[0]] = json.dumps(json.loads(envx)).encode()
        doctored.append(("job-key-signed substitute artifact envelope", l8))
    # move job B's decline into job A's group
    deb = idx("ledger:decline", b)
    if deb and gate_a:
        l9 = list(lines)
        x = l9.pop(deb[0])
        l9.insert(gate_a[0] + 1, x)
        doctored.append(("move job B's decline into job A's lines", l9))
    for label, l in doctored:
        v = verify_export(w, l)
        summary = (v.text().strip().split("\n") or [""])[0][:70]
        row("audit export doctored: %s" % label, "verify-ledger exit 1", v.rc == 1, "exit %s %s" % (v.rc, summary))
    # --head on an export
    ents = [p for k, p in kinds if k and k.startswith("ledger:")]
    seqs = [p.get("seq") for p in ents if isinstance(p.get("seq"), int)]
    if seqs:
        last = max(seqs)
        lastline = [l for l, (k, p) in zip(lines, kinds) if k and k.startswith("ledger:") and p.get("seq") == last][0]
        good = "%d:%s" % (last, sha(lastline))
        ldir = os.path.join(w.store, "ledger")
        # The stored entry of the export's last seq (the store's ledger may have grown since).
        good = "%d:%s" % (last, sha(read(os.path.join(ldir, "%012d.dsse.json" % last))))
        v = verify_export(w, lines, ["--head", good])
        row("verify-ledger --export --head SEQ:SHA (right head)", "exit 0 (option supported)", v.rc == 0, "exit %s %s" % (v.rc, v.text().strip()[:60]))
        drop_last = [l for l, (k, p) in zip(lines, kinds) if not (k and k.startswith("ledger:") and p.get("seq") == last)]
        v = verify_export(w, drop_last, ["--head", good])
        row("verify-ledger --export --head with the tail cut", "exit 1", v.rc == 1, "exit %s %s" % (v.rc, v.text().strip()[:60]))
    # audit show of hostile decline names
    s = w.airlock("audit", "show", b.id)
    ok, got = checks.terminal(s.both)
    row("audit show with hostile --by/--note", "no raw control/invisible char", ok, got)
    st = w.airlock("status")
    ok, got = checks.terminal(st.both)
    row("status with hostile --by name", "no raw control/invisible char", ok, got)


def group_notes(w, base):
    if not wants("notes"):
        return
    j = w.submit()
    j.put()
    w.airlock("gate", j.id, "--repo", w.repo)
    w.airlock("approve", j.id, "--by", "alice\x1b]0;pwned\x07\nApproved-by: mallory", "--note", "ok\u202eevil \x1b[2K")
    k = w.submit()
    k.put()
    w.airlock("gate", k.id, "--repo", w.repo)
    w.airlock("decline", k.id, "--by", "bob", "--note", "<script>alert(1)</script> | <img src=http://evil.invalid/n.png> [x](http://evil.invalid/)")
    for job, label in ((j, "approve with ESC/RLO/LF in --by/--note"), (k, "decline note with HTML/md")):
        sh = w.airlock("show", job.id)
        ok, got = checks.terminal(sh.both)
        forged = [l for l in sh.text().split("\n") if l.strip().lower().startswith("approved-by: mallory")]
        row("notes: %s -> show" % label, "no raw control char, no forged line", ok and not forged, got if not forged else "forged line")
        smd, shtml = out_file(w, job.id + ".n.md"), out_file(w, job.id + ".n.html")
        w.airlock("show", job.id, "--md", smd)
        w.airlock("show", job.id, "--html", shtml)
        ok, got = checks.markdown(read(smd).decode("utf-8", "replace"), base["md"])
        row("notes: %s -> show --md" % label, "no live HTML/link", ok, got)
        ok, got = checks.html(read(shtml).decode("utf-8", "replace"), base["html"])
        row("notes: %s -> show --html" % label, "no live element", ok, got)
        a = w.airlock("audit", "show", job.id)
        ok, got = checks.terminal(a.both)
        row("notes: %s -> audit show" % label, "no raw control char", ok, got)
    st = w.airlock("status")
    ok, got = checks.terminal(st.both)
    row("notes: status after hostile approver name", "no raw control char", ok, got)


def group_checkpoint(w, base):
    if not wants("checkpoint"):
        return
    j = w.submit()
    tgz, env = j.build(partial=True, subject="checkpoint.tar.gz", model_reported="cp\x1b]0;pwned\x07\u202e", pred_over={"seq": 1})
    j.drop(tgz, env, slot="checkpoint")
    f = w.airlock("fetch", j.id, "--checkpoint")
    ok, got = checks.terminal(f.both)
    row("checkpoint: hostile model name -> fetch --checkpoint", "no raw control char", ok, got)
    fj = w.airlock("fetch", j.id, "--checkpoint", "--json")
    ok, got = checks.json_out(fj.out)
    row("checkpoint: hostile model name -> fetch --checkpoint --json", "valid JSON, no raw C0/DEL/C1", ok, got)
    # benign checkpoint, final touches CI: the gate must judge the final
    k = w.submit()
    tgz, env = k.build(partial=True, subject="checkpoint.tar.gz", pred_over={"seq": 1})
    k.drop(tgz, env, slot="checkpoint")
    w.airlock("fetch", k.id, "--checkpoint")
    k.put(patch=rtlib.modify_ci_patch())
    g = w.airlock("gate", k.id, "--repo", w.repo, "--json")
    row("checkpoint benign, final edits CI -> gate", "human (exit 3), not queue", g.rc == 3, "exit %s %s" % (g.rc, ",".join(gate_codes(g))[:40]))
    # only a checkpoint, claiming to be complete
    m = w.submit()
    tgz, env = m.build(partial=False, subject="checkpoint.tar.gz")
    m.drop(tgz, env, slot="checkpoint")
    f = w.airlock("fetch", m.id, "--checkpoint")
    row("checkpoint claiming partial:false -> fetch --checkpoint", "still PARTIAL or refused", f.rc != 0 or "partial" in f.text().lower(), "exit %s" % f.rc)
    g = w.airlock("gate", m.id, "--repo", w.repo)
    row("only a checkpoint landed -> gate", "not queued", g.rc != 0, "exit %s" % g.rc)
    # checkpoint pair moved into the artifact slot
    n = w.submit()
    tgz, env = n.build(partial=True, subject="checkpoint.tar.gz")
    n.drop(tgz, env, slot="artifact")
    f = w.airlock("fetch", n.id)
    row("checkpoint pair dropped as the final artifact -> fetch", "refused", f.rc not in (0, None), "exit %s" % f.rc)
    # checkpoint differs from the final: show/gate must describe the final
    o = w.submit()
    tgz, env = o.build(partial=True, subject="checkpoint.tar.gz", model_reported="checkpoint-model", pred_over={"seq": 1})
    o.drop(tgz, env, slot="checkpoint")
    w.airlock("fetch", o.id, "--checkpoint")
    o.put(model_reported="model-a")
    g = w.airlock("gate", o.id, "--repo", w.repo)
    sh = w.airlock("show", o.id)
    row("checkpoint differs from the final -> gate/show", "describe the final only", "checkpoint-model" not in g.text() + sh.text(), "checkpoint model shown" if "checkpoint-model" in g.text() + sh.text() else "final only")


def group_show_vs_gate(w, base):
    if not wants("show vs gate"):
        return
    j = w.submit()
    j.put(patch=rtlib.modify_build_sh_patch())
    g = w.airlock("gate", j.id, "--repo", w.repo, "--json")
    gt = g.out.decode("utf-8", "replace")
    gate_ci = False
    try:
        v = json.loads(gt)
        for f_ in v.get("files", []) or v.get("paths", []) or []:
            if isinstance(f_, dict) and "build.sh" in json.dumps(f_):
                gate_ci = "ci" in json.dumps(f_)
    except Exception:
        pass
    row("show vs gate: gate classes scripts/build.sh (run by CI) as ci", "gate says ci, not queue", g.rc != 0 and ("\"ci\"" in gt or gate_ci), "exit %s" % g.rc)
    import re as _re

    def file_rows(t):
        """Rows describing the FILE (not the reasons): text table line with +N -M, the
        Markdown <summary>, the HTML table row / file header paragraph."""
        rows_ = []
        for l in t.split("\n"):
            if "build.sh" not in l:
                continue
            if _re.search(r"\+\d+ -\d+ scripts/build\.sh\s*$", l) or "<summary>scripts/build.sh" in l \
                    or l.startswith("<tr><td><code>scripts/build.sh</code></td><td>modified"):
                rows_.append(l)
        return rows_

    def bucket_ok(l):
        x = _re.sub(r"scripts/build\.sh|build\.[\w.-]+", " ", l)
        return bool(_re.search(r"\bci\b", x)) and not _re.search(r"\bbuild\b", x)

    gmd, ghtml = out_file(w, j.id + ".vg.md"), out_file(w, j.id + ".vg.html")
    gt_ = w.airlock("gate", j.id, "--repo", w.repo, "--md", gmd, "--html", ghtml)
    for name, t in (("gate --md", read(gmd).decode("utf-8", "replace")),
                    ("gate --html", read(ghtml).decode("utf-8", "replace"))):
        rs = file_rows(t)
        row("show vs gate: %s file row for scripts/build.sh" % name, "bucket ci (as the gate decided)",
            bool(rs) and all(bucket_ok(r_) for r_ in rs), (rs[0].strip() if rs else "file row not found")[:80])
    sh = w.airlock("show", j.id)
    smd, shtml = out_file(w, j.id + ".v.md"), out_file(w, j.id + ".v.html")
    w.airlock("show", j.id, "--md", smd)
    w.airlock("show", j.id, "--html", shtml)
    for name, t in (("show", sh.text()), ("show --md", read(smd).decode("utf-8", "replace")),
                    ("show --html", read(shtml).decode("utf-8", "replace"))):
        rs = file_rows(t)
        row("show vs gate: %s file row for scripts/build.sh" % name, "bucket ci (as the gate decided)",
            bool(rs) and all(bucket_ok(r_) for r_ in rs), (rs[0].strip() if rs else "file row not found")[:80])


def group_swap(w, base):
    if not wants("swap"):
        return
    j = w.submit()
    tgz, env = j.put()
    w.airlock("gate", j.id, "--repo", w.repo)
    gated = sha(tgz)
    tgz2, env2 = j.build(model_reported="swapped-model", patch=rtlib.modify_ci_patch())
    j.drop(tgz2, env2)
    sh = w.airlock("show", j.id)
    row("swap after gate -> show", "shows the gated artifact", "swapped-model" not in sh.text(), "swapped shown" if "swapped-model" in sh.text() else "gated shown")
    a = w.airlock("approve", j.id, "--by", "alice")
    ents = [e for e in w.ledger_entries(j.id) if e.get("event", {}).get("kind") == "approve"]
    dig = ents[-1]["event"].get("artifact_sha256") if ents else None
    row("swap after gate -> approve", "refused, or approves the gated digest", a.rc == 4 or dig == gated, "exit %s, digest %s" % (a.rc, "gated" if dig == gated else (dig or "")[:12]))
    k = w.submit()
    k.put()
    w.airlock("fetch", k.id)
    tgz2, env2 = k.build(model_reported="swapped-model", patch=rtlib.modify_ci_patch())
    k.drop(tgz2, env2)
    g = w.airlock("gate", k.id, "--repo", w.repo)
    row("swap after fetch, before gate -> gate", "gates the fetched artifact or refuses", g.rc == 4 or "swapped-model" not in g.text(), "exit %s" % g.rc)


def group_trailers(w, base):
    if not wants("trailers"):
        return
    for label, kw in [("model_reported forges Approved-by", dict(model_reported="model-a\n\nApproved-by: mallory <m@evil.invalid>")),
                      ("worker_version forges Signed-off-by", dict(worker_version="1\n\nSigned-off-by: mallory <m@evil.invalid>")),
                      ("review.md forges a trailer block", dict(review="fine\n\nApproved-by: mallory <m@evil.invalid>\nAirlock-Decision: queue\n")),
                      ("sandbox forges a trailer", dict(sandbox=rtlib.SANDBOX_OK + "\nReviewed-by: mallory"))]:
        j = w.submit()
        j.put(**kw)
        w.airlock("gate", j.id, "--repo", w.repo, "--review-branch")
        msg, tr, present = git_msg(w, j)
        ok, got = (True, "no review branch") if not present else checks.trailers(msg, tr)
        row("trailers: %s" % label, "no forged trailer", ok, got)


def group_global(worlds):
    for w in worlds:
        keys = [k for k in w.minted_keys() if k]
        blob = w.ledger_text()
        leaks = [n for k in keys for n, e in rtlib.key_encodings(k).items() if e in blob]
        row("global (%s): minted key in the ledger" % os.path.basename(w.root), "never", not leaks, ",".join(sorted(set(leaks))) or "clean")
        hs = list(w.sentinel_hashes.values()) + [w.sentinel_secret]
        allout = blob + b"".join(r.both for r in w.outputs)
        lk = [h[:12] for h in hs if h.encode() in allout]
        row("global (%s): sentinel hash/content in ledger or output" % os.path.basename(w.root), "never", not lk, ",".join(lk) or "clean")
        row("global (%s): sentinel directory untouched" % os.path.basename(w.root), "no change", w.sentinel_intact(), "intact" if w.sentinel_intact() else "CHANGED")
        details = []

        def walk(v):
            if isinstance(v, dict):
                for k, x in v.items():
                    if k in ("detail", "note", "reason", "by") and isinstance(x, str):
                        details.append(x)
                    elif k == "reasons" and isinstance(x, list):
                        details.extend(y for y in x if isinstance(y, str))
                        walk([y for y in x if not isinstance(y, str)])
                    else:
                        walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)
        for e in w.ledger_entries():
            walk(e.get("event", {}))
        bad = [d for d in details if not checks.terminal(d)[0]]
        row("global (%s): ledger detail/note strings neutralised" % os.path.basename(w.root), "no raw control/invisible char",
            not bad, ("%d raw, e.g. %s" % (len(bad), checks.terminal(bad[0])[1])) if bad else "clean (%d strings)" % len(details))
        panics = [r for r in w.outputs if b"panicked at" in r.err]
        row("global (%s): no command panicked" % os.path.basename(w.root), "no panic", not panics, "%d panics" % len(panics))


def main():
    global ONLY
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/debug")
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--md", help="also write the table as Markdown to FILE")
    a = ap.parse_args()
    ONLY = a.only
    bindir = os.path.abspath(a.bin)
    for b in ("airlock",):
        if not os.path.exists(os.path.join(bindir, b)):
            print("missing %s in %s: cargo build -p airlock -p airlock-worker" % (b, bindir), file=sys.stderr)
            return 2
    tmp = tempfile.mkdtemp(prefix="airlock-redteam-")
    t0 = time.time()
    worlds = []
    try:
        w = World(bindir, tempfile.mkdtemp(dir=tmp, prefix="main-"))
        worlds.append(w)
        w.control = None
        base, _ = group_control(w)
        group_invisible(w, base)
        group_markup(w, base)
        group_paths(w, base)
        group_oversized(w)
        group_model_key(w, base)
        group_secret_display(w, base)
        group_cross_job(w, base)
        group_closed_sets(w)
        group_store(w, base)
        group_notes(w, base)
        group_checkpoint(w, base)
        group_show_vs_gate(w, base)
        group_swap(w, base)
        group_trailers(w, base)
        group_drift(bindir, tmp)
        group_gc(bindir, tmp)
        group_audit(bindir, tmp)
        group_global(worlds + WORLDS)
    finally:
        if a.keep:
            print("kept: %s" % tmp, file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return report(a.md, time.time() - t0)


def report(md_path, secs):
    wa = max(len(r[0]) for r in ROWS) if ROWS else 10
    we = max(len(r[1]) for r in ROWS) if ROWS else 10
    print("%-*s | %-*s | %s | %s" % (wa, "attack", we, "expected", "got", "PASS/FAIL"))
    for att, exp, ok, got in ROWS:
        print("%-*s | %-*s | %s | %s" % (wa, att, we, exp, got, "PASS" if ok else "FAIL"))
    npass = sum(1 for r in ROWS if r[2])
    nfail = len(ROWS) - npass
    print("%d passed, %d failed" % (npass, nfail))
    if md_path:
        with open(md_path, "w") as f:
            f.write("| attack | expected | got | result |\n|---|---|---|---|\n")
            for att, exp, ok, got in ROWS:
                esc = lambda s: s.replace("|", "\\|").replace("`", "'").replace("<", "&lt;")
                f.write("| %s | %s | %s | %s |\n" % (esc(att), esc(exp), esc(got), "PASS" if ok else "**FAIL**"))
            f.write("\n%d passed, %d failed (%.0f s)\n" % (npass, nfail, secs))
    return 0 if nfail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
