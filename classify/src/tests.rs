//! Unit tests of the path classifier and `airlock classify`.

use super::compiled::{compile_table, expand_braces, key_of, table_globs};
use super::table::RULES;
use super::*;
use std::collections::{BTreeSet, HashSet};

const TABLE: &str = include_str!("../tests/data/classify.tsv");
const DOC: &str = include_str!("../../docs/CLASSIFY.md");

pub(super) struct Row {
    line: usize,
    pub(super) path: String,
    bucket: Bucket,
    rule: String,
    content: Option<String>,
}

pub(super) fn rows() -> Vec<Row> {
    let mut out = Vec::new();
    for (i, line) in TABLE.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        assert!(
            (3..=4).contains(&cols.len()),
            "classify.tsv:{}: expected 3 or 4 tab-separated columns: {line:?}",
            i + 1
        );
        out.push(Row {
            line: i + 1,
            path: cols[0].to_owned(),
            bucket: cols[1].parse().unwrap(),
            rule: cols[2].to_owned(),
            content: cols.get(3).map(|c| c.replace("\\n", "\n")),
        });
    }
    out
}

/// Paths a glob should (and nearly should) match: its wildcards filled in several ways,
/// each brace alternative, and near misses (a prefix, a suffix, a changed extension).
pub(super) fn samples_for(glob: &str) -> Vec<String> {
    let mut alternatives = vec![String::new()];
    let mut rest = glob;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').map(|c| open + c).unwrap();
        let head = &rest[..open];
        let options: Vec<&str> = rest[open + 1..close].split(',').collect();
        alternatives = alternatives
            .iter()
            .flat_map(|a| options.iter().map(move |o| format!("{a}{head}{o}")))
            .collect();
        rest = &rest[close + 1..];
    }
    let mut out = Vec::new();
    for a in alternatives.iter().map(|a| format!("{a}{rest}")) {
        for (deep, star, any) in [("", "", "q"), ("d", "x", "Z"), ("d/e", "a.b", ".")] {
            let filled = a
                .replace("**", "\u{1}")
                .replace('*', star)
                .replace('?', any)
                .replace('\u{1}', deep);
            let filled = filled.trim_matches('/').replace("//", "/");
            for p in [
                filled.clone(),
                format!("top/{filled}"),
                format!("{filled}/child"),
                format!("{filled}x"),
                format!("{filled}.bak"),
                filled.to_uppercase(),
            ] {
                if !p.is_empty() {
                    out.push(p);
                }
            }
        }
    }
    out
}

#[test]
fn brace_expansion_matches_what_globset_reads_in_the_unexpanded_glob() {
    let mut globs: Vec<String> = Vec::new();
    for r in RULES {
        globs.extend(r.globs.iter().chain(r.exact_globs).map(|g| anchor(g)));
    }
    let mut paths: BTreeSet<String> = rows()
        .into_iter()
        .map(|r| normalize_path(&r.path))
        .collect();
    for g in &globs {
        paths.extend(samples_for(g));
    }
    assert!(paths.len() > 5_000, "only {} sample paths", paths.len());
    let mut positives = 0;
    for g in &globs {
        let whole = build_glob(g, false).unwrap().compile_matcher();
        let parts: Vec<globset::GlobMatcher> = expand_braces(g)
            .iter()
            .map(|e| build_glob(e, false).unwrap().compile_matcher())
            .collect();
        for path in &paths {
            let want = whole.is_match(path);
            positives += usize::from(want);
            assert_eq!(parts.iter().any(|m| m.is_match(path)), want, "{g} {path:?}");
        }
    }
    assert!(positives > 1_000, "{positives} matches");
}

#[test]
fn braces_are_expanded_into_globs_with_a_key_or_a_narrow_literal() {
    assert_eq!(
        table_globs("**/{makefile,gnumakefile}"),
        ["**/makefile", "**/gnumakefile"]
    );
    assert_eq!(table_globs("**/*.{tf,hcl}"), ["**/*.tf", "**/*.hcl"]);
    assert_eq!(
        table_globs("**/.github/{codeowners,dependabot.yml}"),
        ["**/.github/codeowners", "**/.github/dependabot.yml"]
    );
    assert_eq!(
        table_globs("**/charts{,/**}"),
        ["**/charts", "**/charts/**"]
    );
    // One expansion would be tried on most paths (its literal is `a/`): the glob stays whole.
    assert_eq!(table_globs("**/{a,bb}/*.x"), ["**/{a,bb}/*.x"]);
    assert_eq!(key_of("**/makefile").as_deref(), Some("n:makefile"));
    assert_eq!(key_of("**/*.tf").as_deref(), Some("e:tf"));
    assert_eq!(
        key_of(".github/codeowners").as_deref(),
        Some("p:.github/codeowners")
    );
    for unkeyed in [
        "**/*.d/*.conf",
        "**/*test.java",
        "**/*.spec.ts",
        "**/.github/x",
    ] {
        assert_eq!(key_of(unkeyed), None, "{unkeyed}");
    }
}

#[test]
fn real_world_paths() {
    let rows = rows();
    let distinct: HashSet<&str> = rows.iter().map(|r| r.path.as_str()).collect();
    assert!(
        distinct.len() >= 120,
        "only {} distinct paths",
        distinct.len()
    );
    let mut failures = Vec::new();
    for r in &rows {
        let got = classify_path(&r.path, r.content.as_deref().map(str::as_bytes));
        if got.bucket != r.bucket || got.rule != r.rule {
            failures.push(format!(
                "classify.tsv:{}: {:?}: expected {} ({}), got {} ({})",
                r.line, r.path, r.bucket, r.rule, got.bucket, got.rule
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_rule_has_a_real_world_example() {
    let used: HashSet<String> = rows().into_iter().map(|r| r.rule).collect();
    let missing: Vec<&str> = RULES
        .iter()
        .map(|r| r.id)
        .chain([table::OTHER_RULE])
        .filter(|id| !used.contains(*id))
        .collect();
    assert!(
        missing.is_empty(),
        "rules without an example in classify.tsv: {missing:?}"
    );
}

#[test]
fn rule_table_compiles_and_ids_are_unique_and_prefixed_by_bucket() {
    compile_table();
    // Globs are parsed on first use: each must parse.
    for r in RULES {
        for g in r.globs.iter().chain(r.exact_globs) {
            for g in table_globs(&anchor(g)) {
                assert!(
                    build_glob(&g, false).is_ok(),
                    "{}: {g} does not parse",
                    r.id
                );
            }
        }
    }
    let mut seen = HashSet::new();
    for r in RULES {
        assert!(seen.insert(r.id), "duplicate rule id {}", r.id);
        let (prefix, rest) = r.id.split_once('.').unwrap();
        assert_eq!(
            prefix,
            r.bucket.as_str(),
            "{} is in bucket {}",
            r.id,
            r.bucket
        );
        assert!(
            !rest.is_empty()
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{} is not kebab-case",
            r.id
        );
        assert!(
            !r.globs.is_empty() || !r.exact_globs.is_empty(),
            "{} has no globs",
            r.id
        );
    }
    assert!(!seen.contains(table::OTHER_RULE));
}

#[test]
fn folded_globs_are_lowercase_or_they_would_never_match() {
    for r in RULES {
        for g in r.globs {
            assert_eq!(
                *g,
                g.to_lowercase(),
                "rule {}: glob {g:?} must be lowercase",
                r.id
            );
        }
    }
}

#[test]
fn case_variant_of_workflow_dir_is_still_ci() {
    for p in [
        ".GITHUB/WORKFLOWS/x.yml",
        ".github/Workflows/x.yml",
        ".github/workflows/X.YAML",
        ".github/wor\u{212a}flows/x.yml",
        ".github/work\u{fb02}ows/x.yml",
    ] {
        assert_eq!(classify_path(p, None).rule, "ci.github-workflow", "{p:?}");
    }
}

#[test]
fn windows_trailing_dots_spaces_and_backslashes_do_not_hide_a_path() {
    assert_eq!(
        classify_path(".github. /workflows./ci.yml", None).bucket,
        Bucket::Ci
    );
    assert_eq!(classify_path("Makefile.", None).bucket, Bucket::Build);
    assert_eq!(
        classify_path(".vscode \\settings.json", None).bucket,
        Bucket::Agent
    );
    assert_eq!(classify_path("Cargo.lock ", None).bucket, Bucket::Deps);
}

#[test]
fn unicode_normalisation_does_not_change_the_bucket() {
    // "é" precomposed and decomposed: the same file on macOS.
    let a = classify_path("docs/caf\u{e9}/CODEOWNERS", None);
    let b = classify_path("docs/cafe\u{301}/CODEOWNERS", None);
    assert_eq!(a, b);
    assert_eq!(a.rule, "governance.codeowners");
}

#[test]
fn k8s_substring_in_a_source_file_name_is_not_iac() {
    for p in [
        "src/k8sclient.go",
        "pkg/k8s/client.go",
        "k8s/client.go",
        "cmd/kubernetes.rs",
    ] {
        assert_eq!(classify_path(p, None).bucket, Bucket::Src, "{p}");
    }
}

#[test]
fn content_can_raise_a_yaml_file_into_iac_but_never_lower_a_name_rule() {
    let pod = b"apiVersion: v1\nkind: Pod\n".as_slice();
    // A fixture stays a test: only reachability can raise it.
    assert_eq!(
        classify_path("tests/fixtures/pod.yaml", Some(pod)).rule,
        "tests.fixture-dir"
    );
    assert_eq!(
        classify_path("src/pod.yaml", Some(pod)).rule,
        "iac.k8s-content"
    );
    assert_eq!(
        classify_path("tests/fixtures/pod.yaml", None).rule,
        "tests.fixture-dir"
    );
    assert_eq!(
        classify_path(".github/workflows/x.yml", Some(pod)).bucket,
        Bucket::Ci
    );
    assert_eq!(
        classify_path(".vscode/pod.yaml", Some(pod)).bucket,
        Bucket::Agent
    );
    // Not YAML/JSON: content is not consulted for Kubernetes.
    assert_eq!(classify_path("src/pod.go", Some(pod)).bucket, Bucket::Src);
    // A shebang does not turn a lockfile into a script.
    assert_eq!(
        classify_path("Cargo.lock", Some(b"#!/bin/sh\n")).bucket,
        Bucket::Deps
    );
}

#[test]
fn k8s_content_needs_both_keys_at_top_level() {
    let yes = [
        "apiVersion: v1\nkind: Service\n",
        "\u{feff}apiVersion: v1\r\nkind: Service\r\n",
        "# comment\n---\nkind: Secret\nmetadata: {}\napiVersion: v1\n",
        "{\"kind\": \"Pod\", \"apiVersion\": \"v1\"}",
    ];
    let no = [
        "apiVersion: v1\n",
        "spec:\n  apiVersion: v1\n  kind: Pod\n",
        "apiVersionX: v1\nkind: Pod\n",
        "name: x\n",
        "",
    ];
    for c in yes {
        assert_eq!(
            content::detect("x.yaml", c.as_bytes(), false).map(|h| h.rule),
            Some("iac.k8s-content"),
            "{c:?}"
        );
    }
    for c in no {
        assert_eq!(
            content::detect("x.yaml", c.as_bytes(), false),
            None,
            "{c:?}"
        );
    }
}

#[test]
fn content_after_the_hint_limit_is_ignored() {
    let mut big = vec![b'#'; CONTENT_HINT_MAX_BYTES];
    big.extend_from_slice(b"\napiVersion: v1\nkind: Pod\n");
    assert_eq!(classify_path("x.yaml", Some(&big)).bucket, Bucket::Other);
    let mut small = b"apiVersion: v1\nkind: Pod\n".to_vec();
    small.extend(vec![b' '; CONTENT_HINT_MAX_BYTES * 2]);
    assert_eq!(classify_path("x.yaml", Some(&small)).bucket, Bucket::Iac);
}

#[test]
fn cloudformation_and_shebang_content() {
    assert_eq!(
        classify_path(
            "stack.json",
            Some(br#"{"Resources": {"B": {"Type": "AWS::S3::Bucket"}}}"#)
        )
        .rule,
        "iac.cloudformation-content"
    );
    assert_eq!(
        classify_path("stack.json", Some(b"{\"Resources\": {}}")).bucket,
        Bucket::Other
    );
    assert_eq!(
        classify_path("utils/fmt", Some(b"#!/usr/bin/env python3\n")).rule,
        "build.tooling-script"
    );
    assert_eq!(
        classify_path("lib/fmt", Some(b"#!/usr/bin/env python3\n")).rule,
        "src.shebang"
    );
    assert_eq!(
        classify_path("utils/fmt", Some(b"# not a script\n")).bucket,
        Bucket::Other
    );
}

#[test]
fn needs_content_only_where_a_content_rule_could_win() {
    for p in [
        "config.yaml",
        "x/pod.json",
        "lib/helper",
        "src/main.rs",
        "doc/mksyntaxgo",
    ] {
        assert!(needs_content(p), "{p}");
    }
    for p in [
        ".github/workflows/ci.yml",
        "deploy/k8s/app.yaml",
        "Makefile",
        "README.md",
        "tests/fixtures/pod.yml",
    ] {
        assert!(!needs_content(p), "{p}");
    }
}

#[test]
fn a_file_or_link_in_place_of_a_sensitive_directory_keeps_its_bucket() {
    assert_eq!(
        classify_path(".github/workflows", None).rule,
        "ci.github-workflow"
    );
    assert_eq!(classify_path(".vscode", None).rule, "agent.editor-config");
    assert_eq!(classify_path("sub/.claude", None).rule, "agent.tool-dir");
    assert_eq!(classify_path(".circleci", None).rule, "ci.circleci");
    assert_eq!(classify_path("vendor", None).rule, "deps.vendored");
    // Only the directory name itself, not a longer name.
    assert_ne!(classify_path(".vscodex", None).bucket, Bucket::Agent);
    assert_eq!(anchor("ci/**"), "ci{,/**}");
    assert_eq!(anchor("**/.husky/**"), "**/.husky{,/**}");
    assert_eq!(anchor("makefile"), "**/makefile");
    assert_eq!(anchor("*.tf"), "**/*.tf");
}

#[test]
fn normalize_and_fold() {
    assert_eq!(normalize_path("./a//b/./c"), "a/b/c");
    assert_eq!(normalize_path("a\\b"), "a/b");
    assert_eq!(normalize_path("a. . /b.."), "a/b");
    assert_eq!(normalize_path("../x/.../y"), "../x/.../y");
    assert_eq!(fold_path("Docs/\u{17f}ECURITY.md"), "docs/security.md");
    assert_eq!(fold_path("/abs/Path"), "abs/path");
    assert_eq!(classify_path("", None).rule, table::OTHER_RULE);
}

#[test]
fn bucket_names_round_trip() {
    for b in Bucket::ALL {
        assert_eq!(b.as_str().parse::<Bucket>().unwrap(), b);
        assert_eq!(serde_json::to_string(&b).unwrap(), format!("\"{b}\""));
        assert_eq!(Bucket::ALL[b.index()], b);
    }
    assert!("CI".parse::<Bucket>().is_err());
    assert!("frontend".parse::<Bucket>().is_err());
}

/// The rules table of docs/CLASSIFY.md, generated from [`RULES`].
fn rules_markdown() -> String {
    let code = |g: &&str| format!("`{g}`");
    let mut out =
        String::from("| # | Rule id | Bucket | Matches | Globs |\n|---|---|---|---|---|\n");
    for (i, r) in RULES.iter().enumerate() {
        let mut what = r.what.to_owned();
        if let Some(c) = r.content {
            what.push_str("; ");
            what.push_str(c.describe());
        }
        let mut globs: Vec<String> = r.globs.iter().map(code).collect();
        globs.extend(
            r.exact_globs
                .iter()
                .map(|g| format!("`{g}` (case-sensitive)")),
        );
        out.push_str(&format!(
            "| {} | `{}` | {} | {} | {} |\n",
            i + 1,
            r.id,
            r.bucket,
            what,
            globs.join(", ")
        ));
    }
    out.push_str(&format!(
        "| {} | `{}` | other | Everything else | |\n",
        RULES.len() + 1,
        table::OTHER_RULE
    ));
    out
}

#[test]
fn docs_list_every_rule_in_evaluation_order() {
    let rules_table = |rules: &[(&str, &str)]| {
        let mut out = String::from("| Rule id | Bucket | Matches |\n|---|---|---|\n");
        for (id, what) in rules {
            let bucket = id.split('.').next().unwrap_or_default();
            out.push_str(&format!("| `{id}` | {bucket} | {what} |\n"));
        }
        out
    };
    let mut name_rules: Vec<(&str, &str)> = vec![
        (ROOT_EXECUTABLE_RULE, "An extension-less file at the root whose name starts with a lowercase letter (`artisan`, `bootstrap`), after every glob rule"),
        (TABLE_BROKEN_RULE, "Every path, if the built-in table failed to compile (cannot happen: a unit test compiles it; fail closed)"),
    ];
    name_rules.extend_from_slice(unclaimed::RULES);
    for (marker, expected) in [
        ("rules", rules_markdown()),
        ("content-rules", rules_table(content::RULES)),
        ("tree-rules", rules_table(reach::RULES)),
        ("code-rules", rules_table(&name_rules)),
    ] {
        let begin = format!("<!-- {marker}:begin -->\n");
        let end = format!("<!-- {marker}:end -->");
        let start = DOC
            .find(&begin)
            .unwrap_or_else(|| panic!("docs/CLASSIFY.md: {marker}:begin marker"))
            + begin.len();
        let stop = DOC[start..]
            .find(&end)
            .unwrap_or_else(|| panic!("docs/CLASSIFY.md: {marker}:end marker"))
            + start;
        if DOC[start..stop] != expected {
            let out = std::env::temp_dir().join(format!("CLASSIFY.{marker}.md"));
            std::fs::write(&out, &expected).unwrap();
            panic!(
                "docs/CLASSIFY.md {marker} table is stale; the generated table is in {}",
                out.display()
            );
        }
    }
    let ids: BTreeSet<&str> = RULES.iter().map(|r| r.id).collect();
    for id in ids {
        assert!(DOC.contains(&format!("`{id}`")), "{id} not documented");
    }
}
