//! Collects the generator's review comments (the `$AIRLOCK_COMMENTS` contract) into the
//! artifact's `comments.jsonl` member.
//!
//! The generator may write JSON Lines to the file `$AIRLOCK_COMMENTS` names (in its private
//! tmp) and to `.airlock/comments.jsonl` in its working directory (the easier place for an
//! agent that writes files where it works). The first is read first. The workdir file is kept
//! out of the diff (`run.rs` leaves that one new path out); `.airlock/` is never packed.
//!
//! Guards against: a comment file that is a link, a FIFO, a device or a directory (never
//! opened: `O_NOFOLLOW | O_NONBLOCK`, and `.airlock` itself must be a directory, not a link),
//! one larger than [`MAX_COMMENTS_BYTES`] (refused whole, never read past the cap), and
//! malformed, oversized or too many comments (each refused by its line and counted: the rest
//! survive; `airlock_core::format::parse_comments`).
//! On `Ok`: the member file holds only well-formed comments, re-encoded one way.
//! Does not check: anchors or secrets; the gate does (`trusted-side/src/gate/comments.rs`).

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use airlock_core::format::{parse_comments, to_jsonl, Comment, MAX_COMMENTS, MAX_COMMENTS_BYTES};
use anyhow::{Context, Result};

/// The variable naming the comments file.
pub const COMMENTS_ENV: &str = "AIRLOCK_COMMENTS";
/// The comments file's name in the generator's private tmp.
pub const COMMENTS_FILE: &str = "airlock-comments.jsonl";
/// The comments file in the workdir, relative to it.
pub const WORKDIR_COMMENTS: &str = ".airlock/comments.jsonl";

/// What was collected.
#[derive(Debug, Default)]
pub struct Collected {
    /// The member file (in the run directory), when any comment was kept.
    pub member: Option<PathBuf>,
    /// Comments in it.
    pub kept: u64,
    /// Comments refused (or whole files refused, one each).
    pub refused: u64,
}

/// Reads both comment files, validates every comment and writes the kept ones to
/// `run_dir/comments.jsonl`. With `readable` false (the trusted side does not read the
/// member: its token does not name `airlock.comments/v1`), nothing is written and every
/// comment counts as refused.
pub fn collect(tmp: &Path, work: &Path, run_dir: &Path, readable: bool) -> Result<Collected> {
    let mut out = Collected::default();
    let mut kept: Vec<Comment> = Vec::new();
    let sources = [
        (tmp.join(COMMENTS_FILE), "$AIRLOCK_COMMENTS"),
        (work.join(WORKDIR_COMMENTS), WORKDIR_COMMENTS),
    ];
    for (path, name) in &sources {
        if name == &WORKDIR_COMMENTS {
            let dir = work.join(".airlock");
            if std::fs::symlink_metadata(&dir).is_err() {
                continue;
            }
            if !plain_dir(&dir) {
                tracing::warn!("comments: .airlock in the workdir is not a directory (a link?); not entered (comments.not-file)");
                out.refused += 1;
                continue;
            }
        }
        let bytes = match read_capped(path) {
            Ok(Some(b)) => b,
            Ok(None) => continue,
            Err(why) => {
                tracing::warn!("comments file {name}: {why}; refused (comments.not-file)");
                out.refused += 1;
                continue;
            }
        };
        let parsed = parse_comments(&bytes);
        for e in &parsed.refused {
            tracing::warn!("{name}: {e}");
        }
        out.refused += parsed.refused.iter().map(refused_count).sum::<u64>();
        for (_, c) in parsed.kept {
            if kept.len() >= MAX_COMMENTS {
                out.refused += 1;
            } else {
                kept.push(c);
            }
        }
    }
    if !readable {
        if !kept.is_empty() {
            tracing::warn!(
                "{} comment(s) left out: the trusted side does not read comments (its token does not name airlock.comments/v1)",
                kept.len()
            );
        }
        out.refused += kept.len() as u64;
        return Ok(out);
    }
    if kept.is_empty() {
        return Ok(out);
    }
    let member = run_dir.join("comments.jsonl");
    std::fs::write(&member, to_jsonl(&kept))
        .with_context(|| format!("{}: cannot write", member.display()))?;
    out.kept = kept.len() as u64;
    out.member = Some(member);
    Ok(out)
}

/// The `.gitignore` filter, plus the generator's comments file in the workdir (never packed:
/// `.airlock/` is on the deny-list), which is read as comments, never diffed.
pub fn without_comments(
    rules: Option<airlock_core::diff::IgnoreNew>,
) -> airlock_core::diff::IgnoreNew {
    airlock_core::diff::IgnoreNew(std::sync::Arc::new(move |path: &str, dir: bool| {
        (!dir && path == WORKDIR_COMMENTS) || rules.as_ref().is_some_and(|r| (r.0)(path, dir))
    }))
}

/// How many comments one refusal stands for (`comments.too-many` names a count).
fn refused_count(e: &airlock_core::format::CommentError) -> u64 {
    if e.rule == "comments.too-many" {
        e.reason
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1)
    } else {
        1
    }
}

/// Whether `p` is a directory itself (not a link to one).
fn plain_dir(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_dir())
}

/// The file's bytes; `Ok(None)` when it does not exist; `Err` (why) when it is not a regular
/// file or is over the cap. A link is never followed.
fn read_capped(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let file = match File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err("is a symbolic link".into()),
        Err(e) => return Err(format!("cannot open: {e}")),
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("is not a regular file".into());
    }
    if meta.len() > MAX_COMMENTS_BYTES {
        return Err(format!(
            "over its cap: limit {MAX_COMMENTS_BYTES} bytes, seen {}",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_COMMENTS_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_COMMENTS_BYTES {
        return Err(format!("over its cap: limit {MAX_COMMENTS_BYTES} bytes"));
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = r#"{"path":"a.txt","line":1,"severity":"note","body":"ok"}"#;

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let (tmp, work, run) = (
            d.path().join("tmp"),
            d.path().join("work"),
            d.path().join("run"),
        );
        for p in [&tmp, &work, &run] {
            std::fs::create_dir(p).unwrap();
        }
        (d, tmp, work, run)
    }

    #[test]
    fn both_files_are_read_and_bad_lines_counted() {
        let (_d, tmp, work, run) = dirs();
        std::fs::write(tmp.join(COMMENTS_FILE), format!("{ONE}\nnot json\n")).unwrap();
        std::fs::create_dir(work.join(".airlock")).unwrap();
        std::fs::write(work.join(WORKDIR_COMMENTS), format!("{ONE}\n")).unwrap();
        let c = collect(&tmp, &work, &run, true).unwrap();
        assert_eq!((c.kept, c.refused), (2, 1));
        let member = std::fs::read(c.member.unwrap()).unwrap();
        assert_eq!(parse_comments(&member).kept.len(), 2);
    }

    #[test]
    fn a_link_is_refused_unread_and_a_linked_directory_is_not_entered() {
        let (_d, tmp, work, run) = dirs();
        let outside = run.join("outside.jsonl");
        std::fs::write(&outside, format!("{ONE}\n")).unwrap();
        std::os::unix::fs::symlink(&outside, tmp.join(COMMENTS_FILE)).unwrap();
        std::os::unix::fs::symlink(&run, work.join(".airlock")).unwrap();
        std::fs::write(run.join("comments.jsonl"), ONE).unwrap();
        let c = collect(&tmp, &work, &run, true).unwrap();
        assert_eq!((c.kept, c.refused), (0, 2));
        assert!(c.member.is_none());
    }

    #[test]
    fn ten_thousand_comments_keep_the_first_thousand() {
        let (_d, tmp, work, run) = dirs();
        std::fs::write(tmp.join(COMMENTS_FILE), vec![ONE; 10_000].join("\n")).unwrap();
        let c = collect(&tmp, &work, &run, true).unwrap();
        assert_eq!((c.kept, c.refused), (MAX_COMMENTS as u64, 9000));
    }

    #[test]
    fn a_trusted_side_that_does_not_read_comments_gets_no_member() {
        let (_d, tmp, work, run) = dirs();
        std::fs::write(tmp.join(COMMENTS_FILE), ONE).unwrap();
        let c = collect(&tmp, &work, &run, false).unwrap();
        assert_eq!((c.kept, c.refused, c.member.is_none()), (0, 1, true));
    }
}
