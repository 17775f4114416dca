//! Fake secrets for tests and benchmarks: example templates, a seeded generator, and
//! realistic files (.env, YAML, JSON, Python, JavaScript, HCL) to embed them in.
//!
//! Rule examples are kept as templates, so the repository never holds a string that looks
//! like a live credential; the random parts are made at run time from a fixed seed.
//!
//! # Template syntax
//! Literal text, plus `{{kind:N}}` (N random characters of `kind`, part of the secret) and
//! `{{~kind:N}}` (filler: random, but not part of the secret, e.g. a user name). Kinds:
//!
//! | kind | characters |
//! |------|------------|
//! | `a`  | `A-Za-z0-9` |
//! | `A`  | `A-Z0-9` |
//! | `U`  | `A-Z` |
//! | `w`  | `A-Za-z` |
//! | `L`  | `a-z` |
//! | `l`  | `a-z0-9` |
//! | `h`  | `0-9a-f` |
//! | `H`  | `0-9A-F` |
//! | `d`  | `0-9` |
//! | `b32`| `A-Z2-7` |
//! | `b64`| `A-Za-z0-9+/` |
//! | `u64`| `A-Za-z0-9_-` |
//! | `bech`| bech32 upper-case alphabet |
//! | `dj` | Django's secret key alphabet (`a-z0-9!@#$%^&*(-_=+)`) |
//! | `pem`| N lines of 64 `b64` characters, joined by `\n` |
//!
//! Anything else between `{{` and `}}` (a Helm `{{ .Values.x }}`) is literal text. A first
//! line `@path=<path>` names the path the example is scanned under ([`split_path`]).

use serde::{Deserialize, Serialize};

/// An example template may start with a line `@path=<path>` naming the path it is scanned
/// under (for path-dependent behaviour, e.g. source files). Returns that path, if any, and
/// the template without the line.
pub fn split_path(template: &str) -> (Option<&str>, &str) {
    match template
        .strip_prefix("@path=")
        .and_then(|rest| rest.split_once('\n'))
    {
        Some((path, body)) => (Some(path), body),
        None => (None, template),
    }
}

/// SplitMix64: small, fast, deterministic; good enough for test data (not for keys).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a fixed seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform index below `n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            items.get(self.below(items.len()))
        }
    }
}

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const LOWER: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
const LOWER_ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
const HEX: &[u8] = b"0123456789abcdef";
const HEX_UPPER: &[u8] = b"0123456789ABCDEF";
const DIGITS: &[u8] = b"0123456789";
const BASE32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BASE64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
const BECH32: &[u8] = b"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L";
/// Django's `get_random_secret_key()` alphabet.
const DJANGO: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)";

fn alphabet(kind: &str) -> Option<&'static [u8]> {
    Some(match kind {
        "a" => ALNUM,
        "A" => UPPER_ALNUM,
        "U" => UPPER,
        "w" => LETTERS,
        "L" => LOWER,
        "l" => LOWER_ALNUM,
        "h" => HEX,
        "H" => HEX_UPPER,
        "d" => DIGITS,
        "b32" => BASE32,
        "b64" | "pem" => BASE64,
        "u64" => BASE64URL,
        "bech" => BECH32,
        "dj" => DJANGO,
        _ => return None,
    })
}

fn random_string(rng: &mut Rng, alphabet: &[u8], n: usize) -> String {
    (0..n)
        .map(|_| {
            char::from(
                alphabet
                    .get(rng.below(alphabet.len()))
                    .copied()
                    .unwrap_or(b'x'),
            )
        })
        .collect()
}

/// A rendered template: the text and the random parts that belong to the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The text.
    pub text: String,
    /// Random parts of the secret, in order (a `pem` block contributes one per line).
    /// A scanner that finds the secret must cover each of them.
    pub secret_parts: Vec<String>,
}

/// Parses `~kind:N` or `kind:N`.
fn parse_token(body: &str) -> Option<(bool, &'static [u8], bool, usize)> {
    let (filler, body) = match body.strip_prefix('~') {
        Some(rest) => (true, rest),
        None => (false, body),
    };
    let (kind, n) = body.split_once(':')?;
    let n: usize = n.parse().ok()?;
    if n == 0 || n > 10_000 {
        return None;
    }
    Some((filler, alphabet(kind)?, kind == "pem", n))
}

/// Renders a template with random parts drawn from `rng`.
pub fn render(template: &str, rng: &mut Rng) -> Rendered {
    let mut text = String::with_capacity(template.len() + 64);
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let (before, after) = rest.split_at(open);
        text.push_str(before);
        let after = &after[2..];
        let token = after
            .find("}}")
            .and_then(|close| parse_token(&after[..close]).map(|t| (t, close)));
        match token {
            Some(((filler, alpha, pem, n), close)) => {
                if pem {
                    for i in 0..n {
                        if i > 0 {
                            text.push('\n');
                        }
                        let line = random_string(rng, alpha, 64);
                        text.push_str(&line);
                        if !filler {
                            parts.push(line);
                        }
                    }
                } else {
                    let s = random_string(rng, alpha, n);
                    text.push_str(&s);
                    if !filler {
                        parts.push(s);
                    }
                }
                rest = &after[close + 2..];
            }
            None => {
                text.push_str("{{");
                rest = after;
            }
        }
    }
    text.push_str(rest);
    Rendered {
        text,
        secret_parts: parts,
    }
}

/// A file format a [`Sample::Assign`] can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// `.env`: `NAME=value`.
    Env,
    /// YAML: `name: "value"`, block scalars for multi-line values.
    Yaml,
    /// JSON: `"name": "value"`, multi-line values escaped.
    Json,
    /// Python: `NAME = "value"`, triple quotes for multi-line values.
    Python,
    /// JavaScript: `const name = "value";`, template literals for multi-line values.
    JavaScript,
    /// HCL/Terraform: `name = "value"`, heredocs for multi-line values.
    Hcl,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 6] = [
        Format::Env,
        Format::Yaml,
        Format::Json,
        Format::Python,
        Format::JavaScript,
        Format::Hcl,
    ];

    /// A typical file name.
    pub fn file_name(self) -> &'static str {
        match self {
            Format::Env => ".env",
            Format::Yaml => "config/settings.yaml",
            Format::Json => "config/settings.json",
            Format::Python => "app/settings.py",
            Format::JavaScript => "src/config.js",
            Format::Hcl => "infra/main.tf",
        }
    }
}

/// How to put a random instance of a rule's secret into a realistic file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sample {
    /// An assignment `name = value`, in any of `formats`.
    Assign {
        /// snake_case name (`aws_access_key_id`); upper-cased for .env and Python,
        /// camelCased for JavaScript.
        name: String,
        /// Value template.
        value: String,
        /// Formats it can be written in.
        formats: Vec<Format>,
    },
    /// A whole file of its own format (`.npmrc`, a Kubernetes manifest...).
    File {
        /// File name.
        file_name: String,
        /// File template.
        template: String,
    },
}

fn upper_snake(name: &str) -> String {
    name.to_ascii_uppercase()
}

fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut up = false;
    for c in name.chars() {
        if c == '_' || c == '-' {
            up = true;
        } else if up {
            out.push(c.to_ascii_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn json_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out
}

/// One assignment of `value` to `name` in `format` (no trailing newline). For JSON this is
/// a member (`"name": "value"`), to be placed inside an object.
pub fn assignment(format: Format, name: &str, value: &str) -> String {
    let multi = value.contains('\n');
    match format {
        Format::Env => {
            if multi || value.contains(' ') {
                format!("{}=\"{}\"", upper_snake(name), value)
            } else {
                format!("{}={}", upper_snake(name), value)
            }
        }
        Format::Yaml => {
            if multi {
                let body: Vec<String> = value.lines().map(|l| format!("  {l}")).collect();
                format!("{name}: |\n{}", body.join("\n"))
            } else {
                format!(
                    "{name}: \"{}\"",
                    value.replace('\\', "\\\\").replace('"', "\\\"")
                )
            }
        }
        Format::Json => format!("\"{}\": \"{}\"", camel(name), json_escape(value)),
        Format::Python => {
            if multi {
                format!("{} = \"\"\"{}\"\"\"", upper_snake(name), value)
            } else {
                format!("{} = \"{}\"", upper_snake(name), value)
            }
        }
        Format::JavaScript => {
            if multi {
                format!("const {} = `{}`;", camel(name), value)
            } else {
                format!("const {} = \"{}\";", camel(name), value)
            }
        }
        Format::Hcl => {
            if multi {
                format!("{name} = <<EOT\n{value}\nEOT")
            } else {
                format!("{name} = \"{value}\"")
            }
        }
    }
}

/// Benign lines that look a bit like secrets (digests, UUIDs, versions, URLs) in the
/// given format: none of them may be reported.
fn filler(format: Format, rng: &mut Rng) -> Vec<(String, String)> {
    let sha256 = render("{{~h:64}}", rng).text;
    let sha1 = render("{{~h:40}}", rng).text;
    let uuid = render("{{~h:8}}-{{~h:4}}-4{{~h:3}}-a{{~h:3}}-{{~h:12}}", rng).text;
    let port = 1024 + rng.below(50_000);
    let mut v = vec![
        ("service_name".to_string(), "billing-api".to_string()),
        ("log_level".to_string(), "info".to_string()),
        ("listen_port".to_string(), port.to_string()),
        (
            "image".to_string(),
            format!("registry.internal/billing-api@sha256:{sha256}"),
        ),
        ("build_commit".to_string(), sha1),
        ("request_id".to_string(), uuid),
        (
            "homepage".to_string(),
            "https://docs.example.com/billing/getting-started".to_string(),
        ),
        ("timeout_seconds".to_string(), "30".to_string()),
    ];
    if format == Format::Hcl {
        v.push(("region".to_string(), "eu-west-1".to_string()));
    }
    v
}

/// A realistic file of `format` holding the given `(name, value)` assignments between
/// benign filler lines. Returns the text and, for each assignment, the byte range of its
/// text in the file.
pub fn realistic_file(
    format: Format,
    assignments: &[(String, String)],
    rng: &mut Rng,
) -> (String, Vec<std::ops::Range<usize>>) {
    let fill = filler(format, rng);
    let mut out = String::new();
    let mut ranges = Vec::new();
    let (head, sep, indent, tail) = match format {
        Format::Env => ("# billing service environment\n", "\n", "", ""),
        Format::Yaml => ("# billing service settings\nversion: 2\n", "\n", "", ""),
        Format::Json => ("{\n", ",\n", "  ", "\n}\n"),
        Format::Python => (
            "\"\"\"Settings for the billing service.\"\"\"\nimport os\n\nDEBUG = False\n",
            "\n",
            "",
            "\n\ndef database_name():\n    return os.environ.get(\"DB_NAME\", \"billing\")\n",
        ),
        Format::JavaScript => (
            "'use strict';\n// settings for the billing service\n",
            "\n",
            "",
            "\nmodule.exports = { region: 'eu-west-1' };\n",
        ),
        Format::Hcl => (
            "terraform {\n  required_version = \">= 1.5\"\n}\n\nlocals {\n  owner = \"billing\"\n}\n\n",
            "\n",
            "",
            "",
        ),
    };
    out.push_str(head);
    let mut first = true;
    let mut emit = |out: &mut String, text: &str| -> std::ops::Range<usize> {
        if !first {
            out.push_str(sep);
        }
        first = false;
        out.push_str(indent);
        let start = out.len();
        out.push_str(text);
        start..out.len()
    };
    let mut fill_iter = fill.iter();
    for (name, value) in assignments {
        if let Some((n, v)) = fill_iter.next() {
            emit(&mut out, &assignment(format, n, v));
        }
        let r = emit(&mut out, &assignment(format, name, value));
        ranges.push(r);
    }
    for (n, v) in fill_iter {
        emit(&mut out, &assignment(format, n, v));
    }
    if format != Format::Json {
        out.push('\n');
    }
    out.push_str(tail);
    (out, ranges)
}

/// `count` texts of `len` bytes drawn from `alphabet` (seeded), for tests that hold a faster
/// walk to the simpler one it replaced.
#[cfg(test)]
pub(crate) fn random_texts(seed: u64, count: usize, len: usize, alphabet: &[u8]) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|_| {
            (0..len)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect()
        })
        .collect()
}

/// This crate's own files (sources, rules, test data), as real text for tests that hold a
/// faster walk to the simpler one it replaced.
#[cfg(test)]
pub(crate) fn own_files() -> Vec<Vec<u8>> {
    fn walk(dir: &std::path::Path, out: &mut Vec<Vec<u8>>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push(bytes);
            }
        }
    }
    let mut out = Vec::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    walk(&root.join("src"), &mut out);
    walk(&root.join("tests"), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_is_deterministic_and_reports_secret_parts() {
        let t = "key={{a:20}} user={{~L:6}} {{ .Values.x }}";
        let a = render(t, &mut Rng::new(7));
        let b = render(t, &mut Rng::new(7));
        assert_eq!(a, b);
        assert_eq!(a.secret_parts.len(), 1);
        assert_eq!(a.secret_parts[0].len(), 20);
        assert!(a.text.ends_with("{{ .Values.x }}"));
    }

    #[test]
    fn pem_parts_are_lines() {
        let r = render("{{pem:3}}", &mut Rng::new(1));
        assert_eq!(r.text.lines().count(), 3);
        assert_eq!(r.secret_parts.len(), 3);
    }

    #[test]
    fn realistic_json_is_valid_json() {
        let (text, ranges) = realistic_file(
            Format::Json,
            &[("api_token".into(), "line1\nline2\"q".into())],
            &mut Rng::new(3),
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["apiToken"], "line1\nline2\"q");
        assert_eq!(ranges.len(), 1);
    }
}
