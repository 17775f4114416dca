//! The command line keeps every command and its help.

use super::*;
use clap::CommandFactory;

/// Each command's help starts with its variant's doc comment (see [`Command`]).
const ABOUT: &[(&[&str], &str)] = &[
    (
        &["init"],
        "Create config.toml and the trusted ed25519 keypair",
    ),
    (
        &["pack"],
        "Pack a git revision into a redacted, signed bundle",
    ),
    (&["submit"], "Pack, upload the bundle to the store's inbox"),
    (&["resubmit"], "Dispatch a job's bundle and request again"),
    (&["fetch"], "Download a job's artifact and verify it"),
    (&["gate"], "Judge a job's artifact"),
    (
        &["scan"],
        "Scan files (a directory, a file, or a git revision",
    ),
    (&["classify"], "What the gate would say about these paths"),
    (&["status"], "Every job's state, read from the store alone"),
    (
        &["gc"],
        "Delete the payloads (bundle, checkpoint and artifact tarballs)",
    ),
    (&["watch"], "Fetch and gate artifacts as they land"),
    (&["demo"], "Run the whole valve on an example"),
    (
        &["audit"],
        "Check or read the signed, hash-chained audit ledger",
    ),
    (&["audit", "verify"], "Verify every entry's signature"),
    (
        &["audit", "show"],
        "The generation bill of materials of one job",
    ),
    (
        &["audit", "export"],
        "Write every envelope of the selected jobs",
    ),
    (&["approve"], "Record that a person approves"),
    (&["decline"], "Record that a person declines"),
    (&["show"], "Show a job already gated"),
    (&["compare"], "Compare two jobs"),
    (
        &["fleet"],
        "Disposable workers that get jobs through the store",
    ),
    (&["fleet", "enroll"], "Enrol a worker"),
    (&["fleet", "revoke"], "Revoke a worker"),
    (&["fleet", "status"], "Each worker: mark"),
];

#[test]
fn every_command_keeps_its_help() {
    let mut cmd = Cli::command();
    cmd.build();
    cmd.clone().debug_assert();
    let mut seen = 0;
    for (path, about) in ABOUT {
        let mut sub = &cmd;
        for name in *path {
            sub = sub.find_subcommand(name).unwrap();
        }
        let short = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        assert!(short.starts_with(about), "{path:?}: about is {short:?}");
        assert!(
            sub.get_arguments().count() > 3,
            "{path:?}: arguments not built"
        );
        seen += 1;
    }
    let top: Vec<&str> = cmd
        .get_subcommands()
        .map(|c| c.get_name())
        .filter(|n| *n != "help")
        .collect();
    assert_eq!(
        // audit's and fleet's three subcommands each
        top.len() + 6,
        seen,
        "a command is missing from ABOUT: {top:?}"
    );

    let cli = Cli::try_parse_from([
        "airlock", "--home", "h", "gate", "JOB", "--repo", "r", "--json",
    ])
    .unwrap();
    match cli.command {
        Command::Gate(args) => {
            assert!(args.json);
            assert_eq!(args.repo, PathBuf::from("r"));
        }
        other => panic!("parsed as {other:?}"),
    }
    assert_eq!(cli.global.home, PathBuf::from("h"));
    let err = Cli::try_parse_from(["airlock", "gate", "JOB", "--bogus"]).unwrap_err();
    assert_eq!(err.kind(), clap::error::ErrorKind::UnknownArgument);
}
