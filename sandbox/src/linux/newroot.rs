//! Namespace mode's root: a fresh tmpfs holding only what the sandbox grants (the readable
//! roots, the generator program, the two writable roots, the device files), each bound in at
//! its own path from the old root, and a fresh /proc of the sandbox's pid namespace; then
//! `pivot_root` into it and the old root detached.
//!
//! Guards against: the generator reading the host's mount table (`/proc/self/mountinfo` of a
//! copied mount namespace lists every host mount: container layers, secret mounts, device
//! names) and learning which host paths exist beyond what it is granted. Its mount table now
//! lists the tmpfs root, the granted paths and what is mounted beneath them.
//! How (as bubblewrap does, unprivileged): a tmpfs on `/tmp` of the sandbox's own mount
//! namespace becomes the root with the old one at `/oldroot`, so host paths stay reachable
//! as `/oldroot/...` (the tmpfs no longer covers the old `/tmp`); `/newroot` is bound onto
//! itself and filled; proc is mounted while the host's proc is still visible (the kernel
//! requires that); `/oldroot` is detached, and a second `pivot_root` makes `/newroot` the root.
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

/// Links a process expects under /dev (bash's `<(...)`, `/dev/stdin`), into the fresh /proc.
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
    all.push(spec.workdir.clone());
    all.push(spec.private_tmp.clone());
    // Shortest first: a root is bound before anything beneath it, which it then covers.
    all.sort_by_key(|p| p.components().count());
    all.dedup();
    all
}

/// Builds the new root from the old one and moves into it. Runs as the pid namespace's init,
/// with the user namespace's capabilities, before anything of the generator exists.
pub(crate) fn enter(spec: &SandboxSpec, program: &Path) -> Result<(), String> {
    let base = ["/tmp", "/mnt", "/proc"]
        .iter()
        .map(Path::new)
        .find(|p| p.is_dir())
        .ok_or("no directory to build the new root on")?;
    let cbase = c(base)?;
    sys::mount_data(
        Some(c"tmpfs"),
        &cbase,
        Some(c"tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(ROOT_OPTIONS),
    )
    .map_err(err("mount a tmpfs on", base))?;
    let mkdir = |p: &Path| {
        std::fs::DirBuilder::new()
            .mode(0o755)
            .create(p)
            .map_err(err("mkdir", p))
    };
    mkdir(&base.join("newroot"))?;
    mkdir(&base.join("oldroot"))?;
    sys::pivot_root(&cbase, &c(&base.join("oldroot"))?).map_err(err("pivot_root to", base))?;
    std::env::set_current_dir("/").map_err(err("chdir", Path::new("/")))?;
    let (old, new) = (Path::new("/oldroot"), Path::new("/newroot"));
    sys::mount(
        Some(c"/newroot"),
        c"/newroot",
        None,
        libc::MS_BIND | libc::MS_REC,
    )
    .map_err(err("bind onto itself", new))?;
    for p in granted(spec, program) {
        bind(&beneath(old, &p)?, &beneath(new, &p)?)?;
    }
    for (link, to) in DEV_LINKS {
        let at = beneath(new, Path::new(link))?;
        if at.parent().is_some_and(Path::is_dir) && std::fs::symlink_metadata(&at).is_err() {
            symlink(to, &at).map_err(err("symlink", &at))?;
        }
    }
    let proc = new.join("proc");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o555)
        .create(&proc)
        .map_err(err("mkdir", &proc))?;
    sys::mount(
        Some(c"proc"),
        c"/newroot/proc",
        Some(c"proc"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
    )
    .map_err(err("mount a fresh /proc on", &proc))?;
    sys::umount2(c"/oldroot", libc::MNT_DETACH).map_err(err("detach", old))?;
    // The second pivot: /newroot becomes the root, the tmpfs is stacked above it and detached.
    let top = std::fs::File::open("/").map_err(err("open", Path::new("/")))?;
    std::env::set_current_dir(new).map_err(err("chdir", new))?;
    sys::pivot_root(c".", c".").map_err(err("pivot_root to", new))?;
    sys::fchdir(&top).map_err(err("fchdir to the stacked root", Path::new("/")))?;
    sys::umount2(c".", libc::MNT_DETACH).map_err(err("detach the stacked root", Path::new("/")))?;
    std::env::set_current_dir("/").map_err(err("chdir", Path::new("/")))
}

/// Binds `src` (a host path seen under /oldroot) at `dst`, making the path to it; a symbolic
/// link is copied as a link (a merged-/usr `/lib`); a missing `src` is left out.
fn bind(src: &Path, dst: &Path) -> Result<(), String> {
    let Ok(meta) = std::fs::symlink_metadata(src) else {
        return Ok(());
    };
    if std::fs::symlink_metadata(dst).is_ok() {
        // Already there: beneath a root bound earlier, which brought it along.
        return Ok(());
    }
    if let Some(parent) = dst.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent)
            .map_err(err("mkdir", parent))?;
    }
    if meta.file_type().is_symlink() {
        let to = std::fs::read_link(src).map_err(err("readlink", src))?;
        return symlink(&to, dst).map_err(err("symlink", dst));
    }
    if meta.is_dir() {
        std::fs::DirBuilder::new()
            .mode(0o755)
            .create(dst)
            .map_err(err("mkdir", dst))?;
    } else {
        std::fs::File::create(dst).map_err(err("create", dst))?;
    }
    sys::mount(Some(&c(src)?), &c(dst)?, None, libc::MS_BIND | libc::MS_REC)
        .map_err(err("bind", dst))
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
}
