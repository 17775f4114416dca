//! Glob matching for the built-in classification table, with nothing to build at run time.
//!
//! The table holds ~770 globs. Built into a `globset::GlobSet` they cost ~15 ms of regex
//! compilation, paid by every `airlock gate` and `airlock classify` for a handful of paths.
//! [`GlobTable`] reads the same syntax and matches a path component by component, with an
//! index on the path's last component (file name, extension) and on directory names, so each
//! path is tried against a few candidate globs only.
//!
//! A table is plain data: one string holding every component's and key's text, and arrays of
//! numbers (components, patterns, index entries sorted by key) that point into it. A
//! [`GlobTableBuilder`] reads globs into one; for the built-in table that happens when the
//! table is written, not when it is used: a unit test builds it from `classify_table.rs` and
//! checks that `classify_globs.rs`, its generated copy as `static` data, is exactly what it
//! built (and says how to refresh it otherwise). Having no pointers, that data needs no
//! relocation at start, and a gate reads it in place. Measured: building the two tables at run
//! time cost every gate 1.7 M instructions (callgrind), about 0.4 ms on the gate's serial path,
//! after an earlier round had already brought it down from 3.9 M.
//!
//! (A change to this layout can leave the old file not compiling, so that the test cannot
//! run: give `from_static` empty arrays for what is new, run the test, copy its output.)
//!
//! File names and extension lists at any depth (`**/name`, `**/*.{a,b}`: most of the table)
//! are decided by the index alone, with no components. A name with wildcards is indexed by
//! the extension its literal tail ends with (`azure-pipelines-*.yml`), else by the stem its
//! literal head starts with (`readme.*`): 7 of the ~1,270 patterns are left to try on every
//! path, not 60 (`airlock classify` of 10 paths: 1.78 M -> 1.37 M instructions, process
//! start included). Wildcards are read from the text as they are matched. Unit tests check
//! the table against globset (the reference the table's documentation names) on every table
//! glob and thousands of paths.
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
//! test), a generated table that is not the rule table's (the freshness test), and slow
//! matching: a component match is linear with bounded backtracking, and the component walk
//! is polynomial in the (few) `**` of one glob. A malformed table (an offset past its text)
//! cannot panic a gate: every read of the text is checked, and such a component reads as
//! empty text (which no component of a normalised path is).

use std::borrow::Cow;
use std::ops::Range;

/// What one component of a pattern is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `**`: any number of components (no text).
    Recursive,
    /// No wildcard: the text is the name itself (escapes resolved).
    Literal,
    /// `*`, `?` and literal characters, as written (escapes included); tokenised when matched.
    Wild,
}

/// One component of a pattern: its kind and its text, `text[start..end]` of its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Component {
    kind: Kind,
    start: u32,
    end: u32,
}

impl Component {
    /// A component of kind `kind` whose text is `start..end` of the table's text.
    pub(crate) const fn new(kind: Kind, start: u32, end: u32) -> Component {
        Component { kind, start, end }
    }
}

/// One brace-free alternative of a glob: its components (`components[first..end]` of its
/// table) and the value it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pattern {
    first: u32,
    end: u32,
    /// Matched by every path found under its index key, with no components to compare
    /// (`**/name`, `**/*.ext`); `first == end` then.
    decided_by_key: bool,
    value: u32,
}

impl Pattern {
    /// A pattern made of `components[first..end]`, standing for `value`.
    pub(crate) const fn new(first: u32, end: u32, decided_by_key: bool, value: u32) -> Pattern {
        Pattern {
            first,
            end,
            decided_by_key,
            value,
        }
    }

    fn components(&self) -> Range<usize> {
        self.first as usize..self.end as usize
    }
}

/// One index entry: the key `text[start..end]` leads to `pattern`. A table keeps each index's
/// entries sorted by key text (as bytes), then by pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    start: u32,
    end: u32,
    pattern: u32,
}

impl Entry {
    /// The key `start..end` of the table's text, leading to `pattern`.
    pub(crate) const fn new(start: u32, end: u32, pattern: u32) -> Entry {
        Entry {
            start,
            end,
            pattern,
        }
    }
}

/// A set of globs ready to match, each tagged with a value (the position of its rule in the
/// table). Built by a [`GlobTableBuilder`], or written out as `static` data
/// ([`GlobTable::from_static`], `classify_globs.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GlobTable {
    /// The text of every component and index key.
    text: Cow<'static, str>,
    /// Every pattern's components, one pattern after the other.
    components: Cow<'static, [Component]>,
    patterns: Cow<'static, [Pattern]>,
    /// Last component is a literal file name.
    by_name: Cow<'static, [Entry]>,
    /// Last component ends with a literal `.<suffix>` after its last wildcard
    /// (`*.yml`, `azure-pipelines-*.yml`); keyed by that suffix (`yml`), or for `**/*.{a,b}`, by
    /// each whole extension.
    by_extension: Cow<'static, [Entry]>,
    /// Last component starts with a literal holding a `.` before its first wildcard
    /// (`readme.*`, `values.*.yaml` has an extension): keyed by the text before that `.`, which
    /// is the text before the first `.` of every name it matches.
    by_stem: Cow<'static, [Entry]>,
    /// Otherwise, some component is a literal directory name: keyed by the last such name.
    by_directory: Cow<'static, [Entry]>,
    /// Nothing to index on: tried for every path.
    always: Cow<'static, [u32]>,
}

impl GlobTable {
    /// A table over `static` data, as a [`GlobTableBuilder`] built it (see
    /// [`GlobTable::to_rust`]); the index arrays must be sorted as [`Entry`] says.
    #[allow(
        clippy::too_many_arguments,
        reason = "the table's eight arrays, in order"
    )]
    pub(crate) const fn from_static(
        text: &'static str,
        components: &'static [Component],
        patterns: &'static [Pattern],
        by_name: &'static [Entry],
        by_extension: &'static [Entry],
        by_stem: &'static [Entry],
        by_directory: &'static [Entry],
        always: &'static [u32],
    ) -> GlobTable {
        GlobTable {
            text: Cow::Borrowed(text),
            components: Cow::Borrowed(components),
            patterns: Cow::Borrowed(patterns),
            by_name: Cow::Borrowed(by_name),
            by_extension: Cow::Borrowed(by_extension),
            by_stem: Cow::Borrowed(by_stem),
            by_directory: Cow::Borrowed(by_directory),
            always: Cow::Borrowed(always),
        }
    }

    /// `text[start..end]`; empty if the range is not in the text (a table is never built that
    /// way, and a component with empty text matches nothing but an empty name).
    fn text(&self, start: u32, end: u32) -> &str {
        self.text
            .get(start as usize..end as usize)
            .unwrap_or_default()
    }

    fn key(&self, entry: &Entry) -> &str {
        self.text(entry.start, entry.end)
    }

    /// Appends the patterns found under `key` in `index`.
    fn patterns_under(&self, index: &[Entry], key: &str, out: &mut Vec<u32>) {
        let first = index.partition_point(|e| self.key(e) < key);
        out.extend(
            index
                .get(first..)
                .unwrap_or_default()
                .iter()
                .take_while(|e| self.key(e) == key)
                .map(|e| e.pattern),
        );
    }

    /// The values of every glob matching `path` (components separated by `/`), ascending and
    /// without duplicates.
    pub(crate) fn matches(&self, path: &str) -> Vec<usize> {
        let parts: Vec<&str> = path.split('/').collect();
        let name = parts.last().copied().unwrap_or_default();
        let mut candidates: Vec<u32> = self.always.to_vec();
        self.patterns_under(&self.by_name, name, &mut candidates);
        for (i, _) in name.match_indices('.') {
            if let Some(extension) = name.get(i + 1..) {
                self.patterns_under(&self.by_extension, extension, &mut candidates);
            }
        }
        if let Some((stem, _)) = name.split_once('.') {
            self.patterns_under(&self.by_stem, stem, &mut candidates);
        }
        for part in &parts {
            self.patterns_under(&self.by_directory, part, &mut candidates);
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut values: Vec<usize> = candidates
            .into_iter()
            .filter_map(|id| self.patterns.get(id as usize))
            .filter(|p| {
                p.decided_by_key
                    || self
                        .components
                        .get(p.components())
                        .is_some_and(|c| self.match_components(c, &parts))
            })
            .map(|p| p.value as usize)
            .collect();
        values.sort_unstable();
        values.dedup();
        values
    }

    /// Whether the glob's components match the path's. `**` takes any number of components,
    /// at least one when it is the glob's last.
    fn match_components(&self, pattern: &[Component], path: &[&str]) -> bool {
        let Some((first, rest)) = pattern.split_first() else {
            return path.is_empty();
        };
        match first.kind {
            Kind::Recursive if rest.is_empty() => !path.is_empty(),
            Kind::Recursive => (0..=path.len()).any(|skip| {
                path.get(skip..)
                    .is_some_and(|tail| self.match_components(rest, tail))
            }),
            kind => match path.split_first() {
                Some((part, tail)) => {
                    let text = self.text(first.start, first.end);
                    let one = match kind {
                        Kind::Literal => text == *part,
                        _ => wildcard(text, part),
                    };
                    one && self.match_components(rest, tail)
                }
                None => false,
            },
        }
    }
}

#[cfg(test)]
/// Reads globs into a [`GlobTable`].
#[derive(Debug, Default)]
pub(crate) struct GlobTableBuilder {
    text: String,
    components: Vec<Component>,
    patterns: Vec<Pattern>,
    by_name: Vec<Entry>,
    by_extension: Vec<Entry>,
    by_stem: Vec<Entry>,
    by_directory: Vec<Entry>,
    always: Vec<u32>,
}

#[cfg(test)]
/// A number the table stores as `u32` (text offsets, ids, values): refused past that.
fn small(n: usize) -> Result<u32, String> {
    u32::try_from(n).map_err(|_| "the table outgrew its 32-bit offsets".to_owned())
}

#[cfg(test)]
impl GlobTableBuilder {
    /// An empty builder.
    pub(crate) fn new() -> GlobTableBuilder {
        GlobTableBuilder::default()
    }

    /// Adds `glob` (already anchored: no implicit `**/`) standing for `value`.
    pub(crate) fn add(&mut self, glob: &str, value: usize) -> Result<(), String> {
        self.add_parts(false, glob, value)
    }

    /// Adds a rule-table glob as the table reads it (`classify::anchor`, without building the
    /// anchored text): no `/` means "this name at any depth" (`**/` in front); a trailing
    /// `/**` also matches the directory's own path (`dir{,/**}`).
    pub(crate) fn add_anchored(&mut self, glob: &str, value: usize) -> Result<(), String> {
        match glob.strip_suffix("/**") {
            Some(dir) if !dir.is_empty() => {
                self.add_parts(false, dir, value)?;
                self.add_parts(false, glob, value)
            }
            _ => self.add_parts(!glob.contains('/'), glob, value),
        }
    }

    /// The table: the index entries sorted by key, then by pattern.
    pub(crate) fn build(self) -> GlobTable {
        let text = self.text;
        let sorted = |mut index: Vec<Entry>| {
            let key = |e: &Entry| {
                text.get(e.start as usize..e.end as usize)
                    .unwrap_or_default()
                    .to_owned()
            };
            index.sort_by_cached_key(|e| (key(e), e.pattern));
            Cow::Owned(index)
        };
        GlobTable {
            by_name: sorted(self.by_name),
            by_extension: sorted(self.by_extension),
            by_stem: sorted(self.by_stem),
            by_directory: sorted(self.by_directory),
            components: Cow::Owned(self.components),
            patterns: Cow::Owned(self.patterns),
            always: Cow::Owned(self.always),
            text: Cow::Owned(text),
        }
    }

    /// The range of `text` in the table's text, appended unless it is there already.
    fn push_text(&mut self, text: &str) -> Result<(u32, u32), String> {
        let start = match self.text.find(text) {
            Some(at) => at,
            None => {
                self.text.push_str(text);
                self.text.len() - text.len()
            }
        };
        Ok((small(start)?, small(start + text.len())?))
    }

    /// Adds every brace alternative of `glob`, after a `**` component when `any_depth`.
    fn add_parts(&mut self, any_depth: bool, glob: &str, value: usize) -> Result<(), String> {
        let value = small(value)?;
        if any_depth && self.add_decided_by_key(glob, value)? {
            return Ok(());
        }
        if !glob.contains(['{', '}', '\\']) {
            return self.add_alternative(any_depth, glob, glob, value);
        }
        let groups = brace_groups(glob).map_err(|e| format!("glob `{glob}`: {e}"))?;
        let (text, ends) = expand_braces(&groups).map_err(|e| format!("glob `{glob}`: {e}"))?;
        let mut start = 0;
        for end in ends {
            let alternative = text.get(start..end).unwrap_or_default();
            self.add_alternative(any_depth, glob, alternative, value)?;
            start = end;
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
    fn add_decided_by_key(&mut self, glob: &str, value: u32) -> Result<bool, String> {
        let plain =
            |e: &str| !e.is_empty() && !e.contains(['*', '?', '[', ']', '{', '}', '\\', '/', ',']);
        if plain(glob) {
            self.add_keyed(false, glob, value)?;
            return Ok(true);
        }
        let Some(extensions) = glob.strip_prefix("*.") else {
            return Ok(false);
        };
        let list = match extensions.strip_prefix('{') {
            Some(rest) => match rest.strip_suffix('}') {
                Some(list) => list,
                None => return Ok(false),
            },
            None => extensions,
        };
        if !list.split(',').all(plain) {
            return Ok(false);
        }
        for extension in list.split(',') {
            self.add_keyed(true, extension, value)?;
        }
        Ok(true)
    }

    /// Adds a pattern decided by its key alone: a file name, or (`extension`) an extension.
    fn add_keyed(&mut self, extension: bool, key: &str, value: u32) -> Result<(), String> {
        let pattern = small(self.patterns.len())?;
        let (start, end) = self.push_text(key)?;
        let entry = Entry::new(start, end, pattern);
        if extension {
            self.by_extension.push(entry);
        } else {
            self.by_name.push(entry);
        }
        let first = small(self.components.len())?;
        self.patterns.push(Pattern::new(first, first, true, value));
        Ok(())
    }

    /// Adds one brace-free alternative of `glob`.
    fn add_alternative(
        &mut self,
        any_depth: bool,
        glob: &str,
        alternative: &str,
        value: u32,
    ) -> Result<(), String> {
        let first = self.components.len();
        if any_depth {
            self.components.push(Component::new(Kind::Recursive, 0, 0));
        }
        let parsed = alternative.split('/').try_for_each(|c| {
            let component = match parse_component(c)? {
                Parsed::Recursive => Component::new(Kind::Recursive, 0, 0),
                Parsed::Literal(literal) => {
                    let (start, end) = self.push_text(&literal)?;
                    Component::new(Kind::Literal, start, end)
                }
                Parsed::Wild(wild) => {
                    let (start, end) = self.push_text(wild)?;
                    Component::new(Kind::Wild, start, end)
                }
            };
            self.components.push(component);
            Ok::<(), String>(())
        });
        if let Err(e) = parsed {
            self.components.truncate(first);
            return Err(format!("glob `{glob}`: {e}"));
        }
        let pattern = small(self.patterns.len())?;
        let components = self.components.get(first..).unwrap_or_default();
        match self.index_key(components) {
            Some((index, start, end)) => {
                let entry = Entry::new(start, end, pattern);
                match index {
                    Key::Name => self.by_name.push(entry),
                    Key::Extension => self.by_extension.push(entry),
                    Key::Stem => self.by_stem.push(entry),
                    Key::Directory => self.by_directory.push(entry),
                }
            }
            None => self.always.push(pattern),
        }
        self.patterns.push(Pattern::new(
            small(first)?,
            small(self.components.len())?,
            false,
            value,
        ));
        Ok(())
    }

    /// What a path must contain for the pattern to possibly match (see the index fields):
    /// the index and the key's range in the text.
    fn index_key(&self, components: &[Component]) -> Option<(Key, u32, u32)> {
        match components.last() {
            Some(c) if c.kind == Kind::Literal => return Some((Key::Name, c.start, c.end)),
            Some(c) if c.kind == Kind::Wild => {
                let text = self
                    .text
                    .get(c.start as usize..c.end as usize)
                    .unwrap_or_default();
                // Escapes change what the text means: such a component is not indexed.
                if !text.contains('\\') {
                    let wild = |ch: char| ch == '*' || ch == '?';
                    // The literal tail after the last wildcard: every name the component
                    // matches ends with it, so with a `.` in it, the name's suffix after that
                    // `.` is one of the keys `matches` looks up.
                    let tail_start = text.rfind(wild).map_or(0, |i| i + 1);
                    let tail = text.get(tail_start..).unwrap_or_default();
                    if let Some(dot) = tail.rfind('.').filter(|&d| d + 1 < tail.len()) {
                        let start = c.start.saturating_add(small(tail_start + dot + 1).ok()?);
                        return Some((Key::Extension, start, c.end));
                    }
                    // The literal head before the first wildcard: every name the component
                    // matches starts with it, so with a `.` in it, the name's text before its
                    // first `.` is the head's.
                    let head = text.get(..text.find(wild).unwrap_or(0)).unwrap_or_default();
                    if let Some(dot) = head.find('.') {
                        let end = c.start.saturating_add(small(dot).ok()?);
                        return Some((Key::Stem, c.start, end));
                    }
                }
            }
            _ => {}
        }
        components
            .iter()
            .rev()
            .find(|c| c.kind == Kind::Literal)
            .map(|c| (Key::Directory, c.start, c.end))
    }
}

#[cfg(test)]
/// The index a pattern goes into.
enum Key {
    Name,
    Extension,
    Stem,
    Directory,
}

#[cfg(test)]
/// One component as read from a glob.
#[derive(Debug, PartialEq, Eq)]
enum Parsed<'a> {
    Recursive,
    /// Escapes resolved.
    Literal(Cow<'a, str>),
    /// As written.
    Wild(&'a str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Star,
    AnyChar,
    Char(char),
}

#[cfg(test)]
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

#[cfg(test)]
/// Most combinations one glob's braces may expand to (the built-in table's globs expand to a
/// few dozen at most).
const MAX_ALTERNATIVES: usize = 4096;

#[cfg(test)]
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

#[cfg(test)]
/// Reads one component: checks its syntax, resolves the escapes of a wildcard-free one.
fn parse_component(text: &str) -> Result<Parsed<'_>, String> {
    if text == "**" {
        return Ok(Parsed::Recursive);
    }
    if !text.contains(['\\', '*', '?', '[', ']']) {
        return Ok(Parsed::Literal(Cow::Borrowed(text)));
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
        return Ok(Parsed::Wild(text));
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
    Ok(Parsed::Literal(Cow::Owned(literal)))
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

/// The start of `classify_globs.rs`: what its tables are made of, and short constructors for
/// its arrays.
#[cfg(test)]
pub(crate) const RUST_PRELUDE: &str =
    "use super::glob_table::{Component, Entry, GlobTable, Kind, Pattern};

/// `**`.
const fn r() -> Component {
    Component::new(Kind::Recursive, 0, 0)
}
/// A literal component, text `start..end`.
const fn l(start: u32, end: u32) -> Component {
    Component::new(Kind::Literal, start, end)
}
/// A component with wildcards, text `start..end`.
const fn w(start: u32, end: u32) -> Component {
    Component::new(Kind::Wild, start, end)
}
/// A pattern of components `first..end`, standing for rule `value`.
const fn p(first: u32, end: u32, value: u32) -> Pattern {
    Pattern::new(first, end, false, value)
}
/// A pattern decided by its index key alone, standing for rule `value`.
const fn k(at: u32, value: u32) -> Pattern {
    Pattern::new(at, at, true, value)
}
/// An index entry: key text `start..end`, pattern `pattern`.
const fn e(start: u32, end: u32, pattern: u32) -> Entry {
    Entry::new(start, end, pattern)
}
";

#[cfg(test)]
impl GlobTable {
    /// The table as Rust source after [`RUST_PRELUDE`]: `static NAME` (documented by `doc`)
    /// over `static` arrays named `NAME_...`.
    pub(crate) fn to_rust(&self, name: &str, doc: &str) -> String {
        use std::fmt::Write;
        /// `items` written `per_line` to a line.
        fn array<T>(
            out: &mut String,
            name: &str,
            ty: &str,
            items: &[T],
            per_line: usize,
            item: impl Fn(&T) -> String,
        ) {
            let _ = writeln!(out, "static {name}: [{ty}; {}] = [", items.len());
            for line in items.chunks(per_line) {
                let line: Vec<String> = line.iter().map(&item).collect();
                let _ = writeln!(out, "    {},", line.join(", "));
            }
            out.push_str("];\n");
        }
        let mut out = String::new();
        let _ = writeln!(out, "\nstatic {name}_TEXT: &str = concat!(");
        let mut chunk = String::new();
        for c in self.text.chars() {
            chunk.push(c);
            if chunk.len() >= 80 {
                let _ = writeln!(out, "    {chunk:?},");
                chunk.clear();
            }
        }
        if !chunk.is_empty() {
            let _ = writeln!(out, "    {chunk:?},");
        }
        out.push_str(");\n");
        array(
            &mut out,
            &format!("{name}_COMPONENTS"),
            "Component",
            &self.components,
            8,
            |c| match c.kind {
                Kind::Recursive => "r()".to_owned(),
                Kind::Literal => format!("l({}, {})", c.start, c.end),
                Kind::Wild => format!("w({}, {})", c.start, c.end),
            },
        );
        array(
            &mut out,
            &format!("{name}_PATTERNS"),
            "Pattern",
            &self.patterns,
            8,
            |p| {
                if p.decided_by_key {
                    format!("k({}, {})", p.first, p.value)
                } else {
                    format!("p({}, {}, {})", p.first, p.end, p.value)
                }
            },
        );
        let entry = |e: &Entry| format!("e({}, {}, {})", e.start, e.end, e.pattern);
        for (index, entries) in [
            ("BY_NAME", &self.by_name),
            ("BY_EXTENSION", &self.by_extension),
            ("BY_STEM", &self.by_stem),
            ("BY_DIRECTORY", &self.by_directory),
        ] {
            array(
                &mut out,
                &format!("{name}_{index}"),
                "Entry",
                entries,
                6,
                entry,
            );
        }
        array(
            &mut out,
            &format!("{name}_ALWAYS"),
            "u32",
            &self.always,
            16,
            u32::to_string,
        );
        let _ = writeln!(out, "\n/// {doc}");
        let _ = writeln!(
            out,
            "pub(super) static {name}: GlobTable = GlobTable::from_static(\n    {name}_TEXT,\n    &{name}_COMPONENTS,\n    &{name}_PATTERNS,\n    &{name}_BY_NAME,\n    &{name}_BY_EXTENSION,\n    &{name}_BY_STEM,\n    &{name}_BY_DIRECTORY,\n    &{name}_ALWAYS,\n);"
        );
        out
    }
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

    fn table(globs: &[&str]) -> GlobTable {
        let mut t = GlobTableBuilder::new();
        for (i, g) in globs.iter().enumerate() {
            t.add(g, i).unwrap();
        }
        t.build()
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
        let globs = [
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
        let mut t = GlobTableBuilder::new();
        for (i, g) in globs.iter().enumerate() {
            t.add_anchored(g, i).unwrap();
        }
        let t = t.build();
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
    fn wild_names_indexed_by_extension_or_stem_read_like_globset() {
        let globs = [
            "azure-pipelines-*.yml",
            "readme.*",
            "values.*.yaml",
            ".aider*",
            "x?.c",
            "a\\*.b*",
            "*.",
            "jakefile*",
        ];
        let mut t = GlobTableBuilder::new();
        for (i, g) in globs.iter().enumerate() {
            t.add_anchored(g, i).unwrap();
        }
        let t = t.build();
        // By extension: 0, 2, 4; by stem: 1, 3 (`.aider*`: the empty stem of dot files);
        // tried for every path: the escaped one, `*.` (no extension after its dot) and
        // `jakefile*` (no `.` at all).
        assert_eq!(t.always.len(), 3, "{:?}", t.always);
        let paths = [
            "azure-pipelines-x.yml",
            "d/azure-pipelines-.yml",
            "azure-pipelines.yml",
            "azure-pipelines-x.yml.bak",
            "readme.md",
            "d/readme.",
            "readme",
            "readmes.md",
            "values.prod.yaml",
            "values..yaml",
            "values.yaml",
            ".aider",
            ".aider.conf.yml",
            "d/.aiderignore",
            "aider",
            "xy.c",
            "x.c",
            "a*.b",
            "a*.bc",
            "ab.b",
            "x.",
            "x",
            "jakefile",
            "jakefile.js",
        ];
        for path in paths {
            assert_eq!(
                t.matches(path),
                globset_matches(&globs, "**/", path),
                "{path:?}"
            );
        }
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
            assert!(GlobTableBuilder::new().add(bad, 0).is_err(), "{bad}");
        }
    }
}
