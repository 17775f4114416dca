//! Moving bytes in and out of the worker: the bundle and its envelope in (GET), checkpoint and
//! artifact out (PUT), to the URLs in the token and nowhere else.
//!
//! Guards against: oversized downloads (a cap on every GET, enforced while streaming, never by
//! trusting a length header), partially written drops (write to a temp name, sync, then
//! rename; the final artifact is write-once via a no-replace link), a reader (or a `kill -9`)
//! catching an object beside the envelope of another version of it (for `file://` stores
//! [`drop_pair`] stages both before putting either in place, object first, envelope last),
//! and URLs not taken from the verified token (callers pass only `Verified<JobClaims>` URLs).
//! Uploads stream from disk: memory does not grow with the artifact.
//! Does not check: digests or signatures (the caller does, right after).

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use airlock_core::digest::{HashingWriter, Sha256Digest};
use airlock_core::fileurl::file_url_to_path;
use airlock_core::limits::{LimitError, LimitedReader};
use anyhow::{bail, Context, Result};

/// Attempts per request (the first plus retries) on 5xx, timeouts and connection errors.
const ATTEMPTS: u32 = 5;
/// First backoff; doubles each retry (200 ms, 400 ms, 800 ms, 1.6 s).
const BACKOFF_MS: u64 = 200;

/// The process's one HTTP agent: requests to the same store reuse its idle connections (the
/// pool checks a connection is still open before reusing it), so a job's four requests cost
/// one connection, not four (each a resolve, a connect, and an accept on the store).
fn agent() -> ureq::Agent {
    static AGENT: std::sync::OnceLock<ureq::Agent> = std::sync::OnceLock::new();
    AGENT
        .get_or_init(|| {
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_redirects(0)
                .timeout_connect(Some(std::time::Duration::from_secs(10)))
                .timeout_global(Some(std::time::Duration::from_secs(300)))
                .build()
                .into()
        })
        .clone()
}

/// What a request attempt concluded.
enum Attempt<T> {
    Done(T),
    /// Worth retrying (5xx, timeout, reset); the message says what happened.
    Retry(String),
}

/// Runs `attempt` with bounded retries and exponential backoff.
fn with_retries<T>(what: &str, mut attempt: impl FnMut() -> Result<Attempt<T>>) -> Result<T> {
    let mut last = String::new();
    for n in 0..ATTEMPTS {
        if n > 0 {
            std::thread::sleep(std::time::Duration::from_millis(BACKOFF_MS << (n - 1)));
            tracing::warn!("{what}: retry {n}/{} after: {last}", ATTEMPTS - 1);
        }
        match attempt()? {
            Attempt::Done(v) => return Ok(v),
            Attempt::Retry(why) => last = why,
        }
    }
    bail!("{what}: gave up after {ATTEMPTS} attempts: {last}")
}

/// Classifies a transport error: timeouts and connection failures are retried.
fn transport<T>(what: &str, e: ureq::Error) -> Result<Attempt<T>> {
    match e {
        ureq::Error::Io(_)
        | ureq::Error::Timeout(_)
        | ureq::Error::ConnectionFailed
        | ureq::Error::HostNotFound => Ok(Attempt::Retry(format!("transport: {e}"))),
        other => bail!("{what}: request failed: {other}"),
    }
}

/// Maps a non-success status to an error (4xx, never retried) or a retry (5xx).
fn status<T>(what: &str, code: u16) -> Result<Attempt<T>> {
    match code {
        403 => bail!("{what}: refused by the store (HTTP 403): the URL expired, was altered, or is not valid for this object and method (transfer.forbidden)"),
        404 => bail!("{what}: not found in the store (HTTP 404) (transfer.not-found)"),
        412 => bail!("{what}: already written (HTTP 412): drop objects are write-once (transfer.write-once)"),
        500..=599 => Ok(Attempt::Retry(format!("HTTP {code}"))),
        c => bail!("{what}: unexpected HTTP {c} (transfer.status)"),
    }
}

/// Streams an HTTPS GET into the writer `sink` makes (made anew for each attempt), capped at
/// `max_bytes`.
fn http_get<'s>(
    url: &str,
    what: &'static str,
    max_bytes: u64,
    sink: &mut dyn FnMut() -> Result<Box<dyn Write + 's>>,
) -> Result<u64> {
    let agent = agent();
    with_retries(what, || {
        let mut resp = match agent.get(url).call() {
            Ok(r) => r,
            Err(e) => return transport(what, e),
        };
        let code = resp.status().as_u16();
        if code != 200 {
            return status(what, code);
        }
        let reader = resp.body_mut().with_config().limit(u64::MAX).reader();
        let mut limited = LimitedReader::new(reader, what, max_bytes);
        let mut out = sink()?;
        let copied = std::io::copy(&mut limited, &mut out).and_then(|n| out.flush().map(|()| n));
        match copied {
            Ok(n) => Ok(Attempt::Done(n)),
            Err(e) if LimitError::from_io(&e).is_some() => Err(limit_context(e, what)),
            Err(e) => Ok(Attempt::Retry(format!("body: {e}"))),
        }
    })
}

/// What a PUT sends.
#[derive(Clone, Copy)]
enum Body<'a> {
    Bytes(&'a [u8]),
    /// Streamed from the start of the file on each attempt.
    File(&'a File),
}

/// Whether a URL is an Azure Blob SAS URL (its query carries the SAS `sv` and `sig`
/// parameters; S3 and GCS presigned URLs carry `X-Amz-*` / `X-Goog-*` ones instead).
fn is_azure_sas(url: &str) -> bool {
    let Some((_, query)) = url.split_once('?') else {
        return false;
    };
    let has = |name: &str| {
        query
            .split('&')
            .any(|kv| kv.split_once('=').is_some_and(|(k, _)| k == name))
    };
    has("sv") && has("sig")
}

/// The create-only condition a write-once PUT sends: the one the presigned URL signed. A GCS
/// V4 URL whose `X-Goog-SignedHeaders` lists `x-goog-if-generation-match` needs
/// `x-goog-if-generation-match: 0` (GCS's XML API ignores `If-None-Match` on uploads); every
/// other URL gets `if-none-match: *` (S3 signs it; Azure's SAS signs no header but honours it).
/// A URL that signed the condition refuses a PUT without it (403), so the worker cannot leave
/// it out, and a second PUT gets 412.
fn write_once_header(url: &str) -> (&'static str, &'static str) {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let gcs_generation = query.split('&').any(|kv| {
        kv.split_once('=').is_some_and(|(k, v)| {
            k.eq_ignore_ascii_case("X-Goog-SignedHeaders")
                && v.to_ascii_lowercase()
                    .replace("%3b", ";")
                    .split(';')
                    .any(|h| h == "x-goog-if-generation-match")
        })
    });
    if gcs_generation {
        ("x-goog-if-generation-match", "0")
    } else {
        ("if-none-match", "*")
    }
}

/// HTTPS PUT of `body`, with the create-only condition ([`write_once_header`]) for write-once
/// objects. Azure's Put Blob also
/// needs `x-ms-blob-type: BlockBlob`, and answers an existing write-once blob with 409.
fn http_put(url: &str, what: &'static str, body: Body<'_>, mode: Overwrite) -> Result<()> {
    let agent = agent();
    let azure = is_azure_sas(url);
    let mut retried = false;
    with_retries(what, || {
        let mut req = agent.put(url);
        if mode == Overwrite::Never {
            let (name, value) = write_once_header(url);
            req = req.header(name, value);
        }
        if azure {
            req = req.header("x-ms-blob-type", "BlockBlob");
        }
        let sent = match body {
            Body::Bytes(b) => req.send(b),
            Body::File(mut f) => {
                std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(0))
                    .with_context(|| format!("{what}: cannot rewind"))?;
                req.send(f)
            }
        };
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                retried = true;
                return transport(what, e);
            }
        };
        let code = match resp.status().as_u16() {
            409 if azure && mode == Overwrite::Never => 412, // BlobAlreadyExists
            c => c,
        };
        match code {
            200 | 201 | 204 => Ok(Attempt::Done(())),
            // After a lost response, 412 may mean our own earlier attempt landed. The
            // fetcher verifies digest and signature, so a foreign object cannot pass.
            412 if retried => {
                tracing::warn!("{what}: write-once object already present after a retry; assuming our earlier attempt landed");
                Ok(Attempt::Done(()))
            }
            code => {
                retried = true;
                status(what, code)
            }
        }
    })
}

fn is_http(url: &str) -> bool {
    url.starts_with("https://") || url.starts_with("http://")
}

/// Opens a GET source for a `file://` URL, capped at `max_bytes`.
fn open_file_get(url: &str, what: &'static str, max_bytes: u64) -> Result<Box<dyn Read>> {
    if !url.starts_with("file://") {
        bail!("{what}: unsupported URL scheme (file://, https:// or loopback http://)");
    }
    let path = file_url_to_path(url).with_context(|| format!("{what}: bad URL"))?;
    let f = File::open(&path).with_context(|| format!("{what}: cannot read from the store"))?;
    Ok(Box::new(LimitedReader::new(f, what, max_bytes)))
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
    let file = File::options()
        .write(true)
        .create_new(true)
        .open(dest)
        .with_context(|| format!("{}: cannot create", dest.display()))?;
    if is_http(url) {
        // Each attempt starts the file over; the digest is computed after the last one.
        http_get(url, what, max_bytes, &mut || {
            let f = file.try_clone()?;
            f.set_len(0)?;
            let mut f2 = f;
            std::io::Seek::seek(&mut f2, std::io::SeekFrom::Start(0))?;
            Ok(Box::new(std::io::BufWriter::new(f2)) as Box<dyn Write>)
        })?;
        return airlock_core::digest::sha256_file(dest)
            .with_context(|| format!("{}: cannot read back", dest.display()));
    }
    let mut src = open_file_get(url, what, max_bytes)?;
    let mut out = HashingWriter::new(std::io::BufWriter::new(file));
    std::io::copy(&mut src, &mut out).map_err(|e| limit_context(e, what))?;
    let (buf, digest, n) = out.finish();
    // Not synced: a scratch copy in the run directory, worthless after a crash.
    buf.into_inner()
        .map_err(|e| anyhow::anyhow!("{what}: write failed: {}", e.error()))?;
    Ok((digest, n))
}

/// GETs a small object into memory (at most `max_bytes`).
pub fn get_bytes(url: &str, what: &'static str, max_bytes: u64) -> Result<Vec<u8>> {
    if is_http(url) {
        let buf = std::cell::RefCell::new(Vec::new());
        http_get(url, what, max_bytes, &mut || {
            buf.borrow_mut().clear();
            Ok(Box::new(RefWriter(&buf)) as Box<dyn Write>)
        })?;
        return Ok(buf.into_inner());
    }
    let mut src = open_file_get(url, what, max_bytes)?;
    let mut out = Vec::new();
    src.read_to_end(&mut out)
        .map_err(|e| limit_context(e, what))?;
    Ok(out)
}

/// GETs a small object that may be absent (a fleet mailbox slot): `None` on 404 or a
/// missing file, at most `max_bytes`.
pub fn get_optional(url: &str, what: &'static str, max_bytes: u64) -> Result<Option<Vec<u8>>> {
    if !is_http(url) {
        let path = file_url_to_path(url).with_context(|| format!("{what}: bad URL"))?;
        if std::fs::symlink_metadata(&path).is_err() {
            return Ok(None);
        }
    }
    match get_bytes(url, what, max_bytes) {
        Ok(b) => Ok(Some(b)),
        Err(e) if format!("{e:#}").contains("(transfer.not-found)") => Ok(None),
        // Removed between the look and the read (the trusted side emptied the slot).
        Err(e)
            if !is_http(url)
                && e.chain().any(|c| {
                    c.downcast_ref::<std::io::Error>()
                        .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound)
                }) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Whether the object at `url` exists: `file://` by looking, `http(s)://` (a presigned GET)
/// by one request: 200 yes, 404 no. `None` when it cannot be told (another status, a
/// transport error): the caller goes on, and the write-once drop still holds at the end.
pub fn exists(url: &str) -> Option<bool> {
    if is_http(url) {
        let resp = agent().get(url).call().ok()?;
        return match resp.status().as_u16() {
            200 => Some(true),
            404 => Some(false),
            _ => None,
        };
    }
    let path = file_url_to_path(url).ok()?;
    Some(std::fs::symlink_metadata(path).is_ok())
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
    if is_http(url) {
        return http_put(url, what, Body::Bytes(bytes), mode);
    }
    let staged = Staged::bytes(url, what, bytes)?;
    staged.commit(mode)?;
    staged.sync_dir();
    Ok(())
}

/// PUTs a file's content to `url`, streamed.
pub fn put_file(url: &str, what: &'static str, src: &Path, mode: Overwrite) -> Result<()> {
    if is_http(url) {
        let f = File::open(src).with_context(|| format!("{}: cannot read", src.display()))?;
        return http_put(url, what, Body::File(&f), mode);
    }
    let staged = Staged::file(url, what, src)?;
    staged.commit(mode)?;
    staged.sync_dir();
    Ok(())
}

/// Drops an object (from a file) and then its envelope. For `file://` stores both are written
/// and synced under temporary names first, then put in place back to back, object first:
/// whatever kills the worker, the store holds either the old pair, the new pair, or (for two
/// renames' time) the new object beside the old envelope, which a reader rejects by digest.
pub fn drop_pair(
    object: (&str, &'static str, &Path),
    envelope: (&str, &'static str, &[u8]),
    mode: Overwrite,
) -> Result<()> {
    let (obj_url, obj_what, src) = object;
    let (env_url, env_what, env) = envelope;
    if is_http(obj_url) || is_http(env_url) {
        put_file(obj_url, obj_what, src, mode)?;
        return put_bytes(env_url, env_what, env, mode);
    }
    let obj = Staged::file(obj_url, obj_what, src)?;
    let envelope = Staged::bytes(env_url, env_what, env)?;
    obj.commit(mode)?;
    envelope.commit(mode)?;
    obj.sync_dir();
    envelope.sync_dir();
    Ok(())
}

/// A `file://` object written and synced under a temporary name in its directory; removed on
/// drop unless committed by rename.
struct Staged {
    tmp: std::path::PathBuf,
    dest: std::path::PathBuf,
    what: &'static str,
}

impl Staged {
    fn dest(url: &str, what: &'static str) -> Result<std::path::PathBuf> {
        if !url.starts_with("file://") {
            bail!("{what}: unsupported URL scheme (file://, https:// or loopback http://)");
        }
        file_url_to_path(url).with_context(|| format!("{what}: bad URL"))
    }

    fn with(
        url: &str,
        what: &'static str,
        fill: impl FnOnce(&mut File) -> Result<()>,
    ) -> Result<Staged> {
        let dest = Staged::dest(url, what)?;
        let dir = dest
            .parent()
            .with_context(|| format!("{what}: URL has no directory"))?;
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{what}: cannot create drop directory"))?;
        let (tmp, mut f) = tempfile_in(dir, what)?;
        let staged = Staged { tmp, dest, what };
        fill(&mut f).with_context(|| format!("{what}: cannot write to the store"))?;
        f.sync_all()
            .with_context(|| format!("{what}: cannot write to the store"))?;
        Ok(staged)
    }

    fn bytes(url: &str, what: &'static str, bytes: &[u8]) -> Result<Staged> {
        Staged::with(url, what, |f| Ok(f.write_all(bytes)?))
    }

    fn file(url: &str, what: &'static str, src: &Path) -> Result<Staged> {
        let mut from =
            File::open(src).with_context(|| format!("{}: cannot read", src.display()))?;
        Staged::with(url, what, |f| {
            std::io::copy(&mut from, f)?;
            Ok(())
        })
    }

    /// Puts the object in place: rename (replace) or a no-replace hard link (write-once).
    fn commit(&self, mode: Overwrite) -> Result<()> {
        let what = self.what;
        let result = match mode {
            Overwrite::Replace => std::fs::rename(&self.tmp, &self.dest).map_err(anyhow::Error::from),
            Overwrite::Never => std::fs::hard_link(&self.tmp, &self.dest).map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    anyhow::anyhow!("{what}: already written (drop objects are write-once) (transfer.write-once)")
                } else {
                    anyhow::Error::from(e)
                }
            }),
        };
        result.with_context(|| format!("{what}: cannot write to the store"))
    }

    /// Makes the renames durable (a reclaimed host may lose power, not just the process).
    fn sync_dir(&self) {
        if let Some(dir) = self.dest.parent() {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        // After a rename the name is gone; after a link (or a failure) it is ours to remove.
        let _ = std::fs::remove_file(&self.tmp);
    }
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

/// A `Write` into a shared buffer (one attempt's body at a time).
struct RefWriter<'a>(&'a std::cell::RefCell<Vec<u8>>);

impl Write for RefWriter<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::net::TcpListener;

    /// A one-shot HTTP server on loopback: answers one request with `code` and hands back the
    /// request's header lines (lowercased).
    fn one_request(code: u16) -> (String, std::thread::JoinHandle<Vec<String>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut headers, mut len) = (Vec::new(), 0usize);
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let line = line.trim_end().to_ascii_lowercase();
                if line.is_empty() {
                    break;
                }
                if let Some(v) = line.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                headers.push(line);
            }
            let mut body = vec![0u8; len];
            reader.read_exact(&mut body).unwrap();
            write!(
                stream,
                "HTTP/1.1 {code} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
            .unwrap();
            headers
        });
        (format!("http://{addr}"), server)
    }

    #[test]
    fn azure_sas_urls_are_told_apart_from_s3_and_gcs_ones() {
        assert!(is_azure_sas(
            "https://acct.blob.core.windows.net/c/drop/j/artifact.tar.gz?sv=2022-11-02&se=x&sr=b&sp=cw&sig=abc"
        ));
        assert!(!is_azure_sas(
            "https://s3.example.com/b/drop/j/a?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=abc"
        ));
        assert!(!is_azure_sas(
            "https://storage.googleapis.com/b/a?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature=abc"
        ));
        assert!(!is_azure_sas("https://h/a?svx=1&sigx=2"));
        assert!(!is_azure_sas("https://h/a/sv=1/sig=2"));
    }

    #[test]
    fn azure_put_sends_the_blob_type_and_s3_put_does_not() {
        let (base, server) = one_request(201);
        let url =
            format!("{base}/devstoreaccount1/c/drop/j/artifact.tar.gz?sv=2022-11-02&sr=b&sig=abc");
        put_bytes(&url, "artifact.tar.gz", b"abc", Overwrite::Never).unwrap();
        let headers = server.join().unwrap();
        assert!(
            headers.contains(&"x-ms-blob-type: blockblob".to_owned()),
            "{headers:?}"
        );
        assert!(
            headers.contains(&"if-none-match: *".to_owned()),
            "{headers:?}"
        );

        let (base, server) = one_request(200);
        let url = format!("{base}/b/drop/j/checkpoint.tar.gz?X-Amz-Signature=abc");
        put_bytes(&url, "checkpoint.tar.gz", b"abc", Overwrite::Replace).unwrap();
        let headers = server.join().unwrap();
        assert!(
            !headers.iter().any(|h| h.starts_with("x-ms-blob-type")),
            "{headers:?}"
        );
        assert!(
            !headers.iter().any(|h| h.starts_with("if-none-match")),
            "{headers:?}"
        );
    }

    #[test]
    fn a_gcs_url_that_signed_the_generation_condition_gets_it_and_a_second_put_is_412() {
        let (base, server) = one_request(200);
        let url = format!(
            "{base}/b/drop/j/artifact.tar.gz?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-SignedHeaders=host%3Bx-goog-if-generation-match&X-Goog-Signature=abc"
        );
        put_bytes(&url, "artifact.tar.gz", b"abc", Overwrite::Never).unwrap();
        let headers = server.join().unwrap();
        assert!(
            headers.contains(&"x-goog-if-generation-match: 0".to_owned()),
            "{headers:?}"
        );
        assert!(
            !headers.iter().any(|h| h.starts_with("if-none-match")),
            "{headers:?}"
        );
        let (base, server) = one_request(412);
        let url = format!("{base}/b/drop/j/artifact.tar.gz?X-Goog-SignedHeaders=host;x-goog-if-generation-match&X-Goog-Signature=abc");
        let err = put_bytes(&url, "artifact.tar.gz", b"abc", Overwrite::Never).unwrap_err();
        server.join().unwrap();
        assert!(
            format!("{err:#}").contains("transfer.write-once"),
            "{err:#}"
        );
        // An S3 URL keeps if-none-match.
        assert_eq!(
            write_once_header(
                "https://s3/b/a?X-Amz-SignedHeaders=host%3Bif-none-match&X-Amz-Signature=x"
            ),
            ("if-none-match", "*")
        );
    }

    #[test]
    fn azure_409_on_a_write_once_blob_is_the_write_once_refusal() {
        let (base, server) = one_request(409);
        let url = format!("{base}/devstoreaccount1/c/drop/j/artifact.tar.gz?sv=2022-11-02&sig=abc");
        let err = put_bytes(&url, "artifact.tar.gz", b"abc", Overwrite::Never).unwrap_err();
        server.join().unwrap();
        assert!(
            format!("{err:#}").contains("transfer.write-once"),
            "{err:#}"
        );
    }
}
