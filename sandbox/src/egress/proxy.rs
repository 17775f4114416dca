//! The proxy server: an acceptor thread per listener, a thread per connection (two per open
//! tunnel), one shared log.
//!
//! Guards against: the generator choosing where the worker connects (allowlist, then the
//! address checks on every resolved address, then a connect to exactly those addresses),
//! exhausting the worker (connection cap, head cap and deadline, connect and idle
//! timeouts, log cap), and connections outliving the run (dropping a [`Serving`] closes
//! them and joins their threads).
//! On a `200` answer: the destination was allowed, every address checked, and the
//! attempt is in the log (its byte counts grow as the tunnel runs).
//! Does not check: the bytes inside a tunnel.

use std::collections::HashMap;
use std::io::{self, ErrorKind, PipeReader, PipeWriter, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::head::{self, Refused, Target};
use super::{
    address, check_setup, Attempt, EgressLog, EgressRule, ProxyConfig, CONNECT_FAILED, INTERNAL,
    LOG_FULL, NOT_ALLOWED, RESOLVE_FAILED, TOO_MANY_CONNECTIONS, UNFINISHED,
};
use crate::error::SandboxError;
use crate::linux::sys;

/// Addresses tried per destination, at most.
const MAX_ADDRESSES: usize = 16;
/// Relay buffer per direction.
const RELAY_BUF: usize = 16 << 10;
/// How often a silent tunnel checks whether the other direction moved.
const IDLE_TICK: Duration = Duration::from_secs(5);

/// A running egress proxy: an allowlist, limits and a log. Cheap to clone (shared state).
#[derive(Clone)]
pub struct EgressProxy {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for EgressProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressProxy")
            .field("rules", &self.shared.rules)
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

struct Shared {
    rules: Vec<EgressRule>,
    config: ProxyConfig,
    log: Mutex<LogState>,
    active: AtomicUsize,
}

#[derive(Default)]
struct LogState {
    entries: Vec<Entry>,
    unlogged: u64,
}

struct Entry {
    attempt: Attempt,
    up: Arc<AtomicU64>,
    down: Arc<AtomicU64>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking relay thread must not take the log with it.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl EgressProxy {
    /// Checks the allowlist (1 to [`MAX_RULES`](super::MAX_RULES) entries, each a lowercase
    /// name and a non-zero port) and the limits; nothing runs until [`EgressProxy::serve`].
    pub fn start(rules: Vec<EgressRule>, config: ProxyConfig) -> Result<Self, SandboxError> {
        check_setup(&rules, &config)?;
        Ok(EgressProxy {
            shared: Arc::new(Shared {
                rules,
                config,
                log: Mutex::new(LogState::default()),
                active: AtomicUsize::new(0),
            }),
        })
    }

    /// The allowlist.
    pub fn rules(&self) -> &[EgressRule] {
        &self.shared.rules
    }

    /// Serves proxy requests arriving on `listener` until the returned [`Serving`] is
    /// dropped. [`spawn_with_egress`](crate::spawn_with_egress) does this with the listener
    /// inside the sandbox's network namespace; tests may pass any listener.
    pub fn serve(&self, listener: TcpListener) -> Result<Serving, SandboxError> {
        listener
            .set_nonblocking(true)
            .map_err(SandboxError::io("set the egress listener non-blocking"))?;
        let (stop_r, stop_w) =
            io::pipe().map_err(SandboxError::io("create the egress stop pipe"))?;
        let conns = Arc::new(Conns::default());
        let shared = Arc::clone(&self.shared);
        let c = Arc::clone(&conns);
        let acceptor = std::thread::Builder::new()
            .name("airlock-egress-accept".into())
            .spawn(move || accept_loop(&shared, &c, &listener, &stop_r))
            .map_err(SandboxError::io("start the egress acceptor"))?;
        Ok(Serving {
            stop: Some(stop_w),
            acceptor: Some(acceptor),
            conns,
        })
    }

    /// The log so far (byte counts of open tunnels are as of now).
    pub fn log(&self) -> EgressLog {
        let state = lock(&self.shared.log);
        EgressLog {
            attempts: state
                .entries
                .iter()
                .map(|e| Attempt {
                    bytes_up: e.up.load(Ordering::Relaxed),
                    bytes_down: e.down.load(Ordering::Relaxed),
                    ..e.attempt.clone()
                })
                .collect(),
            unlogged: state.unlogged,
        }
    }
}

impl Shared {
    /// Reserves a log entry for a new connection (`None`: the log is full; counted).
    fn reserve(&self) -> Option<usize> {
        let mut state = lock(&self.log);
        if state.entries.len() >= self.config.max_log_entries {
            state.unlogged = state.unlogged.saturating_add(1);
            return None;
        }
        state.entries.push(Entry {
            attempt: Attempt {
                destination: "-".into(),
                allowed: false,
                reason: Some(UNFINISHED),
                address: None,
                test_endpoint: false,
                local_grant: false,
                bytes_up: 0,
                bytes_down: 0,
                at_ms: now_ms(),
            },
            up: Arc::new(AtomicU64::new(0)),
            down: Arc::new(AtomicU64::new(0)),
        });
        Some(state.entries.len() - 1)
    }

    fn update(&self, entry: usize, f: impl FnOnce(&mut Attempt)) {
        if let Some(e) = lock(&self.log).entries.get_mut(entry) {
            f(&mut e.attempt);
        }
    }

    fn counters(&self, entry: usize) -> Option<(Arc<AtomicU64>, Arc<AtomicU64>)> {
        lock(&self.log)
            .entries
            .get(entry)
            .map(|e| (Arc::clone(&e.up), Arc::clone(&e.down)))
    }

    fn refuse(&self, entry: usize, client: &TcpStream, rule: &'static str, status: &str) {
        let mut destination = None;
        self.update(entry, |a| {
            a.allowed = false;
            a.reason = Some(rule);
            destination = Some(a.destination.clone());
        });
        respond(client, status, rule, destination.as_deref());
    }
}

/// Writes a response naming the rule id in a header and, in a one-line text body, the
/// destination, the rule and the fix (`explain`) (best effort).
fn respond(mut client: &TcpStream, status: &str, rule: &str, destination: Option<&str>) {
    let body = super::explain::body(rule, destination);
    let msg = format!(
        "HTTP/1.1 {status}\r\nX-Airlock-Egress: {rule}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(msg.as_bytes());
    let _ = client.flush();
}

/// Open connections of one listener, for shutting them down when the run ends.
#[derive(Default)]
struct Conns {
    state: Mutex<ConnsState>,
}

#[derive(Default)]
struct ConnsState {
    closing: bool,
    next_id: u64,
    open: HashMap<u64, Vec<TcpStream>>,
    handlers: Vec<JoinHandle<()>>,
}

impl Conns {
    /// Registers a stream under a new id; `None` (stream shut down) once closing.
    fn open(&self, stream: &TcpStream) -> Option<u64> {
        let mut s = lock(&self.state);
        let clone = stream.try_clone().ok()?;
        if s.closing {
            let _ = stream.shutdown(Shutdown::Both);
            return None;
        }
        let id = s.next_id;
        s.next_id += 1;
        s.open.insert(id, vec![clone]);
        Some(id)
    }

    /// Adds another stream (the upstream) to `id`; `false` (stream shut down) once closing.
    fn add(&self, id: u64, stream: &TcpStream) -> bool {
        let mut s = lock(&self.state);
        if s.closing {
            let _ = stream.shutdown(Shutdown::Both);
            return false;
        }
        match stream.try_clone() {
            Ok(c) => {
                s.open.entry(id).or_default().push(c);
                true
            }
            Err(_) => false,
        }
    }

    fn close(&self, id: u64) {
        lock(&self.state).open.remove(&id);
    }
}

/// The proxy serving one listener. Dropping it stops accepting, closes the listener and
/// every open tunnel, and joins their threads.
pub struct Serving {
    stop: Option<PipeWriter>,
    acceptor: Option<JoinHandle<()>>,
    conns: Arc<Conns>,
}

impl std::fmt::Debug for Serving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serving").finish_non_exhaustive()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        // Closing the pipe wakes the acceptor, which returns and drops the listener.
        drop(self.stop.take());
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        let handlers = {
            let mut s = lock(&self.conns.state);
            s.closing = true;
            for streams in s.open.values() {
                for st in streams {
                    let _ = st.shutdown(Shutdown::Both);
                }
            }
            std::mem::take(&mut s.handlers)
        };
        for h in handlers {
            let _ = h.join();
        }
    }
}

fn accept_loop(
    shared: &Arc<Shared>,
    conns: &Arc<Conns>,
    listener: &TcpListener,
    stop: &PipeReader,
) {
    loop {
        let mut fds = [
            libc::pollfd {
                fd: listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        if sys::poll(&mut fds, -1).is_err() || fds[1].revents != 0 {
            return;
        }
        loop {
            match listener.accept() {
                Ok((stream, _)) => admit(shared, conns, stream),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::ConnectionAborted => continue,
                Err(_) => {
                    // Out of descriptors or memory: back off instead of spinning.
                    std::thread::sleep(Duration::from_millis(50));
                    break;
                }
            }
        }
    }
}

/// Logs and hands a new connection to its own thread, or refuses it at once.
fn admit(shared: &Arc<Shared>, conns: &Arc<Conns>, stream: TcpStream) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(shared.config.idle_timeout));
    let Some(entry) = shared.reserve() else {
        respond(&stream, "503 Service Unavailable", LOG_FULL, None);
        return;
    };
    let max = shared.config.max_connections;
    if shared.active.fetch_add(1, Ordering::AcqRel) >= max {
        shared.active.fetch_sub(1, Ordering::AcqRel);
        shared.refuse(
            entry,
            &stream,
            TOO_MANY_CONNECTIONS,
            "503 Service Unavailable",
        );
        return;
    }
    let Some(id) = conns.open(&stream) else {
        shared.active.fetch_sub(1, Ordering::AcqRel);
        return;
    };
    let (s, c) = (Arc::clone(shared), Arc::clone(conns));
    let spawned = std::thread::Builder::new()
        .name("airlock-egress-conn".into())
        .spawn(move || {
            handle(&s, &c, id, entry, &stream);
            c.close(id);
            s.active.fetch_sub(1, Ordering::AcqRel);
        });
    match spawned {
        Ok(h) => {
            let mut st = lock(&conns.state);
            st.handlers.retain(|h| !h.is_finished());
            st.handlers.push(h);
        }
        Err(_) => {
            // The closure (and the stream) is gone; the client sees the connection close.
            conns.close(id);
            shared.active.fetch_sub(1, Ordering::AcqRel);
            shared.update(entry, |a| a.reason = Some(INTERNAL));
        }
    }
}

/// One connection: head, decision, tunnel.
fn handle(shared: &Shared, conns: &Conns, id: u64, entry: usize, client: &TcpStream) {
    let cfg = &shared.config;
    let deadline = Instant::now() + cfg.header_timeout;
    let refuse = |r: Refused| {
        if let Some(d) = r.destination {
            shared.update(entry, |a| a.destination = d);
        }
        shared.refuse(entry, client, r.rule, r.status);
    };
    let (head, rest) = match head::read_head(client, cfg.max_header_bytes, deadline) {
        Ok(v) => v,
        Err(r) => return refuse(r),
    };
    // A plain-HTTP request is forwarded only to a destination the operator granted.
    let (target, forward) = match head::parse_connect(&head) {
        Ok(t) => (t, None),
        Err(r) if r.rule == head::METHOD => match head::parse_forward(&head) {
            Some((t, rewritten)) if local_grant(cfg, &t).is_some() => (t, Some(rewritten)),
            // A plain-HTTP request for a destination nobody granted: forbidden, not a
            // wrong method (the body says which grant is missing).
            Some(_) if r.destination.is_some() => {
                return refuse(head::Refused {
                    status: "403 Forbidden",
                    ..r
                })
            }
            _ => return refuse(r),
        },
        Err(r) => return refuse(r),
    };
    let destination = target.destination();
    shared.update(entry, |a| a.destination = destination);
    let granted = local_grant(cfg, &target);
    if granted.is_none()
        && !shared
            .rules
            .iter()
            .any(|r| r.host == target.host && r.port == target.port)
    {
        return shared.refuse(entry, client, NOT_ALLOWED, "403 Forbidden");
    }
    let (addrs, test_endpoint) = match granted {
        Some(addr) => (vec![addr], false),
        None => match checked_addresses(cfg, &target) {
            Ok(v) => v,
            Err((rule, status)) => return shared.refuse(entry, client, rule, status),
        },
    };
    let Some((upstream, addr)) = connect_first(&addrs, cfg.connect_timeout) else {
        return shared.refuse(entry, client, CONNECT_FAILED, "502 Bad Gateway");
    };
    if !conns.add(id, &upstream) {
        return;
    }
    let Some((up, down)) = shared.counters(entry) else {
        return;
    };
    shared.update(entry, |a| {
        a.allowed = true;
        a.reason = None;
        a.address = Some(addr);
        a.test_endpoint = test_endpoint;
        a.local_grant = granted.is_some();
    });
    let _ = upstream.set_write_timeout(Some(cfg.idle_timeout));
    let _ = upstream.set_nodelay(true);
    match forward {
        // Plain HTTP: the origin answers the generator directly.
        Some(h) => {
            if (&upstream).write_all(&h).is_err() {
                return;
            }
            up.fetch_add(h.len() as u64, Ordering::Relaxed);
        }
        None => {
            let mut c = client;
            if c.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .is_err()
            {
                return;
            }
        }
    }
    if !rest.is_empty() {
        if (&upstream).write_all(&rest).is_err() {
            return;
        }
        up.fetch_add(rest.len() as u64, Ordering::Relaxed);
    }
    relay(client, &upstream, &up, &down, cfg.idle_timeout);
}

/// The address of the operator's grant for `target`, if there is one: exactly its host (or
/// its IP literal's address) and port.
fn local_grant(cfg: &ProxyConfig, target: &Target) -> Option<SocketAddr> {
    cfg.local_grants
        .iter()
        .find(|g| {
            g.port == target.port
                && match target.ip {
                    Some(ip) => ip.to_canonical() == g.addr.ip(),
                    None => g.host == target.host,
                }
        })
        .map(|g| g.addr)
}

/// The addresses to connect to, each checked; or the refusing rule and status.
fn checked_addresses(
    cfg: &ProxyConfig,
    target: &Target,
) -> Result<(Vec<SocketAddr>, bool), (&'static str, &'static str)> {
    if let Some(e) = cfg
        .unsafe_test_endpoints
        .iter()
        .find(|e| e.host == target.host && e.port == target.port)
    {
        return Ok((vec![e.addr], true));
    }
    let ips: Vec<IpAddr> = match target.ip {
        Some(ip) => vec![ip],
        None => cfg
            .resolver
            .resolve(&target.host, target.port)
            .map_err(|_| (RESOLVE_FAILED, "502 Bad Gateway"))?,
    };
    let mut out: Vec<SocketAddr> = Vec::new();
    for ip in ips {
        let ip = ip.to_canonical();
        if let Some(rule) = address::refusal(ip) {
            return Err((rule, "403 Forbidden"));
        }
        if address::is_this_host(ip) {
            return Err((address::THIS_HOST, "403 Forbidden"));
        }
        let a = SocketAddr::new(ip, target.port);
        if !out.contains(&a) {
            out.push(a);
        }
    }
    if out.is_empty() {
        return Err((RESOLVE_FAILED, "502 Bad Gateway"));
    }
    out.truncate(MAX_ADDRESSES);
    Ok((out, false))
}

fn connect_first(addrs: &[SocketAddr], timeout: Duration) -> Option<(TcpStream, SocketAddr)> {
    addrs
        .iter()
        .find_map(|a| TcpStream::connect_timeout(a, timeout).ok().map(|s| (s, *a)))
}

/// Copies both ways until both directions end, a side fails, or nothing moved in either
/// direction for `idle`.
fn relay(
    client: &TcpStream,
    upstream: &TcpStream,
    up: &AtomicU64,
    down: &Arc<AtomicU64>,
    idle: Duration,
) {
    let epoch = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let (Ok(c2), Ok(u2)) = (client.try_clone(), upstream.try_clone()) else {
        let _ = client.shutdown(Shutdown::Both);
        let _ = upstream.shutdown(Shutdown::Both);
        return;
    };
    let (down2, last2) = (Arc::clone(down), Arc::clone(&last));
    let back = std::thread::Builder::new()
        .name("airlock-egress-down".into())
        .spawn(move || pump(&u2, &c2, &down2, &last2, epoch, idle));
    pump(client, upstream, up, &last, epoch, idle);
    match back {
        Ok(h) => {
            let _ = h.join();
        }
        Err(_) => {
            let _ = client.shutdown(Shutdown::Both);
            let _ = upstream.shutdown(Shutdown::Both);
        }
    }
}

fn pump(
    mut from: &TcpStream,
    mut to: &TcpStream,
    counter: &AtomicU64,
    last: &AtomicU64,
    epoch: Instant,
    idle: Duration,
) {
    let kill = || {
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    };
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    if from.set_read_timeout(Some(idle.min(IDLE_TICK))).is_err() {
        return kill();
    }
    let mut buf = vec![0u8; RELAY_BUF];
    loop {
        match from.read(&mut buf) {
            Ok(0) => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return kill();
                }
                counter.fetch_add(n as u64, Ordering::Relaxed);
                last.store(ms(epoch.elapsed()), Ordering::Relaxed);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                let quiet = ms(epoch.elapsed()).saturating_sub(last.load(Ordering::Relaxed));
                if quiet >= ms(idle) {
                    return kill();
                }
            }
            Err(_) => return kill(),
        }
    }
}
