//! Logging and progress: tracing to stderr, progress bars only on a TTY, `NO_COLOR` respected;
//! a closed stdout (`airlock status | head -2`) ends the command quietly.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Whether colour may be used on stderr.
pub fn color_enabled() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}

/// Exit status when stdout was closed by its reader: what a shell reports for a process
/// killed by SIGPIPE (128 + 13), so `set -o pipefail` still sees an unfinished command and a
/// cut-short `gate` never reads as `queue` (0).
pub const EXIT_STDOUT_CLOSED: i32 = 141;

/// Makes a write to a closed stdout end the process quietly with [`EXIT_STDOUT_CLOSED`].
/// Rust ignores SIGPIPE, so `println!` panics on `EPIPE` (`failed printing to stdout: Broken
/// pipe`); this hook turns exactly that panic into the exit a Unix tool would have, and leaves
/// every other panic to the default hook.
pub fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("(os error 32)") {
            std::process::exit(EXIT_STDOUT_CLOSED);
        }
        default(info);
    }));
}

/// Sets up `tracing` on stderr. `RUST_LOG` overrides the level chosen by -v/-q.
pub fn init_logging(verbose: u8, quiet: bool) {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let level = match (quiet, verbose) {
        (true, _) => LevelFilter::ERROR,
        (false, 0) => LevelFilter::WARN,
        (false, 1) => LevelFilter::INFO,
        (false, _) => LevelFilter::DEBUG,
    };
    // `RUST_LOG` takes `target=level` directives (`tracing_subscriber::filter::Targets`);
    // without it, the level of -v/-q is the subscriber's maximum (what `LevelFilter::current`
    // reports, e.g. to hide progress bars under -q).
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(color_enabled())
        .with_target(false);
    match std::env::var("RUST_LOG")
        .ok()
        .and_then(|s| s.parse::<Targets>().ok())
    {
        Some(targets) => builder
            .with_max_level(LevelFilter::TRACE)
            .finish()
            .with(targets)
            .init(),
        None => builder.with_max_level(level).init(),
    }
}

/// A progress bar on stderr, hidden when stderr is not a terminal or `quiet` is set.
pub fn progress(total: u64, what: &str, quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{msg:>8} [{bar:30}] {pos}/{len} {elapsed}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(what.to_owned());
    bar
}

/// Prints a value as pretty JSON on stdout, through [`json_text`].
pub fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", json_text(value)?);
    Ok(())
}

/// A value as pretty JSON whose text holds no DEL (U+007F) and no C1 control (U+0080-U+009F):
/// serde_json escapes only C0, and a terminal that reads UTF-8 C1 acts on U+009B (CSI) or
/// U+0085 as it would on ESC `[`. Those code points can only occur inside JSON strings, so
/// escaping them as `\u00XX` afterwards gives the same JSON value. Every `--json` output
/// of the CLI goes through here.
pub fn json_text<T: serde::Serialize>(value: &T) -> anyhow::Result<String> {
    Ok(escape_del_c1(&serde_json::to_string_pretty(value)?))
}

/// `\u00XX` for every DEL and C1 code point of an already-serialised JSON text.
fn escape_del_c1(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if ('\u{7f}'..='\u{9f}').contains(&c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_text_escapes_del_and_c1_and_keeps_the_value() {
        let hostile = "a\u{7f}b\u{9b}31mc\u{85}d\u{80}e\u{a0}f\u{1b}g";
        let text = json_text(&serde_json::json!({ "model": hostile })).unwrap();
        assert_eq!(
            text,
            "{\n  \"model\": \"a\\u007fb\\u009b31mc\\u0085d\\u0080e\u{a0}f\\u001bg\"\n}"
        );
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'));
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["model"], hostile);
    }
}
