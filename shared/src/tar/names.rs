//! The set of member names seen so far, shared by the reader and the writer.
//!
//! Guards against: duplicate members, names that differ only by case or Unicode normalisation
//! (which replace each other on macOS and Windows), and a regular file that is also used as a
//! directory (a member "through" a file, or a file replacing a directory).
//! On `Ok`: no two inserted names collide under [`collision_key`], per component.
//! Does not check: the path rules themselves; callers run `check_relative_path` first.
//!
//! Memory: one node per distinct directory prefix and member, holding the component twice
//! (exact and folded), so at most `max_entries * max_depth` nodes and about twice the bytes
//! of all member names.

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
    exact: String,
    kind: Kind,
}

/// Names seen so far, as a tree keyed by (parent node, folded component).
#[derive(Debug, Default)]
pub(crate) struct NameSet {
    nodes: HashMap<(usize, String), Node>,
    next_id: usize,
}

impl NameSet {
    pub(crate) fn new() -> Self {
        NameSet::default()
    }

    /// Records `path` (already checked by `check_relative_path`, without a trailing `/`).
    /// On a conflict returns the rule (`tar.duplicate` or `tar.collision`) and the reason.
    pub(crate) fn insert(&mut self, path: &str, is_dir: bool) -> Result<(), (TarRule, String)> {
        let comps: Vec<&str> = path.split('/').collect();
        let mut parent = 0usize;
        for (i, comp) in comps.iter().enumerate() {
            let last = i + 1 == comps.len();
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
                    self.nodes.insert(
                        key,
                        Node {
                            id,
                            exact: (*comp).to_owned(),
                            kind,
                        },
                    );
                    parent = id;
                }
                Some(node) => {
                    if node.exact != *comp {
                        let mut other = comps[..i].join("/");
                        if !other.is_empty() {
                            other.push('/');
                        }
                        other.push_str(&node.exact);
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
                                    crate::paths::display_cut(&comps[..=i].join("/"))
                                ),
                            ));
                        }
                        parent = node.id;
                        continue;
                    }
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
        Ok(())
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

    #[test]
    fn collision_reason_names_the_other_member() {
        let mut s = NameSet::new();
        s.insert("files/Makefile", false).unwrap();
        let (_, why) = s.insert("files/makefile", false).unwrap_err();
        assert!(why.contains("\"files/Makefile\""), "{why}");
    }
}
