//! The content layer of classification: what a file *is*, whatever its name. Kubernetes
//! objects, CloudFormation/SAM templates, Terraform/HCL blocks, Ansible plays, Compose files,
//! Dockerfiles, systemd units, Groovy pipelines, Starlark, code-generation directives, and
//! scripts (shebang or executable bit) kept in a tooling directory.
//!
//! Guards against: a risky file hidden under a name no path rule knows (`src/app.yaml` holding a
//! `Deployment`, `ops/stack.json` holding `AWS::IAM::Role`), and hostile content: only the first
//! [`HEAD_MAX_BYTES`] are looked at, line by line, with no allocation proportional to the input
//! beyond that window and no recursion (nothing is parsed into a tree, so no billion-laughs,
//! deep nesting or huge-number attacks apply); invalid UTF-8 is read as bytes; nothing panics.
//! On return: at most one [`Hit`], a riskier bucket than `other`/`src` with its rule id.
//! Does not check: whether the object would deploy (a manifest nobody applies is still `iac`);
//! which bucket the name gave: the caller only lets content raise `src` and `other`.

use super::Bucket;

/// Bytes of a file's start that content tests read; the rest is ignored.
pub const HEAD_MAX_BYTES: usize = 64 * 1024;

/// What the content layer says about a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit {
    /// The bucket the content puts the file in.
    pub bucket: Bucket,
    /// Stable rule id (listed in `docs/CLASSIFY.md`).
    pub rule: &'static str,
}

/// Rule ids of the content layer, with what each detects (for the documentation test).
#[cfg_attr(
    not(test),
    allow(dead_code, reason = "read by tests and the documentation test")
)]
pub const RULES: &[(&str, &str)] = &[
    ("iac.k8s-content", "YAML/JSON with top-level `apiVersion` and `kind` (any document of a multi-document file)"),
    ("iac.cloudformation-content", "`AWSTemplateFormatVersion`, `Transform: AWS::Serverless`, or top-level `Resources` with an `AWS::` type"),
    ("iac.terraform-content", "HCL blocks at column 0: `resource \"…\"`, `provider \"…\"`, `module \"…\"`, `terraform {`, `data \"…\"`"),
    ("iac.ansible-content", "a YAML list of plays: `- hosts:` (or `- name:` then `hosts:`) with `tasks:`, `roles:` or `import_playbook:`"),
    ("iac.compose-content", "YAML with top-level `services:` and an `image:` or `build:` under it"),
    ("iac.systemd-unit-content", "an INI file with a `[Unit]`, `[Service]`, `[Timer]` or `[Socket]` section and an `Exec…=` key"),
    ("build.dockerfile-content", "Dockerfile syntax: first instruction `FROM` (after `ARG`/comments), then `RUN`, `COPY`, `CMD` or `ENTRYPOINT`"),
    ("ci.groovy-pipeline-content", "Groovy pipelines: `pipeline {`, `node {`, `node(`, `stage(`, `@Library(`"),
    ("build.starlark-content", "Starlark: `load(\"…\")` at column 0 and a rule call or `def`"),
    ("build.codegen-directive", "code-generation directives (`//go:generate`) that `go generate` runs"),
    ("build.tool-settings-code", "settings of a formatter, linter or editor (`other.tool-settings`) with a key that names code to load or run: a plugin, parser, hook, command, `require`, `extends`, `load-plugins`, `init-hook`, …"),
    ("governance.signing-key-content", "a public key: an armoured PGP public key block (`-----BEGIN PGP PUBLIC KEY BLOCK-----`), a PEM public key (`-----BEGIN PUBLIC KEY-----`, cosign's `cosign.pub`), an RFC 4716 SSH or minisign public key, an OpenSSH key line (`ssh-ed25519 AAAA…`): a key builds, releases and users trust, whatever the file is called"),
    ("build.tooling-script", "a script (shebang or executable bit) in a tooling directory: `scripts/`, `script/`, `tools/`, `hack/`, `build/`, `bin/`, `release/`, `dev/`, `utils/`, `misc/`, `contrib/`, `packaging/`, `infra/`, `ops/`"),
];

/// Directory names whose scripts run at build, release or development time.
const TOOLING_DIRS: &[&str] = &[
    "scripts",
    "script",
    "tools",
    "tool",
    "tooling",
    "hack",
    "build",
    "build-aux",
    "bin",
    "release",
    "releasing",
    "dev",
    "devtools",
    "dev-tools",
    "utils",
    "util",
    "misc",
    "contrib",
    "packaging",
    "infra",
    "ops",
    "support",
    "etc",
    "maint",
    "buildscripts",
    "build-scripts",
    "eng",
    "docker",
];

/// Whether `path` has a directory component that is a tooling directory (case-insensitive).
pub fn in_tooling_dir(path: &str) -> bool {
    let mut comps: Vec<&str> = path.split('/').collect();
    comps.pop();
    comps.iter().any(|c| {
        let c = c.to_ascii_lowercase();
        TOOLING_DIRS.contains(&c.as_str())
    })
}

/// Rule id of a script in a tooling directory (`scripts/`, `bin/`, …) found by its shebang or
/// executable bit.
pub const TOOLING_SCRIPT_RULE: &str = "build.tooling-script";

/// How a public key starts: armoured PGP, PEM (`-----BEGIN PUBLIC KEY-----`, what cosign
/// writes to `cosign.pub`), RFC 4716 SSH, minisign, and an OpenSSH key line (`ssh-ed25519
/// AAAA…`, what an `allowed_signers` file holds).
const PUBLIC_KEY_STARTS: &[&[u8]] = &[
    b"-----BEGIN PGP PUBLIC KEY BLOCK-----",
    b"-----BEGIN PUBLIC KEY-----",
    b"-----BEGIN RSA PUBLIC KEY-----",
    b"---- BEGIN SSH2 PUBLIC KEY ----",
    b"untrusted comment: minisign public key",
    b"ssh-ed25519 AAAA",
    b"ssh-rsa AAAA",
    b"ssh-dss AAAA",
    b"ecdsa-sha2-nistp256 AAAA",
    b"ecdsa-sha2-nistp384 AAAA",
    b"ecdsa-sha2-nistp521 AAAA",
    b"sk-ssh-ed25519@openssh.com AAAA",
    b"sk-ecdsa-sha2-nistp256@openssh.com AAAA",
];

/// Whether `head` (leading blank lines skipped) is a public key: what signatures, commits or
/// releases are checked against, whatever the file is called.
fn public_key(head: &[u8]) -> bool {
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let head = &head[start..];
    PUBLIC_KEY_STARTS.iter().any(|k| head.starts_with(k))
}

/// The lowercase extension of the file name, if any.
fn extension(path: &str) -> Option<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let (stem, ext) = name.rsplit_once('.')?;
    (!stem.is_empty()).then(|| ext.to_ascii_lowercase())
}

/// Runs the content tests on `head` (the file's start after the change) for `path`.
/// `executable` is the file's executable bit after the change.
pub fn detect(path: &str, head: &[u8], executable: bool) -> Option<Hit> {
    let head = &head[..head.len().min(HEAD_MAX_BYTES)];
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let ext = extension(path);
    let hit = |bucket, rule| Some(Hit { bucket, rule });
    if public_key(head) {
        return hit(Bucket::Governance, "governance.signing-key-content");
    }
    let data_like = matches!(
        ext.as_deref(),
        None | Some("yaml" | "yml" | "json" | "template" | "tmpl" | "tpl" | "txt" | "cfg" | "conf")
    );
    // A template of a data file (`web.yaml.erb`, `app.json.j2`, `job.yml.tmpl`) is read as the
    // data file it renders to.
    let templated = matches!(
        ext.as_deref(),
        Some("j2" | "jinja" | "jinja2" | "erb" | "gotmpl" | "tmpl" | "tpl" | "template" | "in")
    );
    let rendered = templated
        && matches!(
            extension(path.rsplit_once('.').map_or(path, |(stem, _)| stem)).as_deref(),
            Some("yaml" | "yml" | "json")
        );
    if data_like || ext.as_deref() == Some("j2") || rendered {
        if is_kubernetes(head) {
            return hit(Bucket::Iac, "iac.k8s-content");
        }
        if is_cloudformation(head) {
            return hit(Bucket::Iac, "iac.cloudformation-content");
        }
        if is_ansible_play(head) {
            return hit(Bucket::Iac, "iac.ansible-content");
        }
        if is_compose(head) {
            return hit(Bucket::Iac, "iac.compose-content");
        }
    }
    if matches!(
        ext.as_deref(),
        None | Some("txt" | "conf" | "cfg" | "hcl" | "in")
    ) && is_terraform(head)
    {
        return hit(Bucket::Iac, "iac.terraform-content");
    }
    if matches!(
        ext.as_deref(),
        None | Some("conf" | "in" | "unit" | "cfg" | "service" | "socket" | "timer")
    ) && is_systemd_unit(head)
    {
        return hit(Bucket::Iac, "iac.systemd-unit-content");
    }
    if matches!(
        ext.as_deref(),
        None | Some("in" | "tmpl" | "template" | "txt")
    ) && is_dockerfile(head)
    {
        return hit(Bucket::Build, "build.dockerfile-content");
    }
    if matches!(ext.as_deref(), None | Some("groovy" | "gvy" | "txt")) && is_groovy_pipeline(head) {
        return hit(Bucket::Ci, "ci.groovy-pipeline-content");
    }
    if matches!(ext.as_deref(), None | Some("py" | "sky" | "txt")) && is_starlark(head) {
        return hit(Bucket::Build, "build.starlark-content");
    }
    if ext.as_deref() == Some("go") && has_line_starting(head, b"//go:generate ") {
        return hit(Bucket::Build, "build.codegen-directive");
    }
    if (executable || head.starts_with(b"#!")) && in_tooling_dir(path) {
        return hit(Bucket::Build, TOOLING_SCRIPT_RULE);
    }
    None
}

/// Lines of `text`, `\r` stripped.
fn lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    text.split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
}

/// A line that starts (column 0) with `key` followed by `:`, i.e. a top-level YAML key.
fn top_level_key(line: &[u8], key: &[u8]) -> bool {
    line.strip_prefix(key)
        .is_some_and(|rest| rest.first() == Some(&b':'))
}

fn has_line_starting(text: &[u8], prefix: &[u8]) -> bool {
    lines(text).any(|l| l.starts_with(prefix))
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Top-level `apiVersion` and `kind` in one YAML document, or both as JSON keys.
fn is_kubernetes(head: &[u8]) -> bool {
    let (mut api, mut kind) = (false, false);
    for line in lines(head) {
        if line.starts_with(b"---") {
            (api, kind) = (false, false);
            continue;
        }
        api |= top_level_key(line, b"apiVersion");
        kind |= top_level_key(line, b"kind");
        if api && kind {
            return true;
        }
    }
    contains(head, b"\"apiVersion\"") && contains(head, b"\"kind\"")
}

fn is_cloudformation(head: &[u8]) -> bool {
    contains(head, b"AWSTemplateFormatVersion")
        || contains(head, b"AWS::Serverless-")
        || ((lines(head).any(|l| top_level_key(l, b"Resources"))
            || contains(head, b"\"Resources\""))
            && (contains(head, b"Type: AWS::")
                || contains(head, b"Type: 'AWS::")
                || contains(head, b"Type: \"AWS::")
                || contains(head, b"\"Type\": \"AWS::")
                || contains(head, b"\"Type\":\"AWS::")))
}

fn is_terraform(head: &[u8]) -> bool {
    lines(head).any(|l| {
        [
            &b"resource \""[..],
            b"provider \"",
            b"module \"",
            b"data \"",
            b"variable \"",
            b"output \"",
        ]
        .iter()
        .any(|p| l.starts_with(p) && l.trim_ascii_end().ends_with(b"{"))
            || l.trim_ascii_end() == b"terraform {"
    })
}

fn is_ansible_play(head: &[u8]) -> bool {
    let mut hosts = false;
    let mut body = false;
    for line in lines(head) {
        let t = line.trim_ascii_start();
        let indent = line.len() - t.len();
        if indent > 4 {
            continue;
        }
        let t = t.strip_prefix(b"- ").unwrap_or(t);
        hosts |= top_level_key(t, b"hosts");
        body |= top_level_key(t, b"tasks")
            || top_level_key(t, b"roles")
            || top_level_key(t, b"import_playbook")
            || top_level_key(t, b"pre_tasks");
    }
    hosts && body
}

fn is_compose(head: &[u8]) -> bool {
    let mut in_services = false;
    for line in lines(head) {
        if top_level_key(line, b"services") {
            in_services = true;
            continue;
        }
        if line
            .first()
            .is_some_and(|b| !b.is_ascii_whitespace() && *b != b'#')
        {
            in_services = false;
        }
        let t = line.trim_ascii_start();
        if in_services && (top_level_key(t, b"image") || top_level_key(t, b"build")) {
            return true;
        }
    }
    false
}

fn is_systemd_unit(head: &[u8]) -> bool {
    let section = lines(head).any(|l| {
        matches!(
            l.trim_ascii(),
            b"[Unit]" | b"[Service]" | b"[Timer]" | b"[Socket]" | b"[Install]"
        )
    });
    section
        && lines(head).any(|l| {
            [
                &b"ExecStart"[..],
                b"ExecStartPre",
                b"ExecStop",
                b"ExecReload",
                b"ExecStartPost",
            ]
            .iter()
            .any(|k| l.starts_with(k))
        })
}

fn is_dockerfile(head: &[u8]) -> bool {
    let mut saw_from = false;
    for line in lines(head) {
        let t = line.trim_ascii();
        if t.is_empty() || t.starts_with(b"#") {
            continue;
        }
        let word: Vec<u8> = t
            .split(|b| b.is_ascii_whitespace())
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        match (saw_from, word.as_slice()) {
            (false, b"FROM") => saw_from = true,
            (false, b"ARG") => {}
            (false, _) => return false,
            (true, b"RUN" | b"COPY" | b"ADD" | b"CMD" | b"ENTRYPOINT") => return true,
            (true, _) => {}
        }
    }
    false
}

fn is_groovy_pipeline(head: &[u8]) -> bool {
    lines(head).any(|l| {
        let t = l.trim_ascii();
        t.starts_with(b"pipeline {")
            || t.starts_with(b"node {")
            || t.starts_with(b"node(")
            || t.starts_with(b"stage(")
            || t.starts_with(b"@Library(")
    })
}

fn is_starlark(head: &[u8]) -> bool {
    let load = has_line_starting(head, b"load(\"") || has_line_starting(head, b"load('");
    load && lines(head).any(|l| {
        l.starts_with(b"def ")
            || (l.first().is_some_and(u8::is_ascii_lowercase)
                && l.iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                    .count()
                    > 1
                && l.trim_ascii_end().ends_with(b"("))
    })
}

/// Whether the content layer may move a path out of `bucket`: only `src` and `other` (a name
/// that decided a riskier bucket, or `tests`/`docs`, keeps it; see [`crate::classify_change`]).
pub(crate) fn may_raise(bucket: Bucket) -> bool {
    matches!(bucket, Bucket::Src | Bucket::Other)
}

#[cfg(test)]
#[path = "content_tests.rs"]
mod tests;
