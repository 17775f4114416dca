//! The `files/` part of a bundle: every selected file, in groups ([`super::groups`]), each
//! group reused from the cache or built (its blobs read by the worker's own stream: the working
//! tree's file where it is the blob, else `git cat-file --batch`; scanned, redacted or
//! omitted, compressed) by a pool of workers, one
//! per core, and written in order straight to the bundle (and, with the cache on, to the new
//! cache entry), after which the bundle writer resumes for the manifest.
//!
//! Guards against: a secret in a packed file leaving trusted ground (see [`super::groups`]), a
//! cached group whose bytes were changed (checked against their SHA-256 before use; a mismatch
//! rebuilds the group from the repository, its files scanned again), output that depends on
//! thread timing (groups are written in order; each group's bytes depend on its members only),
//! and a bundle held in memory (the groups read but not yet written are bounded by
//! [`IN_FLIGHT_BYTES`]).

use std::collections::BTreeMap;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::ops::Range;
use std::sync::mpsc::channel;
use std::sync::{Condvar, Mutex};

use airlock_core::format::{FileEntry, Omission, Redaction};
use airlock_core::tar::Cut;
use airlock_scan::{Finding, Scanner};
use anyhow::{Context, Result};
use serde::Serialize;

use super::ahead::Ahead;
use super::cache::{Base, FileRecord, GroupRecord, Staging};
use super::groups::{self, Built, FileResult, Member};
use super::sink::Sink;
use super::PackOptions;
use crate::git::{BlobStream, Repo, TreeEntry};

/// Bytes of blobs read for groups not yet written, at most (one larger group at a time).
const IN_FLIGHT_BYTES: u64 = 32 * 1024 * 1024;

/// What the cache saved: files scanned and groups compressed now, and those reused.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    /// Files scanned by this pack.
    pub files_scanned: u64,
    /// Files whose earlier result was reused.
    pub files_reused: u64,
    /// Groups compressed by this pack.
    pub groups_built: u64,
    /// Groups whose compressed bytes were reused.
    pub groups_reused: u64,
}

/// The files to pack, in bundle order, cut into groups.
pub(super) struct Plan {
    pub(super) members: Vec<Member>,
    pub(super) groups: Vec<Range<usize>>,
    pub(super) skipped: BTreeMap<String, u64>,
    /// The tree's entries left out, in listing order.
    pub(super) others: Vec<TreeEntry>,
}

/// The `files/` part as written to the bundle.
pub(super) struct FilesPart {
    pub(super) files: Vec<FileEntry>,
    pub(super) findings: Vec<Finding>,
    pub(super) redactions: Vec<Redaction>,
    pub(super) omitted: Vec<Omission>,
    pub(super) bytes: u64,
    /// Where the stream stands after the last group (as a writer cut there would say).
    pub(super) cut: Cut,
    /// The new cache entry's records.
    pub(super) records: (Vec<FileRecord>, Vec<GroupRecord>),
    pub(super) stats: CacheStats,
}

/// How a group gets its bytes: reused (the group's index in the cache entry, its record), or
/// built.
enum Source<'b> {
    Reuse(usize, &'b GroupRecord),
    Build,
}

/// Blob bytes read and not yet written, and the group the writer waits for; `acquire` waits
/// while over [`IN_FLIGHT_BYTES`], unless the group is the writer's (which always goes ahead,
/// so that no worker holding later groups can starve it).
struct Budget {
    state: Mutex<BudgetState>,
    freed: Condvar,
}

#[derive(Default)]
struct BudgetState {
    in_flight: u64,
    writing: usize,
    aborted: bool,
}

impl Budget {
    fn acquire(&self, group: usize, n: u64) -> bool {
        let Ok(mut s) = self.state.lock() else {
            return false;
        };
        while !s.aborted
            && group > s.writing
            && s.in_flight > 0
            && s.in_flight + n > IN_FLIGHT_BYTES
        {
            s = match self.freed.wait(s) {
                Ok(s) => s,
                Err(_) => return false,
            };
        }
        s.in_flight += n;
        !s.aborted
    }

    /// The writer now waits for `group`.
    fn writing(&self, group: usize) {
        if let Ok(mut s) = self.state.lock() {
            s.writing = group;
        }
        self.freed.notify_all();
    }

    fn release(&self, n: u64) {
        if let Ok(mut s) = self.state.lock() {
            s.in_flight = s.in_flight.saturating_sub(n);
        }
        self.freed.notify_all();
    }

    fn abort(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.aborted = true;
        }
        self.freed.notify_all();
    }
}

/// Builds or reuses every group of `plan`, writing their bytes in order to `staging`.
pub(super) fn write_files(
    repo: &Repo,
    plan: &Plan,
    (base, ahead): (Option<&Base>, Option<&Ahead>),
    opts: &PackOptions<'_>,
    scanner: &Scanner,
    staging: Option<&Staging>,
    bundle: &mut Sink,
) -> Result<FilesPart> {
    let members = &plan.members;
    let cached: Vec<Option<FileResult>> = members
        .iter()
        .map(|m| base.and_then(|b| b.file(m)).cloned())
        .collect();
    let sources: Vec<Source> = plan
        .groups
        .iter()
        .map(|r| {
            let d = groups::digest(
                &members[r.clone()],
                cached[r.clone()].iter().map(Option::as_ref),
            );
            match (base, d) {
                (Some(b), Some(d)) => b
                    .group(&d)
                    .map_or(Source::Build, |(i, rec)| Source::Reuse(i, rec)),
                _ => Source::Build,
            }
        })
        .collect();
    if let (Some(a), Some(b)) = (ahead, base) {
        let mut wanted = vec![false; b.meta.groups.len()];
        for s in &sources {
            if let Source::Reuse(i, _) = s {
                if let Some(w) = wanted.get_mut(*i) {
                    *w = true;
                }
            }
        }
        a.want(wanted);
    }
    let to_build: Vec<usize> = (0..sources.len())
        .filter(|i| matches!(sources[*i], Source::Build))
        .collect();
    let bar = crate::output::progress(members.len() as u64, "pack", opts.quiet);
    let max = opts.max_file_bytes;
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 4));
    let budget = Budget {
        state: Mutex::new(BudgetState::default()),
        freed: Condvar::new(),
    };
    let group_bytes = |i: usize| plan.groups[i].clone().map(|f| members[f].size).sum::<u64>();

    // One git stream per worker, each with its own share of the groups (dealt by bytes), so
    // that git reads ahead of its worker and no thread waits for another to be scheduled.
    let lists = crate::git::deal(to_build.iter().map(|&g| group_bytes(g)), workers);
    let streams = (lists.iter())
        .map(|list| {
            let oids = (list.iter())
                .flat_map(|&k| &members[plan.groups[to_build[k]].clone()])
                .map(Member::want)
                .collect();
            repo.blobs(oids)
        })
        .collect::<Result<Vec<_>>>()?;
    let mut out = Collector::new(staging, bundle)?;
    // Groups are digested (by the workers) only for a cache entry.
    let keep = staging.is_some();
    std::thread::scope(|s| -> Result<()> {
        let (done_tx, done_rx) = channel::<(usize, Result<Built>)>();
        for (list, mut stream) in lists.iter().zip(streams) {
            let (done_tx, cached, wanted) = (done_tx.clone(), &cached, &to_build);
            let (budget, group_bytes) = (&budget, &group_bytes);
            s.spawn(move || {
                for &k in list {
                    let g = wanted[k];
                    if !budget.acquire(g, group_bytes(g)) {
                        return;
                    }
                    let r = plan.groups[g].clone();
                    let built = read_group(&mut stream, &members[r.clone()], max).and_then(|c| {
                        groups::build(
                            &members[r.clone()],
                            c,
                            &cached[r],
                            scanner,
                            opts.redact,
                            keep,
                        )
                    });
                    let failed = built.is_err();
                    if done_tx.send((g, built)).is_err() || failed {
                        return;
                    }
                }
            });
        }
        drop(done_tx);

        // Writes every group in order, as it comes.
        let collected = (|| -> Result<()> {
            let mut pending: BTreeMap<usize, Built> = BTreeMap::new();
            for (g, source) in sources.iter().enumerate() {
                let r = plan.groups[g].clone();
                // The reused groups' bytes were read and checked ahead, in the entry's order.
                let checked = match source {
                    Source::Reuse(i, _) => ahead.and_then(|a| a.take(*i)),
                    Source::Build => None,
                };
                match (source, checked) {
                    (Source::Reuse(_, rec), Some(piece)) => {
                        let results = cached[r.clone()].iter().flatten().cloned().collect();
                        out.reused(r.clone(), results, &piece, rec)?;
                    }
                    (Source::Reuse(..), None) => {
                        // Changed on disk: rebuilt from the repository, every file scanned again.
                        let built = rebuild(repo, opts, &members[r.clone()], scanner, keep)?;
                        out.built(r.clone(), members, built)?;
                    }
                    (Source::Build, _) => {
                        budget.writing(g);
                        let built = loop {
                            if let Some(b) = pending.remove(&g) {
                                break b;
                            }
                            let (i, b) = done_rx.recv().context("pack workers stopped")?;
                            pending.insert(i, b?);
                        };
                        budget.release(group_bytes(g));
                        out.built(r.clone(), members, built)?;
                    }
                }
                bar.inc(r.len() as u64);
            }
            Ok(())
        })();
        budget.abort();
        drop(done_rx);
        // The workers stop at the budget or when they find the writer gone.
        collected
    })?;
    bar.finish_and_clear();
    out.finish(members)
}

/// Reads the blobs of a group's `members`, in order, from `stream`.
fn read_group(stream: &mut BlobStream, members: &[Member], max: u64) -> Result<Vec<Vec<u8>>> {
    let mut contents = Vec::with_capacity(members.len());
    for m in members {
        let mut buf = Vec::new();
        stream.next_blob(&m.oid, max, &mut buf)?;
        contents.push(buf);
    }
    Ok(contents)
}

/// Reads a group's blobs with a git process of its own and builds it with no cached result.
fn rebuild(
    repo: &Repo,
    opts: &PackOptions<'_>,
    members: &[Member],
    scanner: &Scanner,
    keep: bool,
) -> Result<Built> {
    let mut stream = repo.blobs(members.iter().map(Member::want).collect())?;
    let contents = read_group(&mut stream, members, opts.max_file_bytes)?;
    let none = vec![None; members.len()];
    groups::build(members, contents, &none, scanner, opts.redact, keep)
}

/// Writes the groups' bytes in order, to the bundle and the new cache entry, and gathers what
/// the manifest and the cache need.
struct Collector<'a> {
    entry: Option<BufWriter<&'a std::fs::File>>,
    bundle: &'a mut Sink,
    crc: crc32fast::Hasher,
    tar_bytes: u64,
    offset: u64,
    results: Vec<FileResult>,
    findings: Vec<Finding>,
    records: Vec<GroupRecord>,
    stats: CacheStats,
}

impl<'a> Collector<'a> {
    fn new(staging: Option<&'a Staging>, bundle: &'a mut Sink) -> Result<Collector<'a>> {
        let entry = match staging {
            Some(staging) => {
                let mut w = BufWriter::with_capacity(256 * 1024, &staging.file);
                w.seek(SeekFrom::Start(Staging::data_start()))?;
                Some(w)
            }
            None => None,
        };
        Ok(Collector {
            entry,
            bundle,
            crc: crc32fast::Hasher::new(),
            tar_bytes: 0,
            offset: 0,
            results: Vec::new(),
            findings: Vec::new(),
            records: Vec::new(),
            stats: CacheStats::default(),
        })
    }

    /// Writes a group's bytes (`crc32` and `tar_bytes` of the tar bytes they compress); `rec`
    /// records them in the cache entry, if one is written (its offset is set here).
    fn piece(
        &mut self,
        bytes: &[u8],
        (crc32, tar_bytes): (u32, u64),
        rec: Option<GroupRecord>,
    ) -> Result<()> {
        self.bundle.write_all(bytes)?;
        if let Some(w) = &mut self.entry {
            w.write_all(bytes)?;
        }
        self.crc
            .combine(&crc32fast::Hasher::new_with_initial_len(crc32, tar_bytes));
        if let Some(mut rec) = rec {
            rec.offset = self.offset;
            self.records.push(rec);
        }
        self.offset += bytes.len() as u64;
        self.tar_bytes += tar_bytes;
        Ok(())
    }

    fn reused(
        &mut self,
        r: Range<usize>,
        results: Vec<FileResult>,
        bytes: &[u8],
        rec: &GroupRecord,
    ) -> Result<()> {
        self.stats.groups_reused += 1;
        self.stats.files_reused += r.len() as u64;
        let kept = self.entry.is_some().then(|| GroupRecord {
            first: r.start,
            end: r.end,
            ..rec.clone()
        });
        self.piece(bytes, (rec.crc32, rec.tar_bytes), kept)?;
        self.results.extend(results);
        Ok(())
    }

    fn built(&mut self, r: Range<usize>, members: &[Member], built: Built) -> Result<()> {
        self.stats.groups_built += 1;
        self.stats.files_scanned += built.scanned;
        self.stats.files_reused += r.len() as u64 - built.scanned;
        self.findings.extend(built.findings);
        let p = &built.piece;
        let rec = match (&self.entry, p.sha256) {
            (None, _) => None,
            (Some(_), None) => anyhow::bail!("pack cache: a group built without its digest"),
            (Some(_), Some(sha256)) => Some(GroupRecord {
                first: r.start,
                end: r.end,
                digest: groups::digest(&members[r.clone()], built.results.iter().map(Some))
                    .context("group digest")?,
                offset: 0,
                len: p.bytes.len() as u64,
                sha256,
                crc32: p.crc32,
                tar_bytes: p.tar_bytes,
            }),
        };
        self.piece(&p.bytes, (p.crc32, p.tar_bytes), rec)?;
        self.results.extend(built.results);
        Ok(())
    }

    fn finish(mut self, members: &[Member]) -> Result<FilesPart> {
        if let Some(w) = &mut self.entry {
            w.flush()?;
        }
        let (mut files, mut redactions, mut omitted, mut bytes) =
            (Vec::new(), Vec::new(), Vec::new(), 0);
        for (m, r) in members.iter().zip(&self.results) {
            match r {
                FileResult::Kept {
                    size,
                    sha256,
                    redactions: rs,
                } => {
                    files.push(FileEntry {
                        path: m.path.clone(),
                        size: *size,
                        mode: if m.exec { "0755" } else { "0644" }.to_owned(),
                        sha256: *sha256,
                    });
                    redactions.extend(rs.iter().cloned());
                    bytes += size;
                }
                FileResult::Omitted { omissions } => omitted.extend(omissions.iter().cloned()),
            }
        }
        let records = members
            .iter()
            .zip(self.results)
            .map(|(m, result)| FileRecord {
                member: m.clone(),
                result,
            })
            .collect();
        Ok(FilesPart {
            files,
            findings: self.findings,
            redactions,
            omitted,
            bytes,
            cut: Cut {
                crc32: self.crc.finalize(),
                tar_bytes: self.tar_bytes,
                compressed_bytes: self.offset,
            },
            records: (records, self.records),
            stats: self.stats,
        })
    }
}
