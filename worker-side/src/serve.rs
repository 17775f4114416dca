//! `airlock-worker serve --enrollment FILE --key DIR [run flags] -- GENERATOR ARGS...`: a
//! fleet worker. Holds its own key pair and a trusted-signed enrolment (URLs for its own
//! mailbox slots and heartbeat, nothing else); writes its heartbeat, polls its mailbox with
//! backoff and jitter while idle (never while it has work), looks at its renewal slot at most
//! every 2 s, opens each ticket with its key and runs the job through
//! [`crate::run::run_job`], exactly as `run` does, one at a time.
//!
//! Guards against: running a ticket meant for another worker (it names its worker, and only
//! this key opens it), running a ticket twice (its sequence number is remembered in
//! `DIR/serve-state.json` before it runs), an enrolment not from the trusted key or for
//! another key (verified against the pinned key; its subject is this key's recipient), an
//! older enrolment replacing a newer one (serials only grow), and an eviction losing the work
//! (on SIGTERM the run drops a last checkpoint, the heartbeat says `stopping`, and serve
//! exits). A revocation (a signed enrolment marked `revoked`, sealed to this key) ends it
//! cleanly.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use airlock_core::digest::Sha256Digest;
use airlock_core::dsse::verify_envelope;
use airlock_core::format::fleet::{
    Enrolment, Heartbeat, Ticket, ENROLMENT_SUBJECT, HEARTBEAT_FORMAT, MAX_SEALED_BYTES, MAX_TAKEN,
    PREDICATE_ENROLMENT, TOKEN_RESUME,
};
use airlock_core::format::MAX_ENVELOPE_BYTES;
use airlock_core::keys::{load_public_key, PublicKey};
use airlock_core::seal::{self, Identity};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::options::ServeOptions;
use crate::transfer::{self, Overwrite};
use crate::workspace::Termination;

/// The renewed enrolment's file in the key directory.
const RENEWED: &str = "enrolment.dsse.json";
/// What serve remembers across restarts.
const STATE: &str = "serve-state.json";
/// First pause between two idle polls.
const POLL_MIN_MS: u64 = 50;
/// Least time between two looks at the renewal slot (a renewal is due at half the enrolment's
/// lifetime, an hour by default; a revocation is read within this): the mailbox is polled far
/// more often, and each look is a request to the store.
const RENEWAL_EVERY: Duration = Duration::from_secs(2);

/// What serve remembers: ticket numbers run (so none runs twice).
#[derive(Default, Serialize, Deserialize)]
struct Remembered {
    seen: Vec<u64>,
}

/// What the heartbeat says; shared with the heartbeat thread.
struct Beat {
    heartbeat: Heartbeat,
    url: String,
    every: Duration,
    stop: bool,
}

struct Shared {
    beat: Mutex<Beat>,
    now: Condvar,
}

impl Shared {
    fn update(&self, f: impl FnOnce(&mut Beat)) {
        if let Ok(mut b) = self.beat.lock() {
            f(&mut b);
        }
        self.now.notify_all();
    }
}

/// Writes the heartbeat every `every`, and at once when told.
fn heartbeat_loop(shared: Arc<Shared>) {
    let Ok(mut b) = shared.beat.lock() else {
        return;
    };
    loop {
        let bytes = airlock_core::format::to_json_bytes(&b.heartbeat);
        let url = b.url.clone();
        let (every, stop) = (b.every, b.stop);
        drop(b);
        if let Err(e) = transfer::put_bytes(&url, "heartbeat", &bytes, Overwrite::Replace) {
            tracing::warn!("heartbeat not written: {e:#}");
        }
        if stop {
            return;
        }
        let Ok(g) = shared.beat.lock() else {
            return;
        };
        b = match shared.now.wait_timeout(g, every) {
            Ok((g, _)) => g,
            Err(_) => return,
        };
    }
}

/// Verifies an enrolment envelope: trusted key, predicate, shape, this key's recipient.
fn verify_enrolment(bytes: &[u8], trusted: &PublicKey, id: &Identity) -> Result<Enrolment> {
    let statement = verify_envelope(bytes, std::slice::from_ref(trusted), MAX_ENVELOPE_BYTES)
        .context("enrolment refused")?;
    let ours = id.recipient().encode();
    if statement.subject_digest(ENROLMENT_SUBJECT) != Some(Sha256Digest::of_bytes(ours.as_bytes()))
    {
        bail!("enrolment refused (fleet.enrolment-key): it was signed for another worker key");
    }
    let e: Enrolment = statement
        .expect_predicate::<Enrolment>(PREDICATE_ENROLMENT)
        .context("enrolment refused")?
        .into_inner();
    e.check().context("enrolment refused")?;
    if e.recipient != ours {
        bail!("enrolment refused (fleet.enrolment-key): it names another worker key");
    }
    Ok(e)
}

/// A pause of `ms` with up to a quarter more of jitter.
fn jittered(ms: u64) -> Duration {
    use rand_core::RngCore;
    let j = u64::from(rand_core::OsRng.next_u32()) % (ms / 4 + 1);
    Duration::from_millis(ms + j)
}

/// The next ticket in the mailbox (lowest sequence number not yet seen), if any.
fn next_ticket(e: &Enrolment, id: &Identity, seen: &[u64]) -> Result<Option<Ticket>> {
    let mut best: Option<Ticket> = None;
    for url in &e.mailbox {
        let Some(sealed) = transfer::get_optional(url, "mailbox", MAX_SEALED_BYTES as u64)? else {
            continue;
        };
        let t = match seal::open(id, &sealed, MAX_SEALED_BYTES)
            .map_err(anyhow::Error::new)
            .and_then(|p| Ticket::from_json(&p).map_err(anyhow::Error::new))
        {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!("mailbox: ticket refused: {e:#}");
                continue;
            }
        };
        if t.worker != e.name {
            tracing::warn!(
                "mailbox: ticket for worker {} refused (fleet.ticket-worker)",
                t.worker
            );
            continue;
        }
        if seen.contains(&t.seq) || best.as_ref().is_some_and(|b| b.seq < t.seq) {
            continue;
        }
        best = Some(t);
    }
    Ok(best)
}

/// `airlock-worker serve`. Returns when revoked, at `--max-jobs`, or on SIGTERM.
pub fn serve(args: &ServeOptions) -> Result<()> {
    crate::generate::check_pass_env(&args.job.pass_env)?;
    let trusted = load_public_key(&args.job.trusted_pub).context("trusted public key")?;
    let id = crate::keygen::load(&args.key_dir)?;
    let mut enrolment = {
        let bytes = std::fs::read(&args.enrollment)
            .with_context(|| format!("{}: cannot read", args.enrollment.display()))?;
        verify_enrolment(&bytes, &trusted, &id)?
    };
    if let Ok(bytes) = std::fs::read(args.key_dir.join(RENEWED)) {
        if let Ok(r) = verify_enrolment(&bytes, &trusted, &id) {
            if r.serial > enrolment.serial {
                enrolment = r;
            }
        }
    }
    if enrolment.revoked {
        eprintln!("worker {}: revoked; nothing to do", enrolment.name);
        return Ok(());
    }
    let state_path = args.key_dir.join(STATE);
    let mut remembered: Remembered = std::fs::read(&state_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let term = Termination::install()?;
    let writes = airlock_core::format::WRITES
        .iter()
        .flat_map(|w| w.iter())
        .map(|s| (*s).to_owned())
        .collect();
    let shared = Arc::new(Shared {
        beat: Mutex::new(Beat {
            heartbeat: Heartbeat {
                format: HEARTBEAT_FORMAT.to_owned(),
                name: enrolment.name.clone(),
                state: "idle".to_owned(),
                job: None,
                version: airlock_core::VERSION.to_owned(),
                labels: args.labels.clone(),
                writes,
                reads: vec![TOKEN_RESUME.to_owned()],
                taken: Vec::new(),
                serial: enrolment.serial,
                done: 0,
                failed: 0,
            },
            url: enrolment.heartbeat.clone(),
            every: Duration::from_secs(enrolment.heartbeat_secs.max(1)),
            stop: false,
        }),
        now: Condvar::new(),
    });
    let beats = std::thread::spawn({
        let shared = Arc::clone(&shared);
        move || heartbeat_loop(shared)
    });
    eprintln!(
        "worker {} serving (enrolment serial {})",
        enrolment.name, enrolment.serial
    );
    let result = serve_loop(
        args,
        &trusted,
        &id,
        &mut enrolment,
        &mut remembered,
        &state_path,
        &shared,
        &term,
    );
    shared.update(|b| {
        b.heartbeat.state = "stopping".to_owned();
        b.heartbeat.job = None;
        b.stop = true;
    });
    let _ = beats.join();
    result
}

#[allow(clippy::too_many_arguments)]
fn serve_loop(
    args: &ServeOptions,
    trusted: &PublicKey,
    id: &Identity,
    enrolment: &mut Enrolment,
    remembered: &mut Remembered,
    state_path: &Path,
    shared: &Shared,
    term: &Termination,
) -> Result<()> {
    let mut delay = POLL_MIN_MS;
    let mut ran = 0u64;
    let mut renewal_read: Option<std::time::Instant> = None;
    let origin_paths: Vec<PathBuf> = vec![args.key_dir.clone(), args.enrollment.clone()];
    loop {
        if term.requested() {
            eprintln!("worker {}: terminated by signal; exiting", enrolment.name);
            return Ok(());
        }
        if args.max_jobs.is_some_and(|m| ran >= m) {
            return Ok(());
        }
        if airlock_core::clock::now_unix() >= enrolment.expires_at {
            bail!("worker {}: the enrolment expired before a renewal arrived (fleet.expired): ask for a new one (`airlock fleet enroll`)", enrolment.name);
        }
        let renewal_due = renewal_read.is_none_or(|t| t.elapsed() >= RENEWAL_EVERY);
        if renewal_due {
            renewal_read = Some(std::time::Instant::now());
        }
        let renewal = match renewal_due {
            true => transfer::get_optional(&enrolment.renewal, "renewal", MAX_SEALED_BYTES as u64)?,
            false => None,
        };
        if let Some(sealed) = renewal {
            match seal::open(id, &sealed, MAX_SEALED_BYTES)
                .map_err(anyhow::Error::new)
                .and_then(|p| verify_enrolment(&p, trusted, id))
            {
                Ok(r) if r.serial > enrolment.serial && r.name == enrolment.name => {
                    if r.revoked {
                        eprintln!(
                            "worker {}: revoked by the trusted side; exiting",
                            enrolment.name
                        );
                        return Ok(());
                    }
                    let _ =
                        std::fs::write(args.key_dir.join(RENEWED), &*sealed_plain(id, &sealed)?);
                    *enrolment = r;
                    let e = enrolment.clone();
                    shared.update(|b| {
                        b.url = e.heartbeat.clone();
                        b.heartbeat.serial = e.serial;
                    });
                    tracing::info!("enrolment renewed (serial {})", enrolment.serial);
                }
                Ok(_) => {}
                Err(e) => tracing::warn!("renewal refused: {e:#}"),
            }
        }
        let Some(ticket) = next_ticket(enrolment, id, &remembered.seen)? else {
            std::thread::sleep(jittered(delay));
            delay = (delay * 2).min(enrolment.poll_max_ms.max(POLL_MIN_MS));
            continue;
        };
        delay = POLL_MIN_MS;
        remembered.seen.push(ticket.seq);
        if remembered.seen.len() > 1024 {
            remembered.seen.drain(..512);
        }
        std::fs::write(state_path, serde_json::to_vec(remembered)?)
            .with_context(|| format!("{}: cannot write", state_path.display()))?;
        let taken: Vec<u64> = remembered
            .seen
            .iter()
            .rev()
            .take(MAX_TAKEN)
            .copied()
            .collect();
        let job = ticket.job.clone();
        shared.update(|b| {
            b.heartbeat.state = "busy".to_owned();
            b.heartbeat.job = Some(job.clone());
            b.heartbeat.taken = taken;
        });
        let origin = crate::run::TokenOrigin {
            argv: false,
            paths: origin_paths.clone(),
        };
        let result = crate::run::run_job(&ticket.token, &origin, &args.job, term);
        drop(ticket);
        ran += 1;
        let ok = match &result {
            Ok(o) => {
                eprintln!("job {job}: {}", o.message());
                true
            }
            Err(e) => {
                eprintln!(
                    "job {job}: error: {}",
                    airlock_core::error::one_line(e.as_ref())
                );
                false
            }
        };
        shared.update(|b| {
            b.heartbeat.state = "idle".to_owned();
            b.heartbeat.job = None;
            if ok {
                b.heartbeat.done += 1;
            } else {
                b.heartbeat.failed += 1;
            }
        });
    }
}

/// The plaintext of a sealed renewal (kept beside the key so a restart holds the newest).
fn sealed_plain(id: &Identity, sealed: &[u8]) -> Result<zeroize::Zeroizing<Vec<u8>>> {
    Ok(seal::open(id, sealed, MAX_SEALED_BYTES)?)
}
