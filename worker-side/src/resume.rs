//! Resuming a re-dispatched job: the token's `resume` claim names a checkpoint patch of the
//! job it replaces, which the trusted side gated and copied into this job's own inbox. It is
//! applied to the freshly unpacked workdir before the generator starts, so the generator goes
//! on from there; the final diff is still taken against the packed revision.
//!
//! Guards against: other bytes than the gated ones (the SHA-256 pinned in the signed token,
//! with its size cap), a patch that reaches outside the workdir or through a link (the strict
//! parser's path rules, then every existing component checked not to be a link and every
//! target to be a regular file, opened without following links), and a patch that applies
//! anywhere but where it says (the shared exact applier: no offsets, no fuzz). Any refusal
//! stops the job before the generator runs (rule `resume.*`).

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use airlock_core::diff::{apply_file, parse_patch, DiffLimits, FileMode};
use airlock_core::token::JobClaims;
use anyhow::{bail, Context, Result};

/// Applies the token's resume patch to `work`; returns the files it changed (0: no claim).
pub fn apply(
    claims: &JobClaims,
    run_dir: &Path,
    work: &Path,
    owner: Option<(u32, u32)>,
) -> Result<usize> {
    let Some(r) = &claims.resume else {
        return Ok(0);
    };
    let path = run_dir.join("resume.diff");
    let (digest, _) = crate::transfer::get_to_file(&r.url, "resume patch", r.max_bytes, &path)?;
    r.sha256
        .expect_eq("resume.diff (token)", digest)
        .context("resume refused (resume.digest): not the checkpoint the trusted side gated")?;
    let bytes = std::fs::read(&path)?;
    std::fs::remove_file(&path)?;
    let patch = parse_patch(&bytes, &DiffLimits::default())
        .map_err(|e| anyhow::anyhow!("resume refused (resume.parse): {e}"))?;
    for fp in &patch.files {
        let target = checked_target(work, &fp.path, owner)?;
        let old = match std::fs::symlink_metadata(&target) {
            Ok(m) if m.is_file() => Some(read_nofollow(&target)?),
            Ok(_) => bail!(
                "resume refused (resume.not-file): {} is not a regular file",
                fp.path
            ),
            Err(_) => None,
        };
        let new = apply_file(old.as_deref(), fp)
            .map_err(|e| anyhow::anyhow!("resume refused (resume.apply): {e}"))?;
        match new {
            None => std::fs::remove_file(&target)
                .with_context(|| format!("resume: {}: cannot remove", fp.path))?,
            Some(content) => {
                let exec = fp.new_mode == Some(FileMode::Executable)
                    || (fp.new_mode.is_none() && fp.old_mode == Some(FileMode::Executable));
                write_file(&target, &content, exec, owner)
                    .with_context(|| format!("resume: {}: cannot write", fp.path))?;
            }
        }
    }
    tracing::info!(from = %r.from_job, files = patch.files.len(), "resumed from a checkpoint");
    Ok(patch.files.len())
}

/// `work/rel`, after checking that no existing component below `work` is a link or a
/// non-directory; missing parents are created (owned like the workdir).
fn checked_target(work: &Path, rel: &str, owner: Option<(u32, u32)>) -> Result<PathBuf> {
    let mut dir = work.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    let (name, parents) = parts.split_last().context("empty path")?;
    for p in parents {
        dir.push(p);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => bail!("resume refused (resume.link): {rel}: {p} is a link or not a directory"),
            Err(_) => {
                std::fs::create_dir(&dir)?;
                if let Some((u, g)) = owner {
                    std::os::unix::fs::lchown(&dir, Some(u), Some(g))?;
                }
            }
        }
    }
    Ok(dir.join(name))
}

fn read_nofollow(path: &Path) -> Result<Vec<u8>> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("{}: cannot open", path.display()))?;
    let mut buf = Vec::new();
    std::io::Read::read_to_end(&mut f, &mut buf)?;
    Ok(buf)
}

/// Writes beside the target and renames over it (a link put there meanwhile is replaced,
/// never followed).
fn write_file(path: &Path, content: &[u8], exec: bool, owner: Option<(u32, u32)>) -> Result<()> {
    let tmp = path.with_extension("airlock-resume.tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(content)?;
    f.set_permissions(std::fs::Permissions::from_mode(if exec {
        0o755
    } else {
        0o644
    }))?;
    if let Some((u, g)) = owner {
        std::os::unix::fs::fchown(&f, Some(u), Some(g))?;
    }
    drop(f);
    std::fs::rename(&tmp, path)?;
    Ok(())
}
