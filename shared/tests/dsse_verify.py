#!/usr/bin/env python3
"""Independent DSSE check for airlock envelopes, using Python securesystemslib.

Usage:
    dsse_verify.py ENVELOPE PUBHEX [--sign OUT SEEDHEX]

Verifies ENVELOPE (a DSSE JSON file written by airlock-core) with the raw ed25519 public key
PUBHEX (64 hex digits). The key id is computed here, independently, as the lowercase hex
SHA-256 of the raw key bytes. Then it checks that tampered copies (one flipped bit in the
payload, one in the signature) are REFUSED.

With --sign, it also signs a statement of its own with the ed25519 seed SEEDHEX, encoding the
payload as compact JSON with sorted keys (the canonical form in docs/FORMATS.md), and writes
the envelope to OUT for the Rust side to verify. This needs pyca/cryptography; without it the
signing step is skipped with a note and OUT is not written.

Exit codes: 0 all checks passed, 1 a check failed, 2 usage, 77 securesystemslib missing.
"""

import base64
import copy
import hashlib
import json
import sys

SKIP = 77
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def flip_b64(b64, index):
    raw = bytearray(base64.b64decode(b64, validate=True))
    raw[index % len(raw)] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


def verifies(envelope_dict, key):
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError

    try:
        # from_dict mutates its argument; give it a copy.
        Envelope.from_dict(copy.deepcopy(envelope_dict)).verify([key], 1)
        return True
    except VerificationError:
        return False


def sign(out_path, seed_hex, pub_hex, keyid):
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    except ImportError:
        print("sign: skipped (pyca/cryptography not installed)")
        return
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import CryptoSigner, SSlibKey

    body = b"written by securesystemslib\n"
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": "python.txt", "digest": {"sha256": hashlib.sha256(body).hexdigest()}}],
        "predicateType": "urn:airlock:predicate:test:v1",
        "predicate": {"by": "securesystemslib", "n": 1, "text": "caf\u00e9 \"quoted\"\n"},
    }
    payload = json.dumps(
        statement, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")
    private = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(seed_hex))
    public = SSlibKey(keyid, "ed25519", "ed25519", {"public": pub_hex})
    envelope = Envelope(payload, PAYLOAD_TYPE, {})
    envelope.sign(CryptoSigner(private, public))
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(envelope.to_dict(), f, indent=2)
        f.write("\n")
    print(f"sign: wrote {out_path}")


def main(argv):
    if len(argv) not in (3, 6) or (len(argv) == 6 and argv[3] != "--sign"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        from securesystemslib.signer import SSlibKey
    except ImportError:
        print(
            "SKIPPED: securesystemslib not installed (pip install securesystemslib)",
            file=sys.stderr,
        )
        return SKIP

    envelope_path, pub_hex = argv[1], argv[2]
    if len(pub_hex) != 64 or pub_hex != pub_hex.lower():
        fail("PUBHEX must be 64 lowercase hex digits")
    keyid = hashlib.sha256(bytes.fromhex(pub_hex)).hexdigest()
    key = SSlibKey(keyid, "ed25519", "ed25519", {"public": pub_hex})

    with open(envelope_path, "rb") as f:
        envelope = json.load(f)
    if set(envelope) != {"payload", "payloadType", "signatures"}:
        fail(f"unexpected envelope members {sorted(envelope)}")
    if envelope["payloadType"] != PAYLOAD_TYPE:
        fail(f"payloadType {envelope['payloadType']!r}")
    if [s["keyid"] for s in envelope["signatures"]] != [keyid]:
        fail("keyid is not sha256(raw public key)")

    if not verifies(envelope, key):
        fail("securesystemslib refused the genuine envelope")

    statement = json.loads(base64.b64decode(envelope["payload"], validate=True))
    if statement.get("_type") != STATEMENT_TYPE or not statement.get("subject"):
        fail("payload is not an in-toto v1 statement with a subject")
    canonical = json.dumps(
        statement, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")
    if canonical != base64.b64decode(envelope["payload"]):
        fail("payload is not compact sorted-key JSON")

    payload_len = len(base64.b64decode(envelope["payload"]))
    for index in (0, payload_len // 2, payload_len - 1):
        tampered = copy.deepcopy(envelope)
        tampered["payload"] = flip_b64(tampered["payload"], index)
        if verifies(tampered, key):
            fail(f"tampered payload (byte {index}) verified")
    for index in (0, 31, 63):
        tampered = copy.deepcopy(envelope)
        tampered["signatures"][0]["sig"] = flip_b64(tampered["signatures"][0]["sig"], index)
        if verifies(tampered, key):
            fail(f"tampered signature (byte {index}) verified")
    tampered = copy.deepcopy(envelope)
    tampered["payloadType"] = "application/json"
    if verifies(tampered, key):
        fail("envelope with a changed payloadType verified")

    print(f"OK: verified by securesystemslib, keyid {keyid}; tampered copies refused")

    if len(argv) == 6:
        sign(argv[4], argv[5], pub_hex, keyid)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
