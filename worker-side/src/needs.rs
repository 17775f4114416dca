//! Programs a generator script declares it runs (`# airlock-needs: claude` in its leading
//! comment lines), checked before the job is fetched: each must be found on the generator's
//! `PATH` (the `--readable` roots' `bin/` then the system's), inside a readable root or the
//! system.
//!
//! Guards against: a wrapper (`examples/generators/claude-code.sh`) whose agent the sandbox
//! cannot see: the sandbox's preflight checks the script and its interpreter, not what the
//! script execs, so the run used to start, fail inside with `exec: claude: not found`, and use
//! the job up (a partial artifact was dropped; a rerun was `worker.finished`). Now nothing
//! runs and the error names the `--readable` that fixes it (`worker.needs`).
//! Reads at most [`MAX_HEADER`] bytes of each script; a name is `[A-Za-z0-9._+-]`, no `/`.
//! Does not check: programs a script runs without declaring them.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

/// Bytes of a script's head searched for declarations.
const MAX_HEADER: u64 = 4096;
/// The declaration's marker.
const MARKER: &str = "airlock-needs:";
/// System directories the sandbox makes readable without a flag.
const SYSTEM: &[&str] = &["/usr", "/bin", "/lib", "/lib64", "/sbin", "/etc", "/opt"];

/// The script files of a generator command: the program and the arguments that name regular
/// files (absolute, or relative to the current directory), outside `workdir`.
fn scripts(command: &[String]) -> Vec<PathBuf> {
    command
        .iter()
        .filter(|a| !a.starts_with('-') && !a.contains('{'))
        .filter_map(|a| std::path::absolute(a).ok())
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
        .collect()
}

/// The programs `script` declares, from the comment lines at its head.
fn declared(script: &Path) -> Vec<String> {
    let mut head = String::new();
    let Ok(f) = std::fs::File::open(script) else {
        return Vec::new();
    };
    let mut bytes = Vec::new();
    if f.take(MAX_HEADER).read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    head.push_str(&String::from_utf8_lossy(&bytes));
    head.lines()
        .take_while(|l| l.starts_with('#') || l.trim().is_empty())
        .filter_map(|l| l.trim_start_matches('#').trim().strip_prefix(MARKER))
        .flat_map(|names| names.split_whitespace().map(str::to_owned))
        .collect()
}

fn name_ok(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 100
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
        && n != "."
        && n != ".."
}

fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `name` on the worker's own `PATH`, to suggest the directory to grant.
fn worker_has(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|c| executable(c))
}

/// The `--readable` that would make `found` (a `bin/NAME` on the worker's `PATH`) visible:
/// the directory above its `bin/`.
fn grant_for(found: &Path) -> PathBuf {
    let dir = found.parent().unwrap_or(Path::new("/"));
    if dir.file_name().is_some_and(|n| n == "bin") {
        dir.parent().unwrap_or(dir).to_owned()
    } else {
        dir.to_owned()
    }
}

/// Checks every program the command's scripts declare (`worker.needs`), before anything is
/// fetched or run.
pub fn check(command: &[String], readable: &[PathBuf]) -> Result<()> {
    let path = crate::readable::generator_path(readable);
    for script in scripts(command) {
        for name in declared(&script) {
            if !name_ok(&name) {
                bail!(
                    "{} declares airlock-needs {name:?} (worker.needs): not a program name ([A-Za-z0-9._+-])",
                    script.display()
                );
            }
            let found = path
                .split(':')
                .map(|d| Path::new(d).join(&name))
                .find(|c| executable(c));
            let fix = match worker_has(&name) {
                Some(f) => format!(": pass --readable {}", grant_for(&f).display()),
                None => format!(": install {name} and pass --readable with its install directory"),
            };
            let Some(found) = found else {
                bail!(
                    "cannot start the generator: {} needs {name} (airlock-needs), which is not on the sandbox's PATH ({path}) (worker.needs){fix}",
                    script.display()
                );
            };
            // What it links to must be inside a granted root or the system too (an npm
            // `bin/` link points into the prefix's `lib/`).
            let real = std::fs::canonicalize(&found).unwrap_or(found.clone());
            let granted = readable
                .iter()
                .filter_map(|r| std::fs::canonicalize(r).ok())
                .any(|r| real.starts_with(r))
                || SYSTEM.iter().any(|s| real.starts_with(s));
            if !granted {
                bail!(
                    "cannot start the generator: {} needs {name} (airlock-needs); {} is {}, outside the readable roots (worker.needs): pass --readable {}",
                    script.display(),
                    found.display(),
                    real.display(),
                    grant_for(&real).display()
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(dir: &Path, body: &str) -> String {
        let p = dir.join("wrapper.sh");
        std::fs::write(&p, body).unwrap();
        p.to_string_lossy().into_owned()
    }

    fn exe(p: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn a_declared_program_outside_the_roots_is_refused_naming_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("agents");
        exe(&root.join("bin/airlock-test-agent"));
        let s = script(
            dir.path(),
            "#!/bin/sh\n# A wrapper.\n# airlock-needs: airlock-test-agent\nexec airlock-test-agent\n",
        );
        let e = check(&["/bin/sh".into(), s.clone()], &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("worker.needs") && e.contains("airlock-test-agent"),
            "{e}"
        );
        // Granted, it passes.
        check(&["/bin/sh".into(), s], &[root]).unwrap();
    }

    #[test]
    fn a_link_out_of_the_roots_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("prefix");
        let elsewhere = dir.path().join("elsewhere/lib/agent.js");
        exe(&elsewhere);
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("bin/airlock-test-agent")).unwrap();
        let s = script(
            dir.path(),
            "#!/bin/sh\n# airlock-needs: airlock-test-agent\n",
        );
        let e = check(&[s], &[root]).unwrap_err().to_string();
        assert!(e.contains("outside the readable roots"), "{e}");
    }

    #[test]
    fn hostile_declarations_are_refused_and_late_ones_ignored() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["../../bin/sh", "/bin/sh", "a;b"] {
            let s = script(dir.path(), &format!("#!/bin/sh\n# airlock-needs: {bad}\n"));
            let e = check(&[s], &[]).unwrap_err().to_string();
            assert!(e.contains("not a program name"), "{bad}: {e}");
        }
        // Only the leading comment block declares; system programs need nothing.
        let s = script(
            dir.path(),
            "#!/bin/sh\n# airlock-needs: sh\necho hi\n# airlock-needs: airlock-no-such\n",
        );
        check(&[s], &[]).unwrap();
    }
}
