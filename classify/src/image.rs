//! What a container image is built from (round fourteen): a directory a Dockerfile `COPY`s or
//! `ADD`s onto the image's root (`COPY root/ /`, linuxserver's images: an overlay of the image's
//! file system) puts every file under it into the image's system directories, where its service
//! scripts, init scripts and configuration run or configure what runs; those files are what
//! `COPY` of a single file already counts (`follow::copied_config`: configuration and scripts,
//! not the product's source or assets). A directory copied anywhere else (`COPY src/ /app/`)
//! is the product the image carries, and is not read.
//!
//! Guards against: an s6 service script, an init hook or a server configuration hidden in a
//! copied directory under a name no rule knows (`root/etc/s6-overlay/s6-rc.d/svc-x/run`),
//! passing as `other`. Bounded: one listing scan per copied directory, at most
//! [`MAX_OVERLAYS`] directories a tree and [`follow::MAX_MATCHES`] files each; the build
//! context's root (`.`) is never read as a copied directory (that is the whole repository,
//! product included).

use crate::entry::normalise;
use crate::follow;
use crate::tree::Paths;

/// Most directories copied onto an image's root one tree's Dockerfiles may name.
pub(crate) const MAX_OVERLAYS: usize = 32;

/// The directory `token` (a `COPY`/`ADD` source, read from the root or from `base`, the
/// Dockerfile's directory) names, with the files under it that configure the image; `None`
/// when it names no directory of the tree, the root, or a pattern (which `resolve` reads).
pub(crate) fn copied_dir(
    token: &str,
    base: &str,
    all: &Paths<'_>,
    mut take: impl FnMut() -> bool,
) -> Option<(String, Vec<String>)> {
    if token.contains(['*', '?', '$']) || token.contains("://") {
        return None;
    }
    for cand in [token.to_owned(), format!("{base}/{token}")] {
        let Some(dir) = normalise(cand.trim_end_matches('/')) else {
            continue;
        };
        if all.contains(&dir) || !all.has_under(&dir) || !take() {
            continue;
        }
        let files = all
            .starting_with(&format!("{dir}/"))
            .into_iter()
            .filter(|p| follow::copied_config(p))
            .take(follow::MAX_MATCHES)
            .map(str::to_owned)
            .collect();
        return Some((dir, files));
    }
    None
}

#[cfg(test)]
#[path = "image_tests.rs"]
mod tests;
