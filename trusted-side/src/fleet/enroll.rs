//! `airlock fleet enroll` and `airlock fleet revoke`, and the enrolment both they and
//! renewal mint.
//!
//! An enrolment is a DSSE statement signed by the trusted key over the worker's `age1…`
//! recipient, whose predicate lists presigned URLs for that worker's own objects only: GET on
//! its [`MAILBOX_SLOTS`] ticket slots and its renewal slot, PUT on its heartbeat, all under
//! `fleet/<name>/`, all expiring together. On a `file://` store the URLs are `file://` paths,
//! as in job tokens (a shared directory grants what the filesystem grants).
//!
//! Guards against: an enrolment reaching another worker's prefix or any job (it is built from
//! the worker's name alone, by `store_layout`), a stolen enrolment file renewing anything
//! (renewals are sealed to the worker's key), re-enrolling a name silently (refused unless
//! revoked first), and a revoked worker getting anything more (its slots are emptied and a
//! signed, sealed revocation is left in its renewal slot; watch re-dispatches what it held).

use std::path::PathBuf;
use std::time::Duration;

use airlock_core::digest::Sha256Digest;
use airlock_core::dsse::{self, Statement};
use airlock_core::format::fleet::{
    Enrolment, WorkerName, ENROLMENT_FORMAT, ENROLMENT_SUBJECT, MAILBOX_SLOTS, PREDICATE_ENROLMENT,
};
use airlock_core::keys::SigningKey;
use airlock_core::seal::{self, Recipient};
use airlock_core::store_layout as layout;
use anyhow::{bail, Context, Result};

use super::WorkerRecord;
use crate::config::{GlobalOptions, Home};
use crate::exit::Outcome;
use crate::store::{Access, Store};

/// Longest enrolment lifetime (S3's presigned URLs live at most 7 days).
pub const MAX_TTL_SECS: u64 = 7 * 24 * 3600;

/// What `airlock fleet enroll` is asked to do.
#[derive(Debug, Clone)]
pub struct EnrollOptions {
    /// The worker's name.
    pub name: String,
    /// The worker's public key file (`airlock-worker keygen`'s `worker.pub`, `age1…`).
    pub worker_pub: PathBuf,
    /// Where to write the signed enrolment (created new, 0600).
    pub out: PathBuf,
    /// Lifetime of the enrolment's URLs: 1h, 12h, 7d (renewed at half).
    pub ttl: String,
    /// Heartbeat interval asked of the worker: 5s, 30s.
    pub heartbeat: String,
}

/// Mints a signed enrolment for `rec` (serial `serial`, `revoked` for a revocation notice).
pub fn mint(
    store: &Store,
    key: &SigningKey,
    rec: &WorkerRecord,
    serial: u64,
    now: u64,
    revoked: bool,
) -> Result<(Vec<u8>, Enrolment)> {
    let ttl = Duration::from_secs(rec.ttl_secs);
    let name = &rec.name;
    let (mailbox, renewal, heartbeat) = if revoked {
        (Vec::new(), String::new(), String::new())
    } else {
        (
            (0..MAILBOX_SLOTS)
                .map(|s| store.worker_url(&layout::fleet_mailbox(name, s), Access::Get, ttl))
                .collect::<Result<Vec<_>>>()?,
            store.worker_url(&layout::fleet_renewal(name), Access::Get, ttl)?,
            store.worker_url(&layout::fleet_heartbeat(name), Access::Put, ttl)?,
        )
    };
    let enrolment = Enrolment {
        format: ENROLMENT_FORMAT.to_owned(),
        name: name.clone(),
        recipient: rec.recipient.clone(),
        serial,
        issued_at: now,
        expires_at: now + rec.ttl_secs,
        mailbox,
        renewal,
        heartbeat,
        heartbeat_secs: rec.heartbeat_secs,
        poll_max_ms: (rec.heartbeat_secs * 1000).min(5_000),
        revoked,
    };
    enrolment.check()?;
    let statement = Statement::new(
        ENROLMENT_SUBJECT,
        Sha256Digest::of_bytes(rec.recipient.as_bytes()),
        PREDICATE_ENROLMENT,
        serde_json::to_value(&enrolment)?,
    );
    Ok((
        dsse::sign_statement(&statement, key).to_json_pretty(),
        enrolment,
    ))
}

/// Seals a (renewed or revoking) enrolment envelope to the worker and leaves it in its
/// renewal slot.
pub fn deliver_renewal(store: &Store, rec: &WorkerRecord, envelope: &[u8]) -> Result<()> {
    let to = Recipient::parse(&rec.recipient)?;
    let sealed = seal::seal(&to, envelope)?;
    store.put_bytes(&layout::fleet_renewal(&rec.name), &sealed)
}

/// `airlock fleet enroll NAME --worker-pub FILE --out FILE`.
pub fn run(global: &GlobalOptions, args: &EnrollOptions) -> Result<Outcome> {
    let name = WorkerName::parse(&args.name)?;
    let ttl = crate::submit::parse_duration(&args.ttl)?;
    if !(60..=MAX_TTL_SECS).contains(&ttl) {
        bail!("--ttl must be between 1m and 7d (presigned URLs live at most 7 days)");
    }
    let heartbeat_secs = crate::submit::parse_duration(&args.heartbeat)?;
    if !(1..=300).contains(&heartbeat_secs) || heartbeat_secs * 4 > ttl {
        bail!("--heartbeat must be between 1s and 5m and at most a quarter of --ttl");
    }
    let text = std::fs::read_to_string(&args.worker_pub)
        .with_context(|| format!("{}: cannot read", args.worker_pub.display()))?;
    let recipient = Recipient::parse(text.lines().next().unwrap_or(""))
        .with_context(|| format!("{}: expected the worker's age1… public key (airlock-worker keygen wrote it as worker.pub)", args.worker_pub.display()))?;
    let home = Home::load(&global.home)?;
    let key = home.signing_key()?;
    let store = home.open_store()?;
    let dir = super::dir(&home.dir).join("workers");
    let record_path = dir.join(format!("{name}.json"));
    let revoked_path = dir.join(format!("{name}.revoked"));
    if record_path.exists() && !revoked_path.exists() {
        bail!("worker {name} is already enrolled: `airlock fleet revoke {name}` first, or pick another name (fleet.enrolled)");
    }
    let out = crate::submit::SecretSlot::claim(&args.out)?;
    let rec = WorkerRecord {
        name: name.clone(),
        recipient: recipient.encode(),
        enrolled_at: airlock_core::clock::now_unix(),
        ttl_secs: ttl,
        heartbeat_secs,
    };
    // Leftovers of an earlier worker of this name are not this one's.
    for s in 0..MAILBOX_SLOTS {
        store.delete(&layout::fleet_mailbox(&name, s))?;
    }
    store.delete(&layout::fleet_renewal(&name))?;
    store.delete(&layout::fleet_heartbeat(&name))?;
    let serial = super::state::State::load(&home.dir)?
        .workers
        .get(name.as_str())
        .map_or(0, |w| w.serial)
        + 1;
    let (envelope, enrolment) = mint(&store, &key, &rec, serial, rec.enrolled_at, false)?;
    super::write_private(&record_path, &serde_json::to_vec_pretty(&rec)?)?;
    let _ = std::fs::remove_file(&revoked_path);
    let mut state = super::state::State::load(&home.dir)?;
    state.workers.insert(
        name.to_string(),
        super::state::WorkerState {
            serial,
            expires_at: enrolment.expires_at,
            ..Default::default()
        },
    );
    state.save(&home.dir)?;
    let path = out.fill(std::str::from_utf8(&envelope)?)?;
    println!("worker {name} enrolled");
    println!(
        "  enrolment {} (0600): copy it to the worker; it reaches fleet/{name}/ only",
        path.display()
    );
    println!(
        "  expires   {} (watch renews it at half its lifetime)",
        airlock_core::jobid::rfc3339_utc(enrolment.expires_at)
    );
    Ok(Outcome::Ok)
}

/// `airlock fleet revoke NAME`: no more renewals or tickets; the worker exits when it reads
/// the revocation; watch re-dispatches what it held.
pub fn revoke(global: &GlobalOptions, name: &str) -> Result<Outcome> {
    let name = WorkerName::parse(name)?;
    let home = Home::load(&global.home)?;
    let key = home.signing_key()?;
    let store = home.open_store()?;
    let dir = super::dir(&home.dir).join("workers");
    let record_path = dir.join(format!("{name}.json"));
    if !record_path.exists() {
        bail!("worker {name} is not enrolled (see `airlock fleet status`)");
    }
    let rec: WorkerRecord = super::read_json(&record_path)?;
    super::write_private(&dir.join(format!("{name}.revoked")), b"revoked\n")?;
    for s in 0..MAILBOX_SLOTS {
        store.delete(&layout::fleet_mailbox(&name, s))?;
    }
    let serial = super::state::State::load(&home.dir)?
        .workers
        .get(name.as_str())
        .map_or(1, |w| w.serial)
        + 1;
    let (envelope, _) = mint(
        &store,
        &key,
        &rec,
        serial,
        airlock_core::clock::now_unix(),
        true,
    )?;
    deliver_renewal(&store, &rec, &envelope)?;
    println!("worker {name} revoked: no more tickets or renewals; `airlock watch` re-dispatches what it held");
    Ok(Outcome::Ok)
}
