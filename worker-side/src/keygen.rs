//! `airlock-worker keygen --out DIR`: the worker's own X25519 key pair, as age writes one:
//! `DIR/worker.key` (an age identity file, 0600, created new) and `DIR/worker.pub` (its
//! `age1…` recipient, for `airlock fleet enroll --worker-pub`). The private half never
//! leaves the worker; tickets and renewed enrolments are sealed to the public half.
//!
//! Guards against: overwriting a key (both files are created new), a key readable by others
//! (0600 at creation, in a 0700 directory; [`load`] refuses a key group or others can read),
//! and a partial pair (the public file is written only after the private one).

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use airlock_core::seal::Identity;
use anyhow::{bail, Context, Result};

/// The private key's file name in the key directory.
pub const KEY_FILE: &str = "worker.key";
/// The public key's file name in the key directory.
pub const PUB_FILE: &str = "worker.pub";

/// Writes a new key pair into `dir`; returns the `age1…` recipient.
pub fn keygen(dir: &Path) -> Result<String> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("{}: cannot make it 0700", dir.display()))?;
    let id = Identity::generate()?;
    let public = id.recipient().encode();
    let key_path = dir.join(KEY_FILE);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&key_path)
        .with_context(|| {
            format!(
                "{}: cannot create (refusing to overwrite a key)",
                key_path.display()
            )
        })?;
    let body = zeroize::Zeroizing::new(format!(
        "# airlock-worker keygen: an age X25519 identity\n# public key: {public}\n{}\n",
        &*id.encode()
    ));
    f.write_all(body.as_bytes())?;
    f.sync_all()?;
    let pub_path = dir.join(PUB_FILE);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&pub_path)
        .and_then(|mut p| p.write_all(format!("{public}\n").as_bytes()))
        .with_context(|| format!("{}: cannot create", pub_path.display()))?;
    Ok(public)
}

/// Loads the identity from `dir`, refusing a key file group or others can read.
pub fn load(dir: &Path) -> Result<Identity> {
    let path = dir.join(KEY_FILE);
    let meta = std::fs::symlink_metadata(&path).with_context(|| {
        format!(
            "{}: cannot read (run `airlock-worker keygen --out {}`)",
            path.display(),
            dir.display()
        )
    })?;
    if !meta.is_file() {
        bail!("{}: not a regular file (fleet.key)", path.display());
    }
    if meta.permissions().mode() & 0o077 != 0 {
        bail!(
            "{}: readable by group or others: chmod 600 it (fleet.key)",
            path.display()
        );
    }
    let text = zeroize::Zeroizing::new(
        std::fs::read_to_string(&path)
            .with_context(|| format!("{}: cannot read", path.display()))?,
    );
    Ok(Identity::parse(&text)?)
}
