//! Before anything starts: can the generator's identity read and run what the command names?
//!
//! Checks, in the supervisor and before the helper exists: the program (found as the helper
//! will find it), its `#!` interpreter (and, through `/usr/bin/env`, the interpreter named
//! there), and for a virtualenv's interpreter `pyvenv.cfg` and the directory its `home =`
//! names. Each must lie under a readable root (landlock) and be reachable by the identity the
//! generator runs as (the file modes, with the readable roots a root worker's namespace
//! sandbox binds in, see `helper::bind_readable`). A readable root that identity could never
//! open is refused the same way.
//! Widens one grant: a program inside `node_modules/<package>` gets the whole package (its
//! entry file `require`s its siblings).
//!
//! Guards against: a generator that starts and dies of `EACCES` deep inside (a virtualenv
//! under a root worker's 0700 `/root`, an npm package of which only the entry file was
//! granted, a script outside the readable roots), leaving the operator a Python traceback in
//! a log nobody shows. The error names the path, why, and the directory to grant.
//! Does not check: files the generator opens later (libraries, data); mount options.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::reach::{self, Who, R, X};
use super::sys;
use crate::error::SandboxError;
use crate::spec::{Mode, SandboxSpec, DEFAULT_READABLE};

/// Bytes of a `#!` line read.
const MAX_SHEBANG: usize = 256;
/// Bytes of `pyvenv.cfg` read.
const MAX_PYVENV: u64 = 64 * 1024;

/// The identity the generator of `spec` will run as.
pub(crate) fn generator_identity(spec: &SandboxSpec) -> Who {
    Who::for_worker(
        sys::geteuid(),
        sys::getegid(),
        supplementary_groups(),
        spec.unprivileged_id,
    )
}

fn supplementary_groups() -> Vec<u32> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .map(|g| {
            g.split_whitespace()
                .filter_map(|n| n.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Runs the checks of the module doc; returns the spec to run (with a `node_modules`
/// package's grant widened), or `SandboxError::NotReadable` / `SandboxError::Exec`.
pub(crate) fn preflight(spec: &SandboxSpec) -> Result<SandboxSpec, SandboxError> {
    let mut spec = spec.clone();
    if spec.mode == Mode::Unsandboxed {
        return Ok(spec);
    }
    let who = generator_identity(&spec);
    // A root worker's sandbox binds in readable roots above which a directory stops the
    // identity (see `binds`).
    let binds = sys::geteuid() == 0;
    let program = spec.resolve_program().ok_or_else(|| SandboxError::Exec {
        program: spec.program.display().to_string(),
        detail: format!(
            "not found in the sandbox's PATH ({}), which is not the worker's: give the generator's absolute path, or --readable its install directory",
            spec.path_var()
        ),
    })?;
    let canonical = std::fs::canonicalize(&program).map_err(|e| SandboxError::Exec {
        program: spec.program.display().to_string(),
        detail: format!("{}: {e}", program.display()),
    })?;
    if let Some(pkg) = node_package(&canonical) {
        if !spec.readable.iter().any(|r| pkg.starts_with(r)) {
            spec.readable.push(pkg);
        }
    }
    let check = Check {
        spec: &spec,
        who: &who,
        binds,
        program: canonical.clone(),
    };
    for r in &spec.readable {
        check.root(r)?;
    }
    let shebang = read_shebang(&canonical);
    let want = if shebang.is_some() { R | X } else { X };
    let mut execs = vec![(program.clone(), "the program".to_owned())];
    check.file(&program, "the program", want)?;
    if let Some((interp, arg)) = shebang {
        let what = format!("the #! interpreter of {}", program.display());
        check.file(&interp, &what, X)?;
        execs.push((interp.clone(), what));
        if interp.file_name().is_some_and(|n| n == "env") {
            if let Some(name) = env_target(arg.as_deref()) {
                let what = format!("the interpreter {} names through env", program.display());
                let found = if name.contains('/') {
                    Some(PathBuf::from(&name))
                } else {
                    spec.lookup(&name)
                };
                let Some(found) = found else {
                    return Err(SandboxError::Exec {
                        program: spec.program.display().to_string(),
                        detail: format!(
                            "{what}, {name}, is not found in the sandbox's PATH ({})",
                            spec.path_var()
                        ),
                    });
                };
                check.file(&found, &what, X)?;
                execs.push((found, what));
            }
        }
    }
    for (exe, _) in &execs {
        if let Some(venv) = venv_of(exe) {
            let cfg = venv.join("pyvenv.cfg");
            let what = format!("the virtualenv configuration of {}", exe.display());
            check.file(&cfg, &what, R)?;
            if let Some(home) = pyvenv_home(&cfg) {
                let what = format!(
                    "the base interpreter's directory {} names (home =)",
                    cfg.display()
                );
                check.file(&home, &what, X)?;
            }
        }
    }
    Ok(spec)
}

struct Check<'a> {
    spec: &'a SandboxSpec,
    who: &'a Who,
    binds: bool,
    /// The resolved program file: landlock grants it (the file alone), never binds it.
    program: PathBuf,
}

impl Check<'_> {
    fn err(&self, path: &Path, what: &str, reason: String, grant: Option<PathBuf>) -> SandboxError {
        SandboxError::NotReadable {
            path: path.to_owned(),
            what: what.to_owned(),
            reason,
            grant,
        }
    }

    fn user(&self) -> String {
        format!("the sandbox user {}:{}", self.who.uid, self.who.gid)
    }

    /// A readable root the identity could never open (after binding, where that happens).
    fn root(&self, root: &Path) -> Result<(), SandboxError> {
        if DEFAULT_READABLE.iter().any(|d| Path::new(d) == root) || !root.exists() {
            return Ok(());
        }
        let what = "a readable root";
        if let Some(b) = self.who.blocker(root) {
            if !self.binds {
                return Err(self.err(
                    root,
                    what,
                    format!(
                        "{} cannot search {} ({}){}",
                        self.user(),
                        b.display(),
                        reach::mode_of(&b),
                        fix_without_binds()
                    ),
                    None,
                ));
            }
        }
        let want = if root.is_dir() { R | X } else { R };
        if let Some(d) = self.who.denied_below(root, root, want) {
            return Err(self.err(
                root,
                what,
                format!(
                    "{} cannot read {} ({}): make the install readable to it (chmod -R o+rX {})",
                    self.user(),
                    d.display(),
                    reach::mode_of(&d),
                    root.display()
                ),
                None,
            ));
        }
        Ok(())
    }

    /// `path` (and what it links to) is under a readable root and reachable with `want`.
    fn file(&self, path: &Path, what: &str, want: u32) -> Result<(), SandboxError> {
        let canonical = std::fs::canonicalize(path)
            .map_err(|e| self.err(path, what, format!("cannot be resolved: {e}"), None))?;
        let roots = self.roots();
        if canonical != self.program && !roots.iter().any(|(_, c)| canonical.starts_with(c)) {
            let reason = if canonical == path {
                "is outside the sandbox's readable roots".to_owned()
            } else {
                format!(
                    "links to {}, outside the sandbox's readable roots",
                    canonical.display()
                )
            };
            return Err(self.err(path, what, reason, Some(suggest(&canonical))));
        }
        for p in [path, canonical.as_path()] {
            self.reachable(p, what, want, &roots)?;
        }
        Ok(())
    }

    /// Every granted root, as given and resolved.
    fn roots(&self) -> Vec<(PathBuf, PathBuf)> {
        let s = self.spec;
        s.readable
            .iter()
            .chain([&s.workdir, &s.private_tmp])
            .map(|r| {
                let c = std::fs::canonicalize(r).unwrap_or_else(|_| r.clone());
                (r.clone(), c)
            })
            .collect()
    }

    fn reachable(
        &self,
        p: &Path,
        what: &str,
        want: u32,
        roots: &[(PathBuf, PathBuf)],
    ) -> Result<(), SandboxError> {
        // The deepest readable root the namespace sandbox binds in, if `p` is under one.
        let bound = roots
            .iter()
            .flat_map(|(g, c)| [g, c])
            .filter(|r| self.binds && p.starts_with(r) && self.who.blocker(r).is_some())
            .max_by_key(|r| r.as_os_str().len());
        let denied = match bound {
            Some(r) => self.who.denied_below(r, p, want),
            None => match self.who.blocker(p) {
                Some(b) => {
                    let reason = format!(
                        "{} cannot search {} ({})",
                        self.user(),
                        b.display(),
                        reach::mode_of(&b)
                    );
                    let (reason, grant) = if self.binds {
                        (reason, Some(suggest(p)))
                    } else {
                        (format!("{reason}{}", fix_without_binds()), None)
                    };
                    return Err(self.err(p, what, reason, grant));
                }
                None => self.who.denied_below(Path::new("/"), p, want),
            },
        };
        match denied {
            None => Ok(()),
            Some(d) => Err(self.err(
                p,
                what,
                format!(
                    "{} cannot {} {} ({})",
                    self.user(),
                    if d == p { verb(want) } else { "search" },
                    d.display(),
                    reach::mode_of(&d)
                ),
                None,
            )),
        }
    }
}

fn verb(want: u32) -> &'static str {
    if want & R != 0 {
        "read"
    } else {
        "execute"
    }
}

fn fix_without_binds() -> &'static str {
    ": the worker's own user cannot reach it either"
}

/// The directory to grant for `file`: an install prefix when `file` sits in one's `bin/`
/// (a virtualenv, an npm prefix, `/opt/tool`), else its directory.
fn suggest(file: &Path) -> PathBuf {
    let Some(dir) = file.parent() else {
        return file.to_owned();
    };
    if let Some(pkg) = node_package(file) {
        // <prefix>/lib/node_modules/<pkg>/... -> <prefix>
        let nm = pkg.parent().map(|p| {
            if p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('@'))
            {
                p.parent().unwrap_or(p)
            } else {
                p
            }
        });
        if let Some(above) = nm.and_then(Path::parent) {
            return if above.file_name().is_some_and(|n| n == "lib") {
                above.parent().unwrap_or(above).to_owned()
            } else {
                above.to_owned()
            };
        }
    }
    if dir.file_name().is_some_and(|n| n == "bin") {
        if let Some(prefix) = dir.parent().filter(|p| *p != Path::new("/")) {
            return prefix.to_owned();
        }
    }
    dir.to_owned()
}

/// `.../node_modules/<name>` or `.../node_modules/@scope/<name>` containing `path`.
fn node_package(path: &Path) -> Option<PathBuf> {
    let comps: Vec<_> = path.components().collect();
    let i = comps
        .iter()
        .rposition(|c| c.as_os_str() == "node_modules")?;
    let first = comps.get(i + 1)?;
    let take = if first.as_os_str().to_string_lossy().starts_with('@') {
        i + 3
    } else {
        i + 2
    };
    // The package must be a directory above the file, not the file itself.
    if take >= comps.len() {
        return None;
    }
    Some(comps[..take].iter().collect())
}

/// The `#!` line of `file`: interpreter and its optional single argument.
fn read_shebang(file: &Path) -> Option<(PathBuf, Option<String>)> {
    let mut buf = Vec::with_capacity(MAX_SHEBANG);
    std::fs::File::open(file)
        .ok()?
        .take(MAX_SHEBANG as u64)
        .read_to_end(&mut buf)
        .ok()?;
    let rest = buf.strip_prefix(b"#!")?;
    let line = rest.split(|b| *b == b'\n').next()?;
    let line = String::from_utf8_lossy(line);
    let line = line.trim();
    let (interp, arg) = match line.split_once([' ', '\t']) {
        Some((i, a)) => (i, Some(a.trim().to_owned()).filter(|a| !a.is_empty())),
        None => (line, None),
    };
    interp
        .starts_with('/')
        .then(|| (PathBuf::from(interp), arg))
}

/// The program `env` runs: its first word that is neither an option nor an assignment.
fn env_target(arg: Option<&str>) -> Option<String> {
    arg?.split_whitespace()
        .find(|w| !w.starts_with('-') && !w.contains('='))
        .map(str::to_owned)
}

/// The virtualenv whose `bin/` holds `exe` (`<venv>/pyvenv.cfg` exists).
fn venv_of(exe: &Path) -> Option<PathBuf> {
    let bin = exe.parent()?;
    if bin.file_name()? != "bin" {
        return None;
    }
    let venv = bin.parent()?;
    venv.join("pyvenv.cfg").is_file().then(|| venv.to_owned())
}

/// The `home =` directory of a `pyvenv.cfg`.
fn pyvenv_home(cfg: &Path) -> Option<PathBuf> {
    let mut text = String::new();
    std::fs::File::open(cfg)
        .ok()?
        .take(MAX_PYVENV)
        .read_to_string(&mut text)
        .ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "home")
            .then(|| PathBuf::from(v.trim()))
            .filter(|p| p.is_absolute())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_package_is_the_directory_under_node_modules() {
        assert_eq!(
            node_package(Path::new(
                "/p/lib/node_modules/@anthropic-ai/claude-code/cli.js"
            )),
            Some(PathBuf::from(
                "/p/lib/node_modules/@anthropic-ai/claude-code"
            ))
        );
        assert_eq!(
            node_package(Path::new("/p/lib/node_modules/opencode-ai/bin/opencode")),
            Some(PathBuf::from("/p/lib/node_modules/opencode-ai"))
        );
        assert_eq!(node_package(Path::new("/usr/bin/node")), None);
        assert_eq!(node_package(Path::new("/p/node_modules/x")), None);
    }

    #[test]
    fn suggestion_is_the_install_prefix() {
        assert_eq!(
            suggest(Path::new("/root/.venvs/a/bin/python")),
            PathBuf::from("/root/.venvs/a")
        );
        assert_eq!(
            suggest(Path::new("/root/.npm-global/lib/node_modules/@x/y/cli.js")),
            PathBuf::from("/root/.npm-global")
        );
        assert_eq!(
            suggest(Path::new(
                "/root/src/airlock/examples/generators/openai-chat.py"
            )),
            PathBuf::from("/root/src/airlock/examples/generators")
        );
        assert_eq!(suggest(Path::new("/bin/sh")), PathBuf::from("/bin"));
    }

    #[test]
    fn env_target_skips_options_and_assignments() {
        assert_eq!(env_target(Some("python3")), Some("python3".into()));
        assert_eq!(
            env_target(Some("-S node --no-warnings")),
            Some("node".into())
        );
        assert_eq!(env_target(Some("A=1 node")), Some("node".into()));
        assert_eq!(env_target(None), None);
    }

    #[test]
    fn shebang_and_pyvenv_home_parse() {
        let t = tempfile::tempdir().unwrap();
        let s = t.path().join("s");
        std::fs::write(&s, "#!/usr/bin/env python3\nprint(1)\n").unwrap();
        assert_eq!(
            read_shebang(&s),
            Some((PathBuf::from("/usr/bin/env"), Some("python3".into())))
        );
        std::fs::write(&s, "print(1)\n").unwrap();
        assert_eq!(read_shebang(&s), None);
        let cfg = t.path().join("pyvenv.cfg");
        std::fs::write(
            &cfg,
            "include-system-site-packages = false\nhome = /usr/bin\n",
        )
        .unwrap();
        assert_eq!(pyvenv_home(&cfg), Some(PathBuf::from("/usr/bin")));
    }
}
