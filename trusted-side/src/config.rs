//! `.airlock/`: the trusted side's config and keypair, and `airlock init`.
//!
//! Guards against: a trusted private key readable by others (refused on load), a half-made
//! home directory (built beside the target and renamed into place), and malformed store URLs
//! (checked at init, so later commands fail early with one clear line).

use std::path::{Path, PathBuf};

use airlock_core::keys::{self, PublicKey, SigningKey};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::store::{check_store_url, file_store_dir};

/// File names inside the home directory.
pub const CONFIG_FILE: &str = "config.toml";
/// The trusted private key (PKCS#8 PEM, mode 0600).
pub const TRUSTED_KEY_FILE: &str = "trusted.key";
/// The trusted public key (SPKI PEM): give this to workers as `--trusted-pub`.
pub const TRUSTED_PUB_FILE: &str = "trusted.pub";

/// `config.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Object store URL (checked by `store::check_store_url`).
    pub store: String,
    /// How to mint each job's scoped model key (`[model_key]`); absent: no key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_key: Option<crate::model_key::ModelKeyConfig>,
}

/// A loaded home directory.
pub struct Home {
    /// Where it is.
    pub dir: PathBuf,
    /// Its config.
    pub config: Config,
}

impl Home {
    /// Opens the home's store.
    pub fn open_store(&self) -> Result<crate::store::Store> {
        crate::store::Store::open(&self.config.store)
    }

    /// Loads `config.toml` from `dir`.
    pub fn load(dir: &Path) -> Result<Home> {
        let path = dir.join(CONFIG_FILE);
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "{}: cannot read (run `airlock init` first, or pass --home)",
                path.display()
            )
        })?;
        let config: Config =
            toml::from_str(&text).with_context(|| format!("{}: malformed", path.display()))?;
        check_store_url(&config.store).with_context(|| format!("{}: store", path.display()))?;
        if let Some(mk) = &config.model_key {
            mk.check()
                .with_context(|| format!("{}: [model_key]", path.display()))?;
        }
        spread_job_dirs(dir);
        Ok(Home {
            dir: dir.to_owned(),
            config,
        })
    }

    /// Loads the trusted signing key (refused if group/other-readable).
    pub fn signing_key(&self) -> Result<SigningKey> {
        let path = self.dir.join(TRUSTED_KEY_FILE);
        keys::load_private_key(&path).with_context(|| "trusted key".to_string())
    }

    /// Loads the trusted public key.
    pub fn public_key(&self) -> Result<PublicKey> {
        let path = self.dir.join(TRUSTED_PUB_FILE);
        keys::load_public_key(&path).with_context(|| "trusted public key".to_string())
    }
}

/// What every command is given besides its own options.
#[derive(Debug, Clone)]
pub struct GlobalOptions {
    /// Directory holding config.toml and the trusted keypair.
    pub home: PathBuf,
    /// Logging level asked for (0 default, 1 info, 2+ debug).
    pub verbose: u8,
    /// Only errors on stderr; no progress bars.
    pub quiet: bool,
}

/// If `home` lies inside a git work tree, adds it (as `/<path from the top>/`) to that
/// repository's `info/exclude`, so the home is never committed by `git add -A`. Returns the
/// exclude file and the pattern, also when the pattern was already there; `None` outside a
/// work tree.
pub fn exclude_from_git(home: &Path) -> Result<Option<(PathBuf, String)>> {
    let Some(parent) = home.parent() else {
        return Ok(None);
    };
    let out = crate::git::Git::new(parent)
        .command()
        .args(["rev-parse", "--is-inside-work-tree", "--show-toplevel"])
        .args(["--git-path", "info/exclude"])
        .stderr(std::process::Stdio::null())
        .output();
    let out = match out {
        Ok(o) if o.status.success() => o,
        // Not a repository, or no git: nothing to keep the home out of.
        _ => return Ok(None),
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let (Some("true"), Some(top), Some(exclude)) = (lines.next(), lines.next(), lines.next())
    else {
        return Ok(None);
    };
    let top = std::fs::canonicalize(top).with_context(|| format!("{top}: cannot resolve"))?;
    let real_home = std::fs::canonicalize(home)
        .with_context(|| format!("{}: cannot resolve", home.display()))?;
    let Ok(rel) = real_home.strip_prefix(&top) else {
        return Ok(None);
    };
    // Git-path answers relative to the directory git ran in.
    let exclude = parent.join(exclude);
    // Glob characters in the name are escaped so the pattern names exactly this directory.
    let mut pattern = String::from("/");
    for c in rel.to_string_lossy().chars() {
        if matches!(c, '*' | '?' | '[' | '\\' | '!' | '#') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('/');
    let existing = match std::fs::read_to_string(&exclude) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("{}: cannot read", exclude.display())),
    };
    if !existing.lines().any(|l| l.trim_end() == pattern) {
        if let Some(dir) = exclude.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("{}: cannot create", dir.display()))?;
        }
        let mut text = existing;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("# the airlock home (trusted key, ledger, store): never commit it\n");
        text.push_str(&pattern);
        text.push('\n');
        std::fs::write(&exclude, text)
            .with_context(|| format!("{}: cannot write", exclude.display()))?;
    }
    Ok(Some((exclude, pattern)))
}

/// A home directory made by [`create_home`].
pub struct Created {
    /// Absolute path.
    pub dir: PathBuf,
    /// Store URL.
    pub store: String,
    /// Key id of the new trusted key.
    pub key_id: String,
}

/// Creates a home directory with config and a fresh trusted keypair (no output).
pub fn create_home(home: &Path, store_url: Option<&str>) -> Result<Created> {
    if home.join(CONFIG_FILE).exists() || home.join(TRUSTED_KEY_FILE).exists() {
        bail!(
            "{}: already initialised (config or key exists); refusing to overwrite a trusted key",
            home.display()
        );
    }
    let abs_home = absolute(home)?;
    let store = match store_url {
        Some(s) => s.to_owned(),
        None => {
            let dir = abs_home.join("store");
            url::Url::from_directory_path(&dir)
                .map_err(|()| anyhow::anyhow!("{}: not an absolute path", dir.display()))?
                .to_string()
        }
    };
    check_store_url(&store)?;

    // Build beside the target, then rename into place: no half-made home on any error.
    let parent = abs_home
        .parent()
        .context("home directory has no parent")?
        .to_owned();
    std::fs::create_dir_all(&parent)
        .with_context(|| format!("{}: cannot create", parent.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".airlock-init-")
        .tempdir_in(&parent)
        .with_context(|| format!("{}: cannot create a staging directory", parent.display()))?;
    let key = SigningKey::generate();
    keys::write_private_key(&staging.path().join(TRUSTED_KEY_FILE), &key)?;
    keys::write_public_key(&staging.path().join(TRUSTED_PUB_FILE), &key.public())?;
    let config = Config {
        store: store.clone(),
        model_key: None,
    };
    let text = format!(
        "# airlock configuration (written by `airlock init`)\n{}",
        toml::to_string(&config)?
    );
    std::fs::write(staging.path().join(CONFIG_FILE), text)?;
    set_mode(staging.path(), 0o700)?;
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, &abs_home) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(e).with_context(|| format!("{}: cannot create", abs_home.display()));
    }
    if store.starts_with("file://") {
        let dir = file_store_dir(&store)?;
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("{}: cannot create store", dir.display()))?;
    }

    Ok(Created {
        dir: abs_home,
        store,
        key_id: key.public().key_id(),
    })
}

/// Makes a path absolute against the current directory (without resolving links).
pub fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("{}: cannot make absolute", p.display()))
}

fn set_mode(p: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("{}: cannot set mode", p.display()))
}

/// Makes `<home>/jobs` and marks it so each job's directory lands in an ext4 block group of
/// its own ([`airlock_core::spread`]): a gate creates and removes a job's unpacked files there,
/// and in one shared group every later gate's files cost a scan past all of them. Best
/// effort: a home it cannot write is left as it is.
fn spread_job_dirs(home: &Path) {
    let jobs = home.join("jobs");
    let made = match std::fs::create_dir(&jobs) {
        Ok(()) => true,
        Err(e) => e.kind() == std::io::ErrorKind::AlreadyExists,
    };
    if made {
        if let Err(e) = airlock_core::spread::spread_children(&jobs) {
            tracing::debug!("{}: top-directory flag not set: {e}", jobs.display());
        }
    }
}

/// The local directory for one job's files on this host (`<home>/jobs/<job>`).
pub fn job_dir(home: &std::path::Path, job: &airlock_core::jobid::JobId) -> std::path::PathBuf {
    home.join("jobs").join(job.as_str())
}
