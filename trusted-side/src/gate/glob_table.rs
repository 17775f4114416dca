//! Glob matching for the built-in classification table, with nothing to compile.
//!
//! The table holds ~770 globs. Built into a `globset::GlobSet` they cost ~15 ms of regex
//! compilation, paid by every `airlock gate` and `airlock classify` for a handful of paths.
//! [`GlobTable`] reads the same syntax and matches a path component by component, with an
//! index on the path's last component (file name, extension) and on directory names, so each
//! path is tried against a few candidate globs only. Building it copies no glob text (the
//! components borrow the table's `'static` strings; only brace alternatives are built), which
//! took a sixth of `airlock classify`'s instructions (7.3 M -> 6.3 M in callgrind, process
//! start included). A unit test checks it against globset
//! (the reference the table's documentation names) on every table glob and thousands of paths.
//!
//! Syntax, as globset with `literal_separator`, `empty_alternates` and `backslash_escape`:
//! `*` any run of characters inside one component, `?` one character inside a component,
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
    components: Range<usize>,
    value: usize,
}

/// A set of globs, each tagged with a value (the position of its rule in the table).
#[derive(Debug, Default)]
pub(crate) struct GlobTable<'a> {
    /// Every pattern's components, one after the other.
    components: Vec<Component<'a>>,
    patterns: Vec<Pattern>,
    /// Last component is a literal file name.
    by_name: HashMap<Cow<'a, str>, Vec<usize>>,
    /// Last component is `*<suffix>`; keyed by the suffix from its last `.` (`.yml`).
    by_extension: HashMap<Cow<'a, str>, Vec<usize>>,
    /// Otherwise, some component is a literal directory name: keyed by the last such name.
    by_directory: HashMap<Cow<'a, str>, Vec<usize>>,
    /// Nothing to index on: tried for every path.
    always: Vec<usize>,
}

impl<'a> GlobTable<'a> {
    /// An empty table.
    pub(crate) fn new() -> GlobTable<'a> {
        GlobTable::default()
    }

    /// Adds `glob` (already anchored: no implicit `**/`) standing for `value`.
    #[cfg(test)]
    pub(crate) fn add(&mut self, glob: &'a str, value: usize) -> Result<(), String> {
        self.add_parts(false, glob, value)
    }

    /// Adds a rule-table glob as the table reads it (`classify::anchor`, without building the
    /// anchored text): no `/` means "this name at any depth" (`**/` in front); a trailing
    /// `/**` also matches the directory's own path (`dir{,/**}`).
    pub(crate) fn add_anchored(&mut self, glob: &'a str, value: usize) -> Result<(), String> {
        match glob.strip_suffix("/**") {
            Some(dir) if !dir.is_empty() => {
                self.add_parts(false, dir, value)?;
                self.add_parts(false, glob, value)
            }
            _ => self.add_parts(!glob.contains('/'), glob, value),
        }
    }

    /// Adds every brace alternative of `glob`, after a `**` component when `any_depth`.
    fn add_parts(&mut self, any_depth: bool, glob: &'a str, value: usize) -> Result<(), String> {
        for alternative in expand_braces(glob)? {
            let first = self.components.len();
            if any_depth {
                self.components.push(Component::Recursive);
            }
            let parsed: Result<(), String> = match &alternative {
                Cow::Borrowed(text) => text.split('/').try_for_each(|c| {
                    self.components.push(parse_component(c)?);
                    Ok(())
                }),
                Cow::Owned(text) => text.split('/').try_for_each(|c| {
                    let owned = match parse_component(c)? {
                        Component::Recursive => Component::Recursive,
                        Component::Literal(l) => Component::Literal(Cow::Owned(l.into_owned())),
                        Component::Wild(w) => Component::Wild(Cow::Owned(w.into_owned())),
                    };
                    self.components.push(owned);
                    Ok(())
                }),
            };
            if let Err(e) = parsed {
                self.components.truncate(first);
                return Err(format!("glob `{glob}`: {e}"));
            }
            let range = first..self.components.len();
            let id = self.patterns.len();
            match index_key(&self.components[range.clone()]) {
                Key::Name(n) => self.by_name.entry(n).or_default().push(id),
                Key::Extension(e) => self.by_extension.entry(e).or_default().push(id),
                Key::Directory(d) => self.by_directory.entry(d).or_default().push(id),
                Key::None => self.always.push(id),
            }
            self.patterns.push(Pattern {
                components: range,
                value,
            });
        }
        Ok(())
    }

    /// The values of every glob matching `path` (components separated by `/`), ascending and
    /// without duplicates.
    pub(crate) fn matches(&self, path: &str) -> Vec<usize> {
        let parts: Vec<&str> = path.split('/').collect();
        let name = parts.last().copied().unwrap_or_default();
        let mut candidates: Vec<usize> = self.always.clone();
        if let Some(ids) = self.by_name.get(name) {
            candidates.extend(ids);
        }
        for (i, _) in name.match_indices('.') {
            if let Some(ids) = name.get(i..).and_then(|e| self.by_extension.get(e)) {
                candidates.extend(ids);
            }
        }
        for part in &parts {
            if let Some(ids) = self.by_directory.get(*part) {
                candidates.extend(ids);
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut values: Vec<usize> = candidates
            .into_iter()
            .filter_map(|id| self.patterns.get(id))
            .filter(|p| {
                self.components
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
                            Cow::Borrowed(t) => Cow::Borrowed(&t[1 + i..]),
                            Cow::Owned(_) => Cow::Owned(rest[i..].to_owned()),
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

/// Expands `{a,b}` groups into every combination. Escapes are kept for [`parse_component`].
/// A glob with nothing to expand is returned as it is.
fn expand_braces(glob: &str) -> Result<Vec<Cow<'_, str>>, String> {
    if !glob.contains(['{', '}', '\\']) {
        return Ok(vec![Cow::Borrowed(glob)]);
    }
    let mut out = vec![String::new()];
    let mut chars = glob.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    return Err(format!("glob `{glob}`: dangling `\\`"));
                };
                for o in &mut out {
                    o.push('\\');
                    o.push(next);
                }
            }
            '{' => {
                let mut alternatives = vec![String::new()];
                loop {
                    match chars.next() {
                        None => return Err(format!("glob `{glob}`: unclosed `{{`")),
                        Some('}') => break,
                        Some('{') => return Err(format!("glob `{glob}`: nested `{{`")),
                        Some(',') => alternatives.push(String::new()),
                        Some('\\') => {
                            let Some(next) = chars.next() else {
                                return Err(format!("glob `{glob}`: dangling `\\`"));
                            };
                            if let Some(a) = alternatives.last_mut() {
                                a.push('\\');
                                a.push(next);
                            }
                        }
                        Some(other) => {
                            if let Some(a) = alternatives.last_mut() {
                                a.push(other);
                            }
                        }
                    }
                }
                out = out
                    .iter()
                    .flat_map(|o| alternatives.iter().map(move |a| format!("{o}{a}")))
                    .collect();
            }
            '}' => return Err(format!("glob `{glob}`: unmatched `}}`")),
            other => {
                for o in &mut out {
                    o.push(other);
                }
            }
        }
    }
    Ok(out.into_iter().map(Cow::Owned).collect())
}

/// Reads one component: checks its syntax, resolves the escapes of a wildcard-free one.
fn parse_component(text: &str) -> Result<Component<'_>, String> {
    if text == "**" {
        return Ok(Component::Recursive);
    }
    if !text.contains(['\\', '*', '?', '[', ']']) {
        return Ok(Component::Literal(Cow::Borrowed(text)));
    }
    let tokens = tokenize(text)?;
    let literal: Option<String> = tokens
        .iter()
        .map(|t| match t {
            Token::Char(c) => Some(*c),
            _ => None,
        })
        .collect();
    Ok(match literal {
        Some(l) => Component::Literal(Cow::Owned(l)),
        None => Component::Wild(Cow::Borrowed(text)),
    })
}

/// The tokens of a component's text.
fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        tokens.push(match c {
            '\\' => Token::Char(chars.next().ok_or("dangling `\\`")?),
            '*' if chars.peek() == Some(&'*') => {
                return Err("`**` must be a whole path component".into())
            }
            '*' => Token::Star,
            '?' => Token::AnyChar,
            '[' | ']' => return Err("character classes are not supported here".into()),
            other => Token::Char(other),
        });
    }
    Ok(tokens)
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
        Component::Wild(pattern) => {
            // Checked when the glob was added: it tokenises.
            let Ok(tokens) = tokenize(pattern) else {
                return false;
            };
            let chars: Vec<char> = text.chars().collect();
            wildcard(&tokens, &chars)
        }
    }
}

/// `*`/`?` matching with the classic single backtrack point (linear in practice, at most
/// tokens × characters).
fn wildcard(tokens: &[Token], text: &[char]) -> bool {
    let (mut t, mut s) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while s < text.len() {
        match tokens.get(t) {
            Some(Token::Star) => {
                star = Some((t, s));
                t += 1;
                continue;
            }
            Some(Token::AnyChar) => {
                t += 1;
                s += 1;
                continue;
            }
            Some(Token::Char(c)) if text.get(s) == Some(c) => {
                t += 1;
                s += 1;
                continue;
            }
            _ => {}
        }
        match star {
            Some((st, ss)) => {
                t = st + 1;
                s = ss + 1;
                star = Some((st, ss + 1));
            }
            None => return false,
        }
    }
    tokens
        .get(t..)
        .is_some_and(|r| r.iter().all(|x| *x == Token::Star))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn refuses_what_it_does_not_read_like_globset() {
        for bad in ["a/[ab]", "a**", "{a,{b}}", "a{b", "a}b", "a\\"] {
            assert!(GlobTable::new().add(bad, 0).is_err(), "{bad}");
        }
    }
}
