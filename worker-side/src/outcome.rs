//! How a run ended, said where the operator looks: one sentence with the generator's exit in
//! words, the last lines of `generator.log` when it failed or changed nothing, and the
//! worker's exit code.
//!
//! Exit codes of `airlock-worker run` (documented in `--help` and docs/GENERATORS.md):
//! 0 artifact dropped (the generator exited 0 and changed something), 1 error or refusal
//! before the generator ran (nothing dropped), 2 usage, 3 the generator failed (non-zero
//! exit, killed by a signal or at the wall clock; a partial artifact was dropped), 4 refused:
//! the job already has a final artifact (nothing ran), 5 the generator exited 0 but changed
//! nothing (an empty artifact was dropped).
//!
//! Guards against: a failed run that looks like a success (exit 0, "artifact dropped"), the
//! cause sitting only inside the artifact, and Rust debug text in front of an operator. The
//! log's tail is the generator's own output: every control, bidi or invisible character is
//! shown as a `<U+XXXX>` token and lines are cut ([`airlock_core::text::terminal`]), so it
//! cannot rewrite or reorder the operator's terminal.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use airlock_core::format::{ExitInfo, ExitKind};

/// The generator exited 0 and changed something.
pub const EXIT_OK: u8 = 0;
/// An error, or a refusal before the generator ran; nothing dropped.
pub const EXIT_ERROR: u8 = 1;
/// The generator failed; a partial artifact was dropped.
pub const EXIT_GENERATOR_FAILED: u8 = 3;
/// The job already has a final artifact; nothing ran.
pub const EXIT_FINISHED: u8 = 4;
/// The generator exited 0 and changed nothing; an empty artifact was dropped.
pub const EXIT_NO_CHANGE: u8 = 5;

/// Lines of `generator.log` shown.
const TAIL_LINES: usize = 20;
/// Bytes read from the end of `generator.log`.
const TAIL_BYTES: u64 = 8 * 1024;
/// Characters kept of one shown line.
const LINE_CHARS: usize = 300;

/// What a finished run dropped, for the operator.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The job.
    pub job: String,
    /// How the generator ended.
    pub exit: ExitInfo,
    /// The request's wall clock, seconds.
    pub wall_clock_secs: u64,
    /// Limits hit.
    pub limits_hit: Vec<String>,
    /// Files the patch changes.
    pub files_changed: u64,
    /// Review comments in the artifact (a run with comments changed something to review).
    pub comments: u64,
    /// Files a review job's generator changed, left out of its artifact.
    pub review_edits: u64,
    /// New paths left out as `.gitignore`d.
    pub ignored: u64,
    /// Whether the packet says partial.
    pub partial: bool,
    /// The last lines of `generator.log`.
    pub log_tail: Vec<String>,
    /// Egress the proxy refused: (destination, rule id), as logged in the packet.
    pub egress_refused: Vec<(String, String)>,
}

/// Refused destinations listed in the summary.
const REFUSED_SHOWN: usize = 10;

impl RunOutcome {
    fn failed(&self) -> bool {
        !(self.exit.kind == ExitKind::Exited && self.exit.code == Some(0))
    }

    /// The worker's exit code for this run.
    pub fn code(&self) -> u8 {
        if self.failed() {
            EXIT_GENERATOR_FAILED
        } else if self.files_changed == 0 && self.comments == 0 && self.review_edits == 0 {
            EXIT_NO_CHANGE
        } else {
            EXIT_OK
        }
    }

    /// What to print on stderr: a sentence, then the log's tail when the run failed or
    /// changed nothing.
    pub fn message(&self) -> String {
        let exit = exit_in_words(&self.exit, self.wall_clock_secs);
        let limits = if self.limits_hit.is_empty() {
            String::new()
        } else {
            format!("; limits hit: {}", self.limits_hit.join(", "))
        };
        let ignored = if self.ignored > 0 {
            format!(
                "; {} new path{} left out as .gitignored",
                self.ignored,
                if self.ignored == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        let job = &self.job;
        let mut out = match self.code() {
            EXIT_GENERATOR_FAILED => format!(
                "job {job}: the generator {exit}{limits}; a partial artifact was dropped ({} file{} changed){ignored}",
                self.files_changed,
                if self.files_changed == 1 { "" } else { "s" }
            ),
            EXIT_NO_CHANGE => format!(
                "job {job}: the generator {exit} but changed nothing{ignored}{limits}; an empty artifact was dropped"
            ),
            _ => format!(
                "job {job}: artifact dropped{} ({} file{} changed{}){ignored}{limits}",
                if self.partial { " (partial)" } else { "" },
                self.files_changed,
                if self.files_changed == 1 { "" } else { "s" },
                match self.comments {
                    0 => String::new(),
                    n => format!(", {n} comment{}", if n == 1 { "" } else { "s" }),
                }
            ) + &match self.review_edits {
                0 => String::new(),
                n => format!("; a review job may not change files: {n} edit(s) left out, the gate will refuse it (review-edited-files)"),
            },
        };
        if self.code() != EXIT_OK && !self.egress_refused.is_empty() {
            // A refused model server is the usual cause of a failed agent run: say so here,
            // not only in the packet.
            let mut seen: Vec<&(String, String)> = Vec::new();
            for r in &self.egress_refused {
                if !seen.contains(&r) {
                    seen.push(r);
                }
            }
            out.push_str("\negress refused:");
            for (dest, rule) in seen.iter().take(REFUSED_SHOWN) {
                out.push_str(&format!("\n  {} ({})", shown_line(dest), shown_line(rule)));
            }
            if seen.len() > REFUSED_SHOWN {
                out.push_str(&format!("\n  … {} more", seen.len() - REFUSED_SHOWN));
            }
            out.push_str("\n  (a model server on this host or network needs --allow-local HOST:PORT, HOST as the generator names it; a public one, the job's --egress)");
        }
        if self.code() != EXIT_OK {
            if self.log_tail.is_empty() {
                out.push_str("\ngenerator.log is empty");
            } else {
                out.push_str("\nlast lines of generator.log:");
                for l in &self.log_tail {
                    out.push_str("\n  | ");
                    out.push_str(l);
                }
            }
        }
        out
    }
}

/// A destination or rule from the proxy's log, printable ASCII only (the proxy parsed it,
/// but it is the generator's text), at most 300 characters.
fn shown_line(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_graphic())
        .take(300)
        .collect()
}

/// The generator's end in words: "exited with status 1", "was killed by signal 9
/// (SIGKILL)", "was killed at the 900 s wall clock".
pub fn exit_in_words(exit: &ExitInfo, wall_clock_secs: u64) -> String {
    match (&exit.kind, exit.code) {
        (ExitKind::Exited, Some(c)) => format!("exited with status {c}"),
        (ExitKind::Signaled, Some(s)) => match signal_name(s) {
            Some(n) => format!("was killed by signal {s} ({n})"),
            None => format!("was killed by signal {s}"),
        },
        (ExitKind::Timeout, _) => format!("was killed at the {wall_clock_secs} s wall clock"),
        (ExitKind::Running, _) => "was still running".to_owned(),
        (ExitKind::NotStarted, _) => "never started".to_owned(),
        _ => "ended without a status".to_owned(),
    }
}

fn signal_name(s: i32) -> Option<&'static str> {
    Some(match s {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        31 => "SIGSYS",
        _ => return None,
    })
}

/// The last lines of `log` (at most `TAIL_LINES` from its last `TAIL_BYTES`), made safe
/// to print: invalid UTF-8 replaced, control characters but tab dropped, long lines cut.
pub fn log_tail(log: &Path) -> Vec<String> {
    let Ok(mut f) = std::fs::File::open(log) else {
        return Vec::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let from = len.saturating_sub(TAIL_BYTES);
    if f.seek(SeekFrom::Start(from)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    if f.take(TAIL_BYTES).read_to_end(&mut buf).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let mut lines: Vec<&str> = text.lines().collect();
    if from > 0 && !lines.is_empty() {
        lines.remove(0); // cut mid-line
    }
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let start = lines.len().saturating_sub(TAIL_LINES);
    lines[start..]
        .iter()
        .map(|l| airlock_core::text::terminal(l, LINE_CHARS))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(kind: ExitKind, code: Option<i32>, files: u64) -> RunOutcome {
        RunOutcome {
            job: "J".into(),
            exit: ExitInfo { kind, code },
            wall_clock_secs: 900,
            limits_hit: Vec::new(),
            comments: 0,
            review_edits: 0,
            files_changed: files,
            ignored: 0,
            partial: false,
            log_tail: vec!["Traceback".into(), "PermissionError: x".into()],
            egress_refused: Vec::new(),
        }
    }

    #[test]
    fn a_failed_run_lists_the_egress_refused_once_each() {
        let mut o = outcome(ExitKind::Exited, Some(1), 0);
        o.egress_refused = vec![
            ("localhost:18080".into(), "egress.method".into()),
            ("localhost:18080".into(), "egress.method".into()),
            ("a\x1b[2J:443".into(), "egress.not-allowed".into()),
        ];
        let m = o.message();
        assert!(
            m.contains("egress refused:\n  localhost:18080 (egress.method)\n  a[2J:443 (egress.not-allowed)\n"),
            "{m}"
        );
        assert_eq!(m.matches("localhost:18080").count(), 1, "{m}");
        assert!(
            m.contains("--allow-local HOST:PORT") && !m.contains('\x1b'),
            "{m}"
        );
        // A run that went well does not list them.
        let mut ok = outcome(ExitKind::Exited, Some(0), 1);
        ok.egress_refused = o.egress_refused.clone();
        assert!(!ok.message().contains("egress refused"));
    }

    #[test]
    fn exits_read_as_words_and_map_to_documented_codes() {
        let o = outcome(ExitKind::Exited, Some(1), 0);
        assert_eq!(o.code(), EXIT_GENERATOR_FAILED);
        let m = o.message();
        assert!(m.contains("exited with status 1"), "{m}");
        assert!(m.contains("  | PermissionError: x"), "{m}");
        assert!(
            !m.contains("Some(") && !m.contains("Exited"),
            "debug text: {m}"
        );
        let o = outcome(ExitKind::Timeout, None, 2);
        assert!(o.message().contains("killed at the 900 s wall clock"));
        assert_eq!(o.code(), EXIT_GENERATOR_FAILED);
        let o = outcome(ExitKind::Signaled, Some(9), 0);
        assert!(o.message().contains("killed by signal 9 (SIGKILL)"));
        let o = outcome(ExitKind::Exited, Some(0), 0);
        assert_eq!(o.code(), EXIT_NO_CHANGE);
        assert!(o.message().contains("changed nothing"));
        let o = outcome(ExitKind::Exited, Some(0), 3);
        assert_eq!(o.code(), EXIT_OK);
        assert!(!o.message().contains("generator.log"));
    }

    #[test]
    fn tail_is_the_last_lines_with_control_and_bidi_characters_marked() {
        let t = tempfile::tempdir().unwrap();
        let log = t.path().join("generator.log");
        let mut text = String::new();
        for i in 0..100 {
            text.push_str(&format!("line {i}\n"));
        }
        text.push_str("evil \x1b[2Jclear\u{202e}txt\n\n");
        std::fs::write(&log, text).unwrap();
        let tail = log_tail(&log);
        assert_eq!(tail.len(), TAIL_LINES);
        assert_eq!(tail.last().unwrap(), "evil <U+001B>[2Jclear<U+202E>txt");
        assert_eq!(tail[0], "line 81");
        assert!(log_tail(&t.path().join("missing")).is_empty());
    }
}
