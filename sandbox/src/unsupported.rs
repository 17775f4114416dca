//! Every platform but Linux: no sandbox can be built, so nothing runs.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::SandboxError;
use crate::outcome::{Outcome, SandboxKind};
use crate::spec::{LogSink, SandboxSpec};

/// Never constructed on this platform.
#[derive(Debug)]
pub struct Running {
    never: std::convert::Infallible,
}

/// Always `SandboxError::Unavailable`: only Linux is supported.
pub fn spawn(
    _host_exe: &Path,
    _hidden_args: &[&str],
    spec: &SandboxSpec,
    _log: &LogSink,
) -> Result<Running, SandboxError> {
    spec.validate()?;
    Err(SandboxError::Unavailable {
        reason: "the sandbox is implemented for Linux only".into(),
    })
}

/// Always `SandboxError::Unavailable`: only Linux is supported.
pub fn spawn_with_egress(
    host_exe: &Path,
    hidden_args: &[&str],
    spec: &SandboxSpec,
    log: &LogSink,
    _proxy: &crate::egress::EgressProxy,
) -> Result<Running, SandboxError> {
    spawn(host_exe, hidden_args, spec, log)
}

pub(crate) fn child_main() -> ! {
    eprintln!("airlock-sandbox: the sandbox is implemented for Linux only");
    std::process::exit(127)
}

#[allow(missing_docs)]
impl Running {
    pub fn id(&self) -> u32 {
        match self.never {}
    }
    pub fn sandbox(&self) -> SandboxKind {
        match self.never {}
    }
    pub fn fallback_reason(&self) -> Option<&str> {
        match self.never {}
    }
    pub fn wait_timeout(&mut self, _: Duration) -> Result<Option<Outcome>, SandboxError> {
        match self.never {}
    }
    pub fn wait(&mut self) -> Result<Outcome, SandboxError> {
        match self.never {}
    }
    pub fn wait_until(&mut self, _: Instant) -> Result<Outcome, SandboxError> {
        match self.never {}
    }
    pub fn kill_group(&mut self) -> Result<(), SandboxError> {
        match self.never {}
    }
    pub fn memory_oom_kills(&self) -> u64 {
        match self.never {}
    }
}
