//! How the generator's run ended, for people: the exit in words and the tail of
//! `generator.log`, shown by `fetch` and the gate's reports when a run failed.
//!
//! Guards against: worker-written log text reaching a terminal or a pull request as anything
//! but inert text (every line goes through `text::terminal`: control and bidi characters
//! marked, length capped), a secret's value in it being published (lines a scanner finding
//! covers are masked, `report::mask`), and a huge log costing memory (the fetch keeps at most
//! [`MAX_TAIL_BYTES`] of it).
//! Does not check: that the log is true; it is the generator's own output, a claim.

use airlock_core::format::{ExitInfo, ExitKind, Packet};
use serde::Serialize;

use airlock_core::text;

/// Most bytes kept from the end of `generator.log`.
pub const MAX_TAIL_BYTES: usize = 8 * 1024;
/// Most lines shown.
pub const TAIL_LINES: usize = 20;

/// A failed run's account.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunAccount {
    /// The exit in words (`exited with status 1`, `killed at the 900 s wall clock`).
    pub exit: String,
    /// The last lines of `generator.log` (inert), oldest first; empty if there was none.
    pub log_tail: Vec<String>,
}

/// Whether the run failed in a way the operator should see the log for: the generator did
/// not exit 0, or it changed nothing.
pub fn failed(packet: &Packet) -> bool {
    let clean = packet.exit.kind == ExitKind::Exited && packet.exit.code == Some(0);
    !clean || packet.files_changed == 0
}

/// The exit in words, with the wall clock the job allowed.
pub fn exit_words(exit: &ExitInfo, wall_clock_secs: u64) -> String {
    match (&exit.kind, exit.code) {
        (ExitKind::Exited, Some(0)) => "exited with status 0".to_owned(),
        (ExitKind::Exited, Some(c)) => format!("exited with status {c}"),
        (ExitKind::Exited, None) => "exited".to_owned(),
        (ExitKind::Signaled, Some(s)) => format!("killed by signal {s}"),
        (ExitKind::Signaled, None) => "killed by a signal".to_owned(),
        (ExitKind::Timeout, _) => format!("killed at the {wall_clock_secs} s wall clock"),
        (ExitKind::Running, _) => "still running (checkpoint)".to_owned(),
        (ExitKind::NotStarted, _) => "never started".to_owned(),
    }
}

/// The last [`TAIL_LINES`] non-empty lines of `log` (already cut to its tail), inert.
pub fn tail_lines(log: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(log);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut tail: Vec<String> = lines[lines.len().saturating_sub(TAIL_LINES)..]
        .iter()
        .map(|l| (*l).to_owned())
        .collect();
    // A secret's value is never shown (`report::mask`): every output of the tail (fetch, the
    // gate's text, JSON and reports, show) gets the masked lines.
    match crate::report::mask::scanner() {
        Ok(scanner) => crate::report::mask::mask_lines(scanner, "generator.log", &mut tail),
        Err(_) => return vec!["[log tail withheld: the secret scanner did not start]".to_owned()],
    }
    tail.iter().map(|l| text::terminal(l, 400)).collect()
}

/// The account of a failed run (`None` when the run did not fail).
pub fn of(packet: &Packet, log_tail: Option<&[u8]>, wall_clock_secs: u64) -> Option<RunAccount> {
    failed(packet).then(|| RunAccount {
        exit: exit_words(&packet.exit, wall_clock_secs),
        log_tail: log_tail.map(tail_lines).unwrap_or_default(),
    })
}

/// Appends `data` to `tail`, keeping only its last [`MAX_TAIL_BYTES`].
pub fn keep_tail(tail: &mut Vec<u8>, data: &[u8]) {
    tail.extend_from_slice(data);
    if tail.len() > MAX_TAIL_BYTES {
        let cut = tail.len() - MAX_TAIL_BYTES;
        tail.drain(..cut);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_read_as_words() {
        let e = |kind, code| exit_words(&ExitInfo { kind, code }, 900);
        assert_eq!(e(ExitKind::Exited, Some(1)), "exited with status 1");
        assert_eq!(e(ExitKind::Timeout, None), "killed at the 900 s wall clock");
        assert_eq!(e(ExitKind::Signaled, Some(9)), "killed by signal 9");
    }

    #[test]
    fn the_tail_is_the_last_lines_made_inert_and_bounded() {
        let mut tail = Vec::new();
        for i in 0..5000 {
            keep_tail(&mut tail, format!("line {i}\n").as_bytes());
        }
        assert!(tail.len() <= MAX_TAIL_BYTES);
        let lines = tail_lines(&tail);
        assert_eq!(lines.len(), TAIL_LINES);
        assert_eq!(lines.last().map(String::as_str), Some("line 4999"));
        let lines = tail_lines(b"ok\n\x1b[31mred\x1b[0m\n");
        assert_eq!(lines[1], "<U+001B>[31mred<U+001B>[0m");
    }
}
