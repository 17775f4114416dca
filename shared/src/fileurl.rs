//! `file://` URLs for the local store: the trusted side writes them into tokens, the worker
//! reads them back. Percent-encoding keeps every byte of a path representable while the token
//! rules (`token.url`) refuse whitespace and control characters in URLs.
//!
//! Guards against: `%2F`-smuggled separators and `..` after decoding, NUL bytes, and relative
//! paths. On `Ok`: an absolute path with no `.`/`..` component and no NUL.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

/// A `file://` URL could not be turned into a path.
#[derive(Debug, thiserror::Error)]
#[error("file URL is malformed (fileurl.{rule}): {reason}")]
pub struct FileUrlError {
    /// Rule suffix.
    pub rule: &'static str,
    /// Why.
    pub reason: &'static str,
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/')
}

/// `file://` + the percent-encoded absolute path (every byte outside `[A-Za-z0-9-._~/]`).
pub fn path_to_file_url(path: &Path) -> Result<String, FileUrlError> {
    if !path.is_absolute() {
        return Err(FileUrlError {
            rule: "relative",
            reason: "path must be absolute",
        });
    }
    let mut out = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if unreserved(b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(out)
}

/// Decodes a `file:///…` URL into an absolute path. Refuses hosts, queries, bad escapes,
/// encoded `/`, NUL, and `.`/`..` components after decoding.
pub fn file_url_to_path(url: &str) -> Result<PathBuf, FileUrlError> {
    let err = |rule, reason| FileUrlError { rule, reason };
    let rest = url
        .strip_prefix("file://")
        .ok_or(err("scheme", "not a file:// URL"))?;
    if !rest.starts_with('/') {
        return Err(err("host", "file URL must be file:///absolute/path"));
    }
    if rest.contains(['?', '#']) {
        return Err(err("query", "file URL has a query or fragment"));
    }
    let raw = rest.as_bytes();
    let mut bytes = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' {
            let hex = raw
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or(err("escape", "bad percent escape"))?;
            if hex == b'/' || hex == 0 {
                return Err(err("escape", "encoded '/' or NUL"));
            }
            bytes.push(hex);
            i += 3;
        } else {
            bytes.push(raw[i]);
            i += 1;
        }
    }
    let path = PathBuf::from(OsString::from_vec(bytes));
    if path
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        return Err(err("dot", "path has a . or .. component"));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_odd_paths() {
        for p in ["/tmp/a b/c", "/store/drop/x%y/ü.tar.gz", "/a/b"] {
            let url = path_to_file_url(Path::new(p)).unwrap();
            assert!(!url.contains(' '));
            assert_eq!(file_url_to_path(&url).unwrap(), PathBuf::from(p));
        }
    }

    #[test]
    fn refuses_smuggled_separators_and_dots() {
        for bad in [
            "file://host/x",
            "file:///a/%2e%2e/etc/passwd",
            "file:///a/%2Fetc",
            "file:///a/%00",
            "file:///a/%zz",
            "file:///a/b?x",
            "https://x/y",
            "file://relative",
        ] {
            assert!(file_url_to_path(bad).is_err(), "{bad} accepted");
        }
    }
}
