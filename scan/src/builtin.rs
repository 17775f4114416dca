//! The built-in rule set and the built-in global allowlist.
//!
//! Rules are listed in priority order: when two rules report the same bytes, the earlier
//! one is kept, and fallback rules (the generic assignments, last) yield to any other.
//! Examples are templates (see [`crate::testgen`]) so that this file holds no string that
//! looks like a live credential.
//!
//! Regex conventions: ASCII classes (`\w`, `\b` as in RE2); secrets in capture group 1 (or
//! the whole match for key blocks); every keyword of a `Line`/`Block` rule occurs inside
//! the text its regex matches (tests check every example with and without the prefilter).

use crate::rule::{Allowlist, Check, Rule, RuleSource, Span, Target};
use crate::testgen::{Format, Sample};

/// A line separator inside a key block: a real newline, or `\n` escaped in a JSON/ENV
/// string.
macro_rules! sep {
    () => {
        r"(?:\r?\n|\\r\\n|\\n)"
    };
}

/// A PEM-style armored block, header to footer: optional `Name: value` headers (PEM
/// `Proc-Type`/`DEK-Info`, PGP `Version`/`Comment`), an optional blank line, a first body
/// line of 16+ base64 characters, more base64 lines, then the footer (optional, so a
/// truncated key is still caught). Lines may be indented (YAML block scalars) and
/// separated by escaped `\n` (JSON strings).
macro_rules! armored {
    ($label:literal) => {
        concat!(
            "-----BEGIN ",
            $label,
            "-----",
            "(?:",
            sep!(),
            r"[ \t]*[A-Za-z][A-Za-z0-9-]*:[ \t]*[^\r\n\\]*)*",
            "(?:",
            sep!(),
            r"[ \t]*)?",
            sep!(),
            r"[ \t]*[A-Za-z0-9+/=]{16,}[ \t]*",
            "(?:",
            sep!(),
            r"[ \t]*[A-Za-z0-9+/=]+[ \t]*)*",
            "(?:",
            sep!(),
            r"[ \t]*-----END ",
            $label,
            "-----)?"
        )
    };
}

/// `<name>… = <value>` in the usual config and code syntaxes (env, YAML, JSON, Python,
/// JS, Go `:=`, PHP `=>`, HCL), value optionally quoted, captured in group 1 and followed
/// by a quote, separator, whitespace or the end of the file.
macro_rules! assign {
    ($name:literal, $value:literal) => {
        concat!(
            "(?i)",
            $name,
            r#"[\w.\-]{0,40}["']?[ \t]*(?:=|:=|:|=>|\?=)[ \t]*["'`]?("#,
            $value,
            r#")(?:["'`,;&)\]}>\s]|$)"#
        )
    };
}

#[derive(Clone, Copy)]
#[allow(dead_code, reason = "variants are used as the rule set grows")]
enum S {
    None,
    Assign(&'static str, &'static str),
    AssignIn(&'static str, &'static str, &'static [Format]),
    File(&'static str, &'static str),
}

#[derive(Clone, Copy)]
struct Def {
    id: &'static str,
    description: &'static str,
    keywords: &'static [&'static str],
    regex: &'static str,
    entropy: f64,
    span: Span,
    fallback: bool,
    checks: &'static [Check],
    allow: &'static [(Target, &'static str)],
    path: Option<&'static str>,
    context: Option<&'static str>,
    examples: &'static [&'static str],
    false_positives: &'static [&'static str],
    sample: S,
}

const BASE: Def = Def {
    id: "",
    description: "",
    keywords: &[],
    regex: "",
    entropy: 0.0,
    span: Span::Line,
    fallback: false,
    checks: &[],
    allow: &[],
    path: None,
    context: None,
    examples: &[],
    false_positives: &[],
    sample: S::None,
};

static DEFS: &[Def] = &[
    // ---------------------------------------------------------------- private keys
    Def {
        id: "private-key-openssh",
        description: "OpenSSH private key block (header to footer)",
        keywords: &["openssh private key"],
        regex: armored!("OPENSSH PRIVATE KEY"),
        span: Span::Block,
        examples: &[
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA{{b64:40}}\n{{pem:5}}\n{{b64:30}}==\n-----END OPENSSH PRIVATE KEY-----\n",
            "deploy_key: |\n  -----BEGIN OPENSSH PRIVATE KEY-----\n  {{b64:64}}\n  {{b64:64}}\n  -----END OPENSSH PRIVATE KEY-----\nnext: 1\n",
        ],
        false_positives: &[
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{{~b64:43}} deploy@ci\n",
            "grep -q 'BEGIN OPENSSH PRIVATE KEY' \"$file\"\n",
            "-----BEGIN OPENSSH PRIVATE KEY-----\n...\n-----END OPENSSH PRIVATE KEY-----\n",
        ],
        sample: S::Assign(
            "deploy_ssh_key",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA{{b64:40}}\n{{pem:6}}\n-----END OPENSSH PRIVATE KEY-----",
        ),
        ..BASE
    },
    Def {
        id: "private-key-pem-encrypted",
        description: "Encrypted PKCS#8 private key block (header to footer)",
        keywords: &["encrypted private key"],
        regex: armored!("ENCRYPTED PRIVATE KEY"),
        span: Span::Block,
        examples: &[
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI{{b64:16}}\n{{pem:8}}\n-----END ENCRYPTED PRIVATE KEY-----",
            r#"{"key": "-----BEGIN ENCRYPTED PRIVATE KEY-----\n{{b64:64}}\n{{b64:64}}\n-----END ENCRYPTED PRIVATE KEY-----\n"}"#,
        ],
        false_positives: &[
            "openssl pkcs8 -topk8 -in key.pem -out enc.pem  # writes -----BEGIN ENCRYPTED PRIVATE KEY-----\n",
        ],
        sample: S::Assign(
            "signing_key",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\n{{pem:9}}\n{{b64:12}}==\n-----END ENCRYPTED PRIVATE KEY-----",
        ),
        ..BASE
    },
    Def {
        id: "private-key-pgp",
        description: "PGP/GPG private key block (header to footer)",
        keywords: &["pgp private key block"],
        regex: armored!("PGP PRIVATE KEY BLOCK"),
        span: Span::Block,
        examples: &[
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\nComment: release signing key\n\nlQOYBF{{b64:58}}\n{{pem:6}}\n={{b64:4}}\n-----END PGP PRIVATE KEY BLOCK-----\n",
        ],
        false_positives: &[
            "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBF{{~b64:58}}\n{{~pem:4}}\n-----END PGP PUBLIC KEY BLOCK-----\n",
            "-----BEGIN PGP SIGNATURE-----\n\niQIzBAEBCAAdFiEE{{~b64:48}}\n-----END PGP SIGNATURE-----\n",
        ],
        sample: S::Assign(
            "gpg_signing_key",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF{{b64:58}}\n{{pem:5}}\n={{b64:4}}\n-----END PGP PRIVATE KEY BLOCK-----",
        ),
        ..BASE
    },
    Def {
        id: "private-key-putty",
        description: "PuTTY private key file (.ppk), first line to Private-MAC",
        keywords: &["putty-user-key-file"],
        regex: concat!(
            r"PuTTY-User-Key-File-[23]:[ \t]*[^\r\n\\]*",
            "(?:",
            sep!(),
            r"[ \t]*(?:[A-Za-z][A-Za-z0-9-]*:[ \t]*[^\r\n\\]*|[A-Za-z0-9+/=]+))+?",
            sep!(),
            r"[ \t]*Private-MAC:[ \t]*[0-9a-fA-F]{20,}"
        ),
        span: Span::Block,
        examples: &[
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-20240101\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAI{{b64:39}}\n{{b64:12}}\nPrivate-Lines: 1\nAAAAI{{b64:39}}\nPrivate-MAC: {{h:64}}\n",
            "PuTTY-User-Key-File-2: ssh-rsa\r\nEncryption: aes256-cbc\r\nComment: imported-openssh-key\r\nPublic-Lines: 1\r\nAAAAB3NzaC1yc2E{{b64:49}}\r\nPrivate-Lines: 2\r\n{{b64:64}}\r\n{{b64:40}}\r\nPrivate-MAC: {{h:40}}\r\n",
        ],
        false_positives: &[
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n",
            "Convert the key with puttygen; the PuTTY-User-Key-File header names the format.\n",
        ],
        sample: S::Assign(
            "bastion_ppk",
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-20240101\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAI{{b64:39}}\n{{b64:12}}\nPrivate-Lines: 1\nAAAAI{{b64:39}}\nPrivate-MAC: {{h:64}}",
        ),
        ..BASE
    },
    Def {
        id: "private-key-ssh2-encrypted",
        description: "SSH.com (SSH2) encrypted private key block (header to footer)",
        keywords: &["begin ssh2 encrypted private key"],
        regex: concat!(
            r"---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----",
            "(?:",
            sep!(),
            r"[^\r\n]*)+?",
            sep!(),
            r"[ \t]*---- END SSH2 ENCRYPTED PRIVATE KEY ----"
        ),
        span: Span::Block,
        examples: &[
            "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"rsa-key-20240101\"\nP2/56wAAA{{b64:55}}\n{{pem:4}}\n---- END SSH2 ENCRYPTED PRIVATE KEY ----\n",
        ],
        false_positives: &[
            "---- BEGIN SSH2 PUBLIC KEY ----\nComment: \"rsa-key\"\nAAAAB3NzaC1yc2E{{~b64:49}}\n---- END SSH2 PUBLIC KEY ----\n",
        ],
        sample: S::Assign(
            "legacy_ssh2_key",
            "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nP2/56wAAA{{b64:55}}\n{{pem:3}}\n---- END SSH2 ENCRYPTED PRIVATE KEY ----",
        ),
        ..BASE
    },
    Def {
        id: "private-key-age",
        description: "age encryption identity (AGE-SECRET-KEY-1…)",
        keywords: &["age-secret-key-1"],
        regex: r"\b(AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})\b",
        examples: &["# created: 2024-01-01T00:00:00Z\n# public key: age1{{~l:58}}\nAGE-SECRET-KEY-1{{bech:58}}\n"],
        false_positives: &[
            "recipient = \"age1{{~l:58}}\"  # public\n",
            "AGE-SECRET-KEY-1XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX\n",
        ],
        sample: S::Assign("age_identity", "AGE-SECRET-KEY-1{{bech:58}}"),
        ..BASE
    },
    Def {
        id: "private-key-pem-base64",
        description: "Base64-encoded PEM private key (kubeconfig client-key-data, env vars)",
        keywords: &["ls0tls1crudjt"],
        regex: r"(LS0tLS1CRUdJTi[A-Za-z0-9+/]{0,24}?(?:UFJJVkFURSBLRV|BSSVZBVEUgS0VZ|QUklWQVRFIEtFW)[A-Za-z0-9+/]{40,}={0,2})",
        span: Span::Block,
        examples: &[
            "    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo{{b64:200}}=\n",
            "TLS_KEY_B64=LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1JSUV2{{b64:120}}\n",
        ],
        false_positives: &[
            "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM{{~b64:200}}\n",
        ],
        sample: S::Assign(
            "client_key_data",
            "LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCk1IY0NBUUVF{{b64:160}}",
        ),
        ..BASE
    },
    Def {
        id: "private-key-pem",
        description: "PEM private key block: RSA, EC, DSA, PKCS#8, traditional encrypted (header to footer)",
        keywords: &["private key-----"],
        regex: armored!("(?:[A-Z0-9]{2,10} )?PRIVATE KEY"),
        span: Span::Block,
        examples: &[
            "-----BEGIN RSA PRIVATE KEY-----\n{{pem:12}}\n{{b64:24}}==\n-----END RSA PRIVATE KEY-----\n",
            "-----BEGIN EC PRIVATE KEY-----\n{{pem:3}}\n-----END EC PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----\n{{pem:10}}\n-----END PRIVATE KEY-----",
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,{{~H:32}}\n\n{{pem:10}}\n-----END RSA PRIVATE KEY-----\n",
            r#"{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\n{{b64:64}}\n{{b64:64}}\n{{b64:20}}==\n-----END PRIVATE KEY-----\n"}"#,
            "-----BEGIN DSA PRIVATE KEY-----\r\n{{b64:64}}\r\n{{b64:40}}\r\n-----END DSA PRIVATE KEY-----\r\n",
            "-----BEGIN RSA PRIVATE KEY-----\n{{pem:4}}\n",
        ],
        false_positives: &[
            "if line.starts_with(\"-----BEGIN RSA PRIVATE KEY-----\") {\n",
            "const pem = \"-----BEGIN PRIVATE KEY-----\\n\" + body + \"\\n-----END PRIVATE KEY-----\";\n",
            "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA{{~b64:20}}\n{{~pem:4}}\n-----END PUBLIC KEY-----\n",
            "-----BEGIN CERTIFICATE-----\nMIID{{~b64:60}}\n{{~pem:5}}\n-----END CERTIFICATE-----\n",
            "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----\n",
        ],
        sample: S::Assign(
            "tls_private_key",
            "-----BEGIN RSA PRIVATE KEY-----\n{{pem:8}}\n{{b64:20}}==\n-----END RSA PRIVATE KEY-----",
        ),
        ..BASE
    },
    // ---------------------------------------------------------------- AWS
    Def {
        id: "aws-access-key-id",
        description: "AWS access key id (AKIA/ASIA/ABIA/ACCA…)",
        keywords: &["akia", "asia", "abia", "acca"],
        regex: r"\b((?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b",
        entropy: 3.0,
        examples: &[
            "aws_access_key_id = AKIA{{b32:16}}\n",
            r#"{"AccessKeyId": "ASIA{{b32:16}}", "Expiration": "2024-01-01T00:00:00Z"}"#,
        ],
        false_positives: &[
            "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n",
            "key = AKIAXXXXXXXXXXXXXXXX\n",
            "id: NOTAKIA{{~b32:16}}\n",
            "akia{{~L:16}}\n",
        ],
        sample: S::Assign("aws_access_key_id", "AKIA{{b32:16}}"),
        ..BASE
    },
    Def {
        id: "aws-secret-access-key",
        description: "AWS secret access key assigned to an AWS-named variable",
        keywords: &["aws", "secretaccesskey", "secret_access_key", "secret-access-key"],
        regex: assign!(
            r"(?:aws[\w.\-]{0,20}?(?:secret|private)|secret[_.\-]?access[_.\-]?key)",
            r"[A-Za-z0-9/+]{40}"
        ),
        entropy: 4.0,
        examples: &[
            "aws_secret_access_key = {{b64:40}}\n",
            "AWS_SECRET_ACCESS_KEY=\"{{b64:40}}\"\n",
            r#"  "SecretAccessKey": "{{b64:40}}","#,
        ],
        false_positives: &[
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
            "aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}\n",
            "aws_secret_access_key = os.environ[\"AWS_SECRET_ACCESS_KEY\"]\n",
        ],
        sample: S::Assign("aws_secret_access_key", "{{b64:40}}"),
        ..BASE
    },
    // ---------------------------------------------------------------- GitHub, GitLab
    Def {
        id: "github-pat-classic",
        description: "GitHub personal access token, classic (ghp_)",
        keywords: &["ghp_"],
        regex: r"\b(ghp_[A-Za-z0-9]{36})\b",
        entropy: 3.0,
        examples: &[
            "GITHUB_TOKEN=ghp_{{a:36}}\n",
            "git clone https://x-access-token:ghp_{{a:36}}@github.com/org/repo.git\n",
        ],
        false_positives: &[
            "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
            "token = \"ghp_{{~a:20}}\"\n",
            "token: ${{ secrets.GITHUB_TOKEN }}\n",
        ],
        sample: S::Assign("github_token", "ghp_{{a:36}}"),
        ..BASE
    },
    Def {
        id: "github-pat-fine-grained",
        description: "GitHub fine-grained personal access token (github_pat_)",
        keywords: &["github_pat_"],
        regex: r"\b(github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})\b",
        entropy: 3.0,
        examples: &["GH_PAT=github_pat_11{{A:20}}_{{a:59}}\n"],
        false_positives: &["GH_PAT=github_pat_<your-token>\n", "# tokens start with github_pat_ and are 93 characters\n"],
        sample: S::Assign("gh_pat", "github_pat_11{{A:20}}_{{a:59}}"),
        ..BASE
    },
    Def {
        id: "gitlab-pat",
        description: "GitLab personal/project/group access token (glpat-)",
        keywords: &["glpat-"],
        regex: r"\b(glpat-[0-9A-Za-z_\-]{20,64}(?:\.[0-9A-Za-z]{2}\.[0-9A-Za-z]{9})?)",
        entropy: 3.0,
        examples: &["GITLAB_TOKEN=glpat-{{u64:20}}\n", "token: glpat-{{a:27}}.01.{{l:9}}\n"],
        false_positives: &["GITLAB_TOKEN=glpat-xxxxxxxxxxxxxxxxxxxx\n", "glpat-{{~a:8}}\n"],
        sample: S::Assign("gitlab_token", "glpat-{{a:20}}"),
        ..BASE
    },
    // ---------------------------------------------------------------- Slack, Stripe
    Def {
        id: "slack-bot-token",
        description: "Slack bot token (xoxb-)",
        keywords: &["xoxb-"],
        regex: r"\b(xoxb-[0-9]{10,13}-[0-9]{10,13}-[A-Za-z0-9]{24,34})\b",
        entropy: 3.0,
        examples: &["SLACK_BOT_TOKEN=xoxb-{{d:12}}-{{d:13}}-{{a:24}}\n"],
        false_positives: &[
            "SLACK_BOT_TOKEN=xoxb-000000000000-0000000000000-xxxxxxxxxxxxxxxxxxxxxxxx\n",
            "token: xoxb-your-token\n",
        ],
        sample: S::Assign("slack_bot_token", "xoxb-{{d:12}}-{{d:13}}-{{a:24}}"),
        ..BASE
    },
    Def {
        id: "stripe-secret-key",
        description: "Stripe secret API key (sk_live_/sk_test_)",
        keywords: &["sk_live_", "sk_test_"],
        regex: r"\b(sk_(?:live|test)_[0-9A-Za-z]{24,99})\b",
        entropy: 3.0,
        examples: &["STRIPE_SECRET_KEY=sk_live_{{a:24}}\n", "stripe.api_key = \"sk_test_{{a:99}}\"\n"],
        false_positives: &[
            "STRIPE_PUBLISHABLE_KEY=pk_live_{{~a:24}}\n",
            "STRIPE_SECRET_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx\n",
            "sk_test_{{~a:10}}\n",
        ],
        sample: S::Assign("stripe_secret_key", "sk_live_{{a:24}}"),
        ..BASE
    },
];

fn to_rule(d: &Def) -> Rule {
    let mut allowlists = Vec::new();
    if !d.checks.is_empty() {
        allowlists.push(Allowlist {
            description: "built-in checks".into(),
            checks: d.checks.to_vec(),
            ..Allowlist::default()
        });
    }
    for target in [Target::Secret, Target::Match, Target::Line] {
        let regexes: Vec<String> = d
            .allow
            .iter()
            .filter(|(t, _)| *t == target)
            .map(|(_, r)| (*r).to_string())
            .collect();
        if !regexes.is_empty() {
            allowlists.push(Allowlist {
                description: "known benign values".into(),
                regex_target: target,
                regexes,
                ..Allowlist::default()
            });
        }
    }
    let sample = match d.sample {
        S::None => None,
        S::Assign(name, value) => Some(Sample::Assign {
            name: name.into(),
            value: value.into(),
            formats: Format::ALL.to_vec(),
        }),
        S::AssignIn(name, value, formats) => Some(Sample::Assign {
            name: name.into(),
            value: value.into(),
            formats: formats.to_vec(),
        }),
        S::File(file_name, template) => Some(Sample::File {
            file_name: file_name.into(),
            template: template.into(),
        }),
    };
    Rule {
        id: d.id.into(),
        description: d.description.into(),
        keywords: d.keywords.iter().map(|k| (*k).to_string()).collect(),
        regex: Some(d.regex.into()),
        secret_group: None,
        entropy: (d.entropy > 0.0).then_some(d.entropy),
        path: d.path.map(Into::into),
        context: d.context.map(Into::into),
        span: d.span,
        fallback: d.fallback,
        allowlists,
        tags: Vec::new(),
        examples: d.examples.iter().map(|e| (*e).to_string()).collect(),
        false_positives: d.false_positives.iter().map(|e| (*e).to_string()).collect(),
        sample,
        source: RuleSource::Builtin,
    }
}

/// The built-in rules, in priority order.
pub fn default_rules() -> Vec<Rule> {
    DEFS.iter().map(to_rule).collect()
}

/// The built-in global allowlist: placeholders and known public values.
pub fn default_global_allowlist() -> Allowlist {
    Allowlist {
        description: "placeholders, documentation examples, public values".into(),
        checks: vec![Check::Placeholder, Check::KnownPublic],
        ..Allowlist::default()
    }
}
