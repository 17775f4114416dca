//! The object store every trusted host shares: `file://` (the embedded default: "the network
//! becomes a directory"), `s3://`, `gs://`, `az://`, `memory://`, through `object_store`.
//! A small synchronous facade over its async API; object keys come only from
//! `airlock_core::store_layout`.
//!
//! Guards against: reading an unbounded object into memory or onto disk (every GET is capped
//! and counted while streaming), partial uploads being visible (single PUTs are atomic in
//! every backend; large files go through multipart, which only appears when completed), and
//! overwriting what must be written once (`put_new` uses a conditional create).
//! Does not check: what the bytes mean; callers verify signatures and digests.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use airlock_core::digest::{HashingWriter, Sha256Digest};
use anyhow::{bail, Context, Result};
use futures::StreamExt;
use object_store::path::Path as ObjPath;
use object_store::signer::Signer;
use object_store::{
    ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, WriteMultipart,
};

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

/// An opened store.
pub struct Store {
    inner: Arc<dyn ObjectStore>,
    signer: Option<Arc<dyn Signer>>,
    local_root: Option<PathBuf>,
    prefix: ObjPath,
    rt: tokio::runtime::Runtime,
    url: String,
}

impl Store {
    /// Opens a store URL (credentials for clouds come from the standard environment).
    pub fn open(url: &str) -> Result<Store> {
        let parsed = crate::config::check_store_url(url)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the I/O runtime")?;
        let (inner, signer, local_root, prefix): (
            Arc<dyn ObjectStore>,
            Option<Arc<dyn Signer>>,
            Option<PathBuf>,
            ObjPath,
        ) = match parsed.scheme() {
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
                let s3 = object_store::aws::AmazonS3Builder::from_env()
                    .with_url(url)
                    .build()
                    .with_context(|| format!("store URL {url:?}"))?;
                let s3 = Arc::new(s3);
                (s3.clone(), Some(s3), None, ObjPath::from(parsed.path()))
            }
            "gs" => {
                let gcs = object_store::gcp::GoogleCloudStorageBuilder::from_env()
                    .with_url(url)
                    .build()
                    .with_context(|| format!("store URL {url:?}"))?;
                let gcs = Arc::new(gcs);
                (gcs.clone(), Some(gcs), None, ObjPath::from(parsed.path()))
            }
            "az" | "abfs" | "abfss" => {
                let az = object_store::azure::MicrosoftAzureBuilder::from_env()
                    .with_url(url)
                    .build()
                    .with_context(|| format!("store URL {url:?}"))?;
                let az = Arc::new(az);
                (az.clone(), Some(az), None, ObjPath::from(parsed.path()))
            }
            other => bail!("store URL {url:?}: unsupported scheme {other:?}"),
        };
        Ok(Store {
            inner,
            signer,
            local_root,
            prefix,
            rt,
            url: url.to_owned(),
        })
    }

    /// Wraps an already-built store (tests: an S3 client pointed at an in-process server).
    #[allow(dead_code)] // used by the S3 tests (issue 5)
    pub fn from_parts(
        inner: Arc<dyn ObjectStore>,
        signer: Option<Arc<dyn Signer>>,
        url: &str,
    ) -> Result<Store> {
        Ok(Store {
            inner,
            signer,
            local_root: None,
            prefix: ObjPath::default(),
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
            url: url.to_owned(),
        })
    }

    /// The URL this store was opened with.
    pub fn url(&self) -> &str {
        &self.url
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

    /// Uploads a local file (multipart above 8 MiB), overwriting.
    pub fn put_file(&self, key: &str, src: &Path) -> Result<()> {
        let len = std::fs::metadata(src)
            .with_context(|| format!("{}: cannot read", src.display()))?
            .len();
        if len <= MULTIPART_THRESHOLD {
            let bytes = std::fs::read(src)?;
            return self.put_bytes(key, &bytes);
        }
        let path = self.path(key);
        self.rt.block_on(async {
            let upload = self.inner.put_multipart(&path).await?;
            let mut w = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
            let mut f = tokio::fs::File::open(src).await?;
            let mut buf = vec![0u8; PART_BYTES];
            loop {
                use tokio::io::AsyncReadExt;
                let n = f.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                w.wait_for_capacity(2).await?;
                w.write(&buf[..n]);
            }
            w.finish().await?;
            anyhow::Ok(())
        })
        .with_context(|| format!("{key}: upload failed"))
    }

    /// Writes a small object, overwriting.
    pub fn put_bytes(&self, key: &str, bytes: &[u8]) -> Result<()> {
        let path = self.path(key);
        self.rt
            .block_on(self.inner.put(&path, PutPayload::from(bytes.to_vec())))
            .with_context(|| format!("{key}: write failed"))?;
        Ok(())
    }

    /// Writes a small object only if absent. `Ok(false)` if it already exists.
    pub fn put_new(&self, key: &str, bytes: &[u8]) -> Result<bool> {
        let path = self.path(key);
        let opts = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        match self
            .rt
            .block_on(self.inner.put_opts(&path, PutPayload::from(bytes.to_vec()), opts))
        {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(e).with_context(|| format!("{key}: write failed")),
        }
    }

    /// Reads an object of at most `max` bytes; `None` if it does not exist.
    pub fn get_bytes(&self, key: &str, max: u64) -> Result<Option<Vec<u8>>> {
        let mut out = Vec::new();
        match self.get_into(key, max, &mut out)? {
            Some(_) => Ok(Some(out)),
            None => Ok(None),
        }
    }

    /// Streams an object of at most `max` bytes into `dest` (created new); `None` if absent.
    pub fn get_to_file(&self, key: &str, max: u64, dest: &Path) -> Result<Option<(Sha256Digest, u64)>> {
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
            Ok(Some(_)) => {
                file?.sync_all()?;
                Ok(Some((digest, n)))
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

    fn get_into(&self, key: &str, max: u64, out: &mut dyn Write) -> Result<Option<u64>> {
        let path = self.path(key);
        self.rt.block_on(async {
            let got = match self.inner.get(&path).await {
                Ok(g) => g,
                Err(object_store::Error::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(anyhow::Error::new(e).context(format!("{key}: read failed"))),
            };
            if got.meta.size > max {
                bail!("{key}: too large (store.too-large): limit {max} bytes, object is {}", got.meta.size);
            }
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
            Ok(Some(n))
        })
    }

    /// HEAD; `None` if absent.
    pub fn head(&self, key: &str) -> Result<Option<ObjectInfo>> {
        let path = self.path(key);
        match self.rt.block_on(self.inner.head(&path)) {
            Ok(m) => Ok(Some(ObjectInfo {
                key: key.to_owned(),
                size: m.size,
                last_modified: u64::try_from(m.last_modified.timestamp()).unwrap_or(0),
            })),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e).with_context(|| format!("{key}: head failed")),
        }
    }

    /// Lists every object under `prefix` (e.g. `ledger/`).
    pub fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let path = self.path(prefix.trim_end_matches('/'));
        let metas: Vec<_> = self
            .rt
            .block_on(self.inner.list(Some(&path)).collect::<Vec<_>>());
        let mut out = Vec::with_capacity(metas.len());
        for m in metas {
            let m = m.with_context(|| format!("{prefix}: list failed"))?;
            out.push(ObjectInfo {
                key: self.key_of(&m.location),
                size: m.size,
                last_modified: u64::try_from(m.last_modified.timestamp()).unwrap_or(0),
            });
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// Deletes an object (absent is fine).
    pub fn delete(&self, key: &str) -> Result<()> {
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
            let opts = object_store::signer::SignedUrlOptions::new().with_signed_header(
                object_store::signer::HeaderName::from_static("if-none-match"),
                object_store::signer::HeaderValue::from_static("*"),
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
