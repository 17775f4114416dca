//! Benign look-alikes must not be reported: digests, UUIDs, documented example keys,
//! public keys and certificates, placeholders, lockfile integrity hashes.

use super::common::{describe, scanner};
use airlock_scan::testgen::{realistic_file, render, Format, Rng};

const SEED: u64 = 0xB3_9E_17;

/// `(name, value template)` pairs that look like secrets but are not.
const LOOK_ALIKES: &[(&str, &str)] = &[
    ("checksum", "{{~h:64}}"),
    ("sha256", "sha256:{{~h:64}}"),
    ("commit", "{{~h:40}}"),
    ("cache_key", "{{~h:40}}"),
    ("etag", "W/{{~h:32}}"),
    ("api_key_sha256", "{{~h:64}}"),
    ("request_id", "{{~h:8}}-{{~h:4}}-4{{~h:3}}-8{{~h:3}}-{{~h:12}}"),
    ("idempotency_key", "{{~h:8}}-{{~h:4}}-4{{~h:3}}-9{{~h:3}}-{{~h:12}}"),
    ("trace_token_id", "{{~h:32}}"),
    ("aws_access_key_id", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_access_key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("public_key", "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA{{~b64:300}}IDAQAB"),
    ("ssh_public_key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{{~b64:43}} ci@billing"),
    ("deploy_key", "AAAAB3NzaC1yc2EAAAADAQABAAABAQ{{~b64:300}}"),
    (
        "ca_certificate",
        "-----BEGIN CERTIFICATE-----\nMIID{{~b64:60}}\n{{~pem:6}}\n{{~b64:20}}==\n-----END CERTIFICATE-----",
    ),
    ("server_public_key", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA{{~b64:20}}\n{{~pem:5}}\n-----END PUBLIC KEY-----"),
    ("certificate_authority_data", "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM{{~b64:400}}"),
    ("api_key", "${API_KEY}"),
    ("token", "<your-token>"),
    ("auth_token", "{{ .Values.authToken }}"),
    ("password", "changeme"),
    ("client_secret", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
    ("secret_key", "your_secret_key_here"),
    ("db_password", "********"),
    ("stripe_key", "sk_live_xxxxxxxxxxxxxxxxxxxxxxxx"),
    ("github_token", "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
    ("integrity", "sha512-{{~b64:86}}=="),
    ("lock_integrity", "sha384-{{~b64:64}}"),
    ("go_sum", "h1:{{~b64:43}}="),
    ("secret_name", "billing-tls-secret"),
    ("token_url", "https://auth.billing.internal/oauth/token"),
    ("password_reset_path", "/accounts/password/reset/"),
    ("session_key_prefix", "billing_session_"),
];

#[test]
fn look_alikes_in_every_format_are_not_reported() {
    let mut rng = Rng::new(SEED);
    let mut failures = Vec::new();
    for format in Format::ALL {
        let assignments: Vec<(String, String)> = LOOK_ALIKES
            .iter()
            .map(|(n, v)| ((*n).to_string(), render(v, &mut rng).text))
            .collect();
        let (text, _) = realistic_file(format, &assignments, &mut rng);
        let findings = scanner().scan(format.file_name(), text.as_bytes());
        if !findings.is_empty() {
            failures.push(format!("{:?}: [{}]", format, describe(&findings)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn lockfiles_are_not_reported() {
    let mut rng = Rng::new(SEED + 1);
    let files = [
        (
            "package-lock.json",
            "{\n  \"name\": \"billing\",\n  \"lockfileVersion\": 3,\n  \"packages\": {\n    \"node_modules/left-pad\": {\n      \"version\": \"1.3.0\",\n      \"resolved\": \"https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz\",\n      \"integrity\": \"sha512-{{~b64:86}}==\"\n    }\n  }\n}\n",
        ),
        (
            "yarn.lock",
            "left-pad@^1.3.0:\n  version \"1.3.0\"\n  resolved \"https://registry.yarnpkg.com/left-pad/-/left-pad-1.3.0.tgz#{{~h:40}}\"\n  integrity sha512-{{~b64:86}}==\n",
        ),
        (
            "pnpm-lock.yaml",
            "packages:\n  /left-pad@1.3.0:\n    resolution: {integrity: sha512-{{~b64:86}}==}\n    dev: false\n",
        ),
        ("go.sum", "github.com/google/uuid v1.6.0 h1:{{~b64:43}}=\ngithub.com/google/uuid v1.6.0/go.mod h1:{{~b64:43}}=\n"),
        (
            "Cargo.lock",
            "[[package]]\nname = \"serde\"\nversion = \"1.0.200\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{{~h:64}}\"\n",
        ),
        (
            "poetry.lock",
            "[[package]]\nname = \"requests\"\nversion = \"2.32.3\"\nfiles = [\n    {file = \"requests-2.32.3-py3-none-any.whl\", hash = \"sha256:{{~h:64}}\"},\n]\n",
        ),
    ];
    for (path, template) in files {
        let text = render(template, &mut rng).text;
        let findings = scanner().scan(path, text.as_bytes());
        assert!(findings.is_empty(), "{path}: [{}]", describe(&findings));
    }
}

#[test]
fn inline_allow_comment_suppresses_only_its_line() {
    let mut rng = Rng::new(SEED + 2);
    let token = render("ghp_{{a:36}}", &mut rng).text;
    let text = format!("a = \"{token}\"  # airlock:allow test fixture\nb = \"{token}\"\n");
    let findings = scanner().scan("f.py", text.as_bytes());
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].line, 2);
    // The gate turns inline waivers off for untrusted text.
    let strict = airlock_scan::Scanner::with_default_rules()
        .unwrap()
        .with_inline_allow(false);
    assert_eq!(strict.scan("f.py", text.as_bytes()).len(), 2);
}
