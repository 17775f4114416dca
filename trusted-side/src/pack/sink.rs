//! The bundle's sink: the bytes written go, in chunks, to a thread of their own that writes
//! them to the file and hands each chunk to a second thread that hashes it (the digest the
//! envelope signs), so that hashing and writing run beside the packer's other work and beside
//! each other instead of after it.
//!
//! Guards against: a digest of other bytes than those written (both threads take the same
//! chunks in the same order), a write error lost on the way (it ends the thread and is the
//! error [`Sink::finish`] returns), and a bundle held in memory (at most [`CHUNKS`] chunks of
//! [`CHUNK`] bytes are queued to each thread; spent chunks are filled again).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use airlock_core::digest::Sha256Digest;
use rustix::fs::Advice;
use sha2::{Digest, Sha256};

/// Bytes handed to the thread at a time.
const CHUNK: usize = 256 * 1024;
/// Chunks queued at most.
const CHUNKS: usize = 8;
/// Bytes written between two hand-overs to the kernel's writeback.
const WRITEBACK: u64 = 4 * 1024 * 1024;

/// What the thread wrote: the file, the SHA-256 of its bytes and their count.
type Written = (File, Sha256Digest, u64);

/// A writer whose bytes are hashed and written to a file by threads of their own.
pub struct Sink {
    buf: Vec<u8>,
    tx: Option<SyncSender<Arc<Vec<u8>>>>,
    /// Chunks both threads are done with, to fill again (no allocation a chunk).
    spent: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<io::Result<Written>>>,
}

/// Gives a chunk back to be filled again, if no other thread still holds it.
fn recycle(chunk: Arc<Vec<u8>>, spent: &SyncSender<Vec<u8>>) {
    if let Ok(mut v) = Arc::try_unwrap(chunk) {
        v.clear();
        let _ = spent.try_send(v);
    }
}

impl Sink {
    /// A sink writing to `file`; `durable`: the file will be synced, so its writeback starts
    /// as it is written (a staging file deleted after its upload is left to the page cache).
    pub fn new(file: File, durable: bool) -> Sink {
        let (tx, rx) = sync_channel::<Arc<Vec<u8>>>(CHUNKS);
        let (spent_tx, spent) = sync_channel::<Vec<u8>>(CHUNKS + 2);
        let thread = std::thread::spawn(move || {
            let (hash_tx, hash_rx) = sync_channel::<Arc<Vec<u8>>>(CHUNKS);
            let hash_spent = spent_tx.clone();
            let hasher = std::thread::spawn(move || {
                let mut hasher = Sha256::new();
                for chunk in hash_rx {
                    hasher.update(chunk.as_slice());
                    recycle(chunk, &hash_spent);
                }
                Sha256Digest(hasher.finalize().into())
            });
            let mut out = BufWriter::with_capacity(CHUNK, file);
            let mut n = 0u64;
            let mut handed = 0u64; // bytes handed to the kernel's writeback
            let wrote = (|| -> io::Result<()> {
                for chunk in rx {
                    if hash_tx.send(Arc::clone(&chunk)).is_err() {
                        return Err(io::Error::other("the bundle's hasher stopped"));
                    }
                    out.write_all(&chunk)?;
                    n += chunk.len() as u64;
                    recycle(chunk, &spent_tx);
                    if durable && n - handed >= WRITEBACK {
                        // Start writing what is done to disk now (and drop it from the page
                        // cache, as nothing reads it back), so that a final sync has little
                        // left to wait for. Advice only: its failure changes nothing.
                        out.flush()?;
                        let len = std::num::NonZeroU64::new(n - handed);
                        let _ = rustix::fs::fadvise(out.get_ref(), handed, len, Advice::DontNeed);
                        handed = n;
                    }
                }
                Ok(())
            })();
            drop(hash_tx);
            let digest = hasher
                .join()
                .map_err(|_| io::Error::other("the bundle's hasher panicked"))?;
            wrote?;
            let file = out.into_inner().map_err(|e| e.into_error())?;
            Ok((file, digest, n))
        });
        Sink {
            buf: Vec::with_capacity(CHUNK),
            tx: Some(tx),
            spent,
            thread: Some(thread),
        }
    }

    fn send(&mut self) -> io::Result<()> {
        let next = (self.spent.try_recv()).unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        let chunk = std::mem::replace(&mut self.buf, next);
        match &self.tx {
            Some(tx) if tx.send(Arc::new(chunk)).is_ok() => Ok(()),
            // The thread stopped on an error, which `finish` returns.
            _ => Err(io::Error::other("the bundle writer stopped")),
        }
    }

    /// Writes what is buffered, waits for the thread and returns the file (flushed, not
    /// synced), the SHA-256 of every byte written and their count.
    pub fn finish(mut self) -> io::Result<Written> {
        let sent = if self.buf.is_empty() {
            Ok(())
        } else {
            self.send()
        };
        drop(self.tx.take());
        let thread = self
            .thread
            .take()
            .ok_or_else(|| io::Error::other("finished"))?;
        let written = thread
            .join()
            .map_err(|_| io::Error::other("the bundle writer panicked"))?;
        sent.and(written)
    }
}

impl Write for Sink {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = CHUNK - self.buf.len();
        let n = data.len().min(room);
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == CHUNK {
            self.send()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(()) // `finish` writes everything; a flush on the way need not wait
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek};

    #[test]
    fn the_digest_and_the_file_hold_every_byte_in_order() {
        let file = tempfile::tempfile().unwrap();
        let mut sink = Sink::new(file, true);
        let data: Vec<u8> = (0..3 * CHUNK + 17).map(|i| (i * 7 % 251) as u8).collect();
        for piece in data.chunks(1000) {
            sink.write_all(piece).unwrap();
        }
        let (mut file, digest, n) = sink.finish().unwrap();
        assert_eq!(n, data.len() as u64);
        assert_eq!(digest, Sha256Digest::of_bytes(&data));
        let mut back = Vec::new();
        file.rewind().unwrap();
        file.read_to_end(&mut back).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn a_write_error_is_the_error_finish_returns() {
        let file = File::open("/dev/null").unwrap(); // read-only: every write fails
        let mut sink = Sink::new(file, false);
        let data = vec![1u8; 4 * CHUNK];
        let wrote = sink.write_all(&data);
        let finished = sink.finish();
        assert!(finished.is_err(), "{finished:?}");
        let _ = wrote; // may or may not have seen the thread stop yet
    }
}
