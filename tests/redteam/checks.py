"""What a secure answer looks like on each medium, as predicates returning (ok, what_we_got).

- terminal: no C0 control but LF and TAB, no DEL, no C1 control, no ESC; no invisible,
  bidirectional or formatting character (they must be marked visibly instead).
- json: parses; no raw C0/DEL/C1 byte (JSON escapes them; DEL and C1 are not escaped by
  default and reach the terminal of whoever pipes it).
- markdown: a stdlib approximation of a GFM renderer (fences; tables only from a header row
  and a delimiter row to a blank line or another block, rows split on `|` not right after a
  backslash, then `\\|` read as `|`, as cmark-gfm does; code spans per CommonMark backtick
  runs, backslash escapes): outside code, no raw HTML tag, no link or image to the attacker's
  host, no autolink; no raw invisible character anywhere. When `cmarkgfm` (GitHub's cmark-gfm)
  is installed, its rendering is checked too (`gfm_live`), and `--selftest` compares both.
- html: parsed with html.parser: no script/img/iframe/svg/object/embed/style/form/base tag and
  no attribute mentioning the attacker host or starting with `on` beyond what an honest
  report has; no raw invisible character in text.
"""

import re
from html.parser import HTMLParser

EVIL = "evil.invalid"

INVISIBLE = set()
for a, b in [(0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F),
             (0xE0000, 0xE007F), (0xFFF9, 0xFFFB)]:
    INVISIBLE.update(range(a, b + 1))
INVISIBLE.update([0x061C, 0x00AD, 0x180E, 0x3164, 0xFEFF, 0x2028, 0x2029, 0x115F, 0x1160,
                  0xFFA0, 0x034F])

CONTROL = set(range(0x00, 0x20)) - {0x0A, 0x09}
CONTROL.update([0x7F])
CONTROL.update(range(0x80, 0xA0))


def _bad_chars(text, sets):
    found = []
    for ch in text:
        o = ord(ch)
        if any(o in s for s in sets):
            if "U+%04X" % o not in found:
                found.append("U+%04X" % o)
    return found


def terminal(data):
    """data: bytes written to a terminal."""
    if isinstance(data, bytes):
        raw_bad = [b for b in set(data) if b < 0x20 and b not in (0x0A, 0x09) or b == 0x7F]
        text = data.decode("utf-8", "replace")
    else:
        raw_bad, text = [], data
    bad = _bad_chars(text, [CONTROL, INVISIBLE])
    if raw_bad and not bad:
        bad = ["0x%02X" % b for b in sorted(raw_bad)]
    return (not bad, "clean" if not bad else "raw " + ",".join(bad[:6]))


def json_out(data):
    import json
    try:
        json.loads(data)
    except Exception as e:
        return False, "not JSON (%s)" % str(e)[:40]
    text = data.decode("utf-8", "replace")
    bad = _bad_chars(text, [CONTROL])
    return (not bad, "clean" if not bad else "raw " + ",".join(bad[:6]))


# ------------------------------------------------------------------ markdown

TAG = re.compile(r"<\s*/?\s*(img|script|iframe|svg|object|embed|style|form|base|a|details|video|audio|link|meta|input|math|textarea|button)\b", re.I)
LINK = re.compile(r"\]\(\s*<?\s*(https?:|javascript:|//)", re.I)
AUTOLINK = re.compile(r"<(https?|mailto|javascript):", re.I)
BARE = re.compile(r"(https?://|www\.)" + re.escape(EVIL), re.I)


def _strip_escapes(s):
    return re.sub(r"\\[!-/:-@\[-`{-~]", "", s)


def _inline_live(s):
    """Live things in one inline run (a paragraph line or a table cell) of GFM."""
    hits = []
    i, n = 0, len(s)
    outside = []
    while i < n:
        c = s[i]
        if c == "\\" and i + 1 < n:
            outside.append("  ")  # an escaped character is literal
            i += 2
            continue
        if c == "`":
            j = i
            while j < n and s[j] == "`":
                j += 1
            run = j - i
            # find a closing run of exactly `run` backticks
            k = j
            close = -1
            while k < n:
                if s[k] == "`":
                    m = k
                    while m < n and s[m] == "`":
                        m += 1
                    if m - k == run:
                        close = k
                        break
                    k = m
                else:
                    k += 1
            if close >= 0:
                i = close + run
                outside.append(" ")
                continue
            outside.append(s[i:j])
            i = j
            continue
        outside.append(c)
        i += 1
    text = "".join(outside)
    for rx, what in ((TAG, "html tag"), (LINK, "link"), (AUTOLINK, "autolink"), (BARE, "bare link")):
        m = rx.search(text)
        if m:
            hits.append("%s %r" % (what, m.group(0)[:20]))
    return hits


def _split_cells(line):
    """A GFM table row's cells, as cmark-gfm (GitHub) and markdown-it read them: a `|` right
    after a backslash is an escaped pipe whatever comes before that backslash (`\\\\|` is a
    backslash and an escaped pipe, not an escaped backslash and a cell boundary: table rows are
    split before backslash escapes are read), and `\\|` becomes `|` in the cell before its
    inlines (code spans too) are parsed."""
    cells, cur, i = [], [], 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line) and line[i + 1] == "|":
            cur.append("|")  # unescaped after splitting, so a code span may hold it
            i += 2
            continue
        if c == "|":
            cells.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    cells.append("".join(cur))
    return cells


_DELIM = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_BLOCK_START = re.compile(r"^(?:[-+*]\s|\d+[.)]\s|#{1,6}\s|>|`{3,}|~{3,}|<)")


def gfm_live(text):
    """Live things in GitHub's own rendering (cmark-gfm with its extensions: tables, autolinks,
    tag filter; raw HTML let through, the strictest reading), or None when `cmarkgfm` is not
    installed (it is optional: `pip install cmarkgfm`)."""
    try:
        import cmarkgfm
        from cmarkgfm.cmark import Options
    except ImportError:
        return None
    html = cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)
    p = _P()
    p.feed(html)
    hits = ["gfm: live <%s>" % t for t in sorted(p.tags) if t in DANGEROUS]
    hits += ["gfm: attribute %s" % a for a in p.bad_attrs[:3]]
    return hits


def markdown(text, baseline_hits=()):
    hits = []
    fence = None
    lines = text.split("\n")
    in_table = False
    for idx, line in enumerate(lines):
        st = line.lstrip(" ")
        indent = len(line) - len(st)
        if fence:
            ch, ln = fence
            m = re.match(r"(`{3,}|~{3,})\s*$", st)
            if m and m.group(1)[0] == ch and len(m.group(1)) >= ln and indent < 4:
                fence = None
            continue
        m = re.match(r"(`{3,}|~{3,})(.*)$", st)
        if m and indent < 4 and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = (m.group(1)[0], len(m.group(1)))
            continue
        if indent >= 4 and not in_table:
            continue  # indented code block (approximation)
        if re.match(r"<(script|pre|style|textarea|!--|[a-z][a-z0-9-]*[\s/>]|/[a-z])", st, re.I):
            # An HTML block: everything on the line is raw HTML (code spans do not apply).
            # The reports' own <details>/<summary> are fine; any other tag is live.
            rest = re.sub(r"</?(details|summary|br)(\s+open)?\s*/?>", " ", st, flags=re.I)
            m = TAG.search(rest) or re.search(r"<\s*[a-z!/]", rest, re.I)
            if m:
                hits.append("live tag in an HTML block %r" % rest[m.start():m.start() + 20])
            continue
        # A GFM table starts at a header row followed by a delimiter row (`|---|`) and runs to
        # a blank line or the start of another block (a list item, heading, quote, fence,
        # HTML): a `|` elsewhere (a list item's code span) is only text.
        nxt = lines[idx + 1].strip() if idx + 1 < len(lines) else ""
        if not in_table and "|" in st and _DELIM.match(nxt) and "-" in nxt:
            in_table = True
        elif in_table and (not st.strip() or _BLOCK_START.match(st)):
            in_table = False
        if in_table:
            for cell in _split_cells(st):
                hits += _inline_live(cell)
        else:
            hits += _inline_live(st)
    hits += gfm_live(text) or []
    hits = [h for h in hits if h not in baseline_hits]
    inv = _bad_chars(text, [INVISIBLE, CONTROL - {0x0D}]) + (["U+000D"] if "\r" in text else [])
    bad = hits + (["raw " + ",".join(inv[:5])] if inv else [])
    return (not bad, "clean" if not bad else "; ".join(bad[:3]))


def markdown_hits(text):
    ok, got = markdown(text)
    return set() if ok else set(got.split("; "))


# ------------------------------------------------------------------ html

DANGEROUS = {"script", "img", "iframe", "svg", "object", "embed", "form", "base", "math",
             "video", "audio", "input", "textarea", "button", "link", "meta"}


class _P(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = {}
        self.bad_attrs = []
        self.text = []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for k, v in attrs:
            if k.lower().startswith("on") or (v and EVIL in v) or (v and "javascript:" in v.lower()):
                self.bad_attrs.append("%s %s=%r" % (tag, k, (v or "")[:20]))

    handle_startendtag = handle_starttag

    def handle_data(self, d):
        self.text.append(d)


def html_tags(text):
    p = _P()
    p.feed(text)
    return p


def html(text, baseline=None):
    p = _P()
    try:
        p.feed(text)
        p.close()
    except Exception as e:
        return False, "unparsable %s" % e
    base = baseline.tags if baseline else {}
    extra = ["<%s>x%d" % (t, c - base.get(t, 0)) for t, c in sorted(p.tags.items())
             if t in DANGEROUS and c > base.get(t, 0)]
    raw = _bad_chars(text, [INVISIBLE, CONTROL - {0x0D}])
    bad = extra + p.bad_attrs + (["raw " + ",".join(raw[:5])] if raw else [])
    return (not bad, "clean" if not bad else "; ".join(bad[:3]))


# ------------------------------------------------------------------ git trailers

FORGED_TRAILERS = ("approved-by", "signed-off-by", "reviewed-by", "co-authored-by")


def trailers(message, trailer_lines):
    ok, got = terminal(message)
    lines = [l for l in trailer_lines.split("\n") if l.strip()]
    keys = [l.split(":", 1)[0].strip().lower() for l in lines]
    forged = [l for l, k in zip(lines, keys)
              if k in FORGED_TRAILERS
              or (k.startswith("airlock-") and keys.count(k) > 1)]
    if forged:
        return False, "forged trailer %r" % forged[0][:30]
    return ok, got


# ------------------------------------------------------------------ self-test

# (Markdown, live?) pairs the approximation must judge as GitHub does: table cells as airlock
# writes them (`text::md_cell`) stay inert; real breakouts are caught.
SELFTEST_MD = [
    ("| k | v |\n|---|---|\n| `m` | `a \\| <img src=http://evil.invalid/p.png> \\| b` |\n", False),
    ("| k | v |\n|---|---|\n| `m` | `a \\\\| <img src=http://evil.invalid/e.png>` |\n", False),
    ("| k | v |\n|---|---|\n| `m` | `x<U+000A>\\| forged \\| <img src=http://evil.invalid/r.png> \\|` |\n", False),
    ("- **`queue`** `model-mismatch`: `reported a | <img src=http://evil.invalid/p.png> | b`\n", False),
    ("- `api.example:443 refused (denied a \\| <img src=http://evil.invalid/e.png>)`\n", False),
    ("| k | v |\n|---|---|\n| `x | <img src=http://evil.invalid/p.png>` | y |\n", True),
    ("| k | v |\n|---|---|\n| `x` | y \\\\| <img src=http://evil.invalid/p.png> |\n", True),
    ("see <img src=http://evil.invalid/p.png>\n", True),
    ("see http://evil.invalid/x\n", True),
    ("`see http://evil.invalid/x`\n", False),
]


def selftest():
    """Each SELFTEST_MD case judged by the approximation, and by cmark-gfm when installed."""
    bad = 0
    have_gfm = gfm_live("x") is not None
    for md, live in SELFTEST_MD:
        ok, got = markdown(md)
        if ok == live:
            bad += 1
            print("approximation wrong (%s): %r" % (got, md))
        if have_gfm and bool(gfm_live(md)) != live:
            bad += 1
            print("cmark-gfm disagrees: %r -> %s" % (md, gfm_live(md)))
    print("%d cases, %d wrong%s" % (len(SELFTEST_MD), bad,
                                    "" if have_gfm else " (cmarkgfm not installed: approximation only)"))
    return 1 if bad else 0


if __name__ == "__main__":
    import sys
    sys.exit(selftest() if sys.argv[1:] == ["--selftest"] else 2)
