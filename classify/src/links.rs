//! The other names a file has through the tree's symbolic links: a change to `pyconf/x.py` is a
//! change to the root `conftest.py` when that is a link to it, and to every workflow when
//! `.github/workflows` is a link to `ci/`. The packer never ships a link and the gate refuses a
//! change that adds or edits one, but the links the repository already holds stay, and whatever
//! loads a link's name loads the file it points at. [`ByTarget::aliases`] gives those names; the
//! classification ([`crate::classify_change`]) classes the change under each of them too.
//!
//! Guards against: a hostile change that edits a file a tool loads by convention through the
//! innocent name its link points at, or a file that an entry point existing only under a link's
//! name runs ([`linked_entries`]: `Makefile -> build/Makefile.real` running `lib/gen.py`); links to
//! links (followed, up to [`MAX_ALIASES`] names in all), directory links (a file below the target
//! is reached below the link), loops (a name is visited once), a target outside the repository or
//! absolute (names no file of the tree: ignored), a target spelled in another case or Unicode form
//! than the file it opens on a case-insensitive file system (targets and names are compared
//! folded).
//! Does not hold: a target whose middle passes through another link is resolved lexically (`a/../b`
//! is `b`), which is how git stores it, not always how the file system reads it.

use std::collections::{BTreeMap, BTreeSet};

use crate::entry::entry_point;
use crate::tree::{Change, Link, Paths, Tree};
use crate::{classify_named, tree_may_raise, Bucket, Classified, Layer};

/// Names followed for one changed path, the path itself included. A tree with more links than
/// that pointing at one file is not one a team writes by hand.
pub const MAX_ALIASES: usize = 64;

/// Classes each of `changes` that a link of `tree` reaches under the link's name too, and keeps
/// that class in `out` (the changes' own classes, in order) where it is the riskier one.
pub(crate) fn raise_through_links(changes: &[Change<'_>], tree: &dyn Tree, out: &mut [Classified]) {
    if tree.links().is_empty() {
        return;
    }
    let by_target = ByTarget::new(tree.links());
    // Each changed path a link reaches, under each of its other names: (change, name, link).
    let named: Vec<(usize, String, String)> = changes
        .iter()
        .enumerate()
        .filter(|(i, _)| tree_may_raise(out[*i].class.bucket))
        .flat_map(|(i, c)| {
            let aliases = by_target.aliases(c.path);
            aliases.into_iter().map(move |(name, link)| (i, name, link))
        })
        .collect();
    if named.is_empty() {
        return;
    }
    let as_named: Vec<Change<'_>> = named
        .iter()
        .map(|(i, name, _)| Change {
            path: name,
            ..changes[*i]
        })
        .collect();
    for ((i, name, link), by_name) in named.iter().zip(classify_named(&as_named, tree)) {
        if tree_may_raise(out[*i].class.bucket) && !tree_may_raise(by_name.class.bucket) {
            let why = by_name
                .because
                .map(|b| format!("; {b}"))
                .unwrap_or_default();
            out[*i] = Classified {
                class: by_name.class,
                layer: Layer::Tree,
                because: Some(format!("read as {name} through the link {link}{why}")),
            };
        }
    }
}

/// The files of the tree that are entry points only under a link's name (`Makefile ->
/// build/Makefile.real`, `.github -> config/gh`: the workflow `config/gh/workflows/ci.yml`),
/// with the bucket of that name: what they run is reached as what any entry point runs. At most
/// about `limit` (the caller's cap on entry points).
pub(crate) fn linked_entries<'a>(
    links: &[Link],
    all: &Paths<'a>,
    limit: usize,
) -> Vec<(Bucket, &'a str)> {
    let mut out = Vec::new();
    for link in links {
        // The target itself, or what lies under it when it is a directory.
        let reached = all
            .starting_with(&link.target)
            .into_iter()
            .filter(|p| p.len() == link.target.len() || p.as_bytes()[link.target.len()] == b'/');
        for f in reached {
            let alias = format!("{}{}", link.path, &f[link.target.len()..]);
            if let (None, Some(b)) = (entry_point(f), entry_point(&alias)) {
                out.push((b, f));
            }
        }
        if out.len() >= limit {
            break;
        }
    }
    out
}

/// The tree's links by target, for [`ByTarget::aliases`]. Targets are kept folded
/// ([`crate::fold_path`]): on a case-insensitive or normalising file system (macOS, Windows,
/// `core.ignorecase`) the link `conftest.py -> PyConf/x.py` opens `pyconf/x.py`.
pub(crate) struct ByTarget<'a>(BTreeMap<String, Vec<&'a str>>);

impl<'a> ByTarget<'a> {
    pub(crate) fn new(links: &'a [Link]) -> ByTarget<'a> {
        let mut map: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for l in links {
            map.entry(crate::fold_path(&l.target))
                .or_default()
                .push(&l.path);
        }
        ByTarget(map)
    }

    /// The other names of `path`: for each, the name and the link it is reached through, in
    /// the order found (nearest link first), at most [`MAX_ALIASES`] names with `path`.
    pub(crate) fn aliases(&self, path: &str) -> Vec<(String, String)> {
        let mut seen = BTreeSet::from([path.to_owned()]);
        let mut out: Vec<(String, String)> = Vec::new();
        let mut next = 0;
        let mut current = path.to_owned();
        loop {
            // `current` itself, then each directory above it, may be what a link points at.
            let mut at = current.len();
            while at > 0 {
                let (target, rest) = current.split_at(at);
                for link in self.0.get(&crate::fold_path(target)).into_iter().flatten() {
                    let alias = format!("{link}{rest}");
                    if seen.len() < MAX_ALIASES && seen.insert(alias.clone()) {
                        out.push((alias, (*link).to_owned()));
                    }
                }
                at = target.rfind('/').unwrap_or(0);
            }
            let Some((alias, _)) = out.get(next) else {
                return out;
            };
            current = alias.clone();
            next += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(path: &str, target: &str) -> Link {
        Link::new(path, target.as_bytes()).unwrap()
    }

    #[test]
    fn targets_resolve_against_the_links_directory_and_stay_in_the_repository() {
        assert_eq!(link("conftest.py", "pyconf/x.py").target, "pyconf/x.py");
        assert_eq!(link("a/b/l", "../c/./d").target, "a/c/d");
        assert_eq!(link(".github/workflows", "../ci").target, "ci");
        assert_eq!(Link::new("l", b"/etc/passwd"), None);
        assert_eq!(Link::new("a/l", b"../../x"), None);
        assert_eq!(Link::new("a/l", b".."), None);
        assert_eq!(Link::new("l", b"\xff"), None);
    }

    #[test]
    fn a_file_is_named_through_file_links_directory_links_and_chains() {
        let links = [
            link("conftest.py", "pyconf/x.py"),
            link(".github/workflows", "../ci/wf"),
            link("ci/wf", "../shared/yaml"),
            link("loop/a", "b"),
            link("loop/b", "a"),
        ];
        let by = ByTarget::new(&links);
        let names = |p: &str| -> Vec<String> { by.aliases(p).into_iter().map(|a| a.0).collect() };
        assert_eq!(names("pyconf/x.py"), ["conftest.py"]);
        assert_eq!(names("pyconf/y.py"), Vec::<String>::new());
        assert_eq!(
            names("shared/yaml/build.yml"),
            ["ci/wf/build.yml", ".github/workflows/build.yml"]
        );
        assert_eq!(names("loop/a"), ["loop/b"]);
        assert_eq!(
            by.aliases("ci/wf/x.yml"),
            [(
                ".github/workflows/x.yml".to_owned(),
                ".github/workflows".to_owned()
            )]
        );
        // A target in another case or Unicode form opens the file on macOS and Windows.
        let folded = [link("conftest.py", "PyConf/X.py"), link("lib", "Caf\u{e9}")];
        let by_fold = ByTarget::new(&folded);
        assert_eq!(by_fold.aliases("pyconf/x.py")[0].0, "conftest.py");
        assert_eq!(by_fold.aliases("cafe\u{301}/a.py")[0].0, "lib/a.py");
        // A directory name is not a prefix of another name (`ci/wfx` is not under `ci/wf`).
        assert_eq!(names("ci/wfx/y.yml"), Vec::<String>::new());
    }

    #[test]
    fn what_an_entry_point_under_a_links_name_runs_is_reached() {
        use crate::tree::{Change, MemTree};
        use crate::{classify_change, Bucket};
        let mut tree = MemTree::new();
        tree.add("cfg/Makefile.real", false, b"all:\n\tpython lib/y.py\n")
            .add(
                "config/gh/workflows/ci.yml",
                false,
                b"jobs:\n  b:\n    steps:\n      - run: python lib/x.py\n",
            )
            .add("lib/x.py", false, b"print(1)\n")
            .add("lib/y.py", false, b"print(2)\n")
            .add_link("Makefile", "cfg/Makefile.real")
            .add_link(".github", "config/gh");
        let new = b"print(3)\n";
        let change = |path| Change {
            path,
            new: Some(&new[..]),
            executable: false,
        };
        let got = classify_change(&[change("lib/x.py"), change("lib/y.py")], &tree);
        assert_eq!(
            (got[0].class.rule, got[1].class.rule),
            ("ci.reached", "build.reached"),
            "{got:?}"
        );
        assert_eq!(got[1].class.bucket, Bucket::Build);
    }

    #[test]
    fn the_names_followed_are_bounded() {
        let links: Vec<Link> = (0..200)
            .map(|i| link(&format!("l{i}"), "target.py"))
            .collect();
        assert_eq!(
            ByTarget::new(&links).aliases("target.py").len(),
            MAX_ALIASES - 1
        );
    }

    #[test]
    fn a_change_is_classed_under_the_names_links_give_it() {
        use crate::tree::{Change, MemTree};
        use crate::{classify_change, Bucket, Layer};
        let conf = b"def pytest_configure(config):\n    pass\n";
        let change = |path| Change {
            path,
            new: Some(&conf[..]),
            executable: false,
        };
        let mut tree = MemTree::new();
        tree.add("pyconf/settings.py", false, conf);
        let plain = classify_change(&[change("pyconf/settings.py")], &tree);
        assert!(!matches!(plain[0].class.bucket, Bucket::Build), "{plain:?}");
        tree.add_link("conftest.py", "pyconf/settings.py")
            .add_link("docs/conf", "../pyconf");
        let got = classify_change(
            &[change("pyconf/settings.py"), change("pyconf/other.py")],
            &tree,
        );
        assert_eq!(
            (got[0].class.bucket, got[0].layer),
            (Bucket::Build, Layer::Tree),
            "{got:?}"
        );
        let why = got[0].because.as_deref().unwrap_or_default();
        assert!(
            why.starts_with("read as conftest.py through the link conftest.py"),
            "{why}"
        );
        // Reached only as `docs/conf/other.py`: nothing loads that name, so the change keeps
        // its own class.
        let mut bare = MemTree::new();
        bare.add("pyconf/settings.py", false, conf);
        let unlinked = classify_change(
            &[change("pyconf/settings.py"), change("pyconf/other.py")],
            &bare,
        );
        assert_eq!(got[1], unlinked[1]);
        assert_ne!(got[0], unlinked[0]);
    }
}
