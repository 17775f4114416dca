//! Values that look like secrets and are not: digests, integrity hashes, UUIDs, public
//! keys, certificates, placeholders, documentation example keys, test vectors, encoded
//! public data. Each family is a generator (random where the real thing is random), so the
//! corpus tests the family, not one string.

use super::keys;
use crate::testgen::{render, Rng};

/// A look-alike: its family and a whole file (path, text).
pub struct LookAlike {
    /// Family name (reported per family).
    pub family: &'static str,
    /// File path.
    pub path: String,
    /// File text.
    pub text: String,
}

fn r(t: &str, rng: &mut Rng) -> String {
    render(t, rng).text
}

/// Every family, each called `n` times with fresh randomness.
pub fn generate(rng: &mut Rng, n: usize) -> Vec<LookAlike> {
    type Gen = fn(&mut Rng, usize) -> (&'static str, String, String);
    const FAMILIES: &[Gen] = &[
        digest,
        sri,
        uuid,
        public_key,
        certificate,
        placeholder,
        doc_example,
        test_vector,
        lockfile,
        encoded_public,
        split_prose,
        minified,
    ];
    let mut out = Vec::new();
    for i in 0..n {
        for f in FAMILIES {
            let (family, path, text) = f(rng, i);
            out.push(LookAlike { family, path, text });
        }
    }
    out
}

fn digest(rng: &mut Rng, i: usize) -> (&'static str, String, String) {
    let t = [
        "image: registry.example.com/api@sha256:{{h:64}}\n",
        "checksum: sha256:{{h:64}}\nsize: 10485760\n",
        "cache_key = \"{{h:40}}\"\n",
        "commit: {{h:40}}\nparent: {{h:40}}\n",
        "ETag: \"{{h:32}}\"\n",
        "content_md5 = '{{h:32}}'\n",
        "SHA512 ({{L:6}}.tar.gz) = {{h:128}}\n",
        "const BUILD_HASH = \"{{h:64}}\";\n",
        "{{h:64}}  dist/app-{{d:1}}.{{d:2}}.0-linux-amd64.tar.gz\n",
        "fingerprint: SHA256:{{b64:43}}\n",
    ];
    let text = r(t[i % t.len()], rng);
    ("digest", format!("digest/{i:03}/SHA256SUMS.txt"), text)
}

fn sri(rng: &mut Rng, i: usize) -> (&'static str, String, String) {
    let t = [
        "<script src=\"https://cdn.jsdelivr.net/npm/bootstrap@5.3.3/dist/js/bootstrap.bundle.min.js\" integrity=\"sha384-{{b64:64}}\" crossorigin=\"anonymous\"></script>\n",
        "<link rel=\"stylesheet\" href=\"https://cdnjs.cloudflare.com/x.css\" integrity=\"sha512-{{b64:86}}==\" crossorigin=\"anonymous\" referrerpolicy=\"no-referrer\" />\n",
        "    \"node_modules/lodash\": {\n      \"version\": \"4.17.21\",\n      \"resolved\": \"https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz\",\n      \"integrity\": \"sha512-{{b64:86}}==\"\n    }\n",
        "integrity: sha256-{{b64:43}}=\n",
    ];
    (
        "sri-integrity",
        format!("sri/{i:03}/index.html"),
        r(t[i % t.len()], rng),
    )
}

fn uuid(rng: &mut Rng, i: usize) -> (&'static str, String, String) {
    let u = "{{h:8}}-{{h:4}}-4{{h:3}}-a{{h:3}}-{{h:12}}";
    let t = [
        format!("request_id: {u}\ntenant_id: {u}\n"),
        format!("{{\"id\": \"{u}\", \"correlationId\": \"{u}\"}}\n"),
        format!("subscription_id = \"{u}\"\nclient_id = \"{u}\"\n"),
        format!("const SESSION_ID = '{u}';\n"),
        format!("ProjectGuid = \"{u}\"\n"),
    ];
    (
        "uuid",
        format!("uuid/{i:03}/ids.yaml"),
        r(&t[i % t.len()], rng),
    )
}

fn public_key(rng: &mut Rng, i: usize) -> (&'static str, String, String) {
    let kind = keys::OPENSSH_TYPES[i % 2];
    let text = match i % 5 {
        0 | 1 => keys::openssh_public_key(rng, kind, "deploy@ci") + "\n",
        2 => keys::pem("PUBLIC KEY", &keys::der_certificate(rng)),
        3 => r("{\"kty\": \"RSA\", \"use\": \"sig\", \"kid\": \"{{h:16}}\", \"alg\": \"RS256\", \"e\": \"AQAB\", \"n\": \"{{u64:342}}\"}\n", rng),
        _ => format!(
            "github.com {}\n",
            keys::openssh_public_key(rng, "ssh-ed25519", "").trim_end()
        ),
    };
    ("public-key", format!("pubkey/{i:03}/authorized_keys"), text)
}

fn certificate(rng: &mut Rng, i: usize) -> (&'static str, String, String) {
    let der = keys::der_certificate(rng);
    let pem = keys::pem("CERTIFICATE", &der);
    let text = match i % 3 {
        0 => pem,
        1 => format!(
            "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {}\n    server: https://10.0.0.1:6443\n  name: dev\n",
            keys::base64(pem.as_bytes())
        ),
        _ => format!("ssl_certificate = \"\"\"{pem}\"\"\"\n"),
    };
    ("certificate", format!("cert/{i:03}/ca.crt"), text)
}

fn placeholder(rng: &mut Rng, i: usize) -> (&'static str, String, String) {
    let t = [
        "API_KEY=${API_KEY}\n",
        "password: \"<your-password>\"\n",
        "token: changeme\n",
        "SECRET_KEY=your-secret-key-here\n",
        "aws_secret_access_key = xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
        "token: \"{{ .Values.api.token }}\"\n",
        "secret: '%env(APP_SECRET)%'\n",
        "api_key = os.environ[\"API_KEY\"]\n",
        "const apiKey = process.env.STRIPE_SECRET_KEY;\n",
        "DATABASE_URL=postgres://user:password@localhost:5432/app\n",
        "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
        "client_secret: ********\n",
        "JWT_SECRET=<set-me>\n",
        "password = getpass.getpass(\"Password: \")\n",
    ];
    (
        "placeholder",
        format!("placeholder/{i:03}/config.yaml"),
        r(t[i % t.len()], rng),
    )
}

fn doc_example(rng: &mut Rng, i: usize) -> (&'static str, String, String) {
    let t = [
        "aws_access_key_id = AKIA{{U:9}}EXAMPLE\n",
        "aws_secret_access_key = {{a:10}}/K7MDENG/{{a:8}}EXAMPLEKEY\n",
        "# e.g. AKIAIOSFODNN7EXAMPLE and wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        "Authorization: Bearer EXAMPLE_TOKEN_{{U:4}}\n",
        "slack_webhook: https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX\n",
    ];
    (
        "doc-example",
        format!("docs/{i:03}/setup.md"),
        r(t[i % t.len()], rng),
    )
}

fn test_vector(rng: &mut Rng, i: usize) -> (&'static str, String, String) {
    let seq: String = (0..32u8).map(|b| format!("{b:02x}")).collect();
    let t = [
        format!("# RFC 4231 test case 1\nkey = 0x{}\ndata = \"Hi There\"\n", "0b".repeat(20)),
        format!("    key: \"{seq}\",\n    nonce: \"000000000000004a00000000\",\n"),
        format!("KEY = bytes.fromhex(\"{}\")\n", "aa".repeat(131)),
        "plaintext = \"00112233445566778899aabbccddeeff\"\nkey = \"000102030405060708090a0b0c0d0e0f\"\n".to_owned(),
        format!("secret = b\"{}\"\n", "\\x00".repeat(32)),
    ];
    let _ = rng.next_u64();
    (
        "test-vector",
        format!("tests/vectors/{i:03}/kat.txt"),
        t[i % t.len()].clone(),
    )
}

fn lockfile(rng: &mut Rng, i: usize) -> (&'static str, String, String) {
    let t = [
        "github.com/stretchr/testify v1.9.0 h1:{{b64:43}}=\ngithub.com/stretchr/testify v1.9.0/go.mod h1:{{b64:43}}=\n",
        "[[package]]\nname = \"serde\"\nversion = \"1.0.210\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{{h:64}}\"\n",
        "\"@babel/core@^7.0.0\":\n  version \"7.24.0\"\n  resolved \"https://registry.yarnpkg.com/@babel/core/-/core-7.24.0.tgz#{{h:40}}\"\n  integrity sha512-{{b64:86}}==\n",
        "requests==2.32.3 \\\n    --hash=sha256:{{h:64}} \\\n    --hash=sha256:{{h:64}}\n",
    ];
    (
        "lockfile",
        format!("lock/{i:03}/go.sum"),
        r(t[i % t.len()], rng),
    )
}

fn encoded_public(rng: &mut Rng, i: usize) -> (&'static str, String, String) {
    let plain = r(
        "log_level=info\nregion=eu-west-{{d:1}}\nreplicas={{d:1}}\nservice_name=billing-api\n",
        rng,
    );
    let text = match i % 3 {
        0 => format!("apiVersion: v1\nkind: ConfigMap\nbinaryData:\n  settings.env: {}\n", keys::base64(plain.as_bytes())),
        1 => r("<img alt=\"logo\" src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA{{b64:200}}\">\n", rng),
        _ => format!("redirect = \"https://example.com/cb?next=%2Fhome%3Fa%3D1&state={}\"\n", r("{{h:16}}", rng)),
    };
    (
        "encoded-public",
        format!("encoded/{i:03}/values.yaml"),
        text,
    )
}

fn split_prose(rng: &mut Rng, i: usize) -> (&'static str, String, String) {
    let t = [
        "const msg = \"The quick brown fox \" +\n  \"jumps over the lazy dog\";\n",
        "query = (\"SELECT id, name FROM users \"\n         \"WHERE created_at > %s ORDER BY id\")\n",
        "String url = \"https://api.example.com/v1/\" + resource + \"?limit=100\";\n",
        "let banner = concat!(\"airlock \", \"version \", \"1.0\");\n",
        "const path = [\"src\", \"components\", \"Button.tsx\"].join(\"/\");\n",
    ];
    let _ = rng.next_u64();
    (
        "split-prose",
        format!("split/{i:03}/strings.js"),
        t[i % t.len()].to_owned(),
    )
}

fn minified(rng: &mut Rng, i: usize) -> (&'static str, String, String) {
    let mut line = String::from("!function(e){\"use strict\";");
    while line.len() < 20_000 {
        line.push_str(&r(
            "var {{L:2}}=\"{{h:40}}\",{{L:2}}=\"{{h:8}}-{{h:4}}-4{{h:3}}-a{{h:3}}-{{h:12}}\";e.{{L:4}}=function(t){return t+{{d:3}}};",
            rng,
        ));
    }
    line.push_str("}(window);\n");
    ("minified", format!("dist/{i:03}/app.min.js"), line)
}
