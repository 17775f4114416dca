//! The rule table compiled for matching, once per process. Most globs (a literal path, a name
//! at any depth, an extension) go into one `globset` set per side, which matches them without
//! a regex and builds in a millisecond or two. The rest need a regex each; compiling
//! them all was most of a gate's time, and a gate classifies a handful of paths. So each is
//! compiled the first time a path holds the literal text every match of it must hold
//! ([`required_literal`]: `.claude` for `**/.claude{,/**}`, `.github/funding.yml` for
//! `**/.github/funding.yml`), and most paths hold none.
//!
//! Guards against: a rule silently not matching. The literal is taken only outside `*`, `?`,
//! `[...]` and `{...}`, without a `/` next to `**` (which may match nothing), and a glob with an
//! escape has none (it is always tried); a unit test checks, over the labelled corpus and
//! generated samples of every glob, that the hits are those of the whole table in one set.
//! Fails closed: a table that does not parse sends every path to a human
//! ([`super::TABLE_BROKEN_RULE`]).

use std::sync::{LazyLock, OnceLock};

use super::{build_glob, fold_path, normalize_path, table};

/// The compiled table: `folded` is matched against the folded path, `exact` against the
/// normalised one; `*_rule` maps a glob's index to its rule's position.
pub(super) struct Compiled {
    folded: globset::GlobSet,
    folded_rule: Vec<usize>,
    exact: globset::GlobSet,
    exact_rule: Vec<usize>,
    /// Globs that need a regex of their own, compiled on first use.
    regex: Vec<RegexGlob>,
}

/// A glob that needs a regex: parsed and compiled only for a path holding `literal`.
struct RegexGlob {
    glob: String,
    /// Matched against the normalised path (else the folded one).
    exact: bool,
    rule: usize,
    literal: String,
    /// `None`: the glob does not parse (a unit test keeps every glob parsing).
    matcher: OnceLock<Option<globset::GlobMatcher>>,
}

/// The compiled table, or why it did not compile (a unit test keeps it compiling).
static COMPILED: LazyLock<Result<Compiled, String>> = LazyLock::new(compile_table);

/// The globs to compile for one table glob (already anchored): its `{a,b}` alternations
/// expanded when every expansion is a name, a path suffix or an extension, which globset
/// matches without a regex; otherwise the glob itself.
pub(super) fn table_globs(glob: &str) -> Vec<String> {
    let expanded = expand_braces(glob);
    if expanded.iter().all(|g| matched_without_regex(g)) {
        expanded
    } else {
        vec![glob.to_owned()]
    }
}

/// Whether globset matches `glob` without a regex: a literal path, `**/` and a literal name,
/// or `**/*.` and a literal extension holding no dot. (A name with a directory, `**/.github/x`,
/// or an extension of two parts, `**/*.spec.ts`, makes globset compile a regex.)
pub(super) fn matched_without_regex(glob: &str) -> bool {
    let literal = |s: &str| !s.contains(['*', '?', '[', ']', '{', '}', '\\']);
    match (glob.strip_prefix("**/*."), glob.strip_prefix("**/")) {
        (Some(ext), _) => literal(ext) && !ext.contains(['.', '/']),
        (None, Some(name)) => literal(name) && !name.contains('/'),
        (None, None) => literal(glob),
    }
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

/// Compiles [`table::RULES`]: the plain globs into two sets, the others kept for later.
pub(super) fn compile_table() -> Result<Compiled, String> {
    let mut folded = globset::GlobSetBuilder::new();
    let mut exact = globset::GlobSetBuilder::new();
    let (mut folded_rule, mut exact_rule, mut regex) = (Vec::new(), Vec::new(), Vec::new());
    for (i, rule) in table::RULES.iter().enumerate() {
        for (globs, is_exact) in [(rule.globs, false), (rule.exact_globs, true)] {
            for g in globs.iter().flat_map(|g| table_globs(&super::anchor(g))) {
                if !matched_without_regex(&g) {
                    regex.push(RegexGlob {
                        literal: required_literal(&g).to_owned(),
                        glob: g,
                        exact: is_exact,
                        rule: i,
                        matcher: OnceLock::new(),
                    });
                    continue;
                }
                let glob = build_glob(&g, false).map_err(|e| format!("{}: {e}", rule.id))?;
                if is_exact {
                    exact.add(glob);
                    exact_rule.push(i);
                } else {
                    folded.add(glob);
                    folded_rule.push(i);
                }
            }
        }
    }
    Ok(Compiled {
        folded: folded.build().map_err(|e| e.to_string())?,
        folded_rule,
        exact: exact.build().map_err(|e| e.to_string())?,
        exact_rule,
        regex,
    })
}

/// Positions in the rule table whose globs match `path`, ascending, without content tests;
/// `None` when the table did not compile.
pub(super) fn glob_hits(path: &str) -> Option<Vec<usize>> {
    let compiled = COMPILED.as_ref().ok()?;
    let norm = normalize_path(path);
    let folded = fold_path(&norm);
    let mut hits: Vec<usize> = compiled
        .folded
        .matches(&folded)
        .into_iter()
        .filter_map(|g| compiled.folded_rule.get(g).copied())
        .collect();
    hits.extend(
        compiled
            .exact
            .matches(&norm)
            .into_iter()
            .filter_map(|g| compiled.exact_rule.get(g).copied()),
    );
    for r in &compiled.regex {
        let side = if r.exact { &norm } else { &folded };
        if !side.contains(r.literal.as_str()) {
            continue;
        }
        let matcher = r.matcher.get_or_init(|| {
            let glob = build_glob(&r.glob, false).ok()?;
            Some(glob.compile_matcher())
        });
        if matcher.as_ref()?.is_match(side) {
            hits.push(r.rule);
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
        let corpus = include_str!("../../tests/data/classify-corpus.tsv");
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
            let compiled = COMPILED.as_ref().unwrap();
            regex_hits += compiled
                .regex
                .iter()
                .filter(|r| {
                    r.matcher
                        .get()
                        .and_then(Option::as_ref)
                        .is_some_and(|m| m.is_match(fold_path(&norm)))
                })
                .count()
                .min(1);
        }
        assert!(regex_hits > 500, "only {regex_hits} paths hit a regex glob");
    }
}
