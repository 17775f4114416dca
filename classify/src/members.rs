//! What a build's own manifest declares part of the build: the members of a Cargo workspace
//! (`members = ["examples", "crates/*"]`), of an npm, Yarn or Bun workspace (`"workspaces"` in a
//! `package.json`), the directories CMake's `add_subdirectory(example)` and Meson's
//! `subdir('tools')` enter. A directory listed there is built whenever the repository is
//! (`cargo test --workspace`, a CMake build with its options on), so an example there is no
//! longer one that "runs only when something runs it": the tree layer names the directory
//! (`reach.rs`), which raises the example's build files and manifests ("Risk follows what
//! runs" 19, `docs/CLASSIFY.md`).
//!
//! Guards against: hostile manifest text. The caller passes at most `MAX_READ_BYTES` of it;
//! lines are scanned once, nothing is evaluated, and at most [`MAX_MEMBERS`] names come back.
//! A member behind a glob keeps only its literal directories (`crates/*` names `crates`); one
//! that starts with a glob, a CMake variable (`${DIR}`) or a generator expression names
//! nothing (it would name the root). Names are checked against the tree by the caller
//! (`normalise` refuses `..` and absolute names), so a name never reaches outside it.

/// Most member directories read from one manifest.
pub const MAX_MEMBERS: usize = 64;

/// The directories `text` (the content of the build file `from`) declares part of its build,
/// as written (relative to the file's directory). Empty for any other file.
pub(crate) fn members(from: &str, text: &str) -> Vec<String> {
    let name = from.rsplit('/').next().unwrap_or(from).to_ascii_lowercase();
    let raw = match name.as_str() {
        "cargo.toml" => cargo_members(text),
        "package.json" => json_workspaces(text),
        "cmakelists.txt" => call_arguments(text, "add_subdirectory"),
        "meson.build" => call_arguments(text, "subdir"),
        _ if name.ends_with(".cmake") => call_arguments(text, "add_subdirectory"),
        _ => Vec::new(),
    };
    let mut out: Vec<String> = Vec::new();
    for m in raw {
        if let Some(dir) = literal_part(&m) {
            if !out.contains(&dir) {
                out.push(dir);
            }
        }
        if out.len() >= MAX_MEMBERS {
            break;
        }
    }
    out
}

/// The directories before the first glob or variable of `member` (`crates/*` is `crates`,
/// `./examples/` is `examples`); `None` when nothing literal is left.
fn literal_part(member: &str) -> Option<String> {
    let mut parts = Vec::new();
    for part in member.trim().split('/') {
        if part.contains(['*', '?', '[', '{', '$', '<', '!']) {
            break;
        }
        if part.is_empty() || part == "." {
            continue;
        }
        parts.push(part);
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The quoted strings of the `members` array of a Cargo manifest's `[workspace]` table, on one
/// line or over several.
fn cargo_members(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_workspace = false;
    let mut in_list = false;
    for line in text.lines().map(str::trim) {
        if !in_list && line.starts_with('[') {
            in_workspace =
                line.trim_end_matches(|c: char| c == ']' || c.is_whitespace()) == "[workspace";
            continue;
        }
        let list = if in_list {
            line
        } else if in_workspace {
            match line.strip_prefix("members") {
                Some(rest) => match rest.trim_start().strip_prefix('=') {
                    Some(value) => value,
                    None => continue,
                },
                None => continue,
            }
        } else {
            continue;
        };
        // A comment after the values (`"a", # the app`) is no member.
        let values = list.split('#').next().unwrap_or_default();
        out.extend(crate::product::quoted(values));
        in_list = !values.contains(']');
        if out.len() >= MAX_MEMBERS {
            break;
        }
    }
    out
}

/// The workspaces of a `package.json`: `"workspaces": [...]` or `{"packages": [...]}`.
fn json_workspaces(text: &str) -> Vec<String> {
    let Ok(json) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    let Some(ws) = json.get("workspaces") else {
        return Vec::new();
    };
    let list = ws.get("packages").unwrap_or(ws);
    list.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .take(MAX_MEMBERS)
                .collect()
        })
        .unwrap_or_default()
}

/// The first argument of each call of `function` (case-insensitive, as CMake reads it) outside
/// comments: `add_subdirectory(example)`, `subdir('tools')`.
fn call_arguments(text: &str, function: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let code = line.split('#').next().unwrap_or_default();
        let lower = code.to_ascii_lowercase();
        let mut from = 0;
        while let Some(at) = lower[from..].find(function) {
            let start = from + at;
            from = start + function.len();
            // A whole word: `add_subdirectory(`, not `my_add_subdirectory(`.
            let before = lower[..start].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let Some(args) = lower[from..].trim_start().strip_prefix('(') else {
                continue;
            };
            // Same length as `code`: `lower` only changed ASCII letters.
            let offset = code.len() - args.len();
            let first = code[offset..]
                .trim_start()
                .split(|c: char| c.is_whitespace() || c == ')' || c == ',')
                .next()
                .unwrap_or_default()
                .trim_matches(|c| c == '"' || c == '\'');
            if !first.is_empty() {
                out.push(first.to_owned());
            }
            if out.len() >= MAX_MEMBERS {
                return out;
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "members_tests.rs"]
mod tests;
