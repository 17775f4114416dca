use super::*;
use crate::tree::{Change, MemTree};

#[test]
fn a_copied_directory_brings_its_configuration_not_its_source() {
    let mut t = MemTree::new();
    t.add("Dockerfile", false, b"FROM alpine\nCOPY root/ /\n")
        .add(
            "root/etc/s6-overlay/s6-rc.d/svc-app/run",
            true,
            b"#!/bin/sh\n",
        )
        .add(
            "root/etc/s6-overlay/s6-rc.d/svc-app/type",
            false,
            b"longrun\n",
        )
        .add("root/app/main.py", false, b"print(1)\n")
        .add("README.md", false, b"# x\n");
    let changes: [Change<'_>; 0] = [];
    let all = Paths::new(&t, &changes);
    let (dir, files) = copied_dir("root/", "", &all, || true).unwrap();
    assert_eq!(dir, "root");
    assert_eq!(
        files,
        [
            "root/etc/s6-overlay/s6-rc.d/svc-app/run",
            "root/etc/s6-overlay/s6-rc.d/svc-app/type"
        ]
    );
    assert_eq!(copied_dir("/root", "", &all, || true).unwrap().0, "root");
    assert!(copied_dir(".", "", &all, || true).is_none(), "the context");
    assert!(
        copied_dir("README.md", "", &all, || true).is_none(),
        "a file"
    );
    assert!(
        copied_dir("root/*", "", &all, || true).is_none(),
        "a pattern"
    );
    assert!(copied_dir("missing/", "", &all, || true).is_none());
    assert!(
        copied_dir("root/", "", &all, || false).is_none(),
        "no budget"
    );
}
