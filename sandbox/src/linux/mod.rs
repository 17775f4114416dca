//! The Linux implementation: the helper (child side), the runner (supervisor side), and
//! the layers they apply.

#[allow(unsafe_code)]
mod sys;

mod helper;
mod identity;
mod landlock_layer;
mod runner;

pub(crate) use helper::child_main;
pub use runner::{spawn, Running};
