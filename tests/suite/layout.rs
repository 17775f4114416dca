//! The source tree's shape, kept by tests: no import circle between the files of any crate
//! (issue 43), and no file of the trusted side (with the classifier) over 600 lines except
//! rule tables.
//!
//! An import circle is a strongly connected set of two or more files, reading `crate::` and
//! `super::` paths outside comments and before a column-0 `#[cfg(test)]` (the test module):
//! the same rough cut as the founders' `circles.py`, so both agree. Small shared things live
//! on a ground floor (the clock in `airlock_core::clock`, `Stop` in `gate/mod.rs`, store URL
//! checks in `store.rs`) instead of in the high-level module that first needed them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every crate's source directory, relative to the workspace root.
const CRATES: &[&str] = &[
    "shared/src",
    "classify/src",
    "testkit/src",
    "scan/src",
    "trusted-side/src",
    "worker-side/src",
    "sandbox/src",
];

/// The longest file the trusted side keeps, in lines.
const MAX_LINES: usize = 600;

/// Files exempt from [`MAX_LINES`]: tables of rules, read row by row.
const RULE_TABLES: &[&str] = &["table.rs"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// `.rs` files beneath `dir`, by module path (`a/b.rs` and `a/b/mod.rs` are `["a", "b"]`).
fn module_files(dir: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(dir).unwrap().with_extension("");
                let mut parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    parts.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) {
                    parts.pop();
                }
                out.insert(parts, p);
            }
        }
    }
    out
}

/// The file's code before its test module, without comments (doc links name modules).
fn body(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        if line.trim_start().starts_with("//") {
            continue;
        }
        let code = line.find(" //").map_or(line, |i| &line[..i]);
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// The module paths after each `prefix` (`crate::` or `super::`) in `code`.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let mut parts = Vec::new();
        let mut s = rest;
        loop {
            let end = s
                .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(s.len());
            if end == 0 {
                break;
            }
            parts.push(s[..end].to_string());
            match s[end..].strip_prefix("::") {
                Some(next) => s = next,
                None => break,
            }
        }
        out.push(parts);
    }
    out
}

fn resolve(files: &BTreeMap<Vec<String>, PathBuf>, parts: &[String]) -> Option<PathBuf> {
    (1..=parts.len())
        .rev()
        .find_map(|n| files.get(&parts[..n]).cloned())
}

/// Each file's imports of other files of the same crate.
fn import_graph(src: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let files = module_files(src);
    let mut graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (key, p) in &files {
        let code = body(p);
        let mut targets = Vec::new();
        for parts in paths_after(&code, "crate::") {
            targets.push(resolve(&files, &parts));
        }
        for parts in paths_after(&code, "super::") {
            // `super` of a file is its directory's module; of a mod.rs, one level further up.
            let mut base = key.clone();
            base.pop();
            base.extend(parts);
            targets.push(resolve(&files, &base));
        }
        for t in targets.into_iter().flatten() {
            if &t != p {
                graph.entry(p.clone()).or_default().insert(t);
            }
        }
    }
    graph
}

/// Strongly connected sets of two or more nodes (Tarjan).
fn circles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct State<'a> {
        graph: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on: BTreeSet<&'a PathBuf>,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a PathBuf) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn no_crate_has_an_import_circle_between_its_files() {
    let root = workspace();
    let mut found = Vec::new();
    for krate in CRATES {
        let graph = import_graph(&root.join(krate));
        // testkit is three files; every other crate has dozens.
        assert!(
            graph.len() >= 2,
            "{krate}: only {} files import others; the reader is broken",
            graph.len()
        );
        found.extend(circles(&graph));
    }
    assert!(
        found.is_empty(),
        "import circles (move the shared piece to a ground-floor module): {found:#?}"
    );
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("gate")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod gate;\npub mod submit;\n").unwrap();
    std::fs::write(src.join("gate/mod.rs"), "pub mod run;\npub mod bundle;\n").unwrap();
    std::fs::write(src.join("gate/run.rs"), "use crate::submit::now;\n").unwrap();
    std::fs::write(src.join("gate/bundle.rs"), "use super::run::Stop;\n").unwrap();
    std::fs::write(
        src.join("submit.rs"),
        "// crate::gate::bundle in a comment is no import\nfn f() { crate::gate::bundle::x(); }\n\
         #[cfg(test)]\nmod tests { use crate::gate::run; }\n",
    )
    .unwrap();
    let found = circles(&import_graph(src));
    assert_eq!(found.len(), 1, "{found:?}");
    let names: Vec<_> = found[0]
        .iter()
        .map(|p| p.strip_prefix(src).unwrap().display().to_string())
        .collect();
    assert_eq!(names, ["gate/bundle.rs", "gate/run.rs", "submit.rs"]);
    std::fs::write(src.join("submit.rs"), "fn f() {}\n").unwrap();
    assert!(circles(&import_graph(src)).is_empty());
}

/// The directories whose files [`MAX_LINES`] bounds: the trusted side and its classifier.
const CAPPED: &[(&str, usize)] = &[("trusted-side/src", 50), ("classify/src", 5)];

#[test]
fn no_trusted_side_file_is_over_600_lines_except_rule_tables() {
    let mut long = Vec::new();
    for (dir, at_least) in CAPPED {
        let src = workspace().join(dir);
        let files = module_files(&src);
        assert!(
            files.len() >= *at_least,
            "{} files under {dir}",
            files.len()
        );
        long.extend(files.values().filter_map(|p| {
            let rel = p.strip_prefix(&src).unwrap().display().to_string();
            let lines = std::fs::read_to_string(p).unwrap().lines().count();
            let table = p
                .file_name()
                .is_some_and(|n| RULE_TABLES.iter().any(|t| n == *t));
            (lines > MAX_LINES && !table).then(|| format!("{dir}/{rel}: {lines} lines"))
        }));
    }
    assert!(long.is_empty(), "split these by concern: {long:#?}");
}
