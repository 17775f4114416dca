//! What the generator may read besides the system: the `--readable` roots (its install), the
//! `bin/` directories on its `PATH`, and the script files its command line names.
//!
//! Guards against: a `--readable` root that would expose the job token, the trusted key or
//! this binary (`sandbox.spec.secret-reachable`, refused before anything runs), a root that
//! does not exist (a typo would otherwise surface as `EACCES` deep inside the generator), and
//! a script named on the command line that the sandbox cannot read (`-- python3
//! examples/generators/openai-chat.py` from a checkout).
//! A root that is a virtualenv (`pyvenv.cfg`) brings the base interpreter its `home =` names
//! (the prefix above that `bin/`: pyenv, asdf, uv-managed Pythons live under a home the
//! sandbox cannot see), held to the same secret check; the system roots need no grant.
//! Does not check: that the generator's identity can read the roots; the sandbox's preflight
//! does, and its error is turned into one line naming the flag here.

use std::path::{Path, PathBuf};

use airlock_sandbox::SandboxError;
use anyhow::{bail, Result};

/// The generator's `PATH` without `--readable` roots.
pub const BASE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Bytes of `pyvenv.cfg` read.
const MAX_PYVENV: u64 = 64 * 1024;
/// Prefixes the sandbox makes readable without a grant.
const SYSTEM: &[&str] = &["/usr", "/bin", "/lib", "/lib64", "/sbin", "/etc"];

/// The base interpreter's prefix of a virtualenv root: the parent of the `bin/` directory
/// its `pyvenv.cfg` names (`home = /root/.pyenv/versions/3.12.4/bin`), when that is an
/// absolute path outside the system roots and not `/`.
fn venv_base(root: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let cfg = root.join("pyvenv.cfg");
    let meta = std::fs::symlink_metadata(&cfg).ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open(&cfg)
        .ok()?
        .take(MAX_PYVENV)
        .read_to_string(&mut text)
        .ok()?;
    let home = text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "home").then(|| PathBuf::from(v.trim()))
    })?;
    if !home.is_absolute()
        || home
            .components()
            .any(|c| c == std::path::Component::ParentDir)
    {
        return None;
    }
    let base = if home.file_name().is_some_and(|n| n == "bin") {
        home.parent()?.to_owned()
    } else {
        home
    };
    let system = SYSTEM.iter().any(|s| base.starts_with(s));
    (!system && base.parent().is_some()).then_some(base)
}

/// Checks the `--readable` roots: absolute (taken from the current directory), existing, and
/// holding none of `secrets`; a virtualenv root brings its base interpreter's prefix, checked
/// the same way. Returns them absolute.
pub fn check_roots(roots: &[PathBuf], secrets: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = check_each(roots, secrets, None)?;
    for r in out.clone() {
        if let Some(base) = venv_base(&r) {
            if out.iter().any(|o| base.starts_with(o)) {
                continue;
            }
            tracing::info!(venv = %r.display(), base = %base.display(), "--readable virtualenv: its base interpreter is readable too");
            out.extend(check_each(&[base], secrets, Some(&r))?);
        }
    }
    Ok(out)
}

fn check_each(roots: &[PathBuf], secrets: &[PathBuf], venv: Option<&Path>) -> Result<Vec<PathBuf>> {
    let mut out = Vec::with_capacity(roots.len());
    for r in roots {
        let named = match venv {
            Some(v) => format!(
                "{} (the base interpreter of the virtualenv {}, pyvenv.cfg home)",
                r.display(),
                v.display()
            ),
            None => r.display().to_string(),
        };
        let abs = std::path::absolute(r)?;
        let Ok(resolved) = std::fs::canonicalize(&abs) else {
            bail!(
                "--readable {named}: does not exist (worker.readable): give the generator's install directory"
            );
        };
        for s in secrets {
            let s_resolved = std::fs::canonicalize(s).unwrap_or_else(|_| s.clone());
            if s_resolved.starts_with(&resolved) || s.starts_with(&abs) {
                bail!(
                    "--readable {named} refused (sandbox.spec.secret-reachable): it holds {}, which the generator must never read; grant a narrower directory",
                    s.display()
                );
            }
        }
        out.push(abs);
    }
    Ok(out)
}

/// The generator's `PATH`: `<root>/bin` of every `--readable` root that has one, then
/// [`BASE_PATH`].
pub fn generator_path(roots: &[PathBuf]) -> String {
    let mut parts: Vec<String> = roots
        .iter()
        .map(|r| r.join("bin"))
        .filter(|b| b.is_dir())
        .map(|b| b.to_string_lossy().into_owned())
        .collect();
    parts.push(BASE_PATH.to_owned());
    parts.join(":")
}

/// Script files named on the generator's command line, made readable (the file alone), as
/// the program itself is: every argument that is an absolute path to a regular file outside
/// `workdir`, and a first argument that is a relative path to a file in the worker's current
/// directory and not in `workdir` (made absolute in `args`: the generator runs in `workdir`).
pub fn script_grants(args: &mut [String], workdir: &Path) -> Vec<PathBuf> {
    let mut grants = Vec::new();
    for (i, a) in args.iter_mut().enumerate() {
        let p = PathBuf::from(&*a);
        if p.is_absolute() {
            if p.is_file() && !p.starts_with(workdir) {
                grants.push(p);
            }
            continue;
        }
        if i == 0 && !a.starts_with('-') && !workdir.join(&p).exists() {
            if let Ok(abs) = std::path::absolute(&p) {
                if abs.is_file() {
                    tracing::info!(script = %abs.display(), "generator script taken from the current directory");
                    *a = abs.to_string_lossy().into_owned();
                    grants.push(abs);
                }
            }
        }
    }
    grants
}

/// A relative program path (`examples/generators/claude-code.sh`) that names a file in the
/// worker's current directory and none in `workdir`, made absolute (the sandbox would look for
/// it in the workdir, where the generator runs); anything else unchanged.
pub fn program_from_cwd(program: &str, workdir: &Path) -> String {
    let p = Path::new(program);
    if p.is_absolute() || !program.contains('/') || workdir.join(p).exists() {
        return program.to_owned();
    }
    match std::path::absolute(p) {
        Ok(abs) if abs.is_file() => {
            tracing::info!(program = %abs.display(), "generator taken from the current directory");
            abs.to_string_lossy().into_owned()
        }
        _ => program.to_owned(),
    }
}

/// The one line for a preflight refusal, naming the flag that fixes it.
pub fn refusal_line(e: &SandboxError) -> Option<String> {
    let SandboxError::NotReadable {
        path,
        what,
        reason,
        grant,
    } = e
    else {
        return None;
    };
    let fix = match grant {
        Some(g) => format!(": pass --readable {}", g.display()),
        None => String::new(),
    };
    Some(format!(
        "cannot start the generator: {} ({what}) is not readable inside the sandbox (sandbox.preflight.not-readable): {reason}{fix}",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_holding_a_secret_is_refused_by_name() {
        let t = tempfile::tempdir().unwrap();
        let token = t.path().join("job.token");
        std::fs::write(&token, "x").unwrap();
        let e = check_roots(&[t.path().to_owned()], std::slice::from_ref(&token))
            .unwrap_err()
            .to_string();
        assert!(e.contains("sandbox.spec.secret-reachable"), "{e}");
        assert!(e.contains(&token.display().to_string()), "{e}");
        let sub = t.path().join("venv");
        std::fs::create_dir(&sub).unwrap();
        assert_eq!(
            check_roots(std::slice::from_ref(&sub), &[token]).unwrap(),
            vec![sub]
        );
    }

    #[test]
    fn a_missing_root_is_refused() {
        let e = check_roots(&[PathBuf::from("/nonexistent/venv")], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not exist"), "{e}");
    }

    #[test]
    fn path_puts_root_bins_first() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("bin")).unwrap();
        let p = generator_path(&[t.path().to_owned(), PathBuf::from("/nonexistent")]);
        assert_eq!(p, format!("{}/bin:{BASE_PATH}", t.path().display()));
    }

    #[test]
    fn script_arguments_become_grants() {
        let t = tempfile::tempdir().unwrap();
        let work = t.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let script = t.path().join("gen.py");
        std::fs::write(&script, "print(1)").unwrap();
        let mut args = vec![script.to_string_lossy().into_owned(), "-v".into()];
        assert_eq!(script_grants(&mut args, &work), vec![script]);
        let mut args = vec!["no/such/file.py".to_owned()];
        assert!(script_grants(&mut args, &work).is_empty());
        assert_eq!(args[0], "no/such/file.py");
    }

    fn venv_with_home(dir: &Path, home: &str) -> PathBuf {
        let venv = dir.join("venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(
            venv.join("pyvenv.cfg"),
            format!("home = {home}\ninclude-system-site-packages = false\nversion = 3.12.4\n"),
        )
        .unwrap();
        venv
    }

    #[test]
    fn a_virtualenv_brings_its_base_interpreter() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("pyenv/versions/3.12.4");
        std::fs::create_dir_all(base.join("bin")).unwrap();
        let venv = venv_with_home(dir.path(), &base.join("bin").display().to_string());
        let got = check_roots(std::slice::from_ref(&venv), &[]).unwrap();
        assert_eq!(got, vec![venv.clone(), base.clone()]);
        // A system Python needs nothing more; nor a base already granted.
        let sys = venv_with_home(&dir.path().join("s"), "/usr/bin");
        assert_eq!(
            check_roots(std::slice::from_ref(&sys), &[]).unwrap(),
            vec![sys]
        );
        let both = check_roots(&[venv.clone(), dir.path().join("pyenv")], &[]).unwrap();
        assert_eq!(both, vec![venv, dir.path().join("pyenv")]);
    }

    #[test]
    fn a_base_interpreter_holding_a_secret_is_refused_and_hostile_homes_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("py");
        std::fs::create_dir_all(base.join("bin")).unwrap();
        let secret = base.join("trusted.pub");
        std::fs::write(&secret, "key").unwrap();
        let venv = venv_with_home(dir.path(), &base.join("bin").display().to_string());
        let e = check_roots(std::slice::from_ref(&venv), std::slice::from_ref(&secret))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("sandbox.spec.secret-reachable") && e.contains("base interpreter"),
            "{e}"
        );
        for home in ["bin", "/", "/tmp/../root/bin", "/bin"] {
            let d = tempfile::tempdir().unwrap();
            let v = venv_with_home(d.path(), home);
            assert_eq!(
                check_roots(std::slice::from_ref(&v), &[]).unwrap(),
                vec![v],
                "{home}"
            );
        }
        // A pyvenv.cfg that is a link is not read.
        let d = tempfile::tempdir().unwrap();
        let v = d.path().join("v");
        std::fs::create_dir(&v).unwrap();
        std::fs::write(
            d.path().join("cfg"),
            format!("home = {}\n", base.join("bin").display()),
        )
        .unwrap();
        std::os::unix::fs::symlink(d.path().join("cfg"), v.join("pyvenv.cfg")).unwrap();
        assert_eq!(check_roots(std::slice::from_ref(&v), &[]).unwrap(), vec![v]);
    }
}
