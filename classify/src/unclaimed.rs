//! The unclaimed-configuration fallback (round ten): a path no name, content or tree rule
//! claimed (`other.unmatched`) that looks like configuration goes to a human, unless a harmless
//! class owns it. Ten rounds of rules naming tools and files fixed the sets they were written
//! from, but every new set brought new names and recall on unseen repositories stayed at
//! 93-95 %; the risky paths each round missed were mostly configuration no rule had named yet
//! (`docs/CLASSIFY.md`, "Risk follows what runs", 18). So the last resort is read from the
//! shape of the path, not its name:
//!
//! - **Configuration-like**: a settings extension (`toml`, `ini`, `cfg`, `conf`, `yaml`,
//!   `json`, `xml`, `plist`, `properties`, `config`, `env`, …; under a template suffix too:
//!   `config.toml.in`, `x.conf.j2`, and `*.template`/`*.tmpl`), a dotfile or a file inside a
//!   dot-directory, an rc name (`zshrc.symlink`, `gemrc`), the executable bit, trust material
//!   (`*.crt`, `*.pem`, `*.jks`), or an extension-less upper-case name (`VERSION`,
//!   `COMMITMENT`); source by extension or shebang alone inside a dot-directory
//!   (`.phan/config.php`) is read the same way.
//! - **Owned by a harmless class** (the fallback does not apply): a file under a source
//!   directory (`src/`, `lib/`, `res/`, `resources/`, `pkg/`, `internal/`: the product's own
//!   resources), under a directory a site serves or a locale directory (`public/`, `static/`,
//!   `assets/`, `locales/`, `.well-known/`), or under a directory whose name says test input or
//!   an example (`…test…`, `…fixture…`, `…example…`, `…sample…`, `…demo…`,
//!   `…mock…`, `…snapshot…`). A `templates/` directory is not owned: Helm, Ansible and
//!   service templates there deploy (a generator template is `other.generator-template`
//!   before this layer).
//! - **Data-only content** (`other.data-config`): settings whose content after the change
//!   names no plugin, hook, command, script, path or program (the reader of data-only
//!   dotfiles, `settings.rs`); XML, property lists and trust material are never data (an
//!   element can name a build step or an installer script). An upper-case file holding prose
//!   stays `other` (an `INSTALL`, a `TODO`), or is `governance.legal-text` when its first lines
//!   speak of licences, copyright or patents. An executable file is never data.
//!   Without the content (a deleted file) the fallback applies: fail closed.
//!
//! Guards against: a risky configuration under a name no rule knows (a new tool's
//! `.mise/config.toml`, a `deployment/…/app.xml` a platform reads, a root `VERSION` a release
//! reads). Cost: a data-only reader per unmatched configuration-like path (the content layer's
//! head, line by line). Does not check: configuration under a source directory or with a name
//! that no feature above describes (an extension-less lowercase file below the root).

use crate::{normalize_path, settings, Bucket, Classification};

/// Rule id of a configuration-like path no rule claimed.
pub const UNCLAIMED_RULE: &str = "build.unclaimed-config";

/// Rule id of the same path when its content is data only.
pub(crate) const DATA_CONFIG_RULE: &str = "other.data-config";

/// Rule id of an upper-case root file whose prose speaks of licences, copyright or patents.
pub(crate) const LEGAL_TEXT_RULE: &str = "governance.legal-text";

/// The rules of this module, with what each matches (for the documentation test).
pub(crate) const RULES: &[(&str, &str)] = &[
    (UNCLAIMED_RULE, "After every other layer, a path no rule claimed (`other.unmatched`), or source by extension or shebang alone inside a dot-directory, that looks like configuration: a settings extension (`toml`, `ini`, `cfg`, `conf`, `yaml`, `json`, `xml`, `plist`, `properties`, `config`, `env`, `template`, …, behind a template suffix too), trust material (`crt`, `pem`, `jks`, …), a dotfile or a file in a dot-directory, an rc name, the executable bit, or an extension-less upper-case name whose content is no prose; not under a source, served, locale, test or example directory; raised by the tree layer like `other`"),
    (DATA_CONFIG_RULE, "The same path when its content after the change is data only (settings naming no plugin, hook, command, script, path or program); never XML (a web feed or a sitemap excepted: `<rss>`, `<feed>`, `<urlset>`, `<sitemapindex>`), property lists, trust material or an executable"),
    (LEGAL_TEXT_RULE, "An extension-less upper-case file whose first lines speak of licences, copyright or patents (`COMMITMENT`, `PATENTS`)"),
];

/// Extensions of settings files.
const SETTINGS_EXTENSIONS: &[&str] = &[
    "toml",
    "ini",
    "cfg",
    "conf",
    "cnf",
    "yaml",
    "yml",
    "json",
    "json5",
    "jsonc",
    "hujson",
    "xml",
    "plist",
    "properties",
    "config",
    "env",
    "template",
    "tmpl",
];

/// Trust material: certificates and key stores a client or a build trusts (settings too, and
/// never read as data).
const TRUST_MATERIAL: &[&str] = &[
    "crt",
    "cer",
    "pem",
    "p12",
    "pfx",
    "jks",
    "keystore",
    "truststore",
];

/// Settings extensions whose content is never read as data, besides [`TRUST_MATERIAL`].
const NEVER_DATA: &[&str] = &["xml", "plist"];

/// Suffixes of templates and distributed defaults, behind which the real extension sits
/// (`config.toml.in`, `phpdoc.dist.xml` is read as `xml` already).
const TEMPLATE_SUFFIXES: &[&str] = &["in", "tpl", "j2", "jinja", "jinja2", "erb", "dist"];

/// Directories whose files belong to the product (its resources) or are served as they are.
const OWNED_DIRS: &[&str] = &[
    "src",
    "source",
    "sources",
    "lib",
    "libs",
    "res",
    "resources",
    "pkg",
    "internal",
    "public",
    "static",
    "www",
    "wwwroot",
    "assets",
    "locale",
    "locales",
    "i18n",
    "l10n",
    "translations",
    ".well-known",
];

/// Parts of directory names that say test input, example or template.
const OWNED_DIR_PARTS: &[&str] = &[
    "test", "fixture", "example", "sample", "demo", "mock", "snapshot",
];

/// Words of prose that make an upper-case root file a legal text.
const LEGAL_WORDS: &[&str] = &["licen", "copyright", "patent", "warrant"];

/// Root elements of the documents a site publishes for readers and crawlers: web feeds and
/// sitemaps (`<rss>`, `<feed>`, `<urlset>`, `<sitemapindex>`).
const PUBLISHED_ROOTS: &[&str] = &["rss", "feed", "urlset", "sitemapindex"];

/// Whether `head` is an XML document whose root element is a web feed or a sitemap: content a
/// site publishes, which no tool loads as configuration (round twelve: `feed.xml`, a
/// `sitemap.xml` and their templates). Other XML is never read as data here.
fn published_document(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut rest = text.trim_start();
    // Skip the declaration, comments and a doctype before the root element.
    while let Some(after) = rest.strip_prefix("<?").or_else(|| rest.strip_prefix("<!")) {
        let Some(end) = after.find('>') else {
            return false;
        };
        rest = after[end + 1..].trim_start();
    }
    let Some(tag) = rest.strip_prefix('<') else {
        return false;
    };
    let name: String = tag
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    PUBLISHED_ROOTS.contains(&name.to_ascii_lowercase().as_str())
}

/// Whether `rule` is one of this module's (the fallback decided the path).
pub(crate) fn decided(rule: &str) -> bool {
    RULES.iter().any(|(id, _)| *id == rule)
}

/// Whether the fallback reads a path the other layers classified as `rule`: nothing claimed it
/// (`other.unmatched`), or it is source by its extension or shebang alone inside a
/// dot-directory (`.phan/config.php`: a tool's directory holds the tool's configuration,
/// whatever language it is written in).
pub(crate) fn reads(rule: &str, path: &str) -> bool {
    rule == crate::table::OTHER_RULE
        || (matches!(rule, "src.code" | "src.shebang")
            && normalize_path(path)
                .rsplit_once('/')
                .is_some_and(|(d, _)| d.split('/').any(|c| c.starts_with('.'))))
}

/// The fallback for a path no rule claimed: `Some` when it is configuration-like and no
/// harmless class owns it (`head`: the content after the change, `None` when unknown).
pub(crate) fn fallback(
    path: &str,
    head: Option<&[u8]>,
    executable: bool,
) -> Option<Classification> {
    let norm = normalize_path(path);
    let (dirs, name) = match norm.rsplit_once('/') {
        Some((d, n)) => (Some(d), n),
        None => (None, norm.as_str()),
    };
    let owned = dirs.is_some_and(|d| {
        d.split('/').any(|c| {
            let c = c.to_ascii_lowercase();
            OWNED_DIRS.contains(&c.as_str()) || OWNED_DIR_PARTS.iter().any(|p| c.contains(p))
        })
    });
    if owned || name.is_empty() {
        return None;
    }
    let upper = name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if upper {
        return upper_case_file(head);
    }
    let lower = name.to_ascii_lowercase();
    let ext = settings_extension(&lower);
    let dotted =
        lower.starts_with('.') || dirs.is_some_and(|d| d.split('/').any(|c| c.starts_with('.')));
    let stem = lower
        .trim_start_matches('.')
        .split('.')
        .next()
        .unwrap_or("");
    let rc = stem.len() > 2 && stem.ends_with("rc");
    if !(ext.is_some() || dotted || rc || executable) {
        return None;
    }
    // XML and property lists have no reader of their own here: an element can name anything
    // (a build step, an installer script), so they are never read as data; nor is trust
    // material (a certificate's base64 reads like a list of tokens).
    let data = !executable
        && !ext.is_some_and(|e| TRUST_MATERIAL.contains(&e))
        && (head.is_some_and(published_document)
            || !ext.is_some_and(|e| NEVER_DATA.contains(&e))
                && head.is_some_and(|h| settings::data_only_dotfile(&lower, h)));
    Some(if data {
        class(Bucket::Other, DATA_CONFIG_RULE)
    } else {
        class(Bucket::Build, UNCLAIMED_RULE)
    })
}

/// The settings extension of a lower-case file name, behind a template suffix too.
fn settings_extension(name: &str) -> Option<&'static str> {
    let mut parts = name.trim_start_matches('.').rsplit('.');
    let last = parts.next()?;
    let ext = if TEMPLATE_SUFFIXES.contains(&last) {
        parts.next()?
    } else {
        last
    };
    if !name.trim_start_matches('.').contains('.') {
        return None;
    }
    (SETTINGS_EXTENSIONS.iter().chain(TRUST_MATERIAL))
        .find(|e| **e == ext)
        .copied()
}

/// An extension-less upper-case file: prose stays `other` (or is a legal text when its first
/// lines speak of licences, copyright or patents), anything else (a version, a token,
/// settings, nothing known) is configuration.
fn upper_case_file(head: Option<&[u8]>) -> Option<Classification> {
    let text = head.map(String::from_utf8_lossy);
    let words = text.as_deref().map_or(0, |t| {
        t.split_whitespace()
            .filter(|w| w.chars().any(|c| c.is_alphabetic()))
            .count()
    });
    if words < 12 {
        return Some(class(Bucket::Build, UNCLAIMED_RULE));
    }
    let opening: String = text
        .unwrap_or_default()
        .lines()
        .take(6)
        .collect::<Vec<_>>()
        .join(" ");
    let lower = opening.to_lowercase();
    LEGAL_WORDS
        .iter()
        .any(|w| lower.contains(w))
        .then(|| class(Bucket::Governance, LEGAL_TEXT_RULE))
}

fn class(bucket: Bucket, rule: &'static str) -> Classification {
    Classification { bucket, rule }
}

#[cfg(test)]
#[path = "unclaimed_tests.rs"]
mod tests;
