//! Benchmark driver (not a test; run it through `bench/jobs.sh`): N jobs through the
//! in-process S3 server (`airlock_tests::s3`, s3s + s3s-fs, SigV4 enforced), K lanes at once.
//! Each lane runs the real binaries for one job after another: `airlock submit` (pack,
//! upload, record, ledger) -> `airlock-worker run` (only the token; a trivial generator that
//! copies the prompt, which holds a per-job nonce, into the tree) -> `airlock fetch` (verify).
//!
//! Prints jobs/s, end-to-end latency per job (submit start to verified fetch) at p50/p99,
//! the same minus the generator's own run time (the overhead), each stage's p50/p99, and
//! where the server's time went (requests by kind). Then checks that no job was lost or
//! misattributed: every job fetched exactly once, its packet names it, and its patch carries
//! its own nonce and no other.
//!
//! Usage: bench-jobs --airlock BIN --worker BIN --repo DIR [--jobs N] [--lanes K] [--keep DIR]
//!        bench-jobs --serve     (just the server, for profiling by hand, until stdin closes)
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use airlock_tests::s3::S3Server;

struct Args {
    airlock: PathBuf,
    worker: PathBuf,
    repo: PathBuf,
    jobs: usize,
    lanes: usize,
    keep: Option<PathBuf>,
}

fn args() -> Args {
    let mut a = Args {
        airlock: PathBuf::new(),
        worker: PathBuf::new(),
        repo: PathBuf::new(),
        jobs: 200,
        lanes: 4,
        keep: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--airlock" => a.airlock = val().into(),
            "--worker" => a.worker = val().into(),
            "--repo" => a.repo = val().into(),
            "--jobs" => a.jobs = val().parse().expect("--jobs N"),
            "--lanes" => a.lanes = val().parse().expect("--lanes K"),
            "--keep" => a.keep = Some(val().into()),
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(
        a.airlock.is_file() && a.worker.is_file(),
        "--airlock and --worker"
    );
    assert!(
        a.repo.join(".git").exists(),
        "--repo must be a git repository"
    );
    a
}

/// One job's measurements.
#[derive(Clone, Debug)]
struct Done {
    index: usize,
    job: String,
    nonce: String,
    submit: Duration,
    work: Duration,
    fetch: Duration,
    total: Duration,
    generator: Duration,
    /// Child CPU per stage (meaningful only when one job runs at a time).
    cpu: [Duration; 3],
}

struct Bench {
    args: Args,
    s3: S3Server,
    dir: PathBuf,
    home: PathBuf,
    generator: PathBuf,
}

impl Bench {
    fn airlock(&self) -> Command {
        let mut c = Command::new(&self.args.airlock);
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.dir)
            .arg("--home")
            .arg(&self.home)
            .arg("-q");
        for (k, v) in self.s3.aws_env() {
            c.env(k, v);
        }
        // `AIRLOCK_PACK_CACHE=off bench/jobs.sh` measures every submit packing from scratch.
        if let Some(v) = std::env::var_os("AIRLOCK_PACK_CACHE") {
            c.env("AIRLOCK_PACK_CACHE", v);
        }
        c
    }

    fn run_ok(what: &str, c: &mut Command) -> Output {
        let out = c
            .output()
            .unwrap_or_else(|e| panic!("{what}: cannot spawn: {e}"));
        if !out.status.success() {
            panic!(
                "{what} failed ({:?}):\n{}\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        out
    }

    fn one(&self, index: usize) -> Done {
        let nonce = format!("bench-nonce-{index:05}-{:08x}", rand32(index));
        let jobdir = self.dir.join("lanes").join(index.to_string());
        std::fs::create_dir_all(&jobdir).unwrap();
        let prompt = jobdir.join("prompt.txt");
        std::fs::write(&prompt, format!("{nonce}\n")).unwrap();
        let token = jobdir.join("token");

        let c0 = cpu().1;
        let t0 = Instant::now();
        let out = Bench::run_ok(
            "submit",
            self.airlock()
                .args(["submit", "--json", "--redact", "--ttl", "1h", "--repo"])
                .arg(&self.args.repo)
                .arg("--prompt-file")
                .arg(&prompt)
                .arg("--token-out")
                .arg(&token),
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let job = v["job"].as_str().unwrap().to_owned();
        let t1 = Instant::now();
        let c1 = cpu().1;

        let work_root = jobdir.join("work");
        std::fs::create_dir_all(&work_root).unwrap();
        chmod(&jobdir, 0o755);
        chmod(&work_root, 0o755);
        Bench::run_ok(
            "worker",
            Command::new(&self.args.worker)
                .env_clear()
                .env("PATH", "/usr/local/bin:/usr/bin:/bin")
                .env("HOME", &jobdir)
                .arg("run")
                .arg("--token-file")
                .arg(&token)
                .arg("--trusted-pub")
                .arg(self.home.join("trusted.pub"))
                .arg("--work-root")
                .arg(&work_root)
                .arg("--")
                .arg(&self.generator),
        );
        let t2 = Instant::now();
        let c2 = cpu().1;

        let out = Bench::run_ok("fetch", self.airlock().args(["fetch", "--json", &job]));
        let t3 = Instant::now();
        let c3 = cpu().1;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            v["job"].as_str(),
            Some(job.as_str()),
            "fetch answered for another job"
        );
        let (packet, _) = read_artifact(&self.home.join("jobs").join(&job).join("artifact.tar.gz"));
        let generator =
            Duration::from_millis(packet["timings"]["generator_ms"].as_u64().unwrap_or(0));
        Done {
            index,
            job,
            nonce,
            submit: t1 - t0,
            work: t2 - t1,
            fetch: t3 - t2,
            total: t3 - t0,
            generator,
            cpu: [c1 - c0, c2 - c1, c3 - c2],
        }
    }
}

fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A per-run random-ish word (no RNG dependency): time and index hashed.
fn rand32(i: usize) -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut x = t ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x as u32
}

/// `packet.json` (parsed) and `patch.diff` of an artifact.
fn read_artifact(path: &Path) -> (serde_json::Value, String) {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(f));
    let (mut packet, mut patch) = (None, String::new());
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().to_string_lossy().into_owned();
        let mut buf = Vec::new();
        e.read_to_end(&mut buf).unwrap();
        match name.as_str() {
            "packet.json" => packet = Some(serde_json::from_slice(&buf).unwrap()),
            "patch.diff" => patch = String::from_utf8_lossy(&buf).into_owned(),
            _ => {}
        }
    }
    (packet.expect("packet.json"), patch)
}

/// CPU time so far (user + system) of this process (the in-process S3 server, and the lanes'
/// own work: spawning, reading the outputs and the artifact, about 1 ms per job in a profile)
/// and of its reaped children (airlock, airlock-worker, git, the
/// generator), from `/proc/self/stat` in clock ticks (`getconf CLK_TCK`, 100 on Linux).
fn cpu() -> (Duration, Duration) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // After the command: state is f[0]; utime, stime, cutime, cstime are fields 14-17 of the
    // whole line, i.e. f[11..15].
    let tick = Duration::from_millis(10);
    (tick * (f[11] + f[12]) as u32, tick * (f[13] + f[14]) as u32)
}

/// Busy and total time of all CPUs so far (`/proc/stat`, clock ticks): busy is everything
/// but idle and iowait.
fn machine_cpu() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let f: Vec<u64> = line
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let all: u64 = f.iter().take(8).sum();
    let idle = f.get(3)? + f.get(4)?;
    Some((all - idle, all))
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn stats(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let mean = v.iter().sum::<Duration>() / u32::try_from(v.len().max(1)).unwrap();
    println!(
        "  {name:<28} p50 {:>9}  p99 {:>9}  mean {:>9}",
        ms(pct(&v, 0.50)),
        ms(pct(&v, 0.99)),
        ms(mean)
    );
}

/// Where the S3 server keeps its objects: `S3_DATA_DIR` if set, else `/dev/shm` (a tmpfs on
/// Linux) when it is a writable directory, else the temp directory (`TMPDIR`). The server
/// stands in for a remote store, whose disks are not the trusted host's or the worker's, and
/// each of its PUTs creates and renames three files (inode allocation and removal on the disk
/// and cores the binaries under test use).
fn s3_data_parent() -> PathBuf {
    if let Some(d) = std::env::var_os("S3_DATA_DIR") {
        return PathBuf::from(d);
    }
    let shm = Path::new("/dev/shm");
    if shm.is_dir() && tempfile::tempdir_in(shm).is_ok() {
        return shm.to_owned();
    }
    std::env::temp_dir()
}

/// Starts the S3 server with its threads on the last CPU, unless `S3_PIN=off` or there is one
/// CPU; returns it and the CPU it is pinned to.
///
/// s3s-fs hands every file operation to tokio's blocking pool, so each request is a dozen
/// thread hand-offs; between two CPUs each is a cross-CPU wake-up (an inter-processor
/// interrupt: a VM exit here), which made up most of the server's CPU time on this 2-core VM
/// (about 2x, measured by pinning the same server with `taskset`). Pinned, the server uses at
/// most one core and the binaries under test still run on all of them. Affinity is per
/// thread and inherited: the main thread is pinned while the runtime starts its threads (its
/// blocking threads are started by those later), then unpinned before the lanes and their
/// children start. Done with `taskset` (util-linux); without it the server is not pinned.
fn start_server(data: &Path) -> (S3Server, Option<usize>) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pin = cores > 1 && std::env::var("S3_PIN").map_or(true, |v| v != "off");
    let taskset = |cpus: &str| {
        Command::new("taskset")
            .args(["-p", "-c", cpus, &std::process::id().to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let pinned = pin && taskset(&(cores - 1).to_string());
    let s3 = S3Server::start_with(data, server_threads());
    if pinned {
        assert!(
            taskset(&format!("0-{}", cores - 1)),
            "cannot unpin the driver's main thread"
        );
    }
    (s3, pinned.then_some(cores - 1))
}

/// The S3 server's runtime threads: `S3_THREADS`, default 1 (see [`S3Server::start_with`]).
fn server_threads() -> usize {
    std::env::var("S3_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--serve") {
        // For profiling by hand: the same server, until stdin closes.
        let (s3, _) = start_server(&s3_data_parent());
        for (k, v) in s3.aws_env() {
            println!("export {k}={v}");
        }
        println!("# store: {}", s3.store_url("bench"));
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        return;
    }
    let args = args();
    let tmp = tempfile::tempdir().unwrap();
    let dir = match &args.keep {
        Some(d) => {
            std::fs::create_dir_all(d).unwrap();
            d.canonicalize().unwrap()
        }
        None => tmp.path().canonicalize().unwrap(),
    };
    chmod(&dir, 0o755);
    let data = s3_data_parent();
    let (s3, pinned) = start_server(&data);
    println!(
        "S3 server data under {} (S3_DATA_DIR), {} runtime thread(s) (S3_THREADS), {} \
         (S3_PIN); run files (home, repository, worker run directories) under {}",
        data.display(),
        server_threads(),
        pinned.map_or_else(|| "not pinned".to_owned(), |c| format!("pinned to CPU {c}")),
        dir.display()
    );
    let home = dir.join("home");
    let generator = dir.join("copy-prompt.sh");
    std::fs::write(
        &generator,
        // Shell builtins only: a `cp` would be a second process (fork, exec, dynamic loading:
        // about 1.5 ms of CPU per job here) that belongs to the stand-in generator, not to
        // airlock. The copy is line by line, which is exact for these one-line prompts.
        "#!/bin/sh\n# Trivial generator: the prompt (a per-job nonce) becomes a new file.\nset -eu\n\
         while IFS= read -r line; do printf '%s\\n' \"$line\"; done \\\n  \
         < \"$AIRLOCK_PROMPT_FILE\" > \"$AIRLOCK_WORKDIR/BENCH-NONCE.txt\"\n",
    )
    .unwrap();
    chmod(&generator, 0o755);
    let bench = Bench {
        args,
        s3,
        dir: dir.clone(),
        home,
        generator,
    };
    Bench::run_ok(
        "init",
        bench
            .airlock()
            .args(["init", "--store", &bench.s3.store_url("bench")]),
    );
    // Warm-up (page cache, first-run costs), not counted.
    let warm = bench.one(usize::MAX / 2);
    println!(
        "warm-up job {} in {} (submit {}, worker {}, fetch {})",
        warm.job,
        ms(warm.total),
        ms(warm.submit),
        ms(warm.work),
        ms(warm.fetch)
    );
    // Calibration, one job at a time: CPU per stage (reaped children) and of the server
    // (this process), plus what one bare process start and one pack of the repo cost.
    let calib = 20u32;
    let (mut spawn, mut pack, mut pack_fresh) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let mut stage = [Duration::ZERO; 3];
    let mut calib_wall = Duration::ZERO;
    let probe = |c: &mut Command| {
        let c0 = cpu().1;
        Bench::run_ok("probe", c);
        cpu().1 - c0
    };
    let mut server = Duration::ZERO;
    for i in 0..calib {
        spawn += probe(bench.airlock().arg("--version"));
        let out = bench.dir.join("calib-pack");
        let _ = std::fs::remove_dir_all(&out);
        let pack_cmd = || {
            let mut c = bench.airlock();
            c.args(["pack", "--redact", "--repo"])
                .arg(&bench.args.repo)
                .arg("--prompt-file")
                .arg(&bench.generator)
                .arg("--out")
                .arg(&out);
            c
        };
        pack += probe(&mut pack_cmd());
        let _ = std::fs::remove_dir_all(&out);
        pack_fresh += probe(pack_cmd().env("AIRLOCK_PACK_CACHE", "off"));
        let s0 = cpu().0;
        let d = bench.one(usize::MAX / 4 + i as usize);
        server += cpu().0 - s0;
        calib_wall += d.total;
        for (k, c) in d.cpu.iter().enumerate() {
            stage[k] += *c;
        }
    }
    let job_cpu: Duration = stage.iter().sum::<Duration>() / calib;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "calibration, {calib} jobs one at a time: {} wall per job; CPU per job: submit {} \
         (a bare `airlock --version` {}, `airlock pack` alone {}, or {} packing every file \
         again with AIRLOCK_PACK_CACHE=off), worker {} (sandbox and generator included), \
         fetch {}, S3 server {}; total {} -> at most {:.0} jobs/s on {cores} cores if nothing \
         else ran",
        ms(calib_wall / calib),
        ms(stage[0] / calib),
        ms(spawn / calib),
        ms(pack / calib),
        ms(pack_fresh / calib),
        ms(stage[1] / calib),
        ms(stage[2] / calib),
        ms(server / calib),
        ms(job_cpu + server / calib),
        cores as f64 / (job_cpu + server / calib).as_secs_f64(),
    );
    let log_start = bench.s3.log().len();

    let n = bench.args.jobs;
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Done>> = Mutex::new(Vec::with_capacity(n));
    let started = Instant::now();
    let (server0, children0) = cpu();
    let machine0 = machine_cpu();
    std::thread::scope(|s| {
        for _ in 0..bench.args.lanes {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    return;
                }
                let d = bench.one(i);
                done.lock().unwrap().push(d);
            });
        }
    });
    let wall = started.elapsed();
    let (server1, children1) = cpu();
    let machine1 = machine_cpu();
    let done = done.into_inner().unwrap();

    println!(
        "\n{n} jobs, {} lanes, in-process S3 (s3s + s3s-fs, SigV4) on {}",
        bench.args.lanes,
        bench.s3.endpoint()
    );
    println!(
        "throughput: {:.1} jobs/s ({} wall)",
        n as f64 / wall.as_secs_f64(),
        ms(wall)
    );
    // CPU of the whole run, per job: this process (the S3 server and the lanes' own work) and
    // every child (airlock, airlock-worker, git, the sandbox helper, the generator).
    let per_job = |d: Duration| d / u32::try_from(n.max(1)).unwrap();
    let (server_cpu, binaries_cpu) = (per_job(server1 - server0), per_job(children1 - children0));
    println!(
        "CPU per job in this run: {} (binaries and their children {}, S3 server and driver {}); \
         {:.0}% of {cores} cores",
        ms(server_cpu + binaries_cpu),
        ms(binaries_cpu),
        ms(server_cpu),
        100.0 * ((server1 - server0) + (children1 - children0)).as_secs_f64()
            / (wall.as_secs_f64() * cores as f64),
    );
    if let (Some((busy0, all0)), Some((busy1, all1))) = (machine0, machine1) {
        // The machine may be shared: what everything else ran during the run, from /proc/stat.
        let busy = (busy1 - busy0) as f64 / (all1 - all0).max(1) as f64;
        let ours = ((server1 - server0) + (children1 - children0)).as_secs_f64()
            / (wall.as_secs_f64() * cores as f64);
        println!(
            "machine during the run: {:.0}% busy ({:.0}% this run, {:.0}% other processes)",
            100.0 * busy,
            100.0 * ours,
            100.0 * (busy - ours).max(0.0)
        );
    }
    stats("end to end", done.iter().map(|d| d.total).collect());
    stats(
        "overhead (minus generator)",
        done.iter()
            .map(|d| d.total.saturating_sub(d.generator))
            .collect(),
    );
    stats("  submit", done.iter().map(|d| d.submit).collect());
    stats("  worker", done.iter().map(|d| d.work).collect());
    stats(
        "    of which generator",
        done.iter().map(|d| d.generator).collect(),
    );
    stats("  fetch", done.iter().map(|d| d.fetch).collect());

    // Where the server's time went: requests per job by kind.
    let log = &bench.s3.log()[log_start..];
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for l in log {
        let area = l.path.split('/').nth(3).unwrap_or("?").to_owned();
        let kind = if l.query.contains("list-type") {
            format!("LIST {area}")
        } else {
            format!("{} {area}", l.method)
        };
        *kinds.entry(kind).or_default() += 1;
    }
    println!(
        "server: {} requests ({:.1} per job)",
        log.len(),
        log.len() as f64 / n as f64
    );
    for (k, c) in &kinds {
        println!("  {k:<20} {c:>6}  ({:.1} per job)", *c as f64 / n as f64);
    }

    // Nothing lost, nothing misattributed.
    let mut problems = Vec::new();
    let indices: BTreeSet<usize> = done.iter().map(|d| d.index).collect();
    if done.len() != n || indices.len() != n {
        problems.push(format!("{} results for {n} jobs", done.len()));
    }
    let ids: BTreeSet<&str> = done.iter().map(|d| d.job.as_str()).collect();
    if ids.len() != done.len() {
        problems.push("two results share a job id".to_owned());
    }
    let nonces: BTreeMap<&str, &str> = done
        .iter()
        .map(|d| (d.nonce.as_str(), d.job.as_str()))
        .collect();
    for d in &done {
        let (packet, patch) =
            read_artifact(&bench.home.join("jobs").join(&d.job).join("artifact.tar.gz"));
        if packet["job"].as_str() != Some(d.job.as_str()) {
            problems.push(format!("job {}: packet names {}", d.job, packet["job"]));
        }
        if !patch.contains(&d.nonce) {
            problems.push(format!("job {}: its patch lacks its nonce", d.job));
        }
        for (other, owner) in &nonces {
            if *owner != d.job && patch.contains(other) {
                problems.push(format!(
                    "job {}: its patch carries job {owner}'s nonce",
                    d.job
                ));
            }
        }
    }
    let out = Bench::run_ok("status", bench.airlock().args(["status", "--json"]));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let landed = status
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["state"] == "landed" && ids.contains(s["job"].as_str().unwrap_or("")))
        .count();
    if landed != n {
        problems.push(format!("status: {landed} of {n} jobs landed"));
    }
    let out = Bench::run_ok("audit verify", bench.airlock().args(["audit", "verify"]));
    let first = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned();
    if problems.is_empty() {
        println!("check: all {n} jobs fetched once, each packet names its job, each patch carries its own nonce and no other; status: {landed} landed; {first}");
    } else {
        for p in &problems {
            println!("PROBLEM: {p}");
        }
        std::process::exit(1);
    }
}
