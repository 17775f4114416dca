//! Name rules no glob can express, tried after every glob rule: extension-less files at the
//! root that are programs (`build.root-executable`) or pins (`build.version-pin`).

use crate::normalize_path;

/// A file at the repository root whose name has no extension and starts with a lowercase
/// letter: by convention a program the developers run, not a document (`README`, `LICENSE`).
pub(crate) fn root_executable(path: &str) -> bool {
    let norm = normalize_path(path);
    !norm.contains('/')
        && norm.starts_with(|c: char| c.is_ascii_lowercase())
        && norm
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// An extension-less upper-case name with an underscore at the root whose last word names a
/// pin (`NGINX_BASE`, `BASE_IMAGE`, `GO_VERSION`, `LLVM_COMMIT`): by convention a pin CI and
/// builds read (`$(cat NGINX_BASE)`), not a document (`README`, `LICENSE` have no underscore;
/// `PORTING_INFO`, `BUILDING_OSS` end in a word that names no pin).
pub(crate) fn root_pin(path: &str) -> bool {
    const PIN_WORDS: &[&str] = &[
        "VERSION", "VERSIONS", "BASE", "IMAGE", "TAG", "SHA", "REF", "COMMIT", "REV", "REVISION",
        "DIGEST", "HASH", "RELEASE", "BRANCH", "PIN", "PINS",
    ];
    let norm = normalize_path(path);
    !norm.contains('/')
        && norm.starts_with(|c: char| c.is_ascii_uppercase())
        && norm
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        && norm
            .rsplit_once('_')
            .is_some_and(|(_, last)| PIN_WORDS.contains(&last))
}
