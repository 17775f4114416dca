#!/usr/bin/env python3
"""Builds the tar fixtures in shared/tests/fixtures/tar/ and their expect.toml.

Run from anywhere:  python3 shared/tests/gen_tar_fixtures.py

Each fixture is named <rule-id>--<defect>.tar.gz (or ok--<what>.tar.gz) and has one or more
[[case]] entries in expect.toml: which allowed-names set and limits to read it with, optional
limit overrides, and the expected rule id (or "ok"). The table test
shared/tests/tar_fixtures.rs unpacks every case into a fresh directory and checks the rule,
that the destination is gone afterwards, and that nothing appeared anywhere else.

The fixture directory is wiped and rebuilt, so a removed case cannot linger. Output is
deterministic for a given Python and zlib (gzip mtime 0, no file name, tar mtime 0, uid/gid 0).

Paths used by the hostile fixtures assume the test layout <root>/work/dest, with a bait
directory <root>/outside: "../../../outside" from dest/files/ points at the bait.
"""

import gzip
import io
import os
import random
import shutil
import struct
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "tar")
MIB = 1024 * 1024
GIB = 1024 * MIB
ABSOLUTE_TARGET = "/tmp/airlock-tar-fixture-absolute"
PAX_ABSOLUTE_TARGET = "/tmp/airlock-tar-fixture-pax-absolute"

CASES = []  # (fixture, dict)


# --- building blocks ---------------------------------------------------------------------


def info(name, size=0, type=tarfile.REGTYPE, mode=0o644, linkname="", pax=None):
    """A TarInfo with every nondeterministic field zeroed."""
    ti = tarfile.TarInfo(name)
    ti.type = type
    ti.size = size
    ti.mode = mode
    ti.mtime = 0
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    ti.linkname = linkname
    if pax:
        ti.pax_headers = dict(pax)
    return ti


def file(name, data=b"", mode=0o644, **kw):
    return (info(name, size=len(data), mode=mode, **kw), data)


def directory(name):
    return (info(name, type=tarfile.DIRTYPE, mode=0o755), None)


def tar_bytes(members, format=tarfile.GNU_FORMAT, encoding="utf-8", pax_headers=None):
    """An uncompressed tar (with tarfile's end blocks and 10 KiB record padding)."""
    buf = io.BytesIO()
    with tarfile.open(
        fileobj=buf, mode="w", format=format, encoding=encoding, pax_headers=pax_headers
    ) as tf:
        for ti, data in members:
            tf.addfile(ti, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def gz(data, level=9):
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="", compresslevel=level) as g:
        g.write(data)
    return buf.getvalue()


def header(ti, format=tarfile.GNU_FORMAT):
    return ti.tobuf(format, "utf-8", "surrogateescape")


def pad(data):
    return data + b"\0" * (-len(data) % 512)


END = b"\0" * 1024


def write(name, blob, *cases):
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        f.write(blob)
    assert len(blob) < 1100 * 1024, f"{name} is {len(blob)} bytes, keep fixtures small"
    for c in cases:
        CASES.append((name, c))


def case(expect, allowed="bundle", limits="bundle", **extra):
    c = {"allowed": allowed, "limits": limits, "expect": expect}
    c.update(extra)
    return c


def zeros_member_tgz(name, size, chunk=8 * MIB):
    """tar.gz with one member of `size` zero bytes, streamed (never held in memory)."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="", compresslevel=9) as g:
        g.write(header(info(name, size=size)))
        zeros = b"\0" * chunk
        left = size
        while left:
            n = min(left, chunk)
            g.write(zeros[:n])
            left -= n
        g.write(b"\0" * (-size % 512))
        g.write(END)
    return buf.getvalue()


# --- good archives -----------------------------------------------------------------------


def good():
    write(
        "ok--artifact-four-members.tar.gz",
        gz(
            tar_bytes(
                [
                    file("packet.json", b'{"job":"x"}\n'),
                    file("patch.diff", b"--- a/x\n+++ b/x\n"),
                    file("review.md", b"# Review\n"),
                    file("generator.log", b"log\n"),
                ]
            )
        ),
        case("ok", allowed="artifact", limits="artifact", files=4),
    )
    long_path = "files/" + "/".join(["long-directory-name-" + str(i) for i in range(8)]) + "/f.txt"
    assert len(long_path) > 100
    bundle = [
        directory("files"),
        file("files/caf\u00e9.txt", b"nfc name\n"),
        file(long_path, b"long path via GNU long name\n"),
        file("files/run.sh", b"#!/bin/sh\necho hi\n", mode=0o755),
        directory("files/src"),
        file("files/src/main.rs", b"fn main() {}\n"),
        file("manifest.json", b"{}\n"),
        file("request.json", b"{}\n"),
    ]
    write(
        "ok--bundle-gnu-format.tar.gz",
        gz(tar_bytes(bundle)),
        case("ok", files=6),
    )
    write(
        "ok--bundle-pax-format.tar.gz",
        gz(tar_bytes(bundle, format=tarfile.PAX_FORMAT)),
        case("ok", files=6),
    )


# --- path rules --------------------------------------------------------------------------


def paths():
    write(
        "tar.parent-dir--dotdot-member.tar.gz",
        gz(tar_bytes([file("../x", b"escaped\n")])),
        case("tar.parent-dir"),
    )
    write(
        "tar.parent-dir--nested-dotdot.tar.gz",
        gz(tar_bytes([directory("files"), file("files/a/../../../x", b"escaped\n")])),
        case("tar.parent-dir"),
    )
    # The header's own (truncated) name is harmless; the GNU long name carries the traversal.
    long_traversal = "files/" + "a" * 120 + "/../../../../x"
    write(
        "tar.parent-dir--gnu-longname-traversal.tar.gz",
        gz(tar_bytes([file(long_traversal, b"escaped\n")])),
        case("tar.parent-dir"),
    )
    write(
        "tar.absolute--leading-slash.tar.gz",
        gz(tar_bytes([file(ABSOLUTE_TARGET, b"escaped\n")])),
        case("tar.absolute", outside=[ABSOLUTE_TARGET]),
    )
    # A benign ustar name, overridden by a pax path record.
    write(
        "tar.absolute--pax-path-override.tar.gz",
        gz(
            tar_bytes(
                [file("files/ok", b"escaped\n", pax={"path": PAX_ABSOLUTE_TARGET})],
                format=tarfile.PAX_FORMAT,
            )
        ),
        case("tar.absolute", outside=[PAX_ABSOLUTE_TARGET]),
    )
    write(
        "tar.backslash--windows-traversal.tar.gz",
        gz(tar_bytes([file("files\\..\\..\\x", b"x\n")])),
        case("tar.backslash"),
    )
    write(
        "tar.drive--windows-drive-prefix.tar.gz",
        gz(tar_bytes([file("C:/Windows/x", b"x\n")])),
        case("tar.drive"),
    )
    write(
        "tar.control--escape-sequence-in-name.tar.gz",
        gz(tar_bytes([file("files/\x1b[2Jcleared", b"x\n")])),
        case("tar.control"),
    )
    write(
        "tar.control--bidi-override-in-name.tar.gz",
        gz(tar_bytes([file("files/evil\u202etxt.sh", b"x\n")])),
        case("tar.control"),
    )
    write(
        "tar.dot--dot-component.tar.gz",
        gz(tar_bytes([file("files/./a", b"x\n")])),
        case("tar.dot"),
    )
    write(
        "tar.empty-component--double-slash.tar.gz",
        gz(tar_bytes([file("files//a", b"x\n")])),
        case("tar.empty-component"),
    )
    write(
        "tar.git-dir--dot-git-config.tar.gz",
        gz(tar_bytes([file("files/.git/config", b"[core]\n\thooksPath = /tmp\n")])),
        case("tar.git-dir"),
    )
    write(
        "tar.git-dir--uppercase-hook.tar.gz",
        gz(tar_bytes([file("files/.GIT/hooks/post-checkout", b"#!/bin/sh\n", mode=0o755)])),
        case("tar.git-dir"),
    )
    write(
        "tar.non-utf8--latin1-name.tar.gz",
        gz(tar_bytes([file("files/caf\u00e9", b"x\n")], encoding="latin-1")),
        case("tar.non-utf8"),
    )
    too_long = "files/" + "/".join(["d" * 100] * 19) + "/f"
    assert len(too_long) > 1024
    write(
        "tar.path-too-long--gnu-longname-2000-bytes.tar.gz",
        gz(tar_bytes([file(too_long, b"x\n")])),
        case("tar.path-too-long"),
    )
    write(
        "tar.path-too-deep--70-components.tar.gz",
        gz(tar_bytes([file("files/" + "d/" * 69 + "f", b"x\n")])),
        case("tar.path-too-deep"),
    )


# --- entry types -------------------------------------------------------------------------


def entry_types():
    write(
        "tar.link--symlink-to-outside.tar.gz",
        gz(tar_bytes([directory("files"), (info("files/link", type=tarfile.SYMTYPE, linkname="../../../outside"), None)])),
        case("tar.link"),
    )
    # Classic escape: a link, then a file written "through" it into the bait directory.
    write(
        "tar.link--symlink-then-file-through-it.tar.gz",
        gz(
            tar_bytes(
                [
                    directory("files"),
                    (info("files/d", type=tarfile.SYMTYPE, linkname="../../../outside"), None),
                    file("files/d/escaped", b"escaped through the link\n"),
                ]
            )
        ),
        case("tar.link"),
    )
    write(
        "tar.link--pax-linkpath-on-file.tar.gz",
        gz(
            tar_bytes(
                [file("files/a", b"x\n", pax={"linkpath": "/etc/passwd"})],
                format=tarfile.PAX_FORMAT,
            )
        ),
        case("tar.link"),
    )
    write(
        "tar.link--link-field-on-regular-file.tar.gz",
        gz(tar_bytes([file("files/a", b"x\n", linkname="/etc/passwd")])),
        case("tar.link"),
    )
    # A GNU 'K' (long link name) header in front of a regular file.
    target = b"/etc/" + b"x" * 120 + b"\0"
    k = info("././@LongLink", size=len(target), type=tarfile.GNUTYPE_LONGLINK)
    raw = header(k) + pad(target) + header(info("files/a", size=2)) + pad(b"x\n") + END
    write("tar.link--gnu-longlink-on-file.tar.gz", gz(raw), case("tar.link"))
    write(
        "tar.hardlink--hardlink-to-outside.tar.gz",
        gz(tar_bytes([(info("files/h", type=tarfile.LNKTYPE, linkname="../../../outside/passwd"), None)])),
        case("tar.hardlink"),
    )
    write(
        "tar.hardlink--hardlink-to-earlier-member.tar.gz",
        gz(
            tar_bytes(
                [
                    file("files/a", b"x\n"),
                    (info("files/b", type=tarfile.LNKTYPE, linkname="files/a"), None),
                ]
            )
        ),
        case("tar.hardlink"),
    )
    chr_ = info("files/null", type=tarfile.CHRTYPE)
    chr_.devmajor, chr_.devminor = 1, 3
    write("tar.device--char-device.tar.gz", gz(tar_bytes([(chr_, None)])), case("tar.device"))
    blk = info("files/sda", type=tarfile.BLKTYPE)
    blk.devmajor, blk.devminor = 8, 0
    write("tar.device--block-device.tar.gz", gz(tar_bytes([(blk, None)])), case("tar.device"))
    write(
        "tar.fifo--fifo.tar.gz",
        gz(tar_bytes([(info("files/fifo", type=tarfile.FIFOTYPE), None)])),
        case("tar.fifo"),
    )
    write(
        "tar.sparse--gnu-sparse-type.tar.gz",
        gz(tar_bytes([(info("files/sparse", type=tarfile.GNUTYPE_SPARSE), None)])),
        case("tar.sparse"),
    )
    write(
        "tar.sparse--pax-gnu-sparse-records.tar.gz",
        gz(
            tar_bytes(
                [file("files/s", b"", pax={"GNU.sparse.major": "1", "GNU.sparse.minor": "0"})],
                format=tarfile.PAX_FORMAT,
            )
        ),
        case("tar.sparse"),
    )
    write(
        "tar.entry-type--contiguous-file.tar.gz",
        gz(tar_bytes([(info("files/c", size=2, type=tarfile.CONTTYPE), b"x\n")])),
        case("tar.entry-type"),
    )
    write(
        "tar.entry-type--pax-global-header.tar.gz",
        gz(tar_bytes([file("files/a", b"x\n")], format=tarfile.PAX_FORMAT, pax_headers={"comment": "global"})),
        case("tar.entry-type"),
    )
    write(
        "tar.mode--setuid-file.tar.gz",
        gz(tar_bytes([file("files/suid", b"#!/bin/sh\n", mode=0o4755)])),
        case("tar.mode"),
    )
    write(
        "tar.pax--size-override.tar.gz",
        gz(tar_bytes([file("files/a", b"", pax={"size": "600"}), file("files/b", b"x\n")], format=tarfile.PAX_FORMAT)),
        case("tar.pax"),
    )
    write(
        "tar.pax--capability-xattr.tar.gz",
        gz(
            tar_bytes(
                [file("files/a", b"x\n", pax={"SCHILY.xattr.security.capability": "\x01"})],
                format=tarfile.PAX_FORMAT,
            )
        ),
        case("tar.pax"),
    )


# --- names -------------------------------------------------------------------------------


def names():
    write(
        "tar.unlisted-member--extra-artifact-member.tar.gz",
        gz(
            tar_bytes(
                [
                    file("packet.json", b"{}\n"),
                    file("patch.diff", b""),
                    file("run.sh", b"#!/bin/sh\n", mode=0o755),
                ]
            )
        ),
        case("tar.unlisted-member", allowed="artifact", limits="artifact"),
    )
    write(
        "tar.unlisted-member--bundle-top-level-file.tar.gz",
        gz(tar_bytes([file("manifest.json", b"{}\n"), file("evil.sh", b"x\n")])),
        case("tar.unlisted-member"),
    )
    write(
        "tar.duplicate--same-file-twice.tar.gz",
        gz(tar_bytes([file("files/a", b"first\n"), file("files/a", b"second\n")])),
        case("tar.duplicate"),
    )
    write(
        "tar.collision--case-only.tar.gz",
        gz(tar_bytes([file("files/README", b"x\n"), file("files/readme", b"y\n")])),
        case("tar.collision"),
    )
    write(
        "tar.collision--nfc-nfd.tar.gz",
        gz(tar_bytes([file("files/caf\u00e9", b"x\n"), file("files/cafe\u0301", b"y\n")])),
        case("tar.collision"),
    )
    write(
        "tar.collision--file-then-member-below-it.tar.gz",
        gz(tar_bytes([file("files/a", b"x\n"), file("files/a/b", b"y\n")])),
        case("tar.collision"),
    )


# --- limits and bombs --------------------------------------------------------------------


def limits():
    # 1 GiB of zeros in one member: about 1 MiB compressed (deflate tops out near 1032:1).
    # With artifact limits the header alone is refused; with the size limits raised, the
    # ratio check stops the inflation after the first MiB or so.
    write(
        "tar.entry-too-large--gzip-bomb-1gib-zeros.tar.gz",
        zeros_member_tgz("patch.diff", GIB),
        case("tar.entry-too-large", allowed="artifact", limits="artifact"),
        case(
            "tar.ratio",
            allowed="artifact",
            limits="artifact",
            max_entry_bytes=4 * GIB,
            max_total_bytes=4 * GIB,
        ),
    )
    # 60 MiB of zeros: under the bundle's 64 MiB per file, still refused by the ratio.
    write(
        "tar.ratio--gzip-bomb-under-entry-limit.tar.gz",
        zeros_member_tgz("files/zeros", 60 * MIB),
        case("tar.ratio"),
    )
    # 100k empty members: refused with a lowered member cap (unpacking stops after 1000 files).
    # tar_roundtrip.rs reads it under the default bundle limits, which accept it; that test
    # does not unpack it, because creating 100k files takes minutes on some disks.
    many = [file("files/d%03d/f%06d" % (i // 1000, i)) for i in range(100_000)]
    write(
        "tar.too-many-entries--100k-members.tar.gz",
        gz(tar_bytes(many)),
        case("tar.too-many-entries", max_entries=1000),
    )
    write(
        "tar.total-too-large--sum-over-limit.tar.gz",
        gz(tar_bytes([file("files/a", b"a" * 600), file("files/b", b"b" * 600)])),
        case("tar.total-too-large", max_total_bytes=1000),
    )


# --- stream structure --------------------------------------------------------------------


def structure():
    one = [file("files/a", b"hello\n")]
    plain = tar_bytes(one)
    body = header(info("files/a", size=6)) + pad(b"hello\n")
    write(
        "tar.trailing-data--garbage-after-end-blocks.tar.gz",
        gz(body + END + b"GARBAGE" + b"\0" * 505),
        case("tar.trailing-data"),
    )
    write(
        "tar.trailing-data--garbage-after-gzip.tar.gz",
        gz(plain) + b"GARBAGE after the gzip trailer",
        case("tar.trailing-data"),
    )
    second = tar_bytes([file("files/evil", b"smuggled\n")])
    write(
        "tar.trailing-data--concatenated-gzip-member.tar.gz",
        gz(plain) + gz(second),
        case("tar.trailing-data"),
    )
    rnd = random.Random(1).randbytes(64 * 1024)
    full = gz(tar_bytes([file("files/random", rnd)]))
    write(
        "tar.truncated--gzip-cut-mid-member.tar.gz",
        full[: len(full) // 2],
        case("tar.truncated"),
    )
    write(
        "tar.truncated--no-end-of-archive-blocks.tar.gz",
        gz(body),
        case("tar.truncated"),
    )
    write(
        "tar.truncated--one-end-block-only.tar.gz",
        gz(body + b"\0" * 512),
        case("tar.truncated"),
    )
    write(
        "tar.truncated--member-body-short.tar.gz",
        gz(header(info("files/a", size=4096)) + b"only a little\n"),
        case("tar.truncated"),
    )
    pax_only = tarfile.TarInfo("././@PaxHeader")
    records = b"16 path=files/a\n"
    pax_only.type = tarfile.XHDTYPE
    pax_only.size = len(records)
    pax_only.mtime = 0
    write(
        "tar.truncated--pax-header-without-member.tar.gz",
        gz(header(pax_only, tarfile.USTAR_FORMAT) + pad(records) + END),
        case("tar.truncated"),
    )
    write("tar.truncated--empty-file.tar.gz", b"", case("tar.truncated"))
    write("tar.gzip--plain-tar-not-gzip.tar.gz", plain, case("tar.gzip"))
    bad_crc = bytearray(gz(plain))
    bad_crc[-8] ^= 0xFF  # first byte of the CRC32 in the gzip trailer
    write("tar.gzip--bad-crc.tar.gz", bytes(bad_crc), case("tar.gzip"))
    bad_sum = bytearray(plain)
    bad_sum[0] = ord("F")  # name "files/a" -> "Files/a" without fixing the checksum
    write("tar.header--bad-checksum.tar.gz", gz(bytes(bad_sum)), case("tar.header"))
    v7 = bytearray(header(info("files/a", size=6)))
    v7[257:265] = b"\0" * 8  # no magic, no version: a pre-POSIX (v7) header
    v7[148:156] = b" " * 8
    v7[148:156] = b"%06o\0 " % sum(v7)
    write(
        "tar.header--v7-header-without-magic.tar.gz",
        gz(bytes(v7) + pad(b"hello\n") + END),
        case("tar.header"),
    )

    # tar.nul-padding: a field read up to its first NUL by one reader and past it by another.
    for defect, field, start, end, fmt in [
        ("name-after-nul", b"files/a\0../../../outside/x", 0, 100, tarfile.GNU_FORMAT),
        ("link-name-after-nul", b"\0../../../outside", 157, 257, tarfile.GNU_FORMAT),
        ("prefix-after-nul", b"\0../../../outside", 345, 500, tarfile.USTAR_FORMAT),
    ]:
        h = bytearray(header(info("files/a", size=6), fmt))
        h[start:end] = field.ljust(end - start, b"\0")
        h[148:156] = b" " * 8
        h[148:156] = b"%06o\0 " % sum(h)
        write(
            f"tar.nul-padding--{defect}.tar.gz",
            gz(bytes(h) + pad(b"hello\n") + END),
            case("tar.nul-padding"),
        )


def write_expect():
    lines = [
        "# Generated by shared/tests/gen_tar_fixtures.py: do not edit by hand.",
        "# One [[case]] per run of unpack_into over a fixture: allowed names and limits",
        '# ("bundle" or "artifact"), optional limit overrides, and the expected rule id or "ok".',
        "# `files`: regular files an ok case must unpack; `outside`: absolute paths that must not",
        "# exist afterwards.",
        "",
    ]
    for name, c in sorted(CASES, key=lambda nc: (nc[0], nc[1]["expect"])):
        lines.append("[[case]]")
        lines.append(f'fixture = "{name}"')
        for k, v in c.items():
            if isinstance(v, str):
                lines.append(f'{k} = "{v}"')
            elif isinstance(v, list):
                lines.append(f"{k} = [" + ", ".join(f'"{x}"' for x in v) + "]")
            else:
                lines.append(f"{k} = {v}")
        lines.append("")
    with open(os.path.join(OUT, "expect.toml"), "w") as f:
        f.write("\n".join(lines))


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    good()
    paths()
    entry_types()
    names()
    limits()
    structure()
    write_expect()
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"{len(os.listdir(OUT)) - 1} fixtures, {len(CASES)} cases, {total} bytes in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
