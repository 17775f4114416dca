//! The landlock layer: read (and execute) the system, read and write only the workdir and
//! the private tmp; no TCP bind, and no TCP connect but to the egress proxy's port when
//! egress is granted (namespace mode only, where that port on the namespace's loopback is
//! the only thing to connect to); no signals to, and no abstract unix sockets of, processes
//! outside the sandbox.
//!
//! Guards against: writes anywhere but the two writable roots (the host's /tmp, $HOME, the
//! token file, the worker binary), reads outside the readable roots (the token file, the
//! worker's home), truncation, device ioctls, and, through landlock's built-in ptrace rule,
//! reading another process's memory or environment via /proc.
//! On `Ok(None)`: the kernel enforces every right this module handles (landlock ABI 6, Linux
//! 6.12). On `Ok(Some(what))`: only part of it, and the spec allowed that. Anything else is
//! an error: the layer is never silently skipped.
//! Does not check: connects to path-based unix sockets (seccomp refuses `socket()` instead).

use std::path::Path;

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus, NetPort,
    PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus,
    Scope, ABI,
};

use crate::spec::{SandboxSpec, READ_WRITE_DEVICES};

/// The ABI whose rights we handle: filesystem (incl. truncate, refer, device ioctl), TCP
/// bind/connect, and scoping of signals and abstract unix sockets.
const TARGET_ABI: ABI = ABI::V6;

/// Failure of the landlock layer.
pub(crate) enum LandlockFailure {
    /// The kernel lacks landlock or part of the handled rights (and partial was not allowed).
    Unavailable(String),
    /// Something else went wrong while building or applying the ruleset.
    Failed(String),
}

fn failed(what: &str) -> impl FnOnce(landlock::RulesetError) -> LandlockFailure + '_ {
    move |e| LandlockFailure::Failed(format!("{what}: {e}"))
}

/// Builds and applies the ruleset to the calling thread (inherited across `fork`/`execve`).
/// `program` is the resolved generator path, made readable and executable.
/// `tcp_connect_port`: the one TCP port the generator may connect to (the egress proxy's).
pub(crate) fn restrict(
    spec: &SandboxSpec,
    program: &Path,
    tcp_connect_port: Option<u16>,
) -> Result<Option<String>, LandlockFailure> {
    let all = AccessFs::from_all(TARGET_ABI);
    let read = AccessFs::from_read(TARGET_ABI);
    let device_rw =
        AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;

    let mut rs = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(failed("handle filesystem rights"))?
        .handle_access(AccessNet::from_all(TARGET_ABI))
        .map_err(failed("handle network rights"))?
        .scope(Scope::from_all(TARGET_ABI))
        .map_err(failed("scope signals and abstract sockets"))?
        .create()
        .map_err(failed("create ruleset"))?;

    for p in &spec.readable {
        rs = add(rs, p, read, Missing::Skip)?;
    }
    rs = add(
        rs,
        program,
        AccessFs::ReadFile | AccessFs::Execute,
        Missing::Fail,
    )?;
    for d in READ_WRITE_DEVICES {
        rs = add(rs, Path::new(d), device_rw, Missing::Skip)?;
    }
    rs = add(rs, &spec.workdir, all, Missing::Fail)?;
    rs = add(rs, &spec.private_tmp, all, Missing::Fail)?;
    if let Some(port) = tcp_connect_port {
        rs = rs
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(|e| LandlockFailure::Failed(format!("rule for TCP port {port}: {e}")))?;
    }

    let status = rs
        .restrict_self()
        .map_err(failed("landlock_restrict_self"))?;
    if !status.no_new_privs {
        return Err(LandlockFailure::Failed("no_new_privs is not set".into()));
    }
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => format!("{effective_abi:?}"),
        other => format!("{other:?}"),
    };
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(None),
        RulesetStatus::PartiallyEnforced if spec.allow_partial_landlock => Ok(Some(format!(
            "landlock partially enforced: the kernel offers {abi}, the sandbox handles {TARGET_ABI:?}"
        ))),
        RulesetStatus::PartiallyEnforced => Err(LandlockFailure::Unavailable(format!(
            "landlock only partially enforced: the kernel offers {abi}, the sandbox requires \
             {TARGET_ABI:?} (Linux 6.12)"
        ))),
        RulesetStatus::NotEnforced => Err(LandlockFailure::Unavailable(format!(
            "landlock not enforced by this kernel ({abi})"
        ))),
    }
}

#[derive(PartialEq)]
enum Missing {
    Skip,
    Fail,
}

fn add(
    rs: RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
    missing: Missing,
) -> Result<RulesetCreated, LandlockFailure> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && missing == Missing::Skip => {
            return Ok(rs)
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Err(LandlockFailure::Failed(format!(
                "{}: the sandbox identity cannot reach it ({e}); without the namespace \
                 sandbox nothing binds it in: make the directories above it searchable \
                 (chmod o+x) or install it under a readable directory",
                path.display()
            )));
        }
        Err(e) => {
            return Err(LandlockFailure::Failed(format!("{}: {e}", path.display())));
        }
    };
    // Directory-only rights on a file would make the kernel refuse the rule; the crate then
    // reports "partially enforced", which we treat as failure. Mask them here instead.
    let access = if meta.is_dir() {
        access
    } else {
        access & AccessFs::from_file(TARGET_ABI)
    };
    let fd = PathFd::new(path)
        .map_err(|e| LandlockFailure::Failed(format!("{}: {e}", path.display())))?;
    rs.add_rule(PathBeneath::new(fd, access))
        .map_err(|e| LandlockFailure::Failed(format!("rule for {}: {e}", path.display())))
}
