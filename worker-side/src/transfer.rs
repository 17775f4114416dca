//! Moving bytes in and out of the worker: the bundle and its envelope in (GET), checkpoint and
//! artifact out (PUT), to the URLs in the token and nowhere else.
//!
//! Guards against: oversized downloads (a cap on every GET, enforced while streaming, never by
//! trusting a length header), partially written drops (write to a temp name, then rename; the
//! final artifact is write-once via a no-replace link), and URLs not taken from the verified
//! token (callers pass only `Verified<JobClaims>` URLs).
//! Does not check: digests or signatures (the caller does, right after).

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use airlock_core::digest::{HashingWriter, Sha256Digest};
use airlock_core::fileurl::file_url_to_path;
use airlock_core::limits::{LimitError, LimitedReader};
use anyhow::{bail, Context, Result};

/// Opens a GET source, capped at `max_bytes`.
fn open_get(url: &str, what: &'static str, max_bytes: u64) -> Result<Box<dyn Read>> {
    if url.starts_with("file://") {
        let path = file_url_to_path(url).with_context(|| format!("{what}: bad URL"))?;
        let f = File::open(&path).with_context(|| format!("{what}: cannot read from the store"))?;
        Ok(Box::new(LimitedReader::new(f, what, max_bytes)))
    } else {
        bail!(
            "{what}: only file:// URLs are supported by this build (https comes with the S3 store)"
        )
    }
}

fn limit_context(e: std::io::Error, what: &str) -> anyhow::Error {
    match LimitError::from_io(&e) {
        Some(l) => anyhow::anyhow!("{what}: {l}"),
        None => anyhow::Error::new(e).context(format!("{what}: read failed")),
    }
}

/// Streams a GET into `dest` (created new), returning its digest and size.
pub fn get_to_file(
    url: &str,
    what: &'static str,
    max_bytes: u64,
    dest: &Path,
) -> Result<(Sha256Digest, u64)> {
    let mut src = open_get(url, what, max_bytes)?;
    let file = File::options()
        .write(true)
        .create_new(true)
        .open(dest)
        .with_context(|| format!("{}: cannot create", dest.display()))?;
    let mut out = HashingWriter::new(std::io::BufWriter::new(file));
    std::io::copy(&mut src, &mut out).map_err(|e| limit_context(e, what))?;
    let (buf, digest, n) = out.finish();
    buf.into_inner()
        .map_err(|e| anyhow::anyhow!("{what}: write failed: {}", e.error()))?
        .sync_all()?;
    Ok((digest, n))
}

/// GETs a small object into memory (at most `max_bytes`).
pub fn get_bytes(url: &str, what: &'static str, max_bytes: u64) -> Result<Vec<u8>> {
    let mut src = open_get(url, what, max_bytes)?;
    let mut out = Vec::new();
    src.read_to_end(&mut out)
        .map_err(|e| limit_context(e, what))?;
    Ok(out)
}

/// How a drop object may be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overwrite {
    /// Checkpoints: replace what is there.
    Replace,
    /// The final artifact and its envelope: refuse if the object exists.
    Never,
}

/// PUTs `bytes` to `url`.
pub fn put_bytes(url: &str, what: &'static str, bytes: &[u8], mode: Overwrite) -> Result<()> {
    if !url.starts_with("file://") {
        bail!(
            "{what}: only file:// URLs are supported by this build (https comes with the S3 store)"
        );
    }
    let dest = file_url_to_path(url).with_context(|| format!("{what}: bad URL"))?;
    let dir = dest
        .parent()
        .with_context(|| format!("{what}: URL has no directory"))?;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("{what}: cannot create drop directory"))?;
    let mut tmp = tempfile_in(dir, what)?;
    tmp.1.write_all(bytes)?;
    tmp.1.sync_all()?;
    let result = match mode {
        Overwrite::Replace => std::fs::rename(&tmp.0, &dest).map_err(anyhow::Error::from),
        Overwrite::Never => std::fs::hard_link(&tmp.0, &dest).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                anyhow::anyhow!("{what}: already written (drop objects are write-once)")
            } else {
                anyhow::Error::from(e)
            }
        }),
    };
    let _ = std::fs::remove_file(&tmp.0);
    result.with_context(|| format!("{what}: cannot write to the store"))
}

/// PUTs a file's content to `url` (streams it for file:// stores).
pub fn put_file(url: &str, what: &'static str, src: &Path, mode: Overwrite) -> Result<()> {
    // Artifacts are capped by the job's limits (tens of MiB at most): reading them whole
    // keeps one code path for both transports.
    let bytes = std::fs::read(src).with_context(|| format!("{}: cannot read", src.display()))?;
    put_bytes(url, what, &bytes, mode)
}

fn tempfile_in(dir: &Path, what: &str) -> Result<(std::path::PathBuf, File)> {
    use rand_core::RngCore;
    let mut r = [0u8; 8];
    rand_core::OsRng
        .try_fill_bytes(&mut r)
        .map_err(|e| anyhow::anyhow!("no OS randomness: {e}"))?;
    let path = dir.join(format!(".{}.tmp", hex::encode(r)));
    let f = File::options()
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("{what}: cannot write to the store"))?;
    Ok((path, f))
}
