//! Issue 37, findings 4, 5, 7 and 8: one hostile worker (a real job token, its own signed
//! artifact) reports a model name and a worker version carrying terminal escapes, a table
//! `|`, backticks, HTML, a Markdown link, bidi and tag characters and other invisible ones.
//! The same string goes through every output of the real binaries (`fetch`, `gate` text,
//! `--md`, `--html`, the review commit's trailers, `show` text/`--md`/`--html`, `compare`,
//! `audit show`, `status`) and each must mark the same characters, in order, as `<U+XXXX>`
//! (`airlock_core::text`), with no control byte, no live HTML and no table cell split. The
//! changed file is one a workflow runs (`ci.reached`): `show` must say what the gate said.
// Test helpers outside #[test] functions: a panic with the value is the wanted failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use super::hostile_worker::{artifact, packet, World};
use airlock_tests::*;

/// The worker's model name: OSC retitle, BEL, erase line, CR, a table `|`, a backtick, bidi
/// override, an image and a link, a tag character, soft hyphen, Mongolian vowel separator,
/// invisible function application, interlinear annotation, Hangul filler, line separator.
const HOSTILE: &str = "gpt\u{1b}]0;pwned\u{7}\u{1b}[2K\r|x`y\u{202e}<img src=x onerror=alert(1)>[a](https://evil.example)\u{e0041}\u{ad}\u{180e}\u{2061}\u{fff9}\u{3164}\u{2028}z";

/// What every output must show for [`HOSTILE`]'s hidden characters, in order.
const TOKENS: &[&str] = &[
    "<U+001B>",
    "<U+0007>",
    "<U+001B>",
    "<U+000D>",
    "<U+202E>",
    "<U+E0041>",
    "<U+00AD>",
    "<U+180E>",
    "<U+2061>",
    "<U+FFF9>",
    "<U+3164>",
    "<U+2028>",
];

const WORKFLOW: &str = "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: python3 lib/verify.py\n";

fn out_text(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// `text` holds no hidden character and every token of [`TOKENS`] in order (as `open`+`U+…`+
/// `close`, the HTML form being `&lt;…&gt;`).
fn assert_marked(what: &str, text: &str, html: bool) {
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| airlock_core::text::is_hidden(c) && c != '\n' && c != '\t')
        .collect();
    assert!(bad.is_empty(), "{what}: raw hidden characters {bad:?}");
    // Find the run of tokens that follows the start of the model name each time it appears;
    // at least one appearance must carry all of them in order.
    let start = if html {
        "gpt&lt;U+001B&gt;"
    } else {
        "gpt<U+001B>"
    };
    let mut found = false;
    for (at, _) in text.match_indices(start) {
        let mut rest = &text[at..];
        let mut all = true;
        for t in TOKENS {
            let want = if html {
                t.replace('<', "&lt;").replace('>', "&gt;")
            } else {
                (*t).to_owned()
            };
            match rest.find(&want) {
                Some(i) => rest = &rest[i + want.len()..],
                None => {
                    all = false;
                    break;
                }
            }
        }
        found |= all;
    }
    assert!(
        found,
        "{what}: the model name is not marked as expected:\n{text}"
    );
}

fn airlock(w: &World, args: &[&str]) -> Output {
    run(cmd(&bin("airlock")).arg("--home").arg(&w.home).args(args))
}

#[test]
fn one_hostile_model_name_is_marked_alike_in_every_output() {
    let w = World::new();
    write_files(
        &w.repo,
        &[
            (".github/workflows/verify.yml", WORKFLOW.as_bytes()),
            ("lib/verify.py", b"print('ok')\n"),
        ],
    );
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-qm", "verify workflow"]);
    let job = w.submit();
    let id = job.id();
    let patch = "diff --git a/lib/verify.py b/lib/verify.py\n--- a/lib/verify.py\n+++ b/lib/verify.py\n@@ -1 +1,2 @@\n print('ok')\n+print('tidy')\n";
    let mut p = packet(&job, patch.as_bytes());
    p.model_reported = HOSTILE.into();
    p.worker_version = HOSTILE.into();
    let (tgz, packet_bytes) = artifact(&p, patch.as_bytes());
    w.drop_signed(&job, &tgz, &packet_bytes, None);
    let before = w.outside(&id);

    // Finding 5: fetch printed model_reported raw.
    let out = airlock(&w, &["fetch", &id]);
    assert!(out.status.success(), "{}", show(&out));
    assert_marked("fetch", &out_text(&out), false);

    // The gate: text report, Markdown, HTML, review-branch trailers.
    let md = w.root.join("gate.md");
    let html = w.root.join("gate.html");
    let out = run(cmd(&bin("airlock"))
        .arg("--home")
        .arg(&w.home)
        .args(["gate", &id, "--review-branch", "--repo"])
        .arg(&w.repo)
        .arg("--md")
        .arg(&md)
        .arg("--html")
        .arg(&html));
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let gate_text = out_text(&out);
    assert_marked("gate text", &gate_text, false);
    assert!(gate_text.contains("ci.reached"), "{gate_text}");
    let gate_md = std::fs::read_to_string(&md).unwrap();
    assert_marked("gate --md", &gate_md, false);
    assert_md_is_inert("gate --md", &gate_md, true);
    let gate_html = std::fs::read_to_string(&html).unwrap();
    assert_marked("gate --html", &gate_html, true);
    assert_html_is_inert("gate --html", &gate_html);
    let trailers = git(
        &w.repo,
        &[
            "log",
            "-1",
            "--format=%(trailers:key=Airlock-Model-Reported,valueonly)",
            &format!("airlock/{id}"),
        ],
    );
    assert_marked("trailer", &trailers, false);
    assert_eq!(trailers.lines().count(), 1, "{trailers}");

    // Finding 8 and the rest: show (text, Markdown, HTML) says `ci.reached`, as the gate did.
    let out = airlock(&w, &["show", &id]);
    assert!(out.status.success(), "{}", show(&out));
    let show_text = out_text(&out);
    assert_marked("show", &show_text, false);
    let row = show_text
        .lines()
        .find(|l| l.ends_with("lib/verify.py"))
        .unwrap_or_else(|| panic!("no file row: {show_text}"));
    assert!(row.trim_start().starts_with("ci "), "{row}");
    assert!(row.contains("ci.reached"), "{row}");
    let (md, html) = (w.root.join("show.md"), w.root.join("show.html"));
    let out = run(cmd(&bin("airlock"))
        .arg("--home")
        .arg(&w.home)
        .args(["show", &id, "--md"])
        .arg(&md)
        .arg("--html")
        .arg(&html));
    assert!(out.status.success(), "{}", show(&out));
    let show_md = std::fs::read_to_string(&md).unwrap();
    assert_marked("show --md", &show_md, false);
    assert_md_is_inert("show --md", &show_md, false);
    assert!(
        show_md.contains("lib/verify.py modified — ci (ci.reached)"),
        "{show_md}"
    );
    let show_html = std::fs::read_to_string(&html).unwrap();
    assert_marked("show --html", &show_html, true);
    assert_html_is_inert("show --html", &show_html);
    assert!(show_html.contains("ci.reached"), "{show_html}");

    // A person approves with a hostile name too: status and audit show (the ledger's text).
    let by = "alice\u{1b}[2J\u{202e}";
    let out = airlock(&w, &["approve", &id, "--by", by]);
    assert!(out.status.success(), "{}", show(&out));
    let out = airlock(&w, &["status", &id]);
    assert!(out.status.success(), "{}", show(&out));
    let status = out_text(&out);
    assert!(status.contains("alice<U+001B>[2J<U+202E>"), "{status}");
    assert!(!status.contains('\u{1b}'), "{status}");
    // Issue 37 (ledger strings): the gate's reasons (which quote the model name) and the
    // person's `by` are recorded as inert lines (`text::detail`), not raw.
    let events = w.ledger_events(&id);
    let mut texts = Vec::new();
    for ev in &events {
        for k in ["detail", "note", "by"] {
            texts.extend(ev[k].as_str().map(str::to_owned));
        }
        for r in ev["reasons"].as_array().into_iter().flatten() {
            texts.extend(r.as_str().map(str::to_owned));
        }
    }
    for t in &texts {
        assert!(
            !t.chars().any(airlock_core::text::is_hidden),
            "raw hidden character in a ledger string: {t:?}"
        );
    }
    assert!(
        texts.iter().any(|t| t == "alice<U+001B>[2J<U+202E>"),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("gpt<U+001B>]0;pwned<U+0007>")),
        "{texts:?}"
    );
    let out = airlock(&w, &["audit", "show", &id]);
    assert!(out.status.success(), "{}", show(&out));
    let audit = out_text(&out);
    assert_marked("audit show", &audit, false);
    assert!(audit.contains("alice<U+001B>[2J<U+202E>"), "{audit}");
    let out = airlock(&w, &["compare", &id, &id]);
    assert!(out.status.success(), "{}", show(&out));
    assert_marked("compare", &out_text(&out), false);

    // Nothing written outside the job directory, the ledger, the records and the outputs asked.
    let after = w.outside(&id);
    let new: Vec<_> = after
        .difference(&before)
        .filter(|p| {
            let name = p.to_string_lossy();
            !["gate.md", "gate.html", "show.md", "show.html"].contains(&name.as_ref())
                && !name.starts_with("repo/.git")
                && !name.starts_with("home/cache")
        })
        .collect();
    assert!(new.is_empty(), "written outside: {new:?}");
}

/// Finding 4: no table row of the Markdown gains a cell, no `<` is live outside code.
fn assert_md_is_inert(what: &str, md: &str, bom_has_model: bool) {
    for line in md.lines().filter(|l| l.starts_with("| ")) {
        let cells = line.replace("\\|", "").matches('|').count();
        assert!(cells <= 5, "{what}: a cell split: {line}");
        if line.contains("model reported") || line.starts_with("| `worker`") {
            assert_eq!(cells, 3, "{what}: {line}");
        }
    }
    if bom_has_model {
        let row = md
            .lines()
            .find(|l| l.starts_with("| `model reported` |"))
            .unwrap_or_else(|| panic!("{what}: no model row:\n{md}"));
        assert!(row.contains("\\|x"), "{what}: {row}");
    }
    // Outside code spans and fences, no `<img` or `](` from the worker survives.
    let mut in_fence = false;
    for line in md.lines() {
        if line.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let outside = outside_code_spans(line);
        assert!(
            !outside.contains("<img") && !outside.contains("](https://evil"),
            "{what}: live markup outside code: {line}"
        );
    }
}

/// `line` without its code spans (a run of N backticks up to the next run of exactly N).
fn outside_code_spans(line: &str) -> String {
    let b = line.as_bytes();
    let run_at = |i: usize| b[i..].iter().take_while(|&&c| c == b'`').count();
    let (mut out, mut i) = (String::new(), 0);
    while i < b.len() {
        if b[i] != b'`' {
            let next = line[i..].find('`').map_or(line.len(), |j| i + j);
            out.push_str(&line[i..next]);
            i = next;
            continue;
        }
        let n = run_at(i);
        let mut j = i + n;
        let close = loop {
            match line[j..].find('`') {
                None => break None,
                Some(k) => {
                    let at = j + k;
                    let m = run_at(at);
                    if m == n {
                        break Some(at + m);
                    }
                    j = at + m;
                }
            }
        };
        match close {
            Some(end) => i = end,
            None => {
                out.push_str(&line[i..]);
                break;
            }
        }
    }
    out
}

/// Finding 4's HTML half: the worker's `<img>` and link are text.
fn assert_html_is_inert(what: &str, html: &str) {
    assert!(!html.contains("<img"), "{what}: a live image");
    assert!(
        html.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{what}"
    );
    assert!(!html.contains("href=\"https://evil"), "{what}: a live link");
}

/// The red-team campaign of issue 37 on these surfaces: each hostile model name (terminal
/// escapes, table and code-span breakouts, live Markdown and HTML, every class of invisible
/// character) through `fetch`, `gate` text, `--md`, `--html`, `show` text and `--html`: 32
/// names x 6 outputs = 192 attacks, each answered by the same marked rendering.
#[test]
fn every_hostile_model_name_is_inert_in_every_output() {
    let attacks: &[&str] = &[
        "\u{1b}]0;retitled\u{7}",
        "\u{1b}[2J\u{1b}[H",
        "\u{1b}[1A\u{1b}[2Kqueue: ok",
        "ok\rREJECT",
        "\u{9b}31mred",
        "\u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\",
        "\u{1b}P+q\u{1b}\\",
        "a\u{8}\u{8}b\u{7f}",
        "nul\u{0}byte",
        "line\nAirlock-Decision: queue",
        "cell|split|more",
        "`code` break",
        "``` fence\nbreak",
        "<img src=x onerror=alert(1)>",
        "<script>alert(1)</script>",
        "[click](javascript:alert(1))",
        "![pixel](https://evil.example/p.png)",
        "<a href=\"https://evil.example\">x</a>",
        "&lt;entity&gt; &#x3c;",
        "<!-- hidden comment -->",
        "*bold* _em_ ~~strike~~",
        "user\u{202e}gnp.exe",
        "\u{2066}admin\u{2069}\u{2067}x\u{2069}",
        "\u{200e}\u{200f}\u{61c}",
        "tidy\u{e0041}\u{e0070}\u{e0070}\u{e0072}\u{e006f}\u{e0076}\u{e0065}",
        "soft\u{ad}hyphen",
        "zw\u{200b}\u{200c}\u{200d}\u{2060}\u{feff}",
        "mongol\u{180e}\u{180b}",
        "\u{2061}\u{2062}\u{2063}\u{2064}\u{206a}\u{206f}",
        "\u{fff9}annotated\u{fffa}hidden\u{fffb}",
        "\u{3164}\u{115f}\u{1160}\u{ffa0}\u{34f}",
        "vs\u{fe0f}\u{e0100}\u{2028}\u{2029}",
    ];
    let w = World::new();
    let patch = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@\n+/// Adds.\n pub fn add(a: i32, b: i32) -> i32 {\n     a + b\n }\n";
    let mut answered = 0;
    for (n, attack) in attacks.iter().enumerate() {
        let name = format!("M{n}:{attack}");
        let job = w.submit();
        let id = job.id();
        let mut p = packet(&job, patch.as_bytes());
        p.model_reported = name.clone();
        let (tgz, packet_bytes) = artifact(&p, patch.as_bytes());
        w.drop_signed(&job, &tgz, &packet_bytes, None);
        let fetch = airlock(&w, &["fetch", &id]);
        assert!(fetch.status.success(), "{}", show(&fetch));
        let (md, html) = (
            w.root.join(format!("{n}.md")),
            w.root.join(format!("{n}.html")),
        );
        let gate = run(cmd(&bin("airlock"))
            .arg("--home")
            .arg(&w.home)
            .args(["gate", &id, "--repo"])
            .arg(&w.repo)
            .arg("--md")
            .arg(&md)
            .arg("--html")
            .arg(&html));
        assert_eq!(gate.status.code(), Some(3), "{}", show(&gate));
        let show_html = w.root.join(format!("{n}.show.html"));
        let shown = run(cmd(&bin("airlock"))
            .arg("--home")
            .arg(&w.home)
            .args(["show", &id, "--html"])
            .arg(&show_html));
        assert!(shown.status.success(), "{}", show(&shown));
        let md = std::fs::read_to_string(&md).unwrap();
        for (what, out, html) in [
            ("fetch", out_text(&fetch), false),
            ("gate", out_text(&gate), false),
            ("gate --md", md.clone(), false),
            ("gate --html", std::fs::read_to_string(&html).unwrap(), true),
            ("show", out_text(&shown), false),
            (
                "show --html",
                std::fs::read_to_string(&show_html).unwrap(),
                true,
            ),
        ] {
            assert_inert(&format!("{what} [{n}] {attack:?}"), &name, &out, html);
            answered += 1;
        }
        assert_md_is_inert(&format!("gate --md [{n}]"), &md, false);
    }
    assert_eq!(answered, 192);
}

/// `out` shows `name` marked: no hidden character, no raw `<` from it in HTML, and after its
/// `M<n>:` start every token of `name`'s hidden characters, in order.
fn assert_inert(what: &str, name: &str, out: &str, html: bool) {
    let raw: Vec<char> = out
        .chars()
        .filter(|&c| airlock_core::text::is_hidden(c) && c != '\n' && c != '\t')
        .collect();
    assert!(raw.is_empty(), "{what}: raw hidden characters {raw:?}");
    if html {
        for bad in [
            "<img",
            "<script>alert",
            "<a href=\"https://evil",
            "<!-- hidden",
        ] {
            assert!(!out.contains(bad), "{what}: live {bad}");
        }
    }
    let start = &name[..name.find(':').unwrap() + 1];
    let tokens = airlock_core::text::hidden_tokens(name);
    let ok = out.match_indices(start).any(|(at, _)| {
        let mut rest = &out[at..];
        tokens.iter().all(|t| {
            let want = if html {
                t.replace('<', "&lt;").replace('>', "&gt;")
            } else {
                t.clone()
            };
            rest.find(&want)
                .map(|i| rest = &rest[i + want.len()..])
                .is_some()
        })
    });
    assert!(ok, "{what}: not marked as {tokens:?}:\n{out}");
}
