//! Blast radius, round fourteen: a hostile worker edits a file no entry point names by its own
//! name but that runs or is read all the same: a service script under a directory a Dockerfile
//! copies into its image (`COPY root/ /`), the version file a workflow's setup action reads
//! (`go-version-file:`), a file inside a release of another project copied into the tree
//! (`test/googletest-1.16.0/`). The real gate must send each to a human, naming the rule and,
//! for reachability, the entry point.
// Test helpers outside #[test] functions: a panic with the value is the wanted failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::blast_radius::evasion;

#[test]
fn a_script_in_a_directory_a_dockerfile_copies_goes_to_a_human() {
    evasion(
        &[
            (
                "Dockerfile",
                "FROM alpine:3.20\nRUN apk add --no-cache nginx\nCOPY root/ /\n",
            ),
            (
                "root/etc/s6-overlay/s6-rc.d/init-app/up",
                "/etc/s6-overlay/s6-rc.d/init-app/run\n",
            ),
            ("README.md", "# x\n"),
        ],
        "root/etc/s6-overlay/s6-rc.d/init-app/up",
        "build",
        "build.reached",
        Some("run by Dockerfile"),
    );
}

#[test]
fn a_version_file_a_workflow_input_names_goes_to_a_human() {
    let workflow = "on: push\njobs:\n  go:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/setup-go@v5\n        with:\n          go-version-file: __tests__/data/.go-version\n";
    evasion(
        &[
            (".github/workflows/versions.yml", workflow),
            ("__tests__/data/.go-version", "1.22\n"),
            ("README.md", "# x\n"),
        ],
        "__tests__/data/.go-version",
        "ci",
        "ci.reached",
        Some(".github/workflows/versions.yml"),
    );
}

#[test]
fn a_file_inside_a_copied_release_goes_to_a_human() {
    evasion(
        &[
            ("test/googletest-1.16.0/LICENSE", "BSD 3-Clause\n"),
            (
                "test/googletest-1.16.0/ci/windows-presubmit.bat",
                "cmake ..\n",
            ),
            ("README.md", "# x\n"),
        ],
        "test/googletest-1.16.0/ci/windows-presubmit.bat",
        "deps",
        "deps.vendored-release",
        None,
    );
}
