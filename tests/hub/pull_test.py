"""`onnxllm pull` end to end against the mock hub of mock_hub.py (ctest hub_pull; no network).

Checks: a full pull (files byte-identical, huggingface_hub's cache layout: refs, relative snapshot
symlinks to blobs named by etag, no token sent to the CDN), a cached pull requests no file again, a
cut connection resumed in the same run and, when every transfer is cut, on the next run with a Range
request, a corrupt LFS file detected and deleted, 401 without HF_TOKEN and success with it, a wrong
token, 404 for the repository and for the revision, --include, -o DIR (a plain folder; none left on
failure), a commit as revision, a refused connection, bad REPO syntax, a full disk (a small tmpfs,
when unshare can mount one: refused up front, and filling up mid-download), 403 for a gated repository, and `onnxllm info -m owner/name` from the cache (and its error when not
cached), and https with a self-signed certificate (refused, then trusted through SSL_CERT_FILE).
Usage: pull_test.py ONNXLLM_CLI WORK_DIR
"""

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mock_hub import MockHub, Repo, git_blob_sha1  # noqa: E402

cli, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


hub = MockHub()
BIG = os.urandom(300_000)
REPO_FILES = {"config.json": b'{"model_type": "llama"}\n', "tokenizer.json": b'{"version": "1.0"}' * 50,
              "copy/config.json": b'{"model_type": "llama"}\n',  # equal contents: one blob, two entries
              "model.onnx": os.urandom(5000), "model.onnx.data": BIG, "sub/dir/extra.txt": b"extra\n"}
LFS = {"model.onnx", "model.onnx.data"}
hub.repos["acme/tiny"] = Repo(REPO_FILES, LFS, refs=None)
tiny = hub.repos["acme/tiny"]
tiny.refs["v1.0"] = tiny.commit
hub.repos["acme/private"] = Repo({"config.json": b"{}", "w.bin": os.urandom(1000)}, {"w.bin"}, token="hf_secret")

case_no = [0]


def fresh_home(name):
    case_no[0] += 1
    home = os.path.join(work, "%02d-%s" % (case_no[0], name))
    os.makedirs(home)
    return home


def run(args, home, token=None, endpoint=None, timeout=120, prefix=()):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_") and k != "XDG_CACHE_HOME"}
    env.update(HF_HOME=os.path.join(home, "hf"), HF_ENDPOINT=endpoint or hub.endpoint, HOME=home)
    if token is not None:
        env["HF_TOKEN"] = token
    return subprocess.run(list(prefix) + [cli] + args, capture_output=True, text=True, timeout=timeout, env=env)


def repo_dir(home, repo="acme/tiny"):
    return os.path.join(home, "hf", "hub", "models--" + repo.replace("/", "--"))


def etag_of(repo, f):
    data = repo.files[f]
    return hashlib.sha256(data).hexdigest() if f in repo.lfs else git_blob_sha1(data)


def check_layout(home, repo, files, what):
    d = repo_dir(home)
    snap = os.path.join(d, "snapshots", repo.commit)
    for f in files:
        p = os.path.join(snap, f)
        if not check(os.path.islink(p), f"{what}: snapshot entry {f} is a symlink"):
            continue
        target = os.readlink(p)
        check(not os.path.isabs(target), f"{what}: {f} links with a relative path ({target})")
        check(os.path.normpath(os.path.join(os.path.dirname(p), target)) ==
              os.path.join(d, "blobs", etag_of(repo, f)), f"{what}: {f} points at blobs/<etag> ({target})")
        with open(p, "rb") as fh:
            check(fh.read() == repo.files[f], f"{what}: {f} is byte-identical")
    blobs = os.listdir(os.path.join(d, "blobs"))
    check(not any(b.endswith(".incomplete") for b in blobs), f"{what}: no .incomplete blob left ({blobs})")


# 1. A full pull: layout, contents, stdout, no token to the CDN.
home = fresh_home("full")
r = run(["pull", "acme/tiny"], home, token="hf_public_token")
snap = os.path.join(repo_dir(home), "snapshots", tiny.commit)
check(r.returncode == 0, f"full pull exits 0 ({r.returncode}: {r.stderr})")
check(r.stdout.strip() == snap, f"full pull prints the snapshot folder ({r.stdout!r})")
check_layout(home, tiny, REPO_FILES, "full pull")
ref = os.path.join(repo_dir(home), "refs", "main")
check(os.path.isfile(ref) and open(ref).read() == tiny.commit, "refs/main holds the commit (no newline)")
check(os.path.isfile(os.path.join(home, "hf", "hub", ".locks", "models--acme--tiny", etag_of(tiny, "model.onnx.data") + ".lock")),
      "a lock file per blob under .locks")
cdn = hub.requests("cdn")
check(len(cdn) == 2 and all(c[4] is None for c in cdn), f"LFS files come from the CDN without the token ({cdn})")
check(all(c[4] == "Bearer hf_public_token" for c in hub.requests("hub")), "the hub gets the token")
check("6 files, 5 downloaded" in r.stderr, f"summary on stderr ({r.stderr!r})")

# 2. A cached pull downloads nothing: one API call, no file requests.
hub.clear_log()
r = run(["pull", "acme/tiny"], home)
check(r.returncode == 0 and "0 downloaded" in r.stderr, f"second pull exits 0, downloads nothing ({r.stderr})")
check([x[1:3] for x in hub.requests()] == [("GET", "/api/models/acme/tiny/revision/main")],
      f"second pull only asks for the revision ({hub.requests()})")
# A tag of the same commit: its ref is written, still nothing downloaded.
hub.clear_log()
r = run(["pull", "acme/tiny", "--revision", "v1.0"], home)
check(r.returncode == 0 and open(os.path.join(repo_dir(home), "refs", "v1.0")).read() == tiny.commit,
      f"a tag writes refs/v1.0 ({r.stderr})")
check(not hub.requests("cdn") and not hub.requests(method="HEAD"), "a tag of a cached commit downloads nothing")

# 3. A cut connection: resumed with a Range request within the same run.
home = fresh_home("cut-once")
hub.clear_log()
hub.cut["model.onnx.data"], hub.cut_times["model.onnx.data"] = 100_000, 1
r = run(["pull", "acme/tiny"], home)
check(r.returncode == 0, f"a pull with one cut connection succeeds ({r.stderr})")
ranges = [x[3] for x in hub.requests("cdn") if "model.onnx.data" in x[2]]
check(ranges == [None, "bytes=100000-"], f"the retry asks for the rest (Range bytes=100000-): {ranges}")
check("resuming from byte 100000" in r.stderr, f"the retry is reported ({r.stderr})")
check_layout(home, tiny, REPO_FILES, "pull after one cut")

# 4. Every transfer cut: the run fails and keeps the partial blob; the next run resumes it.
home = fresh_home("cut-always")
hub.clear_log()
hub.cut["model.onnx.data"] = 20_000
hub.cut_times.pop("model.onnx.data", None)
r = run(["pull", "acme/tiny"], home)
part = os.path.join(repo_dir(home), "blobs", etag_of(tiny, "model.onnx.data") + ".incomplete")
check(r.returncode == 1, f"a pull whose transfers are all cut exits 1 ({r.returncode})")
check("model.onnx.data" in r.stderr and "run the command again to resume" in r.stderr,
      f"the message names the file and says to run again ({r.stderr})")
kept = os.path.getsize(part) if os.path.exists(part) else -1
check(kept == 4 * 20_000, f"the partial blob keeps what arrived ({kept} bytes)")
check(not os.path.exists(os.path.join(repo_dir(home), "snapshots", tiny.commit, "model.onnx.data")),
      "no snapshot entry for the partial file")
check(not os.path.exists(os.path.join(repo_dir(home), "refs", "main")), "no ref written by a failed pull")
del hub.cut["model.onnx.data"]
hub.clear_log()
r = run(["pull", "acme/tiny"], home)
ranges = [x[3] for x in hub.requests("cdn") if "model.onnx.data" in x[2]]
check(r.returncode == 0, f"the next run succeeds ({r.stderr})")
check(ranges == ["bytes=80000-"], f"the next run resumes with Range bytes=80000- ({ranges})")
check_layout(home, tiny, REPO_FILES, "resumed pull")

# 5. A server that ignores Range: the partial file is restarted, the result still right.
home = fresh_home("ignore-range")
hub.cut["model.onnx.data"], hub.cut_times["model.onnx.data"] = 50_000, 1
hub.ignore_range.add("model.onnx.data")
r = run(["pull", "acme/tiny"], home)
check(r.returncode == 0, f"a server ignoring Range still gives the file ({r.stderr})")
check_layout(home, tiny, REPO_FILES, "ignored Range")
hub.ignore_range.clear()
hub.cut.clear()
hub.cut_times.clear()

# Two pulls at once into one cache: the blob lock lets one download each blob; both end complete.
home = fresh_home("concurrent")
hub.clear_log()
hub.throttle["model.onnx.data"] = 0.02
env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
env.update(HF_HOME=os.path.join(home, "hf"), HF_ENDPOINT=hub.endpoint, HOME=home)
procs = [subprocess.Popen([cli, "pull", "acme/tiny"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
         for _ in range(2)]
outs = [p.communicate(timeout=120) for p in procs]
del hub.throttle["model.onnx.data"]
check(all(p.returncode == 0 for p in procs), f"two concurrent pulls succeed ({[o[1] for o in outs]})")
gets = [x for x in hub.requests("cdn") if "model.onnx.data" in x[2]]
check(len(gets) == 1, f"the shared blob is downloaded once ({len(gets)} transfers)")
check_layout(home, tiny, REPO_FILES, "concurrent pulls")

# 6. A corrupt LFS file: detected, deleted, named; nothing of it in the snapshot.
home = fresh_home("corrupt")
hub.corrupt.add("model.onnx")
r = run(["pull", "acme/tiny"], home)
check(r.returncode == 1 and "model.onnx of acme/tiny is corrupt" in r.stderr and "sha256" in r.stderr,
      f"a corrupt file is an error naming it ({r.returncode}: {r.stderr})")
blobs = os.listdir(os.path.join(repo_dir(home), "blobs"))
check(not any(b.startswith(etag_of(tiny, "model.onnx")) for b in blobs), f"the corrupt blob is deleted ({blobs})")
check(not os.path.exists(os.path.join(repo_dir(home), "snapshots", tiny.commit, "model.onnx")),
      "no snapshot entry for the corrupt file")
# ... and with -o: no output folder, no staging folder left.
out = os.path.join(home, "out")
r = run(["pull", "acme/tiny", "-o", out], home)
check(r.returncode == 1 and not os.path.exists(out) and not [e for e in os.listdir(home) if ".tmp-" in e],
      f"a failed pull with -o leaves no folder ({os.listdir(home)})")
hub.corrupt.clear()

# A damaged partial file from an earlier run: resumed, the kept bytes are hashed too, so it is caught.
home = fresh_home("bad-partial")
part = os.path.join(repo_dir(home), "blobs", etag_of(tiny, "model.onnx.data") + ".incomplete")
os.makedirs(os.path.dirname(part))
with open(part, "wb") as f:
    f.write(b"\0" * 1000)
hub.clear_log()
r = run(["pull", "acme/tiny"], home)
check(r.returncode == 1 and "model.onnx.data of acme/tiny is corrupt" in r.stderr, f"a damaged partial file ({r.stderr})")
check([x[3] for x in hub.requests("cdn") if "model.onnx.data" in x[2]] == ["bytes=1000-"], "it was resumed from byte 1000")
check(not os.path.exists(part), "the damaged partial file is deleted")
r = run(["pull", "acme/tiny"], home)
check(r.returncode == 0, f"the next run downloads it whole ({r.stderr})")
check_layout(home, tiny, REPO_FILES, "after a damaged partial file")

# 7. Private repository: 401 without HF_TOKEN (the message says to set it), refused bad token, success with it.
home = fresh_home("private")
r = run(["pull", "acme/private"], home)
check(r.returncode == 1 and "401" in r.stderr and "set HF_TOKEN" in r.stderr,
      f"401 without a token says to set HF_TOKEN ({r.stderr})")
check(not os.path.exists(repo_dir(home, "acme/private")), "a 401 writes nothing in the cache")
r = run(["pull", "acme/private"], home, token="hf_wrong")
check(r.returncode == 1 and "refused the token" in r.stderr, f"a wrong token is named as such ({r.stderr})")
r = run(["pull", "acme/private"], home, token="hf_secret")
check(r.returncode == 0, f"the right token pulls the private repo ({r.stderr})")

hub.repos["acme/gated"] = Repo({"config.json": b"{}"}, gated=True)
r = run(["pull", "acme/gated"], home)
check(r.returncode == 1 and "access to repository acme/gated is forbidden (403)" in r.stderr and "set HF_TOKEN" in r.stderr,
      f"403 names the repository and says to set HF_TOKEN ({r.stderr})")
r = run(["pull", "acme/gated"], home, token="hf_secret")
check(r.returncode == 1 and "has no access" in r.stderr, f"403 with a token says the account has no access ({r.stderr})")

# 8. 404s: the repository, the revision.
home = fresh_home("missing")
r = run(["pull", "acme/nothing"], home)
check(r.returncode == 1 and "repository acme/nothing not found" in r.stderr, f"404 repo names it ({r.stderr})")
r = run(["pull", "acme/tiny", "--revision", "nope"], home)
check(r.returncode == 1 and "revision 'nope' not found in acme/tiny" in r.stderr, f"404 revision names it ({r.stderr})")
check(not os.path.exists(os.path.join(repo_dir(home), "snapshots")), "a 404 writes no snapshot")

# 9. --include and a commit hash as revision (no ref written for a commit).
home = fresh_home("include")
r = run(["pull", "acme/tiny", "--include", "*.json", "--include", "sub/", "--revision", tiny.commit], home)
snap = os.path.join(repo_dir(home), "snapshots", tiny.commit)
got = sorted(os.path.relpath(os.path.join(dp, f), snap) for dp, _, fs in os.walk(snap) for f in fs)
check(r.returncode == 0 and got == ["config.json", "copy/config.json", "sub/dir/extra.txt", "tokenizer.json"],
      f"--include selects the matching files ({got}, {r.stderr})")
check(not os.path.exists(os.path.join(repo_dir(home), "refs")), "a commit hash as revision writes no ref")
r = run(["pull", "acme/tiny", "--include", "*.gguf"], home)
check(r.returncode == 1 and "no file of acme/tiny matches --include" in r.stderr, f"an empty selection ({r.stderr})")

# 10. -o DIR: a plain folder of regular files; an existing one refused.
home = fresh_home("output")
out = os.path.join(home, "model")
r = run(["pull", "acme/tiny", "-o", out], home)
check(r.returncode == 0 and r.stdout.strip() == out, f"-o prints the folder ({r.stdout!r} {r.stderr})")
for f, data in REPO_FILES.items():
    p = os.path.join(out, f)
    check(os.path.isfile(p) and not os.path.islink(p) and open(p, "rb").read() == data, f"-o: {f} is a plain copy")
check_layout(home, tiny, REPO_FILES, "-o pull (cache)")
r = run(["pull", "acme/tiny", "-o", out], home)
check(r.returncode == 1 and "already exists" in r.stderr, f"an existing -o folder is refused ({r.stderr})")
r = run(["pull", "acme/tiny", "-o", out, "--overwrite"], home)
check(r.returncode == 0, f"--overwrite replaces it ({r.stderr})")

# 11. Bad REPO syntax and a refused connection.
home = fresh_home("bad")
for bad in ["acme/tiny/extra", "-acme/tiny", "acme/ti..ny", "acme/", "ac me/tiny"]:
    r = run(["pull", "--", bad], home)
    check(r.returncode == 1 and "invalid repository" in r.stderr, f"bad REPO {bad!r} ({r.stderr})")
r = run(["pull", "acme/tiny", "--include", "*.json", "acme/other"], home)
check(r.returncode == 1 and "not expected: acme/other" in r.stderr, f"--include takes one glob ({r.stderr})")
s = socket.socket()
s.bind(("127.0.0.1", 0))
closed_port = s.getsockname()[1]
s.close()
r = run(["pull", "acme/tiny"], home, endpoint="http://127.0.0.1:%d" % closed_port)
check(r.returncode == 1 and "cannot reach the hub" in r.stderr and "HF_ENDPOINT" in r.stderr,
      f"a refused connection is named ({r.stderr})")
r = run(["pull", "acme/tiny"], home, endpoint="ftp://x")
check(r.returncode == 1 and "HF_ENDPOINT" in r.stderr, f"a bad HF_ENDPOINT is named ({r.stderr})")

# 12. A full disk: HF_HOME on a 1 MB tmpfs, the model needs more (when a mount namespace is allowed).
home = fresh_home("disk-full")
probe = subprocess.run(["unshare", "-m", "true"], capture_output=True) if shutil.which("unshare") else None
if probe is None or probe.returncode != 0:
    print("SKIP disk full: unshare -m is not permitted here")
else:
    hub.huge_size.clear()
    big = {"config.json": b"{}", "weights.bin": os.urandom(2_000_000)}
    hub.repos["acme/big"] = Repo(big, {"weights.bin"})
    mnt = os.path.join(home, "hf")
    os.makedirs(mnt)
    r = run(["pull", "acme/big"], home,
            prefix=["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=1m tmpfs "$0" && exec "$@"', mnt])
    check(r.returncode == 1 and "not enough disk space" in r.stderr and "acme/big" in r.stderr,
          f"a full disk is refused before downloading ({r.stderr})")
    check(not [x for x in hub.requests("cdn") if "weights.bin" in x[2]], "nothing downloaded onto the full disk")
    # The disk fills up during the download: the CDN sends 200 KB and holds the rest until another
    # writer (inside the mount namespace) has seen 100 KB arrive and taken the space. The filler's wait
    # is bounded and its output goes to /dev/null, so it can never keep the test's pipes open.
    fill = {"weights.bin": os.urandom(700_000)}
    hub.repos["acme/fill"] = Repo(fill, {"weights.bin"})
    flag = os.path.join(home, "disk-filled")
    hub.hold["weights.bin"] = (200_000, flag)
    filler = ('mount -t tmpfs -o size=1m tmpfs "$0" && '
              '(i=0; while [ "$(stat -c %s "$0"/hub/models--acme--fill/blobs/*.incomplete 2>/dev/null || echo 0)" -lt 100000 ]'
              ' && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done; head -c 2000000 /dev/zero > "$0/filler";'
              ' touch "$1") </dev/null >/dev/null 2>&1 & shift; exec "$@"')
    r = run(["pull", "acme/fill"], home, prefix=["unshare", "-m", "sh", "-c", filler, mnt, flag])
    check(r.returncode == 1 and "the disk is full" in r.stderr and "weights.bin" in r.stderr and
          "the next run continues from them" in r.stderr, f"a disk that fills up during the download ({r.stderr})")
    del hub.hold["weights.bin"]

# 13. -m owner/name: a model folder built here, pulled, then used through the cache.
home = fresh_home("model")
cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
       "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 300,
       "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "bos_token_id": 1,
       "eos_token_id": 2, "tie_word_embeddings": False}
with open(os.path.join(home, "config.json"), "w") as f:
    json.dump(cfg, f)
built = os.path.join(home, "built")
r = subprocess.run([cli, "build", "--config", os.path.join(home, "config.json"), "--random-weights", "-o", built,
                    "-p", "int4", "-q"], capture_output=True, text=True, timeout=300)
if not check(r.returncode == 0, f"building the test model ({r.stderr})"):
    pass
else:
    files = {f: open(os.path.join(built, f), "rb").read() for f in os.listdir(built)}
    hub.repos["acme/llama"] = Repo(files, {f for f in files if ".onnx" in f})
    r = run(["info", "-m", "acme/llama", "--json"], home)
    check(r.returncode == 1 and "onnxllm pull acme/llama" in r.stderr, f"-m of an uncached repo says to pull it ({r.stderr})")
    r = run(["pull", "acme/llama"], home)
    check(r.returncode == 0, f"pull acme/llama ({r.stderr})")
    by_name = run(["info", "-m", "acme/llama", "--json"], home)
    by_path = run(["info", "-m", built, "--json"], home)
    if check(by_name.returncode == 0 and by_path.returncode == 0, f"info -m acme/llama ({by_name.stderr})"):
        a, b = json.loads(by_name.stdout), json.loads(by_path.stdout)
        for d in (a, b):
            d.pop("model", None)
            d.pop("path", None)
        check(a == b, "info from the cache equals info of the folder")
    r = run(["generate", "-m", "acme/llama", "--ids", "1,5,7", "-n", "4", "--print-ids", "--no-timings"], home)
    check(r.returncode == 0 and len(r.stdout.strip().split(",")) == 7, f"generate -m acme/llama ({r.stdout} {r.stderr})")
    nested = {"onnx/cpu/" + f: data for f, data in files.items()}
    nested["README.md"] = b"# model\n"
    hub.repos["acme/nested"] = Repo(nested, {f for f in nested if ".onnx" in f})
    r = run(["pull", "acme/nested", "--include", "onnx/cpu/*"], home)
    check(r.returncode == 0, f"pull acme/nested --include onnx/cpu/* ({r.stderr})")
    r = run(["info", "-m", "acme/nested/onnx/cpu", "--json"], home)
    check(r.returncode == 0 and json.loads(r.stdout).get("parameters") == b.get("parameters"),
          f"info -m owner/name/folder uses the folder in the snapshot ({r.stderr})")
    r = run(["info", "-m", "acme/nested/onnx/gpu"], home)
    check(r.returncode == 1 and "its snapshot has no 'onnx/gpu'" in r.stderr, f"a missing folder in a snapshot ({r.stderr})")
    r = run(["run", "-m", "acme/llama"], home)
    check(r.returncode == 0 and "LLM decoder inputs" in r.stdout, f"run -m acme/llama uses its model.onnx ({r.stderr})")

# 14. https (cpp-httplib built with OpenSSL): a self-signed hub is refused, and trusted through SSL_CERT_FILE.
home = fresh_home("https")
cert, key = os.path.join(home, "cert.pem"), os.path.join(home, "key.pem")
r = subprocess.run(["openssl" if shutil.which("openssl") else "true", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert], capture_output=True)
if r.returncode != 0 or not os.path.exists(cert):
    print("SKIP https: openssl cannot make a certificate:", r.stderr.decode()[-200:])
else:
    tls_hub = MockHub(tls=(cert, key))
    tls_hub.repos["acme/tiny"] = Repo(REPO_FILES, LFS)
    r = run(["pull", "acme/tiny"], home, endpoint=tls_hub.endpoint)
    check(r.returncode == 1 and "certificate could not be verified" in r.stderr and tls_hub.endpoint in r.stderr,
          f"an untrusted certificate is refused ({r.stderr})")
    os.environ["SSL_CERT_FILE"] = cert
    r = run(["pull", "acme/tiny"], home, endpoint=tls_hub.endpoint)
    del os.environ["SSL_CERT_FILE"]
    check(r.returncode == 0, f"a pull over https with a trusted certificate ({r.stderr})")
    check(len(tls_hub.requests("hub")) >= 1 and len(tls_hub.requests("cdn")) == 2, "https: the hub and the CDN were used")
    check_layout(home, tls_hub.repos["acme/tiny"], REPO_FILES, "https pull")
    tls_hub.close()

hub.close()
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all pull checks passed")
