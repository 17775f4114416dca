//! The campaign's bench: a trusted home on a `file://` store or on the in-process S3 server, a
//! two-file repository, trivial generators and a work root, all in one temp dir; the real
//! binaries run with a cleared environment (the worker gets its token and nothing else).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

use airlock_tests::s3::S3Server;
use airlock_tests::*;

/// The generators: one edit; an edit, a wait of `$1` seconds, a second edit.
const GENERATORS: [(&str, &str); 2] = [
    ("edit.sh", "#!/bin/sh\nset -eu\nprintf 'hello\\nworld, edited\\n' > a.txt\n"),
    (
        "slow_edit.sh",
        "#!/bin/sh\nset -eu\nprintf 'progress\\n' > progress.txt\nsleep \"$1\"\nprintf 'hello\\nworld, edited\\n' > a.txt\n",
    ),
];

/// A submitted job.
pub struct Job {
    pub id: String,
    pub token_file: PathBuf,
}

pub struct Lab {
    pub root: PathBuf,
    pub home: PathBuf,
    pub repo: PathBuf,
    pub work_root: PathBuf,
    gens: PathBuf,
    prompt: PathBuf,
    pub s3: Option<S3Server>,
    tokens: AtomicU32,
    _tmp: tempfile::TempDir,
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

impl Lab {
    /// A trusted home on its default `file://` store.
    pub fn local() -> Lab {
        Lab::new(None)
    }

    /// A trusted home on `s3://airlock/faults` on a fresh in-process server.
    pub fn s3() -> Lab {
        Lab::new(Some(S3Server::start()))
    }

    fn new(s3: Option<S3Server>) -> Lab {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        chmod(&root, 0o755);
        let repo = root.join("repo");
        make_repo(
            &repo,
            &[("a.txt", b"hello\nworld\n"), ("README.md", b"# r\n")],
        );
        let gens = root.join("gens");
        std::fs::create_dir(&gens).unwrap();
        chmod(&gens, 0o755);
        for (name, body) in GENERATORS {
            std::fs::write(gens.join(name), body).unwrap();
            chmod(&gens.join(name), 0o755);
        }
        let prompt = root.join("prompt.txt");
        std::fs::write(&prompt, "Edit a.txt.\n").unwrap();
        let lab = Lab {
            home: root.join("home"),
            work_root: root.join("wr"),
            repo,
            gens,
            prompt,
            s3,
            tokens: AtomicU32::new(0),
            root,
            _tmp: tmp,
        };
        let mut init = lab.airlock();
        init.arg("init");
        if let Some(s3) = &lab.s3 {
            init.args(["--store", &s3.store_url("faults")]);
        }
        let out = run(&mut init);
        assert!(out.status.success(), "init: {}", show(&out));
        lab
    }

    /// `airlock --home HOME`, with the S3 credentials when the store is S3.
    pub fn airlock(&self) -> Command {
        self.airlock_via(None)
    }

    /// [`Lab::airlock`] talking to `endpoint` instead of the server (a proxy in between: the
    /// URLs it presigns name that endpoint).
    pub fn airlock_via(&self, endpoint: Option<&str>) -> Command {
        let mut c = cmd(&bin("airlock"));
        c.arg("--home").arg(&self.home);
        if let Some(s3) = &self.s3 {
            for (k, v) in s3.aws_env() {
                c.env(k, v);
            }
            if let Some(e) = endpoint {
                c.env("AWS_ENDPOINT", e);
            }
        }
        c
    }

    /// `airlock submit` (ttl and limits in `extra`), the token to a new file.
    pub fn submit(&self, extra: &[&str]) -> Job {
        self.submit_via(None, extra)
    }

    pub fn submit_via(&self, endpoint: Option<&str>, extra: &[&str]) -> Job {
        let n = self.tokens.fetch_add(1, Ordering::Relaxed);
        let token_file = self.root.join(format!("{n}.token"));
        let out = run(self
            .airlock_via(endpoint)
            .arg("submit")
            .arg("--repo")
            .arg(&self.repo)
            .arg("--prompt-file")
            .arg(&self.prompt)
            .arg("--token-out")
            .arg(&token_file)
            .arg("--json")
            .args(extra));
        assert!(out.status.success(), "submit: {}", show(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        Job {
            id: v["job"].as_str().unwrap().to_owned(),
            token_file,
        }
    }

    /// A generator's path.
    pub fn gen(&self, name: &str) -> String {
        self.gens.join(name).to_string_lossy().into_owned()
    }

    /// `airlock-worker run` for `job` in `work_root`, running `generator`; nothing in its
    /// environment but PATH and an empty HOME.
    pub fn worker_in(&self, work_root: &Path, job: &Job, generator: &[&str]) -> Command {
        let home = self.root.join("worker-home");
        std::fs::create_dir_all(&home).unwrap();
        let mut c = Command::new(bin("airlock-worker"));
        c.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &home)
            .arg("run")
            .arg("--token-file")
            .arg(&job.token_file)
            .arg("--trusted-pub")
            .arg(self.home.join("trusted.pub"))
            .arg("--work-root")
            .arg(work_root)
            .arg("--")
            .args(generator);
        c
    }

    pub fn worker(&self, job: &Job, generator: &[&str]) -> Command {
        self.worker_in(&self.work_root, job, generator)
    }

    /// Runs the worker with the one-edit generator; `None` when this machine cannot sandbox
    /// ([`needs_sandbox_skip`]: a failure under CI).
    pub fn work(&self, job: &Job) -> Option<Output> {
        let out = run(&mut self.worker(job, &[&self.gen("edit.sh")]));
        (!needs_sandbox_skip(&out)).then_some(out)
    }

    pub fn fetch(&self, job: &Job) -> Output {
        run(self.airlock().args(["fetch", &job.id, "--json"]))
    }

    pub fn gate(&self, job: &Job) -> Output {
        run(self
            .airlock()
            .args(["gate", &job.id, "--json", "--repo"])
            .arg(&self.repo))
    }

    /// `airlock watch --once`: gates every landed job the ledger has no decision for.
    pub fn watch_once(&self) -> Output {
        run(self
            .airlock()
            .args(["watch", "--once", "--repo"])
            .arg(&self.repo))
    }

    pub fn audit_verify(&self) -> Output {
        run(self.airlock().args(["audit", "verify"]))
    }

    /// The job's `(fetch, gate)` entry counts in a ledger that verifies; `None` when `audit
    /// show` fails.
    pub fn entries(&self, job: &Job) -> Option<(usize, usize)> {
        let out = run(self.airlock().args(["audit", "show", &job.id, "--json"]));
        if !out.status.success() {
            return None;
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        Some((v["fetches"].as_array()?.len(), v["gates"].as_array()?.len()))
    }

    /// `run-*` directories left in `work_root`.
    pub fn run_dirs(work_root: &Path) -> Vec<PathBuf> {
        let Ok(rd) = std::fs::read_dir(work_root) else {
            return Vec::new();
        };
        rd.map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("run-"))
            .collect()
    }
}

/// Lines of stderr that start with `error`: a command that stops must say why in one.
pub fn error_lines(out: &Output) -> usize {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("error"))
        .count()
}
