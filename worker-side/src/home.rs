//! The generator's `HOME`: a fresh directory inside its private tmp for every run, seeded
//! from `--home-template DIR` (agent settings: `~/.claude/settings.json`,
//! `~/.codex/config.toml`, `.aider.conf.yml`).
//!
//! Guards against: a template that would hand the generator the job token or the trusted key
//! (refused, naming the file: `worker.home-template`), links (never followed: a link in the
//! template is refused, since a copy would either leak its target or dangle), special files,
//! and a template too large to be settings (file count and byte caps). One run's `HOME` never
//! reaches the next (it lives and dies with the run directory).
//! Does not check: what the settings tell the agent to do; the sandbox confines it anyway.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Name of the generator's `HOME` inside its private tmp.
pub const HOME_DIR: &str = "home";
/// Most entries a template may hold.
const MAX_ENTRIES: usize = 10_000;
/// Most bytes a template may hold.
const MAX_BYTES: u64 = 64 << 20;

/// One entry of a checked template, relative to its root.
#[derive(Debug)]
struct Entry {
    rel: PathBuf,
    dir: bool,
    exec: bool,
}

/// A checked `--home-template`: every entry a directory or a regular file, none holding a
/// secret.
#[derive(Debug)]
pub struct Template {
    root: PathBuf,
    entries: Vec<Entry>,
}

/// Walks and checks `dir` (links not followed); `secrets` are byte strings no file may
/// contain (the token, the trusted key's body), `secret_files` files it must not be.
pub fn check(dir: &Path, secrets: &[&[u8]], secret_files: &[PathBuf]) -> Result<Template> {
    let refuse = |p: &Path, why: &str| -> anyhow::Error {
        anyhow::anyhow!(
            "--home-template {}: {} refused (worker.home-template): {why}",
            dir.display(),
            p.display()
        )
    };
    let top = std::fs::symlink_metadata(dir)
        .with_context(|| format!("--home-template {}: cannot read", dir.display()))?;
    if !top.is_dir() {
        bail!(
            "--home-template {}: not a directory (worker.home-template)",
            dir.display()
        );
    }
    let secret_ids: Vec<(u64, u64)> = secret_files
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| {
            use std::os::unix::fs::MetadataExt;
            (m.dev(), m.ino())
        })
        .collect();
    let mut entries = Vec::new();
    let mut bytes = 0u64;
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let here = dir.join(&rel);
        let mut names: Vec<_> = std::fs::read_dir(&here)
            .with_context(|| format!("--home-template: cannot list {}", here.display()))?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<std::io::Result<_>>()?;
        names.sort();
        for name in names {
            let rel = rel.join(&name);
            let path = dir.join(&rel);
            if entries.len() >= MAX_ENTRIES {
                bail!(
                    "--home-template {}: more than {MAX_ENTRIES} entries (worker.home-template): a home template holds settings, not installs",
                    dir.display()
                );
            }
            let m = std::fs::symlink_metadata(&path)?;
            if m.file_type().is_symlink() {
                return Err(refuse(&rel, "a symbolic link (links are never followed)"));
            }
            if m.is_dir() {
                entries.push(Entry {
                    rel: rel.clone(),
                    dir: true,
                    exec: false,
                });
                stack.push(rel);
                continue;
            }
            if !m.is_file() {
                return Err(refuse(&rel, "not a regular file"));
            }
            {
                use std::os::unix::fs::MetadataExt;
                if secret_ids.contains(&(m.dev(), m.ino())) {
                    return Err(refuse(&rel, "it is the token file or the trusted key"));
                }
            }
            bytes = bytes.saturating_add(m.len());
            if bytes > MAX_BYTES {
                bail!(
                    "--home-template {}: more than {MAX_BYTES} bytes (worker.home-template)",
                    dir.display()
                );
            }
            if contains_any(&path, secrets)? {
                return Err(refuse(&rel, "it contains the job token or the trusted key"));
            }
            entries.push(Entry {
                rel,
                dir: false,
                exec: m.permissions().mode() & 0o100 != 0,
            });
        }
    }
    Ok(Template {
        root: dir.to_owned(),
        entries,
    })
}

/// Whether the file at `path` contains any of `needles` (read once, links not followed).
fn contains_any(path: &Path, needles: &[&[u8]]) -> Result<bool> {
    let needles: Vec<&[u8]> = needles.iter().copied().filter(|n| !n.is_empty()).collect();
    if needles.is_empty() {
        return Ok(false);
    }
    let mut f = File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)?;
    Ok(needles
        .iter()
        .any(|n| buf.windows(n.len()).any(|w| w == *n)))
}

/// Makes `<tmp>/home` (0700) and copies the template into it. Returns the home.
pub fn make(tmp: &Path, template: Option<&Template>) -> Result<PathBuf> {
    let home = tmp.join(HOME_DIR);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&home)
        .with_context(|| format!("{}: cannot create the generator's HOME", home.display()))?;
    let Some(t) = template else {
        return Ok(home);
    };
    for e in &t.entries {
        let dest = home.join(&e.rel);
        if e.dir {
            std::fs::DirBuilder::new().mode(0o700).create(&dest)?;
            continue;
        }
        let src = t.root.join(&e.rel);
        let mut from = File::options()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&src)
            .with_context(|| format!("--home-template: cannot read {}", src.display()))?;
        let mut to = File::options()
            .write(true)
            .create_new(true)
            .mode(if e.exec { 0o700 } else { 0o600 })
            .open(&dest)
            .with_context(|| format!("{}: cannot create", dest.display()))?;
        std::io::copy(&mut from, &mut to)?;
    }
    Ok(home)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join(".claude")).unwrap();
        std::fs::write(t.path().join(".claude/settings.json"), "{}").unwrap();
        std::fs::write(t.path().join(".aider.conf.yml"), "model: x\n").unwrap();
        t
    }

    #[test]
    fn copies_the_template_into_a_fresh_private_home() {
        let t = template();
        let checked = check(t.path(), &[b"v4.public.tok"], &[]).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let home = make(tmp.path(), Some(&checked)).unwrap();
        assert_eq!(
            std::fs::read_to_string(home.join(".claude/settings.json")).unwrap(),
            "{}"
        );
        assert!(home.join(".aider.conf.yml").is_file());
        assert_eq!(
            std::fs::metadata(&home).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }

    #[test]
    fn refuses_a_template_holding_the_token_or_a_link() {
        let t = template();
        std::fs::write(t.path().join(".codex-token"), "x v4.public.tok y").unwrap();
        let e = check(t.path(), &[b"v4.public.tok"], &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("worker.home-template") && e.contains(".codex-token"),
            "{e}"
        );
        assert!(!e.contains("v4.public.tok"), "echoes the token: {e}");

        let t = template();
        std::os::unix::fs::symlink("/etc/passwd", t.path().join("link")).unwrap();
        let e = check(t.path(), &[], &[]).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");

        let t = template();
        let key = t.path().join("trusted.pub");
        std::fs::write(&key, "k").unwrap();
        let e = check(t.path(), &[], &[key]).unwrap_err().to_string();
        assert!(e.contains("trusted key"), "{e}");
    }
}
