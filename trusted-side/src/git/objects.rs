//! Reading objects by name with one `git cat-file --batch`: `<revision>:<path>`, `<oid>`,
//! `<revision>^{commit}`, one request per line on stdin.
//!
//! Guards against: option injection (requests go in on stdin, never as arguments), a request
//! that would read as two (one holding a newline is answered as missing without asking), and
//! large objects (at most `max` bytes of each are kept; the rest is read and dropped, never
//! held, whatever size git announces).
//! Does not check: what the objects hold; callers read them as data.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;

use super::{stderr_lines, Git, GitError};

/// One object `git cat-file --batch` answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// Its type: `blob`, `tree`, `commit` or `tag`.
    pub kind: String,
    /// Its full size in bytes.
    pub size: u64,
    /// Its first `max` bytes.
    pub data: Vec<u8>,
}

impl Git {
    /// Answers each of `requests` with its object (`None`: no such object), keeping at most
    /// `max` bytes of each. `Err` when git cannot run or refuses (not a repository).
    pub fn cat_file(&self, requests: &[&str], max: u64) -> Result<Vec<Option<Object>>, GitError> {
        let asked: Vec<&str> = requests
            .iter()
            .copied()
            .filter(|r| !r.contains('\n'))
            .collect();
        if asked.is_empty() {
            return Ok(vec![None; requests.len()]);
        }
        let run_error = |source| GitError::Run {
            command: "cat-file".to_owned(),
            source,
        };
        let mut child = self
            .command()
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(run_error)?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(GitError::Failed("git cat-file: no pipes".to_owned()));
        };
        let asked_count = asked.len();
        let answers = std::thread::scope(|s| {
            // Requests are written while answers are read, so neither pipe can fill up.
            s.spawn(move || {
                for r in &asked {
                    if writeln!(stdin, "{r}").is_err() {
                        break;
                    }
                }
            });
            let mut out = BufReader::new(stdout);
            let mut answers = Vec::with_capacity(asked_count);
            for _ in 0..asked_count {
                match next_answer(&mut out, max) {
                    Some(a) => answers.push(a),
                    None => break,
                }
            }
            answers
        });
        let done = child.wait_with_output().map_err(run_error)?;
        if answers.len() != asked_count {
            return Err(GitError::Failed(stderr_lines(&done.stderr)));
        }
        let mut answers = answers.into_iter();
        Ok(requests
            .iter()
            .map(|r| match r.contains('\n') {
                true => None,
                false => answers.next().flatten(),
            })
            .collect())
    }
}

/// Reads one answer: `<oid> <type> <size>\n<content>\n`, or `<request> missing\n` (also
/// `ambiguous`). `None` when the stream ends or breaks the format.
fn next_answer(out: &mut impl BufRead, max: u64) -> Option<Option<Object>> {
    let mut header = String::new();
    if out.read_line(&mut header).ok()? == 0 {
        return None;
    }
    let header = header.strip_suffix('\n')?;
    let mut fields = header.rsplitn(3, ' ');
    let (last, kind, oid) = (fields.next()?, fields.next(), fields.next());
    let (Some(kind), Some(oid), Ok(size)) = (kind, oid, last.parse::<u64>()) else {
        return matches!(last, "missing" | "ambiguous").then_some(None);
    };
    if !super::is_full_oid(oid) {
        return None;
    }
    let keep = size.min(max);
    let mut data = Vec::with_capacity(usize::try_from(keep).ok()?);
    out.take(keep).read_to_end(&mut data).ok()?;
    // The rest of the content and the record's newline are read and dropped.
    let rest = std::io::copy(&mut out.take(size - keep + 1), &mut std::io::sink()).ok()?;
    (data.len() as u64 == keep && rest == size - keep + 1).then_some(Some(Object {
        kind: kind.to_owned(),
        size,
        data,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::test_git::git;

    #[test]
    fn answers_by_name_caps_sizes_and_stays_in_step() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q"]);
        std::fs::create_dir_all(d.join("dir with space")).unwrap();
        std::fs::write(d.join("dir with space/a b.txt"), "committed\n").unwrap();
        std::fs::write(d.join("big.txt"), vec![b'x'; 100]).unwrap();
        git(d, &["add", "-A"]);
        git(d, &["commit", "-qm", "x"]);
        let head = git(d, &["rev-parse", "HEAD"]);
        let requests = [
            format!("{head}^{{commit}}"),
            format!("{head}:big.txt"),
            format!("{head}:missing file"),
            format!("{head}:a\nb"),
            format!("{head}:dir with space"),
            format!("{head}:dir with space/a b.txt"),
            "--help".to_owned(),
        ];
        let requests: Vec<&str> = requests.iter().map(String::as_str).collect();
        let got = Git::new(d).cat_file(&requests, 10).unwrap();
        assert_eq!(got.len(), requests.len());
        assert_eq!(got[0].as_ref().unwrap().kind, "commit");
        let big = got[1].as_ref().unwrap();
        assert_eq!((big.kind.as_str(), big.size), ("blob", 100));
        assert_eq!(big.data, vec![b'x'; 10], "kept at most max bytes");
        assert_eq!(got[2], None);
        assert_eq!(got[3], None, "a request holding a newline is not asked");
        assert_eq!(got[4].as_ref().unwrap().kind, "tree");
        assert_eq!(got[5].as_ref().unwrap().data, b"committed\n");
        assert_eq!(got[6], None, "a request is never an option");
    }

    #[test]
    fn outside_a_repository_it_is_an_error_with_gits_message() {
        let dir = tempfile::tempdir().unwrap();
        let err = Git::new(dir.path())
            .with_env(
                "GIT_CEILING_DIRECTORIES",
                dir.path().parent().unwrap().display().to_string(),
            )
            .cat_file(&["HEAD"], 10)
            .unwrap_err();
        assert!(err.to_string().contains("not a git repository"), "{err}");
    }
}
