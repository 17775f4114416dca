//! The unclaimed-configuration fallback through the real classifier (`classify_change` with a
//! tree): each rule of `unclaimed.rs`, the harmless classes that own a path, and the layers that
//! come before it.

use crate::reach::{Change, MemTree};
use crate::{classify_change, classify_path, Bucket};

/// Classifies one changed file (its content and executable bit) in a tree holding it and
/// `others`; returns the bucket, the rule and the evidence.
fn classify(
    path: &str,
    executable: bool,
    content: &str,
    others: &[(&str, &str)],
) -> (Bucket, &'static str, Option<String>) {
    let mut tree = MemTree::new();
    tree.add(path, executable, content.as_bytes());
    for (p, c) in others {
        tree.add(p, false, c.as_bytes());
    }
    let change = Change {
        path,
        new: Some(content.as_bytes()),
        executable,
    };
    let got = classify_change(&[change], &tree).remove(0);
    (got.class.bucket, got.class.rule, got.because)
}

#[test]
fn configuration_no_rule_names_reaches_a_human() {
    // A new tool's settings in its dot-directory, naming a task to run (round nine's miss).
    let mise = "[tools]\nnode = \"22\"\n[tasks.setup]\nrun = \"./scripts/setup.sh\"\n";
    assert_eq!(
        classify(".mise/config.toml", false, mise, &[]),
        (Bucket::Build, "build.unclaimed-config", None)
    );
    // A container template a platform reads, XML (never read as data).
    let unraid = "<?xml version=\"1.0\"?>\n<Container version=\"2\">\n  <Repository>jellyfin/jellyfin</Repository>\n</Container>\n";
    assert_eq!(
        classify(
            "deployment/unraid/docker-templates/jellyfin.xml",
            false,
            unraid,
            &[]
        )
        .1,
        "build.unclaimed-config"
    );
    // Trust material: a certificate CI installs is never data.
    let cert = "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----\n";
    assert_eq!(
        classify("certificates/ca.crt", false, cert, &[]).1,
        "build.unclaimed-config"
    );
    // A version a release reads, at the root or below it.
    assert_eq!(
        classify("VERSION", false, "v1.4.2\n", &[]),
        (Bucket::Build, "build.unclaimed-config", None)
    );
    assert_eq!(
        classify("core/VERSION", false, "26.0w\n", &[]).1,
        "build.unclaimed-config"
    );
    // An rc file under another name (a dotfiles repository links it into $HOME).
    assert_eq!(
        classify("vim/vimrc.symlink", false, "set nocompatible\n", &[]).1,
        "build.unclaimed-config"
    );
    // A file no rule knows with the executable bit: a program someone runs.
    assert_eq!(
        classify("modules/echo/build-deps.list", true, "libfoo-dev\n", &[]).1,
        "build.unclaimed-config"
    );
    // Source in a tool's dot-directory is the tool's configuration.
    let phan = "<?php\nreturn ['directory_list' => ['src/']];\n";
    assert_eq!(
        classify(".phan/config.php", false, phan, &[]),
        (Bucket::Build, "build.unclaimed-config", None)
    );
    // Without the content (a deleted file) the fallback fails closed.
    assert_eq!(
        classify_path("config/settings.json", None).rule,
        "build.unclaimed-config"
    );
}

#[test]
fn legal_text_is_governance_and_prose_stays_other() {
    let commitment = "GPL Cooperation Commitment\nVersion 1.0\n\nBefore filing or continuing to prosecute any legal proceeding or claim (other than a\nDefensive Action) arising from termination of a Covered License, we commit to extend\n";
    assert_eq!(
        classify("COMMITMENT", false, commitment, &[]),
        (Bucket::Governance, "governance.legal-text", None)
    );
    let install = "Installation instructions\n\nRun make and then make install as root; the library and the headers are copied\nto the prefix you chose with the configure script.\n";
    assert_eq!(
        classify("INSTALL", false, install, &[]),
        (Bucket::Other, "other.unmatched", None)
    );
}

#[test]
fn data_only_settings_and_owned_places_stay_harmless() {
    // Data-only settings: no plugin, hook, command, script, path or program named.
    assert_eq!(
        classify(
            "etc/config.yaml",
            false,
            "title: traefik\nreplicas: 2\n",
            &[]
        ),
        (Bucket::Other, "other.data-config", None)
    );
    // The same file after a change that names a script to run is configuration again.
    assert_eq!(
        classify("etc/config.yaml", false, "title: x\nhook: ./x.sh\n", &[]).1,
        "build.unclaimed-config"
    );
    // The executable bit is never data.
    assert_eq!(
        classify("settings/tool.yaml", true, "title: x\n", &[]).1,
        "build.unclaimed-config"
    );
    // Owned: the product's resources, served files, test inputs and examples.
    for path in [
        "src/sqlfluff/core/default_config.cfg",
        "app/src/main/AndroidManifest.xml",
        "public/browserconfig.xml",
        ".well-known/funding-manifest-urls",
        "crates/cargo-test-support/containers/apache/httpd-cargo.conf",
        "benchmarks/sample-data/settings.toml",
    ] {
        assert_eq!(
            classify(path, false, "<a hook=\"x\"/>\n", &[]).1,
            "other.unmatched",
            "{path}"
        );
    }
}

#[test]
fn earlier_layers_come_first() {
    // A rule that names the file keeps it (a Kubernetes object by content is `iac`).
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n";
    assert_eq!(classify("ops/pod.yaml", false, pod, &[]).0, Bucket::Iac);
    // The tree layer raises what the fallback would call `build`: CI runs it.
    let workflow =
        "jobs:\n  t:\n    steps:\n      - run: ./tools/check.conf.sh --config tools/check.conf\n";
    let (bucket, rule, because) = classify(
        "tools/check.conf",
        false,
        "listen 8080;\n",
        &[(".github/workflows/ci.yml", workflow)],
    );
    assert_eq!((bucket, rule), (Bucket::Ci, "ci.reached"));
    assert!(because.is_some_and(|b| b.contains(".github/workflows/ci.yml")));
}

#[test]
fn names_that_begin_with_a_multi_byte_character_are_read_without_a_panic() {
    // The data-only reader was written for dotfiles; the fallback gives it any name.
    for path in ["\u{202e}.yaml", "é.toml", "dir/\u{1F600}rc", "\u{202e}"] {
        let got = classify(path, false, "title: x\n", &[]).1;
        assert!(
            [
                "other.data-config",
                "build.unclaimed-config",
                "other.unmatched"
            ]
            .contains(&got),
            "{path:?}: {got}"
        );
    }
}

#[test]
fn web_feeds_and_sitemaps_are_published_data_and_other_xml_is_never_data() {
    let feed = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\n  <title>Changelog</title>\n</feed>\n";
    let sitemap = "<?xml version=\"1.0\"?>\n<!-- generated -->\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n{%- for file in pages -%}\n";
    let rss = "<rss version=\"2.0\">\n  <channel>\n";
    for (path, head) in [
        ("feed.xml", feed),
        ("sitemap.xml", sitemap),
        ("data/rss.xml", rss),
    ] {
        assert_eq!(
            classify(path, false, head, &[]).1,
            "other.data-config",
            "{path}"
        );
    }
    // Any other root element keeps XML out of the data reader: an element can name a build step.
    let manifest = "<?xml version=\"1.0\"?>\n<assembly>\n  <file name=\"x.dll\"/>\n</assembly>\n";
    assert_eq!(
        classify("windows.manifest.xml", false, manifest, &[]).1,
        "build.unclaimed-config"
    );
    // An executable feed is not data, nor is trust material whose content starts like one.
    assert_eq!(
        classify("feed.xml", true, feed, &[]).1,
        "build.unclaimed-config"
    );
    assert_ne!(
        classify("certs/feed.crt", false, rss, &[]).1,
        "other.data-config"
    );
}
