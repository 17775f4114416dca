//! Namespace mode's root: a fresh tmpfs holding only what the sandbox grants (the readable
//! roots, the generator program, the two writable roots, and /dev for its device files), each
//! bound in at its own path from the old root, and a fresh /proc of the sandbox's pid
//! namespace; then `pivot_root` into it and the old root detached.
//!
//! Guards against: the generator reading the host's mount table (`/proc/self/mountinfo` of a
//! copied mount namespace lists every host mount: container layers, secret mounts, device
//! names) and learning which host paths exist beyond what it is granted. Its mount table now
//! lists the tmpfs root, the granted paths and what is mounted beneath them (under /dev: the
//! standard `pts`, `shm`, `mqueue`, which landlock keeps closed).
//! How: granted paths are resolved in the host's root first; a tmpfs is mounted on a directory
//! apart from every granted path (`/sys` on any ordinary host), each granted path bound into
//! it from the host's path, a fresh proc mounted while the host's is still visible (the kernel
//! requires that), then `pivot_root` into the tmpfs and the old root detached.
//! Does not check: what the granted paths hold (landlock still decides what may be read and
//! written inside them). A granted path that does not exist is left out, as landlock skips it.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, DirBuilderExt};
use std::path::{Component, Path, PathBuf};

use super::sys;
use crate::spec::{SandboxSpec, READ_WRITE_DEVICES};

/// tmpfs options of the new root: it only ever holds the skeleton of the granted paths.
const ROOT_OPTIONS: &std::ffi::CStr = c"mode=0755,size=1m,nr_inodes=65536";

/// Where the new root is built: the first of these that exists and neither holds nor lies
/// beneath a granted path (its own contents are covered while the root is built).
const BASES: &[&str] = &[
    "/sys", "/mnt", "/srv", "/media", "/boot", "/var", "/home", "/tmp",
];

/// Where the old root goes in the pivot, until it is detached (then removed).
const OLD_ROOT: &str = ".airlock-old-root";

/// Links a process expects under /dev (bash's `<(...)`, `/dev/stdin`), into the fresh /proc,
/// where the bound /dev lacks them.
const DEV_LINKS: &[(&str, &str)] = &[
    ("/dev/fd", "/proc/self/fd"),
    ("/dev/stdin", "/proc/self/fd/0"),
    ("/dev/stdout", "/proc/self/fd/1"),
    ("/dev/stderr", "/proc/self/fd/2"),
];

fn c(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("{}: NUL in path", p.display()))
}

fn err<'a, E: std::fmt::Display>(what: &'a str, p: &'a Path) -> impl FnOnce(E) -> String + 'a {
    move |e| format!("{what} {}: {e}", p.display())
}

/// `p` (absolute) beneath `base`, lexically: `.` dropped, `..` refused.
fn beneath(base: &Path, p: &Path) -> Result<PathBuf, String> {
    let mut out = base.to_path_buf();
    for comp in p.components() {
        match comp {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(n) => out.push(n),
            _ => return Err(format!("{}: not a plain absolute path", p.display())),
        }
    }
    Ok(out)
}

/// Every path the sandbox grants: what landlock names, the same list.
fn granted(spec: &SandboxSpec, program: &Path) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = spec.readable.clone();
    all.push(program.to_path_buf());
    all.extend(READ_WRITE_DEVICES.iter().map(PathBuf::from));
    // /dev is bound whole, in one mount (its standard submounts come along): binding each
    // granted device file alone cost a mount apiece on every start. Landlock still opens only
    // the granted device files and cannot list /dev.
    if all.iter().any(|p| p.starts_with("/dev")) {
        all.retain(|p| !p.starts_with("/dev"));
        all.push(PathBuf::from("/dev"));
    }
    all.push(spec.workdir.clone());
    all.push(spec.private_tmp.clone());
    // /proc is the sandbox's own, mounted fresh: the host's is not bound in under it.
    all.retain(|p| !p.starts_with("/proc"));
    // Shortest first: a root is bound before anything beneath it, which it then covers.
    all.sort_by(|a, b| (a.components().count(), a).cmp(&(b.components().count(), b)));
    all.dedup();
    all
}

/// Builds the new root and moves into it. Runs as the pid namespace's init,
/// with the user namespace's capabilities, before anything of the generator exists.
pub(crate) fn enter(spec: &SandboxSpec, program: &Path) -> Result<(), String> {
    let all = granted(spec, program);
    let places = plan(&all);
    let base = BASES
        .iter()
        .map(Path::new)
        .find(|b| b.is_dir() && all.iter().all(|g| !g.starts_with(b) && !b.starts_with(g)))
        .ok_or("no directory apart from the granted paths to build the new root on")?;
    let cbase = c(base)?;
    sys::mount_data(
        Some(c"tmpfs"),
        &cbase,
        Some(c"tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(ROOT_OPTIONS),
    )
    .map_err(err("mount a tmpfs on", base))?;
    for (at, place) in &places {
        put(base, at, place)?;
    }
    for (link, to) in DEV_LINKS {
        let at = beneath(base, Path::new(link))?;
        if at.parent().is_some_and(Path::is_dir) && std::fs::symlink_metadata(&at).is_err() {
            symlink(to, &at).map_err(err("symlink", &at))?;
        }
    }
    let mkdir = |p: &Path, mode: u32| {
        std::fs::DirBuilder::new()
            .mode(mode)
            .create(p)
            .map_err(err("mkdir", p))
    };
    let proc = base.join("proc");
    mkdir(&proc, 0o555)?;
    sys::mount(
        Some(c"proc"),
        &c(&proc)?,
        Some(c"proc"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
    )
    .map_err(err("mount a fresh /proc on", &proc))?;
    let put_old = base.join(OLD_ROOT);
    mkdir(&put_old, 0o700)?;
    sys::pivot_root(&cbase, &c(&put_old)?).map_err(err("pivot_root to", base))?;
    std::env::set_current_dir("/").map_err(err("chdir", Path::new("/")))?;
    let old = Path::new("/").join(OLD_ROOT);
    sys::umount2(&c(&old)?, libc::MNT_DETACH).map_err(err("detach", &old))?;
    std::fs::remove_dir(&old).map_err(err("rmdir", &old))
}

/// What goes at a granted path in the new root.
#[derive(Debug, PartialEq, Eq)]
enum Place {
    /// A copy of the host's link (a merged-/usr `/lib` -> `usr/lib`): it leads into another
    /// granted path, which is bound.
    Link(PathBuf),
    /// A bind of the host's file or directory (a link's target by its canonical path).
    Bind { source: PathBuf, dir: bool },
}

/// Each granted path that exists, with what to put there. A link that leads into another
/// granted path is copied (and what lies beneath it left to that path's bind); any other
/// path is bound from its canonical host path, so `--readable /opt/tool` linked to
/// `/data/tool` (which landlock grants by the target) works through the link's path.
fn plan(granted: &[PathBuf]) -> Vec<(PathBuf, Place)> {
    let mut out: Vec<(PathBuf, Place)> = Vec::new();
    for p in granted {
        let under_link = out
            .iter()
            .any(|(at, place)| matches!(place, Place::Link(_)) && p.starts_with(at) && p != at);
        let Ok(lmeta) = std::fs::symlink_metadata(p) else {
            continue;
        };
        if under_link {
            continue;
        }
        // Only a link is resolved (a path with a link above it is bound by that path: the
        // bind follows it, from the host's root).
        let place = if lmeta.file_type().is_symlink() {
            // A link whose target, read plainly, lies in another grant (merged /usr's
            // `/lib` -> `usr/lib`) is copied; any other is resolved and bound by its target.
            let plain = std::fs::read_link(p).ok().filter(|to| {
                let at = p.parent().unwrap_or(Path::new("/")).join(to);
                !to.components().any(|c| matches!(c, Component::ParentDir))
                    && granted.iter().any(|g| g != p && at.starts_with(g))
            });
            match plain {
                Some(to) => Place::Link(to),
                None => {
                    let Ok(canon) = std::fs::canonicalize(p) else {
                        continue;
                    };
                    Place::Bind {
                        dir: canon.is_dir(),
                        source: canon,
                    }
                }
            }
        } else {
            Place::Bind {
                source: p.clone(),
                dir: lmeta.is_dir(),
            }
        };
        out.push((p.clone(), place));
    }
    out
}

/// Puts `place` at `at` in the new root (built at `new`); makes the path down to it.
/// Something already there (beneath a directory bound earlier) is left as it is.
fn put(new: &Path, at: &Path, place: &Place) -> Result<(), String> {
    let dst = beneath(new, at)?;
    if std::fs::symlink_metadata(&dst).is_ok() {
        return Ok(());
    }
    if let Some(parent) = dst.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent)
            .map_err(err("mkdir", parent))?;
    }
    match place {
        Place::Link(to) => symlink(to, &dst).map_err(err("symlink", &dst)),
        Place::Bind { source, dir } => {
            if *dir {
                std::fs::DirBuilder::new()
                    .mode(0o755)
                    .create(&dst)
                    .map_err(err("mkdir", &dst))?;
            } else {
                std::fs::File::create(&dst).map_err(err("create", &dst))?;
            }
            sys::mount(
                Some(&c(source)?),
                &c(&dst)?,
                None,
                libc::MS_BIND | libc::MS_REC,
            )
            .map_err(err("bind", &dst))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_placed_beneath_the_new_root_lexically() {
        let b = |p: &str| beneath(Path::new("/newroot"), Path::new(p));
        assert_eq!(
            b("/usr/lib/./x").unwrap(),
            PathBuf::from("/newroot/usr/lib/x")
        );
        assert!(b("/usr/../etc").is_err());
    }

    #[test]
    fn roots_come_before_what_lies_beneath_them() {
        let mut spec = SandboxSpec::new("/bin/sh", "/w/r/work", "/w/r/tmp");
        spec.readable = vec!["/usr/lib/x".into(), "/usr".into()];
        let g = granted(&spec, Path::new("/usr/bin/sh"));
        let usr = g.iter().position(|p| p == Path::new("/usr")).unwrap();
        let lib = g.iter().position(|p| p == Path::new("/usr/lib/x")).unwrap();
        assert!(usr < lib, "{g:?}");
    }

    #[test]
    fn a_link_into_a_granted_path_is_copied_and_any_other_is_bound_by_its_target() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        std::fs::create_dir_all(d.join("usr/lib/beneath-the-link")).unwrap();
        std::fs::create_dir_all(d.join("data/tool")).unwrap();
        symlink("usr/lib", d.join("lib")).unwrap();
        symlink(d.join("data/tool"), d.join("tool")).unwrap();
        let granted = vec![
            d.join("usr"),
            d.join("lib"),
            d.join("lib/beneath-the-link"),
            d.join("tool"),
            d.join("missing"),
        ];
        let plan = plan(&granted);
        assert_eq!(
            plan,
            vec![
                (
                    d.join("usr"),
                    Place::Bind {
                        source: d.join("usr"),
                        dir: true
                    }
                ),
                (d.join("lib"), Place::Link("usr/lib".into())),
                (
                    d.join("tool"),
                    Place::Bind {
                        source: d.join("data/tool").canonicalize().unwrap(),
                        dir: true
                    }
                ),
            ]
        );
    }
}
