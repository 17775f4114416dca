//! The object store every trusted host shares: `file://` (the embedded default: "the network
//! becomes a directory"), `s3://`, `gs://`, `az://`, `memory://`, through `object_store`.
//! A small synchronous facade over its async API; object keys come only from
//! `airlock_core::store_layout`.
//!
//! Guards against: reading an unbounded object into memory or onto disk (every GET is capped
//! and counted while streaming), partial uploads being visible (single PUTs are atomic in
//! every backend; large files go through multipart, which only appears when completed and is
//! aborted on error), overwriting what must be written once (`put_new` uses a conditional
//! create), and handing a worker a credential (`worker_url` gives a `file://` path or a
//! presigned URL for one key and one method, expiring; `memory://` refuses).
//! Does not check: what the bytes mean; callers verify signatures and digests. A presigned PUT
//! cannot cap the size of what is written: the capped reads here are the guard.
//! Uploads above 8 MiB show a progress bar on a terminal (hidden when piped or with `-q`).

mod address;
pub mod beneath;
mod list;
mod local;
pub mod retry;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use airlock_core::digest::{HashingWriter, Sha256Digest};
use anyhow::{bail, Context, Result};
use futures::StreamExt;

pub use address::check_store_url;
pub(crate) use address::file_store_dir;
use object_store::path::Path as ObjPath;
use object_store::signer::Signer;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, WriteMultipart};

/// Objects larger than this go up as multipart uploads (memory stays at one part).
const MULTIPART_THRESHOLD: u64 = 8 * 1024 * 1024;
const PART_BYTES: usize = 8 * 1024 * 1024;

/// What a HEAD says about an object.
#[derive(Debug, Clone)]
pub struct ObjectInfo {
    /// Key relative to the store root.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// The store's own last-modified time, unix seconds (not the writer's clock).
    pub last_modified: u64,
}

/// How a worker-facing URL will be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read.
    Get,
    /// Write (may overwrite).
    Put,
    /// Write once: the store refuses a second write where it can.
    PutNew,
}

/// What opening a URL yields: the store, its signer (clouds), its directory (`file://`), and
/// the key prefix inside the bucket.
type Opened = (
    Arc<dyn ObjectStore>,
    Option<Arc<dyn Signer>>,
    Option<PathBuf>,
    ObjPath,
);

/// An opened store.
pub struct Store {
    inner: Arc<dyn ObjectStore>,
    signer: Option<Arc<dyn Signer>>,
    local_root: Option<PathBuf>,
    /// The `file://` root opened once: every local operation starts from it (`beneath.rs`).
    local: Option<beneath::Root>,
    prefix: ObjPath,
    rt: tokio::runtime::Runtime,
    url: String,
    quiet: bool,
}

/// `object_store`'s HTTP client (reqwest) is built with rustls and no crypto provider of its
/// own (the workspace's Cargo.toml says why: ring, not aws-lc): installs rustls's ring provider
/// for the process before the first cloud store is built. A second call finds it installed and
/// does nothing. `file://` and `memory://` stores make no connection and never need it.
fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl Store {
    /// Opens a store URL (credentials for clouds come from the standard environment).
    pub fn open(url: &str) -> Result<Store> {
        let parsed = check_store_url(url)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the I/O runtime")?;
        let (inner, signer, local_root, prefix): Opened = match parsed.scheme() {
            "file" => {
                let root = airlock_core::fileurl::file_url_to_path(url.trim_end_matches('/'))
                    .with_context(|| format!("store URL {url:?}"))?;
                std::fs::create_dir_all(&root)
                    .with_context(|| format!("{}: cannot create store", root.display()))?;
                let fs = object_store::local::LocalFileSystem::new_with_prefix(&root)
                    .with_context(|| format!("{}: cannot open store", root.display()))?;
                (Arc::new(fs), None, Some(root), ObjPath::default())
            }
            "memory" => (
                Arc::new(object_store::memory::InMemory::new()),
                None,
                None,
                ObjPath::default(),
            ),
            "s3" | "s3a" => {
                install_tls_provider();
                use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey as K};
                use object_store::ClientConfigKey;
                let mut b = AmazonS3Builder::from_env()
                    .with_url(url)
                    .with_retry(retry::config());
                // Plain HTTP with static keys makes no TLS connection: no root certificates needed.
                let plain_http = b
                    .get_config_value(&K::Endpoint)
                    .is_some_and(|e| e.starts_with("http://"));
                let static_keys = b.get_config_value(&K::AccessKeyId).is_some()
                    && b.get_config_value(&K::SecretAccessKey).is_some();
                if plain_http && static_keys {
                    b = b.with_config(K::Client(ClientConfigKey::NoSystemCertificates), "true");
                }
                let s3 = b.build().with_context(|| format!("store URL {url:?}"))?;
                let s3 = Arc::new(s3);
                (s3.clone(), Some(s3), None, ObjPath::from(parsed.path()))
            }
            "gs" => {
                install_tls_provider();
                let gcs = object_store::gcp::GoogleCloudStorageBuilder::from_env()
                    .with_url(url)
                    .with_retry(retry::config())
                    .build()
                    .with_context(|| format!("store URL {url:?}"))?;
                let gcs = Arc::new(gcs);
                (gcs.clone(), Some(gcs), None, ObjPath::from(parsed.path()))
            }
            "az" | "abfs" | "abfss" => {
                install_tls_provider();
                let az = object_store::azure::MicrosoftAzureBuilder::from_env()
                    .with_url(url)
                    .with_retry(retry::config())
                    .build()
                    .with_context(|| format!("store URL {url:?}"))?;
                let az = Arc::new(az);
                (az.clone(), Some(az), None, ObjPath::from(parsed.path()))
            }
            other => bail!("store URL {url:?}: unsupported scheme {other:?}"),
        };
        let local = match &local_root {
            Some(root) => Some(
                beneath::Root::open(root)
                    .with_context(|| format!("{}: cannot open store", root.display()))?,
            ),
            None => None,
        };
        Ok(Store {
            inner,
            signer,
            local_root,
            local,
            prefix,
            rt,
            url: url.to_owned(),
            quiet: false,
        })
    }

    /// Wraps an already-built store (tests: an S3 client pointed at an in-process server).
    pub fn from_parts(
        inner: Arc<dyn ObjectStore>,
        signer: Option<Arc<dyn Signer>>,
        url: &str,
    ) -> Result<Store> {
        Ok(Store {
            inner,
            signer,
            local_root: None,
            local: None,
            prefix: ObjPath::default(),
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
            url: url.to_owned(),
            quiet: false,
        })
    }

    /// The URL this store was opened with.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The directory behind a `file://` store; `None` for remote and in-memory stores.
    pub fn local_root(&self) -> Option<&Path> {
        self.local_root.as_deref()
    }

    /// Hides upload progress bars (they are already hidden when stderr is not a terminal).
    pub fn set_quiet(&mut self, quiet: bool) {
        self.quiet = quiet;
    }

    /// The opened root of a `file://` store: every operation on it goes through `local.rs` and
    /// `beneath.rs`, never through `object_store` (whose local store follows links).
    fn local(&self) -> Option<&beneath::Root> {
        self.local.as_ref()
    }

    fn path(&self, key: &str) -> ObjPath {
        if self.prefix.as_ref().is_empty() {
            ObjPath::from(key)
        } else {
            ObjPath::from(format!("{}/{key}", self.prefix))
        }
    }

    fn key_of(&self, p: &ObjPath) -> String {
        let s = p.as_ref();
        let pre = self.prefix.as_ref();
        if pre.is_empty() {
            s.to_owned()
        } else {
            s.strip_prefix(pre)
                .map(|r| r.trim_start_matches('/'))
                .unwrap_or(s)
                .to_owned()
        }
    }

    /// Uploads a local file, overwriting. Above 8 MiB it streams as a multipart upload (at
    /// most a few parts in memory, whatever the size), with a progress bar on a TTY; the
    /// object appears only when the upload completes, and a failed upload is aborted.
    pub fn put_file(&self, key: &str, src: &Path) -> Result<()> {
        let len = std::fs::metadata(src)
            .with_context(|| format!("{}: cannot read", src.display()))?
            .len();
        if len <= MULTIPART_THRESHOLD {
            let bytes = std::fs::read(src)?;
            return self.put_bytes(key, &bytes);
        }
        let path = self.path(key);
        // `-q` (log level error or off) hides the bar too, without every caller passing it.
        let quiet = self.quiet
            || tracing::level_filters::LevelFilter::current()
                < tracing::level_filters::LevelFilter::WARN;
        let bar = crate::output::progress(len, "upload", quiet);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg:>8} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        let result = self.rt.block_on(async {
            use tokio::io::AsyncReadExt;
            let upload = self.inner.put_multipart(&path).await?;
            let mut w = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
            let streamed: Result<()> = async {
                let mut f = tokio::fs::File::open(src).await?;
                let mut buf = vec![0u8; PART_BYTES];
                loop {
                    let n = f.read(&mut buf).await?;
                    if n == 0 {
                        return Ok(());
                    }
                    w.wait_for_capacity(2).await?;
                    w.write(&buf[..n]);
                    bar.inc(n as u64);
                }
            }
            .await;
            match streamed {
                Ok(()) => {
                    w.finish().await?;
                    anyhow::Ok(())
                }
                Err(e) => {
                    // Leave no parts behind (a lifecycle rule is the second net).
                    let _ = w.abort().await;
                    Err(e)
                }
            }
        });
        bar.finish_and_clear();
        result.with_context(|| format!("{key}: upload failed"))
    }

    /// Writes a small object, overwriting.
    pub fn put_bytes(&self, key: &str, bytes: &[u8]) -> Result<()> {
        if let Some(root) = self.local() {
            return local::put(root, key, bytes, false).map(drop);
        }
        let path = self.path(key);
        self.rt
            .block_on(self.inner.put(&path, PutPayload::from(bytes.to_vec())))
            .with_context(|| format!("{key}: write failed"))?;
        Ok(())
    }

    /// Writes a small object that every reader verifies and can do without (the ledger's tail
    /// hint): on a `file://` store rewritten in place, which a concurrent reader may see half
    /// done (see `local::overwrite`); elsewhere exactly [`Store::put_bytes`].
    pub fn put_hint(&self, key: &str, bytes: &[u8]) -> Result<()> {
        match self.local() {
            Some(root) => local::overwrite(root, key, bytes),
            None => self.put_bytes(key, bytes),
        }
    }

    /// Whether [`Store::put_new`] is atomic on this store by construction: a local directory
    /// (a hard link, which never replaces a file) or memory (one lock). Cloud stores' creates
    /// are atomic on AWS S3, GCS and Azure, but an S3-compatible server may check then write
    /// (`docs/LEDGER.md`), so this is `false` for every remote store.
    pub fn create_is_atomic(&self) -> bool {
        ["file:", "memory:"]
            .iter()
            .any(|scheme| self.url.starts_with(scheme))
    }

    /// Writes a small object only if absent. `Ok(false)` if it already exists with other
    /// bytes; a lost answer is settled by reading back ([`retry::create`]).
    pub fn put_new(&self, key: &str, bytes: &[u8]) -> Result<bool> {
        if let Some(root) = self.local() {
            return local::put(root, key, bytes, true);
        }
        let path = self.path(key);
        let opts = || PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let put = || {
            let payload = PutPayload::from(bytes.to_vec());
            self.rt
                .block_on(self.inner.put_opts(&path, payload, opts()))
                .map(drop)
        };
        // Bytes beyond ours mean another object: read one more than we wrote.
        let read = || match self.get_bytes(key, bytes.len() as u64 + 1) {
            Err(e) if format!("{e:#}").contains("store.too-large") => {
                Ok(Some(vec![0; bytes.len() + 1]))
            }
            r => r,
        };
        retry::create(key, bytes, put, read)
    }

    /// Reads an object of at most `max` bytes; `None` if it does not exist.
    pub fn get_bytes(&self, key: &str, max: u64) -> Result<Option<Vec<u8>>> {
        Ok(self.get_bytes_info(key, max)?.map(|(bytes, _)| bytes))
    }

    /// [`Store::get_bytes`], with what the store said about the object it served (size and
    /// last-modified of exactly the version read, with no second request).
    pub fn get_bytes_info(&self, key: &str, max: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        let mut out = Vec::new();
        match self.get_into(key, max, &mut out)? {
            Some(info) => Ok(Some((out, info))),
            None => Ok(None),
        }
    }

    /// Streams an object of at most `max` bytes into `dest` (created new); `None` if absent.
    /// The file is not synced to disk: every caller either re-verifies what it wrote before
    /// trusting it (fetch hashes its cached artifact on every run) or deletes it right after
    /// (scratch copies), so a copy torn by a crash is re-downloaded, never used.
    pub fn get_to_file(
        &self,
        key: &str,
        max: u64,
        dest: &Path,
    ) -> Result<Option<(Sha256Digest, u64)>> {
        Ok(self
            .get_to_file_info(key, max, dest)?
            .map(|(digest, n, _)| (digest, n)))
    }

    /// [`Store::get_to_file`], with what the store said about the object it served.
    pub fn get_to_file_info(
        &self,
        key: &str,
        max: u64,
        dest: &Path,
    ) -> Result<Option<(Sha256Digest, u64, ObjectInfo)>> {
        let file = std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(dest)
            .with_context(|| format!("{}: cannot create", dest.display()))?;
        let mut w = HashingWriter::new(std::io::BufWriter::new(file));
        let got = self.get_into(key, max, &mut w);
        let (buf, digest, n) = w.finish();
        let file = buf
            .into_inner()
            .map_err(|e| anyhow::anyhow!("{}: write failed: {}", dest.display(), e.error()));
        match got {
            Ok(Some(info)) => {
                drop(file?);
                Ok(Some((digest, n, info)))
            }
            Ok(None) => {
                let _ = std::fs::remove_file(dest);
                Ok(None)
            }
            Err(e) => {
                let _ = std::fs::remove_file(dest);
                Err(e)
            }
        }
    }

    fn get_into(&self, key: &str, max: u64, out: &mut dyn Write) -> Result<Option<ObjectInfo>> {
        if let Some(root) = self.local() {
            return local::get_into(root, key, max, out);
        }
        let path = self.path(key);
        self.rt.block_on(async {
            let got = match self.inner.get(&path).await {
                Ok(g) => g,
                Err(object_store::Error::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(anyhow::Error::new(e).context(format!("{key}: read failed"))),
            };
            if got.meta.size > max {
                bail!(
                    "{key}: too large (store.too-large): limit {max} bytes, object is {}",
                    got.meta.size
                );
            }
            let info = ObjectInfo {
                key: key.to_owned(),
                size: got.meta.size,
                last_modified: self.store_time(got.meta.last_modified.timestamp()),
            };
            let mut stream = got.into_stream();
            let mut n = 0u64;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.with_context(|| format!("{key}: read failed"))?;
                n += chunk.len() as u64;
                if n > max {
                    bail!("{key}: too large (store.too-large): limit {max} bytes, read {n}");
                }
                out.write_all(&chunk)?;
            }
            Ok(Some(info))
        })
    }

    /// The store's own time for an object: `last_modified` (a `file://` store answers with
    /// the file's ctime instead, in `local.rs`: the worker writes there directly and can set
    /// mtime, but not ctime; see FORMATS.md, "Store layout").
    fn store_time(&self, last_modified: i64) -> u64 {
        u64::try_from(last_modified).unwrap_or(0)
    }

    /// HEAD; `None` if absent. On a `file://` store a link or a non-file at `key` is refused.
    pub fn head(&self, key: &str) -> Result<Option<ObjectInfo>> {
        if let Some(root) = self.local() {
            return Ok(root.stat_file(key)?.map(|st| ObjectInfo {
                key: key.to_owned(),
                size: st.st_size.max(0) as u64,
                last_modified: beneath::ctime(&st),
            }));
        }
        let path = self.path(key);
        match self.rt.block_on(self.inner.head(&path)) {
            Ok(m) => Ok(Some(ObjectInfo {
                key: key.to_owned(),
                size: m.size,
                last_modified: self.store_time(m.last_modified.timestamp()),
            })),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e).with_context(|| format!("{key}: head failed")),
        }
    }

    /// Deletes an object (absent is fine). On a `file://` store only a regular file beneath the
    /// root is removed: a link, or a path through one, is refused and nothing is touched.
    pub fn delete(&self, key: &str) -> Result<()> {
        if let Some(root) = self.local() {
            return root.delete(key).map_err(anyhow::Error::new);
        }
        let path = self.path(key);
        match self.rt.block_on(self.inner.delete(&path)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e).with_context(|| format!("{key}: delete failed")),
        }
    }

    /// A URL a worker can use for exactly this object and method: a `file://` path for local
    /// stores, a presigned URL (expiring after `ttl`) for clouds. Never a credential.
    pub fn worker_url(&self, key: &str, access: Access, ttl: Duration) -> Result<String> {
        if let Some(root) = &self.local_root {
            return airlock_core::fileurl::path_to_file_url(&root.join(key))
                .map_err(|e| anyhow::anyhow!("{key}: {e}"));
        }
        let Some(signer) = &self.signer else {
            bail!("store {}: cannot hand out worker URLs (memory:// is for tests of the trusted side only)", self.url);
        };
        let path = self.path(key);
        let method = match access {
            Access::Get => object_store::signer::Method::GET,
            Access::Put | Access::PutNew => object_store::signer::Method::PUT,
        };
        let url = if access == Access::PutNew {
            // The store's create-only condition, signed so the worker cannot leave it out:
            // GCS's XML API takes `x-goog-if-generation-match: 0`, S3 `if-none-match: *`.
            let (name, value) = if self.url.starts_with("gs:") {
                ("x-goog-if-generation-match", "0")
            } else {
                ("if-none-match", "*")
            };
            let opts = object_store::signer::SignedUrlOptions::new().with_signed_header(
                object_store::signer::HeaderName::from_static(name),
                object_store::signer::HeaderValue::from_static(value),
            );
            match self
                .rt
                .block_on(signer.signed_url_opts(method.clone(), &path, ttl, &opts))
            {
                Ok(u) => u,
                // A store that cannot sign the condition still gets a plain PUT URL; the
                // fetcher's first-artifact-wins rule and digest binding are the guard.
                Err(object_store::Error::NotSupported { .. }) => {
                    self.rt.block_on(signer.signed_url(method, &path, ttl))?
                }
                Err(e) => return Err(e).with_context(|| format!("{key}: cannot presign")),
            }
        } else {
            self.rt
                .block_on(signer.signed_url(method, &path, ttl))
                .with_context(|| format!("{key}: cannot presign"))?
        };
        Ok(url.to_string())
    }
}

#[cfg(test)]
mod tests;
