//! What some runners load beyond the names on their command line (round nine, from round
//! eight's held-out set, development material): Ruby's `require_relative` (a benchmark CI runs
//! loads its support files), and the test plans and schemes `xcodebuild` reads by name
//! (`-testPlan macOS` is `macOS.xctestplan`, `-scheme "App iOS"` is `App iOS.xcscheme`).
//!
//! Guards against: a file a reached script loads, or a test plan a CI line names, passing as
//! source or a test (a test plan decides which code and environment a CI test run uses). Only
//! names that resolve to files of the tree count; nothing is evaluated.

/// The files a Ruby file `from` loads with `require_relative "x"` (`x.rb` beside it, `../` kept
/// for normalising) or `require "./x"`. Empty for any other file.
pub(crate) fn ruby_requires(from: &str, text: &str) -> Vec<String> {
    let name = from.rsplit('/').next().unwrap_or(from).to_ascii_lowercase();
    if !(name.ends_with(".rb") || name == "rakefile" || name == "gemfile") {
        return Vec::new();
    }
    let base = from.rsplit_once('/').map_or("", |(d, _)| d);
    let mut out = Vec::new();
    for line in text.lines().map(str::trim_start) {
        let rest = if let Some(r) = line.strip_prefix("require_relative") {
            r
        } else if let Some(r) = line.strip_prefix("require") {
            // Only a path from the working directory names a file of the repository.
            let r = r.trim_start_matches(['(', ' ']);
            if !(r.starts_with("\"./") || r.starts_with("'./")) {
                continue;
            }
            r
        } else {
            continue;
        };
        let rest = rest.trim_start_matches(['(', ' ']);
        let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        let Some(end) = rest[1..].find(quote) else {
            continue;
        };
        let target = rest[1..=end].trim_start_matches("./");
        if target.is_empty() || target.contains("#{") || out.len() >= 64 {
            continue;
        }
        let file = if target.ends_with(".rb") {
            target.to_owned()
        } else {
            format!("{target}.rb")
        };
        out.push(if base.is_empty() {
            file
        } else {
            format!("{base}/{file}")
        });
    }
    out
}

/// The file names `xcodebuild` reads by name on `line`: `NAME.xctestplan` for `-testPlan NAME`
/// and `NAME.xcscheme` for `-scheme NAME` (quoted names may hold spaces). Empty when the line
/// does not run `xcodebuild`.
pub(crate) fn xcode_names(line: &str) -> Vec<String> {
    if !line.contains("xcodebuild") {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (flag, ext) in [("-testPlan", "xctestplan"), ("-scheme", "xcscheme")] {
        let mut rest = line;
        while let Some(at) = rest.find(flag) {
            rest = &rest[at + flag.len()..];
            if !rest.starts_with([' ', '=']) {
                continue;
            }
            let arg = rest[1..].trim_start();
            let name = match arg.chars().next() {
                Some(q @ ('"' | '\'')) => arg[1..].split(q).next().unwrap_or(""),
                _ => arg.split_whitespace().next().unwrap_or(""),
            };
            if !name.is_empty() && !name.contains(['$', '/']) && out.len() < 16 {
                out.push(format!("{name}.{ext}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ruby_requires_resolve_beside_the_file() {
        let text = "require 'benchmark/ips'\nrequire_relative 'theme_runner'\nrequire_relative \"../lib/x.rb\"\nrequire './tools/y'\n";
        assert_eq!(
            ruby_requires("performance/benchmark.rb", text),
            [
                "performance/theme_runner.rb",
                "performance/../lib/x.rb",
                "performance/tools/y.rb"
            ]
        );
        assert!(ruby_requires("a.py", text).is_empty());
    }

    #[test]
    fn xcodebuild_names_test_plans_and_schemes() {
        let line = r#"xcodebuild -project "A.xcodeproj" -scheme "Alamofire macOS" -testPlan macOS clean test"#;
        assert_eq!(
            xcode_names(line),
            ["macOS.xctestplan", "Alamofire macOS.xcscheme"]
        );
        assert!(xcode_names("swift test -scheme X").is_empty());
    }
}
