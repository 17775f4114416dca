//! The Linux implementation: the helper (child side), the runner (supervisor side), and
//! the layers they apply.

#[allow(unsafe_code)]
pub(crate) mod sys;

mod binds;
mod cgroup;
mod helper;
mod identity;
mod landlock_layer;
mod newroot;
mod preflight;
mod reach;
mod runner;

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod seccomp;

/// No filter is built for other architectures: the layer reports itself unavailable.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod seccomp {
    pub(crate) struct FilterOptions {
        pub(crate) pin_process_group: bool,
        pub(crate) allow_tcp: bool,
        pub(crate) deny_sysv_ipc: bool,
    }
    pub(crate) enum SeccompFailure {
        Unavailable(String),
        #[allow(dead_code)]
        Failed(String),
    }
    pub(crate) fn install(_: FilterOptions) -> Result<(), SeccompFailure> {
        Err(SeccompFailure::Unavailable(
            "no seccomp filter for this architecture".into(),
        ))
    }
}

pub(crate) use helper::child_main;
pub use runner::{spawn, spawn_with_egress, Running};
