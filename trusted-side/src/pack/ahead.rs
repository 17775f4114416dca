//! The cached groups' bytes, read and checked ahead: a thread reads the groups of the cache
//! entry a pack starts from, in the entry's order, and checks each against its SHA-256 while
//! the tree is listed and the files selected; the bundle's writer takes them in that order.
//! On an incremental pack this moves most of the entry's reading and hashing to a core that
//! would otherwise wait for the selection.
//!
//! Guards against: bytes used that do not match their digest (a group that fails its check,
//! or cannot be read, is handed over as a miss: the writer rebuilds it from the repository,
//! its files scanned again), a bundle held in memory (at most [`AHEAD_BYTES`] read and not
//! yet taken; a larger group waits until nothing else is held), reading what the pack will not
//! use (once the writer says which groups it reuses, the others are skipped), a group asked
//! for out of order (groups whose files were all left out share one digest, so the writer
//! may ask for one again: it is read then, checked the same way), and a reader left running
//! (dropping [`Ahead`] stops and joins it).

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use airlock_core::digest::Sha256Digest;

/// Bytes read ahead and not yet taken, at most.
pub const AHEAD_BYTES: u64 = 32 * 1024 * 1024;

/// Where one group's bytes are in the entry file, and their digest.
pub struct Span {
    /// Offset in the file.
    pub at: u64,
    /// Length.
    pub len: u64,
    /// SHA-256 of the bytes.
    pub sha256: Sha256Digest,
}

/// The reader of an entry's groups, and what it has read.
pub struct Ahead {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// For a group asked for after the reader passed it.
    file: Arc<File>,
    spans: Arc<Vec<Span>>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Groups read, in entry order: index, length, bytes (`None`: failed its check).
    ready: VecDeque<(usize, u64, Option<Vec<u8>>)>,
    /// Bytes in `ready`.
    held: u64,
    /// The groups the writer will take (`None`: not said yet, read them all).
    wanted: Option<Vec<bool>>,
    /// The reader has read every group it will.
    done: bool,
    /// The writer is gone.
    stop: bool,
}

impl Shared {
    fn lock(&self) -> Option<MutexGuard<'_, State>> {
        self.state.lock().ok()
    }
}

impl Ahead {
    /// Starts reading `spans` of `file`, in order.
    pub fn start(file: File, spans: Vec<Span>) -> Ahead {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let (file, spans) = (Arc::new(file), Arc::new(spans));
        let theirs = (Arc::clone(&shared), Arc::clone(&file), Arc::clone(&spans));
        let thread = std::thread::spawn(move || read_all(&theirs.0, &theirs.1, &theirs.2));
        Ahead {
            shared,
            thread: Some(thread),
            file,
            spans,
        }
    }

    /// Says which groups will be taken (by index in the entry): the others are not read.
    pub fn want(&self, wanted: Vec<bool>) {
        if let Some(mut s) = self.shared.lock() {
            s.wanted = Some(wanted);
        }
        self.shared.changed.notify_all();
    }

    /// The checked bytes of group `index` (quickest when indexes asked for grow). `None`: the
    /// group failed its check or could not be read (rebuild it).
    pub fn take(&self, index: usize) -> Option<Vec<u8>> {
        let mut s = self.shared.lock()?;
        loop {
            match s.ready.front() {
                Some(&(i, len, _)) if i <= index => {
                    let (_, _, bytes) = s.ready.pop_front()?;
                    s.held = s.held.saturating_sub(len);
                    self.shared.changed.notify_all();
                    if i == index {
                        return bytes;
                    }
                }
                // Passed already (taken, or skipped as unwanted): read it now.
                Some(_) => break,
                None if s.done => break,
                None => s = self.shared.changed.wait(s).ok()?,
            }
        }
        drop(s);
        read_checked(&self.file, self.spans.get(index)?)
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        if let Some(mut s) = self.shared.lock() {
            s.stop = true;
        }
        self.shared.changed.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn read_all(shared: &Shared, file: &File, spans: &[Span]) {
    for (i, span) in spans.iter().enumerate() {
        {
            let Some(mut s) = shared.lock() else { return };
            while !s.stop && s.held > 0 && s.held.saturating_add(span.len) > AHEAD_BYTES {
                s = match shared.changed.wait(s) {
                    Ok(s) => s,
                    Err(_) => return,
                };
            }
            if s.stop {
                return;
            }
            if s.wanted
                .as_ref()
                .is_some_and(|w| !w.get(i).copied().unwrap_or(false))
            {
                continue;
            }
        }
        let bytes = read_checked(file, span);
        let Some(mut s) = shared.lock() else { return };
        s.held = s.held.saturating_add(span.len);
        s.ready.push_back((i, span.len, bytes));
        shared.changed.notify_all();
    }
    if let Some(mut s) = shared.lock() {
        s.done = true;
    }
    shared.changed.notify_all();
}

/// The span's bytes, if they can be read and match their SHA-256.
fn read_checked(file: &File, span: &Span) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; usize::try_from(span.len).ok()?];
    file.read_exact_at(&mut buf, span.at).ok()?;
    (Sha256Digest::of_bytes(&buf) == span.sha256).then_some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_of(groups: &[&[u8]]) -> (tempfile::NamedTempFile, Vec<Span>) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let mut spans = Vec::new();
        let mut at = 0;
        for g in groups {
            f.write_all(g).unwrap();
            spans.push(Span {
                at,
                len: g.len() as u64,
                sha256: Sha256Digest::of_bytes(g),
            });
            at += g.len() as u64;
        }
        (f, spans)
    }

    #[test]
    fn groups_come_in_order_checked_and_a_changed_one_is_a_miss() {
        let (f, mut spans) = file_of(&[b"one", b"two", b"three", b"four"]);
        spans[2].sha256 = Sha256Digest::of_bytes(b"other");
        let ahead = Ahead::start(f.reopen().unwrap(), spans);
        assert_eq!(ahead.take(0).as_deref(), Some(&b"one"[..]));
        // Group 1 is passed over; group 2 fails its check; group 3 is read.
        assert_eq!(ahead.take(2), None);
        assert_eq!(ahead.take(3).as_deref(), Some(&b"four"[..]));
        assert_eq!(ahead.take(4), None, "past the end");
        // Asked for again, or after the reader passed it: read then, checked the same way.
        assert_eq!(ahead.take(0).as_deref(), Some(&b"one"[..]));
        assert_eq!(ahead.take(1).as_deref(), Some(&b"two"[..]));
        assert_eq!(ahead.take(2), None);
    }

    #[test]
    fn unwanted_groups_are_skipped_and_a_truncated_file_is_a_miss() {
        let (f, spans) = file_of(&[b"aaaa", b"bbbb", b"cccc"]);
        f.as_file().set_len(10).unwrap(); // the last group is cut short
        let ahead = Ahead::start(f.reopen().unwrap(), spans);
        ahead.want(vec![false, true, true]);
        assert_eq!(ahead.take(1).as_deref(), Some(&b"bbbb"[..]));
        assert_eq!(ahead.take(2), None);
        // Skipped as unwanted, then asked for: read then.
        assert_eq!(ahead.take(0).as_deref(), Some(&b"aaaa"[..]));
    }

    #[test]
    fn the_bytes_held_stay_under_the_bound_and_a_dropped_reader_stops() {
        let big = vec![7u8; (AHEAD_BYTES / 3 + 1) as usize];
        let groups: Vec<&[u8]> = (0..8).map(|_| big.as_slice()).collect();
        let (f, spans) = file_of(&groups);
        let ahead = Ahead::start(f.reopen().unwrap(), spans);
        std::thread::sleep(std::time::Duration::from_millis(200));
        let held = ahead.shared.lock().unwrap().held;
        assert!(held > 0 && held <= AHEAD_BYTES, "{held}");
        assert_eq!(ahead.take(0).map(|b| b.len()), Some(big.len()));
        drop(ahead); // joins the reader, which waits on the bound
    }
}
