//! The job's scoped model key: `[model_key]` in `.airlock/config.toml` names a command that
//! mints a short-lived, budget-capped key for one job (as LLM gateways such as LiteLLM do
//! with virtual keys), so no team-wide model key ever sits on a worker.
//!
//! Guards against: the key reaching anything long-lived or widely read. It is read from the
//! command's stdout into a zeroizing [`ModelKey`] and goes only into the job token; the
//! bundle's request names the variable, the ledger its fingerprint. The command's stderr is
//! shown only when it fails (when there is no key); a command that hangs is killed after
//! [`MINT_TIMEOUT`]; an oversized or malformed answer is refused without echoing it.
//! Does not check: the budget, the expiry or the scope the gateway gives the key; that is the
//! command's contract (see `docs/GENERATORS.md`, "Model access").

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use airlock_core::format::{check_model_key_env, EgressRule};
use airlock_core::jobid::JobId;
use airlock_core::token::{ModelKey, MAX_MODEL_KEY_BYTES};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

/// How long the minting command may run.
pub const MINT_TIMEOUT: Duration = Duration::from_secs(30);
/// Most stderr bytes kept from a failed command.
const MAX_STDERR_BYTES: u64 = 4096;

/// `[model_key]` in `config.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelKeyConfig {
    /// The command and its arguments (no shell). It prints the key on stdout, one line.
    pub command: Vec<String>,
    /// The variable the worker puts the key in for the generator (e.g. `OPENAI_API_KEY`).
    pub env: String,
    /// Optional: the command (and arguments, no shell) run when the job ends (the gate
    /// concluded, whatever the verdict), so the key can be revoked then rather than at its
    /// expiry; told `AIRLOCK_KEY_EVENT=end`, `AIRLOCK_JOB` and `AIRLOCK_MODEL_KEY_FINGERPRINT`,
    /// never the key. Often the minting program with an `end` argument.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<Vec<String>>,
}

impl ModelKeyConfig {
    /// Checks the config's shape: a command, and a variable name the request accepts.
    pub fn check(&self) -> Result<()> {
        if self.command.first().is_none_or(String::is_empty) {
            bail!("command is empty (config.model-key): name the program that mints a key");
        }
        check_model_key_env(&self.env).map_err(|e| anyhow::anyhow!("env: {e}"))?;
        Ok(())
    }
}

/// What the minting command is told about the job, as environment variables.
pub struct MintFor<'a> {
    /// `AIRLOCK_JOB`.
    pub job: &'a JobId,
    /// `AIRLOCK_MODEL`.
    pub model: &'a str,
    /// `AIRLOCK_TTL_SECS`: the key should not outlive the token.
    pub ttl_secs: u64,
    /// `AIRLOCK_EXPIRES_AT` (unix seconds).
    pub expires_at: u64,
    /// `AIRLOCK_EGRESS`: `host:port` list, comma-separated: where the key can be used from
    /// the sandbox (a gateway may bind the key to these).
    pub egress: &'a [EgressRule],
}

/// Runs the minting command for one job and returns its key (rule `submit.model-key`).
pub fn mint(config: &ModelKeyConfig, job: &MintFor<'_>) -> Result<ModelKey> {
    let (program, args) = config
        .command
        .split_first()
        .context("[model_key] command is empty (config.model-key)")?;
    let egress: Vec<String> = job
        .egress
        .iter()
        .map(|e| format!("{}:{}", e.host, e.port))
        .collect();
    let mut child = Command::new(program)
        .args(args)
        .env("AIRLOCK_JOB", job.job.as_str())
        .env("AIRLOCK_MODEL", job.model)
        .env("AIRLOCK_TTL_SECS", job.ttl_secs.to_string())
        .env("AIRLOCK_EXPIRES_AT", job.expires_at.to_string())
        .env("AIRLOCK_EGRESS", egress.join(","))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!("model key command {program:?}: cannot start (submit.model-key)")
        })?;
    let (Some(mut out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        bail!("model key command {program:?}: no pipes (submit.model-key)");
    };
    // Read both pipes on threads so a chatty stderr cannot block the key, and the wait below
    // can time out.
    let reader = std::thread::spawn(move || {
        let mut buf = Zeroizing::new(Vec::new());
        let r = (&mut out)
            .take(MAX_MODEL_KEY_BYTES as u64 + 3)
            .read_to_end(&mut buf);
        // Drain the rest so the command does not block on a full pipe; it is refused below.
        let extra = std::io::copy(&mut out, &mut std::io::sink()).unwrap_or(0);
        r.map(|_| (buf, extra))
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let mut err = err;
        let _ = (&mut err).take(MAX_STDERR_BYTES).read_to_end(&mut buf);
        let _ = std::io::copy(&mut err, &mut std::io::sink());
        buf
    });
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if started.elapsed() >= MINT_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = reader.join().ok().and_then(Result::ok);
    let stderr = err_reader.join().unwrap_or_default();
    let Some(status) = status else {
        bail!(
            "model key command {program:?} ran past {} s and was killed (submit.model-key)",
            MINT_TIMEOUT.as_secs()
        );
    };
    if !status.success() {
        bail!(
            "model key command {program:?} failed ({status}) (submit.model-key){}",
            stderr_tail(&stderr)
        );
    }
    let Some((bytes, extra)) = stdout else {
        bail!("model key command {program:?}: cannot read its stdout (submit.model-key)");
    };
    let mut text: &[u8] = &bytes;
    for end in [&b"\n"[..], b"\r"] {
        text = text.strip_suffix(end).unwrap_or(text);
    }
    if extra > 0 || text.len() > MAX_MODEL_KEY_BYTES {
        bail!("model key command {program:?} printed more than {MAX_MODEL_KEY_BYTES} bytes (submit.model-key): expected one line, the key");
    }
    let text = std::str::from_utf8(text).map_err(|_| {
        anyhow::anyhow!(
            "model key command {program:?} printed bytes that are not text (submit.model-key)"
        )
    })?;
    ModelKey::new(text.to_owned()).map_err(|_| {
        anyhow::anyhow!("model key command {program:?} printed no key or a malformed one (submit.model-key): expected one line of 1 to {MAX_MODEL_KEY_BYTES} printable ASCII characters without spaces")
    })
}

/// Runs the `[model_key] end` command for `job` (rule `model-key.end`); waits at most
/// [`MINT_TIMEOUT`]; its output is discarded (it never holds anything the trusted side needs).
pub fn run_end(command: &[String], job: &JobId, fingerprint: &str) -> Result<()> {
    let (program, args) = command
        .split_first()
        .context("[model_key] end is empty (model-key.end)")?;
    let mut child = Command::new(program)
        .args(args)
        .env("AIRLOCK_KEY_EVENT", "end")
        .env("AIRLOCK_JOB", job.as_str())
        .env("AIRLOCK_MODEL_KEY_FINGERPRINT", fingerprint)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| {
            format!("model key end command {program:?}: cannot start (model-key.end)")
        })?;
    let started = Instant::now();
    loop {
        if let Some(s) = child.try_wait()? {
            if s.success() {
                return Ok(());
            }
            bail!("model key end command {program:?} failed ({s}) (model-key.end)");
        }
        if started.elapsed() >= MINT_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "model key end command {program:?} ran past {} s and was killed (model-key.end)",
                MINT_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The last lines of a failed command's stderr, made inert, prefixed with `: `.
fn stderr_tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(3)..];
    if tail.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = tail
        .iter()
        .map(|l| airlock_core::text::terminal(l, 200))
        .collect();
    format!(": {}", shown.join(" / "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &std::path::Path, body: &str) -> ModelKeyConfig {
        let p = dir.join("mint.sh");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        ModelKeyConfig {
            command: vec![p.display().to_string()],
            env: "OPENAI_API_KEY".into(),
            end: None,
        }
    }

    fn job() -> JobId {
        JobId::parse("20260101T000000Z-00112233445566778899").unwrap()
    }

    fn mint_with(c: &ModelKeyConfig) -> Result<ModelKey> {
        let job = job();
        let egress = [EgressRule {
            host: "llm.example.com".into(),
            port: 443,
        }];
        mint(
            c,
            &MintFor {
                job: &job,
                model: "m",
                ttl_secs: 60,
                expires_at: 99,
                egress: &egress,
            },
        )
    }

    #[test]
    fn the_command_learns_the_job_and_its_stdout_is_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let c = script(
            dir.path(),
            r#"echo "minting" >&2; echo "sk-$AIRLOCK_JOB-$AIRLOCK_TTL_SECS-$AIRLOCK_EGRESS""#,
        );
        let k = mint_with(&c).unwrap();
        assert_eq!(k.expose(), format!("sk-{}-60-llm.example.com:443", job()));
    }

    #[test]
    fn failures_name_the_rule_and_never_the_printed_text() {
        let dir = tempfile::tempdir().unwrap();
        for (body, want) in [
            ("echo oops >&2; exit 3", "oops"),
            ("echo", "malformed"),
            ("echo 'two words'", "malformed"),
            ("head -c 5000 /dev/zero | tr '\\0' k", "more than"),
        ] {
            let Err(e) = mint_with(&script(dir.path(), body)) else {
                panic!("{body}: minted a key");
            };
            let e = format!("{e:#}");
            assert!(
                e.contains("submit.model-key") && e.contains(want),
                "{body}: {e}"
            );
            assert!(!e.contains("two words") && !e.contains("kkkk"), "{e}");
        }
    }

    #[test]
    fn config_refuses_an_empty_command_and_a_reserved_variable() {
        let c = ModelKeyConfig {
            command: vec![],
            env: "OPENAI_API_KEY".into(),
            end: None,
        };
        assert!(c.check().is_err());
        let c = ModelKeyConfig {
            command: vec!["x".into()],
            env: "PATH".into(),
            end: None,
        };
        assert!(format!("{:#}", c.check().unwrap_err()).contains("request.model-key-env"));
    }
}
