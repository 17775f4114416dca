//! Listing a prefix of the store: in full, or only the keys after a given key (`start-after`
//! on S3 and GCS, so a reader that resumes does not list what it read before).
//!
//! Guards against: a `file://` listing following a link or reporting an odd path (refused on
//! the way by `beneath`, logged by key and rule only); a listing out of order (every listing
//! is sorted by key here, whatever the backend returns).

use anyhow::{Context, Result};
use futures::StreamExt;

use super::{beneath, ObjectInfo, Store};

impl Store {
    /// Lists every object under `prefix` (e.g. `ledger/`). On a `file://` store, paths refused
    /// on the way (links, devices, odd names: [`Store::list_checked`]) are left out and logged
    /// by key and rule only.
    pub fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let (objects, refused) = self.list_checked(prefix)?;
        for r in refused {
            tracing::warn!("{r}");
        }
        Ok(objects)
    }

    /// [`Store::list`] of the keys under `prefix` that sort after `after` (a key under
    /// `prefix`): one request for what was added after it, where S3 and GCS take the offset
    /// (`start-after`), however many keys sort before it; other stores list and filter.
    pub fn list_after(&self, prefix: &str, after: &str) -> Result<Vec<ObjectInfo>> {
        if self.local().is_some() {
            let mut objects = self.list(prefix)?;
            objects.retain(|o| o.key.as_str() > after);
            return Ok(objects);
        }
        self.list_remote(prefix, Some(after))
    }

    /// [`Store::list`], with the paths a `file://` store refused to list (never followed, never
    /// read; the refusal names the key and the rule, nothing about a link's target). Remote
    /// stores have no links: their refusals are always empty.
    pub fn list_checked(&self, prefix: &str) -> Result<(Vec<ObjectInfo>, Vec<beneath::Refused>)> {
        if let Some(root) = self.local() {
            let listing = root.list(prefix)?;
            let objects = listing
                .files
                .into_iter()
                .map(|(key, size, last_modified)| ObjectInfo {
                    key,
                    size,
                    last_modified,
                })
                .collect();
            return Ok((objects, listing.refused));
        }
        Ok((self.list_remote(prefix, None)?, Vec::new()))
    }

    /// A remote listing of `prefix`, sorted, of the keys after `after` if given.
    fn list_remote(&self, prefix: &str, after: Option<&str>) -> Result<Vec<ObjectInfo>> {
        let path = self.path(prefix.trim_end_matches('/'));
        let metas: Vec<_> = match after {
            Some(a) => self.rt.block_on(
                self.inner
                    .list_with_offset(Some(&path), &self.path(a))
                    .collect::<Vec<_>>(),
            ),
            None => self
                .rt
                .block_on(self.inner.list(Some(&path)).collect::<Vec<_>>()),
        };
        let mut out = Vec::with_capacity(metas.len());
        for m in metas {
            let m = m.with_context(|| format!("{prefix}: list failed"))?;
            let key = self.key_of(&m.location);
            if after.is_some_and(|a| key.as_str() <= a) {
                continue;
            }
            out.push(ObjectInfo {
                last_modified: self.store_time(m.last_modified.timestamp()),
                key,
                size: m.size,
            });
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }
}
