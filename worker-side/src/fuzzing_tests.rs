//! The `gitignore` helper on the committed seeds (`fuzz/corpus/gitignore/`), compared with
//! real git, and on mutations of them.

use std::path::Path;
use std::process::Command;

use airlock_testkit::fuzz::{corpus, Lcg};

use super::*;

fn seeds() -> Vec<(String, Vec<u8>)> {
    corpus("gitignore", "seed-")
}

#[test]
fn every_seed_keeps_the_invariants_and_mixes_answers() {
    let all = seeds();
    assert!(all.len() >= 3, "seeds missing: {}", all.len());
    for (name, bytes) in &all {
        let case = parse_case(bytes);
        assert!(!case.files.is_empty() && case.paths.len() >= 10, "{name}");
        assert_eq!(gitignore(bytes), Outcome::Mixed, "{name}");
    }
}

/// git's own answer (`git check-ignore --no-index`) for each path of a case, in a fresh
/// repository holding the case's `.gitignore` files.
fn git_answers(case: &Case) -> Option<Vec<bool>> {
    let repo = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(repo.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
    };
    match git(&["init", "-q"]) {
        Ok(o) if o.status.success() => {}
        _ => return None,
    }
    for (path, bytes) in &case.files {
        let at = repo.path().join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, bytes).unwrap();
    }
    let answers = case
        .paths
        .iter()
        .map(|(path, is_dir)| {
            let asked = if *is_dir {
                format!("{path}/")
            } else {
                path.clone()
            };
            let out = git(&["check-ignore", "--no-index", "-q", "--", &asked]).unwrap();
            match out.status.code() {
                Some(0) => true,
                Some(1) => false,
                _ => panic!("git check-ignore {asked:?}: {:?}", out),
            }
        })
        .collect();
    Some(answers)
}

/// The matcher says what git says on every seed path.
#[test]
fn seeds_agree_with_git() {
    for (name, bytes) in seeds() {
        let case = parse_case(&bytes);
        let Some(git) = git_answers(&case) else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "git is missing under CI"
            );
            eprintln!("skipped: git is not installed");
            return;
        };
        let rules = Rules::from_files(case.files.clone());
        for ((path, is_dir), expected) in case.paths.iter().zip(git) {
            assert_eq!(
                rules.ignores(path, *is_dir),
                expected,
                "{name}: {path:?} (dir: {is_dir}): git says ignored = {expected}"
            );
        }
    }
}

#[test]
fn mutated_seeds_keep_the_invariants() {
    let pool: Vec<Vec<u8>> = seeds().into_iter().map(|(_, b)| b).collect();
    let mut rng = Lcg(3);
    const BYTES: &[u8] = b"*?[]!/\\#.\n -a";
    for _ in 0..400 {
        let mut input = pool[rng.below(pool.len())].clone();
        for _ in 0..=rng.below(6) {
            let at = rng.below(input.len() + 1);
            match rng.below(3) {
                0 if at < input.len() => input[at] = BYTES[rng.below(BYTES.len())],
                1 if at < input.len() => {
                    input.remove(at);
                }
                _ => input.insert(at, BYTES[rng.below(BYTES.len())]),
            }
        }
        let _ = gitignore(&input);
    }
}

#[test]
fn hostile_paths_and_patterns_do_not_panic() {
    let input =
        "=== .gitignore\n[\n**/**/**\n!\n\\\n/\n=== /abs/.gitignore\n*\n=== ../up/.gitignore\n*\n\
                 --- paths\n/\n//\n../x\n/etc/passwd\na//b\n.\n\u{202e}x\nabs/y\nup/z\n";
    let _ = gitignore(input.as_bytes());
}

/// Found by the fuzzer: two files of one directory (`crates/web/.gitignore` and a mutated
/// `crates/web/stati\x16...itignore`) were both taken as that directory's rules, so their
/// order decided the answer. Only files named `.gitignore` count now.
#[test]
fn regression_inputs_keep_the_invariants() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/gitignore");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("regression-")
        {
            let _ = gitignore(&std::fs::read(&p).unwrap());
            n += 1;
        }
    }
    assert!(n >= 1, "regression inputs missing");
    let one_dir = "=== a/.gitignore\n*.log\n=== a/other\n!x.log\n--- paths\na/x.log\n";
    let rules = Rules::from_files(parse_case(one_dir.as_bytes()).files);
    assert!(rules.ignores("a/x.log", false));
}
