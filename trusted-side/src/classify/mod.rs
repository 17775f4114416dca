//! The path classifier as the trusted side uses it: the `airlock-classify` crate (name, content
//! and tree layers, the rule table), the trees it reads from a git revision (`git_tree.rs`) and
//! the `airlock classify` command (`command.rs`).
//!
//! Guards against: two ways to reach the classifier. Everything of `airlock_classify` is
//! re-exported here, so the gate and the command call the one classifier; only the git-backed
//! trees, which need the trusted side's git runner, are added.

pub use airlock_classify::*;

pub mod command;
pub mod git_tree;

pub use command::run_classify;

/// The tree layers' view of a tree ([`airlock_classify::tree`]) and the trees over a git
/// revision ([`git_tree`]).
pub mod tree {
    pub use super::git_tree::{links_of, GitTree, PackedTree};
    pub use airlock_classify::tree::*;
}

#[cfg(test)]
mod command_tests;
