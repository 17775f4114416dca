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

use crate::rule::{Allowlist, Check, Condition, Rule, RuleSource, Span, Target};
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
            // An optional type annotation: Rust `: &str`, TypeScript `: string`.
            r#"[\w.\-]*["']?[ \t]*(?::[ \t]*&?(?:'static[ \t]+)?[A-Za-z_]\w*[ \t]*)?(?:=|:=|:|=>|\?=)[ \t]*["'`]?("#,
            $value,
            r#")(?:["'`,;&)\]}>\s]|$)"#
        )
    };
}

#[derive(Clone, Copy)]
enum S {
    None,
    Assign(&'static str, &'static str),
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

/// Values that are defaults or documentation, not secrets, when they are a whole password.
const PLACEHOLDER_PASSWORDS: &str = r"(?i)^(?:password[0-9]*|passw0rd|p@ssw0rd|pass[0-9]*|passwd|pwd|x{3,}|\*+|secret[0-9]*|changeme[0-9]*|admin[0-9]*|root|guest|test[0-9]*|testing|user|username|postgres|mysql|default|dbpass|qwerty[0-9]*|letmein)$";

/// Names (the start of a match) that hold identifiers, digests, public values or
/// settings rather than secrets.
const WEAK_NAMES: &str = concat!(
    r"(?i)^[\w.\-]*?(?:",
    r"(?:public|pub_?key|hash|digest|checksum|fingerprint|sha1|sha256|sha512|md5|salt|nonce)[\w.\-]*",
    r"|[\w.\-]*?[_.\-]?(?:id|ids|url|uri|path|file|dir|name|type|field|label|prompt|pattern|regex|length|policy",
    r"|format|expiry|expires|expiration|ttl|timeout|header|param|version|prefix|suffix|template|alias|arn|size",
    r"|count|index|endpoint|reset|placeholder))",
    r#"["']?[ \t]*(?:=|:=|:|=>|\?=)"#
);

/// Source files of languages where an unquoted value after `=`/`:` is an expression
/// (shell is not among them: there `TOKEN=abc` is a literal).
const CODE_FILES: &str = r"(?i)\.(?:py|pyi|js|jsx|mjs|cjs|ts|tsx|rb|go|java|kt|kts|scala|rs|php|cs|swift|c|h|cc|cpp|hpp|m|mm|pl|pm|lua|dart|ex|exs|erl|hs|clj|groovy|gradle|tf|hcl)$";

/// The end of a generic match whose value is an unquoted identifier or member access
/// (`= credentials`, `= win32api.RegOpenKeyEx`), ended by whitespace or punctuation but not
/// by a quote (`"host=db password=abc"` inside a string is still reported).
const UNQUOTED_IDENTIFIER: &str =
    r"[=:>][ \t]*[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*[\s;,)\]}>]?$";

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
    // ---------------------------------------------------------------- more AWS, Google
    Def {
        id: "aws-session-token",
        description: "AWS temporary session token assigned to a session/security-token variable",
        keywords: &["session_token", "sessiontoken", "session-token", "security_token", "securitytoken", "security-token"],
        regex: assign!(
            r"(?:aws[\w.\-]{0,20}?session[_.\-]?token|sessiontoken|security[_.\-]?token)",
            r"[A-Za-z0-9/+=]{100,4000}"
        ),
        entropy: 4.0,
        examples: &[
            "aws_session_token = FwoGZXIvYXdzE{{b64:300}}\n",
            r#"  "SessionToken": "IQoJb3JpZ2luX2Vj{{b64:400}}=","#,
        ],
        false_positives: &[
            "aws_session_token = ${AWS_SESSION_TOKEN}\n",
            "session_token = request.cookies.get(\"session\")\n",
        ],
        sample: S::Assign("aws_session_token", "FwoGZXIvYXdzE{{b64:280}}"),
        ..BASE
    },
    Def {
        id: "gcp-service-account-key-id",
        description: "GCP service-account JSON key file (private_key_id; the key itself is private-key-pem)",
        keywords: &["private_key_id"],
        regex: r#""private_key_id"[ \t]*:[ \t]*"([0-9a-f]{40})""#,
        examples: &[
            "{\n  \"type\": \"service_account\",\n  \"project_id\": \"billing-prod\",\n  \"private_key_id\": \"{{h:40}}\",\n  \"client_email\": \"deployer@billing-prod.iam.gserviceaccount.com\"\n}\n",
        ],
        false_positives: &[
            r#"{"private_key_id": "<key id>", "type": "service_account"}"#,
            "required = [\"type\", \"private_key_id\", \"private_key\"]\n",
        ],
        sample: S::File(
            "gcp/service-account.json",
            "{\n  \"type\": \"service_account\",\n  \"project_id\": \"billing-prod\",\n  \"private_key_id\": \"{{h:40}}\",\n  \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{{~b64:64}}\\n{{~b64:64}}\\n{{~b64:20}}==\\n-----END PRIVATE KEY-----\\n\",\n  \"client_email\": \"deployer@billing-prod.iam.gserviceaccount.com\",\n  \"client_id\": \"{{~d:21}}\",\n  \"token_uri\": \"https://oauth2.googleapis.com/token\"\n}\n",
        ),
        ..BASE
    },
    Def {
        id: "gcp-api-key",
        description: "Google Cloud / Maps / Firebase API key (AIza…)",
        keywords: &["aiza"],
        regex: r"\b(AIza[0-9A-Za-z_\-]{35})(?:[^0-9A-Za-z_\-]|$)",
        entropy: 3.0,
        examples: &[
            "GOOGLE_MAPS_API_KEY=AIza{{u64:35}}\n",
            "<meta name=\"maps-key\" content=\"AIza{{u64:35}}\">\n",
        ],
        false_positives: &["GOOGLE_MAPS_API_KEY=AIzaSyXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX\n", "AIza{{~u64:20}}\n"],
        sample: S::Assign("google_maps_api_key", "AIza{{u64:35}}"),
        ..BASE
    },
    Def {
        id: "gcp-oauth-client-secret",
        description: "Google OAuth client secret (GOCSPX-)",
        keywords: &["gocspx-"],
        regex: r"\b(GOCSPX-[0-9A-Za-z_\-]{28})(?:[^0-9A-Za-z_\-]|$)",
        entropy: 3.0,
        examples: &[r#"{"web": {"client_secret": "GOCSPX-{{u64:28}}", "redirect_uris": []}}"#],
        false_positives: &["client_secret: GOCSPX-<secret>\n", "client_secret: GOCSPX-xxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"],
        sample: S::Assign("google_client_secret", "GOCSPX-{{a:28}}"),
        ..BASE
    },
    Def {
        id: "google-oauth-access-token",
        description: "Google OAuth access token (ya29.)",
        keywords: &["ya29."],
        regex: r"\b(ya29\.[0-9A-Za-z_\-]{30,})",
        entropy: 3.5,
        examples: &["Authorization: Bearer ya29.a0{{u64:120}}\n"],
        false_positives: &["token = \"ya29.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"\n", "Google access tokens start with ya29.\n"],
        sample: S::Assign("google_access_token", "ya29.a0{{u64:140}}"),
        ..BASE
    },
    Def {
        id: "google-oauth-refresh-token",
        description: "Google OAuth refresh token (1//0…)",
        keywords: &["1//0"],
        regex: r"\b(1//0[0-9A-Za-z_\-]{40,})",
        entropy: 3.5,
        examples: &[r#"{"refresh_token": "1//0{{u64:100}}", "token_uri": "https://oauth2.googleapis.com/token"}"#],
        false_positives: &["ratio 1//0{{~d:3}} is undefined\n"],
        sample: S::Assign("google_refresh_token", "1//0{{u64:100}}"),
        ..BASE
    },
    // ---------------------------------------------------------------- Azure, other clouds
    Def {
        id: "azure-storage-account-key",
        description: "Azure storage account key (connection string AccountKey= or account_key)",
        keywords: &["accountkey", "account_key", "account-key", "account.key"],
        regex: r#"(?i)(?:AccountKey=|account[_.\-]?key["']?[ \t]*[:=][ \t]*["']?)([A-Za-z0-9+/]{86}==)"#,
        entropy: 4.0,
        allow: &[(Target::Line, r"(?i)devstoreaccount1")],
        examples: &[
            "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=billingprod;AccountKey={{b64:86}}==;EndpointSuffix=core.windows.net\n",
        ],
        false_positives: &[
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={{~b64:86}}==;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;\n",
            "AccountKey=<storage-account-key>\n",
        ],
        sample: S::Assign("storage_account_key", "{{b64:86}}=="),
        ..BASE
    },
    Def {
        id: "azure-sas-token",
        description: "Azure shared access signature (sv=…&sig=…)",
        keywords: &["sig="],
        regex: r#"(?i)\bsv=20[0-9]{2}-[0-9]{2}-[0-9]{2}[^\s"'<>]{0,400}?[?&]sig=([A-Za-z0-9%+/]{40,}(?:%3D|=){0,3})"#,
        entropy: 3.5,
        examples: &[
            "https://billing.blob.core.windows.net/exports?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2025-01-01T00:00:00Z&st=2024-01-01T00:00:00Z&spr=https&sig={{b64:43}}%3D\n",
        ],
        false_positives: &["?sv=2022-11-02&sp=r&sig=<signature>\n", "sig=abc123 # unrelated\n"],
        sample: S::Assign(
            "export_sas_url",
            "https://billing.blob.core.windows.net/exports?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2025-01-01T00:00:00Z&spr=https&sig={{a:43}}%3D",
        ),
        ..BASE
    },
    Def {
        id: "azure-ad-client-secret",
        description: "Azure AD (Entra ID) application client secret (…Q~…)",
        keywords: &["q~"],
        regex: r#"(?:^|[\\'"`\s>=:(,])([a-zA-Z0-9_~.]{3}[0-9]Q~[a-zA-Z0-9_~.\-]{31,34})(?:$|[\\'"`\s<),])"#,
        entropy: 3.0,
        examples: &["AZURE_CLIENT_SECRET={{a:3}}8Q~{{a:34}}\n"],
        false_positives: &["AZURE_CLIENT_SECRET=<client-secret>\n", "cd ~/Q~notes\n"],
        sample: S::Assign("azure_client_secret", "{{a:3}}8Q~{{a:34}}"),
        ..BASE
    },
    Def {
        id: "azure-devops-pat",
        description: "Azure DevOps personal access token (84 characters, AZDO signature)",
        keywords: &["azdo"],
        regex: r"\b([A-Za-z0-9]{76}AZDO[A-Za-z0-9]{4})\b",
        entropy: 3.5,
        examples: &["AZURE_DEVOPS_EXT_PAT={{a:76}}AZDO{{a:4}}\n"],
        false_positives: &["AZDO_ORG_URL=https://dev.azure.com/billing\n", "{{~a:20}}AZDO{{~a:4}}\n"],
        sample: S::Assign("azure_devops_pat", "{{a:76}}AZDO{{a:4}}"),
        ..BASE
    },
    Def {
        id: "alibaba-access-key-id",
        description: "Alibaba Cloud AccessKey id (LTAI…)",
        keywords: &["ltai"],
        regex: r"\b(LTAI[A-Za-z0-9]{20})\b",
        entropy: 3.0,
        examples: &["ALIBABA_CLOUD_ACCESS_KEY_ID=LTAI{{a:20}}\n"],
        false_positives: &["ALIBABA_CLOUD_ACCESS_KEY_ID=LTAIxxxxxxxxxxxxxxxxxxxx\n", "ALTAI{{~a:20}}\n"],
        sample: S::Assign("alibaba_access_key_id", "LTAI{{a:20}}"),
        ..BASE
    },
    Def {
        id: "digitalocean-token",
        description: "DigitalOcean personal/OAuth/refresh token (dop_v1_, doo_v1_, dor_v1_)",
        keywords: &["dop_v1_", "doo_v1_", "dor_v1_"],
        regex: r"\b(do[opr]_v1_[a-f0-9]{64})\b",
        entropy: 3.0,
        examples: &["DIGITALOCEAN_TOKEN=dop_v1_{{h:64}}\n"],
        false_positives: &["DIGITALOCEAN_TOKEN=dop_v1_<token>\n", "dop_v1_{{~h:10}}\n"],
        sample: S::Assign("digitalocean_token", "dop_v1_{{h:64}}"),
        ..BASE
    },
    Def {
        id: "cloudflare-origin-ca-key",
        description: "Cloudflare Origin CA key (v1.0-…)",
        keywords: &["v1.0-"],
        regex: r"\b(v1\.0-[a-f0-9]{24}-[a-f0-9]{146})\b",
        entropy: 3.0,
        examples: &["CF_ORIGIN_CA_KEY=v1.0-{{h:24}}-{{h:146}}\n"],
        false_positives: &["version: v1.0-beta\n"],
        sample: S::Assign("cloudflare_origin_ca_key", "v1.0-{{h:24}}-{{h:146}}"),
        ..BASE
    },
    // ---------------------------------------------------------------- more GitHub, GitLab, Atlassian
    Def {
        id: "github-oauth-token",
        description: "GitHub OAuth access token (gho_)",
        keywords: &["gho_"],
        regex: r"\b(gho_[A-Za-z0-9]{36})\b",
        entropy: 3.0,
        examples: &["oauth_token: gho_{{a:36}}\n"],
        false_positives: &["gho_{{~a:10}}\n", "oauth_token: gho_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"],
        sample: S::Assign("github_oauth_token", "gho_{{a:36}}"),
        ..BASE
    },
    Def {
        id: "github-app-token",
        description: "GitHub App installation or user-to-server token (ghs_, ghu_)",
        keywords: &["ghs_", "ghu_"],
        regex: r"\b((?:ghu|ghs)_[A-Za-z0-9]{36})\b",
        entropy: 3.0,
        examples: &["GH_INSTALLATION_TOKEN=ghs_{{a:36}}\n", "user_token = \"ghu_{{a:36}}\"\n"],
        false_positives: &["ghs_{{~a:12}}\n", "GH_INSTALLATION_TOKEN=ghs_<token>\n"],
        sample: S::Assign("github_app_token", "ghs_{{a:36}}"),
        ..BASE
    },
    Def {
        id: "github-refresh-token",
        description: "GitHub refresh token (ghr_)",
        keywords: &["ghr_"],
        regex: r"\b(ghr_[A-Za-z0-9]{36,76})\b",
        entropy: 3.0,
        examples: &["refresh_token: ghr_{{a:76}}\n"],
        false_positives: &["ghr_{{~a:12}}\n"],
        sample: S::Assign("github_refresh_token", "ghr_{{a:76}}"),
        ..BASE
    },
    Def {
        id: "gitlab-pipeline-trigger-token",
        description: "GitLab pipeline trigger token (glptt-)",
        keywords: &["glptt-"],
        regex: r"\b(glptt-[0-9a-f]{40})\b",
        entropy: 3.0,
        examples: &["curl -X POST -F token=glptt-{{h:40}} -F ref=main https://gitlab.internal/api/v4/projects/7/trigger/pipeline\n"],
        false_positives: &["token=glptt-<trigger-token>\n"],
        sample: S::Assign("gitlab_trigger_token", "glptt-{{h:40}}"),
        ..BASE
    },
    Def {
        id: "gitlab-runner-token",
        description: "GitLab runner authentication token (glrt-)",
        keywords: &["glrt-"],
        regex: r"\b(glrt-[0-9A-Za-z_\-]{20,})",
        entropy: 3.0,
        examples: &["  token = \"glrt-{{u64:24}}\"\n"],
        false_positives: &["  token = \"glrt-REPLACE_ME\"\n"],
        sample: S::Assign("runner_token", "glrt-{{a:24}}"),
        ..BASE
    },
    Def {
        id: "gitlab-deploy-token",
        description: "GitLab deploy token (gldt-)",
        keywords: &["gldt-"],
        regex: r"\b(gldt-[0-9A-Za-z_\-]{20,})",
        entropy: 3.0,
        examples: &["CI_DEPLOY_PASSWORD=gldt-{{u64:20}}\n"],
        false_positives: &["CI_DEPLOY_PASSWORD=gldt-xxxxxxxxxxxxxxxxxxxx\n"],
        sample: S::Assign("deploy_token", "gldt-{{a:20}}"),
        ..BASE
    },
    Def {
        id: "gitlab-other-token",
        description: "Other GitLab tokens (CI build, feed, incoming mail, agent, SCIM, OAuth app secret…)",
        keywords: &["glcbt-", "glft-", "glimt-", "glagent-", "glsoat-", "gloas-", "glrtr-", "glwt-"],
        regex: r"\b(gl(?:cbt|ft|imt|agent|soat|oas|rtr|wt)-[0-9A-Za-z_\-]{20,})",
        entropy: 3.0,
        examples: &["feed_token: glft-{{a:20}}\n", "GITLAB_OAUTH_SECRET=gloas-{{h:64}}\n"],
        false_positives: &["glft-{{~a:6}}\n"],
        sample: S::Assign("gitlab_agent_token", "glagent-{{a:50}}"),
        ..BASE
    },
    Def {
        id: "bitbucket-app-password",
        description: "Bitbucket app password (ATBB…)",
        keywords: &["atbb"],
        regex: r"\b(ATBB[A-Za-z0-9_=.\-]{28,40})(?:[^A-Za-z0-9_=.\-]|$)",
        entropy: 3.5,
        examples: &["BITBUCKET_APP_PASSWORD=ATBB{{a:32}}\n"],
        false_positives: &["BITBUCKET_APP_PASSWORD=ATBB<app-password>\n"],
        sample: S::Assign("bitbucket_app_password", "ATBB{{a:32}}"),
        ..BASE
    },
    Def {
        id: "atlassian-api-token",
        description: "Atlassian (Jira, Confluence) API token (ATATT3…)",
        keywords: &["atatt3"],
        regex: r"\b(ATATT3[A-Za-z0-9_\-=]{180,200})(?:[^A-Za-z0-9_\-=]|$)",
        entropy: 3.5,
        examples: &["JIRA_API_TOKEN=ATATT3xFfGF0{{u64:180}}\n"],
        false_positives: &["JIRA_API_TOKEN=ATATT3<token>\n"],
        sample: S::Assign("jira_api_token", "ATATT3xFfGF0{{a:180}}"),
        ..BASE
    },
    // ---------------------------------------------------------------- Slack, Stripe, messaging
    Def {
        id: "slack-user-token",
        description: "Slack user or enterprise token (xoxp-, xoxe-)",
        keywords: &["xoxp-", "xoxe-"],
        regex: r"\b(xox[pe](?:-[0-9]{10,13}){3}-[A-Za-z0-9]{28,34})\b",
        entropy: 3.0,
        examples: &["SLACK_USER_TOKEN=xoxp-{{d:12}}-{{d:12}}-{{d:13}}-{{h:32}}\n"],
        false_positives: &["SLACK_USER_TOKEN=xoxp-your-token-here\n"],
        sample: S::Assign("slack_user_token", "xoxp-{{d:12}}-{{d:12}}-{{d:13}}-{{h:32}}"),
        ..BASE
    },
    Def {
        id: "slack-app-token",
        description: "Slack app-level token (xapp-)",
        keywords: &["xapp-"],
        regex: r"\b(xapp-[0-9]-[A-Z0-9]{9,12}-[0-9]{10,14}-[a-f0-9]{64})\b",
        entropy: 3.0,
        examples: &["SLACK_APP_TOKEN=xapp-1-A{{A:10}}-{{d:13}}-{{h:64}}\n"],
        false_positives: &["SLACK_APP_TOKEN=xapp-1-<token>\n"],
        sample: S::Assign("slack_app_token", "xapp-1-A{{A:10}}-{{d:13}}-{{h:64}}"),
        ..BASE
    },
    Def {
        id: "slack-webhook-url",
        description: "Slack incoming webhook / workflow URL",
        keywords: &["hooks.slack.com"],
        regex: r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_\-]{40,120})",
        entropy: 3.0,
        examples: &["SLACK_WEBHOOK=https://hooks.slack.com/services/T{{A:8}}/B{{A:10}}/{{a:24}}\n"],
        false_positives: &[
            "SLACK_WEBHOOK=https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX\n",
            "url: https://hooks.slack.com/services/<your-webhook>\n",
        ],
        sample: S::Assign("slack_webhook_url", "https://hooks.slack.com/services/T{{A:8}}/B{{A:10}}/{{a:24}}"),
        ..BASE
    },
    Def {
        id: "stripe-restricted-key",
        description: "Stripe restricted API key (rk_live_/rk_test_)",
        keywords: &["rk_live_", "rk_test_"],
        regex: r"\b(rk_(?:live|test)_[0-9A-Za-z]{24,99})\b",
        entropy: 3.0,
        examples: &["STRIPE_RESTRICTED_KEY=rk_live_{{a:40}}\n"],
        false_positives: &["STRIPE_RESTRICTED_KEY=rk_live_<key>\n"],
        sample: S::Assign("stripe_restricted_key", "rk_live_{{a:40}}"),
        ..BASE
    },
    Def {
        id: "stripe-webhook-secret",
        description: "Stripe webhook signing secret (whsec_)",
        keywords: &["whsec_"],
        regex: r"\b(whsec_[0-9A-Za-z]{32,64})\b",
        entropy: 3.0,
        examples: &["STRIPE_WEBHOOK_SECRET=whsec_{{a:32}}\n"],
        false_positives: &["STRIPE_WEBHOOK_SECRET=whsec_...\n"],
        sample: S::Assign("stripe_webhook_secret", "whsec_{{a:32}}"),
        ..BASE
    },
    Def {
        id: "twilio-api-key",
        description: "Twilio API key SID (SK + 32 hex)",
        keywords: &["sk"],
        regex: r"\b(SK[0-9a-fA-F]{32})\b",
        entropy: 3.0,
        examples: &["TWILIO_API_KEY=SK{{h:32}}\n"],
        false_positives: &["SK{{~h:10}}\n", "SKU-{{~d:8}}\n"],
        sample: S::Assign("twilio_api_key", "SK{{h:32}}"),
        ..BASE
    },
    Def {
        id: "twilio-auth-token",
        description: "Twilio auth token (32 hex) assigned to a Twilio variable",
        keywords: &["twilio"],
        regex: assign!(r"twilio[\w.\-]{0,20}?(?:auth|token|secret)", r"[0-9a-f]{32}"),
        entropy: 3.0,
        examples: &["TWILIO_AUTH_TOKEN={{h:32}}\n"],
        false_positives: &["TWILIO_AUTH_TOKEN=your_auth_token\n"],
        sample: S::Assign("twilio_auth_token", "{{h:32}}"),
        ..BASE
    },
    Def {
        id: "sendgrid-api-key",
        description: "SendGrid API key (SG.…)",
        keywords: &["sg."],
        regex: r"\b(SG\.[0-9A-Za-z_\-]{22}\.[0-9A-Za-z_\-]{43})(?:[^0-9A-Za-z_\-]|$)",
        entropy: 3.5,
        examples: &["SENDGRID_API_KEY=SG.{{u64:22}}.{{u64:43}}\n"],
        false_positives: &["SENDGRID_API_KEY=SG.xxxxxxxxxxxxxxxxxxxxxx.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"],
        sample: S::Assign("sendgrid_api_key", "SG.{{u64:22}}.{{u64:43}}"),
        ..BASE
    },
    Def {
        id: "mailgun-private-key",
        description: "Mailgun private API key (key-…)",
        keywords: &["key-"],
        regex: r"\b(key-[0-9a-z]{32})\b",
        entropy: 3.3,
        examples: &["MAILGUN_API_KEY=key-{{l:32}}\n"],
        false_positives: &["primary-key-{{~L:8}}\n", "key-value-store\n"],
        sample: S::Assign("mailgun_key", "key-{{l:32}}"),
        ..BASE
    },
    Def {
        id: "mailgun-api-key",
        description: "Mailgun API key (hex-hex-hex) assigned to a Mailgun variable",
        keywords: &["mailgun"],
        regex: assign!(r"mailgun[\w.\-]{0,20}?(?:key|secret|token)", r"[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}"),
        entropy: 3.0,
        examples: &["MAILGUN_API_KEY={{h:32}}-{{h:8}}-{{h:8}}\n"],
        false_positives: &["MAILGUN_DOMAIN=mg.billing.internal\n"],
        sample: S::Assign("mailgun_api_key", "{{h:32}}-{{h:8}}-{{h:8}}"),
        ..BASE
    },
    Def {
        id: "mailchimp-api-key",
        description: "Mailchimp API key (32 hex + datacenter)",
        keywords: &["-us"],
        regex: r"\b([0-9a-f]{32}-us[0-9]{1,2})\b",
        entropy: 3.0,
        examples: &["MAILCHIMP_API_KEY={{h:32}}-us{{d:2}}\n"],
        false_positives: &["locale = \"en-us\"\n"],
        sample: S::Assign("mailchimp_api_key", "{{h:32}}-us21"),
        ..BASE
    },
    Def {
        id: "brevo-api-key",
        description: "Brevo (Sendinblue) API key (xkeysib-)",
        keywords: &["xkeysib-"],
        regex: r"\b(xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16})\b",
        entropy: 3.0,
        examples: &["BREVO_API_KEY=xkeysib-{{h:64}}-{{a:16}}\n"],
        false_positives: &["BREVO_API_KEY=xkeysib-<key>\n"],
        sample: S::Assign("brevo_api_key", "xkeysib-{{h:64}}-{{a:16}}"),
        ..BASE
    },
    Def {
        id: "discord-webhook-url",
        description: "Discord webhook URL (token part)",
        keywords: &["discord"],
        regex: r"discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/([A-Za-z0-9_\-]{60,68})",
        entropy: 3.5,
        examples: &["DISCORD_WEBHOOK=https://discord.com/api/webhooks/{{~d:18}}/{{u64:68}}\n"],
        false_positives: &["https://discord.com/api/webhooks/{{~d:18}}/<token>\n"],
        sample: S::Assign("discord_webhook", "https://discord.com/api/webhooks/{{~d:18}}/{{u64:68}}"),
        ..BASE
    },
    Def {
        id: "telegram-bot-token",
        description: "Telegram bot token (id:AA…)",
        keywords: &[":aa"],
        regex: r"\b([0-9]{8,10}:AA[0-9A-Za-z_\-]{33})(?:[^0-9A-Za-z_\-]|$)",
        entropy: 3.5,
        examples: &["TELEGRAM_BOT_TOKEN={{d:10}}:AA{{u64:33}}\n"],
        false_positives: &["time: 12:AA\n"],
        sample: S::Assign("telegram_bot_token", "{{d:10}}:AA{{u64:33}}"),
        ..BASE
    },
    // ---------------------------------------------------------------- AI providers
    Def {
        id: "openai-api-key",
        description: "OpenAI API key (sk-…T3BlbkFJ…, incl. project and service-account keys)",
        keywords: &["t3blbkfj"],
        regex: r"\b(sk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_\-]{20,160}T3BlbkFJ[A-Za-z0-9_\-]{20,160})(?:[^A-Za-z0-9_\-]|$)",
        entropy: 3.5,
        examples: &[
            "OPENAI_API_KEY=sk-{{a:20}}T3BlbkFJ{{a:20}}\n",
            "OPENAI_API_KEY=sk-proj-{{u64:74}}T3BlbkFJ{{u64:74}}\n",
        ],
        false_positives: &["OPENAI_API_KEY=sk-...\n", "model_key = sk-{{~a:48}}\n"],
        sample: S::Assign("openai_api_key", "sk-proj-{{a:74}}T3BlbkFJ{{a:74}}"),
        ..BASE
    },
    Def {
        id: "anthropic-api-key",
        description: "Anthropic API or admin key (sk-ant-)",
        keywords: &["sk-ant-"],
        regex: r"\b(sk-ant-(?:api|admin|sid)[0-9]{2}-[A-Za-z0-9_\-]{80,120})(?:[^A-Za-z0-9_\-]|$)",
        entropy: 3.5,
        examples: &["ANTHROPIC_API_KEY=sk-ant-api03-{{u64:93}}AA\n"],
        false_positives: &["ANTHROPIC_API_KEY=sk-ant-api03-...\n"],
        sample: S::Assign("anthropic_api_key", "sk-ant-api03-{{u64:93}}AA"),
        ..BASE
    },
    Def {
        id: "huggingface-token",
        description: "Hugging Face user access token (hf_)",
        keywords: &["hf_"],
        regex: r"\b(hf_[A-Za-z]{34})\b",
        entropy: 4.0,
        examples: &["HF_TOKEN=hf_{{w:34}}\n"],
        false_positives: &["HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", "from huggingface_hub import hf_hub_download\n"],
        sample: S::Assign("hf_token", "hf_{{w:34}}"),
        ..BASE
    },
    Def {
        id: "huggingface-org-token",
        description: "Hugging Face organization API token (api_org_)",
        keywords: &["api_org_"],
        regex: r"\b(api_org_[A-Za-z]{34})\b",
        entropy: 4.0,
        examples: &["HF_ORG_TOKEN=api_org_{{w:34}}\n"],
        false_positives: &["api_org_{{~L:5}}\n"],
        sample: S::Assign("hf_org_token", "api_org_{{w:34}}"),
        ..BASE
    },
    Def {
        id: "groq-api-key",
        description: "Groq API key (gsk_)",
        keywords: &["gsk_"],
        regex: r"\b(gsk_[A-Za-z0-9]{52})\b",
        entropy: 3.5,
        examples: &["GROQ_API_KEY=gsk_{{a:52}}\n"],
        false_positives: &["GROQ_API_KEY=gsk_<key>\n"],
        sample: S::Assign("groq_api_key", "gsk_{{a:52}}"),
        ..BASE
    },
    Def {
        id: "replicate-api-token",
        description: "Replicate API token (r8_)",
        keywords: &["r8_"],
        regex: r"\b(r8_[A-Za-z0-9]{37})\b",
        entropy: 3.5,
        examples: &["REPLICATE_API_TOKEN=r8_{{a:37}}\n"],
        false_positives: &["REPLICATE_API_TOKEN=r8_<token>\n"],
        sample: S::Assign("replicate_api_token", "r8_{{a:37}}"),
        ..BASE
    },
    Def {
        id: "langsmith-api-key",
        description: "LangSmith API key (lsv2_pt_/lsv2_sk_)",
        keywords: &["lsv2_"],
        regex: r"\b(lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10})\b",
        entropy: 3.0,
        examples: &["LANGSMITH_API_KEY=lsv2_pt_{{h:32}}_{{h:10}}\n"],
        false_positives: &["LANGSMITH_API_KEY=lsv2_pt_<key>\n"],
        sample: S::Assign("langsmith_api_key", "lsv2_sk_{{h:32}}_{{h:10}}"),
        ..BASE
    },
    Def {
        id: "xai-api-key",
        description: "xAI API key (xai-)",
        keywords: &["xai-"],
        regex: r"\b(xai-[A-Za-z0-9]{80})\b",
        entropy: 3.5,
        examples: &["XAI_API_KEY=xai-{{a:80}}\n"],
        false_positives: &["XAI_API_KEY=xai-<key>\n"],
        sample: S::Assign("xai_api_key", "xai-{{a:80}}"),
        ..BASE
    },
    Def {
        id: "perplexity-api-key",
        description: "Perplexity API key (pplx-)",
        keywords: &["pplx-"],
        regex: r"\b(pplx-[A-Za-z0-9]{48})\b",
        entropy: 3.5,
        examples: &["PPLX_API_KEY=pplx-{{a:48}}\n"],
        false_positives: &["PPLX_API_KEY=pplx-<key>\n"],
        sample: S::Assign("pplx_api_key", "pplx-{{a:48}}"),
        ..BASE
    },
    // ---------------------------------------------------------------- package registries, CI
    Def {
        id: "npm-access-token",
        description: "npm access token (npm_)",
        keywords: &["npm_"],
        regex: r"\b(npm_[A-Za-z0-9]{36})\b",
        entropy: 3.0,
        examples: &["NPM_TOKEN=npm_{{a:36}}\n"],
        false_positives: &["npm_config_registry=https://registry.npmjs.org/\n", "NPM_TOKEN=npm_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"],
        sample: S::Assign("npm_token", "npm_{{a:36}}"),
        ..BASE
    },
    Def {
        id: "pypi-upload-token",
        description: "PyPI / TestPyPI upload token (pypi-AgE…)",
        keywords: &["pypi-age"],
        regex: r"\b(pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_\-]{50,})",
        entropy: 3.5,
        examples: &["TWINE_PASSWORD=pypi-AgEIcHlwaS5vcmc{{u64:120}}\n"],
        false_positives: &["TWINE_PASSWORD=pypi-<token>\n", "username = __token__\n"],
        sample: S::Assign("twine_password", "pypi-AgEIcHlwaS5vcmc{{u64:120}}"),
        ..BASE
    },
    Def {
        id: "dockerhub-pat",
        description: "Docker Hub personal or organization access token (dckr_pat_, dckr_oat_)",
        keywords: &["dckr_pat_", "dckr_oat_"],
        regex: r"\b(dckr_(?:pat|oat)_[A-Za-z0-9_\-]{27,})",
        entropy: 3.0,
        examples: &["DOCKERHUB_TOKEN=dckr_pat_{{u64:27}}\n"],
        false_positives: &["DOCKERHUB_TOKEN=dckr_pat_<token>\n"],
        sample: S::Assign("dockerhub_token", "dckr_pat_{{a:27}}"),
        ..BASE
    },
    Def {
        id: "rubygems-api-key",
        description: "RubyGems API key (rubygems_)",
        keywords: &["rubygems_"],
        regex: r"\b(rubygems_[a-f0-9]{48})\b",
        entropy: 3.0,
        examples: &["---\n:rubygems_api_key: rubygems_{{h:48}}\n"],
        false_positives: &[":rubygems_api_key: rubygems_<key>\n"],
        sample: S::Assign("gem_host_api_key", "rubygems_{{h:48}}"),
        ..BASE
    },
    Def {
        id: "nuget-api-key",
        description: "NuGet.org API key (oy2…)",
        keywords: &["oy2"],
        regex: r"\b(oy2[a-z0-9]{43})\b",
        entropy: 3.5,
        examples: &["dotnet nuget push pkg.nupkg --api-key oy2{{l:43}}\n"],
        false_positives: &["dotnet nuget push pkg.nupkg --api-key $NUGET_API_KEY\n"],
        sample: S::Assign("nuget_api_key", "oy2{{l:43}}"),
        ..BASE
    },
    Def {
        id: "crates-io-token",
        description: "crates.io API token (cio…)",
        keywords: &["cio"],
        regex: r"\b(cio[A-Za-z0-9]{32})\b",
        entropy: 3.5,
        examples: &["CARGO_REGISTRY_TOKEN=cio{{a:32}}\n"],
        false_positives: &["CARGO_REGISTRY_TOKEN=${{ secrets.CRATES_TOKEN }}\n", "ciocalteu reagent\n"],
        sample: S::Assign("cargo_registry_token", "cio{{a:32}}"),
        ..BASE
    },
    Def {
        id: "jfrog-api-key",
        description: "JFrog Artifactory API key (AKCp…) or identity token",
        keywords: &["akcp", "cmvmdgtuojaxoj"],
        regex: r"\b(AKCp[A-Za-z0-9]{69}|cmVmdGtuOjAxOj[A-Za-z0-9]{50,})\b",
        entropy: 3.5,
        examples: &["ARTIFACTORY_API_KEY=AKCp{{a:69}}\n", "JFROG_ACCESS_TOKEN=cmVmdGtuOjAxOj{{a:60}}\n"],
        false_positives: &["ARTIFACTORY_API_KEY=AKCp<key>\n"],
        sample: S::Assign("artifactory_api_key", "AKCp{{a:69}}"),
        ..BASE
    },
    Def {
        id: "sonarqube-token",
        description: "SonarQube / SonarCloud token (sqp_, squ_, sqa_)",
        keywords: &["sqp_", "squ_", "sqa_"],
        regex: r"\b(sq[pua]_[a-f0-9]{40})\b",
        entropy: 3.0,
        examples: &["SONAR_TOKEN=squ_{{h:40}}\n"],
        false_positives: &["SONAR_TOKEN=squ_<token>\n"],
        sample: S::Assign("sonar_token", "sqp_{{h:40}}"),
        ..BASE
    },
    Def {
        id: "circleci-token",
        description: "CircleCI personal API token (CCIPAT_)",
        keywords: &["ccipat_"],
        regex: r"\b(CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40})\b",
        entropy: 3.0,
        examples: &["CIRCLECI_TOKEN=CCIPAT_{{a:22}}_{{h:40}}\n"],
        false_positives: &["CIRCLECI_TOKEN=CCIPAT_<token>\n"],
        sample: S::Assign("circleci_token", "CCIPAT_{{a:22}}_{{h:40}}"),
        ..BASE
    },
    Def {
        id: "buildkite-api-token",
        description: "Buildkite user API token (bkua_)",
        keywords: &["bkua_"],
        regex: r"\b(bkua_[a-f0-9]{40})\b",
        entropy: 3.0,
        examples: &["BUILDKITE_API_TOKEN=bkua_{{h:40}}\n"],
        false_positives: &["BUILDKITE_API_TOKEN=bkua_<token>\n"],
        sample: S::Assign("buildkite_api_token", "bkua_{{h:40}}"),
        ..BASE
    },
    // ---------------------------------------------------------------- SaaS and platforms
    Def {
        id: "databricks-api-token",
        description: "Databricks personal access token (dapi…)",
        keywords: &["dapi"],
        regex: r"\b(dapi[a-f0-9]{32}(?:-[0-9])?)\b",
        entropy: 3.0,
        examples: &["DATABRICKS_TOKEN=dapi{{h:32}}\n"],
        false_positives: &["Lorem ipsum dapibus tellus\n", "DATABRICKS_TOKEN=dapi<token>\n"],
        sample: S::Assign("databricks_token", "dapi{{h:32}}"),
        ..BASE
    },
    Def {
        id: "shopify-access-token",
        description: "Shopify access token (shpat_, shpca_, shppa_)",
        keywords: &["shpat_", "shpca_", "shppa_"],
        regex: r"\b(shp(?:at|ca|pa)_[a-fA-F0-9]{32})\b",
        entropy: 3.0,
        examples: &["SHOPIFY_ACCESS_TOKEN=shpat_{{h:32}}\n"],
        false_positives: &["SHOPIFY_ACCESS_TOKEN=shpat_<token>\n"],
        sample: S::Assign("shopify_access_token", "shpat_{{h:32}}"),
        ..BASE
    },
    Def {
        id: "shopify-shared-secret",
        description: "Shopify app shared secret (shpss_)",
        keywords: &["shpss_"],
        regex: r"\b(shpss_[a-fA-F0-9]{32})\b",
        entropy: 3.0,
        examples: &["SHOPIFY_API_SECRET=shpss_{{h:32}}\n"],
        false_positives: &["SHOPIFY_API_SECRET=shpss_<secret>\n"],
        sample: S::Assign("shopify_api_secret", "shpss_{{h:32}}"),
        ..BASE
    },
    Def {
        id: "square-access-token",
        description: "Square access token (EAAA…, sq0atp-)",
        keywords: &["eaaa", "sq0atp-"],
        regex: r"\b(EAAA[A-Za-z0-9_\-]{60}|sq0atp-[0-9A-Za-z_\-]{22})(?:[^0-9A-Za-z_\-]|$)",
        entropy: 3.5,
        examples: &["SQUARE_ACCESS_TOKEN=EAAA{{u64:60}}\n", "square_token: sq0atp-{{u64:22}}\n"],
        false_positives: &["SQUARE_ACCESS_TOKEN=EAAA<token>\n"],
        sample: S::Assign("square_access_token", "EAAA{{a:60}}"),
        ..BASE
    },
    Def {
        id: "square-oauth-secret",
        description: "Square OAuth application secret (sq0csp-)",
        keywords: &["sq0csp-"],
        regex: r"\b(sq0csp-[0-9A-Za-z_\-]{43})(?:[^0-9A-Za-z_\-]|$)",
        entropy: 3.5,
        examples: &["SQUARE_OAUTH_SECRET=sq0csp-{{u64:43}}\n"],
        false_positives: &["SQUARE_OAUTH_SECRET=sq0csp-<secret>\n"],
        sample: S::Assign("square_oauth_secret", "sq0csp-{{a:43}}"),
        ..BASE
    },
    Def {
        id: "heroku-api-key",
        description: "Heroku API key (UUID) assigned to a Heroku variable",
        keywords: &["heroku"],
        regex: assign!(
            r"heroku[\w.\-]{0,20}?(?:key|token|secret|password)",
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
        ),
        examples: &["HEROKU_API_KEY={{h:8}}-{{h:4}}-{{h:4}}-{{h:4}}-{{h:12}}\n"],
        false_positives: &[
            "HEROKU_APP_NAME=billing-prod\n",
            "heroku_app_id = \"{{~h:8}}-{{~h:4}}-{{~h:4}}-{{~h:4}}-{{~h:12}}\"\n",
        ],
        sample: S::Assign("heroku_api_key", "{{h:8}}-{{h:4}}-{{h:4}}-{{h:4}}-{{h:12}}"),
        ..BASE
    },
    Def {
        id: "heroku-api-key-v2",
        description: "Heroku API key, new format (HRKU-AA…)",
        keywords: &["hrku-"],
        regex: r"\b(HRKU-AA[0-9A-Za-z_\-]{58})(?:[^0-9A-Za-z_\-]|$)",
        entropy: 3.5,
        examples: &["HEROKU_API_KEY=HRKU-AA{{u64:58}}\n"],
        false_positives: &["HEROKU_API_KEY=HRKU-<key>\n"],
        sample: S::Assign("heroku_token", "HRKU-AA{{a:58}}"),
        ..BASE
    },
    Def {
        id: "sentry-auth-token",
        description: "Sentry organization or user auth token (sntrys_, sntryu_)",
        keywords: &["sntrys_", "sntryu_"],
        regex: r"\b(sntry[su]_[A-Za-z0-9+/=_]{60,})",
        entropy: 3.5,
        examples: &["SENTRY_AUTH_TOKEN=sntryu_{{h:64}}\n", "SENTRY_AUTH_TOKEN=sntrys_eyJ{{b64:120}}\n"],
        false_positives: &["SENTRY_AUTH_TOKEN=sntrys_<token>\n"],
        sample: S::Assign("sentry_auth_token", "sntryu_{{h:64}}"),
        ..BASE
    },
    Def {
        id: "new-relic-user-api-key",
        description: "New Relic user API key (NRAK-)",
        keywords: &["nrak-"],
        regex: r"\b(NRAK-[A-Z0-9]{27})\b",
        entropy: 3.0,
        examples: &["NEW_RELIC_API_KEY=NRAK-{{A:27}}\n"],
        false_positives: &["NEW_RELIC_API_KEY=NRAK-<key>\n"],
        sample: S::Assign("new_relic_api_key", "NRAK-{{A:27}}"),
        ..BASE
    },
    Def {
        id: "new-relic-license-key",
        description: "New Relic ingest license key (…NRAL)",
        keywords: &["nral"],
        regex: r"\b([a-f0-9]{36}NRAL)\b",
        entropy: 3.0,
        examples: &["NEW_RELIC_LICENSE_KEY={{h:36}}NRAL\n"],
        false_positives: &["NEW_RELIC_LICENSE_KEY=<key>NRAL\n"],
        sample: S::Assign("new_relic_license_key", "{{h:36}}NRAL"),
        ..BASE
    },
    Def {
        id: "datadog-api-key",
        description: "Datadog API or application key assigned to a Datadog variable",
        keywords: &["datadog", "dd_api", "dd_app", "ddapi", "ddapp", "dd-api", "dd-app"],
        regex: assign!(
            r"(?:datadog|dd)[\w.\-]{0,20}?(?:api|app|application)[_.\-]?key",
            r"[a-f0-9]{32}|[a-f0-9]{40}"
        ),
        entropy: 3.0,
        examples: &["DD_API_KEY={{h:32}}\n", "datadog_app_key: \"{{h:40}}\"\n"],
        false_positives: &["DD_API_KEY=${DATADOG_API_KEY}\n", "DD_SITE=datadoghq.eu\n"],
        sample: S::Assign("datadog_api_key", "{{h:32}}"),
        ..BASE
    },
    Def {
        id: "grafana-service-account-token",
        description: "Grafana service account token (glsa_)",
        keywords: &["glsa_"],
        regex: r"\b(glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})\b",
        entropy: 3.0,
        examples: &["GRAFANA_TOKEN=glsa_{{a:32}}_{{h:8}}\n"],
        false_positives: &["GRAFANA_TOKEN=glsa_<token>\n"],
        sample: S::Assign("grafana_token", "glsa_{{a:32}}_{{h:8}}"),
        ..BASE
    },
    Def {
        id: "grafana-cloud-token",
        description: "Grafana Cloud access policy / API token (glc_)",
        keywords: &["glc_"],
        regex: r"\b(glc_[A-Za-z0-9+/]{32,400}={0,2})",
        entropy: 3.5,
        examples: &["GRAFANA_CLOUD_TOKEN=glc_eyJ{{b64:120}}=\n"],
        false_positives: &["GRAFANA_CLOUD_TOKEN=glc_<token>\n"],
        sample: S::Assign("grafana_cloud_token", "glc_eyJ{{a:120}}"),
        ..BASE
    },
    Def {
        id: "vault-token",
        description: "HashiCorp Vault service, batch or recovery token (hvs., hvb., hvr.)",
        keywords: &["hvs.", "hvb.", "hvr."],
        regex: r"\b(hv[sbr]\.[A-Za-z0-9_\-]{24,})",
        entropy: 3.5,
        examples: &["VAULT_TOKEN=hvs.{{u64:90}}\n"],
        false_positives: &["VAULT_TOKEN=hvs.<token>\n"],
        sample: S::Assign("vault_token", "hvs.{{a:90}}"),
        ..BASE
    },
    Def {
        id: "terraform-cloud-token",
        description: "Terraform Cloud / Enterprise API token (….atlasv1.…)",
        keywords: &["atlasv1"],
        regex: r"\b([A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70})",
        entropy: 3.5,
        examples: &["credentials \"app.terraform.io\" {\n  token = \"{{a:14}}.atlasv1.{{u64:67}}\"\n}\n"],
        false_positives: &["token = \"<name>.atlasv1.<token>\"\n"],
        sample: S::Assign("tfc_token", "{{a:14}}.atlasv1.{{a:67}}"),
        ..BASE
    },
    Def {
        id: "pulumi-access-token",
        description: "Pulumi access token (pul-)",
        keywords: &["pul-"],
        regex: r"\b(pul-[a-f0-9]{40})\b",
        entropy: 3.0,
        examples: &["PULUMI_ACCESS_TOKEN=pul-{{h:40}}\n"],
        false_positives: &["PULUMI_ACCESS_TOKEN=pul-<token>\n"],
        sample: S::Assign("pulumi_access_token", "pul-{{h:40}}"),
        ..BASE
    },
    Def {
        id: "linear-api-key",
        description: "Linear API key (lin_api_)",
        keywords: &["lin_api_"],
        regex: r"\b(lin_api_[A-Za-z0-9]{40})\b",
        entropy: 3.0,
        examples: &["LINEAR_API_KEY=lin_api_{{a:40}}\n"],
        false_positives: &["LINEAR_API_KEY=lin_api_<key>\n"],
        sample: S::Assign("linear_api_key", "lin_api_{{a:40}}"),
        ..BASE
    },
    Def {
        id: "postman-api-key",
        description: "Postman API key (PMAK-)",
        keywords: &["pmak-"],
        regex: r"\b(PMAK-[a-f0-9]{24}-[a-f0-9]{34})\b",
        entropy: 3.0,
        examples: &["POSTMAN_API_KEY=PMAK-{{h:24}}-{{h:34}}\n"],
        false_positives: &["POSTMAN_API_KEY=PMAK-<key>\n"],
        sample: S::Assign("postman_api_key", "PMAK-{{h:24}}-{{h:34}}"),
        ..BASE
    },
    Def {
        id: "doppler-token",
        description: "Doppler token (dp.pt., dp.st., dp.sa., …)",
        keywords: &["dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."],
        regex: r"\b(dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44})\b",
        entropy: 3.5,
        examples: &["DOPPLER_TOKEN=dp.st.{{a:43}}\n"],
        false_positives: &["DOPPLER_TOKEN=dp.st.<token>\n"],
        sample: S::Assign("doppler_token", "dp.pt.{{a:43}}"),
        ..BASE
    },
    Def {
        id: "planetscale-token",
        description: "PlanetScale password or service token (pscale_pw_, pscale_tkn_, pscale_oauth_)",
        keywords: &["pscale_"],
        regex: r"\b(pscale_(?:pw|tkn|oauth)_[A-Za-z0-9_\-.=]{32,64})",
        entropy: 3.5,
        examples: &["DATABASE_PASSWORD=pscale_pw_{{u64:43}}\n"],
        false_positives: &["DATABASE_PASSWORD=pscale_pw_<password>\n"],
        sample: S::Assign("planetscale_password", "pscale_pw_{{a:43}}"),
        ..BASE
    },
    Def {
        id: "supabase-pat",
        description: "Supabase personal access token (sbp_)",
        keywords: &["sbp_"],
        regex: r"\b(sbp_[a-f0-9]{40})\b",
        entropy: 3.0,
        examples: &["SUPABASE_ACCESS_TOKEN=sbp_{{h:40}}\n"],
        false_positives: &["SUPABASE_ACCESS_TOKEN=sbp_<token>\n"],
        sample: S::Assign("supabase_access_token", "sbp_{{h:40}}"),
        ..BASE
    },
    Def {
        id: "firebase-cloud-messaging-key",
        description: "Firebase Cloud Messaging legacy server key (AAAA…:APA91b…)",
        keywords: &["apa91b"],
        regex: r"\b(AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{134})",
        entropy: 3.5,
        examples: &["FCM_SERVER_KEY=AAAA{{u64:7}}:APA91b{{u64:134}}\n"],
        false_positives: &["FCM_SERVER_KEY=AAAA<id>:APA91b<key>\n"],
        sample: S::Assign("fcm_server_key", "AAAA{{a:7}}:APA91b{{a:134}}"),
        ..BASE
    },
    Def {
        id: "okta-api-token",
        description: "Okta API token (00…) assigned to an Okta variable",
        keywords: &["okta"],
        regex: assign!(r"okta[\w.\-]{0,20}?(?:token|key|secret)", r"00[A-Za-z0-9_\-]{40}"),
        entropy: 3.5,
        examples: &["OKTA_API_TOKEN=00{{u64:40}}\n"],
        false_positives: &["OKTA_API_TOKEN=${OKTA_TOKEN}\n", "OKTA_DOMAIN=billing.okta.com\n"],
        sample: S::Assign("okta_api_token", "00{{a:40}}"),
        ..BASE
    },
    Def {
        id: "dynatrace-api-token",
        description: "Dynatrace API token (dt0c01.)",
        keywords: &["dt0c01."],
        regex: r"\b(dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64})\b",
        entropy: 3.0,
        examples: &["DT_API_TOKEN=dt0c01.{{A:24}}.{{A:64}}\n"],
        false_positives: &["DT_API_TOKEN=dt0c01.<token>\n"],
        sample: S::Assign("dynatrace_api_token", "dt0c01.{{A:24}}.{{A:64}}"),
        ..BASE
    },
    Def {
        id: "shippo-api-token",
        description: "Shippo API token (shippo_live_, shippo_test_)",
        keywords: &["shippo_"],
        regex: r"\b(shippo_(?:live|test)_[a-f0-9]{40})\b",
        entropy: 3.0,
        examples: &["SHIPPO_API_TOKEN=shippo_live_{{h:40}}\n"],
        false_positives: &["SHIPPO_API_TOKEN=shippo_live_<token>\n"],
        sample: S::Assign("shippo_api_token", "shippo_test_{{h:40}}"),
        ..BASE
    },
    Def {
        id: "dropbox-access-token",
        description: "Dropbox short-lived access token (sl.…)",
        keywords: &["sl."],
        regex: r"\b(sl\.[A-Za-z0-9_\-]{130,152})(?:[^A-Za-z0-9_\-]|$)",
        entropy: 3.5,
        examples: &["DROPBOX_TOKEN=sl.{{u64:140}}\n"],
        false_positives: &["import tensorflow.keras as tf; sl.append(x)\n"],
        sample: S::Assign("dropbox_token", "sl.{{a:140}}"),
        ..BASE
    },
    Def {
        id: "hubspot-private-app-token",
        description: "HubSpot private app access token (pat-na1-, pat-eu1-)",
        keywords: &["pat-na1-", "pat-eu1-"],
        regex: r"\b(pat-(?:na|eu)1-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12})\b",
        entropy: 3.0,
        examples: &["HUBSPOT_TOKEN=pat-na1-{{h:8}}-{{h:4}}-{{h:4}}-{{h:4}}-{{h:12}}\n"],
        false_positives: &["HUBSPOT_TOKEN=pat-na1-<token>\n"],
        sample: S::Assign("hubspot_token", "pat-eu1-{{h:8}}-{{h:4}}-{{h:4}}-{{h:4}}-{{h:12}}"),
        ..BASE
    },
    Def {
        id: "mapbox-secret-token",
        description: "Mapbox secret access token (sk.eyJ…)",
        keywords: &["sk.eyj"],
        regex: r"\b(sk\.eyJ[A-Za-z0-9_\-]{50,}\.[A-Za-z0-9_\-]{20,})",
        entropy: 3.5,
        examples: &["MAPBOX_SECRET_TOKEN=sk.eyJ1Ijoi{{u64:60}}.{{u64:22}}\n"],
        false_positives: &["MAPBOX_PUBLIC_TOKEN=pk.eyJ1Ijoi{{~u64:60}}.{{~u64:22}}\n"],
        sample: S::Assign("mapbox_secret_token", "sk.eyJ1Ijoi{{a:60}}.{{a:22}}"),
        ..BASE
    },
    Def {
        id: "braintree-access-token",
        description: "Braintree (PayPal) production access token",
        keywords: &["access_token$production$"],
        regex: r"(access_token\$production\$[a-z0-9]{16}\$[a-f0-9]{32})",
        examples: &["BRAINTREE_ACCESS_TOKEN=access_token$production${{l:16}}${{h:32}}\n"],
        false_positives: &["BRAINTREE_ACCESS_TOKEN=access_token$sandbox$<merchant>$<token>\n"],
        sample: S::Assign("braintree_access_token", "access_token$production${{l:16}}${{h:32}}"),
        ..BASE
    },
    // ---------------------------------------------------------------- formats: tokens, URLs, files
    Def {
        id: "jwt",
        description: "JSON Web Token (signed: header.payload.signature)",
        keywords: &["eyj"],
        regex: r"\b(eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,})",
        entropy: 3.0,
        examples: &["Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ{{u64:60}}.{{u64:43}}\n"],
        false_positives: &[
            "token = \"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c\"\n",
            "unsigned = \"eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.\"\n",
        ],
        sample: S::Assign("session_jwt", "eyJhbGciOiJSUzI1NiJ9.eyJ{{u64:80}}.{{u64:86}}"),
        ..BASE
    },
    Def {
        id: "npmrc-auth",
        description: ".npmrc registry credential (_authToken, _auth, _password)",
        keywords: &["_authtoken", "_auth", "_password"],
        regex: r#"(?m)(?:^|:)[ \t]*(?:_authToken|_auth|_password)[ \t]*=[ \t]*["']?([^\s"']{8,})"#,
        examples: &[
            "//registry.npmjs.org/:_authToken={{h:8}}-{{h:4}}-{{h:4}}-{{h:4}}-{{h:12}}\n",
            "//npm.pkg.github.com/:_auth={{b64:40}}\n",
        ],
        false_positives: &[
            "//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n",
            "_authToken is read from the environment\n",
            "db_password = \"{{~a:20}}\"\n",
        ],
        sample: S::File(
            ".npmrc",
            "registry=https://registry.npmjs.org/\n@billing:registry=https://npm.pkg.github.com/\n//npm.pkg.github.com/:_authToken={{h:8}}-{{h:4}}-{{h:4}}-{{h:4}}-{{h:12}}\nalways-auth=true\n",
        ),
        ..BASE
    },
    Def {
        id: "pypirc-password",
        description: ".pypirc repository password (a file with [pypi]/[distutils] sections)",
        keywords: &["password"],
        regex: r"(?m)^[ \t]*password[ \t]*[=:][ \t]*([^\s#;][^\r\n]*[^\s])",
        context: Some(r"(?m)^\[(?:pypi|testpypi|distutils)\]"),
        allow: &[(Target::Secret, PLACEHOLDER_PASSWORDS)],
        examples: &["[distutils]\nindex-servers =\n    pypi\n\n[pypi]\nusername = __token__\npassword = {{a:24}}\n"],
        false_positives: &[
            "[pypi]\nusername = __token__\npassword = ${PYPI_TOKEN}\n",
            "[pypi]\nrepository = https://upload.pypi.org/legacy/\n",
        ],
        sample: S::File(
            ".pypirc",
            "[distutils]\nindex-servers =\n    pypi\n\n[pypi]\nusername = billing-release\npassword = {{a:24}}\n",
        ),
        ..BASE
    },
    Def {
        id: "docker-config-auth",
        description: "Docker config.json registry credential (auths.*.auth, identitytoken)",
        keywords: &["\"auth\"", "\"identitytoken\""],
        regex: r#""(?:auth|identitytoken)"[ \t]*:[ \t]*"([A-Za-z0-9+/]{12,}={0,2})""#,
        entropy: 3.0,
        examples: &[r#"{"auths": {"https://index.docker.io/v1/": {"auth": "{{b64:40}}"}}}"#],
        false_positives: &[r#"{"auths": {"ghcr.io": {"auth": ""}}, "credsStore": "desktop"}"#],
        sample: S::File(
            ".docker/config.json",
            "{\n  \"auths\": {\n    \"registry.internal:5000\": {\n      \"auth\": \"{{b64:40}}\"\n    }\n  },\n  \"credsStore\": \"\"\n}\n",
        ),
        ..BASE
    },
    Def {
        id: "kubernetes-secret-manifest",
        description: "Kubernetes Secret manifest (YAML): the data/stringData block",
        keywords: &["kind: secret", "kind: \"secret\"", "kind: 'secret'", "kind:secret"],
        regex: r"(?m)^(?:data|stringData):[ \t]*\r?\n((?:[ \t]+[^\r\n]*\r?\n)*[ \t]+[^\r\n]*)",
        context: Some(r#"(?m)^kind:[ \t]*["']?Secret["']?[ \t]*\r?$"#),
        span: Span::File,
        examples: &[
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque\ndata:\n  username: {{b64:12}}\n  password: {{b64:24}}\n",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\nstringData:\n  API_TOKEN: {{a:32}}\n",
        ],
        false_positives: &[
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  LOG_LEVEL: info\n  FEATURE_FLAGS: billing,reports\n",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: ${DB_PASSWORD}\n",
        ],
        sample: S::File(
            "deploy/secret.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: billing-credentials\n  namespace: billing\ntype: Opaque\ndata:\n  username: {{b64:12}}\n  password: {{b64:32}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: billing-settings\n",
        ),
        ..BASE
    },
    Def {
        id: "netrc-credentials",
        description: ".netrc machine password",
        keywords: &["machine"],
        // No word boundary before `machine`: in a binary's printable runs a stray byte
        // often precedes it; the login/password structure that follows is specific enough.
        regex: r#"machine[ \t\r\n]+\S+[ \t\r\n]+(?:login[ \t\r\n]+\S+[ \t\r\n]+)?password[ \t\r\n]+"?([^\s"]+)"?"#,
        span: Span::Block,
        allow: &[(Target::Secret, PLACEHOLDER_PASSWORDS)],
        examples: &[
            "machine api.github.com\n  login deploy-bot\n  password {{a:40}}\n",
            "machine registry.internal login ci password {{a:24}}\n",
        ],
        false_positives: &[
            "machine learning models need a password manager\n",
            "machine default login anonymous password ${NETRC_PASSWORD}\n",
        ],
        sample: S::File(".netrc", "machine api.heroku.com\n  login deploy@billing.internal\n  password {{a:32}}\n"),
        ..BASE
    },
    Def {
        id: "database-url-password",
        description: "Database connection URL with a password (postgres, mysql, mongodb, mssql…)",
        keywords: &[
            "postgres", "mysql", "mariadb", "mongodb", "mssql", "sqlserver", "oracle", "cockroachdb", "clickhouse",
            "couchdb", "neo4j",
        ],
        regex: r#"(?i)\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|mssql|sqlserver|oracle|cockroachdb|clickhouse|couchdb|neo4j(?:\+s)?)://[^\s:@/"'<>]{0,128}:([^\s@/"'<>]{3,256})@[^\s@/"'<>]+"#,
        allow: &[(Target::Secret, PLACEHOLDER_PASSWORDS)],
        examples: &[
            "DATABASE_URL=postgres://billing:{{a:24}}@db.internal:5432/billing\n",
            "MONGO_URI=\"mongodb+srv://app:{{a:20}}@cluster0.mongodb.net/prod?retryWrites=true\"\n",
        ],
        false_positives: &[
            "DATABASE_URL=postgres://postgres:postgres@localhost:5432/dev\n",
            "DATABASE_URL=postgres://user:${DB_PASSWORD}@db:5432/app\n",
            "DATABASE_URL=postgres://localhost:5432/billing\n",
        ],
        sample: S::Assign("database_url", "postgresql://billing_app:{{a:24}}@db.internal:5432/billing"),
        ..BASE
    },
    Def {
        id: "broker-url-password",
        description: "Message broker / cache URL with a password (redis, amqp, nats, kafka, mqtt…)",
        keywords: &["redis", "amqp", "nats", "kafka", "mqtt", "stomp"],
        regex: r#"(?i)\b(?:rediss?|amqps?|nats|kafka|mqtts?|stomp)://[^\s:@/"'<>]{0,128}:([^\s@/"'<>]{3,256})@[^\s@/"'<>]+"#,
        allow: &[(Target::Secret, PLACEHOLDER_PASSWORDS)],
        examples: &[
            "REDIS_URL=rediss://:{{a:32}}@cache.internal:6380/0\n",
            "AMQP_URL=amqp://billing:{{a:20}}@mq.internal:5672/%2f\n",
        ],
        false_positives: &["CELERY_BROKER_URL=amqp://guest:guest@localhost:5672//\n", "REDIS_URL=redis://localhost:6379/0\n"],
        sample: S::Assign("redis_url", "rediss://default:{{a:32}}@cache.internal:6380/0"),
        ..BASE
    },
    Def {
        id: "basic-auth-url",
        description: "URL with user:password credentials (https, ftp, ssh, git, ldap, smtp…)",
        keywords: &["://"],
        regex: r#"(?i)\b(?:https?|ftps?|sftp|ssh|git|svn|ldaps?|smtps?|imaps?|pop3s?|wss?)://[^\s:@/"'<>]{1,128}:([^\s@/"'<>]{3,256})@[A-Za-z0-9.\-]+"#,
        allow: &[(Target::Secret, PLACEHOLDER_PASSWORDS)],
        examples: &[
            "git clone https://deploy:{{a:24}}@git.internal/billing.git\n",
            "PIP_INDEX_URL=https://__token__:{{a:32}}@pypi.internal/simple\n",
        ],
        false_positives: &[
            "https://user:password@example.com/\n",
            "https://oauth2:$CI_JOB_TOKEN@gitlab.com/group/repo.git\n",
            "https://${GIT_USER}:${GIT_TOKEN}@github.com/org/repo\n",
            "see https://docs.example.com/auth:basic@v2\n",
        ],
        sample: S::Assign("pip_index_url", "https://ci-reader:{{a:32}}@pypi.internal/simple"),
        ..BASE
    },
    Def {
        id: "authorization-bearer-token",
        description: "Bearer token in an Authorization header or curl command",
        keywords: &["bearer"],
        regex: r"(?i)\bbearer[ \t]+([A-Za-z0-9_\-.=~+/]{20,})",
        entropy: 3.5,
        checks: &[Check::WordLike, Check::DottedIdentifier],
        examples: &["curl -H \"Authorization: Bearer {{a:40}}\" https://api.internal/v1/invoices\n"],
        false_positives: &[
            "Authorization: Bearer ${API_TOKEN}\n",
            "headers = {\"Authorization\": \"Bearer \" + token}\n",
            "Authorization: Bearer <access-token>\n",
        ],
        sample: S::Assign("default_headers", "Authorization: Bearer {{a:40}}"),
        ..BASE
    },
    Def {
        id: "authorization-basic-header",
        description: "Basic credentials in an Authorization header",
        keywords: &["basic"],
        regex: r#"(?i)\bauthorization["']?[ \t]*[:=][ \t]*["']?basic[ \t]+([A-Za-z0-9+/]{12,}={0,2})"#,
        entropy: 3.0,
        examples: &["Authorization: Basic {{b64:32}}\n"],
        false_positives: &["Authorization: Basic <base64 user:pass>\n", "auth_type = \"basic\"\n"],
        sample: S::Assign("proxy_headers", "Authorization: Basic {{b64:32}}"),
        ..BASE
    },
    // ---------------------------------------------------------------- frameworks, keystores
    Def {
        id: "private-key-ssh1",
        description: "SSH protocol 1 private key file (binary; found in its printable runs)",
        keywords: &["ssh private key file format 1.1"],
        regex: r"SSH PRIVATE KEY FILE FORMAT 1\.1",
        examples: &["SSH PRIVATE KEY FILE FORMAT 1.1\n"],
        false_positives: &["SSH PRIVATE KEY FILE FORMAT 2\n"],
        sample: S::File("legacy/identity", "SSH PRIVATE KEY FILE FORMAT 1.1\n{{~a:40}}\n"),
        ..BASE
    },
    Def {
        id: "django-secret-key",
        description: "Django SECRET_KEY (django-insecure- prefix, or get_random_secret_key's alphabet with its punctuation)",
        keywords: &["secret_key"],
        regex: r#"(?i)secret_key["']?[ \t]*(?:=|:|=>)[ \t]*(?:os\.environ\.get\([^,]{1,40},[ \t]*|env\([^,]{1,40},[ \t]*(?:default=)?)?["'](django-insecure-[a-z0-9!@#$%^&*(\-_=+)]{32,}|[a-z0-9!@#$%^&*(\-_=+)]{0,80}[!@#$%^&*(=+)][a-z0-9!@#$%^&*(\-_=+)]{0,80})["']"#,
        entropy: 3.5,
        examples: &[
            "@path=mysite/settings.py\nSECRET_KEY = 'django-insecure-{{dj:50}}'\n",
            "@path=mysite/settings.py\nSECRET_KEY = os.environ.get(\"DJANGO_SECRET_KEY\", \"{{dj:50}}\")\n",
        ],
        false_positives: &[
            "@path=mysite/settings.py\nSECRET_KEY = os.environ[\"DJANGO_SECRET_KEY\"]\n",
            "@path=mysite/settings.py\nSECRET_KEY = 'django-insecure-change-me-in-production-please-xxxxxxxx'\n",
        ],
        sample: S::File(
            "mysite/settings.py",
            "from pathlib import Path\n\nBASE_DIR = Path(__file__).resolve().parent.parent\n\n# SECURITY WARNING: keep the secret key used in production secret!\nSECRET_KEY = 'django-insecure-{{dj:50}}'\n\nDEBUG = True\nALLOWED_HOSTS = []\n",
        ),
        ..BASE
    },
    Def {
        id: "flask-secret-key",
        description: "Flask secret_key / SECRET_KEY, incl. a bytes literal with \\x escapes (entropy ≥ 3.5)",
        keywords: &["secret_key"],
        regex: r#"(?i)(?:(?:\.secret_key|\[["']secret_key["']\])[ \t]*=[ \t]*b?["']((?:\\x[0-9a-fA-F]{2}|[^"'\\\s]){16,})["']|secret_key[ \t]*=[ \t]*b["']((?:\\x[0-9a-fA-F]{2}|[^"'\\\s]){12,})["'])"#,
        entropy: 3.5,
        examples: &[
            "@path=app/__init__.py\napp.secret_key = b'{{a:8}}\\x8f\\x1c{{a:8}}\\xe2'\n",
            "@path=app/config.py\napp.config['SECRET_KEY'] = '{{h:48}}'\n",
        ],
        false_positives: &[
            "@path=app/config.py\napp.config['SECRET_KEY'] = os.urandom(24)\n",
            "@path=app/config.py\napp.secret_key = 'dev'\n",
        ],
        sample: S::File(
            "app/__init__.py",
            "from flask import Flask\n\napp = Flask(__name__)\napp.config['SECRET_KEY'] = '{{u64:43}}'\n\n@app.route('/')\ndef index():\n    return 'ok'\n",
        ),
        ..BASE
    },
    Def {
        id: "rails-secret-key-base",
        description: "Rails secret_key_base (128 hex) (entropy ≥ 3)",
        keywords: &["secret_key_base", "secretkeybase"],
        regex: assign!("secret_?key_?base", "[0-9a-f]{64,}"),
        entropy: 3.0,
        examples: &["production:\n  secret_key_base: {{h:128}}\n", "SECRET_KEY_BASE={{h:128}}\n"],
        false_positives: &["secret_key_base: <%= ENV[\"SECRET_KEY_BASE\"] %>\n"],
        sample: S::Assign("secret_key_base", "{{h:128}}"),
        ..BASE
    },
    Def {
        id: "rails-master-key",
        description: "Rails master key (RAILS_MASTER_KEY, or the whole of config/master.key or config/credentials/*.key)",
        keywords: &["master_key", "masterkey"],
        regex: assign!("(?:rails_?)?master_?key", "[0-9a-f]{32}"),
        entropy: 3.0,
        examples: &["RAILS_MASTER_KEY={{h:32}}\n"],
        false_positives: &["RAILS_MASTER_KEY=${{ secrets.RAILS_MASTER_KEY }}\n"],
        sample: S::Assign("rails_master_key", "{{h:32}}"),
        ..BASE
    },
    Def {
        id: "rails-master-key-file",
        description: "Rails config/master.key or config/credentials/<env>.key (32 hex, the whole file)",
        keywords: &[],
        regex: r"\A[ \t\r\n]*([0-9a-f]{32})[ \t\r\n]*\z",
        path: Some(r"(?:^|/)config/(?:master|credentials/[\w.\-]+)\.key$"),
        entropy: 3.0,
        examples: &["@path=config/master.key\n{{h:32}}"],
        false_positives: &["@path=config/other.key\n{{~h:32}}"],
        sample: S::File("config/credentials/production.key", "{{h:32}}"),
        ..BASE
    },
    Def {
        id: "laravel-app-key",
        description: "Laravel APP_KEY (base64: + a 32-byte key) (entropy ≥ 4)",
        keywords: &["base64:"],
        regex: r"(?:^|[^A-Za-z0-9+/])(base64:[A-Za-z0-9+/]{43}=)",
        entropy: 4.0,
        examples: &["APP_KEY=base64:{{b64:43}}=\n", "'key' => env('APP_KEY', 'base64:{{b64:43}}='),\n"],
        false_positives: &["APP_KEY=\n", "<img src=\"data:image/png;base64,{{~b64:60}}\">\n"],
        sample: S::Assign("app_key", "base64:{{b64:43}}="),
        ..BASE
    },
    Def {
        id: "symfony-app-secret",
        description: "Symfony APP_SECRET / framework.secret (entropy ≥ 3)",
        keywords: &["app_secret", "appsecret"],
        regex: assign!("app_?secret", r"[0-9a-fA-F]{32,}|[A-Za-z0-9+/=_\-]{20,}"),
        entropy: 3.0,
        examples: &["APP_SECRET={{h:32}}\n", "    APP_SECRET: '{{h:40}}'\n"],
        false_positives: &["APP_SECRET=\n", "secret: '%env(APP_SECRET)%'\n"],
        sample: S::Assign("app_secret", "{{h:32}}"),
        ..BASE
    },
    Def {
        id: "jwt-signing-secret",
        description: "JWT / session signing secret: a JWT_SECRET-like name, or the key argument of jwt.sign(...) (entropy ≥ 3.3)",
        keywords: &["jwt", ".sign("],
        regex: r#"(?i)(?:jwt[\w.\-]*?(?:secret|key|signing)[\w.\-]*["']?[ \t]*(?:=|:=|:|=>)[ \t]*["'`]?([^\s"'`,;)]{12,})|\.sign\([^,()\r\n]{1,100},[ \t]*["'`]([^"'`\s]{12,})["'`])"#,
        entropy: 3.3,
        examples: &[
            "JWT_SECRET={{a:32}}\n",
            "@path=src/auth.js\nconst token = jwt.sign({ sub: user.id }, '{{a:24}}', { expiresIn: '1h' });\n",
        ],
        false_positives: &[
            "JWT_SECRET=${JWT_SECRET}\n",
            "@path=src/auth.js\nconst token = jwt.sign(payload, process.env.JWT_SECRET);\n",
            "jwt_signing_algorithm: RS256\n",
        ],
        sample: S::Assign("jwt_secret", "{{a:32}}"),
        ..BASE
    },
    Def {
        id: "express-session-secret",
        description: "Express / Koa session or cookie secret (secret: '...' passed to session(), cookieParser(...)) (entropy ≥ 3.3)",
        keywords: &["session(", "cookieparser(", "cookie-session"],
        regex: r#"(?i)(?:session\(\s*\{[^}]{0,200}?\bsecret[ \t]*:[ \t]*["'`]([^"'`\s]{12,})["'`]|cookieParser\([ \t]*["'`]([^"'`\s]{12,})["'`])"#,
        entropy: 3.3,
        span: Span::Block,
        examples: &[
            "@path=server.js\napp.use(session({\n  secret: '{{a:32}}',\n  resave: false,\n}));\n",
            "@path=server.js\napp.use(cookieParser('{{a:24}}'));\n",
        ],
        false_positives: &["@path=server.js\napp.use(session({ secret: process.env.SESSION_SECRET }));\n"],
        sample: S::File(
            "server.js",
            "const express = require('express');\nconst session = require('express-session');\nconst app = express();\napp.use(session({\n  secret: '{{a:32}}',\n  resave: false,\n  saveUninitialized: true,\n}));\napp.listen(3000);\n",
        ),
        ..BASE
    },
    Def {
        id: "kubeconfig-user-credential",
        description: "kubeconfig user credential (token, id-token, refresh-token, client-secret, password) (entropy ≥ 3.3)",
        keywords: &["token:", "client-secret:", "password:"],
        regex: r#"(?m)^[ \t]+(?:-[ \t]+)?(?:token|id-token|refresh-token|access-token|client-secret|password):[ \t]*["']?([A-Za-z0-9._~+/=:\-]{12,})["']?[ \t]*\r?$"#,
        context: Some(r"(?m)^(?:kind:[ \t]*Config|users:|contexts:)"),
        entropy: 3.3,
        examples: &[
            "apiVersion: v1\nkind: Config\nusers:\n- name: ci\n  user:\n    token: {{u64:40}}\n",
        ],
        false_positives: &["apiVersion: v1\nkind: Config\nusers:\n- name: ci\n  user:\n    token: ${KUBE_TOKEN}\n"],
        sample: S::File(
            "deploy/ci.kubeconfig.yaml",
            "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n  name: prod\ncontexts:\n- context:\n    cluster: prod\n    user: deployer\n  name: prod\ncurrent-context: prod\nusers:\n- name: deployer\n  user:\n    token: {{a:12}}.{{u64:40}}\n",
        ),
        ..BASE
    },
    // ---------------------------------------------------------------- fallbacks (last)
    Def {
        id: "generic-secret-assignment",
        description: "High-entropy value assigned to a key/token/secret/credential/auth name",
        keywords: &["key", "token", "secret", "credential", "passphrase", "auth"],
        regex: assign!(
            r"[\w.\-]*(?:key|token|secret|credential|passphrase|auth)",
            r"[A-Za-z0-9+/_\-.=~!@#$%^*]{16}[A-Za-z0-9+/_\-.=~!@#$%^*]*"
        ),
        entropy: 3.5,
        fallback: true,
        checks: &[Check::DigestOrUuid, Check::WordLike, Check::DottedIdentifier],
        allow: &[(Target::Match, WEAK_NAMES)],
        examples: &[
            "API_KEY={{a:32}}\n",
            r#"{"client_secret": "{{a:40}}"}"#,
            "auth_token: {{u64:48}}\n",
            "SECRET_KEY = \"{{h:64}}\"\n",
        ],
        false_positives: &[
            "cache_key = \"{{~h:40}}\"\n",
            "request_key: {{~h:8}}-{{~h:4}}-4{{~h:3}}-a{{~h:3}}-{{~h:12}}\n",
            "token = getToken(request)\n",
            "secret_name: my-tls-secret-name\n",
            "public_key = \"MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA{{~b64:40}}\"\n",
            "\"integrity\": \"sha512-{{~b64:86}}==\"\n",
            "author = \"Jane Doe <jane@example.org>\"\n",
            "API_KEY=your_api_key_here\n",
            "sort_key = \"user_profile_12345\"\n",
            "api_key = config.api_key\n",
            "authorization_url = \"https://auth.example.org/oauth/authorize\"\n",
            "ssh_key: AAAAC3NzaC1lZDI1NTE5AAAAI{{~b64:43}}\n",
            "@path=distutils/msvccompiler.py\nRegOpenKeyEx = win32api.RegOpenKeyEx\n",
        ],
        sample: S::Assign("api_key", "{{a:32}}"),
        ..BASE
    },
    Def {
        id: "generic-password-assignment",
        description: "Password assigned in config or code (not a placeholder, name or expression)",
        keywords: &["pass", "pwd"],
        regex: assign!(
            r"[\w.\-]*(?:password|passwd|passphrase|pwd|[_.\-]pass)",
            r#"[^\s"'`,;&()\[\]{}<>|\\]{8}[^\s"'`,;&()\[\]{}<>|\\]*"#
        ),
        entropy: 3.0,
        fallback: true,
        checks: &[Check::DottedIdentifier, Check::WordLikeMulti],
        allow: &[(Target::Secret, PLACEHOLDER_PASSWORDS), (Target::Match, WEAK_NAMES)],
        examples: &[
            "DB_PASSWORD={{a:16}}\n",
            "password: \"{{a:12}}!\"\n",
            r#"{"adminPassword": "{{a:20}}"}"#,
            "@path=app/db.py\nconn = connect(\"host=db user=app password={{a:16}}\")\n",
        ],
        false_positives: &[
            "password = os.getenv(\"DB_PASSWORD\")\n",
            "password: \"{{ vault_db_password }}\"\n",
            "PASSWORD_RESET_URL = \"/accounts/password/reset/\"\n",
            "password = \"changeme\"\n",
            "password_hash = \"$2b$12${{~b64:53}}\"\n",
            "password_field = \"confirm_password\"\n",
            "password: ********\n",
            "password = self.password\n",
            "@path=logging/handlers.py\nself.username, self.password = credentials\n",
        ],
        sample: S::Assign("db_password", "{{a:20}}"),
        ..BASE
    },
];

/// `d` as a [`Rule`]; with `templates`, its examples, false positives and corpus sample too.
fn to_rule(d: &Def, templates: bool) -> Rule {
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
    if d.fallback {
        allowlists.push(Allowlist {
            description: "in source code, an unquoted value is an expression, not a literal".into(),
            condition: Condition::And,
            paths: vec![CODE_FILES.into()],
            regex_target: Target::Match,
            regexes: vec![UNQUOTED_IDENTIFIER.into()],
            ..Allowlist::default()
        });
    }
    let sample = match d.sample {
        _ if !templates => None,
        S::None => None,
        S::Assign(name, value) => Some(Sample::Assign {
            name: name.into(),
            value: value.into(),
            formats: Format::ALL.to_vec(),
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
        examples: if templates {
            d.examples.iter().map(|e| (*e).to_string()).collect()
        } else {
            Vec::new()
        },
        false_positives: if templates {
            d.false_positives.iter().map(|e| (*e).to_string()).collect()
        } else {
            Vec::new()
        },
        sample,
        source: RuleSource::Builtin,
    }
}

/// The built-in rules, in priority order.
pub fn default_rules() -> Vec<Rule> {
    DEFS.iter().map(|d| to_rule(d, true)).collect()
}

/// The built-in rules as a scan runs them: [`default_rules`] without their test templates
/// (examples, false positives, corpus samples: ~1,100 strings that only tests, benchmarks
/// and `scan/RULES.md` read, copied by every `airlock gate` and `pack` otherwise).
pub fn default_detectors() -> Vec<Rule> {
    DEFS.iter().map(|d| to_rule(d, false)).collect()
}

/// The built-in global allowlists: placeholders, known public values, and documented
/// example credentials.
pub fn default_global_allowlists() -> Vec<Allowlist> {
    vec![
        Allowlist {
            description: "placeholders, documentation examples, public values".into(),
            checks: vec![Check::Placeholder, Check::KnownPublic],
            ..Allowlist::default()
        },
        Allowlist {
            description: "documented example credentials".into(),
            regexes: vec![
                // The example token on jwt.io (its signature part).
                r"SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c".into(),
            ],
            ..Allowlist::default()
        },
    ]
}
