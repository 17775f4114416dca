//! The job's model key must not come back: the trusted side keeps the key it minted (in the
//! trusted home's job directory, 0600, beside the job's other evidence), looks for it and its common
//! encodings in every byte the worker returns (each artifact member: `generator.log`,
//! `packet.json` also re-serialised with its escapes undone, `patch.diff`, review text), and a
//! hit refuses the job (`model-key-leaked`) before anything from the artifact is shown,
//! recorded or published. When the job ends (the gate concluded, whatever the verdict) the
//! configured `[model_key] end` command is told, so the key can be revoked then. The kept copy
//! stays, so a later fetch or gate of the same job (`--md`, `--html`, a re-run) refuses it
//! again rather than publishing it.
//!
//! Guards against: a generator (or a prompt-injected agent) writing the key into its log or
//! its output, which `fetch`, `gate`, `--md`, `--html` and the ledger would then publish; the
//! key written base64 (standard or URL alphabet, at any byte alignment), hex (either case),
//! percent-encoded, reversed, or with its punctuation changed (each alphanumeric run of 16 or
//! more characters is searched alone). A refusal names the member and the encoding, never the
//! key.
//! Does not check: other transformations (compression, a cipher, a key split across lines);
//! the key's budget and short life (the minting command's contract) bound what escapes.

use std::io::Read;
use std::path::{Path, PathBuf};

use airlock_core::jobid::JobId;
use airlock_core::token::ModelKey;
use anyhow::{Context, Result};
use zeroize::Zeroizing;

/// Keys shorter than this are not searched (too many false hits on ordinary text).
const MIN_KEY_BYTES: usize = 8;
/// An alphanumeric run of the key this long is searched on its own (a key fragment).
const MIN_FRAGMENT_BYTES: usize = 16;

fn kept_path(home: &Path, job: &JobId) -> PathBuf {
    crate::config::job_dir(home, job).join("model-key")
}

/// Keeps the minted key in the trusted home (created new, 0600) for [`Needles::load`].
pub fn keep(home: &Path, job: &JobId, key: &ModelKey) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = kept_path(home, job);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create", dir.display()))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("{}: cannot create", path.display()))?;
    f.write_all(key.expose().as_bytes())
        .and_then(|()| f.sync_all())
        .with_context(|| format!("{}: cannot write", path.display()))
}

/// The key and its encodings, to find in worker output. No `Debug`; zeroized on drop.
pub struct Needles {
    list: Vec<(&'static str, Zeroizing<Vec<u8>>)>,
    longest: usize,
}

impl Needles {
    /// The needles of the key kept for `job`, if one was minted here.
    pub fn load(home: &Path, job: &JobId) -> Option<Needles> {
        let mut raw = Zeroizing::new(Vec::new());
        let mut f = std::fs::File::open(kept_path(home, job)).ok()?;
        f.by_ref()
            .take(airlock_core::token::MAX_MODEL_KEY_BYTES as u64)
            .read_to_end(&mut raw)
            .ok()?;
        Needles::of(&raw, &[job.as_str().as_bytes()])
    }

    /// The needles of `key`: raw, reversed, hex (both cases), percent-encoded, the part of its
    /// base64 (both alphabets) that does not depend on the bytes around it, at each of the
    /// three byte alignments, and each alphanumeric run of [`MIN_FRAGMENT_BYTES`] or more
    /// that is not part of a `public` value (a minting command may put the job id in the key;
    /// the job id is in every packet). `None` for a key too short to search.
    pub fn of(key: &[u8], public: &[&[u8]]) -> Option<Needles> {
        if key.len() < MIN_KEY_BYTES {
            return None;
        }
        let mut list: Vec<(&'static str, Zeroizing<Vec<u8>>)> = vec![
            ("raw", Zeroizing::new(key.to_vec())),
            (
                "reversed",
                Zeroizing::new(key.iter().rev().copied().collect()),
            ),
            ("hex", Zeroizing::new(hex::encode(key).into_bytes())),
            ("hex", Zeroizing::new(hex::encode_upper(key).into_bytes())),
            ("percent-encoded", Zeroizing::new(percent(key, false))),
            ("percent-encoded", Zeroizing::new(percent(key, true))),
        ];
        use base64::Engine as _;
        for (name, engine) in [
            ("base64", &base64::engine::general_purpose::STANDARD_NO_PAD),
            (
                "base64url",
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            ),
        ] {
            for lead in 0..3usize {
                let mut bytes = Zeroizing::new(vec![0u8; lead]);
                bytes.extend_from_slice(key);
                let enc = Zeroizing::new(engine.encode(&*bytes).into_bytes());
                // Characters holding bits of the lead bytes, and a last partial one.
                let skip = [0, 2, 3][lead];
                let cut = usize::from(bytes.len() % 3 != 0);
                let core = enc[skip..enc.len() - cut].to_vec();
                list.push((name, Zeroizing::new(core)));
            }
        }
        // Each long alphanumeric run of the key alone: the key with its punctuation changed
        // (`/` to `_` to fit a file name, `+` to `-`) still carries it.
        for run in key.split(|b| !b.is_ascii_alphanumeric()) {
            let is_public = public
                .iter()
                .any(|p| memchr::memmem::find(p, run).is_some());
            if run.len() >= MIN_FRAGMENT_BYTES && run.len() < key.len() && !is_public {
                list.push(("key fragment", Zeroizing::new(run.to_vec())));
            }
        }
        list.sort_by(|a, b| a.1.cmp(&b.1));
        list.dedup_by(|a, b| a.1 == b.1);
        // Longest first: a whole encoding is named before a fragment it contains.
        list.sort_by_key(|n| std::cmp::Reverse(n.1.len()));
        let longest = list.iter().map(|n| n.1.len()).max().unwrap_or(0);
        Some(Needles { list, longest })
    }

    /// A scanner for one worker-returned text (`member` names it in the refusal).
    pub fn scanner(&self, member: &str) -> Scanner<'_> {
        Scanner {
            needles: self,
            member: member.to_owned(),
            carry: Zeroizing::new(Vec::new()),
            found: None,
        }
    }

    /// The first encoding of the key found in `bytes`.
    pub fn find(&self, bytes: &[u8]) -> Option<&'static str> {
        self.list
            .iter()
            .find(|(_, n)| memchr::memmem::find(bytes, n).is_some())
            .map(|(name, _)| *name)
    }
}

fn percent(key: &[u8], lower: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() * 3);
    for &b in key {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else if lower {
            out.extend_from_slice(format!("%{b:02x}").as_bytes());
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    out
}

/// Looks for the key in a stream fed in chunks (a match across two chunks is found).
pub struct Scanner<'n> {
    needles: &'n Needles,
    member: String,
    carry: Zeroizing<Vec<u8>>,
    found: Option<&'static str>,
}

impl Scanner<'_> {
    /// Feeds the next chunk.
    pub fn feed(&mut self, chunk: &[u8]) {
        if self.found.is_some() || chunk.is_empty() {
            return;
        }
        self.carry.extend_from_slice(chunk);
        self.found = self.needles.find(&self.carry);
        let keep = self.needles.longest.saturating_sub(1);
        if self.carry.len() > keep {
            let drop = self.carry.len() - keep;
            self.carry.drain(..drop);
        }
    }

    /// The refusal detail, when the key was found: member and encoding, never the key.
    pub fn finding(&self) -> Option<String> {
        self.found.map(|enc| {
            format!(
                "{}: holds the job's model key ({enc}) (model-key-leaked): the job is refused; revoke the key",
                self.member
            )
        })
    }
}

/// A reader that shows every byte it passes to a [`Scanner`].
pub struct ScanRead<'s, 'n, R> {
    /// The inner reader.
    pub inner: R,
    /// The scanner fed.
    pub scanner: &'s mut Scanner<'n>,
}

impl<R: Read> Read for ScanRead<'_, '_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.scanner.feed(&buf[..n]);
        Ok(n)
    }
}

/// The job ended (the gate concluded): runs `[model_key] end` if configured, with the job in
/// `AIRLOCK_JOB`, the key's fingerprint in `AIRLOCK_MODEL_KEY_FINGERPRINT` and
/// `AIRLOCK_KEY_EVENT=end` (never the key). Best effort: a failure is a warning (the key
/// still expires with the token).
pub fn job_ended(home: &crate::config::Home, job: &JobId) {
    let path = kept_path(&home.dir, job);
    let Ok(raw) = std::fs::read(&path).map(Zeroizing::new) else {
        return;
    };
    let fingerprint = std::str::from_utf8(&raw)
        .ok()
        .and_then(|s| ModelKey::new(s.to_owned()).ok())
        .map(|k| k.fingerprint())
        .unwrap_or_default();
    if let Some(end) = home.config.model_key.as_ref().and_then(|c| c.end.as_ref()) {
        if let Err(e) = crate::model_key::run_end(end, job, &fingerprint) {
            tracing::warn!("job {job}: {e:#}");
        }
    }
}

#[cfg(test)]
#[path = "key_leak_tests.rs"]
mod tests;
