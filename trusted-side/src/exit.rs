//! Exit codes, decided in one place.

use std::process::ExitCode;

/// What a command concluded, mapped to the documented exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// 0: success (for `gate`: queue).
    Ok,
    /// 3: needs a human.
    Human,
    /// 4: rejected or refused by a rule.
    Reject,
}

impl From<Outcome> for ExitCode {
    fn from(o: Outcome) -> ExitCode {
        match o {
            Outcome::Ok => ExitCode::SUCCESS,
            Outcome::Human => ExitCode::from(3),
            Outcome::Reject => ExitCode::from(4),
        }
    }
}

/// An error that carries a refusal (exit 4) rather than a failure (exit 1).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// Prints an error and its causes on one line (each once) and returns its exit code.
pub fn report(err: &anyhow::Error) -> ExitCode {
    eprintln!("error: {}", airlock_core::error::one_line(err.as_ref()));
    if err.downcast_ref::<Refused>().is_some() {
        ExitCode::from(4)
    } else {
        ExitCode::from(1)
    }
}
