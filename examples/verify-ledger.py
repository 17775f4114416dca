#!/usr/bin/env python3
"""Verify a copy of an airlock audit ledger offline, independently of airlock.

Usage:
    verify-ledger.py LEDGER_DIR TRUSTED_PUBLIC_KEY [--head SEQ:SHA256]
    verify-ledger.py --export FILE.intoto.jsonl TRUSTED_PUBLIC_KEY [--head SEQ:SHA256]

LEDGER_DIR is a copy of the store's `ledger/` prefix, e.g. made with
`aws s3 cp --recursive s3://bucket/prefix/ledger/ ./ledger/` or `cp -r store/ledger .`.
TRUSTED_PUBLIC_KEY is the trusted key: the SPKI PEM file `.airlock/trusted.pub`, or the raw
ed25519 public key as 64 hex digits. With --head, the ledger must reach the pinned head and
entry SEQ must hash to SHA256 (detects a truncated tail or rewritten history).

Checks the rules of docs/LEDGER.md in the same order as `airlock audit verify`, with
hashlib, json, base64 and securesystemslib's DSSE implementation, and prints either
    OK: N entries, head N:SHA256
or the first broken entry on stderr:
    ledger/000000000007.dsse.json: rejected (ledger.prev-mismatch): ...

With --export, FILE is the output of `airlock audit export` (one DSSE envelope per line) and
every job's whole chain is checked: the job record and the bundle statement signed by the
trusted key, the job key named by the record, the artifact statement signed by that job key
and bound to the job and its bundle, the trusted first-fetch record, and every ledger entry
(signed by the trusted key, shaped as above) agreeing with those digests. Entries are placed
by the seq they sign, never by file order: they must form one unbroken run, each linked to the
one before by its prev hash, each job's in seq order in the file; a duplicate (export.duplicate),
a reorder (export.order), a gap (ledger.gap) or a broken link (ledger.prev-mismatch) is an
error naming the line. A job with a fetch, gate or review entry needs its artifact statement
and first-fetch record (export.incomplete). The decision is the job's last gate entry in
ledger order. --head pins the export's entry SEQ as for a ledger directory. It prints one line
per job, e.g.
    job 20261201T...: chain OK (record, bundle, job key 3f2a..., artifact, fetched, 5 ledger entries); decision human; approved by alice
and exits 1 at the first broken link. Payloads (bundle.tar.gz, artifact.tar.gz) are not
needed: the chain is of signatures over digests, so it verifies after `airlock gc`.

Exit codes: 0 intact, 1 broken, 2 usage, 77 securesystemslib missing
(pip install securesystemslib).
"""

import base64
import binascii
import hashlib
import json
import os
import re
import sys

SKIP = 77
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "urn:airlock:predicate:ledger-entry:v1"
MAX_ENTRY_BYTES = 4 * 1024 * 1024
NAME = re.compile(r"^([0-9]{12})\.dsse\.json$")
DIGEST = re.compile(r"^[0-9a-f]{64}$")
JOB = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{20}$")
SPKI_ED25519_PREFIX = bytes.fromhex("302a300506032b6570032100")

# Field names and types of each event kind (besides "kind"); every field is required and no
# other field is allowed.
EVENT_FIELDS = {
    "submit": {
        "prompt_sha256": "digest",
        "prompt": "str",
        "model_requested": "str",
        "bundle_sha256": "digest",
        "request_sha256": "digest",
        "revision": "str",
        "expires_at": "u64",
    },
    "fetch": {
        "artifact_sha256": "digest",
        "packet_sha256": "digest",
        "model_reported": "str",
        "partial": "bool",
        "run_id": "str",
    },
    "gate": {
        "decision": "str",
        "reasons": "strs",
        "policy_sha256": "digest",
        "gate_version": "str",
        "artifact_sha256": "digest",
        "diff_sha256": "digest",
    },
    "reject": {"stage": "str", "reason_code": "str", "detail": "str"},
    "approve": {
        "by": "str",
        "note": "str",
        "trusted_key_id": "str",
        "artifact_sha256": "digest",
        "gate_entry": "u64",
    },
    "decline": {
        "by": "str",
        "note": "str",
        "trusted_key_id": "str",
        "artifact_sha256": "digest",
        "gate_entry": "u64",
    },
}
# OPTIONAL members (docs/LEDGER.md): absent in older entries; when present, of this type.
EVENT_OPTIONAL = {
    "gate": {"files": "gated_files"},
}
GATED_FILE = {"path", "bucket", "rule", "verdict"}
REJECT_STAGES = ("fetch", "gate")


class Broken(Exception):
    def __init__(self, key, rule, reason):
        super().__init__(f"{key}: rejected ({rule}): {reason}")


def canonical(value):
    """The canonical JSON of docs/FORMATS.md: compact, sorted keys, minimal escaping."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def load_key(arg):
    from securesystemslib.signer import SSlibKey

    if re.fullmatch(r"[0-9a-f]{64}", arg):
        raw = bytes.fromhex(arg)
    else:
        with open(arg, "r", encoding="ascii") as f:
            pem = f.read()
        body = "".join(
            line.strip() for line in pem.splitlines() if line.strip() and not line.startswith("-----")
        )
        der = base64.b64decode(body, validate=True)
        if len(der) != 44 or not der.startswith(SPKI_ED25519_PREFIX):
            raise ValueError(f"{arg}: not an ed25519 SPKI public key")
        raw = der[12:]
    keyid = hashlib.sha256(raw).hexdigest()
    return SSlibKey(keyid, "ed25519", "ed25519", {"public": raw.hex()})


def b64_canonical(text, key, field):
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise Broken(key, "ledger.malformed", f"{field} is not standard base64")
    if base64.b64encode(raw).decode("ascii") != text:
        raise Broken(key, "ledger.malformed", f"{field} is not canonical base64")
    return raw


def is_u64(v):
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**64


def check_type(v, ty):
    if ty == "digest":
        return isinstance(v, str) and DIGEST.fullmatch(v) is not None
    if ty == "str":
        return isinstance(v, str)
    if ty == "strs":
        return isinstance(v, list) and all(isinstance(x, str) for x in v)
    if ty == "u64":
        return is_u64(v)
    if ty == "bool":
        return isinstance(v, bool)
    if ty == "gated_files":
        return isinstance(v, list) and all(
            isinstance(x, dict) and set(x) == GATED_FILE and all(isinstance(x[k], str) for k in x)
            for x in v
        )
    return False


def check_predicate(p, key):
    """Shape of LedgerEntry (deny unknown fields, all required, types exact)."""

    def bad(reason):
        raise Broken(key, "ledger.malformed", f"predicate: {reason}")

    if not isinstance(p, dict) or set(p) != {"seq", "prev", "at", "job", "event"}:
        bad("members must be exactly seq, prev, at, job, event")
    if not is_u64(p["seq"]) or not is_u64(p["at"]):
        bad("seq and at must be unsigned integers")
    if p["prev"] is not None and not check_type(p["prev"], "digest"):
        bad("prev must be null or 64 lowercase hex digits")
    if not isinstance(p["job"], str) or not JOB.fullmatch(p["job"]):
        bad("job is not a job id")
    ev = p["event"]
    if not isinstance(ev, dict) or ev.get("kind") not in EVENT_FIELDS:
        bad("event.kind must be one of " + ", ".join(EVENT_FIELDS))
    fields = EVENT_FIELDS[ev["kind"]]
    optional = EVENT_OPTIONAL.get(ev["kind"], {})
    if not set(fields) | {"kind"} <= set(ev) <= set(fields) | set(optional) | {"kind"}:
        bad(f"{ev['kind']} event members must be exactly kind, " + ", ".join(fields))
    for name, ty in {**fields, **{k: v for k, v in optional.items() if k in ev}}.items():
        if not check_type(ev[name], ty):
            bad(f"event.{name} has the wrong type")


def open_entry(path, key, seq, trusted):
    """Mirrors ledger::entry::open_entry: returns (predicate, file bytes)."""
    with open(path, "rb") as f:
        data = f.read(MAX_ENTRY_BYTES + 1)
    return open_entry_bytes(data, key, seq, trusted)


def open_entry_bytes(data, key, seq, trusted):
    """open_entry on an entry's bytes; seq None takes the number the entry signs."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError

    if len(data) > MAX_ENTRY_BYTES:
        raise Broken(key, "ledger.malformed", f"too large: limit {MAX_ENTRY_BYTES} bytes")
    try:
        env = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise Broken(key, "ledger.malformed", f"not JSON: {e}")
    if not isinstance(env, dict) or set(env) != {"payload", "payloadType", "signatures"}:
        raise Broken(key, "ledger.malformed", "envelope members must be payload, payloadType, signatures")
    sigs = env["signatures"]
    if not isinstance(sigs, list) or not all(
        isinstance(s, dict) and set(s) == {"keyid", "sig"} and all(isinstance(v, str) for v in s.values())
        for s in sigs
    ):
        raise Broken(key, "ledger.malformed", "signatures must be [{keyid, sig}]")
    if env["payloadType"] != PAYLOAD_TYPE or not isinstance(env["payload"], str):
        raise Broken(key, "ledger.malformed", f"payloadType must be {PAYLOAD_TYPE}")
    payload = b64_canonical(env["payload"], key, "payload")
    # Signature by the pinned trusted key, as securesystemslib checks it; any signature that
    # claims the trusted key id must verify.
    mine = [s for s in sigs if s["keyid"] == trusted.keyid]
    for s in mine:
        b64_canonical(s["sig"], key, "signatures[].sig")
    try:
        Envelope.from_dict(json.loads(data)).verify([trusted], 1)
        ok = True
    except VerificationError:
        ok = False
    if ok and len(mine) > 1:
        # securesystemslib needs one good signature; we need every one with our key id good.
        for s in mine:
            single = {"payload": env["payload"], "payloadType": PAYLOAD_TYPE, "signatures": [s]}
            try:
                Envelope.from_dict(single).verify([trusted], 1)
            except VerificationError:
                ok = False
    if not ok:
        raise Broken(key, "ledger.signature", f"not signed by the trusted key {trusted.keyid}")

    try:
        statement = json.loads(payload.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise Broken(key, "ledger.malformed", f"payload is not JSON: {e}")
    if canonical(statement) != payload:
        raise Broken(key, "ledger.malformed", "payload is not canonical JSON")
    if not isinstance(statement, dict) or set(statement) != {"_type", "subject", "predicateType", "predicate"}:
        raise Broken(key, "ledger.malformed", "payload is not an in-toto statement")
    if statement["_type"] != STATEMENT_TYPE:
        raise Broken(key, "ledger.malformed", "statement _type is not in-toto v1")
    subjects = statement["subject"]
    if not isinstance(subjects, list) or not subjects:
        raise Broken(key, "ledger.malformed", "statement has no subject")
    for s in subjects:
        if (
            not isinstance(s, dict)
            or set(s) != {"name", "digest"}
            or not isinstance(s["name"], str)
            or not isinstance(s["digest"], dict)
            or set(s["digest"]) != {"sha256"}
            or not check_type(s["digest"]["sha256"], "digest")
        ):
            raise Broken(key, "ledger.malformed", "subject must be {name, digest: {sha256}}")
    if len({s["name"] for s in subjects}) != len(subjects):
        raise Broken(key, "ledger.malformed", "subject names repeat")
    if statement["predicateType"] != PREDICATE_TYPE:
        raise Broken(key, "ledger.malformed", f"predicateType must be {PREDICATE_TYPE}")
    predicate = statement["predicate"]
    check_predicate(predicate, key)
    if len(subjects) != 1:
        raise Broken(key, "ledger.malformed", "statement must have exactly one subject")
    if seq is None:
        seq = predicate["seq"]
    if predicate["seq"] != seq:
        raise Broken(key, "ledger.seq-mismatch", f"the signed entry says seq {predicate['seq']}, but its name says {seq}")
    if subjects[0]["name"] != f"ledger-entry-{seq}":
        raise Broken(key, "ledger.seq-mismatch", f"subject name is not ledger-entry-{seq}")
    if subjects[0]["digest"]["sha256"] != hashlib.sha256(canonical(predicate)).hexdigest():
        raise Broken(key, "ledger.malformed", "subject digest is not the sha256 of the canonical predicate")
    ev = predicate["event"]
    if ev["kind"] == "submit" and hashlib.sha256(ev["prompt"].encode("utf-8")).hexdigest() != ev["prompt_sha256"]:
        raise Broken(key, "ledger.malformed", "the recorded prompt does not hash to prompt_sha256")
    if ev["kind"] == "reject" and ev["stage"] not in REJECT_STAGES:
        raise Broken(key, "ledger.malformed", "reject stage must be fetch or gate")
    if ev["kind"] == "decline" and not ev["note"].strip():
        raise Broken(key, "ledger.malformed", "a decline must say why (note is empty)")
    return predicate, data


def entry_key(seq):
    return f"ledger/{seq:012d}.dsse.json"


def walk(ledger_dir, trusted, pin):
    names = sorted(os.listdir(ledger_dir))
    expected = 1
    last = None  # (digest, at)
    seen = {}
    for name in names:
        key = f"ledger/{name}"
        m = NAME.fullmatch(name)
        path = os.path.join(ledger_dir, name)
        if not m or int(m.group(1)) == 0 or not os.path.isfile(path):
            raise Broken(key, "ledger.name", "not an entry name (expected ledger/<12 digits, from 1>.dsse.json)")
        seq = int(m.group(1))
        if seq != expected:
            raise Broken(entry_key(expected), "ledger.gap", f"entry {expected} is missing (the next present entry is {key})")
        predicate, data = open_entry(path, key, seq, trusted)
        digest = hashlib.sha256(data).hexdigest()
        prev = predicate["prev"]
        if last is None:
            if prev is not None:
                raise Broken(key, "ledger.prev-mismatch", f"the first entry must have prev null, found {prev}")
        elif prev is None:
            raise Broken(key, "ledger.prev-mismatch", "prev is null, but only entry 1 may start a chain")
        elif prev != last[0]:
            if prev in seen:
                j = seen[prev]
                raise Broken(key, "ledger.fork", f"prev is entry {j}, which entry {j + 1} already extends: two branches")
            raise Broken(key, "ledger.prev-mismatch", f"prev is {prev}, but {entry_key(seq - 1)} hashes to {last[0]}")
        if last is not None and predicate["at"] < last[1]:
            raise Broken(key, "ledger.time", f"at {predicate['at']} is earlier than the previous entry's {last[1]}")
        if pin is not None and pin[0] == seq and pin[1] != digest:
            raise Broken(key, "ledger.pin-mismatch", f"hashes to {digest}, but the pinned head is {pin[0]}:{pin[1]}")
        seen[digest] = seq
        last = (digest, predicate["at"])
        expected += 1
    entries = expected - 1
    if pin is not None and pin[0] > entries:
        raise Broken(entry_key(entries + 1), "ledger.truncated", f"the ledger ends at entry {entries}, but the pinned head is {pin[0]}:{pin[1]}")
    return entries, (last[0] if last else None)


# ---- --export: every envelope of a job's chain, from `airlock audit export` ----

PREDICATE_RECORD = "urn:airlock:predicate:job-record:v1"
PREDICATE_BUNDLE = "urn:airlock:predicate:bundle:v1"
PREDICATE_ARTIFACT = "urn:airlock:predicate:artifact:v1"
PREDICATE_FETCHED = "urn:airlock:predicate:fetched:v1"


def key_from_hex(raw_hex):
    from securesystemslib.signer import SSlibKey

    raw = bytes.fromhex(raw_hex)
    return SSlibKey(hashlib.sha256(raw).hexdigest(), "ed25519", "ed25519", {"public": raw_hex})


def open_statement(line_no, data, key, what):
    """A DSSE envelope signed by `key` over a canonical in-toto statement; returns it."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError

    where = f"line {line_no} ({what})"
    env = json.loads(data)
    if not isinstance(env, dict) or env.get("payloadType") != PAYLOAD_TYPE:
        raise Broken(where, "export.malformed", f"not a DSSE envelope of {PAYLOAD_TYPE}")
    try:
        Envelope.from_dict(env).verify([key], 1)
    except VerificationError:
        raise Broken(where, "export.signature", f"not signed by key {key.keyid}")
    payload = b64_canonical(env["payload"], where, "payload")
    st = json.loads(payload.decode("utf-8"))
    if canonical(st) != payload or st.get("_type") != STATEMENT_TYPE:
        raise Broken(where, "export.malformed", "payload is not a canonical in-toto v1 statement")
    return st


def subject_digest(st, name):
    for s in st.get("subject", []):
        if s.get("name") == name:
            return s.get("digest", {}).get("sha256")
    return None


def predicate_type(data):
    env = json.loads(data)
    try:
        st = json.loads(base64.b64decode(env["payload"], validate=True))
        return st.get("predicateType"), st.get("predicate", {})
    except (KeyError, ValueError, TypeError, AttributeError):
        return None, {}


def stored_digest(data):
    """SHA-256 of an entry file as stored: the export put it on one line; the ledger keeps it
    as pretty JSON (docs/LEDGER.md: two-space indent, members sorted, final newline)."""
    stored = (json.dumps(json.loads(data), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return hashlib.sha256(stored).hexdigest()


def verify_export(path, trusted, pin=None):
    """Checks every job's chain in an export; returns the summary lines.

    Ledger entries are placed by the seq they sign and linked by the previous-entry hash, never
    by file order: the entries present must be one unbroken run (no duplicate, no gap), each
    linked to the one before it, each job's lines must stand together, and each job's entries
    must appear in the file in seq order.
    Every reported job (one with a record) needs its whole chain: a record, and with any fetch,
    gate or review entry the artifact statement and the first-fetch record. The decision is the
    job's last gate entry in ledger order, the review the last approve/decline after it."""
    jobs = {}  # job -> {"record": (n, bytes), ..., "entries": [(n, predicate)]}
    by_seq = {}  # seq -> (line, predicate, stored digest)
    prev_job = None  # the job of the line before: a job's lines stand together
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip(b"\n")
            if not line:
                continue
            ptype, pred = predicate_type(line)
            job = pred.get("job") if isinstance(pred, dict) else None
            if not isinstance(job, str) or not JOB.fullmatch(job):
                raise Broken(f"line {n}", "export.malformed", "no job id in the statement's predicate")
            if job != prev_job and job in jobs:
                raise Broken(f"line {n}", "export.order", f"a line of job {job} stands apart from that job's other lines: the file is out of export order")
            prev_job = job
            slot = jobs.setdefault(job, {"entries": []})
            kind = {
                PREDICATE_RECORD: "record",
                PREDICATE_BUNDLE: "bundle",
                PREDICATE_ARTIFACT: "artifact",
                PREDICATE_FETCHED: "fetched",
                PREDICATE_TYPE: "entry",
            }.get(ptype)
            if kind is None:
                raise Broken(f"line {n}", "export.malformed", f"unknown predicateType {ptype!r}")
            if kind != "entry":
                if kind in slot:
                    raise Broken(f"line {n}", "export.duplicate", f"a second {kind} statement for job {job} (first on line {slot[kind][0]})")
                slot[kind] = (n, line)
                continue
            p, _ = open_entry_bytes(line, f"line {n} (ledger entry)", None, trusted)
            seq = p["seq"]
            if seq in by_seq:
                raise Broken(f"line {n}", "export.duplicate", f"ledger entry {seq} again (first on line {by_seq[seq][0]})")
            if p["job"] != job:
                raise Broken(f"line {n}", "export.binding", "ledger entry for another job")
            if slot["entries"] and slot["entries"][-1][1]["seq"] > seq:
                before = slot["entries"][-1]
                raise Broken(f"line {n}", "export.order", f"ledger entry {seq} comes after entry {before[1]['seq']} (line {before[0]}): the file is out of ledger order")
            by_seq[seq] = (n, p, stored_digest(line))
            slot["entries"].append((n, p))
    # The chain: one unbroken run of seq, each entry linked to the one before.
    seqs = sorted(by_seq)
    for i, seq in enumerate(seqs):
        n, p, _ = by_seq[seq]
        if i > 0 and seq != seqs[i - 1] + 1:
            raise Broken(f"line {n}", "ledger.gap", f"entry {seqs[i - 1] + 1} is missing (the next present entry is {seq})")
        if seq == 1 and p["prev"] is not None:
            raise Broken(f"line {n}", "ledger.prev-mismatch", "the first entry must have prev null")
        if i > 0 and p["prev"] != by_seq[seq - 1][2]:
            raise Broken(f"line {n}", "ledger.prev-mismatch", f"prev is not the sha256 of entry {seq - 1} (line {by_seq[seq - 1][0]})")
        if i > 0 and p["at"] < by_seq[seq - 1][1]["at"]:
            raise Broken(f"line {n}", "ledger.time", f"at {p['at']} is earlier than entry {seq - 1}'s")
    if pin is not None:
        if not seqs or pin[0] > seqs[-1]:
            last = seqs[-1] if seqs else 0
            raise Broken(f"{path}", "ledger.truncated", f"the export ends at entry {last}, but the pinned head is {pin[0]}:{pin[1]}")
        if pin[0] < seqs[0]:
            raise Broken(f"{path}", "ledger.pin-mismatch", f"the pinned entry {pin[0]} is before the export's first entry {seqs[0]}")
        n, _, digest = by_seq[pin[0]]
        if digest != pin[1]:
            raise Broken(f"line {n}", "ledger.pin-mismatch", f"hashes to {digest}, but the pinned head is {pin[0]}:{pin[1]}")
    out = []
    for job, slot in sorted(jobs.items()):
        if "record" not in slot:
            extra = [k for k in ("bundle", "artifact", "fetched") if k in slot]
            if extra:
                n = slot[extra[0]][0]
                raise Broken(f"line {n}", "export.incomplete", f"job {job}: a {extra[0]} statement without the job record")
            continue  # entries of a job outside the selection: links of the chain only
        n, data = slot["record"]
        record = open_statement(n, data, trusted, "job record")
        rec = record["predicate"]
        if rec.get("job") != job or subject_digest(record, "bundle.tar.gz") != rec.get("bundle_sha256"):
            raise Broken(f"line {n}", "export.binding", "the record's subject is not its bundle digest")
        parts = ["record"]
        if "bundle" in slot:
            n, data = slot["bundle"]
            b = open_statement(n, data, trusted, "bundle")
            if subject_digest(b, "bundle.tar.gz") != rec["bundle_sha256"] or b["predicate"].get("job") != job:
                raise Broken(f"line {n}", "export.binding", "the bundle statement is not the record's bundle")
            if b["predicate"].get("request_sha256") != rec.get("request_sha256"):
                raise Broken(f"line {n}", "export.binding", "the bundle's request is not the record's")
            parts.append("bundle")
        job_key = key_from_hex(rec["job_public_key"])
        parts.append(f"job key {job_key.keyid[:16]}")
        entries = sorted(slot["entries"], key=lambda e: e[1]["seq"])
        needs = [e for e in entries if e[1]["event"]["kind"] in ("fetch", "gate", "approve", "decline")]
        artifact = None
        if "artifact" in slot:
            n, data = slot["artifact"]
            a = open_statement(n, data, job_key, "artifact (job key)")
            ap = a["predicate"]
            if ap.get("job") != job or ap.get("bundle_sha256") != rec["bundle_sha256"]:
                raise Broken(f"line {n}", "export.binding", "the artifact names another job or bundle")
            artifact = subject_digest(a, "artifact.tar.gz")
            parts.append("artifact")
        elif needs:
            raise Broken(f"line {needs[0][0]}", "export.incomplete", f"job {job}: a {needs[0][1]['event']['kind']} entry, but no artifact statement")
        if "fetched" in slot:
            n, data = slot["fetched"]
            fr = open_statement(n, data, trusted, "first-fetch record")
            if artifact and subject_digest(fr, "artifact.tar.gz") != artifact:
                raise Broken(f"line {n}", "export.binding", "the first fetch recorded another artifact")
            parts.append("fetched")
        elif needs:
            raise Broken(f"line {needs[0][0]}", "export.incomplete", f"job {job}: a {needs[0][1]['event']['kind']} entry, but no first-fetch record")
        if not entries or entries[0][1]["event"]["kind"] != "submit":
            where = f"line {entries[0][0]}" if entries else f"line {slot['record'][0]}"
            raise Broken(where, "export.incomplete", f"job {job}: its chain does not start with its submit entry")
        decision, review, gates = None, None, {}
        for n, p in entries:
            ev = p["event"]
            if ev["kind"] == "submit" and ev["bundle_sha256"] != rec["bundle_sha256"]:
                raise Broken(f"line {n}", "export.binding", "submit entry names another bundle")
            if ev["kind"] in ("fetch", "gate", "approve", "decline") and artifact and ev["artifact_sha256"] != artifact:
                raise Broken(f"line {n}", "export.binding", f"{ev['kind']} entry names another artifact than the signed one")
            if ev["kind"] == "gate":
                decision, review = ev["decision"], None
                gates[p["seq"]] = ev
            if ev["kind"] in ("approve", "decline"):
                if ev["gate_entry"] not in gates:
                    raise Broken(f"line {n}", "export.incomplete", f"{ev['kind']} of gate entry {ev['gate_entry']}, which is not an earlier gate entry of job {job}")
                review = f"{ev['kind']}d by {ev['by']}"
        parts.append(f"{len(entries)} ledger entries")
        line = f"job {job}: chain OK ({', '.join(parts)}); decision {decision or 'none'}"
        if review:
            line += f"; {review}"
        out.append(line)
    return out, len(by_seq)


def main_export(args):
    pin = None
    if len(args) == 4 and args[2] == "--head":
        m = re.fullmatch(r"([1-9][0-9]{0,11}):([0-9a-f]{64})", args[3])
        if not m:
            print("--head must be SEQ:SHA256", file=sys.stderr)
            return 2
        pin = (int(m.group(1)), m.group(2))
        args = args[:2]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        trusted = load_key(args[1])
    except (OSError, ValueError) as e:
        print(f"cannot read the trusted key: {e}", file=sys.stderr)
        return 2
    try:
        lines, entries = verify_export(args[0], trusted, pin)
    except Broken as b:
        print(str(b), file=sys.stderr)
        return 1
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"{args[0]}: rejected (export.malformed): {e}", file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    print(f"OK: {len(lines)} job(s), {entries} ledger entries, every signature verified (trusted key {trusted.keyid})")
    return 0


def main(argv):
    args = argv[1:]
    if args[:1] == ["--export"]:
        try:
            import securesystemslib.dsse  # noqa: F401
            from securesystemslib.signer import SSlibKey  # noqa: F401
        except ImportError:
            print("SKIPPED: securesystemslib not installed (pip install securesystemslib)", file=sys.stderr)
            return SKIP
        return main_export(args[1:])
    pin = None
    if len(args) == 4 and args[2] == "--head":
        m = re.fullmatch(r"([1-9][0-9]{0,11}):([0-9a-f]{64})", args[3])
        if not m:
            print("--head must be SEQ:SHA256", file=sys.stderr)
            return 2
        pin = (int(m.group(1)), m.group(2))
        args = args[:2]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import securesystemslib.dsse  # noqa: F401
        from securesystemslib.signer import SSlibKey  # noqa: F401
    except ImportError:
        print("SKIPPED: securesystemslib not installed (pip install securesystemslib)", file=sys.stderr)
        return SKIP
    try:
        trusted = load_key(args[1])
    except (OSError, ValueError) as e:
        print(f"cannot read the trusted key: {e}", file=sys.stderr)
        return 2
    try:
        entries, head = walk(args[0], trusted, pin)
    except Broken as b:
        print(str(b), file=sys.stderr)
        return 1
    head_text = f"{entries}:{head}" if head else "none"
    print(f"OK: {entries} entries, head {head_text}")
    print(f"every entry signed by trusted key {trusted.keyid}; chain intact")
    if pin is None:
        print("note: a truncated tail is only detectable against a pinned head (--head)")
    else:
        print(f"pinned head {pin[0]}:{pin[1]} matches")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
