//! Writer -> reader round trips, and reader behaviour that the fixture table cannot show
//! (visitors, destinations, errors inside a visitor's reads).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;

use airlock_core::limits::TarLimits;
use airlock_core::tar::{
    read_members, unpack_into, AllowedNames, DeterministicTarWriter, Member, MemberKind, TarError,
    TarRule,
};
use flate2::write::GzEncoder;
use flate2::Compression;

fn long_path() -> String {
    format!("files/{}/{}.txt", "deep".repeat(40), "n".repeat(120))
}

/// A bundle-shaped archive written by our writer.
fn bundle() -> Vec<u8> {
    let mut w = DeterministicTarWriter::new(Vec::new());
    w.append_dir("files").unwrap();
    w.append_file("files/caf\u{e9}.txt", false, 4, &b"caf\xc3\xa9"[..4])
        .unwrap();
    w.append_file(&long_path(), false, 5, &b"long\n"[..])
        .unwrap();
    w.append_file("files/run.sh", true, 10, &b"#!/bin/sh\n"[..])
        .unwrap();
    w.append_dir("files/src").unwrap();
    w.append_file("files/src/lib.rs", false, 0, std::io::empty())
        .unwrap();
    w.append_file("manifest.json", false, 2, &b"{}"[..])
        .unwrap();
    w.append_file("request.json", false, 2, &b"[]"[..]).unwrap();
    w.finish().unwrap()
}

fn read_all(
    tgz: &[u8],
    limits: &TarLimits,
    allowed: &AllowedNames,
) -> Result<Vec<(Member, Vec<u8>)>, TarError> {
    let mut out = Vec::new();
    read_members(tgz, limits, allowed, |m, r| {
        let mut body = Vec::new();
        r.read_to_end(&mut body)?;
        out.push((m.clone(), body));
        Ok(())
    })?;
    Ok(out)
}

#[test]
fn writer_output_reads_back_identically() {
    let tgz = bundle();
    let got = read_all(&tgz, &TarLimits::bundle(), &AllowedNames::Bundle).unwrap();
    let summary: Vec<_> = got
        .iter()
        .map(|(m, b)| (m.path.as_str(), m.kind, m.executable, m.size, b.as_slice()))
        .collect();
    let long = long_path();
    assert_eq!(
        summary,
        vec![
            ("files", MemberKind::Dir, false, 0, &b""[..]),
            (
                "files/caf\u{e9}.txt",
                MemberKind::File,
                false,
                4,
                &b"caf\xc3"[..]
            ),
            (long.as_str(), MemberKind::File, false, 5, &b"long\n"[..]),
            (
                "files/run.sh",
                MemberKind::File,
                true,
                10,
                &b"#!/bin/sh\n"[..]
            ),
            ("files/src", MemberKind::Dir, false, 0, &b""[..]),
            ("files/src/lib.rs", MemberKind::File, false, 0, &b""[..]),
            ("manifest.json", MemberKind::File, false, 2, &b"{}"[..]),
            ("request.json", MemberKind::File, false, 2, &b"[]"[..]),
        ]
    );
}

#[test]
fn writer_output_unpacks_with_our_modes_only() {
    let root = tempfile::tempdir().unwrap();
    let dest = root.path().join("dest");
    let s = unpack_into(
        &bundle()[..],
        &dest,
        &TarLimits::bundle(),
        &AllowedNames::Bundle,
    )
    .unwrap();
    assert_eq!((s.files, s.read.members.len()), (6, 8));
    let mode = |p: &str| {
        fs::symlink_metadata(dest.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode(""), 0o700);
    assert_eq!(mode("files"), 0o755);
    assert_eq!(mode("files/run.sh"), 0o755);
    assert_eq!(mode("files/src/lib.rs"), 0o644);
    assert_eq!(fs::read(dest.join(long_path())).unwrap(), b"long\n");
    assert_eq!(fs::read(dest.join("request.json")).unwrap(), b"[]");
}

#[test]
fn artifact_round_trip_with_exact_names() {
    let mut w = DeterministicTarWriter::with_limits(Vec::new(), TarLimits::artifact());
    for name in ["generator.log", "packet.json", "patch.diff", "review.md"] {
        w.append_file(name, false, name.len() as u64, name.as_bytes())
            .unwrap();
    }
    let tgz = w.finish().unwrap();
    let got = read_all(&tgz, &TarLimits::artifact(), &AllowedNames::artifact()).unwrap();
    assert_eq!(got.len(), 4);
    assert!(got.iter().all(|(m, b)| m.path.as_bytes() == b.as_slice()));
    // The same archive read as a bundle has unlisted members.
    let e = read_all(&tgz, &TarLimits::bundle(), &AllowedNames::Bundle).unwrap_err();
    assert_eq!(e.rule(), TarRule::UnlistedMember);
}

#[test]
fn unpack_refuses_existing_dest_and_leaves_it_alone() {
    let root = tempfile::tempdir().unwrap();
    let dest = root.path().join("dest");
    fs::create_dir(&dest).unwrap();
    fs::write(dest.join("keep"), b"mine").unwrap();
    let e = unpack_into(
        &bundle()[..],
        &dest,
        &TarLimits::bundle(),
        &AllowedNames::Bundle,
    )
    .unwrap_err()
    .with_label("bundle.tar.gz");
    assert_eq!(e.rule(), TarRule::DestExists);
    assert!(
        e.to_string()
            .starts_with("bundle.tar.gz: rejected (tar.dest-exists)"),
        "{e}"
    );
    assert_eq!(fs::read(dest.join("keep")).unwrap(), b"mine");
}

#[test]
fn unpack_refuses_dest_that_is_a_symlink() {
    let root = tempfile::tempdir().unwrap();
    fs::create_dir(root.path().join("target")).unwrap();
    let dest = root.path().join("dest");
    std::os::unix::fs::symlink(root.path().join("target"), &dest).unwrap();
    let e = unpack_into(
        &bundle()[..],
        &dest,
        &TarLimits::bundle(),
        &AllowedNames::Bundle,
    )
    .unwrap_err();
    assert_eq!(e.rule(), TarRule::DestExists);
    assert_eq!(fs::read_dir(root.path().join("target")).unwrap().count(), 0);
}

#[test]
fn unpack_removes_partial_dest_when_a_later_member_is_bad() {
    // Good members first, then a bad one: the good ones were written, and must be gone.
    let mut w = DeterministicTarWriter::new(Vec::new());
    w.append_file("files/a", false, 1, &b"a"[..]).unwrap();
    w.append_file("files/b", false, 1, &b"b"[..]).unwrap();
    w.append_file("zzz.json", false, 1, &b"z"[..]).unwrap();
    let tgz = w.finish().unwrap();
    let root = tempfile::tempdir().unwrap();
    let dest = root.path().join("dest");
    let e = unpack_into(&tgz[..], &dest, &TarLimits::bundle(), &AllowedNames::Bundle).unwrap_err();
    assert_eq!(e.rule(), TarRule::UnlistedMember);
    assert!(!dest.exists());
    assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0);
}

#[test]
fn visitor_may_skip_bodies_and_the_rest_is_still_checked() {
    let tgz = bundle();
    let mut seen = 0;
    let s = read_members(
        &tgz[..],
        &TarLimits::bundle(),
        &AllowedNames::Bundle,
        |_, _| {
            seen += 1;
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(seen, 8);
    assert_eq!(s.total_bytes, 4 + 5 + 10 + 2 + 2);
    // Trailing bytes are still found when no body was read.
    let mut bad = tgz.clone();
    bad.extend_from_slice(b"junk");
    let e = read_members(
        &bad[..],
        &TarLimits::bundle(),
        &AllowedNames::Bundle,
        |_, _| Ok(()),
    )
    .unwrap_err();
    assert_eq!(e.rule(), TarRule::TrailingData);
}

#[test]
fn visitor_error_is_returned_and_stops_the_walk() {
    let mut calls = 0;
    let e = read_members(
        &bundle()[..],
        &TarLimits::bundle(),
        &AllowedNames::Bundle,
        |m, _| {
            calls += 1;
            if m.path == "files/run.sh" {
                return Err(TarError::member_rejected(
                    &m.path,
                    TarRule::UnlistedMember,
                    "policy says no",
                ));
            }
            Ok(())
        },
    )
    .unwrap_err();
    assert_eq!(calls, 4);
    assert!(e.to_string().contains("policy says no"));
}

/// A bomb read by a visitor that turns every read error into its own error with `?`: the
/// reader still reports `tar.ratio`, not a generic I/O error.
#[test]
fn read_error_inside_visitor_keeps_its_rule() {
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    let mut b = tar::Builder::new(&mut gz);
    let mut h = tar::Header::new_gnu();
    h.set_size(50 * 1024 * 1024);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    b.append_data(
        &mut h,
        "files/zeros",
        std::io::repeat(0).take(50 * 1024 * 1024),
    )
    .unwrap();
    b.into_inner().unwrap();
    let tgz = gz.finish().unwrap();
    assert!(tgz.len() < 100 * 1024);
    let e = read_members(
        &tgz[..],
        &TarLimits::bundle(),
        &AllowedNames::Bundle,
        |_, r| {
            let mut sink = Vec::new();
            r.read_to_end(&mut sink)?;
            Ok(())
        },
    )
    .unwrap_err();
    assert_eq!(e.rule(), TarRule::Ratio, "{e}");
    assert!(e.to_string().contains("member \"files/zeros\""), "{e}");
}

#[test]
fn rejects_excessive_zero_padding_after_end_of_archive() {
    let mut raw = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(1);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    raw.append_data(&mut h, "files/a", &b"a"[..]).unwrap();
    let mut tar_bytes = raw.into_inner().unwrap();
    let ok = {
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&tar_bytes).unwrap();
        gz.write_all(&[0u8; 10240]).unwrap(); // a GNU tar record's worth: fine
        gz.finish().unwrap()
    };
    read_members(
        &ok[..],
        &TarLimits::bundle(),
        &AllowedNames::Bundle,
        |_, _| Ok(()),
    )
    .unwrap();
    tar_bytes.extend(std::iter::repeat_n(0u8, 2 * 1024 * 1024));
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&tar_bytes).unwrap();
    let bad = gz.finish().unwrap();
    let bomb = read_members(
        &bad[..],
        &TarLimits::bundle(),
        &AllowedNames::Bundle,
        |_, _| Ok(()),
    );
    // 2 MiB of zeros is also a bomb by ratio; lift the ratio to see the padding cap itself.
    assert_eq!(bomb.unwrap_err().rule(), TarRule::Ratio);
    let lenient_ratio = TarLimits {
        max_compression_ratio: 100_000,
        ..TarLimits::bundle()
    };
    let e = read_members(&bad[..], &lenient_ratio, &AllowedNames::Bundle, |_, _| {
        Ok(())
    })
    .unwrap_err();
    assert_eq!(e.rule(), TarRule::TrailingData, "{e}");
}

#[test]
fn compressed_input_over_the_stream_cap_is_refused() {
    // Incompressible content larger than a tiny total limit: the per-member header check
    // fires first, which is the point: nothing is inflated past the limits.
    let limits = TarLimits {
        max_total_bytes: 1000,
        max_entry_bytes: 1000,
        ..TarLimits::artifact()
    };
    let mut w = DeterministicTarWriter::new(Vec::new());
    let body: Vec<u8> = (0..5000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    w.append_file("patch.diff", false, body.len() as u64, &body[..])
        .unwrap();
    let tgz = w.finish().unwrap();
    let e = read_members(&tgz[..], &limits, &AllowedNames::artifact(), |_, _| Ok(())).unwrap_err();
    assert_eq!(e.rule(), TarRule::EntryTooLarge);
    assert!(e.to_string().contains("limit 1000, seen 5000"), "{e}");
}

/// The 100k-member fixture is refused under a lowered cap (see expect.toml) but accepted by
/// the default bundle limits: many tiny files are neither a bomb by ratio nor by count.
#[test]
fn bundle_limits_accept_100k_small_members() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tar/tar.too-many-entries--100k-members.tar.gz");
    let tgz = fs::read(path).unwrap();
    let mut n = 0u64;
    let s = read_members(
        &tgz[..],
        &TarLimits::bundle(),
        &AllowedNames::Bundle,
        |m, _| {
            n += 1;
            assert_eq!(m.kind, MemberKind::File);
            Ok(())
        },
    )
    .unwrap();
    assert_eq!((n, s.members.len()), (100_000, 100_000));
    assert!(s.tar_bytes / s.compressed_bytes < TarLimits::bundle().max_compression_ratio);
}
