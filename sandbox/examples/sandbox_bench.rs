//! Benchmark (not a test; run by `bench/sandbox.sh`): the sandbox's start-up overhead per
//! job against a plain child process, interleaved in one run so both see the same machine.
//!
//! For each mode it spawns a trivial generator (`/bin/true`) `RUNS` times and takes the
//! median wall time from "spawn" to "outcome" (what a worker pays per job, the whole tree
//! reaped); then it runs a 1-second generator (`sleep 1`) a few times per mode and reports
//! the sandbox's extra time as a percentage of that second. Modes: a bare
//! `std::process::Command` (no runner), `Mode::Unsandboxed` (the runner alone: helper,
//! process group, capped log), `Mode::Namespaces` and `Mode::LandlockSeccomp`.
//!
//! Usage: `sandbox_bench [RUNS] [LONG_RUNS]` (defaults 200 and 5). Like every host binary,
//! it dispatches the helper subcommand first.

use std::error::Error;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use airlock_sandbox::{spawn, LogSink, Mode, SandboxSpec, HELPER_SUBCOMMAND};

fn main() -> Result<(), Box<dyn Error>> {
    if std::env::args_os().nth(1).as_deref() == Some(HELPER_SUBCOMMAND.as_ref()) {
        airlock_sandbox::child_main();
    }
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().map_or(Ok(200), |a| a.parse())?;
    let long_runs: usize = args.next().map_or(Ok(5), |a| a.parse())?;
    let exe = std::env::current_exe()?;
    let dir = tempfile_dir()?;

    let modes = [
        ("plain child (Command)", None),
        ("runner only (none)", Some(Mode::Unsandboxed)),
        ("namespaces+landlock+seccomp", Some(Mode::Namespaces)),
        ("landlock+seccomp", Some(Mode::LandlockSeccomp)),
    ];
    let mut available = Vec::new();
    for (name, mode) in modes {
        match once(&exe, &dir, mode, "/bin/true", &[]) {
            Ok(_) => available.push((name, mode)),
            Err(e) => println!("{name:<30} unavailable here: {e}"),
        }
    }

    // Interleave the modes so drift (other jobs on the machine) hits all of them alike.
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); available.len()];
    for _ in 0..runs {
        for (i, (_, mode)) in available.iter().enumerate() {
            samples[i].push(once(&exe, &dir, *mode, "/bin/true", &[])?);
        }
    }
    let medians: Vec<Duration> = samples.iter_mut().map(|s| median(s)).collect();
    let pick = |want: Option<Mode>, of: &[Duration]| {
        available
            .iter()
            .zip(of)
            .find(|((_, m), _)| *m == want)
            .map(|(_, d)| *d)
    };
    let plain = pick(None, &medians).ok_or("a plain child must run")?;
    let runner = pick(Some(Mode::Unsandboxed), &medians).ok_or("the runner must run")?;
    println!("\ntrivial generator (/bin/true), {runs} runs per mode, median spawn->outcome:");
    for ((name, _), d) in available.iter().zip(&medians) {
        println!(
            "  {name:<30} {:>7.2} ms   {:>5.2}x a plain child   {:>5.2}x the runner alone",
            ms(*d),
            d.as_secs_f64() / plain.as_secs_f64(),
            d.as_secs_f64() / runner.as_secs_f64()
        );
    }

    println!("\n1-second generator (sleep 1), {long_runs} runs per mode, median:");
    let mut long: Vec<Duration> = Vec::new();
    for (_, mode) in &available {
        let mut s = Vec::with_capacity(long_runs);
        for _ in 0..long_runs {
            s.push(once(&exe, &dir, *mode, "/bin/sleep", &["1"])?);
        }
        long.push(median(&mut s));
    }
    let long_plain = pick(None, &long).ok_or("a plain child must run")?;
    let mut worst: f64 = 0.0;
    for (((name, mode), d), short) in available.iter().zip(&long).zip(&medians) {
        // Start-up overhead per job: this mode's trivial job minus a plain child's.
        let pct_startup = 100.0 * short.saturating_sub(plain).as_secs_f64();
        let pct_measured = 100.0 * (d.as_secs_f64() - long_plain.as_secs_f64());
        if mode.is_some() {
            worst = worst.max(pct_startup);
        }
        println!(
            "  {name:<30} {:>8.2} ms   start-up overhead {pct_startup:>5.2}% of 1 s \
             (seen on the 1 s run itself: {pct_measured:>+5.2}%)",
            ms(*d)
        );
    }
    let verdict = if worst < 5.0 { "OK" } else { "OVER" };
    println!(
        "\nworst start-up overhead (any mode, vs a plain child) on a 1-second run: {worst:.2}% \
         (target < 5%): {verdict}"
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// One job: spawn, wait for the outcome (the whole tree reaped), remove the log.
fn once(
    exe: &Path,
    dir: &Path,
    mode: Option<Mode>,
    program: &str,
    args: &[&str],
) -> Result<Duration, Box<dyn Error>> {
    let start = Instant::now();
    let Some(mode) = mode else {
        let st = Command::new(program).args(args).env_clear().status()?;
        if !st.success() {
            return Err(format!("{program} failed: {st}").into());
        }
        return Ok(start.elapsed());
    };
    let mut spec = SandboxSpec::new(program, dir.join("work"), dir.join("tmp"));
    spec.args = args.iter().map(Into::into).collect();
    spec.env = vec![("PATH".into(), "/usr/bin:/bin".into())];
    spec.mode = mode;
    let log = LogSink {
        path: dir.join("generator.log"),
        max_bytes: 1 << 20,
    };
    let result = spawn(exe, &[HELPER_SUBCOMMAND], &spec, &log).and_then(|mut r| r.wait());
    let took = start.elapsed();
    let _ = std::fs::remove_file(&log.path);
    match result {
        Ok(o) if o.status.success() => Ok(took),
        Ok(o) => Err(format!("{program} in {mode:?}: {:?}", o.status).into()),
        Err(e) => Err(e.into()),
    }
}

fn tempfile_dir() -> Result<std::path::PathBuf, Box<dyn Error>> {
    use std::os::unix::fs::PermissionsExt;
    let base = std::env::temp_dir().join(format!("airlock-sandbox-bench.{}", std::process::id()));
    std::fs::create_dir(&base)?;
    // Searchable by the sandbox identity when the benchmark runs as root.
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o711))?;
    std::fs::create_dir(base.join("work"))?;
    std::fs::create_dir(base.join("tmp"))?;
    Ok(base)
}

fn median(s: &mut [Duration]) -> Duration {
    s.sort();
    s.get(s.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
