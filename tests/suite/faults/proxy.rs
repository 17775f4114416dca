//! A TCP proxy on loopback between the worker and the S3 server that cuts or stalls the
//! traffic at a chosen byte: the network failing mid-upload (or mid-answer), not the server.
//!
//! Every accepted connection is forwarded to the upstream address by two threads, one per
//! direction. An armed fault counts the bytes of its direction across all connections and
//! fires once when the count reaches its byte: `Cut` shuts that connection down both ways (the
//! peer sees a reset or an early end), `Stall` holds that direction for a while, then goes on.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which way the bytes of a fault flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Worker to store: requests and upload bodies.
    Up,
    /// Store to worker: answers and downloads.
    Down,
}

/// What a fault does when its byte comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Close the connection both ways.
    Cut,
    /// Hold the direction this long, then forward the rest.
    Stall(Duration),
}

#[derive(Debug, Clone, Copy)]
struct Armed {
    direction: Direction,
    at_byte: u64,
    action: Action,
}

struct Shared {
    upstream: SocketAddr,
    armed: Mutex<Option<Armed>>,
    up: AtomicU64,
    down: AtomicU64,
    fired: AtomicBool,
    stop: AtomicBool,
}

/// The proxy; dropping it stops accepting (open connections end with their peers).
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Listens on `127.0.0.1:0`, forwarding to `upstream`.
    pub fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            upstream,
            armed: Mutex::new(None),
            up: AtomicU64::new(0),
            down: AtomicU64::new(0),
            fired: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(client) = conn else { continue };
                let Ok(server) = TcpStream::connect(s.upstream) else {
                    continue; // the client sees its connection closed
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (sa, sb) = (s.clone(), s.clone());
                std::thread::spawn(move || pump(client, server, Direction::Up, &sa));
                std::thread::spawn(move || pump(s2, c2, Direction::Down, &sb));
            }
        });
        Proxy { addr, shared }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Arms one fault (replacing any other) and resets the byte counts.
    pub fn arm(&self, direction: Direction, at_byte: u64, action: Action) {
        self.shared.up.store(0, Ordering::SeqCst);
        self.shared.down.store(0, Ordering::SeqCst);
        self.shared.fired.store(false, Ordering::SeqCst);
        *self.shared.armed.lock().unwrap() = Some(Armed {
            direction,
            at_byte,
            action,
        });
    }

    /// Disarms and resets the counts (a calibration run measures the traffic).
    pub fn disarm(&self) {
        *self.shared.armed.lock().unwrap() = None;
        self.shared.up.store(0, Ordering::SeqCst);
        self.shared.down.store(0, Ordering::SeqCst);
        self.shared.fired.store(false, Ordering::SeqCst);
    }

    /// Bytes forwarded `(up, down)` since the last arm or disarm.
    pub fn bytes(&self) -> (u64, u64) {
        (
            self.shared.up.load(Ordering::SeqCst),
            self.shared.down.load(Ordering::SeqCst),
        )
    }

    /// Whether the armed fault fired.
    pub fn fired(&self) -> bool {
        self.shared.fired.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr); // wakes the accept loop
    }
}

/// Forwards `from` to `to`, applying the armed fault of `direction` when its byte comes.
fn pump(mut from: TcpStream, mut to: TcpStream, direction: Direction, s: &Shared) {
    let counter = match direction {
        Direction::Up => &s.up,
        Direction::Down => &s.down,
    };
    let mut buf = [0u8; 4096];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let before = counter.fetch_add(n as u64, Ordering::SeqCst);
        let armed = *s.armed.lock().unwrap();
        let hit = armed.filter(|a| {
            a.direction == direction
                && (before..before + n as u64).contains(&a.at_byte)
                && !s.fired.swap(true, Ordering::SeqCst)
        });
        match hit {
            None => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Some(a) => {
                let split = (a.at_byte - before) as usize;
                if to.write_all(&buf[..split]).is_err() {
                    break;
                }
                match a.action {
                    Action::Cut => {
                        let _ = from.shutdown(Shutdown::Both);
                        let _ = to.shutdown(Shutdown::Both);
                        return;
                    }
                    Action::Stall(d) => {
                        std::thread::sleep(d);
                        if to.write_all(&buf[split..n]).is_err() {
                            break;
                        }
                    }
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}
