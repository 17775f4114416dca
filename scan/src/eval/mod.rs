//! The evaluation corpus: secrets of every built-in format plus key and keystore formats
//! built from their specifications (`keys.rs`), placed in realistic files in every context
//! a scanner must see through (plain, multi-line, binary, UTF-16, base64-encoded, long
//! lines, split literals), and look-alikes that must stay quiet (`lookalikes.rs`).
//! Generated from [`SEED`]: the same bytes on every run, no secret-shaped literal in the
//! repository. `scan/tests/suite/eval.rs` measures recall and false positives on it;
//! `tests/suite/pack.rs` packs it.

pub mod keys;
mod lookalikes;

use std::ops::Range;

use crate::testgen::{assignment, realistic_file, render, Format, Rng, Sample};

/// The corpus seed.
pub const SEED: u64 = 0x00A1_2C0C_E7A1_5EED;

/// Where a secret sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Context {
    /// One line of a text file.
    Plain,
    /// A multi-line value (a key block) in a text file.
    MultiLine,
    /// Inside a binary file (database page, image metadata, PDF, cache, wide strings).
    Binary,
    /// A text file in UTF-16 (LE with and without BOM, BE).
    Utf16,
    /// Base64-encoded inside a text file.
    Base64,
    /// Inside a minified line of tens of kilobytes.
    LongLine,
    /// Split over adjacent string literals joined by the language.
    Split,
}

impl Context {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Context::Plain => "plain",
            Context::MultiLine => "multi-line",
            Context::Binary => "binary",
            Context::Utf16 => "utf-16",
            Context::Base64 => "base64",
            Context::LongLine => "long-line",
            Context::Split => "split",
        }
    }
}

/// A planted secret.
#[derive(Debug, Clone)]
pub struct Needle {
    /// Its format: a rule id, or a key/keystore format of `keys.rs`.
    pub format: String,
    /// Byte strings that must not appear in a redacted bundle: the secret's random parts
    /// as written in the file (pieces of a split value, the encoded form, raw DER).
    pub parts: Vec<Vec<u8>>,
    /// Where it is in the file (text contexts): a finding must overlap it.
    pub range: Option<Range<usize>>,
}

/// What a corpus file holds.
#[derive(Debug, Clone)]
pub enum Kind {
    /// One secret.
    Secret(Needle),
    /// A look-alike of a family: any finding is a false positive.
    LookAlike(&'static str),
}

/// One corpus file.
#[derive(Debug, Clone)]
pub struct EvalFile {
    /// Relative path.
    pub path: String,
    /// Context.
    pub context: Context,
    /// Contents.
    pub bytes: Vec<u8>,
    /// Secret or look-alike.
    pub kind: Kind,
}

/// A secret before placement.
struct Secret {
    format: String,
    /// `(name, value)` for assignments; `None` for a file of its own format.
    assign: Option<(String, String)>,
    /// `(file name, text)` for whole files.
    file: Option<(String, String)>,
    parts: Vec<String>,
    /// The rule only applies under its own file name: not re-placed in other files.
    path_bound: bool,
}

fn rendered_secrets(rng: &mut Rng) -> Vec<Secret> {
    let mut out = Vec::new();
    let rules = crate::builtin::default_rules();
    for rule in &rules {
        match &rule.sample {
            Some(Sample::Assign { name, value, .. }) => {
                let r = render(value, rng);
                out.push(Secret {
                    format: rule.id.clone(),
                    assign: Some((name.clone(), r.text)),
                    file: None,
                    parts: r.secret_parts,
                    path_bound: rule.path.is_some(),
                });
            }
            Some(Sample::File {
                file_name,
                template,
            }) => {
                let r = render(template, rng);
                out.push(Secret {
                    format: rule.id.clone(),
                    assign: None,
                    file: Some((file_name.clone(), r.text)),
                    parts: r.secret_parts,
                    path_bound: rule.path.is_some(),
                });
            }
            None => {}
        }
    }
    for (i, kind) in keys::OPENSSH_TYPES.iter().enumerate() {
        let key = keys::openssh_private_key(rng, kind, &format!("ci-{i}@build"));
        let parts: Vec<String> = key
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .map(str::to_owned)
            .collect();
        out.push(Secret {
            format: format!("openssh-{kind}"),
            assign: Some(("deploy_key".into(), key.trim_end().to_owned())),
            file: None,
            parts: parts.clone(),
            path_bound: false,
        });
        out.push(Secret {
            format: format!("openssh-{kind}-file"),
            assign: None,
            file: Some((format!("ops/ssh/ci_{}", kind.replace('-', "_")), key)),
            parts,
            path_bound: false,
        });
    }
    for kind in ["pkcs8", "pkcs1", "sec1", "pkcs12"] {
        let der = keys::der_key(rng, kind);
        let b64 = keys::base64(&der);
        let text = match kind {
            "pkcs12" => format!("# client keystore\nssl.keystore.type=PKCS12\nssl.keystore.base64={b64}\nssl.keystore.password.env=KEYSTORE_PASSWORD\n"),
            "pkcs8" => format!("{{\n  \"type\": \"signer\",\n  \"der\": \"{b64}\"\n}}\n"),
            _ => format!("signing:\n  algorithm: RS256\n  private_der: {b64}\n"),
        };
        let name = match kind {
            "pkcs12" => "config/kafka-client.properties",
            "pkcs8" => "config/signer.json",
            _ => "config/signing.yaml",
        };
        out.push(Secret {
            format: format!("{kind}-der-base64"),
            assign: None,
            file: Some((name.into(), text)),
            parts: vec![b64.get(..b64.len().min(200)).unwrap_or_default().to_owned()],
            path_bound: false,
        });
    }
    out
}

/// File name of a [`Format`] in the corpus (dot-files renamed: the pack deny-list would
/// leave them out by name, and the corpus is about contents).
fn file_name(format: Format) -> &'static str {
    match format {
        Format::Env => "deploy/app.env",
        other => other.file_name(),
    }
}

fn undot(path: &str) -> String {
    path.split('/')
        .map(|c| c.trim_start_matches('.'))
        .collect::<Vec<_>>()
        .join("/")
}

fn bytes_of(parts: &[String]) -> Vec<Vec<u8>> {
    parts
        .iter()
        .filter(|p| p.len() >= 8)
        .map(|p| p.as_bytes().to_vec())
        .collect()
}

/// Generates the whole corpus from `seed`.
pub fn generate(seed: u64) -> Vec<EvalFile> {
    let mut rng = Rng::new(seed);
    let mut files = Vec::new();
    let secrets = rendered_secrets(&mut rng);
    for (i, s) in secrets.iter().enumerate() {
        let dir = |ctx: Context| format!("{}/{i:03}-{}", ctx.name(), s.format);
        let needle = |parts: Vec<Vec<u8>>, range: Option<Range<usize>>| Needle {
            format: s.format.clone(),
            parts,
            range,
        };
        let parts = bytes_of(&s.parts);
        if let Some((name, text)) = &s.file {
            let ctx = Context::Plain;
            files.push(EvalFile {
                path: format!("{}/{}", dir(ctx), undot(name)),
                context: ctx,
                bytes: text.as_bytes().to_vec(),
                kind: Kind::Secret(needle(parts.clone(), Some(0..text.len()))),
            });
            if !s.path_bound {
                push_wrapped(&mut files, &mut rng, i, &dir, text, &parts, &needle);
            }
            continue;
        }
        let Some((name, value)) = &s.assign else {
            continue;
        };
        let format = Format::ALL[i % Format::ALL.len()];
        let (text, ranges) = realistic_file(format, &[(name.clone(), value.clone())], &mut rng);
        let ctx = if value.contains('\n') {
            Context::MultiLine
        } else {
            Context::Plain
        };
        files.push(EvalFile {
            path: format!("{}/{}", dir(ctx), file_name(format)),
            context: ctx,
            bytes: text.as_bytes().to_vec(),
            kind: Kind::Secret(needle(parts.clone(), ranges.first().cloned())),
        });
        push_wrapped(&mut files, &mut rng, i, &dir, &text, &parts, &needle);
        // Base64: an env line, a properties value, a JSON value.
        let line = assignment(Format::Env, name, value);
        let (path, body, enc) = match i % 3 {
            0 => {
                let enc = keys::base64(format!("{line}\n").as_bytes());
                ("deploy/bootstrap.sh", format!("#!/bin/sh\nset -eu\nexport CONFIG_B64=\"{enc}\"\necho \"$CONFIG_B64\" | base64 -d > /etc/app.env\n"), enc)
            }
            1 => {
                let enc = keys::base64(value.as_bytes());
                (
                    "config/app.properties",
                    format!("app.name=billing\n{name}.base64={enc}\napp.port=8080\n"),
                    enc,
                )
            }
            _ => {
                let enc = keys::base64(value.as_bytes());
                ("config/vault-export.json", format!("{{\n  \"path\": \"kv/billing\",\n  \"{name}\": \"{enc}\",\n  \"version\": 3\n}}\n"), enc)
            }
        };
        let at = body.find(&enc).unwrap_or(0);
        files.push(EvalFile {
            path: format!("{}/{path}", dir(Context::Base64)),
            context: Context::Base64,
            bytes: body.as_bytes().to_vec(),
            kind: Kind::Secret(needle(
                vec![enc.clone().into_bytes()],
                Some(at..at + enc.len()),
            )),
        });
        // A long minified line.
        let member = format!(
            "{}:\"{}\"",
            camel(name),
            value
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n")
        );
        let mut js = String::from("!function(e){\"use strict\";var c={");
        while js.len() < 24_000 {
            js.push_str(&render("{{L:3}}:\"{{h:8}}-{{h:4}}\",{{L:2}}:{{d:4}},", &mut rng).text);
        }
        let at = js.len();
        js.push_str(&member);
        while js.len() < 48_000 {
            js.push_str(&render(",{{L:3}}:\"{{L:12}}\"", &mut rng).text);
        }
        js.push_str("};e.config=c}(window);\n");
        files.push(EvalFile {
            path: format!("{}/dist/app.min.js", dir(Context::LongLine)),
            context: Context::LongLine,
            bytes: js.as_bytes().to_vec(),
            kind: Kind::Secret(needle(parts.clone(), Some(at..at + member.len()))),
        });
        // Split literals.
        if !value.contains(['\n', '"', '\'', '\\', '`']) && value.len() >= 16 {
            let (path, text, pieces, range) = split_literal(&mut rng, i, name, value);
            let mut p = parts.clone();
            // A piece is secret if it holds part of a random part (not `postgresql://app:`).
            let secret_piece = |x: &&String| {
                x.len() >= 8
                    && x.as_bytes().windows(6).any(|w| {
                        s.parts
                            .iter()
                            .any(|sp| sp.as_bytes().windows(6).any(|v| v == w))
                    })
            };
            p.extend(
                pieces
                    .iter()
                    .filter(secret_piece)
                    .map(|x| x.as_bytes().to_vec()),
            );
            // A random part cut in two is no longer in the file whole: keep the pieces.
            p.retain(|x| text.as_bytes().windows(x.len()).any(|w| w == x.as_slice()));
            files.push(EvalFile {
                path: format!("{}/{path}", dir(Context::Split)),
                context: Context::Split,
                bytes: text.into_bytes(),
                kind: Kind::Secret(needle(p, Some(range))),
            });
        }
    }
    for (j, kind) in ["pkcs8", "pkcs1", "sec1", "pkcs12", "jks"]
        .iter()
        .enumerate()
    {
        for k in 0..3 {
            let der = keys::der_key(&mut rng, kind);
            let head = der.get(..48).unwrap_or_default().to_vec();
            files.push(EvalFile {
                path: format!("binary/key-{j}{k}-{kind}/certs/client-{kind}-{k}"),
                context: Context::Binary,
                bytes: der,
                kind: Kind::Secret(Needle {
                    format: format!("{kind}-der"),
                    parts: vec![head],
                    range: None,
                }),
            });
        }
    }
    for (j, la) in lookalikes::generate(&mut rng, 30).into_iter().enumerate() {
        // Every family in every placement: the bucket turns with each round of families.
        let (context, bytes, path) = match (j + j / 12) % 6 {
            4 => (
                Context::Utf16,
                utf16(&la.text, j),
                la.path.clone() + ".utf16.txt",
            ),
            5 if la.family != "minified" => {
                let (ext, b) = binary_container(&mut rng, j, la.text.as_bytes());
                (Context::Binary, b, format!("{}.{ext}", la.path))
            }
            _ => {
                let context = match la.family {
                    "encoded-public" => Context::Base64,
                    "minified" => Context::LongLine,
                    "split-prose" => Context::Split,
                    "certificate" | "public-key" if la.text.contains("-----\n") => {
                        Context::MultiLine
                    }
                    _ => Context::Plain,
                };
                (context, la.text.into_bytes(), la.path.clone())
            }
        };
        files.push(EvalFile {
            path: format!("lookalike/{j:03}-{}", path),
            context,
            bytes,
            kind: Kind::LookAlike(la.family),
        });
    }
    files
}

/// The UTF-16 and binary placements of a text.
fn push_wrapped(
    files: &mut Vec<EvalFile>,
    rng: &mut Rng,
    i: usize,
    dir: &dyn Fn(Context) -> String,
    text: &str,
    parts: &[Vec<u8>],
    needle: &dyn Fn(Vec<Vec<u8>>, Option<Range<usize>>) -> Needle,
) {
    files.push(EvalFile {
        path: format!("{}/settings.txt", dir(Context::Utf16)),
        context: Context::Utf16,
        bytes: utf16(text, i),
        kind: Kind::Secret(needle(parts.to_vec(), None)),
    });
    let (ext, bytes) = binary_container(rng, i, text.as_bytes());
    files.push(EvalFile {
        path: format!("{}/cache.{ext}", dir(Context::Binary)),
        context: Context::Binary,
        bytes,
        kind: Kind::Secret(needle(parts.to_vec(), None)),
    });
}

fn camel(name: &str) -> String {
    let mut out = String::new();
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

/// UTF-16: LE with BOM, LE without, BE with BOM, by `i`.
fn utf16(text: &str, i: usize) -> Vec<u8> {
    let units = text.encode_utf16();
    match i % 3 {
        0 => [0xff, 0xfe]
            .into_iter()
            .chain(units.flat_map(u16::to_le_bytes))
            .collect(),
        1 => units.flat_map(u16::to_le_bytes).collect(),
        _ => [0xfe, 0xff]
            .into_iter()
            .chain(units.flat_map(u16::to_be_bytes))
            .collect(),
    }
}

fn noise(rng: &mut Rng, n: usize) -> Vec<u8> {
    // Random bytes with the NULs and high bytes real binary data has.
    (0..n)
        .map(|_| {
            let v = rng.next_u64();
            if v.is_multiple_of(5) {
                0
            } else {
                (v >> 8) as u8 | 0x80
            }
        })
        .collect()
}

/// `payload` inside a binary file of a common kind, by `i`: an SQLite page, a PNG
/// `tEXt` chunk, a JPEG comment, an uncompressed PDF stream, a cache file with a
/// length-prefixed string, or UTF-16LE strings in a PE-like resource section.
fn binary_container(rng: &mut Rng, i: usize, payload: &[u8]) -> (&'static str, Vec<u8>) {
    let mut out = Vec::new();
    let ext = match i % 6 {
        0 => {
            out.extend(b"SQLite format 3\0\x10\x00\x01\x01\x00\x40\x20\x20");
            out.extend(noise(rng, 1200));
            out.extend(payload);
            out.extend(noise(rng, 800));
            "db"
        }
        1 => {
            out.extend(b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x40\0\0\0\x40\x08\x06\0\0\0\xaa\x69\x71\xde");
            out.extend(((payload.len() + 8) as u32).to_be_bytes());
            out.extend(b"tEXtComment\0");
            out.extend(payload);
            out.extend(noise(rng, 4));
            out.extend(b"\0\0\x04\0IDAT");
            out.extend(noise(rng, 1024));
            out.extend(b"\0\0\0\0IEND\xae\x42\x60\x82");
            "png"
        }
        2 => {
            out.extend(
                b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xfe",
            );
            out.extend(((payload.len() + 2) as u16).to_be_bytes());
            out.extend(payload);
            out.extend(b"\xff\xdb\x00\x43\x00");
            out.extend(noise(rng, 900));
            out.extend(b"\xff\xd9");
            "jpg"
        }
        3 => {
            out.extend(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Length 99 >>\nstream\n");
            out.extend(payload);
            out.extend(b"\nendstream\nendobj\n2 0 obj\n<< /Filter /FlateDecode >>\nstream\n");
            out.extend(noise(rng, 700));
            out.extend(b"\nendstream\nendobj\n%%EOF\n");
            "pdf"
        }
        4 => {
            out.extend(b"\x6f\x0d\x0d\x0a\0\0\0\0");
            out.extend(noise(rng, 300));
            out.push(b's');
            out.extend((payload.len() as u32).to_le_bytes());
            out.extend(payload);
            out.extend(noise(rng, 300));
            "pyc"
        }
        _ => {
            out.extend(b"MZ\x90\0\x03\0\0\0\x04\0\0\0\xff\xff\0\0");
            out.extend(noise(rng, 600));
            out.extend(
                String::from_utf8_lossy(payload)
                    .encode_utf16()
                    .flat_map(u16::to_le_bytes),
            );
            out.extend(noise(rng, 600));
            "dll"
        }
    };
    (ext, out)
}

/// `value` split over 2 or 3 literals in one of ten languages' ways of joining them.
/// Returns (path, text, pieces, range of the expression).
fn split_literal(
    rng: &mut Rng,
    i: usize,
    name: &str,
    value: &str,
) -> (String, String, Vec<String>, Range<usize>) {
    let n = 2 + rng.below(2);
    let len = value.len();
    let mut cuts: Vec<usize> = (1..n).map(|k| k * len / n + rng.below(4)).collect();
    cuts.retain(|&c| c > 0 && c < len && value.is_char_boundary(c));
    let mut pieces = Vec::new();
    let mut last = 0;
    for c in cuts.iter().copied().chain(std::iter::once(len)) {
        if c > last {
            pieces.push(value[last..c].to_owned());
            last = c;
        }
    }
    let q = |p: &String| format!("\"{p}\"");
    let sq = |p: &String| format!("'{p}'");
    let upper = name.to_ascii_uppercase();
    let cam = camel(name);
    let join = |sep: &str, f: &dyn Fn(&String) -> String| {
        pieces.iter().map(f).collect::<Vec<_>>().join(sep)
    };
    let (path, before, expr, after) = match i % 10 {
        0 => (
            "src/config.ts",
            format!("export const {cam} = "),
            join(" +\n  ", &q),
            ";\n",
        ),
        1 => (
            "app/settings.py",
            format!("{upper} = (\n    "),
            join("\n    ", &q),
            "\n)\n",
        ),
        2 => (
            "src/main/java/com/acme/Config.java",
            format!("    private static final String {upper} = "),
            join(" +\n        ", &q),
            ";\n",
        ),
        3 => (
            "internal/config/config.go",
            format!("const {cam} = "),
            join(" +\n\t", &q),
            "\n",
        ),
        4 => (
            "src/Config.cs",
            format!("    public const string {cam} = "),
            join(" + ", &q),
            ";\n",
        ),
        5 => (
            "src/config.rs",
            format!("pub const {upper}: &str = concat!("),
            join(", ", &q),
            ");\n",
        ),
        6 => (
            "web/config.js",
            format!("const {cam} = ["),
            join(", ", &sq),
            "].join('');\n",
        ),
        7 => (
            "deploy/env.sh",
            format!("export {upper}=\""),
            pieces.join("\\\n"),
            "\"\n",
        ),
        8 => (
            "config/app.yaml",
            format!("{name}: \""),
            pieces.join("\\\n  "),
            "\"\n",
        ),
        _ => (
            "config/app.php",
            format!("    '{name}' => "),
            join(" . ", &sq),
            ",\n",
        ),
    };
    let head = match i % 10 {
        1 => "import os\n\n",
        2 => "package com.acme;\n\npublic final class Config {\n",
        3 => "package config\n\n",
        4 => "namespace Acme {\npublic static class Config {\n",
        7 => "#!/bin/sh\n",
        9 => "<?php\n\nreturn [\n",
        _ => "// generated settings\n",
    };
    let tail = match i % 10 {
        2 => "}\n",
        4 => "}\n}\n",
        9 => "];\n",
        _ => "",
    };
    let mut text = String::from(head);
    let start = text.len() + before.len();
    text.push_str(&before);
    text.push_str(&expr);
    let end = text.len();
    text.push_str(after);
    text.push_str(tail);
    // Shell and YAML: the first piece opens the quote in `before`; the range covers it.
    (
        path.to_owned(),
        text,
        pieces,
        start.saturating_sub(1)..end + 1,
    )
}
