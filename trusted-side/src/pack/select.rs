//! Which tree paths may be packed: the built-in deny-list (always applied, case-insensitive),
//! then `--include` (narrows) and `--exclude`.
//!
//! Guards against: credentials and private material leaving trusted ground by path, the
//! trusted home itself (`.airlock/`, or any directory holding a `trusted.key`, committed by
//! mistake: store, ledger, records, earlier bundles), and an `--include` that tries to
//! re-admit a denied path (the deny-list is checked first and wins).
//!
//! A path that a pack with the same cache key selected before (`known`: same deny-list, since
//! the key binds this binary, and the same `--include` and `--exclude`) keeps its verdict and
//! its path check, both functions of the path alone; its kind, mode, size and the homes, which
//! depend on the tree, are checked again, and the name collisions whenever a path that pack did
//! not keep is kept (the paths it kept were kept together, so none collides with another).
//! A listing out of path order or naming a path twice (a tree git would not write) is put in
//! path order and none of its paths is known.

use std::collections::{BTreeMap, HashSet};

use airlock_core::paths;
use anyhow::{Context, Result};
use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use super::files::Plan;
use super::groups::Member;
use super::PackOptions;
use crate::git::TreeEntry;

/// The deny-list, in the order reported. Each entry is (rule shown to users, globs).
pub const DENY_LIST: &[(&str, &[&str])] = &[
    (".git/", &["**/.git", "**/.git/**"]),
    (".airlock/", &["**/.airlock", "**/.airlock/**"]),
    (".env*", &["**/.env*"]),
    ("*.pem", &["**/*.pem"]),
    ("*.key", &["**/*.key"]),
    ("*.p12", &["**/*.p12"]),
    ("*.pfx", &["**/*.pfx"]),
    ("id_rsa*", &["**/id_rsa*"]),
    ("id_ed25519*", &["**/id_ed25519*"]),
    ("id_ecdsa*", &["**/id_ecdsa*"]),
    ("kubeconfig", &["**/kubeconfig", "**/*.kubeconfig"]),
    ("secrets/", &["**/secrets/**"]),
    ("node_modules/", &["**/node_modules/**"]),
    (".npmrc", &["**/.npmrc"]),
    (".pypirc", &["**/.pypirc"]),
    (".netrc", &["**/.netrc", "**/_netrc"]),
    (".docker/config.json", &["**/.docker/config.json"]),
    ("*.tfstate*", &["**/*.tfstate*"]),
    ("credentials*.json", &["**/credentials*.json"]),
];

/// The deny-list rule for a directory that holds a trusted key (an airlock home by another
/// name).
pub const DENY_HOME: &str = "deny:trusted-home";

/// Directories of the tree (with a trailing `/`; empty for the root) that hold a file named
/// `trusted.key`, in any case: every path under one, in any case ([`in_home`]), is left out
/// with [`DENY_HOME`].
pub fn home_dirs<'a>(paths: impl Iterator<Item = &'a [u8]>) -> Vec<Vec<u8>> {
    let key = crate::config::TRUSTED_KEY_FILE.as_bytes();
    let mut dirs: Vec<Vec<u8>> = paths
        .filter_map(|p| {
            let name_at = p.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
            let name = p.get(name_at..)?;
            name.eq_ignore_ascii_case(key)
                .then(|| p.get(..name_at).unwrap_or_default().to_vec())
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Whether `path` lies under one of `homes` ([`home_dirs`]), the directories compared in any
/// ASCII case: on a case-insensitive checkout `Keys/trusted.key` and `keys/config.toml` are
/// in one directory, the home.
pub fn in_home(path: &[u8], homes: &[Vec<u8>]) -> bool {
    homes.iter().any(|d| {
        path.get(..d.len())
            .is_some_and(|prefix| prefix.eq_ignore_ascii_case(d))
    })
}

/// Why a path is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Pack it.
    Keep,
    /// Left out; the string is the rule id (`deny:<pattern>`, `pack.not-included`, `pack.excluded`).
    Skip(String),
}

/// A compiled selection.
pub struct Selector {
    deny: GlobSet,
    deny_rule_of_glob: Vec<usize>,
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
}

fn glob(pattern: &str, case_insensitive: bool) -> Result<Glob> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .case_insensitive(case_insensitive)
        .backslash_escape(true)
        .build()
        .with_context(|| format!("glob {pattern:?} is malformed"))
}

/// A user glob without a `/` matches a file name at any depth (like .gitignore).
fn user_globs(patterns: &[String]) -> Result<Option<GlobSet>> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let p = p.trim_start_matches("./");
        if p.contains('/') {
            b.add(glob(p, false)?);
            if let Some(dir) = p.strip_suffix('/') {
                b.add(glob(&format!("{dir}/**"), false)?);
            }
        } else {
            b.add(glob(&format!("**/{p}"), false)?);
            b.add(glob(&format!("**/{p}/**"), false)?);
        }
    }
    Ok(Some(b.build().context("globs")?))
}

impl Selector {
    /// Compiles the deny-list and the user's globs.
    pub fn new(include: &[String], exclude: &[String]) -> Result<Selector> {
        let mut b = GlobSetBuilder::new();
        let mut deny_rule_of_glob = Vec::new();
        for (i, (_, globs)) in DENY_LIST.iter().enumerate() {
            for g in *globs {
                b.add(glob(g, true)?);
                deny_rule_of_glob.push(i);
            }
        }
        Ok(Selector {
            deny: b.build().context("deny-list")?,
            deny_rule_of_glob,
            include: user_globs(include)?,
            exclude: user_globs(exclude)?,
        })
    }

    /// Decides one path. The deny-list is checked first, so nothing re-admits a denied path.
    pub fn verdict(&self, path: &str) -> Verdict {
        if let Some(first) = self.deny.matches(path).into_iter().min() {
            let rule = self
                .deny_rule_of_glob
                .get(first)
                .and_then(|i| DENY_LIST.get(*i))
                .map_or("?", |(r, _)| r);
            return Verdict::Skip(format!("deny:{rule}"));
        }
        if let Some(inc) = &self.include {
            if !inc.is_match(path) {
                return Verdict::Skip("pack.not-included".into());
            }
        }
        if let Some(exc) = &self.exclude {
            if exc.is_match(path) {
                return Verdict::Skip("pack.excluded".into());
            }
        }
        Verdict::Keep
    }
}

/// The files of `entries` a pack with `opts` keeps, in bundle order and cut into groups, what
/// it leaves out per rule, and the entries left out (kept by the pack cache, so that the next
/// revision's listing can be made from this one's: `git/changes.rs`).
pub(super) fn plan(
    mut entries: Vec<TreeEntry>,
    opts: &PackOptions<'_>,
    known: impl Fn(&str) -> bool,
) -> Result<Plan> {
    // A tree git would not write (names out of order, or one twice, as `hash-object
    // --literally` stores them) is listed by `ls-tree` as stored, and by the pack cache in path
    // order: the collisions are decided in path order whatever the listing, and, since a path
    // twice is two paths "known", for every path.
    let canonical = crate::git::is_sorted(&entries);
    if !canonical {
        entries.sort_by(|a, b| a.path.cmp(&b.path));
    }
    let known = |p: &str| canonical && known(p);
    let selector = Selector::new(opts.include, opts.exclude)?;
    let homes = home_dirs(entries.iter().map(|e| e.path.as_slice()));
    let mut skipped = BTreeMap::new();
    let mut skip = |rule: String| *skipped.entry(rule).or_insert(0u64) += 1;
    let mut keep = Vec::new();
    let mut others = Vec::new();
    let mut any_unknown = false;
    for mut e in entries {
        let (rule, known) = left_out(&e, &homes, &selector, &known, opts);
        if let Some(rule) = rule {
            skip(rule);
            others.push(e);
            continue;
        }
        any_unknown |= !known;
        match String::from_utf8(std::mem::take(&mut e.path)) {
            Ok(path) => keep.push((path, e)),
            Err(bad) => {
                // (left_out refuses these first.)
                skip("pack.non-utf8-path".to_owned());
                e.path = bad.into_bytes();
                others.push(e);
            }
        }
    }
    // Names that collide by case or normalisation: the first in listing order stays. The
    // paths an earlier pack with the same selection kept (`known`) were kept together, so
    // they do not collide with one another: with no other path kept, there is nothing to check.
    if any_unknown {
        let mut seen = HashSet::new();
        let mut kept = Vec::with_capacity(keep.len());
        for (path, mut e) in keep {
            if seen.insert(paths::collision_key(&path)) {
                kept.push((path, e));
            } else {
                skip("pack.name-collision".to_owned());
                e.path = path.into_bytes();
                others.push(e);
            }
        }
        keep = kept;
        others.sort_by(|a, b| a.path.cmp(&b.path));
    }
    keep.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let members: Vec<Member> = keep
        .into_iter()
        .map(|(path, e)| Member {
            path,
            exec: e.mode == "100755",
            oid: e.oid,
            size: e.size,
        })
        .collect();
    Ok(Plan {
        groups: super::groups::partition(&members),
        members,
        skipped,
        others,
    })
}

/// The rule that leaves `e` out (`None`: kept, unless its name collides with a path kept
/// before it), and whether an earlier pack with the same selection kept its path.
fn left_out(
    e: &TreeEntry,
    homes: &[Vec<u8>],
    selector: &Selector,
    known: &impl Fn(&str) -> bool,
    opts: &PackOptions<'_>,
) -> (Option<String>, bool) {
    // Whatever --include says: a directory holding a trusted key is a home.
    if in_home(&e.path, homes) {
        return (Some(DENY_HOME.to_owned()), false);
    }
    let Ok(path) = std::str::from_utf8(&e.path) else {
        return (Some("pack.non-utf8-path".to_owned()), false);
    };
    let known = known(path);
    let rule = |r: &str| (Some(r.to_owned()), known);
    if !known {
        if let Verdict::Skip(r) = selector.verdict(path) {
            return (Some(r), known);
        }
    }
    match (&*e.kind, &*e.mode) {
        ("blob", "100644" | "100755") => {}
        ("blob", "120000") => return rule("pack.symlink"),
        ("commit", _) => return rule("pack.submodule"),
        _ => return rule("pack.unsupported-mode"),
    }
    if !known && paths::check_relative_path(path, 4096, 64).is_err() {
        return rule("pack.bad-path");
    }
    if e.size > opts.max_file_bytes {
        return rule("pack.too-large");
    }
    (None, known)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denies_credentials_at_any_depth_and_any_case() {
        let s = Selector::new(&[], &[]).unwrap();
        for p in [
            ".env",
            ".env.production",
            "app/.ENV.local",
            "certs/server.pem",
            "deploy/prod.key",
            "home/.ssh/id_rsa",
            "home/.ssh/id_ed25519.pub",
            "ops/kubeconfig",
            "ops/prod.kubeconfig",
            "config/secrets/db.yaml",
            "web/node_modules/left-pad/index.js",
            ".npmrc",
            "pkg/.pypirc",
            ".netrc",
            "ci/.docker/config.json",
            "infra/terraform.tfstate",
            "infra/terraform.tfstate.backup",
            "gcp/credentials-prod.json",
            "a/b.p12",
            "a/b.PFX",
        ] {
            assert!(
                matches!(s.verdict(p), Verdict::Skip(r) if r.starts_with("deny:")),
                "{p} not denied"
            );
        }
        for p in [
            "src/main.rs",
            "docs/environment.md",
            "src/keys.rs",
            "secrets.md",
            "src/secretsmanager/client.go",
        ] {
            assert_eq!(s.verdict(p), Verdict::Keep, "{p} denied");
        }
    }

    #[test]
    fn the_home_is_denied_by_name_and_by_its_key() {
        let s = Selector::new(&["**".into()], &[]).unwrap();
        for p in [
            ".airlock/config.toml",
            "ops/.airlock/ledger/0001.json",
            ".AIRLOCK/store/x",
        ] {
            assert_eq!(s.verdict(p), Verdict::Skip("deny:.airlock/".into()), "{p}");
        }
        let paths: Vec<&[u8]> = vec![b"src/a.rs", b"keys/home/trusted.key", b"TRUSTED.KEY"];
        assert_eq!(
            home_dirs(paths.into_iter()),
            vec![b"".to_vec(), b"keys/home/".to_vec()]
        );
        // A directory is one home in any case (a case-insensitive checkout merges them).
        let homes = home_dirs([&b"Keys/trusted.key"[..], b"keys/config.toml"].into_iter());
        for p in ["keys/config.toml", "KEYS/ledger/1.json", "Keys/trusted.pub"] {
            assert!(in_home(p.as_bytes(), &homes), "{p}");
        }
        for p in ["keysx/a", "other/keys/a", "key"] {
            assert!(!in_home(p.as_bytes(), &homes), "{p}");
        }
    }

    #[test]
    fn include_never_readmits_a_denied_path() {
        let s = Selector::new(&[".env".into(), "src/**".into()], &[]).unwrap();
        assert_eq!(s.verdict(".env"), Verdict::Skip("deny:.env*".into()));
        assert_eq!(s.verdict("src/a.rs"), Verdict::Keep);
        assert_eq!(
            s.verdict("docs/a.md"),
            Verdict::Skip("pack.not-included".into())
        );
    }

    #[test]
    fn exclude_leaves_out_and_bare_names_match_any_depth() {
        let s = Selector::new(&[], &["*.log".into(), "vendor/".into()]).unwrap();
        assert_eq!(
            s.verdict("a/b/c.log"),
            Verdict::Skip("pack.excluded".into())
        );
        assert_eq!(
            s.verdict("vendor/x/y.go"),
            Verdict::Skip("pack.excluded".into())
        );
        assert_eq!(s.verdict("src/vendor.go"), Verdict::Keep);
    }
}
