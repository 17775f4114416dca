//! Runs the generator: builds the sandbox spec from the request's limits, starts it through
//! `airlock-sandbox`, checkpoints while it runs, and enforces the wall clock.
//!
//! Guards against: a generator that outlives its wall clock (the whole process tree is
//! killed), one that sees the worker's environment (cleared to `--pass-env` + our variables;
//! the token's variable and ours cannot be passed), one that fills the disk (a file-size
//! rlimit derived from the job's limits, reported as `file-size` whether the writer died of
//! `SIGXFSZ` or shrugged it off; and `disk`, stopped, when it writes past the job's disk
//! ceiling or fills the work root's file system: see `disk`), one that reads the token from the worker's command line (a
//! token given with `--token` requires the namespace sandbox, whose `/proc` shows no host
//! process), and silently running unconfined (no sandbox and no `--unsafe-no-sandbox` is an
//! error before anything starts). Egress: only with a request that allows it, through the
//! sandbox crate's proxy (allowlist, address checks, every attempt logged into the packet).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use airlock_core::format::{
    EgressAttempt, EgressRule, ExitInfo, ExitKind, ModelUsage, MAX_PACKET_MODELS,
};
use airlock_core::limits::JobLimits;
use airlock_sandbox::egress::{EgressLog, ProxyConfig, TestEndpoint};
use airlock_sandbox::{
    EgressProxy, ExitStatus, LocalGrant, LogSink, MemoryCeiling, Mode, Network, Running,
    SandboxError, SandboxSpec,
};
use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::workspace::Termination;

/// The hidden first argument that makes this binary the sandbox helper.
pub const HELPER_ARG: &str = airlock_sandbox::HELPER_SUBCOMMAND;

/// Environment variable that forces a sandbox mode (`auto`, `namespaces`,
/// `landlock+seccomp`); for tests of the fallback path. `none` is refused here: only
/// `--unsafe-no-sandbox` may run unconfined.
pub const FORCE_MODE_ENV: &str = "AIRLOCK_SANDBOX_FORCE";

/// TEST ONLY: `host:port=ip:port[,...]` connects an allowed egress destination to a local
/// stand-in endpoint without DNS and without the proxy's address checks. Every attempt
/// through one is marked `egress.test-endpoint` in the packet.
pub const EGRESS_TEST_ENDPOINT_ENV: &str = "AIRLOCK_EGRESS_TEST_ENDPOINT";

/// Variables the worker sets itself or must never hand over: `--pass-env` refuses them.
const RESERVED_ENV: &[&str] = &[
    "AIRLOCK_JOB_TOKEN",
    "AIRLOCK_REPORT",
    crate::comments::COMMENTS_ENV,
    "AIRLOCK_PROMPT_FILE",
    "AIRLOCK_WORKDIR",
    "AIRLOCK_MODEL",
];

/// Checks `--pass-env` names before anything runs: well formed, and not the job token's
/// variable nor one of the generator contract's (`worker.pass-env`).
pub fn check_pass_env(names: &[String]) -> Result<()> {
    for name in names {
        let ok = name.bytes().next().is_some_and(|b| !b.is_ascii_digit())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !ok {
            bail!("--pass-env {name:?} refused (worker.pass-env): not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
        }
        if RESERVED_ENV.contains(&name.as_str()) {
            bail!("--pass-env {name} refused (worker.pass-env): the job token and the generator contract's variables are never passed through");
        }
    }
    Ok(())
}

/// The largest file the generator may write (`RLIMIT_FSIZE`): four times the artifact cap,
/// at least 64 MiB (room for scratch files), at most 1 GiB. The diff never reads a changed
/// file past 8 MiB, so nothing larger could reach the artifact anyway.
pub fn file_size_cap(limits: &JobLimits) -> u64 {
    const MIB: u64 = 1024 * 1024;
    limits
        .max_artifact_bytes
        .saturating_mul(4)
        .clamp(64 * MIB, 1024 * MIB)
}

/// Entries looked at when searching the workdir and tmp for a file stopped at the cap.
const MAX_SCAN_ENTRIES: u64 = 500_000;

/// Entry point of the re-executed helper: applies every layer, then execs the generator.
pub fn helper_main() -> ! {
    airlock_sandbox::child_main()
}

/// Everything needed to start the generator.
pub struct GeneratorSetup<'a> {
    /// `GENERATOR ARGS...` with `{prompt_file}` and `{workdir}` not yet substituted.
    pub command: &'a [String],
    /// The workdir (cwd of the generator).
    pub workdir: &'a Path,
    /// Its private tmp.
    pub tmp: &'a Path,
    /// The prompt file.
    pub prompt_file: &'a Path,
    /// Where the capped log goes.
    pub log: &'a Path,
    /// `--pass-env` names.
    pub pass_env: &'a [String],
    /// The request's limits.
    pub limits: &'a JobLimits,
    /// `--unsafe-no-sandbox`.
    pub unsafe_no_sandbox: bool,
    /// Paths the generator must never reach.
    pub secret_paths: Vec<PathBuf>,
    /// The token was given on the worker's command line (`--token`).
    pub token_on_argv: bool,
    /// The request's egress allowlist (empty: no network).
    pub egress: &'a [EgressRule],
    /// `--readable` roots (checked, absolute).
    pub readable: &'a [PathBuf],
    /// The generator's private HOME (inside `tmp`).
    pub home: &'a Path,
    /// `--allow-local` grants (checked).
    pub local: &'a [LocalGrant],
    /// The job's scoped model key and the variable the request names for it (see
    /// [`model_key_var`]).
    pub model_key: Option<(&'a str, &'a str)>,
    /// The disk ceiling and full-disk watch (stops the generator, says `disk`).
    pub disk: &'a crate::disk::DiskWatch,
    /// The request's model (`AIRLOCK_MODEL`); `None` when nothing specific was asked for.
    pub model: Option<&'a str>,
}

/// Pairs the token's model key with the request's variable name. Both or neither: a key
/// without a variable, or a variable without a key, is refused (`worker.model-key`) rather
/// than silently running the generator without the access it was promised.
pub fn model_key_var<'a>(
    env: Option<&'a str>,
    key: Option<&'a airlock_core::token::ModelKey>,
) -> Result<Option<(&'a str, &'a str)>> {
    match (env, key) {
        (Some(env), Some(key)) => Ok(Some((env, key.expose()))),
        (None, None) => Ok(None),
        (Some(env), None) => bail!("the request names a model key variable ({env}) but the token carries no key (worker.model-key): ask the trusted side to submit again"),
        (None, Some(_)) => bail!("the token carries a model key but the request names no variable for it (worker.model-key)"),
    }
}

/// How the generator run ended.
#[derive(Debug, Clone)]
pub struct GeneratorRun {
    /// Exit details for the packet.
    pub exit: ExitInfo,
    /// Limits hit (`wall-clock`, `cpu-secs`, `file-size`, `log-bytes`, `disk`, `inodes`,
    /// `memory`).
    pub limits_hit: Vec<String>,
    /// The sandbox that actually ran.
    pub sandbox: String,
    /// Generator wall time.
    pub elapsed_ms: u64,
    /// The egress proxy's log, for the packet.
    pub egress: Vec<EgressAttempt>,
}

/// What the generator reported in `AIRLOCK_REPORT` (all optional; anything malformed is
/// treated as no report). `models` lists usage per model; when `model` or the totals are
/// absent they are taken from it (the model with the most tokens out did the main work; the
/// totals are the sums).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// The model that answered (did the main work).
    pub model: Option<String>,
    /// Tokens in.
    pub tokens_in: Option<u64>,
    /// Tokens out.
    pub tokens_out: Option<u64>,
    /// Usage per model.
    #[serde(default)]
    pub models: Vec<ModelUsage>,
}

/// Name of the report file inside the private tmp.
pub const REPORT_FILE: &str = "airlock-report.json";
const MAX_REPORT_BYTES: u64 = 64 * 1024;

/// A model name is a short printable string, nothing else.
fn model_name_ok(m: &str) -> bool {
    !m.is_empty() && m.len() <= 200 && m.chars().all(|c| !c.is_control())
}

/// Reads the generator's report; malformed, oversized or absent means "unreported".
pub fn read_report(tmp: &Path) -> Report {
    let path = tmp.join(REPORT_FILE);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return Report::default();
    };
    if !meta.is_file() || meta.len() > MAX_REPORT_BYTES {
        tracing::warn!("generator report is not a small regular file; ignored");
        return Report::default();
    }
    let Ok(bytes) = std::fs::read(&path) else {
        return Report::default();
    };
    match serde_json::from_slice::<Report>(&bytes) {
        Ok(r)
            if r.models.len() > MAX_PACKET_MODELS
                || r.models.iter().any(|m| !model_name_ok(&m.name)) =>
        {
            tracing::warn!("generator report lists too many models or a malformed name; recorded as unreported");
            Report::default()
        }
        Ok(mut r) => {
            r.model = r.model.filter(|m| model_name_ok(m));
            let main = r
                .models
                .iter()
                .enumerate()
                .max_by_key(|(i, m)| (m.tokens_out, m.tokens_in, std::cmp::Reverse(*i)));
            if r.model.is_none() {
                r.model = main.map(|(_, m)| m.name.clone());
            }
            if !r.models.is_empty() && r.tokens_in.is_none() && r.tokens_out.is_none() {
                let sum = |f: fn(&ModelUsage) -> u64| {
                    r.models.iter().map(f).fold(0u64, u64::saturating_add)
                };
                r.tokens_in = Some(sum(|m| m.tokens_in));
                r.tokens_out = Some(sum(|m| m.tokens_out));
            }
            r
        }
        Err(_) => {
            tracing::warn!("generator report is malformed; recorded as unreported");
            Report::default()
        }
    }
}

fn substitute(arg: &str, setup: &GeneratorSetup<'_>) -> String {
    arg.replace("{prompt_file}", &setup.prompt_file.to_string_lossy())
        .replace("{workdir}", &setup.workdir.to_string_lossy())
}

fn mode(setup: &GeneratorSetup<'_>) -> Result<Mode> {
    if setup.unsafe_no_sandbox {
        tracing::warn!(
            "--unsafe-no-sandbox: the generator may run UNCONFINED if no sandbox can be had"
        );
    }
    let m = match std::env::var(FORCE_MODE_ENV) {
        Ok(v) if !v.is_empty() => {
            let m: Mode = v.parse().context(FORCE_MODE_ENV)?;
            if m == Mode::Unsandboxed && !setup.unsafe_no_sandbox {
                bail!("{FORCE_MODE_ENV}=none needs --unsafe-no-sandbox");
            }
            m
        }
        _ => Mode::Auto,
    };
    // The landlock+seccomp fallback shares the host's /proc, where the worker's command line
    // (and a token on it) is readable by any process.
    if setup.token_on_argv {
        match m {
            Mode::Auto => return Ok(Mode::Namespaces),
            Mode::LandlockSeccomp => bail!("--token on the command line needs the namespace sandbox (worker.token-argv): pass --token-file or AIRLOCK_JOB_TOKEN"),
            _ => {}
        }
    }
    Ok(m)
}

/// Starts the generator and waits for it, calling `checkpoint(elapsed_ms, sandbox)` every
/// `checkpoint_every_secs` while it runs. Kills the whole tree at the wall clock or on a
/// termination signal.
pub fn run_generator(
    setup: &GeneratorSetup<'_>,
    term: &Termination,
    checkpoint: &mut dyn FnMut(u64, &str) -> Result<()>,
) -> Result<GeneratorRun> {
    let Some((program, args)) = setup.command.split_first() else {
        bail!("no generator command given after --");
    };
    let mut env: Vec<(String, String)> = vec![
        (
            "AIRLOCK_REPORT".into(),
            setup.tmp.join(REPORT_FILE).to_string_lossy().into_owned(),
        ),
        (
            crate::comments::COMMENTS_ENV.into(),
            (setup.tmp.join(crate::comments::COMMENTS_FILE))
                .to_string_lossy()
                .into_owned(),
        ),
        (
            "AIRLOCK_PROMPT_FILE".into(),
            setup.prompt_file.to_string_lossy().into_owned(),
        ),
        (
            "AIRLOCK_WORKDIR".into(),
            setup.workdir.to_string_lossy().into_owned(),
        ),
        ("TMPDIR".into(), setup.tmp.to_string_lossy().into_owned()),
        ("HOME".into(), setup.home.to_string_lossy().into_owned()),
        (
            "PATH".into(),
            crate::readable::generator_path(setup.readable),
        ),
        ("LANG".into(), "C.UTF-8".into()),
    ];
    if let Some(model) = setup.model {
        env.push(("AIRLOCK_MODEL".into(), model.to_owned()));
    }
    for name in setup.pass_env {
        if let Ok(v) = std::env::var(name) {
            env.retain(|(k, _)| k != name);
            env.push((name.clone(), v));
        }
    }
    // The job's own key wins over a passed-through variable of the same name.
    if let Some((name, key)) = setup.model_key {
        env.retain(|(k, _)| k != name);
        env.push((name.to_owned(), key.to_owned()));
    }
    let mut spec = SandboxSpec::new(
        crate::readable::program_from_cwd(&substitute(program, setup), setup.workdir),
        setup.workdir,
        setup.tmp,
    );
    let mut args: Vec<String> = args.iter().map(|a| substitute(a, setup)).collect();
    let scripts = crate::readable::script_grants(&mut args, setup.workdir);
    spec.args = args.into_iter().map(Into::into).collect();
    spec.readable.extend(setup.readable.iter().cloned());
    spec.readable.extend(scripts);
    spec.env = env;
    spec.secret_paths = setup.secret_paths.clone();
    spec.rlimits.cpu_secs = Some(setup.limits.wall_clock_secs.saturating_add(5));
    let file_cap = file_size_cap(setup.limits);
    spec.rlimits.file_size_bytes = Some(file_cap);
    spec.memory_bytes = Some(
        setup
            .limits
            .max_memory_bytes
            .max(airlock_sandbox::MIN_MEMORY_BYTES),
    );
    spec.mode = mode(setup)?;
    let proxy = egress_proxy(setup.egress, setup.local)?;
    if proxy.is_some() {
        spec.network = Network::Egress;
    }
    let log = LogSink {
        path: setup.log.to_owned(),
        max_bytes: setup.limits.max_log_bytes,
    };

    let exe = std::env::current_exe().context("cannot find the worker binary")?;
    let mut running = match start(&exe, &spec, &log, proxy.as_ref()) {
        Ok(r) => r,
        Err(e @ SandboxError::Unavailable { .. }) if setup.unsafe_no_sandbox => {
            tracing::warn!("no sandbox available ({e}); running UNCONFINED (--unsafe-no-sandbox)");
            spec.mode = Mode::Unsandboxed;
            let _ = std::fs::remove_file(&log.path);
            start(&exe, &spec, &log, proxy.as_ref())?
        }
        Err(e @ SandboxError::Unavailable { .. }) if setup.token_on_argv => {
            bail!("--token on the command line needs the namespace sandbox, which this host cannot provide ({e}) (worker.token-argv): pass --token-file or AIRLOCK_JOB_TOKEN")
        }
        Err(e @ SandboxError::Unavailable { .. }) => {
            bail!("no sandbox can be had on this host ({e}); refusing to run the generator (pass --unsafe-no-sandbox to run it unconfined, loudly)")
        }
        Err(e) => match crate::readable::refusal_line(&e) {
            Some(line) => bail!("{line}"),
            None => return Err(e).context("cannot start the generator"),
        },
    };

    let start = Instant::now();
    let wall = Duration::from_secs(setup.limits.wall_clock_secs);
    let every = Duration::from_secs(setup.limits.checkpoint_every_secs.max(1));
    let mut next_checkpoint = start + every;
    let mut timed_out = false;
    let mut disk_hit = None;
    let mut memory_hit = false;
    let outcome = loop {
        if term.requested() {
            running.kill_group()?;
        }
        if disk_hit.is_none() {
            disk_hit = setup.disk.poll();
            if let Some(hit) = &disk_hit {
                tracing::warn!("{hit}: stopping the generator");
                running.kill_group()?;
            }
        }
        if !memory_hit && running.memory_oom_kills() > 0 {
            // The kernel killed a process at the ceiling: the run is cut short, as at `disk`.
            memory_hit = true;
            tracing::warn!(
                "the generator's processes reached the job's memory ceiling ({} bytes): stopping it",
                setup.limits.max_memory_bytes
            );
            running.kill_group()?;
        }
        let now = Instant::now();
        if now >= start + wall && !timed_out {
            timed_out = true;
            running.kill_group()?;
        }
        if now >= next_checkpoint && !timed_out && disk_hit.is_none() && !term.requested() {
            if let Err(e) = checkpoint(ms(start.elapsed()), running.sandbox().as_str()) {
                tracing::warn!("checkpoint failed: {e:#}");
            }
            next_checkpoint = Instant::now() + every;
        }
        let deadline = (start + wall).min(next_checkpoint);
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .clamp(Duration::from_millis(10), Duration::from_millis(200));
        if let Some(outcome) = running.wait_timeout(wait)? {
            break outcome;
        }
    };

    let mut limits_hit = Vec::new();
    let exit = if timed_out || outcome.status == ExitStatus::TimedOut {
        limits_hit.push("wall-clock".to_owned());
        ExitInfo {
            kind: ExitKind::Timeout,
            code: None,
        }
    } else {
        match outcome.status {
            ExitStatus::Exited(c) => ExitInfo {
                kind: ExitKind::Exited,
                code: Some(c),
            },
            ExitStatus::Signaled(s) => ExitInfo {
                kind: ExitKind::Signaled,
                code: Some(s),
            },
            ExitStatus::TimedOut => ExitInfo {
                kind: ExitKind::Timeout,
                code: None,
            },
        }
    };
    if let Some(l) = outcome.limit_hit {
        if !limits_hit.iter().any(|x| x == l.as_str()) {
            limits_hit.push(l.as_str().to_owned());
        }
    }
    if !limits_hit.iter().any(|l| l == "file-size") {
        // A writer that ignores SIGXFSZ (Python does), or a child of the generator, dies or
        // fails without the generator's own status saying so: a file at the cap tells.
        if let Some(p) =
            crate::tree::file_at_least(&[setup.workdir, setup.tmp], file_cap, MAX_SCAN_ENTRIES)
        {
            tracing::warn!(file = %p.display(), cap = file_cap, "the generator wrote a file up to the file-size limit");
            limits_hit.push("file-size".to_owned());
        }
    }
    if outcome.log_truncated {
        limits_hit.push("log-bytes".to_owned());
    }
    match &outcome.memory {
        m if memory_hit || m.hit() => limits_hit.push("memory".to_owned()),
        MemoryCeiling::Unenforced { reason } => {
            tracing::warn!("no memory ceiling for the generator's processes together ({reason}); each process is still held to its address-space limit");
        }
        _ => {}
    }
    if disk_hit.is_none() {
        disk_hit = setup.disk.last_look();
        if let Some(hit) = &disk_hit {
            tracing::warn!("{hit}");
        }
    }
    if let Some(hit) = &disk_hit {
        limits_hit.push(hit.limit_name().to_owned());
    }
    // The run is over: the proxy's tunnels are closed and its log is final.
    let egress_log = proxy.map(|p| p.log());
    if egress_log.as_ref().is_some_and(|l| l.unlogged > 0) {
        limits_hit.push("egress-log".to_owned());
    }
    Ok(GeneratorRun {
        exit,
        limits_hit,
        sandbox: outcome.sandbox.as_str().to_owned(),
        elapsed_ms: outcome.elapsed_ms,
        egress: egress_log.map(|l| packet_egress(&l)).unwrap_or_default(),
    })
}

/// Parses the `--allow-local` grants (`worker.allow-local`), before anything runs.
pub fn check_allow_local(items: &[String]) -> Result<Vec<LocalGrant>> {
    items
        .iter()
        .map(|i| {
            LocalGrant::parse(i).map_err(|e| match e {
                SandboxError::Spec { reason, .. } => {
                    anyhow::anyhow!("--allow-local {i} refused (worker.allow-local): {reason}")
                }
                other => anyhow::anyhow!("--allow-local {i} refused (worker.allow-local): {other}"),
            })
        })
        .collect()
}

/// The egress proxy for a request that allows egress or an operator's local grant (`None`:
/// no network at all).
fn egress_proxy(rules: &[EgressRule], local: &[LocalGrant]) -> Result<Option<EgressProxy>> {
    if rules.is_empty() && local.is_empty() {
        return Ok(None);
    }
    let mut config = ProxyConfig {
        local_grants: local.to_vec(),
        ..ProxyConfig::default()
    };
    for g in local {
        tracing::info!(grant = %g, "--allow-local: the generator may reach this local destination");
    }
    if let Ok(v) = std::env::var(EGRESS_TEST_ENDPOINT_ENV) {
        for item in v.split(',').filter(|i| !i.is_empty()) {
            let e = TestEndpoint::parse(item).context(EGRESS_TEST_ENDPOINT_ENV)?;
            tracing::warn!(host = %e.host, port = e.port, to = %e.addr, "{EGRESS_TEST_ENDPOINT_ENV}: TEST-ONLY egress endpoint, address checks skipped; marked in the packet");
            config.unsafe_test_endpoints.push(e);
        }
    }
    let rules = rules
        .iter()
        .map(|r| airlock_sandbox::EgressRule::new(r.host.clone(), r.port))
        .collect();
    Ok(Some(
        EgressProxy::start(rules, config).context("egress proxy")?,
    ))
}

fn start(
    exe: &Path,
    spec: &SandboxSpec,
    log: &LogSink,
    proxy: Option<&EgressProxy>,
) -> std::result::Result<Running, SandboxError> {
    match proxy {
        Some(p) => airlock_sandbox::spawn_with_egress(exe, &[HELPER_ARG], spec, log, p),
        None => airlock_sandbox::spawn(exe, &[HELPER_ARG], spec, log),
    }
}

/// The proxy's log as packet entries (an attempt through a test endpoint says so).
fn packet_egress(log: &EgressLog) -> Vec<EgressAttempt> {
    log.attempts
        .iter()
        .map(|a| EgressAttempt {
            destination: a.destination.clone(),
            allowed: a.allowed,
            reason: if a.test_endpoint {
                Some("egress.test-endpoint".to_owned())
            } else if a.local_grant {
                Some(airlock_sandbox::egress::LOCAL_GRANT.to_owned())
            } else {
                a.reason.map(str::to_owned)
            },
            bytes_up: a.bytes_up,
            bytes_down: a.bytes_down,
            at_ms: a.at_ms,
        })
        .collect()
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn pass_env_refuses_the_token_and_contract_variables() {
        for bad in [
            "AIRLOCK_JOB_TOKEN",
            "AIRLOCK_REPORT",
            "AIRLOCK_WORKDIR",
            "AIRLOCK_PROMPT_FILE",
            "AIRLOCK_MODEL",
        ] {
            let e = check_pass_env(&names(&[bad])).unwrap_err().to_string();
            assert!(e.contains("worker.pass-env"), "{e}");
        }
    }

    #[test]
    fn pass_env_refuses_malformed_names() {
        for bad in ["", "1ABC", "A=B", "A B", "A\0B", "É"] {
            assert!(check_pass_env(&names(&[bad])).is_err(), "{bad:?}");
        }
        check_pass_env(&names(&["OPENAI_API_KEY", "_X", "PATH"])).unwrap();
    }

    #[test]
    fn a_model_key_goes_with_its_variable_or_the_job_is_refused() {
        let key = airlock_core::token::ModelKey::new("sk-scoped-1".into()).unwrap();
        assert_eq!(
            model_key_var(Some("OPENAI_API_KEY"), Some(&key)).unwrap(),
            Some(("OPENAI_API_KEY", "sk-scoped-1"))
        );
        assert_eq!(model_key_var(None, None).unwrap(), None);
        for e in [
            model_key_var(Some("OPENAI_API_KEY"), None).unwrap_err(),
            model_key_var(None, Some(&key)).unwrap_err(),
        ] {
            let e = e.to_string();
            assert!(
                e.contains("worker.model-key") && !e.contains("sk-scoped-1"),
                "{e}"
            );
        }
    }

    #[test]
    fn file_size_cap_follows_the_artifact_cap_within_bounds() {
        const MIB: u64 = 1024 * 1024;
        let with = |b: u64| {
            file_size_cap(&JobLimits {
                max_artifact_bytes: b,
                ..JobLimits::default()
            })
        };
        assert_eq!(with(MIB), 64 * MIB);
        assert_eq!(with(16 * MIB), 64 * MIB);
        assert_eq!(with(100 * MIB), 400 * MIB);
        assert_eq!(with(u64::MAX), 1024 * MIB);
    }

    fn report_of(json: &str) -> Report {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(REPORT_FILE), json).unwrap();
        read_report(dir.path())
    }

    #[test]
    fn the_old_report_is_still_read() {
        let r = report_of(r#"{"model": "m-1", "tokens_in": 5, "tokens_out": 7}"#);
        assert_eq!(
            (r.model.as_deref(), r.tokens_in, r.tokens_out),
            (Some("m-1"), Some(5), Some(7))
        );
        assert!(r.models.is_empty());
    }

    #[test]
    fn usage_per_model_fills_the_main_model_and_the_totals() {
        let r = report_of(
            r#"{"models": [{"name": "small-20261203", "tokens_in": 900, "tokens_out": 3},
                           {"name": "big-20261203", "tokens_in": 321, "tokens_out": 45}]}"#,
        );
        assert_eq!(r.model.as_deref(), Some("big-20261203"));
        assert_eq!((r.tokens_in, r.tokens_out), (Some(1221), Some(48)));
        assert_eq!(r.models.len(), 2);
        // What the generator names as the main model and its totals win.
        let r = report_of(
            r#"{"model": "small", "tokens_in": 1, "tokens_out": 2,
                "models": [{"name": "big", "tokens_in": 9, "tokens_out": 9}]}"#,
        );
        assert_eq!(
            (r.model.as_deref(), r.tokens_in, r.tokens_out),
            (Some("small"), Some(1), Some(2))
        );
    }

    #[test]
    fn a_hostile_report_is_unreported() {
        let many: Vec<String> = (0..=MAX_PACKET_MODELS)
            .map(|i| format!(r#"{{"name": "m{i}", "tokens_in": 1, "tokens_out": 1}}"#))
            .collect();
        for bad in [
            format!(r#"{{"models": [{}]}}"#, many.join(",")),
            r#"{"models": [{"name": "a\nb", "tokens_in": 1, "tokens_out": 1}]}"#.to_owned(),
            r#"{"models": [{"name": "", "tokens_in": 1, "tokens_out": 1}]}"#.to_owned(),
            r#"{"models": [{"name": "m", "tokens_in": -1, "tokens_out": 1}]}"#.to_owned(),
            r#"{"models": [{"name": "m", "tokens_in": 1, "tokens_out": 1, "x": 1}]}"#.to_owned(),
            r#"{"model": "m", "extra": 1}"#.to_owned(),
        ] {
            let r = report_of(&bad);
            assert!(
                r.model.is_none() && r.models.is_empty() && r.tokens_in.is_none(),
                "{bad}: {r:?}"
            );
        }
        // Sums saturate rather than wrap.
        let r = report_of(&format!(
            r#"{{"models": [{{"name": "a", "tokens_in": {m}, "tokens_out": 0}}, {{"name": "b", "tokens_in": {m}, "tokens_out": 0}}]}}"#,
            m = u64::MAX
        ));
        assert_eq!(r.tokens_in, Some(u64::MAX));
    }
}
