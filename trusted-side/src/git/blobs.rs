//! Blob contents for a packer's or scanner's workers: each worker has its own
//! `git cat-file --batch`, fed its whole share of the blobs up front by a thread of its own, so
//! that git reads ahead of its worker and no thread waits for another to be scheduled between
//! git and the work; [`deal`] splits the blobs into shares that keep pace with one another.
//! In a working tree, that thread first reads each blob's file there ([`super::worktree`]: used
//! only when its object id is the blob's) and asks git only for the others.
//!
//! Guards against: a blob other than the one asked for, or larger than the limit (checked from
//! git's header before the content is read), a record cut short, a git process or feeding
//! thread left behind (killed and joined on drop), and memory held for a slow reader (the
//! files read ahead from the working tree hold at most [`AHEAD_BYTES`], one larger file
//! excepted).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdout, Stdio};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Condvar, Mutex};

use anyhow::{bail, Context, Result};

use super::worktree::{DirCache, Worktree};
use super::Git;

/// A blob to read: its id, its path in the tree and its size (as the tree lists them).
pub struct BlobWant {
    /// The blob's id.
    pub oid: String,
    /// Its path in the tree.
    pub path: String,
    /// Its size.
    pub size: u64,
}

/// Bytes of files read ahead from the working tree and not yet taken, at most.
const AHEAD_BYTES: u64 = 2 * 1024 * 1024;

/// Blobs the feeding thread may be ahead of the reader, at most.
const AHEAD_BLOBS: usize = 1024;

/// What the feeding thread says of the next blob: read from the working tree, or asked of git.
enum Piece {
    Tree(String, Vec<u8>),
    Git,
}

/// The bytes read ahead from the working tree and not yet taken (and whether the reader is
/// gone).
#[derive(Default)]
struct Held {
    state: Mutex<(u64, bool)>,
    taken: Condvar,
}

impl Held {
    /// Waits until `n` more bytes fit (or none are held); `false` once the reader is gone.
    fn hold(&self, n: u64) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while !s.1 && s.0 > 0 && s.0 + n > AHEAD_BYTES {
            s = self.taken.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.0 += n;
        !s.1
    }

    fn take(&self, n: u64) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.0 = s.0.saturating_sub(n);
        self.taken.notify_all();
    }

    fn close(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
        self.taken.notify_all();
    }
}

/// Streams the contents of a list of blobs, in order, from one `git cat-file --batch --buffer`
/// fed the whole list by a thread of its own: git runs ahead of the reader by up to a pipe's
/// worth (enlarged to [`PIPE_BYTES`] where the kernel allows), so that the reader and git do
/// not take turns object by object. A packer runs one per worker thread.
pub struct BlobStream {
    child: Child,
    feeder: Option<std::thread::JoinHandle<()>>,
    stdout: BufReader<ChildStdout>,
    line: String,
    /// With a working tree: where each blob comes from, in order.
    pieces: Option<(Receiver<Piece>, Arc<Held>)>,
}

/// Deals items (by their sizes, in order) to `n` readers: each item goes to the reader with the
/// fewest bytes so far, so that readers working through their lists in order keep pace with one
/// another. Returns each reader's item indices, ascending; none is empty.
pub fn deal(sizes: impl IntoIterator<Item = u64>, n: usize) -> Vec<Vec<usize>> {
    let mut lists: Vec<(u64, Vec<usize>)> = vec![(0, Vec::new()); n.max(1)];
    for (i, size) in sizes.into_iter().enumerate() {
        if let Some(l) = lists.iter_mut().min_by_key(|l| l.0) {
            l.0 += size.max(1);
            l.1.push(i);
        }
    }
    lists
        .into_iter()
        .map(|l| l.1)
        .filter(|l| !l.is_empty())
        .collect()
}

/// Pipe size asked for git's output (Linux's default limit for an unprivileged process).
const PIPE_BYTES: usize = 1024 * 1024;

impl BlobStream {
    /// Starts git on `wants`; with `worktree`, each is first read from there.
    pub(super) fn start(
        git: &Git,
        wants: Vec<BlobWant>,
        worktree: Option<Arc<Worktree>>,
    ) -> Result<BlobStream> {
        let mut command = git.command();
        command.args(["cat-file", "--batch"]);
        if worktree.is_none() {
            // git holds its answers until its buffer fills: fine when it is asked for every
            // blob up front, a deadlock when the asking waits for the reader.
            command.arg("--buffer");
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot run git cat-file (is git installed?)")?;
        let stdin = child.stdin.take().context("git cat-file: no stdin")?;
        let stdout = child.stdout.take().context("git cat-file: no stdout")?;
        // A smaller pipe only costs time.
        let _ = rustix::pipe::fcntl_setpipe_size(&stdout, PIPE_BYTES);
        let mut w = std::io::BufWriter::with_capacity(64 * 1024, stdin);
        let (feeder, pieces) = match worktree {
            None => {
                let feeder = std::thread::spawn(move || {
                    for want in wants {
                        if writeln!(w, "{}", want.oid).is_err() {
                            return; // git is gone; the reader reports it
                        }
                    }
                    let _ = w.flush(); // then stdin closes, and git flushes what it buffered
                });
                (feeder, None)
            }
            Some(tree) => {
                let (tx, rx) = sync_channel(AHEAD_BLOBS);
                let held = Arc::new(Held::default());
                let h = Arc::clone(&held);
                let feeder = std::thread::spawn(move || {
                    let mut dirs = DirCache::default();
                    for want in wants {
                        let mut buf = Vec::new();
                        let piece =
                            if tree.read(&mut dirs, &want.path, &want.oid, want.size, &mut buf) {
                                if !h.hold(want.size) {
                                    return; // the reader is gone
                                }
                                Piece::Tree(want.oid, buf)
                            } else {
                                // Each request goes to git at once: the reader waits for its answer.
                                if writeln!(w, "{}", want.oid)
                                    .and_then(|()| w.flush())
                                    .is_err()
                                {
                                    return;
                                }
                                Piece::Git
                            };
                        if tx.send(piece).is_err() {
                            return;
                        }
                    }
                });
                (feeder, Some((rx, held)))
            }
        };
        Ok(BlobStream {
            child,
            feeder: Some(feeder),
            stdout: BufReader::with_capacity(256 * 1024, stdout),
            line: String::new(),
            pieces,
        })
    }

    /// Reads the next blob, which must be `oid` and at most `max` bytes (checked before reading).
    pub fn next_blob(&mut self, oid: &str, max: u64, buf: &mut Vec<u8>) -> Result<()> {
        if let Some((pieces, held)) = &self.pieces {
            match pieces.recv() {
                Ok(Piece::Tree(got, content)) => {
                    held.take(content.len() as u64);
                    if got != oid {
                        bail!("git cat-file: expected blob {oid}, got blob {got}");
                    }
                    if content.len() as u64 > max {
                        bail!(
                            "{oid}: blob is {} bytes, over the {max} limit",
                            content.len()
                        );
                    }
                    *buf = content;
                    return Ok(());
                }
                Ok(Piece::Git) => {}
                Err(_) => bail!(
                    "git cat-file: no blob {oid} (git stopped, or more blobs read than listed)"
                ),
            }
        }
        let header = &mut self.line;
        header.clear();
        self.stdout
            .read_line(header)
            .context("git cat-file: read")?;
        let mut parts = header.split_whitespace();
        let (Some(got), Some(kind), Some(size)) = (parts.next(), parts.next(), parts.next()) else {
            bail!("git cat-file: object {oid} missing");
        };
        if got != oid || kind != "blob" {
            bail!("git cat-file: expected blob {oid}, got {kind} {got}");
        }
        let size: u64 = size.parse().context("git cat-file: bad size")?;
        if size > max {
            bail!("git cat-file: blob {oid} is {size} bytes, over the {max} limit");
        }
        buf.clear();
        let size = usize::try_from(size).context("blob too large")?;
        buf.reserve_exact(size + 1);
        (&mut self.stdout)
            .take(size as u64 + 1)
            .read_to_end(buf)
            .context("git cat-file: read")?;
        // The record ends with a newline after the content.
        if buf.len() != size + 1 || buf.pop() != Some(b'\n') {
            bail!("git cat-file: truncated blob {oid}");
        }
        Ok(())
    }
}

impl Drop for BlobStream {
    fn drop(&mut self) {
        // A feeding thread waiting for room finds the reader gone.
        if let Some((pieces, held)) = self.pieces.take() {
            held.close();
            drop(pieces);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Its writes fail once git is gone.
        if let Some(f) = self.feeder.take() {
            let _ = f.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deal_balances_by_bytes_keeps_order_and_leaves_no_list_empty() {
        let sizes = [100, 1, 1, 1, 50, 50, 0, 0];
        let lists = deal(sizes, 2);
        assert_eq!(lists, vec![vec![0, 6, 7], vec![1, 2, 3, 4, 5]]);
        let bytes = |l: &Vec<usize>| l.iter().map(|&i| sizes[i].max(1)).sum::<u64>();
        assert!(bytes(&lists[0]).abs_diff(bytes(&lists[1])) <= 100);
        assert_eq!(deal([5, 5], 4), vec![vec![0], vec![1]]);
        assert!(deal([], 3).is_empty());
    }
}
