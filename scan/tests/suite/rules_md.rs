use super::common::scanner;
use airlock_scan::Span;

const ALLOWLISTS: &str = r#"
## Every byte: forms, decoding, split literals

`Scanner::scan_content` (which `scan`, `airlock pack`, its rescan of the bundle, `airlock
scan` and the gate call) decides what a file is, then scans all of it:

- **Text** is scanned as it is, then twice more, one level deep: every base64 run (standard or
  URL-safe, at least 24 characters, mixed case) that decodes to mostly printable text, and
  every run of URL characters holding a `%XX` escape, is decoded and scanned with the line's
  text before it (so `password: <base64>` is still a password); and adjacent string literals
  are joined as the language would (`+`, `.`, `,` inside `concat!(...)` or `[...].join('')`,
  implicit concatenation, backslash-newline inside quotes) and scanned with the line's text
  before the first one. A finding there is reported at the encoded or joined bytes, so
  redaction removes the whole value. Found: a Kubernetes `Secret`'s `data:`, a Docker `auth`,
  a keystore as one base64 line, a token assembled from pieces. Left alone: base64 that
  decodes to noise (identifiers, paths, digests), certificates, public keys, prose split over
  literals.
- **Structures** (in a file's raw bytes or a decoded base64 value):
  `keystore-pkcs12` (DER PFX, version 3), `keystore-jks` (JKS `FEEDFEED` / JCEKS `CECECECE`),
  `private-key-der` (PKCS#8, PKCS#1 RSA, SEC1 EC: a SEQUENCE opening with a small version
  integer). Left alone: certificates and public keys (a SEQUENCE opening with a SEQUENCE).
- **UTF-16** text (a byte-order mark, or every other byte NUL) is decoded and scanned as text.
- **Binary** files are scanned by their printable runs, as `strings` reads them: ASCII (tabs
  and line breaks included, so a PEM block stays one run) and UTF-16LE, at least 8
  characters each. That covers text hidden in JPEG/PNG/EXIF comments, SQLite pages, PDF
  streams that are not compressed, caches and resources.
- **Archives** (zip, jar, whl, gzip/tgz, bzip2, xz, zstd, 7z, tar) are scanned like binaries
  by `airlock scan`, and **never packed**: `airlock pack` leaves them out with a manifest entry
  (`omitted`, rule `pack.archive`). Why: a compressed member can only be scanned by
  decompressing it, one level leaves nested archives and encrypted members unscanned, and
  a finding inside could not be redacted without rewriting the archive; a generator rarely
  needs an archive's contents. Unpack what the job needs into the tree instead.
- A finding in a file that cannot be redacted in place (binary, UTF-16) refuses the pack;
  with `--redact` the file is left out and the manifest's `omitted` records its path, the
  rule id and the fingerprint, never the value.

The evaluation corpus (`src/eval/`, fixed seed) places a secret of every rule's format and
of the key and keystore formats in each context above and adds look-alikes of twelve
families; `tests/suite/eval.rs` prints recall and false positives per context and fails
under 99% recall or over 1% false positives.

## Allowlists

- Global, always on: placeholders (`${VAR}`, `{{ x }}`, `<your-token>`, `changeme`, `xxxx…`,
  `****`, `your_api_key_here`, documented `…EXAMPLE…` values, one repeated character), known
  public values (lockfile integrity hashes `sha512-…`, SSH public key blobs), the jwt.io example
  token, and `[REDACTED:<rule>]` markers (never reported, whatever the rule).
- Public keys and certificates (`BEGIN PUBLIC KEY`, `BEGIN CERTIFICATE`) match no rule.
- Generic rules also skip hex digests and UUIDs under non-credential names, word-like values
  (`user_profile_12345`), member accesses (`config.api_key`) and names that hold ids, URLs,
  paths, hashes or public keys.
- An `airlock:allow` comment on a finding's line suppresses it (callers can turn this off).
- Path globs in the config's `[allowlist]` skip whole files (reported as skipped).

## Configuration

- airlock TOML (`Scanner::from_config_toml`, format in `src/config.rs`): `[scan]`
  (`use_default_rules`, `disabled_rules`, `max_file_bytes`, `inline_allow`), `[allowlist]`
  (`paths` globs, `path_regexes`, `regexes` + `regex_target`, `stopwords`, `condition`) and
  `[[rules]]` (`id`, `description`, `regex`, `keywords`, `secret_group`, `entropy`, `paths`,
  `path_regex`, `context`, `scope`, `fallback`, `tags`, `examples`, `false_positives`,
  `[[rules.allowlists]]`). Unknown fields are errors; each rule's examples are checked when
  the config loads.
- gitleaks v8 TOML (`Scanner::from_gitleaks_toml`): `[[rules]]` `id`, `description`, `regex`,
  `secretGroup`, `entropy`, `path`, `keywords`, `tags`, `[rules.allowlist]`,
  `[[rules.allowlists]]`; `[allowlist]` / `[[allowlists]]` (`targetRules`) with `regexes`,
  `regexTarget`, `stopwords`, `paths`, `condition`; `[extend] useDefault` (airlock's rules
  stand in for gitleaks' defaults) and `disabledRules`. Anything else (`commits`,
  `[extend] path`, `skipReport`, `[[rules.required]]`, unknown keys) is returned as a warning
  naming the field. A regex the Rust engine cannot compile is an error naming the rule.
"#;

fn render_rules_md() -> String {
    let s = scanner();
    let mut out = String::new();
    out.push_str("# Secret scanner rules\n\n");
    out.push_str(
        "Built-in detectors of `airlock-scan`, in priority order: when two rules report the same\n\
         bytes, the earlier one is kept; the two `generic-*` rules are fallbacks, reported only where\n\
         no other rule matched. Keywords are matched case-insensitively and gate the regex: a file\n\
         (or line) without a keyword is never searched by that rule. Every rule carries true- and\n\
         false-positive examples that `cargo test -p airlock-scan` checks, and a sample that the\n\
         generated corpus test embeds in realistic files.\n\n",
    );
    out.push_str(&format!(
        "{} rules. Generated from the code by `tests/suite/rules_md.rs`",
        s.rules().len()
    ));
    out.push_str(" (`AIRLOCK_UPDATE_RULES_MD=1 cargo test -p airlock-scan rules_md`).\n\n");
    out.push_str("| id | finds | keywords | scope |\n|---|---|---|---|\n");
    for r in s.rules() {
        let kw: Vec<String> = r
            .keywords
            .iter()
            .map(|k| format!("`{}`", k.replace('|', "\\|")))
            .collect();
        let scope = match r.span {
            Span::Line => "line",
            Span::Block => "block",
            Span::File => "file",
        };
        let mut finds = r.description.replace('|', "\\|");
        if let Some(e) = r.entropy {
            finds.push_str(&format!(" (entropy ≥ {e})"));
        }
        if r.fallback {
            finds.push_str(" (fallback)");
        }
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            r.id,
            finds,
            kw.join(" "),
            scope
        ));
    }
    out.push_str(ALLOWLISTS);
    out
}

#[test]
fn rules_md_is_up_to_date() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("RULES.md");
    let want = render_rules_md();
    if std::env::var_os("AIRLOCK_UPDATE_RULES_MD").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "scan/RULES.md is stale: run AIRLOCK_UPDATE_RULES_MD=1 cargo test -p airlock-scan rules_md"
    );
}
