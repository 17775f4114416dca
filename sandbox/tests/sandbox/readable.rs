//! Readable roots: a generator installed outside the system roots (a virtualenv under a root
//! worker's 0700 home, an npm package) runs when its install is granted, without a `chmod` of
//! the host's files, and is refused by the preflight, with the path and the directory to
//! grant, when it is not.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use airlock_sandbox::{Mode, SandboxError};

use crate::support::*;

fn mode_of(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().mode() & 0o7777
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").unwrap().uid() == 0
}

/// `<fixture>/home` (0700, like `/root`) holding a real virtualenv `venv/` (no pip: fast) with
/// a console script `venv/bin/gen` whose `#!` is the venv's python. Returns (home, venv).
fn venv_in_private_home(f: &Fixture) -> (PathBuf, PathBuf) {
    let home = f.path("home");
    std::fs::create_dir(&home).unwrap();
    let venv = home.join("venv");
    let out = Command::new(PYTHON)
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .output()
        .unwrap();
    assert!(out.status.success(), "python3 -m venv: {out:?}");
    let gen = venv.join("bin/gen");
    std::fs::write(
        &gen,
        format!(
            "#!{}/bin/python\nimport sys\nopen('made-by-venv.txt', 'w').write(sys.prefix)\n",
            venv.display()
        ),
    )
    .unwrap();
    chmod(&gen, 0o755);
    chmod(&home, 0o700);
    (home, venv)
}

#[test]
fn venv_under_a_0700_root_home_runs_when_granted_and_the_host_is_untouched() {
    if !is_root() {
        return skip("needs a root worker (the generator runs as nobody)");
    }
    let Some(mode) = require(Mode::Namespaces) else {
        return;
    };
    let f = Fixture::new();
    let (home, venv) = venv_in_private_home(&f);
    let before: Vec<(PathBuf, u32)> = [&home, &venv, &venv.join("bin")]
        .iter()
        .map(|p| (p.to_path_buf(), mode_of(p)))
        .collect();
    let mut spec = f.spec(mode, &venv.join("bin/gen").display().to_string(), &[]);
    spec.readable.push(venv.clone());
    let (o, log) = f.run(&spec).unwrap();
    assert!(o.status.success(), "{:?}\n{log}", o.status);
    assert_eq!(
        std::fs::read_to_string(f.work.join("made-by-venv.txt")).unwrap(),
        venv.display().to_string()
    );
    for (p, m) in before {
        assert_eq!(mode_of(&p), m, "{} changed mode", p.display());
    }
    // Nothing else of the covered home is there inside; the venv is.
    std::fs::write(home.join("secret.txt"), "s").unwrap();
    let probe = format!(
        "[ -e '{0}/secret.txt' ] && exit 1; [ -x '{1}/bin/python' ] || exit 2; exit 0",
        home.display(),
        venv.display()
    );
    let mut spec = f.sh(mode, &probe);
    spec.readable.push(venv.clone());
    let (o, log) = f.run(&spec).unwrap();
    assert!(o.status.success(), "{:?}: {log}", o.status);
}

#[test]
fn venv_under_a_0700_root_home_without_the_grant_is_refused_by_the_preflight() {
    if !is_root() {
        return skip("needs a root worker (the generator runs as nobody)");
    }
    let f = Fixture::new();
    let (_, venv) = venv_in_private_home(&f);
    let program = venv.join("bin/gen");
    let spec = f.spec(Mode::Auto, &program.display().to_string(), &[]);
    match f.run(&spec) {
        Err(SandboxError::NotReadable { path, grant, .. }) => {
            assert_eq!(path, program);
            assert_eq!(grant, Some(venv.clone()));
        }
        other => panic!("expected the preflight refusal, got {other:?}"),
    }
    // Granting only the program's directory leaves the venv's interpreter out.
    let mut spec = f.spec(Mode::Auto, &program.display().to_string(), &[]);
    spec.readable.push(venv.join("bin"));
    let e = f.run(&spec).unwrap_err();
    assert_eq!(e.rule(), "sandbox.preflight.not-readable", "{e}");
}

#[test]
fn venv_whose_base_interpreter_is_outside_the_roots_names_pyvenv_cfg() {
    let Some(mode) = require(Mode::Namespaces) else {
        return;
    };
    let f = Fixture::new();
    let (home, venv) = venv_in_private_home(&f);
    chmod(&home, 0o755);
    std::fs::write(venv.join("pyvenv.cfg"), "home = /nonexistent/python/bin\n").unwrap();
    let mut spec = f.spec(mode, &venv.join("bin/gen").display().to_string(), &[]);
    spec.readable.push(venv.clone());
    match f.run(&spec) {
        Err(SandboxError::NotReadable { path, what, .. }) => {
            assert_eq!(path, PathBuf::from("/nonexistent/python/bin"));
            assert!(what.contains("pyvenv.cfg"), "{what}");
        }
        other => panic!("expected the preflight refusal, got {other:?}"),
    }
}

/// `<dir>/prefix` as `npm -g --prefix` lays it out: `bin/tool` -> the package's `cli.js`,
/// which `require`s a sibling file of its package.
fn npm_prefix(dir: &Path) -> PathBuf {
    let prefix = dir.join("prefix");
    let pkg = prefix.join("lib/node_modules/@acme/tool");
    std::fs::create_dir_all(pkg.join("lib")).unwrap();
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::fs::write(
        pkg.join("cli.js"),
        "#!/usr/bin/env node\nrequire('./lib/helper.js').run();\n",
    )
    .unwrap();
    chmod(&pkg.join("cli.js"), 0o755);
    std::fs::write(
        pkg.join("lib/helper.js"),
        "exports.run = () => require('fs').writeFileSync('made-by-node.txt', 'ok');\n",
    )
    .unwrap();
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
    ] {
        chmod(&prefix.join(d), 0o755);
    }
    chmod(&pkg, 0o755);
    chmod(&pkg.join("lib"), 0o755);
    prefix
}

fn node_available() -> bool {
    if Path::new("/usr/bin/node").exists() {
        return true;
    }
    skip("no /usr/bin/node");
    false
}

#[test]
fn npm_package_runs_whole_when_only_its_entry_file_is_named() {
    if !node_available() {
        return;
    }
    let Some(mode) = require(Mode::Namespaces) else {
        return;
    };
    let f = Fixture::new();
    let prefix = npm_prefix(f.dir.path());
    // The entry file itself, outside every readable root: the package comes with it.
    let entry = prefix.join("lib/node_modules/@acme/tool/cli.js");
    let spec = f.spec(mode, &entry.display().to_string(), &[]);
    let (o, log) = f.run(&spec).unwrap();
    assert!(o.status.success(), "{:?}\n{log}", o.status);
    assert_eq!(
        std::fs::read_to_string(f.work.join("made-by-node.txt")).unwrap(),
        "ok"
    );
}

#[test]
fn npm_prefix_in_a_0700_root_home_runs_by_name_when_granted() {
    if !node_available() {
        return;
    }
    if !is_root() {
        return skip("needs a root worker (the generator runs as nobody)");
    }
    let Some(mode) = require(Mode::Namespaces) else {
        return;
    };
    let f = Fixture::new();
    let home = f.path("home");
    std::fs::create_dir(&home).unwrap();
    let prefix = npm_prefix(&home);
    chmod(&home, 0o700);
    let mut spec = f.spec(mode, "tool", &[]);
    spec.env[0].1 = format!("{}/bin:/usr/bin:/bin", prefix.display());
    let e = f.run(&spec).unwrap_err();
    match &e {
        SandboxError::NotReadable { grant, .. } => assert_eq!(grant.as_ref(), Some(&prefix)),
        other => panic!("expected the preflight refusal, got {other:?}"),
    }
    spec.readable.push(prefix.clone());
    let (o, log) = f.run(&spec).unwrap();
    assert!(o.status.success(), "{:?}\n{log}", o.status);
    assert!(f.work.join("made-by-node.txt").exists());
    assert_eq!(mode_of(&home), 0o700);
}

/// A readable root that is a symbolic link to a directory no other grant covers (an install
/// reached through a link, `/opt/tool` -> `/data/tool`): the generator runs what is in it
/// through the link's path, in both modes (namespace mode binds what the link leads to at the
/// link's place in its new root).
fn a_readable_root_reached_through_a_link_runs(mode: Mode) {
    let f = Fixture::new();
    let real = f.path("data-tool");
    std::fs::create_dir(&real).unwrap();
    std::fs::write(
        real.join("tool.sh"),
        "#!/bin/sh\necho made-through-the-link > out.txt\n",
    )
    .unwrap();
    chmod(&real.join("tool.sh"), 0o755);
    let link = f.path("opt-tool");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let program = link.join("tool.sh");
    let mut spec = f.spec(mode, &program.display().to_string(), &[]);
    spec.readable.push(link.clone());
    let (o, log) = f.run(&spec).unwrap();
    assert!(o.status.success(), "{log}");
    assert_eq!(
        std::fs::read_to_string(f.work.join("out.txt")).unwrap(),
        "made-through-the-link\n"
    );
}

crate::in_both_modes!(a_readable_root_reached_through_a_link_runs);
