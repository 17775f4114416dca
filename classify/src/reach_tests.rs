use super::*;
use crate::tree::Listing;
use crate::{classify_change, Layer};

const FIXTURES: &str = include_str!("../tests/data/classify/trees.txt");

/// A fixture tree and its expectations: (path, bucket, rule, evidence).
struct Fixture {
    name: String,
    tree: MemTree,
    expect: Vec<(String, String, String, String)>,
}

fn fixtures() -> Vec<Fixture> {
    let mut out: Vec<Fixture> = Vec::new();
    let mut file: Option<(String, bool, String)> = None;
    let mut in_expect = false;
    let flush = |file: &mut Option<(String, bool, String)>, out: &mut Vec<Fixture>| {
        if let (Some((p, x, c)), Some(f)) = (file.take(), out.last_mut()) {
            f.tree.add(&p, x, c.as_bytes());
        }
    };
    for line in FIXTURES.lines() {
        if let Some(name) = line.strip_prefix("=== tree ") {
            flush(&mut file, &mut out);
            in_expect = false;
            out.push(Fixture {
                name: name.to_owned(),
                tree: MemTree::new(),
                expect: Vec::new(),
            });
        } else if line == "=== expect" {
            flush(&mut file, &mut out);
            in_expect = true;
        } else if in_expect {
            let mut parts = line.splitn(4, ' ');
            let (p, b, r) = (
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
            );
            let why = parts.next().unwrap_or_default();
            if let Some(f) = out.last_mut() {
                f.expect
                    .push((p.to_owned(), b.to_owned(), r.to_owned(), why.to_owned()));
            }
        } else if let Some(path) = line.strip_prefix("--- ") {
            flush(&mut file, &mut out);
            file = Some(match path.strip_suffix(" [x]") {
                Some(p) => (p.to_owned(), true, String::new()),
                None => (path.to_owned(), false, String::new()),
            });
        } else if let Some((_, _, c)) = file.as_mut() {
            c.push_str(line);
            c.push('\n');
        } else if !line.starts_with('#') && !line.is_empty() {
            panic!("trees.txt: stray line {line:?}");
        }
    }
    flush(&mut file, &mut out);
    out
}

#[test]
fn fixture_trees_classify_each_change_with_the_entry_point_named() {
    let fx = fixtures();
    assert!(fx.len() >= 5);
    for f in &fx {
        for (path, bucket, rule, why) in &f.expect {
            let content = f.tree.read(&[path.as_str()]).remove(0).unwrap_or_default();
            let exec = f
                .tree
                .files()
                .iter()
                .any(|t| &t.path == path && t.executable);
            let change = Change {
                path,
                new: Some(&content),
                executable: exec,
            };
            let got = classify_change(&[change], &f.tree).remove(0);
            assert_eq!(
                (got.class.bucket.as_str(), got.class.rule),
                (bucket.as_str(), rule.as_str()),
                "{}: {path}",
                f.name
            );
            if !why.is_empty() {
                assert_eq!(
                    got.because.as_deref(),
                    Some(why.as_str()),
                    "{}: {path}",
                    f.name
                );
                assert_eq!(got.layer, Layer::Tree);
            }
        }
    }
}

#[test]
fn a_file_ci_runs_through_a_script_is_ci_even_when_a_makefile_names_it() {
    // The Makefile names tools/gen.py directly (`build`); the workflow runs scripts/check.sh,
    // which runs tools/gen.py (`ci`, one level down): CI's reach wins, whatever the order.
    let mut tree = MemTree::new();
    tree.add(
        ".github/workflows/ci.yml",
        false,
        b"jobs:\n  x:\n    steps:\n      - run: ./scripts/check.sh\n",
    )
    .add("Makefile", false, b"gen:\n\tpython3 tools/gen.py\n")
    .add(
        "scripts/check.sh",
        true,
        b"#!/bin/sh\npython3 tools/gen.py\n",
    )
    .add("tools/gen.py", false, b"print(1)\n")
    .add("src/other.py", false, b"print(2)\n")
    .add(
        "scripts/build.sh",
        true,
        b"#!/bin/sh\npython3 src/other.py\n",
    );
    let changes = [Change {
        path: "tools/gen.py",
        new: Some(b"print(3)\n"),
        executable: false,
    }];
    let got = classify_change(&changes, &tree);
    assert_eq!(got[0].class.rule, "ci.reached", "{got:?}");
    assert_eq!(
        got[0].because.as_deref(),
        Some("run by scripts/check.sh, which .github/workflows/ci.yml runs")
    );
    // A file only the Makefile reaches stays `build`.
    let changes = [
        Change {
            path: "Makefile",
            new: Some(b"gen:\n\tpython3 tools/gen.py\n\tpython3 src/other.py\n"),
            executable: false,
        },
        Change {
            path: "src/other.py",
            new: Some(b"print(4)\n"),
            executable: false,
        },
    ];
    let got = classify_change(&changes, &tree);
    assert_eq!(got[1].class.rule, "build.reached", "{got:?}");
}

#[test]
fn a_change_that_adds_a_workflow_makes_the_script_it_runs_ci() {
    // Neither file is in the packed tree: the overlay of the change is read too.
    let wf = b"jobs:\n  x:\n    steps:\n      - run: python3 src/exfil.py\n";
    let script = b"import os\n";
    let changes = [
        Change {
            path: ".github/workflows/new.yml",
            new: Some(wf),
            executable: false,
        },
        Change {
            path: "src/exfil.py",
            new: Some(script),
            executable: false,
        },
    ];
    let got = classify_change(&changes, &MemTree::new());
    assert_eq!(got[1].class.rule, "ci.reached");
    assert_eq!(
        got[1].because.as_deref(),
        Some("run by .github/workflows/new.yml")
    );
}

#[test]
fn tokens_read_paths_and_patterns_not_filters_or_urls() {
    let mut tree = MemTree::new();
    for p in ["a/b.sh", "c.py", "x/y/z.sh"] {
        tree.add(p, false, b"");
    }
    let all = Paths::new(&tree, &[]);
    let named = |text: &str| {
        TreeReach::default().named_by(
            ".github/workflows/w.yml",
            text.as_bytes(),
            &all,
            true,
            Bucket::Ci,
            &mut Budget::default(),
        )
    };
    assert_eq!(
        named("run: ./a/b.sh && ${{ github.workspace }}/c.py"),
        ["a/b.sh", "c.py"]
    );
    assert_eq!(named("run: $ROOT/x/y/z.sh"), ["x/y/z.sh"]);
    assert!(named("paths: ['a/b.sh']\nrun: curl https://a/b.sh").is_empty());
    // A glob or a variable inside a name stands for every file it could match.
    assert_eq!(named("run: a/*.sh"), ["a/b.sh"]);
    assert_eq!(named("run: x/${DIR}/z.sh"), ["x/y/z.sh"]);
    assert!(named("run: a/*.md").is_empty());
    assert_eq!(named("run: ../../a/b.sh"), ["a/b.sh"]);
    assert!(named("run: ../../../a/b.sh").is_empty());
    assert_eq!(normalise("a/../../b"), None);
}

#[test]
fn hostile_cd_targets_and_package_json_are_read_within_limits() {
    // Many cds: at most MAX_DIRS directories, none outside the repository or from a variable.
    let many: String = (0..10_000)
        .map(|i| format!("cd d{i}\ncd ../..\n"))
        .collect();
    let dirs = crate::entry::changed_into(&many);
    assert_eq!(dirs.len(), crate::entry::MAX_DIRS);
    for text in [
        "cd /etc\ncd ~\ncd -\ncd $HOME\ncd \"${{ secrets.X }}\"\ncd ../../..\ncd a/*",
        "run: cd ${{ unclosed",
        "cd ${{ }}}}}}/x/${{",
        "working-directory: ${{ matrix.a }}/${{ matrix.b }}",
    ] {
        let dirs = crate::entry::changed_into(text);
        assert!(
            dirs.iter()
                .all(|d| !d.starts_with(['/', '.']) && !d.contains(['$', '*', '~'])),
            "{text:?}: {dirs:?}"
        );
    }
    // A package.json nested past serde_json's limit, or not JSON at all, is read whole.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(crate::entry::without_product_fields(&deep), None);
    assert_eq!(crate::entry::without_product_fields("{\"main\": "), None);
}

#[test]
fn entry_points_are_capped_and_unreadable_ones_skipped() {
    let mut tree = MemTree::new();
    for i in 0..(MAX_ENTRY_POINTS + 10) {
        tree.add(&format!("p{i}/Makefile"), false, b"all:\n\t./run.sh\n");
    }
    tree.add("p0/run.sh", false, b"echo\n");
    let changes = [Change {
        path: "p0/run.sh",
        new: None,
        executable: false,
    }];
    let raised = raise_by_tree(&changes, &tree);
    assert_eq!(
        raised.get("p0/run.sh").map(|r| r.rule),
        Some("build.reached")
    );
}

#[test]
fn a_directory_ci_names_does_not_hide_a_charts_template_placement_found() {
    // traefik-helm-chart's shape: a CI step runs in the chart's directory, and a template
    // named by no path rule sits in the chart's templates/.
    let mut tree = MemTree::new();
    tree.add(
        "traefik/Chart.yaml",
        false,
        b"apiVersion: v2\nname: traefik\n",
    );
    tree.add(
        "traefik/templates/_service-metrics.tpl",
        false,
        b"{{- define \"x\" -}}\n",
    );
    tree.add(
        ".github/workflows/lint.yml",
        false,
        b"jobs:\n  lint:\n    steps:\n      - run: helm schema\n        working-directory: traefik\n",
    );
    let path = "traefik/templates/_service-metrics.tpl";
    let changes = [Change {
        path,
        new: Some(b"{{- define \"y\" -}}\n"),
        executable: false,
    }];
    let raised = raise_by_tree(&changes, &tree);
    assert_eq!(raised.get(path).map(|r| r.rule), Some("iac.helm-template"));
    let classified = crate::classify_change(&changes, &tree);
    assert_eq!(classified[0].class.rule, "iac.helm-template");
}

#[test]
fn entry_points_are_found_by_directory_components_at_any_depth() {
    let ci = [
        ".github/workflows/test.yml",
        "svc/.github/workflows/Test.YAML",
        ".gitlab/ci/build.yml",
        "a/b/.circleci/config.yml",
        "zuul.d/jobs.yaml",
        "tools/scripts/ci/run.sh",
        ".github/scripts/release.py",
        "x/.buildkite/pipeline.yml",
    ];
    for p in ci {
        assert_eq!(entry_point(p), Some(Bucket::Ci), "{p}");
    }
    assert_eq!(entry_point("pkg/Makefile"), Some(Bucket::Build));
    assert_eq!(entry_point("a/.husky/pre-commit"), Some(Bucket::Build));
    for p in [
        ".github/workflows",
        "docs/github/workflows/x.yml",
        "my.github/workflows/x.yml",
        "src/.circleci",
        "zuul.d",
        "vendor/pkg/Makefile",
        "a/testdata/package.json",
        "scripts/cix/run.sh",
    ] {
        assert_ne!(entry_point(p), Some(Bucket::Ci), "{p}");
    }
    assert_eq!(entry_point("vendor/pkg/Makefile"), None);
    assert_eq!(entry_point("a/testdata/package.json"), None);
}

/// A tree with what its entry points reach worked out beforehand, as the gate's index has it.
struct WithReach<'a> {
    tree: &'a MemTree,
    reach: TreeReach,
}

impl Tree for WithReach<'_> {
    fn files(&self) -> &Listing {
        self.tree.files()
    }
    fn read(&self, paths: &[&str]) -> Vec<Option<Vec<u8>>> {
        self.tree.read(paths)
    }
    fn reach(&self) -> Option<&TreeReach> {
        Some(&self.reach)
    }
}

#[test]
fn what_the_tree_reaches_worked_out_beforehand_gives_the_same_answer_for_any_change() {
    let (mut fast, mut slow) = (0, 0);
    for f in fixtures() {
        let tree = &f.tree;
        let pre = WithReach {
            tree,
            reach: TreeReach::of_tree(tree),
        };
        let paths: Vec<String> = tree.files().iter().map(|t| t.path.clone()).collect();
        // Every path of the tree and every path a read text named, and new ones beside them.
        let mut targets: BTreeSet<String> = paths.iter().cloned().collect();
        targets.extend(pre.reach.watched.iter().cloned());
        targets.extend(pre.reach.watched_dirs.iter().map(|d| format!("{d}/new.sh")));
        targets.extend(paths.iter().map(|p| format!("{}/new.sh", dir_of(p))));
        targets.extend(paths.iter().map(|p| format!("{p}.new")));
        let named = format!("run: ./{}\n", paths[0]);
        for target in &targets {
            let old = tree.read(&[target.as_str()]).remove(0);
            let edited = [old.clone().unwrap_or_default(), named.as_bytes().to_vec()].concat();
            let kinds: [(Option<&[u8]>, bool); 4] = [
                (Some(&edited), false),
                (Some(b"#!/bin/sh\n"), true),
                (old.as_deref(), true),
                (None, false),
            ];
            for (new, executable) in kinds {
                let change = [Change {
                    path: target,
                    new,
                    executable,
                }];
                if pre.reach.holds_for(&change) {
                    fast += 1;
                } else {
                    slow += 1;
                }
                assert_eq!(
                    raise_by_tree(&change, &pre),
                    raise_by_tree(&change, tree),
                    "{}: {target} {:?}",
                    f.name,
                    new.map(String::from_utf8_lossy)
                );
            }
        }
    }
    // Both ways are taken: changes that leave the entry points' reach as it is, and changes
    // that make the gate work it out again.
    assert!(
        fast > 100 && slow > 100,
        "{fast} kept, {slow} worked out again"
    );
}

#[test]
fn a_puppet_modules_metadata_is_its_dependency_manifest_and_other_metadata_is_not() {
    let mut tree = MemTree::new();
    tree.add("manifests/init.pp", false, b"class x {}\n")
        .add("metadata.json", false, b"{}\n")
        .add("web/metadata.json", false, b"{}\n");
    let change = |p| Change {
        path: p,
        new: Some(br#"{"dependencies": [{"name": "puppetlabs/stdlib"}]}"#),
        executable: false,
    };
    let got = classify_change(
        &[change("metadata.json"), change("web/metadata.json")],
        &tree,
    );
    assert_eq!(got[0].class.rule, "deps.module-metadata");
    assert_eq!(got[0].class.bucket, Bucket::Deps);
    assert_eq!(got[1].class.bucket, Bucket::Other);
}
