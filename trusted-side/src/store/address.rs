//! Store URLs as written in a config or on a command line, checked before any store opens.
//!
//! Guards against: a store URL that names no bucket, an unsupported scheme, or a `file://`
//! URL whose `.`/`..` components the URL parser would fold away (every later command reads
//! the raw text and refuses it, so `init` refuses it first: `fileurl.dot`).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

/// Checks a store URL's shape: scheme `file`, `s3`, `gs`, `az`, `abfs` or `memory`, with an
/// absolute path for `file://` and a bucket for the clouds.
pub fn check_store_url(raw: &str) -> Result<url::Url> {
    let parsed = url::Url::parse(raw).map_err(|e| {
        anyhow::anyhow!(
            "store URL {raw:?} is malformed ({e}): expected file:///abs/dir, s3://bucket/prefix, gs://bucket, az://container or memory://"
        )
    })?;
    match parsed.scheme() {
        "file" => {
            if parsed.path().len() <= 1 {
                bail!("store URL {raw:?}: file:// needs an absolute directory");
            }
            // The raw text, not `parsed`: the URL parser folds `a/../x` into `x`, while every
            // later command reads the raw text and refuses it (`fileurl.dot`).
            file_store_dir(raw)?;
        }
        "s3" | "s3a" | "gs" | "az" | "abfs" | "abfss" => {
            if parsed.host_str().is_none_or(str::is_empty) {
                bail!("store URL {raw:?}: no bucket or container");
            }
        }
        "memory" => {}
        other => {
            bail!("store URL {raw:?}: unsupported scheme {other:?} (file, s3, gs, az, memory)")
        }
    }
    Ok(parsed)
}

/// The directory of a `file://` store URL, decoded as the store itself decodes it.
pub(crate) fn file_store_dir(raw: &str) -> Result<PathBuf> {
    airlock_core::fileurl::file_url_to_path(raw.trim_end_matches('/')).with_context(|| {
        format!("store URL {raw:?}: use file:///abs/dir, with no host and no . or .. component")
    })
}
