//! Glob matching for the built-in classification table, with nothing to compile.
//!
//! The table holds ~770 globs. Built into a `globset::GlobSet` they cost ~15 ms of regex
//! compilation, paid by every `airlock gate` and `airlock classify` for a handful of paths.
//! [`GlobTable`] reads the same syntax and matches a path component by component, with an
//! index on the path's last component (file name, extension) and on directory names, so each
//! path is tried against a few candidate globs only. Neither building nor matching allocates
//! per glob: components borrow the table's `'static` text, the brace alternatives of one glob
//! are written into one string kept for the process's life, the index links the patterns of
//! one key through the patterns themselves (no list per key) and hashes its short keys with
//! FxHash, file names and extension lists at any depth (`**/name`, `**/*.{a,b}`: most of the
//! table) are decided by the index alone, with no components, and wildcards are read from the
//! text as they are matched. The table is built by every gate, so this is measured:
//! `airlock classify` went 7.3 M -> 5.5 M instructions (callgrind, process start included)
//! when components stopped copying text, then 5.35 M -> 3.03 M (the build alone 3.94 M ->
//! 1.62 M) with the rest. Unit tests check it against globset (the reference the table's
//! documentation names) on every table glob and thousands of paths.
//!
//! Syntax, as globset with `literal_separator`, `empty_alternates` and `backslash_escape`:
//! `*` any run of characters inside one component, `?` one character inside a component
//! (globset: one byte; the two differ on non-ASCII text only, and no table glob has a `?`),
//! `**` as a whole component: any number of components (at least one when it ends the glob),
//! `{a,b,}` alternation (not nested; alternatives may hold `/`), `\c` the character `c`.
//! Character classes (`[...]`) and `**` inside a component are refused: the table does not
//! use them, and refusing is safer than reading them differently from globset.
//!
//! Guards against: a table glob read differently from its documentation (the differential
//! test), and slow matching: a component match is linear with bounded backtracking, and the
//! component walk is polynomial in the (few) `**` of one glob.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

/// One component of a glob, borrowed from the glob text where it can be (the built-in table's
/// globs are `'static`: building the table then copies no text).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Component<'a> {
    /// `**`: any number of components.
    Recursive,
    /// No wildcard (escapes resolved).
    Literal(Cow<'a, str>),
    /// `*`, `?` and literal characters, as written (escapes included); tokenised when matched.
    Wild(Cow<'a, str>),
}

impl Component<'_> {
    /// The same component, owning its text.
    fn owned<'b>(self) -> Component<'b> {
        match self {
            Component::Recursive => Component::Recursive,
            Component::Literal(l) => Component::Literal(Cow::Owned(l.into_owned())),
            Component::Wild(w) => Component::Wild(Cow::Owned(w.into_owned())),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Star,
    AnyChar,
    Char(char),
}

/// One brace-free alternative of a glob: its components (a range of
/// [`GlobTable::components`]) and the value it stands for.
#[derive(Debug)]
struct Pattern {
    /// Empty for a pattern its index key decides ([`GlobTable::add_decided_by_key`]).
    components: Range<usize>,
    /// Matched by every path found under its key: no components to compare.
    decided_by_key: bool,
    value: usize,
    /// The pattern added before this one under the same index key (always a smaller id).
    next: Option<usize>,
}

/// The last pattern added under each index key (a file name, an extension, a directory name);
/// each pattern links to the one added under the same key before it ([`Pattern::next`]), so
/// the index allocates nothing per key.
type Index<'a> = HashMap<Cow<'a, str>, usize, BuildHasherDefault<KeyHasher>>;

/// FxHash (rustc's hasher: rotate, xor, multiply per byte) for the index keys: short strings
/// from the built-in table, where SipHash's setup and finalisation cost more than the rest of
/// an insert. Not resistant to chosen collisions, and it need not be: only the table's own
/// globs are inserted; a path only looks keys up, which costs at most the table's own
/// collisions.
#[derive(Debug, Default, Clone, Copy)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A set of globs, each tagged with a value (the position of its rule in the table).
#[derive(Debug, Default)]
pub(crate) struct GlobTable<'a> {
    /// Every pattern's components, one after the other.
    components: Vec<Component<'a>>,
    patterns: Vec<Pattern>,
    /// Last component is a literal file name.
    by_name: Index<'a>,
    /// Last component is `*<suffix>`; keyed by the suffix after its last `.` (`yml`), or for
    /// `**/*.{a,b}`, by each whole extension.
    by_extension: Index<'a>,
    /// Otherwise, some component is a literal directory name: keyed by the last such name.
    by_directory: Index<'a>,
    /// Nothing to index on: tried for every path.
    always: Vec<usize>,
}

impl<'a> GlobTable<'a> {
    /// An empty table.
    #[cfg(test)]
    pub(crate) fn new() -> GlobTable<'a> {
        GlobTable::default()
    }

    /// An empty table with room for about `globs` globs, so that building it does not copy
    /// its arrays again and again as they grow. (The built-in table's ~770 globs made ~1,270
    /// patterns, ~650 of them file names, ~260 extensions.)
    pub(crate) fn with_capacity(globs: usize) -> GlobTable<'a> {
        let index = |n: usize| Index::with_capacity_and_hasher(n, BuildHasherDefault::default());
        GlobTable {
            components: Vec::with_capacity(globs),
            patterns: Vec::with_capacity(globs.saturating_mul(2)),
            by_name: index(globs),
            by_extension: index(globs / 2),
            by_directory: index(globs / 4),
            always: Vec::new(),
        }
    }

    /// Adds `glob` (already anchored: no implicit `**/`) standing for `value`; its brace
    /// alternatives own their text.
    #[cfg(test)]
    pub(crate) fn add(&mut self, glob: &'a str, value: usize) -> Result<(), String> {
        self.add_parts(false, glob, value, Alternatives::Owned)
    }

    /// Adds every brace alternative of `glob`, after a `**` component when `any_depth`.
    fn add_parts(
        &mut self,
        any_depth: bool,
        glob: &'a str,
        value: usize,
        kept: Alternatives,
    ) -> Result<(), String> {
        if any_depth && self.add_decided_by_key(glob, value) {
            return Ok(());
        }
        if !glob.contains(['{', '}', '\\']) {
            return self.add_alternative(any_depth, glob, Cow::Borrowed(glob), value);
        }
        let groups = brace_groups(glob).map_err(|e| format!("glob `{glob}`: {e}"))?;
        let (text, ends) = expand_braces(&groups).map_err(|e| format!("glob `{glob}`: {e}"))?;
        let mut start = 0;
        match kept {
            #[cfg(test)]
            Alternatives::Owned => {
                for end in ends {
                    let alternative = text.get(start..end).unwrap_or_default().to_owned();
                    self.add_alternative(any_depth, glob, Cow::Owned(alternative), value)?;
                    start = end;
                }
            }
            Alternatives::Leaked => {
                let text: &'static str = Box::leak(text.into_boxed_str());
                for end in ends {
                    let alternative = text.get(start..end).unwrap_or_default();
                    self.add_alternative(any_depth, glob, Cow::Borrowed(alternative), value)?;
                    start = end;
                }
            }
        }
        Ok(())
    }

    /// `**/name`, `**/*.ext` and `**/*.{ext,ext,...}` (the file names and extension lists
    /// that make most of the table) without components, decided by the index alone: a path's
    /// last component is looked up as a name, and under every suffix that follows one of its
    /// dots; it is found under `name` exactly when it is `name`, and under `ext` exactly when
    /// it ends with `.ext`, which is when the glob matches it (`**/` takes any directories, `*`
    /// any start of the name). `false`, and nothing added, for any other glob. Each name and
    /// extension must be non-empty and free of wildcards, escapes, braces, commas and `/`.
    fn add_decided_by_key(&mut self, glob: &'a str, value: usize) -> bool {
        let plain =
            |e: &str| !e.is_empty() && !e.contains(['*', '?', '[', ']', '{', '}', '\\', '/', ',']);
        if plain(glob) {
            self.add_keyed(false, glob, value);
            return true;
        }
        let Some(extensions) = glob.strip_prefix("*.") else {
            return false;
        };
        let list = match extensions.strip_prefix('{') {
            Some(rest) => match rest.strip_suffix('}') {
                Some(list) => list,
                None => return false,
            },
            None => extensions,
        };
        if !list.split(',').all(plain) {
            return false;
        }
        for extension in list.split(',') {
            self.add_keyed(true, extension, value);
        }
        true
    }

    /// Adds a pattern decided by its key alone: a file name, or (`extension`) an extension.
    fn add_keyed(&mut self, extension: bool, key: &'a str, value: usize) {
        let id = self.patterns.len();
        let index = if extension {
            &mut self.by_extension
        } else {
            &mut self.by_name
        };
        let next = index.insert(Cow::Borrowed(key), id);
        self.patterns.push(Pattern {
            components: 0..0,
            decided_by_key: true,
            value,
            next,
        });
    }

    /// Adds one brace-free alternative of `glob`.
    fn add_alternative(
        &mut self,
        any_depth: bool,
        glob: &str,
        alternative: Cow<'a, str>,
        value: usize,
    ) -> Result<(), String> {
        let first = self.components.len();
        if any_depth {
            self.components.push(Component::Recursive);
        }
        let parsed = match &alternative {
            Cow::Borrowed(text) => text
                .split('/')
                .try_for_each(|c| parse_component(c).map(|c| self.components.push(c))),
            // An expanded alternative: its components own their text.
            Cow::Owned(text) => text
                .split('/')
                .try_for_each(|c| parse_component(c).map(|c| self.components.push(c.owned()))),
        };
        if let Err(e) = parsed {
            self.components.truncate(first);
            return Err(format!("glob `{glob}`: {e}"));
        }
        let range = first..self.components.len();
        let id = self.patterns.len();
        let next = match index_key(&self.components[range.clone()]) {
            Key::Name(n) => self.by_name.insert(n, id),
            Key::Extension(e) => self.by_extension.insert(e, id),
            Key::Directory(d) => self.by_directory.insert(d, id),
            Key::None => {
                self.always.push(id);
                None
            }
        };
        self.patterns.push(Pattern {
            components: range,
            decided_by_key: false,
            value,
            next,
        });
        Ok(())
    }

    /// The values of every glob matching `path` (components separated by `/`), ascending and
    /// without duplicates.
    pub(crate) fn matches(&self, path: &str) -> Vec<usize> {
        let parts: Vec<&str> = path.split('/').collect();
        let name = parts.last().copied().unwrap_or_default();
        let mut candidates: Vec<usize> = self.always.clone();
        // Every pattern under one key: the last one added, then each one's `next`.
        let mut under = |head: Option<&usize>| {
            let mut at = head.copied();
            while let Some(id) = at {
                candidates.push(id);
                at = self.patterns.get(id).and_then(|p| p.next);
            }
        };
        under(self.by_name.get(name));
        for (i, _) in name.match_indices('.') {
            under(name.get(i + 1..).and_then(|e| self.by_extension.get(e)));
        }
        for part in &parts {
            under(self.by_directory.get(*part));
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut values: Vec<usize> = candidates
            .into_iter()
            .filter_map(|id| self.patterns.get(id))
            .filter(|p| {
                p.decided_by_key
                    || self
                        .components
                        .get(p.components.clone())
                        .is_some_and(|c| match_components(c, &parts))
            })
            .map(|p| p.value)
            .collect();
        values.sort_unstable();
        values.dedup();
        values
    }
}

impl GlobTable<'static> {
    /// Adds a rule-table glob as the table reads it (`classify::anchor`, without building the
    /// anchored text): no `/` means "this name at any depth" (`**/` in front); a trailing
    /// `/**` also matches the directory's own path (`dir{,/**}`).
    ///
    /// The brace alternatives of one glob are written one after the other into one string
    /// that is never freed, and every alternative's components borrow from it: the built-in
    /// table is built once per process (in a static) and lives as long as the process, so
    /// nothing is lost, and the build allocates once per brace glob instead of two or three
    /// times per alternative.
    pub(crate) fn add_anchored(&mut self, glob: &'static str, value: usize) -> Result<(), String> {
        let kept = Alternatives::Leaked;
        match glob.strip_suffix("/**") {
            Some(dir) if !dir.is_empty() => {
                self.add_parts(false, dir, value, kept)?;
                self.add_parts(false, glob, value, kept)
            }
            _ => self.add_parts(!glob.contains('/'), glob, value, kept),
        }
    }
}

/// Where the text of a glob's brace alternatives is kept.
#[derive(Debug, Clone, Copy)]
enum Alternatives {
    /// Each alternative's components own their text (tables of non-`'static` globs).
    #[cfg(test)]
    Owned,
    /// One leaked string per glob ([`GlobTable::add_anchored`], `'static` tables only).
    Leaked,
}

enum Key<'a> {
    Name(Cow<'a, str>),
    Extension(Cow<'a, str>),
    Directory(Cow<'a, str>),
    None,
}

/// What a path must contain for the pattern to possibly match (see the index fields).
fn index_key<'a>(components: &[Component<'a>]) -> Key<'a> {
    match components.last() {
        Some(Component::Literal(name)) => return Key::Name(name.clone()),
        Some(Component::Wild(text)) => {
            // `*<literal suffix>` with a `.` in the suffix: index on the extension.
            if let Some(rest) = text.strip_prefix('*') {
                if !rest.contains(['*', '?', '\\']) {
                    if let Some(i) = rest.rfind('.') {
                        return Key::Extension(match text {
                            Cow::Borrowed(t) => Cow::Borrowed(&t[2 + i..]),
                            Cow::Owned(_) => Cow::Owned(rest[i + 1..].to_owned()),
                        });
                    }
                }
            }
        }
        _ => {}
    }
    let directory = components.iter().rev().find_map(|c| match c {
        Component::Literal(d) => Some(d.clone()),
        _ => None,
    });
    directory.map_or(Key::None, Key::Directory)
}

/// The glob as a sequence of groups, each the list of its alternatives' text as written
/// (escapes kept for [`parse_component`]): a run outside braces is a group of one. Checks the
/// brace syntax: no nesting, no unmatched brace, no dangling `\`.
fn brace_groups(glob: &str) -> Result<Vec<Vec<&str>>, String> {
    let mut groups: Vec<Vec<&str>> = Vec::new();
    // Where the current run outside braces starts.
    let mut run = 0;
    let mut chars = glob.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next().ok_or("dangling `\\`")?;
            }
            '{' => {
                groups.push(vec![glob.get(run..i).unwrap_or_default()]);
                let mut alternatives = Vec::new();
                let mut start = i + 1;
                loop {
                    match chars.next() {
                        None => return Err("unclosed `{`".into()),
                        Some((_, '{')) => return Err("nested `{`".into()),
                        Some((j, c @ (',' | '}'))) => {
                            alternatives.push(glob.get(start..j).unwrap_or_default());
                            start = j + 1;
                            if c == '}' {
                                break;
                            }
                        }
                        Some((_, '\\')) => {
                            chars.next().ok_or("dangling `\\`")?;
                        }
                        Some(_) => {}
                    }
                }
                groups.push(alternatives);
                run = start;
            }
            '}' => return Err("unmatched `}`".into()),
            _ => {}
        }
    }
    groups.push(vec![glob.get(run..).unwrap_or_default()]);
    Ok(groups)
}

/// Most combinations one glob's braces may expand to (the built-in table's globs expand to a
/// few dozen at most).
const MAX_ALTERNATIVES: usize = 4096;

/// Every combination of one alternative per group, in order (the first group varying
/// slowest), written one after the other into one string: the string and the end of each
/// combination in it.
fn expand_braces(groups: &[Vec<&str>]) -> Result<(String, Vec<usize>), String> {
    let count = groups
        .iter()
        .try_fold(1usize, |n, g| n.checked_mul(g.len()))
        .filter(|&n| n <= MAX_ALTERNATIVES)
        .ok_or_else(|| format!("more than {MAX_ALTERNATIVES} brace alternatives"))?;
    // No combination is longer than the groups' longest alternatives put together.
    let longest: usize = groups
        .iter()
        .map(|g| g.iter().map(|a| a.len()).max().unwrap_or(0))
        .sum();
    let mut text = String::with_capacity(count.saturating_mul(longest));
    let mut ends = Vec::with_capacity(count);
    // An odometer over the groups: `pick[g]` is the alternative taken from group `g`.
    let mut pick = vec![0usize; groups.len()];
    for _ in 0..count {
        for (group, &p) in groups.iter().zip(&pick) {
            text.push_str(group.get(p).copied().unwrap_or_default());
        }
        ends.push(text.len());
        for (group, p) in groups.iter().zip(pick.iter_mut()).rev() {
            *p += 1;
            if *p < group.len() {
                break;
            }
            *p = 0;
        }
    }
    Ok((text, ends))
}

/// Reads one component: checks its syntax, resolves the escapes of a wildcard-free one.
fn parse_component(text: &str) -> Result<Component<'_>, String> {
    if text == "**" {
        return Ok(Component::Recursive);
    }
    if !text.contains(['\\', '*', '?', '[', ']']) {
        return Ok(Component::Literal(Cow::Borrowed(text)));
    }
    let mut wild = false;
    let mut rest = text;
    while let Some((token, after)) = next_token(rest)? {
        if token == Token::Star && after.starts_with('*') {
            return Err("`**` must be a whole path component".into());
        }
        wild |= matches!(token, Token::Star | Token::AnyChar);
        rest = after;
    }
    if wild {
        return Ok(Component::Wild(Cow::Borrowed(text)));
    }
    // Escaped characters only: the literal they stand for.
    let mut literal = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((token, after)) = next_token(rest)? {
        if let Token::Char(c) = token {
            literal.push(c);
        }
        rest = after;
    }
    Ok(Component::Literal(Cow::Owned(literal)))
}

/// [`next_token`] of text already checked.
fn token(text: &str) -> Option<(Token, &str)> {
    next_token(text).ok().flatten()
}

/// The first token of a component's text and the text after it; `None` at the end.
fn next_token(text: &str) -> Result<Option<(Token, &str)>, String> {
    let mut chars = text.chars();
    let Some(c) = chars.next() else {
        return Ok(None);
    };
    let token = match c {
        '\\' => Token::Char(chars.next().ok_or("dangling `\\`")?),
        '*' => Token::Star,
        '?' => Token::AnyChar,
        '[' | ']' => return Err("character classes are not supported here".into()),
        other => Token::Char(other),
    };
    Ok(Some((token, chars.as_str())))
}

/// Whether the glob's components match the path's. `**` takes any number of components,
/// at least one when it is the glob's last.
fn match_components(pattern: &[Component], path: &[&str]) -> bool {
    let Some((first, rest)) = pattern.split_first() else {
        return path.is_empty();
    };
    match first {
        Component::Recursive if rest.is_empty() => !path.is_empty(),
        Component::Recursive => (0..=path.len()).any(|skip| {
            path.get(skip..)
                .is_some_and(|tail| match_components(rest, tail))
        }),
        other => match path.split_first() {
            Some((part, tail)) => match_one(other, part) && match_components(rest, tail),
            None => false,
        },
    }
}

fn match_one(component: &Component, text: &str) -> bool {
    match component {
        Component::Recursive => true,
        Component::Literal(l) => l == text,
        Component::Wild(pattern) => wildcard(pattern, text),
    }
}

/// `*`/`?` matching of a component's text (checked when its glob was added) against one path
/// component, with the classic single backtrack point (linear in practice, at most
/// tokens × characters); tokens are read from the text as they are needed.
fn wildcard(pattern: &str, text: &str) -> bool {
    let (mut p, mut s) = (pattern, text);
    // After the last `*`: the pattern following it and the text it has not taken yet.
    let mut star: Option<(&str, &str)> = None;
    while let Some(c) = s.chars().next() {
        let after_c = &s[c.len_utf8()..];
        match token(p) {
            Some((Token::Star, after)) => {
                star = Some((after, s));
                p = after;
                continue;
            }
            Some((Token::AnyChar, after)) => {
                p = after;
                s = after_c;
                continue;
            }
            Some((Token::Char(t), after)) if t == c => {
                p = after;
                s = after_c;
                continue;
            }
            _ => {}
        }
        match star {
            Some((after_star, taken)) => {
                // The `*` takes one more character.
                let Some(first) = taken.chars().next() else {
                    return false;
                };
                let taken = &taken[first.len_utf8()..];
                star = Some((after_star, taken));
                p = after_star;
                s = taken;
            }
            None => return false,
        }
    }
    let mut rest = p;
    while let Some((t, after)) = token(rest) {
        if t != Token::Star {
            return false;
        }
        rest = after;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Positions of the globs (each read after `prefix`) that globset, the reference, matches
    /// `path` with, in the syntax the table reads.
    fn globset_matches(globs: &[&str], prefix: &str, path: &str) -> Vec<usize> {
        globs
            .iter()
            .enumerate()
            .filter(|(_, g)| {
                globset::GlobBuilder::new(&format!("{prefix}{g}"))
                    .literal_separator(true)
                    .backslash_escape(true)
                    .empty_alternates(true)
                    .build()
                    .unwrap()
                    .compile_matcher()
                    .is_match(path)
            })
            .map(|(i, _)| i)
            .collect()
    }

    fn table<'a>(globs: &[&'a str]) -> GlobTable<'a> {
        let mut t = GlobTable::new();
        for (i, g) in globs.iter().enumerate() {
            t.add(g, i).unwrap();
        }
        t
    }

    #[test]
    fn components_wildcards_and_recursion() {
        let t = table(&[
            "**/Makefile",
            "ci/**",
            "a/**/b",
            "**/*.{yml,yaml}",
            "x?z",
            "*Test.java",
        ]);
        assert_eq!(t.matches("Makefile"), vec![0]);
        assert_eq!(t.matches("src/deep/Makefile"), vec![0]);
        assert_eq!(
            t.matches("ci"),
            Vec::<usize>::new(),
            "`/**` needs one component"
        );
        assert_eq!(t.matches("ci/run.sh"), vec![1]);
        assert_eq!(t.matches("ci/x/y.yml"), vec![1, 3]);
        assert_eq!(t.matches("a/b"), vec![2]);
        assert_eq!(t.matches("a/x/y/b"), vec![2]);
        assert_eq!(t.matches("xyz"), vec![4]);
        assert_eq!(t.matches("x/z"), Vec::<usize>::new(), "`?` is not `/`");
        assert_eq!(t.matches("FooTest.java"), vec![5]);
        assert_eq!(
            t.matches("src/FooTest.java"),
            Vec::<usize>::new(),
            "anchored"
        );
    }

    #[test]
    fn wildcards_escapes_and_backtracking_read_like_globset() {
        let globs = [
            "*a*b",
            "a*b*c",
            "*.tar.gz",
            "\\*x",
            "x\\?",
            "a\\{b\\}",
            "?",
            "??*",
            "*é*",
            "*",
            "**/*_test.*",
            "d/**/x*y",
            "{a,b}{c,}x",
            "x{\\,,y}z",
            "{p/q,r}/*.{c,h}",
        ];
        let paths = [
            "ab",
            "aab",
            "abab",
            "xaxbx",
            "aXbYc",
            "abc",
            "ac",
            "x.tar.gz",
            "tar.gz",
            "*x",
            "ax",
            "x?",
            "xy",
            "a{b}",
            "a",
            "",
            "éé",
            "aéb",
            "ébé",
            "d/x/y/xay",
            "d/xy",
            "d/x",
            "f_test.go",
            "p/q/r_test.rs",
            "r_test",
            "acx",
            "ax",
            "bx",
            "bcx",
            "cx",
            "x,z",
            "xz",
            "xyz",
            "x\\,z",
            "p/q/m.c",
            "r/m.h",
            "p/m.c",
            "r/m.o",
        ];
        let t = table(&globs);
        for path in paths {
            assert_eq!(
                t.matches(path),
                globset_matches(&globs, "", path),
                "{path:?}"
            );
        }
    }

    #[test]
    fn names_and_extension_lists_decided_by_the_index_read_like_globset() {
        // Through `add_anchored`: no `/`, so `**/` in front; the index alone decides the
        // first four; the rest take the component path under the same keys.
        let globs: [&'static str; 9] = [
            "makefile",
            "*.{rs,go}",
            "*.{tar.gz,c}",
            "*.h",
            "*.{x,}",
            "make*",
            "*.{a*,b}",
            "*_test.{c,h}",
            "src/*.rs",
        ];
        let mut t = GlobTable::new();
        for (i, g) in globs.iter().enumerate() {
            t.add_anchored(g, i).unwrap();
        }
        let paths = [
            ".rs",
            "x.rs",
            "a/b.c.rs",
            "rs",
            "x.rs/y",
            "x.RS",
            "x.tar.gz",
            "tar.gz",
            ".gz",
            "x.gz",
            "d/x.c",
            "x.h",
            "x.",
            "x.x",
            "x.ab",
            "x.b",
            "f_test.c",
            "a/f_test.h",
            "src/m.rs",
            "src/d/m.rs",
            "m.go",
            "makefile",
            "a/makefile",
            "xmakefile",
            "makefile/x",
            "makefiles",
        ];
        for path in paths {
            assert_eq!(
                t.matches(path),
                globset_matches(&globs, "**/", path),
                "{path:?}"
            );
        }
        // makefile, rs, go, tar.gz, c, h: the first four globs, and only those.
        assert_eq!(t.patterns.iter().filter(|p| p.decided_by_key).count(), 6);
        assert_eq!(t.matches("a/b.c.rs"), vec![1]);
        assert_eq!(t.matches("x.tar.gz"), vec![2]);
        assert_eq!(t.matches("a/makefile"), vec![0, 5]);
    }

    #[test]
    fn refuses_what_it_does_not_read_like_globset() {
        let combinatorial = "{a,b,c,d}".repeat(7);
        for bad in [
            "a/[ab]",
            "a**",
            "{a,{b}}",
            "a{b",
            "a}b",
            "a\\",
            &combinatorial,
        ] {
            assert!(GlobTable::new().add(bad, 0).is_err(), "{bad}");
        }
    }
}
