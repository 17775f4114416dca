//! `airlock-worker` with generators installed the ordinary way (issue #24): a virtualenv under
//! a root worker's 0700 home, an npm prefix, a script named from a checkout, a private HOME
//! seeded from a template, a model server granted with `--allow-local`, `.gitignore`d outputs
//! left out, and failures said in words with documented exit codes.
//!
//! Every generator here runs in the real sandbox (as `nobody` when the tests run as root).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use airlock_tests::*;

use super::worker::{chmod, marker_dir, Env, Job};

/// The worker with the marker generator, UNSANDBOXED (the marker is written outside the
/// workdir, which only an unconfined generator can do): proves whether a generator started.
fn marker_worker(env: &Env, job: &Job, flags: &[&str], markers: &Path) -> Output {
    let mut flags = flags.to_vec();
    flags.push("--unsafe-no-sandbox");
    let mut c = env.worker(
        job,
        &flags,
        &[&env.gen("marker.sh"), markers.to_str().unwrap()],
    );
    c.env("AIRLOCK_SANDBOX_FORCE", "none");
    run(&mut c)
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").unwrap().uid() == 0
}

/// Prints why a test is skipped; a skip fails when `CI` is set.
use airlock_tests::skip;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A generator script at `path` (0755).
fn script(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    chmod(path, 0o755);
}

/// No Rust debug text in front of the operator.
fn assert_words(err: &str) {
    for debug in ["Some(", "None", "Exited", "Timeout,", "Signaled"] {
        assert!(!err.contains(debug), "debug text {debug:?} in: {err}");
    }
}

/// `<env.root>/roothome` (0700, like a root worker's `/root`) with a real virtualenv `venv/`
/// (no pip: fast) holding an agent console script `bin/agent` whose `#!` is the venv's python;
/// the agent appends a line to `a.txt`. Returns the venv.
fn venv_agent(env: &Env) -> PathBuf {
    let home = env.root.join("roothome");
    std::fs::create_dir(&home).unwrap();
    let venv = home.join("venv");
    // The system python (a pyenv one lives under /root: the preflight would name it).
    let out = Command::new("/usr/bin/python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .output()
        .unwrap();
    assert!(out.status.success(), "python3 -m venv: {}", show(&out));
    script(
        &venv.join("bin/agent"),
        &format!(
            "#!{}/bin/python\nimport sys\nopen('a.txt', 'a').write('from venv ' + sys.prefix.rsplit('/', 1)[-1] + '\\n')\n",
            venv.display()
        ),
    );
    chmod(&home, 0o700);
    venv
}

#[test]
fn venv_under_a_0700_root_home_is_refused_by_the_preflight_then_runs_with_readable() {
    if !is_root() {
        return skip("needs a root worker (its generator runs as nobody)");
    }
    let env = Env::small();
    let venv = venv_agent(&env);
    let agent = venv.join("bin/agent").display().to_string();
    let job = env.submit(&[]);
    let out = run(&mut env.worker(&job, &[], &[&agent]));
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(lines[0].contains("sandbox.preflight.not-readable"), "{err}");
    assert!(
        lines[0].ends_with(&format!("pass --readable {}", venv.display())),
        "{err}"
    );
    assert!(!env.drop_dir(&job).join("artifact.tar.gz").exists());

    let readable = venv.display().to_string();
    let out = run(&mut env.worker(&job, &["--readable", &readable], &[&agent]));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(env.artifact(&job).patch().contains("+from venv venv"));
    assert_eq!(
        std::fs::metadata(env.root.join("roothome")).unwrap().mode() & 0o7777,
        0o700,
        "the host's home was chmodded"
    );
    env.fetch_ok(&job);
}

#[test]
fn readable_holding_the_token_is_refused_before_anything_runs() {
    let env = Env::small();
    let markers = marker_dir(&env);
    let job = env.submit(&[]);
    // The token file sits in env.root.
    let root = env.root.display().to_string();
    let out = marker_worker(&env, &job, &["--readable", &root], &markers);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let err = stderr(&out);
    assert!(err.contains("sandbox.spec.secret-reachable"), "{err}");
    assert!(!err.contains(&job.token), "echoes the token");
    assert_eq!(std::fs::read_dir(&markers).unwrap().count(), 0);
}

/// `<dir>/prefix` as `npm install -g --prefix` lays it out: `bin/tool` -> the package's
/// `cli.js`, which `require`s a sibling file of its package and edits `a.txt`.
fn npm_prefix(dir: &Path) -> PathBuf {
    let prefix = dir.join("prefix");
    let pkg = prefix.join("lib/node_modules/@acme/tool");
    script(
        &pkg.join("cli.js"),
        "#!/usr/bin/env node\nrequire('./lib/helper.js').run();\n",
    );
    std::fs::create_dir_all(pkg.join("lib")).unwrap();
    std::fs::write(
        pkg.join("lib/helper.js"),
        "exports.run = () => require('fs').appendFileSync('a.txt', 'from node\\n');\n",
    )
    .unwrap();
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::os::unix::fs::symlink(
        "../lib/node_modules/@acme/tool/cli.js",
        prefix.join("bin/tool"),
    )
    .unwrap();
    for d in [
        "",
        "bin",
        "lib",
        "lib/node_modules",
        "lib/node_modules/@acme",
        "lib/node_modules/@acme/tool",
        "lib/node_modules/@acme/tool/lib",
    ] {
        chmod(&prefix.join(d), 0o755);
    }
    prefix
}

#[test]
fn npm_prefix_package_runs_whole_by_name_with_readable() {
    if !Path::new("/usr/bin/node").exists() {
        return skip("no /usr/bin/node");
    }
    let env = Env::small();
    let home = env.root.join("userhome");
    std::fs::create_dir(&home).unwrap();
    let prefix = npm_prefix(&home);
    chmod(&home, 0o700);
    let job = env.submit(&[]);
    let readable = prefix.display().to_string();
    // By name: the prefix's bin/ is on the generator's PATH.
    let out = run(&mut env.worker(&job, &["--readable", &readable], &["tool"]));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(env.artifact(&job).patch().contains("+from node"));
}

#[test]
fn npm_entry_file_alone_brings_its_package() {
    if !Path::new("/usr/bin/node").exists() {
        return skip("no /usr/bin/node");
    }
    let env = Env::small();
    let prefix = npm_prefix(&env.root);
    let entry = prefix.join("lib/node_modules/@acme/tool/cli.js");
    let job = env.submit(&[]);
    // No --readable: the program is granted, and with it its whole package (not EACCES on
    // lib/helper.js).
    let out = run(&mut env.worker(&job, &[], &[entry.to_str().unwrap()]));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(env.artifact(&job).patch().contains("+from node"));
}

#[test]
fn python_script_named_from_the_current_directory_runs() {
    let env = Env::small();
    script(
        &env.root.join("examples/generators/edit.py"),
        "import os\nopen(os.path.join(os.environ['AIRLOCK_WORKDIR'], 'a.txt'), 'a').write('from checkout\\n')\n",
    );
    chmod(&env.root.join("examples"), 0o755);
    chmod(&env.root.join("examples/generators"), 0o755);
    let job = env.submit(&[]);
    let mut c = env.worker(&job, &[], &["python3", "examples/generators/edit.py"]);
    c.current_dir(&env.root);
    let out = run(&mut c);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(env.artifact(&job).patch().contains("+from checkout"));
}

#[test]
fn home_is_private_seeded_from_the_template_and_a_template_with_the_token_is_refused() {
    let env = Env::small();
    let template = env.root.join("agent-home");
    std::fs::create_dir_all(template.join(".claude")).unwrap();
    std::fs::write(
        template.join(".claude/settings.json"),
        "{\"model\": \"from-template\"}\n",
    )
    .unwrap();
    script(
        &env.gens.join("home_probe.sh"),
        "#!/bin/sh\ncase \"$HOME\" in \"$TMPDIR\"/*) ;; *) echo \"HOME $HOME not private\"; exit 9;; esac\n\
         cat \"$HOME/.claude/settings.json\" >> a.txt\necho run > \"$HOME/.claude/state\"\n",
    );
    let job = env.submit(&[]);
    let t = template.display().to_string();
    let out = run(&mut env.worker(&job, &["--home-template", &t], &[&env.gen("home_probe.sh")]));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(env
        .artifact(&job)
        .patch()
        .contains("+{\"model\": \"from-template\"}"));
    assert!(
        !template.join(".claude/state").exists(),
        "the template was written"
    );

    // A template holding the token (or the trusted key) never reaches a generator.
    let markers = marker_dir(&env);
    let job = env.submit(&[]);
    std::fs::write(template.join(".credentials"), &job.token).unwrap();
    let out = marker_worker(&env, &job, &["--home-template", &t], &markers);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let err = stderr(&out);
    assert!(
        err.contains("worker.home-template") && err.contains(".credentials"),
        "{err}"
    );
    assert!(!err.contains(&job.token), "echoes the token");
    assert_eq!(std::fs::read_dir(&markers).unwrap().count(), 0);
}

/// A one-request-per-connection HTTP server on this host's loopback answering every request
/// with `body`; returns its port.
fn model_server(body: &'static str) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[test]
fn allow_local_reaches_a_loopback_model_server_through_the_proxy_and_is_logged() {
    let env = Env::small();
    let port = model_server("local model says hi");
    script(
        &env.gens.join("local_model.py"),
        &format!(
            "#!/usr/bin/env python3\nimport urllib.request\n\
             body = urllib.request.urlopen('http://127.0.0.1:{port}/v1/models', timeout=20).read().decode()\n\
             open('a.txt', 'a').write(body + '\\n')\n"
        ),
    );
    let job = env.submit(&[]);
    let grant = format!("127.0.0.1:{port}");
    let out = run(&mut env.worker(
        &job,
        &["--allow-local", &grant],
        &[&env.gen("local_model.py")],
    ));
    if out.status.code() == Some(1) && stderr(&out).contains("sandbox.unavailable") {
        return skip("egress needs the namespace sandbox");
    }
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let art = env.artifact(&job);
    assert!(
        art.patch().contains("+local model says hi"),
        "{}",
        art.patch()
    );
    let egress = art.packet["egress"].as_array().unwrap();
    assert_eq!(egress.len(), 1, "{}", art.packet);
    assert_eq!(egress[0]["destination"], grant.as_str());
    assert_eq!(egress[0]["allowed"], true);
    assert_eq!(egress[0]["reason"], "egress.local-grant");
    env.fetch_ok(&job);

    // Without the grant the generator has no network at all.
    let job = env.submit(&[]);
    let out = run(&mut env.worker(&job, &[], &[&env.gen("local_model.py")]));
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    assert!(env.artifact(&job).packet["egress"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn allow_local_refuses_metadata_and_public_addresses() {
    let env = Env::small();
    let job = env.submit(&[]);
    for bad in [
        "169.254.169.254:80",
        "8.8.8.8:53",
        "example.com:80",
        "127.0.0.1",
    ] {
        let out = run(&mut env.worker(&job, &["--allow-local", bad], &["/bin/true"]));
        assert_eq!(out.status.code(), Some(1), "{bad}: {}", show(&out));
        assert!(
            stderr(&out).contains("worker.allow-local"),
            "{}",
            show(&out)
        );
    }
    assert!(!env.drop_dir(&job).join("artifact.tar.gz").exists());
}

#[test]
fn gitignored_outputs_are_left_out_unread_and_counted() {
    let env = Env::new(&[
        ("src/lib.py", b"def f():\n    return 1\n", false),
        (
            ".gitignore",
            b"*.pyc\n__pycache__/\n.pytest_cache/\nbuild/\n*.log\n!keep.log\n",
            false,
        ),
        ("pkg/.gitignore", b"generated/\n", false),
        ("pkg/mod.py", b"x = 1\n", false),
        ("build/tracked.txt", b"tracked\n", false),
    ]);
    script(
        &env.gens.join("run_tests.sh"),
        "#!/bin/sh\nset -e\n\
         sed -i 's/return 1/return 2/' src/lib.py\n\
         mkdir -p .pytest_cache/v src/__pycache__ pkg/generated build/obj\n\
         echo cache > .pytest_cache/v/lastfailed\n\
         for i in $(seq 1 19); do echo pyc > src/__pycache__/m$i.cpython-312.pyc; done\n\
         echo gen > pkg/generated/out.py\n\
         mkfifo build/obj/never-opened\n\
         echo more >> build/tracked.txt\n\
         echo noise > run.log\n\
         echo kept > keep.log\n\
         echo 'src/' >> .gitignore.local\n\
         echo 'src/' >> pkg/.gitignore\n",
    );
    let job = env.submit(&[]);
    let out = run(&mut env.worker(&job, &[], &[&env.gen("run_tests.sh")]));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let art = env.artifact(&job);
    let patch = art.patch();
    for kept in [
        "src/lib.py",
        "build/tracked.txt",
        "keep.log",
        "pkg/.gitignore",
        ".gitignore.local",
    ] {
        assert!(
            patch.contains(&format!("+++ b/{kept}")),
            "{kept} missing: {patch}"
        );
    }
    for left in [
        ".pytest_cache",
        "__pycache__",
        ".pyc",
        "pkg/generated",
        "run.log",
        "never-opened",
    ] {
        assert!(!patch.contains(left), "{left} in the patch: {patch}");
    }
    // .pytest_cache/, src/__pycache__/, pkg/generated/, build/obj/, run.log.
    assert_eq!(art.packet["ignored"], 5, "{}", art.packet);
    assert!(
        art.refused().is_empty(),
        "an ignored path was looked into: {:?}",
        art.refused()
    );
    env.fetch_ok(&job);
    // The gate judges what the generator meant: its .gitignore edit (governance, human), not
    // the test run's leftovers (no new-directory reason).
    let out = run(env.airlock().args(["gate", &job.id]).current_dir(&env.repo));
    assert_eq!(out.status.code(), Some(3), "gate: {}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("pkg/.gitignore"), "{text}");
    assert!(!text.contains("new-directory"), "{text}");
}

#[test]
fn failed_generator_says_why_with_the_log_tail_and_exits_3() {
    let env = Env::small();
    script(
        &env.gens.join("fails.sh"),
        "#!/bin/sh\necho half >> a.txt\necho 'Traceback (most recent call last):' >&2\n\
         echo \"PermissionError: [Errno 13] Permission denied: 'pyvenv.cfg'\" >&2\nexit 1\n",
    );
    let job = env.submit(&[]);
    let out = run(&mut env.worker(&job, &[], &[&env.gen("fails.sh")]));
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let err = stderr(&out);
    assert!(err.contains("the generator exited with status 1"), "{err}");
    assert!(err.contains("a partial artifact was dropped"), "{err}");
    assert!(
        err.contains("  | PermissionError: [Errno 13] Permission denied: 'pyvenv.cfg'"),
        "{err}"
    );
    assert_words(&err);
    let art = env.artifact(&job);
    assert_eq!(art.packet["partial"], true);
    assert!(art.patch().contains("+half"));
    env.fetch_ok(&job);
}

#[test]
fn generator_that_changes_nothing_exits_5_with_the_log_tail() {
    let env = Env::small();
    script(
        &env.gens.join("noop.sh"),
        "#!/bin/sh\necho 'I looked and found nothing to do.'\n",
    );
    let job = env.submit(&[]);
    let out = run(&mut env.worker(&job, &[], &[&env.gen("noop.sh")]));
    assert_eq!(out.status.code(), Some(5), "{}", show(&out));
    let err = stderr(&out);
    assert!(
        err.contains("exited with status 0 but changed nothing"),
        "{err}"
    );
    assert!(
        err.contains("  | I looked and found nothing to do."),
        "{err}"
    );
    assert_words(&err);
    assert!(env.artifact(&job).patch().is_empty());
}

#[test]
fn finished_job_is_refused_before_its_generator_starts() {
    let env = Env::small();
    let job = env.submit(&[]);
    let out = run(&mut env.worker(&job, &[], &[&env.gen("edit_small.sh")]));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let before = std::fs::read(env.drop_dir(&job).join("artifact.tar.gz")).unwrap();
    let markers = marker_dir(&env);
    let out = marker_worker(&env, &job, &[], &markers);
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let err = stderr(&out);
    assert!(err.contains("worker.finished"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(
        std::fs::read_dir(&markers).unwrap().count(),
        0,
        "the generator ran"
    );
    assert!(env.run_dirs().is_empty());
    assert_eq!(
        std::fs::read(env.drop_dir(&job).join("artifact.tar.gz")).unwrap(),
        before
    );
}
