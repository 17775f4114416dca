//! What the generator may read besides the system: the `--readable` roots (its install), the
//! `bin/` directories on its `PATH`, and the script files its command line names.
//!
//! Guards against: a `--readable` root that would expose the job token, the trusted key or
//! this binary (`sandbox.spec.secret-reachable`, refused before anything runs), a root that
//! does not exist (a typo would otherwise surface as `EACCES` deep inside the generator), and
//! a script named on the command line that the sandbox cannot read (`-- python3
//! examples/generators/openai-chat.py` from a checkout).
//! Does not check: that the generator's identity can read the roots; the sandbox's preflight
//! does, and its error is turned into one line naming the flag here.

use std::path::{Path, PathBuf};

use airlock_sandbox::SandboxError;
use anyhow::{bail, Result};

/// The generator's `PATH` without `--readable` roots.
pub const BASE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Checks the `--readable` roots: absolute (taken from the current directory), existing, and
/// holding none of `secrets`. Returns them absolute.
pub fn check_roots(roots: &[PathBuf], secrets: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::with_capacity(roots.len());
    for r in roots {
        let abs = std::path::absolute(r)?;
        let Ok(resolved) = std::fs::canonicalize(&abs) else {
            bail!(
                "--readable {}: does not exist (worker.readable): give the generator's install directory",
                r.display()
            );
        };
        for s in secrets {
            let s_resolved = std::fs::canonicalize(s).unwrap_or_else(|_| s.clone());
            if s_resolved.starts_with(&resolved) || s.starts_with(&abs) {
                bail!(
                    "--readable {} refused (sandbox.spec.secret-reachable): it holds {}, which the generator must never read; grant a narrower directory",
                    r.display(),
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
        let e = check_roots(&[t.path().to_owned()], &[token.clone()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("sandbox.spec.secret-reachable"), "{e}");
        assert!(e.contains(&token.display().to_string()), "{e}");
        let sub = t.path().join("venv");
        std::fs::create_dir(&sub).unwrap();
        assert_eq!(check_roots(&[sub.clone()], &[token]).unwrap(), vec![sub]);
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
}
