//! Where new directories land on ext4: a directory whose children come and go by the
//! thousand (a worker's run directories, the trusted side's job directories) is marked as the
//! top of directory hierarchies (`FS_TOPDIR_FL`, `chattr +T`), best effort.
//!
//! Guards against: quadratic kernel time on a busy host. On ext4 the Orlov allocator puts a
//! new directory in its parent's block group unless the parent is marked; without a journal
//! (and with one, until it commits), ext4 does not reuse an inode within 60-360 s of its
//! deletion (`recently_deleted`) and scans past every such inode from the start of the group
//! for each file it creates. Back-to-back runs or gates whose files are created and removed in
//! one group therefore cost more kernel time with every run (`bench/worker.sh`,
//! `bench/jobs.sh`, `bench/fleet.sh`; `docs/PERFORMANCE.md`). Marked, each child directory
//! (and the files made in it) goes to a block group of its own. Other filesystems ignore or
//! refuse the flag; it changes only where directories are placed, never what they hold.

use std::path::Path;

/// What [`spread_children`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// The directory carries the flag (set now or before).
    Marked,
    /// The filesystem has no inode flags (tmpfs) or refuses this one.
    Unsupported,
}

/// Marks `dir` `FS_TOPDIR_FL` if it is not. An error only when `dir` cannot be opened.
pub fn spread_children(dir: &Path) -> std::io::Result<Spread> {
    use rustix::fs::{ioctl_getflags, ioctl_setflags, IFlags};
    let file = std::fs::File::open(dir)?;
    let Ok(flags) = ioctl_getflags(&file) else {
        return Ok(Spread::Unsupported);
    };
    if flags.contains(IFlags::TOPDIR) {
        return Ok(Spread::Marked);
    }
    Ok(match ioctl_setflags(&file, flags | IFlags::TOPDIR) {
        Ok(()) => Spread::Marked,
        Err(_) => Spread::Unsupported,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_marked_where_the_filesystem_has_inode_flags() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("runs");
        std::fs::create_dir(&dir).unwrap();
        let file = std::fs::File::open(&dir).unwrap();
        let Ok(before) = rustix::fs::ioctl_getflags(&file) else {
            assert!(
                std::env::var_os("CI").is_none(),
                "SKIPPED in CI (a skip is a failure here): {} has no inode flags",
                dir.display()
            );
            println!(
                "SKIPPED: {} has no inode flags (TMPDIR on tmpfs?)",
                dir.display()
            );
            assert_eq!(spread_children(&dir).unwrap(), Spread::Unsupported);
            return;
        };
        assert!(!before.contains(rustix::fs::IFlags::TOPDIR));
        let got = spread_children(&dir).unwrap();
        let after = rustix::fs::ioctl_getflags(&file).unwrap();
        match got {
            Spread::Marked => assert!(after.contains(rustix::fs::IFlags::TOPDIR)),
            // Then the filesystem must refuse the flag.
            Spread::Unsupported => {
                assert!(
                    rustix::fs::ioctl_setflags(&file, before | rustix::fs::IFlags::TOPDIR).is_err()
                )
            }
        }
        // A second call finds it marked and changes nothing.
        assert_eq!(spread_children(&dir).unwrap(), got);
        assert_eq!(rustix::fs::ioctl_getflags(&file).unwrap(), after);
    }

    #[test]
    fn a_missing_directory_is_an_error() {
        let t = tempfile::tempdir().unwrap();
        assert!(spread_children(&t.path().join("absent")).is_err());
    }
}
