//! The set of member names seen so far, shared by the reader and the writer.
//!
//! Guards against: duplicate members, names that differ only by case or Unicode normalisation
//! (which replace each other on macOS and Windows), and a regular file that is also used as a
//! directory (a member "through" a file, or a file replacing a directory).
//! On `Ok`: no two inserted names collide under [`collision_key`], per component.
//! Does not check: the path rules themselves; callers run `check_relative_path` first.
//!
//! Memory: one node per distinct directory prefix and member, holding the component folded,
//! and as inserted when that differs, so at most `max_entries * max_depth` nodes and at most
//! about twice the bytes of all member names.

use std::collections::HashMap;

use crate::paths::collision_key;

use super::TarRule;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Only seen as the parent of another member.
    ImplicitDir,
    Dir,
    File,
}

#[derive(Debug)]
struct Node {
    id: usize,
    /// The component as inserted, when it is not its own folded form (the key).
    exact: Option<Box<str>>,
    kind: Kind,
}

/// Names seen so far, as a tree keyed by (parent node, folded component).
#[derive(Debug, Default)]
pub(crate) struct NameSet {
    nodes: HashMap<(usize, String), Node>,
    next_id: usize,
    /// The parent directories of the name inserted last (when it was accepted): the path up
    /// to and without the `/` after each, and that directory's node. Members come sorted, so
    /// most share their directories with the one before: looking those up again would find
    /// the same nodes (a node is never removed, its exact name never changes, and a node
    /// passed through as a directory never becomes a file), at two allocations a component.
    last_dirs: Vec<(usize, usize)>,
    last_path: String,
}

impl NameSet {
    pub(crate) fn new() -> Self {
        NameSet::default()
    }

    /// Forgets the name inserted last: the next insert looks up every component.
    #[cfg(test)]
    fn forget_last(&mut self) {
        self.last_dirs.clear();
        self.last_path.clear();
    }

    /// Records `path` (already checked by `check_relative_path`, without a trailing `/`).
    /// On a conflict returns the rule (`tar.duplicate` or `tar.collision`) and the reason.
    pub(crate) fn insert(&mut self, path: &str, is_dir: bool) -> Result<(), (TarRule, String)> {
        // The parent directories shared, byte for byte, with the name inserted last (each
        // ends before a `/` both names have at the same place).
        let shared = (self.last_dirs.iter())
            .take_while(|(end, _)| {
                path.as_bytes().get(..=*end) == self.last_path.as_bytes().get(..=*end)
                    && path.as_bytes().get(*end) == Some(&b'/')
            })
            .count();
        let (start, parent) = match shared.checked_sub(1).map(|i| self.last_dirs[i]) {
            Some((end, node)) => (end + 1, node),
            None => (0, 0),
        };
        self.last_dirs.truncate(shared);
        let r = self.insert_from(path, start, parent, is_dir);
        match r {
            Ok(()) => {
                self.last_path.clear();
                self.last_path.push_str(path);
            }
            Err(_) => {
                self.last_dirs.clear();
                self.last_path.clear();
            }
        }
        r
    }

    /// Inserts the components of `path` from byte `start` on (the start of a component), under
    /// the directory node `parent`, recording each directory passed through in `last_dirs`.
    fn insert_from(
        &mut self,
        path: &str,
        start: usize,
        mut parent: usize,
        is_dir: bool,
    ) -> Result<(), (TarRule, String)> {
        let mut at = start;
        loop {
            let rest = path.get(at..).unwrap_or_default();
            let (comp, last) = match rest.find('/') {
                Some(n) => (&rest[..n], false),
                None => (rest, true),
            };
            let end = at + comp.len();
            let key = (parent, collision_key(comp));
            match self.nodes.get_mut(&key) {
                None => {
                    self.next_id += 1;
                    let id = self.next_id;
                    let kind = match (last, is_dir) {
                        (false, _) => Kind::ImplicitDir,
                        (true, true) => Kind::Dir,
                        (true, false) => Kind::File,
                    };
                    // Most names are their own folded form: kept once, as the key.
                    let exact = (key.1 != comp).then(|| comp.into());
                    self.nodes.insert(key, Node { id, exact, kind });
                    parent = id;
                }
                Some(node) => {
                    let exact = node.exact.as_deref().unwrap_or(&key.1);
                    if exact != comp {
                        let other = format!("{}{exact}", &path[..at]);
                        return Err((
                            TarRule::Collision,
                            format!(
                                "differs only by case or Unicode normalisation from {:?}",
                                crate::paths::display_cut(&other)
                            ),
                        ));
                    }
                    if !last {
                        if node.kind == Kind::File {
                            return Err((
                                TarRule::Collision,
                                format!(
                                    "{:?} is a regular file, it cannot contain members",
                                    crate::paths::display_cut(&path[..end])
                                ),
                            ));
                        }
                        parent = node.id;
                    } else {
                        return match (node.kind, is_dir) {
                            (Kind::ImplicitDir, true) => {
                                node.kind = Kind::Dir;
                                Ok(())
                            }
                            (Kind::ImplicitDir, false) => Err((
                                TarRule::Collision,
                                "earlier members sit below this path, it cannot be a regular file"
                                    .to_owned(),
                            )),
                            (Kind::Dir | Kind::File, _) => Err((
                                TarRule::Duplicate,
                                "appears twice in the archive".to_owned(),
                            )),
                        };
                    }
                }
            }
            if last {
                return Ok(());
            }
            self.last_dirs.push((end, parent));
            at = end + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(r: Result<(), (TarRule, String)>) -> &'static str {
        r.map_or_else(|(rule, _)| rule.id(), |()| "ok")
    }

    #[test]
    fn distinct_names_and_shared_parents_are_fine() {
        let mut s = NameSet::new();
        assert_eq!(rule(s.insert("files", true)), "ok");
        assert_eq!(rule(s.insert("files/a", false)), "ok");
        assert_eq!(rule(s.insert("files/b/c", false)), "ok");
        assert_eq!(rule(s.insert("files/b", true)), "ok"); // explicit dir after implicit
        assert_eq!(rule(s.insert("manifest.json", false)), "ok");
    }

    #[test]
    fn duplicates_and_collisions_are_refused() {
        let mut s = NameSet::new();
        s.insert("files/README", false).unwrap();
        assert_eq!(rule(s.insert("files/README", false)), "tar.duplicate");
        assert_eq!(rule(s.insert("files/readme", false)), "tar.collision");
        assert_eq!(rule(s.insert("FILES/x", false)), "tar.collision");
        assert_eq!(rule(s.insert("files/README/x", false)), "tar.collision");
        s.insert("files/caf\u{e9}", false).unwrap();
        assert_eq!(rule(s.insert("files/cafe\u{301}", false)), "tar.collision");
        s.insert("files/d/e", false).unwrap();
        assert_eq!(rule(s.insert("files/d", false)), "tar.collision");
        assert_eq!(rule(s.insert("files/d", true)), "ok");
        assert_eq!(rule(s.insert("files/d", true)), "tar.duplicate");
    }

    /// Inserting with the directories of the name before taken as found gives what looking
    /// every component up gives, on random names that share, differ by case or normalisation
    /// in, or pass through each other's components.
    #[test]
    fn reusing_the_last_names_directories_changes_no_answer() {
        let comps = ["a", "A", "b", "c", "caf\u{e9}", "cafe\u{301}", "dd"];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut answers = [0usize; 3];
        for _ in 0..300 {
            let (mut memo, mut plain) = (NameSet::new(), NameSet::new());
            let mut prev: Vec<&str> = Vec::new();
            for _ in 0..40 {
                // Most names keep a prefix of the one before, as sorted members do.
                let keep = next(prev.len() + 1);
                let mut name: Vec<&str> = prev[..keep].to_vec();
                for _ in 0..=next(3) {
                    name.push(comps[next(comps.len())]);
                }
                let (path, is_dir) = (name.join("/"), next(5) == 0);
                plain.forget_last();
                let want = plain.insert(&path, is_dir);
                assert_eq!(memo.insert(&path, is_dir), want, "{path} (dir: {is_dir})");
                answers[match want.map_err(|(r, _)| r) {
                    Ok(()) => 0,
                    Err(TarRule::Collision) => 1,
                    Err(_) => 2,
                }] += 1;
                prev = name;
            }
        }
        // Every kind of answer was compared, many times.
        assert!(answers.iter().all(|n| *n > 250), "{answers:?}");
    }

    #[test]
    fn collision_reason_names_the_other_member() {
        let mut s = NameSet::new();
        s.insert("files/Makefile", false).unwrap();
        let (_, why) = s.insert("files/makefile", false).unwrap_err();
        assert!(why.contains("\"files/Makefile\""), "{why}");
    }
}
