//! The rule table compiled for matching, once per process, for a gate that classifies a
//! handful of paths: no glob is compiled until a path could match it. Each table glob is kept
//! as text with a key: a literal path, a name at any depth (`**/Makefile`) or an extension
//! (`**/*.tf`) is looked up by the path itself, its file name or its extension; any other glob
//! by the literal text every match of it must hold ([`required_literal`]: `.claude` for
//! `**/.claude{,/**}`), tried on a path that holds it. A glob tried is compiled by `globset`
//! (once) and `globset` decides the match: the keys only pick which globs to try.
//!
//! Guards against: a rule silently not matching. A key is one every match has: the literal is
//! taken only outside `*`, `?`, `[...]` and `{...}`, without a `/` next to `**` (which may match
//! nothing), and a glob with an escape has none (it is always tried); a unit test checks, over
//! the labelled corpus and generated samples of every glob, that the hits are those of the
//! whole table in one `globset` set.
//! Fails closed: a glob that does not parse sends the path to a human
//! ([`super::TABLE_BROKEN_RULE`]; a unit test keeps every glob parsing).

use std::collections::HashMap;
use std::sync::{LazyLock, OnceLock};

use super::{build_glob, fold_path, normalize_path, table};

/// The table's globs with their keys.
pub(super) struct Compiled {
    globs: Vec<TableGlob>,
    /// Keyed globs by side (0: matched against the folded path, 1: the normalised one), under
    /// `p:` and the path, `n:` and a file name, or `e:` and an extension.
    keyed: [HashMap<String, Vec<usize>>; 2],
    /// The other globs: tried on a path holding their literal.
    by_literal: Vec<usize>,
}

/// One glob of the table, compiled on first use.
struct TableGlob {
    glob: String,
    /// Matched against the normalised path (else the folded one).
    exact: bool,
    rule: usize,
    literal: String,
    /// `None`: the glob does not parse.
    matcher: OnceLock<Option<globset::GlobMatcher>>,
}

/// The compiled table.
static COMPILED: LazyLock<Compiled> = LazyLock::new(compile_table);

/// Expansions a glob's `{a,b}` alternations may be split into.
const MAX_EXPANSIONS: usize = 512;

/// The globs to keep for one table glob (already anchored): its `{a,b}` alternations expanded
/// when every expansion is keyed or holds a literal of at least three characters (so it is
/// tried on few paths); otherwise the glob itself.
pub(super) fn table_globs(glob: &str) -> Vec<String> {
    let expanded = expand_braces(glob);
    let narrow = |g: &String| key_of(g).is_some() || required_literal(g).len() >= 3;
    if expanded.len() <= MAX_EXPANSIONS && expanded.iter().all(narrow) {
        expanded
    } else {
        vec![glob.to_owned()]
    }
}

/// The key of a glob every match of which is a literal path (`p:`), a literal file name at any
/// depth (`n:`, `**/NAME`) or a file name with a literal extension holding no dot (`e:`,
/// `**/*.EXT`); `None` for any other glob.
pub(super) fn key_of(glob: &str) -> Option<String> {
    let literal = |s: &str| !s.contains(['*', '?', '[', ']', '{', '}', '\\']);
    match (glob.strip_prefix("**/*."), glob.strip_prefix("**/")) {
        (Some(ext), _) => (literal(ext) && !ext.contains(['.', '/'])).then(|| format!("e:{ext}")),
        (None, Some(name)) => (literal(name) && !name.contains('/')).then(|| format!("n:{name}")),
        (None, None) => literal(glob).then(|| format!("p:{glob}")),
    }
}

/// The keys a path is looked up under: itself, its file name, its extension.
fn keys_of(path: &str) -> Vec<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let mut keys = vec![format!("p:{path}"), format!("n:{name}")];
    if let Some((_, ext)) = name.rsplit_once('.') {
        keys.push(format!("e:{ext}"));
    }
    keys
}

/// Expands `{a,b}` alternations (not nested) into one glob each.
pub(super) fn expand_braces(glob: &str) -> Vec<String> {
    let Some(open) = glob.find('{') else {
        return vec![glob.to_owned()];
    };
    let Some(close) = glob[open..].find('}').map(|c| open + c) else {
        return vec![glob.to_owned()];
    };
    let (head, tail) = (&glob[..open], &glob[close + 1..]);
    glob[open + 1..close]
        .split(',')
        .flat_map(|alt| expand_braces(&format!("{head}{alt}{tail}")))
        .collect()
}

/// The longest text every path `glob` matches contains ("" when none is certain): a run of
/// characters outside `*`, `?`, `[...]` and `{...}`, without a `/` that touches `**`.
pub(super) fn required_literal(glob: &str) -> &str {
    if glob.contains('\\') || glob.contains("[]") || glob.contains("[!]") {
        return "";
    }
    let mut best = "";
    let (mut start, mut braces, mut class) = (0usize, 0usize, false);
    let mut take = |from: usize, to: usize| {
        let mut run = &glob[from.min(to)..to];
        if glob[..from.min(to)].ends_with("**") {
            run = run.strip_prefix('/').unwrap_or(run);
        }
        if glob[to..].starts_with("**") {
            run = run.strip_suffix('/').unwrap_or(run);
        }
        if run.len() > best.len() {
            best = run;
        }
    };
    for (i, c) in glob.char_indices() {
        let literal = braces == 0 && !class && !matches!(c, '*' | '?' | '[' | ']' | '{' | '}');
        if !literal {
            take(start, i);
            start = i + c.len_utf8();
        }
        match c {
            '[' if braces == 0 => class = true,
            ']' => class = false,
            '{' if !class => braces += 1,
            '}' if !class => braces = braces.saturating_sub(1),
            _ => {}
        }
    }
    take(start, glob.len());
    best
}

/// Keys every glob of [`table::RULES`]; nothing is compiled.
pub(super) fn compile_table() -> Compiled {
    let mut c = Compiled {
        globs: Vec::new(),
        keyed: [HashMap::new(), HashMap::new()],
        by_literal: Vec::new(),
    };
    for (rule, r) in table::RULES.iter().enumerate() {
        for (globs, exact) in [(r.globs, false), (r.exact_globs, true)] {
            for glob in globs.iter().flat_map(|g| table_globs(&super::anchor(g))) {
                let i = c.globs.len();
                match key_of(&glob) {
                    Some(key) => c.keyed[usize::from(exact)].entry(key).or_default().push(i),
                    None => c.by_literal.push(i),
                }
                c.globs.push(TableGlob {
                    literal: required_literal(&glob).to_owned(),
                    glob,
                    exact,
                    rule,
                    matcher: OnceLock::new(),
                });
            }
        }
    }
    c
}

/// Positions in the rule table whose globs match `path`, ascending, without content tests;
/// `None` when a glob tried does not parse.
pub(super) fn glob_hits(path: &str) -> Option<Vec<usize>> {
    let c = &*COMPILED;
    let norm = normalize_path(path);
    let sides = [fold_path(&norm), norm];
    let mut tried: Vec<usize> = Vec::new();
    for (side, text) in sides.iter().enumerate() {
        for key in keys_of(text) {
            tried.extend(c.keyed[side].get(&key).into_iter().flatten());
        }
    }
    tried.extend(c.by_literal.iter().copied().filter(|&i| {
        let g = &c.globs[i];
        sides[usize::from(g.exact)].contains(g.literal.as_str())
    }));
    let mut hits = Vec::new();
    for i in tried {
        let g = &c.globs[i];
        let matcher = g.matcher.get_or_init(|| {
            let glob = build_glob(&g.glob, false).ok()?;
            Some(glob.compile_matcher())
        });
        if matcher.as_ref()?.is_match(&sides[usize::from(g.exact)]) {
            hits.push(g.rule);
        }
    }
    hits.sort_unstable();
    hits.dedup();
    Some(hits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn the_literal_is_one_every_match_holds() {
        assert_eq!(required_literal("**/.claude{,/**}"), ".claude");
        assert_eq!(required_literal("**/*_test.{go,py}"), "_test.");
        assert_eq!(required_literal("**/ansible/**/*.{yml,yaml}"), "ansible");
        assert_eq!(required_literal("**/{build,release}[-_]*.{sh,bat}"), ".");
        assert_eq!(required_literal("{tasks,vars}/*.{yml,yaml}"), "/");
        assert_eq!(required_literal("**/*[-_]hook.{sh,py}"), "hook.");
        assert_eq!(
            required_literal("**/a\\*b/**"),
            "",
            "an escape: always tried"
        );
        assert_eq!(required_literal("**/*"), "");
    }

    /// The labelled paths, generated samples of every glob (each `[...]` filled with each of
    /// its characters) and their near misses.
    fn sample_paths() -> BTreeSet<String> {
        let corpus = include_str!("../tests/data/classify-corpus.tsv");
        let mut paths: BTreeSet<String> = corpus
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split('\t').nth(1))
            .map(str::to_owned)
            .collect();
        paths.extend(super::super::tests::rows().into_iter().map(|r| r.path));
        for rule in table::RULES {
            for g in rule.globs.iter().chain(rule.exact_globs) {
                let anchored = super::super::anchor(g);
                let mut filled = vec![anchored.clone()];
                while let Some(open) = filled[0].find('[') {
                    let close = open + filled[0][open..].find(']').unwrap();
                    filled = filled
                        .iter()
                        .flat_map(|f| {
                            let class = f[open + 1..close].to_owned();
                            let (head, tail) = (f[..open].to_owned(), f[close + 1..].to_owned());
                            class
                                .chars()
                                .map(move |c| format!("{head}{c}{tail}"))
                                .collect::<Vec<_>>()
                        })
                        .collect();
                }
                for f in filled {
                    paths.extend(super::super::tests::samples_for(&f));
                }
            }
        }
        paths
    }

    #[test]
    fn hits_are_those_of_the_whole_table_in_one_set() {
        // The reference: every glob in one set per side, as globset alone would match them.
        let (mut folded, mut exact) = (
            globset::GlobSetBuilder::new(),
            globset::GlobSetBuilder::new(),
        );
        let (mut folded_rule, mut exact_rule) = (Vec::new(), Vec::new());
        for (i, rule) in table::RULES.iter().enumerate() {
            for (globs, set, map) in [
                (rule.globs, &mut folded, &mut folded_rule),
                (rule.exact_globs, &mut exact, &mut exact_rule),
            ] {
                for g in globs {
                    set.add(build_glob(&super::super::anchor(g), false).unwrap());
                    map.push(i);
                }
            }
        }
        let (folded, exact) = (folded.build().unwrap(), exact.build().unwrap());
        let paths = sample_paths();
        assert!(paths.len() > 10_000, "only {} paths", paths.len());
        let mut regex_hits = 0;
        for path in &paths {
            let norm = normalize_path(path);
            let mut want: Vec<usize> = folded
                .matches(fold_path(&norm))
                .into_iter()
                .map(|g| folded_rule[g])
                .chain(exact.matches(&norm).into_iter().map(|g| exact_rule[g]))
                .collect();
            want.sort_unstable();
            want.dedup();
            let got = glob_hits(path).unwrap();
            assert_eq!(got, want, "{path:?}");
            let c = &*COMPILED;
            let folded_path = fold_path(&norm);
            regex_hits += c
                .by_literal
                .iter()
                .map(|&i| &c.globs[i])
                .filter(|g| !g.exact && folded_path.contains(g.literal.as_str()))
                .filter(|g| {
                    g.matcher
                        .get()
                        .and_then(Option::as_ref)
                        .is_some_and(|m| m.is_match(&folded_path))
                })
                .count()
                .min(1);
        }
        assert!(
            regex_hits > 500,
            "only {regex_hits} paths hit a glob keyed by its literal"
        );
    }
}
