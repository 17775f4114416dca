//! A real S3 implementation over HTTP for the store tests and the benchmark: `s3s` + `s3s-fs`
//! served in-process on `127.0.0.1:<ephemeral>`, path-style, with SigV4 enforced (without
//! `set_auth`, s3s skips access checks entirely, so it is always set).
//!
//! In front of s3s sits a tiny fault injector: a rule matches a method and a key suffix and
//! answers in place of the server for its next N matching requests (an HTTP status, a dropped
//! connection, a body cut short, an outage that kills every connection and resets the next
//! ones, a hard stop that closes the listening socket until [`S3Server::restart`](crate::s3::S3Server::restart), a request
//! applied whose answer is lost, or a stall before it is served). Every
//! request and what it got is logged, so a test asserts what the real server answered.
//!
//! Test-only: no home-made server is ever used in production (see `docs/STORES.md`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, Incoming};
use hyper::{Request, Response};
use object_store::ObjectStore;
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, S3};

/// The access key id the server accepts (a test value, not shaped like a cloud key).
pub const ACCESS_KEY: &str = "airlock-test-access";
/// The secret the server accepts.
pub const SECRET_KEY: &str = "airlock-test-secret-0123456789";
/// The region every client signs for.
pub const REGION: &str = "us-east-1";
/// The bucket created at start.
pub const BUCKET: &str = "airlock";

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What a fault rule does in place of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultAction {
    /// Read the whole request body, then answer this HTTP status with an S3 error body.
    Status(u16),
    /// Close the connection without an answer (after reading the body).
    Drop,
    /// Pass the first `n` body bytes to s3s, then fail the body and close the connection:
    /// the upload dies mid-stream.
    Truncate(usize),
    /// The server "crashes" during this request: every open connection is closed, and the
    /// next `resets` connections are reset on accept (the server restarting); then it serves
    /// again with the same data.
    Outage {
        /// New connections reset before it is back.
        resets: u32,
    },
    /// The server stops: the listening socket is closed (connections are refused) and every
    /// open connection dropped, until [`S3Server::restart`].
    Stop,
    /// s3s applies the request, then its answer is lost: the connection is closed (`None`)
    /// or this status is sent instead (a conditional write the server applied whose
    /// response never arrived).
    Lost(Option<u16>),
    /// Wait this many milliseconds before passing the request to s3s (a slow server: the
    /// client's timeout fires while the request is still on its way).
    Stall(u64),
}

/// A fault rule: the next `times` requests with this method whose path ends with `suffix`.
#[derive(Debug, Clone)]
pub struct Fault {
    /// HTTP method (`PUT`, `GET`, ...).
    pub method: &'static str,
    /// Path suffix (e.g. `/artifact.tar.gz`).
    pub suffix: String,
    /// What to do.
    pub action: FaultAction,
    /// How many matching requests it applies to.
    pub times: u32,
}

/// One request the server saw and what it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// HTTP method.
    pub method: String,
    /// Path (no query).
    pub path: String,
    /// Query string without the presigned signature parameters (e.g. `uploads`,
    /// `partNumber=1&uploadId=…`).
    pub query: String,
    /// Whether the query carried a presigned signature (`X-Amz-Signature`).
    pub presigned: bool,
    /// Whether an `Authorization` header was sent (the trusted side's SDK signing).
    pub authorization: bool,
    /// The answer: an HTTP status, or `None` when the connection was dropped.
    pub status: Option<u16>,
    /// Set when a fault rule answered instead of s3s.
    pub injected: Option<FaultAction>,
}

struct Shared {
    faults: Mutex<Vec<Fault>>,
    log: Mutex<Vec<Logged>>,
    /// Bumped to close every open connection (and, with `stopped`, the listener).
    generation: tokio::sync::watch::Sender<u64>,
    /// New connections to reset before serving again.
    resets_left: Mutex<u32>,
    stopped: Mutex<bool>,
}

impl Shared {
    fn take_fault(&self, method: &str, path: &str) -> Option<FaultAction> {
        let mut faults = self.faults.lock().unwrap();
        let i = faults
            .iter()
            .position(|f| f.times > 0 && f.method == method && path.ends_with(&f.suffix))?;
        faults[i].times -= 1;
        let action = faults[i].action;
        if faults[i].times == 0 {
            faults.remove(i);
        }
        Some(action)
    }

    fn record(&self, entry: Logged) {
        self.log.lock().unwrap().push(entry);
    }

    fn kill_connections(&self) {
        self.generation.send_modify(|g| *g += 1);
    }
}

/// The in-process S3 server. Dropping it stops it and removes its data.
pub struct S3Server {
    ip: std::net::Ipv4Addr,
    port: u16,
    root: PathBuf,
    _dir: Option<tempfile::TempDir>,
    rt: tokio::runtime::Runtime,
    shared: Arc<Shared>,
    service: s3s::service::S3Service,
}

impl S3Server {
    /// Starts a server on `127.0.0.1:0` with a fresh data directory holding [`BUCKET`].
    pub fn start() -> S3Server {
        S3Server::start_with(&std::env::temp_dir(), 2)
    }

    /// [`S3Server::start`] with its data directory made (and removed on drop) under `parent`,
    /// e.g. a tmpfs, and `threads` runtime threads (s3s-fs hands every file operation to
    /// tokio's blocking pool besides). The benchmark keeps the stand-in store's objects off
    /// the disk the binaries under test use, as a remote store's would be, and gives it one
    /// thread: it shares two cores with the jobs, and fewer threads mean fewer cross-core
    /// wake-ups.
    pub fn start_with(parent: &Path, threads: usize) -> S3Server {
        let dir = tempfile::tempdir_in(parent).expect("s3 data dir");
        let root = dir.path().join("s3");
        let mut s = S3Server::start_in_with(&root, 0, threads);
        s._dir = Some(dir);
        s
    }

    /// Starts a server on `127.0.0.1:port` (0: any) serving the data under `root`
    /// (`root/<bucket>` is created). The caller keeps `root`.
    pub fn start_in(root: &Path, port: u16) -> S3Server {
        S3Server::start_in_with(root, port, 2)
    }

    /// [`S3Server::start_in`] listening on `ip` instead of loopback: the Docker test's store
    /// container (`docker/s3-server.rs`) serves the other containers of its network.
    pub fn serve_on(root: &Path, ip: std::net::Ipv4Addr, port: u16) -> S3Server {
        S3Server::build(root, ip, port, 2)
    }

    fn start_in_with(root: &Path, port: u16, threads: usize) -> S3Server {
        S3Server::build(root, std::net::Ipv4Addr::LOCALHOST, port, threads)
    }

    fn build(root: &Path, ip: std::net::Ipv4Addr, port: u16, threads: usize) -> S3Server {
        std::fs::create_dir_all(root.join(BUCKET)).expect("bucket dir");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
            .expect("s3 runtime");
        let fs = PrefixListing {
            fs: s3s_fs::FileSystem::new(root).expect("s3s-fs"),
            root: root.canonicalize().expect("s3 root"),
            conditional: tokio::sync::Mutex::new(()),
        };
        let mut builder = s3s::service::S3ServiceBuilder::new(fs);
        builder.set_auth(s3s::auth::SimpleAuth::from_single(
            ACCESS_KEY,
            SECRET_KEY.to_owned(),
        ));
        let service = builder.build();
        let (generation, _) = tokio::sync::watch::channel(0u64);
        let shared = Arc::new(Shared {
            faults: Mutex::new(Vec::new()),
            log: Mutex::new(Vec::new()),
            generation,
            resets_left: Mutex::new(0),
            stopped: Mutex::new(false),
        });
        let mut server = S3Server {
            ip,
            port,
            root: root.to_owned(),
            _dir: None,
            rt,
            shared,
            service,
        };
        server.port = server.listen();
        server
    }

    fn listen(&self) -> u16 {
        let addr: SocketAddr = (self.ip, self.port).into();
        let listener = self.rt.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4().expect("socket");
            socket.set_reuseaddr(true).expect("reuseaddr");
            socket.bind(addr).expect("bind the listening address");
            socket.listen(1024).expect("listen")
        });
        let port = listener.local_addr().expect("local addr").port();
        *self.shared.stopped.lock().unwrap() = false;
        let shared = self.shared.clone();
        let service = self.service.clone();
        self.rt.spawn(accept_loop(listener, shared, service));
        port
    }

    /// The port it listens on (kept across [`S3Server::restart`]).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The data directory (s3s-fs keeps one directory per bucket in it).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `s3://BUCKET/prefix` (or `s3://BUCKET` for an empty prefix).
    pub fn store_url(&self, prefix: &str) -> String {
        if prefix.is_empty() {
            format!("s3://{BUCKET}")
        } else {
            format!("s3://{BUCKET}/{prefix}")
        }
    }

    /// The environment the trusted side's `object_store` reads (`AmazonS3Builder::from_env`).
    pub fn aws_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_owned()),
            ("AWS_REGION", REGION.to_owned()),
            ("AWS_ENDPOINT", self.endpoint()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
        ]
    }

    /// An `object_store` client for the whole bucket, with the trusted credentials.
    pub fn client(&self) -> Arc<object_store::aws::AmazonS3> {
        install_tls_provider();
        Arc::new(
            object_store::aws::AmazonS3Builder::new()
                .with_endpoint(self.endpoint())
                .with_allow_http(true)
                .with_bucket_name(BUCKET)
                .with_region(REGION)
                .with_access_key_id(ACCESS_KEY)
                .with_secret_access_key(SECRET_KEY)
                .build()
                .expect("s3 client"),
        )
    }

    /// Every object in the bucket under `prefix` ("" for all): key -> size, via the S3 API.
    pub fn list(&self, prefix: &str) -> BTreeMap<String, u64> {
        use futures::StreamExt;
        let client = self.client();
        let p = (!prefix.is_empty()).then(|| object_store::path::Path::from(prefix));
        self.rt.block_on(async {
            let mut out = BTreeMap::new();
            let mut stream = client.list(p.as_ref());
            while let Some(m) = stream.next().await {
                let m = m.expect("list");
                out.insert(m.location.to_string(), m.size);
            }
            out
        })
    }

    /// Reads an object through the S3 API (trusted credentials); `None` if absent.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        use object_store::ObjectStoreExt;
        let client = self.client();
        let path = object_store::path::Path::from(key);
        self.rt.block_on(async {
            match client.get(&path).await {
                Ok(r) => Some(r.bytes().await.expect("read body").to_vec()),
                Err(object_store::Error::NotFound { .. }) => None,
                Err(e) => panic!("get {key}: {e}"),
            }
        })
    }

    /// Every object in the bucket with its bytes (small buckets only): the trusted side's
    /// complete view, to compare before and after an attempt.
    pub fn contents(&self) -> BTreeMap<String, Vec<u8>> {
        self.list("")
            .into_keys()
            .map(|k| {
                let v = self.get(&k).unwrap_or_default();
                (k, v)
            })
            .collect()
    }

    /// Adds a fault rule.
    pub fn inject(&self, method: &'static str, suffix: &str, action: FaultAction, times: u32) {
        self.shared.faults.lock().unwrap().push(Fault {
            method,
            suffix: suffix.to_owned(),
            action,
            times,
        });
    }

    /// Removes every fault rule not yet used up.
    pub fn clear_faults(&self) {
        self.shared.faults.lock().unwrap().clear();
    }

    /// Fault rules not yet used up.
    pub fn pending_faults(&self) -> Vec<Fault> {
        self.shared.faults.lock().unwrap().clone()
    }

    /// Everything logged so far.
    pub fn log(&self) -> Vec<Logged> {
        self.shared.log.lock().unwrap().clone()
    }

    /// Logged requests whose path ends with `suffix`.
    pub fn log_for(&self, method: &str, suffix: &str) -> Vec<Logged> {
        self.log()
            .into_iter()
            .filter(|l| l.method == method && l.path.ends_with(suffix))
            .collect()
    }

    /// Closes the listening socket and every open connection (clients get refused).
    pub fn stop(&self) {
        *self.shared.stopped.lock().unwrap() = true;
        self.shared.kill_connections();
    }

    /// Whether the server is stopped.
    pub fn is_stopped(&self) -> bool {
        *self.shared.stopped.lock().unwrap()
    }

    /// Listens again on the same port with the same data.
    pub fn restart(&self) {
        assert!(self.is_stopped(), "restart of a running server");
        let port = self.listen();
        assert_eq!(port, self.port, "restarted on another port");
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.shared.kill_connections();
        *self.shared.stopped.lock().unwrap() = true;
        self.shared.kill_connections();
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    service: s3s::service::S3Service,
) {
    let mut gen = shared.generation.subscribe();
    loop {
        let (stream, _) = tokio::select! {
            r = listener.accept() => match r {
                Ok(s) => s,
                Err(_) => continue,
            },
            changed = gen.changed() => {
                if changed.is_err() || *shared.stopped.lock().unwrap() {
                    return; // the listener is dropped: connections are refused
                }
                continue;
            }
        };
        {
            let mut resets = shared.resets_left.lock().unwrap();
            if *resets > 0 {
                *resets -= 1;
                // Reset (RST) rather than a clean close: what a crashed server looks like.
                let _ = stream.set_zero_linger();
                drop(stream);
                continue;
            }
        }
        // Without TCP_NODELAY a response written in two parts (headers, then the body)
        // stalls on the client's delayed ACK: 40 ms per GET, which is not S3's doing.
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let service = service.clone();
        tokio::spawn(async move {
            let mut gen = shared.generation.subscribe();
            let svc_shared = shared.clone();
            let svc = hyper::service::service_fn(move |req| {
                handle(svc_shared.clone(), service.clone(), req)
            });
            let builder =
                hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
            let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), svc);
            tokio::select! {
                _ = conn => {}
                _ = gen.changed() => {} // dropped: the socket closes
            }
        });
    }
}

async fn handle(
    shared: Arc<Shared>,
    service: s3s::service::S3Service,
    req: Request<Incoming>,
) -> Result<Response<s3s::Body>, BoxError> {
    let method = req.method().as_str().to_owned();
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or_default();
    let presigned = query.contains("X-Amz-Signature=");
    let authorization = req.headers().contains_key("authorization");
    let mut entry = Logged {
        method: method.clone(),
        path: path.clone(),
        query: query
            .split('&')
            .filter(|kv| !kv.is_empty() && !kv.starts_with("X-Amz-"))
            .collect::<Vec<_>>()
            .join("&"),
        presigned,
        authorization,
        status: None,
        injected: None,
    };
    let Some(action) = shared.take_fault(&method, &path) else {
        let resp = service.call(req.map(s3s::Body::from)).await;
        entry.status = resp.as_ref().ok().map(|r| r.status().as_u16());
        shared.record(entry);
        return resp.map_err(|e| -> BoxError { format!("s3s: {e:?}").into() });
    };
    entry.injected = Some(action);
    match action {
        FaultAction::Status(code) => {
            drain(req.into_body()).await;
            entry.status = Some(code);
            shared.record(entry);
            let body = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InjectedFault</Code>\
                 <Message>fault injected by the test ({code})</Message></Error>"
            );
            Ok(Response::builder()
                .status(code)
                .header("content-type", "application/xml")
                .body(s3s::Body::from(body))?)
        }
        FaultAction::Drop => {
            drain(req.into_body()).await;
            shared.record(entry);
            Err("fault injected: connection dropped".into())
        }
        FaultAction::Truncate(n) => {
            let req = req.map(|b| {
                s3s::Body::http_body(Truncated {
                    inner: b,
                    left: n,
                    failed: false,
                })
            });
            let _ = service.call(req).await;
            shared.record(entry);
            Err("fault injected: upload cut short".into())
        }
        FaultAction::Outage { resets } => {
            *shared.resets_left.lock().unwrap() = resets;
            shared.record(entry);
            shared.kill_connections();
            Err("fault injected: server crashed".into())
        }
        FaultAction::Stop => {
            *shared.stopped.lock().unwrap() = true;
            shared.record(entry);
            shared.kill_connections();
            Err("fault injected: server stopped".into())
        }
        FaultAction::Lost(status) => {
            let applied = service.call(req.map(s3s::Body::from)).await;
            let applied = applied.ok().map(|r| r.status().as_u16());
            entry.status = status;
            shared.record(entry);
            match status {
                None => Err(format!("fault injected: answer {applied:?} lost").into()),
                Some(code) => Ok(Response::builder()
                    .status(code)
                    .header("content-type", "application/xml")
                    .body(s3s::Body::from(format!(
                        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InjectedFault</Code>\
                         <Message>fault injected after the server answered {applied:?}</Message></Error>"
                    )))?),
            }
        }
        FaultAction::Stall(ms) => {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            let resp = service.call(req.map(s3s::Body::from)).await;
            entry.status = resp.as_ref().ok().map(|r| r.status().as_u16());
            shared.record(entry);
            resp.map_err(|e| -> BoxError { format!("s3s: {e:?}").into() })
        }
    }
}

async fn drain(mut body: Incoming) {
    use http_body_util::BodyExt;
    while let Some(frame) = body.frame().await {
        if frame.is_err() {
            break;
        }
    }
}

/// A request body that yields its first `left` bytes, then an error.
struct Truncated {
    inner: Incoming,
    left: usize,
    failed: bool,
}

impl HttpBody for Truncated {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.failed {
            return Poll::Ready(None);
        }
        if self.left == 0 {
            self.failed = true;
            return Poll::Ready(Some(Err("fault injected: body cut short".into())));
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(mut data) => {
                    if data.len() > self.left {
                        data.truncate(self.left);
                    }
                    self.left -= data.len();
                    Poll::Ready(Some(Ok(Frame::data(data))))
                }
                Err(frame) => Poll::Ready(Some(Ok(frame))),
            },
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => {
                self.failed = true;
                Poll::Ready(Some(Err("fault injected: body cut short".into())))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// What a raw HTTP request got: status, S3 error code (if any) and body text.
#[derive(Debug, Clone)]
pub struct Answer {
    /// HTTP status; 0 when no answer came (connection failed).
    pub status: u16,
    /// `<Code>` of an S3 error body.
    pub code: String,
    /// The body (lossy UTF-8, first 4 KiB).
    pub body: String,
}

/// Sends `method url` with `headers` and `body` exactly as a token holder could: no
/// credentials, just the URL. Never retries, never follows redirects.
pub fn raw_request(method: &str, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(std::time::Duration::from_secs(30)))
        .build()
        .into();
    let uri: ureq::http::Uri = url.parse().expect("url");
    let mut req = ureq::http::Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let result = if matches!(method, "GET" | "HEAD" | "DELETE") && body.is_empty() {
        agent.run(req.body(()).expect("request"))
    } else {
        agent.run(req.body(body.to_vec()).expect("request"))
    };
    match result {
        Ok(mut resp) => {
            let status = resp.status().as_u16();
            let text = resp
                .body_mut()
                .with_config()
                .limit(4096)
                .read_to_string()
                .unwrap_or_default();
            let code = text
                .split_once("<Code>")
                .and_then(|(_, r)| r.split_once("</Code>"))
                .map(|(c, _)| c.to_owned())
                .unwrap_or_default();
            Answer {
                status,
                code,
                body: text,
            }
        }
        Err(e) => Answer {
            status: 0,
            code: String::new(),
            body: e.to_string(),
        },
    }
}

/// `url` with its path replaced by `/BUCKET/key` (query, and so the signature, kept).
pub fn with_key(url: &str, key: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let scheme_end = base.find("://").expect("scheme") + 3;
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    format!("{}/{BUCKET}/{key}?{query}", &base[..host_end])
}

/// `url` with its path replaced by `path` verbatim (query kept).
pub fn with_path(url: &str, path: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let scheme_end = base.find("://").expect("scheme") + 3;
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    format!("{}{path}?{query}", &base[..host_end])
}

/// The object key (below the bucket) a presigned URL is for.
pub fn key_of(url: &str) -> String {
    let base = url.split_once('?').map_or(url, |(b, _)| b);
    let scheme_end = base.find("://").expect("scheme") + 3;
    let path = base[scheme_end..]
        .find('/')
        .map_or("", |i| &base[scheme_end + i..]);
    path.trim_start_matches('/')
        .strip_prefix(&format!("{BUCKET}/"))
        .expect("path-style URL in the bucket")
        .to_owned()
}

/// s3s-fs, except that a listing walks only the directory its prefix names (s3s-fs walks the
/// whole bucket for every listing, which makes a long benchmark quadratic in a way real S3
/// is not), and that conditional PUTs (`If-None-Match`) run one at a time: s3s-fs checks for
/// the object, then writes it, so two concurrent creates of one key could both succeed, which
/// AWS S3, GCS, Azure, MinIO and R2 never allow (the ledger relies on it: `docs/LEDGER.md`).
/// s3s-fs still does every check and every write. Every other operation is passed through
/// unchanged.
struct PrefixListing {
    fs: s3s_fs::FileSystem,
    root: PathBuf,
    conditional: tokio::sync::Mutex<()>,
}

#[async_trait::async_trait]
impl S3 for PrefixListing {
    async fn get_object(
        &self,
        r: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        self.fs.get_object(r).await
    }
    async fn head_object(
        &self,
        r: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        self.fs.head_object(r).await
    }
    async fn head_bucket(
        &self,
        r: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        self.fs.head_bucket(r).await
    }
    async fn put_object(
        &self,
        r: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        if r.input.if_none_match.is_none() {
            return self.fs.put_object(r).await;
        }
        let _one_at_a_time = self.conditional.lock().await;
        self.fs.put_object(r).await
    }
    async fn delete_object(
        &self,
        r: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        self.fs.delete_object(r).await
    }
    async fn delete_objects(
        &self,
        r: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        self.fs.delete_objects(r).await
    }
    async fn copy_object(
        &self,
        r: S3Request<CopyObjectInput>,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        self.fs.copy_object(r).await
    }
    async fn create_multipart_upload(
        &self,
        r: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        self.fs.create_multipart_upload(r).await
    }
    async fn upload_part(
        &self,
        r: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        self.fs.upload_part(r).await
    }
    async fn complete_multipart_upload(
        &self,
        r: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        self.fs.complete_multipart_upload(r).await
    }
    async fn abort_multipart_upload(
        &self,
        r: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        self.fs.abort_multipart_upload(r).await
    }
    async fn list_objects(
        &self,
        r: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        self.fs.list_objects(r).await
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let input = &req.input;
        if input.delimiter.is_some() || input.bucket.contains(['/', '.']) {
            return self.fs.list_objects_v2(req).await;
        }
        let bucket_root = self.root.join(&input.bucket);
        if !bucket_root.is_dir() {
            return Err(s3s::s3_error!(NoSuchBucket));
        }
        let prefix = input.prefix.clone().unwrap_or_default();
        let dir = prefix.rsplit_once('/').map_or("", |(d, _)| d);
        if dir.split('/').any(|c| c == ".." || c == ".") {
            return self.fs.list_objects_v2(req).await;
        }
        let start = bucket_root.join(dir);
        let walk_prefix = prefix.clone();
        let mut objects = tokio::task::spawn_blocking(move || {
            let mut out = Vec::new();
            let mut stack = vec![start];
            while let Some(d) = stack.pop() {
                let Ok(rd) = std::fs::read_dir(&d) else {
                    continue;
                };
                for e in rd.flatten() {
                    let Ok(ft) = e.file_type() else { continue };
                    let path = e.path();
                    if ft.is_dir() {
                        stack.push(path);
                        continue;
                    }
                    let Some(key) = path
                        .strip_prefix(&bucket_root)
                        .ok()
                        .and_then(|k| k.to_str())
                        .map(str::to_owned)
                    else {
                        continue;
                    };
                    if !key.starts_with(&walk_prefix) {
                        continue;
                    }
                    let Ok(meta) = e.metadata() else { continue };
                    out.push(Object {
                        key: Some(key),
                        size: Some(i64::try_from(meta.len()).unwrap_or(i64::MAX)),
                        last_modified: meta.modified().ok().map(Timestamp::from),
                        ..Default::default()
                    });
                }
            }
            out
        })
        .await
        .map_err(|e| s3s::s3_error!(InternalError, "list: {e}"))?;
        objects.sort_by(|a, b| a.key.cmp(&b.key));
        let after = match (&input.continuation_token, &input.start_after) {
            (Some(t), Some(s)) => Some(t.max(s).clone()),
            (Some(t), None) => Some(t.clone()),
            (None, Some(s)) => Some(s.clone()),
            (None, None) => None,
        };
        if let Some(after) = &after {
            objects.retain(|o| o.key.as_deref().is_some_and(|k| k > after.as_str()));
        }
        let max = usize::try_from(input.max_keys.unwrap_or(1000).max(0)).unwrap_or(1000);
        let truncated = objects.len() > max;
        objects.truncate(max);
        let next = if truncated {
            objects.last().and_then(|o| o.key.clone())
        } else {
            None
        };
        Ok(S3Response::new(ListObjectsV2Output {
            name: Some(input.bucket.clone()),
            prefix: input.prefix.clone(),
            max_keys: input.max_keys,
            key_count: Some(i32::try_from(objects.len()).unwrap_or(i32::MAX)),
            continuation_token: input.continuation_token.clone(),
            start_after: input.start_after.clone(),
            is_truncated: Some(truncated),
            next_continuation_token: next,
            contents: Some(objects),
            ..Default::default()
        }))
    }
}

/// `object_store`'s HTTP client is built without a TLS provider of its own (as in the trusted
/// side, which installs the same one in `store.rs`): installs rustls's ring provider for the
/// process. A second call finds it installed and does nothing.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
