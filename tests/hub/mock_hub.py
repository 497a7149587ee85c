"""A local stand-in for the Hugging Face hub, enough for `onnxllm pull` (no network in tests).

Two servers on 127.0.0.1, each in a thread: the hub (API, resolve) and a CDN on another port, as
huggingface.co redirects LFS files to a CDN host. Answers as huggingface.co does:
  GET  /api/models/OWNER/NAME/revision/REV -> {"id", "sha", "siblings": [{"rfilename"}]}
  HEAD|GET /OWNER/NAME/resolve/REV/PATH    -> git files: 200, ETag "<git sha1>", X-Repo-Commit;
       LFS files: 302 to the CDN with X-Linked-Etag "<sha256>", X-Linked-Size, X-Repo-Commit
  GET  CDN /blobs/SHA256?sig=...           -> the bytes, honouring Range (206 + Content-Range)
Errors with X-Error-Code as the hub sends them: 401 for a private repo without its token, 403 GatedRepo,
404 RepoNotFound / RevisionNotFound / EntryNotFound.
Faults a test switches on: cut[path] = N (close the connection after N body bytes of each
transfer), cut_times[path] (how many transfers to cut, default all), corrupt.add(path) (serve
flipped bytes), ignore_range.add(path), huge_size[path] (announce a larger X-Linked-Size),
throttle[path] = seconds (a slow transfer: a pause after each 32 KB), hold[path] = (N, flag) (send N
body bytes, then wait until the file `flag` exists, at most 60 s, before sending the rest: an event
the test controls instead of a race against the clock).
Every request is logged as (server, method, path, Range, Authorization).
"""

import hashlib
import http.server
import json
import os
import socket
import ssl
import threading
import time
import urllib.parse


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    def __init__(self, files, lfs=(), commit=None, refs=None, token=None, gated=False):
        self.files = dict(files)  # path -> bytes
        self.lfs = set(lfs)
        self.commit = commit or hashlib.sha1(repr(sorted(self.files.items())).encode()).hexdigest()
        self.refs = dict(refs or {"main": self.commit})
        self.token = token  # required "Bearer" token (a private repo), or None
        self.gated = gated  # every request is 403 GatedRepo (access not granted)


class MockHub:
    def __init__(self, tls=None):
        """tls: (certfile, keyfile) to serve the hub over https (the CDN stays http)."""
        self.repos = {}
        self.log = []
        self.cut, self.cut_times, self.corrupt, self.ignore_range, self.huge_size = {}, {}, set(), set(), {}
        self.throttle = {}  # path -> seconds to sleep after each 32 KB sent
        self.hold = {}  # path -> (bytes, flag file): pause the body there until the flag file exists
        self.lock = threading.Lock()
        self.cdn = self._serve("cdn")
        self.hub = self._serve("hub", tls)
        self.endpoint = "%s://127.0.0.1:%d" % ("https" if tls else "http", self.hub.server_address[1])
        self.cdn_url = "http://127.0.0.1:%d" % self.cdn.server_address[1]

    def close(self):
        for s in (self.hub, self.cdn):
            s.shutdown()
            s.server_close()

    def requests(self, server=None, method=None):
        with self.lock:
            return [r for r in self.log if (server is None or r[0] == server) and (method is None or r[1] == method)]

    def clear_log(self):
        with self.lock:
            self.log.clear()

    def _serve(self, name, tls=None):
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self._handle(head=True)

            def do_GET(self):
                self._handle(head=False)

            def _handle(self, head):
                with hub.lock:
                    hub.log.append((name, self.command, self.path, self.headers.get("Range"),
                                    self.headers.get("Authorization")))
                try:
                    (hub._cdn if name == "cdn" else hub._hub)(self, head)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def reply(self, status, headers=(), body=b"", head=False):
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def error(self, status, code, message, head=False):
                body = json.dumps({"error": message}).encode()
                self.reply(status, [("X-Error-Code", code), ("X-Error-Message", message),
                                    ("Content-Type", "application/json")], body, head)

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    def _find(self, h, repo_id, revision, head):
        repo = self.repos.get(repo_id)
        if repo is not None and repo.token is not None and h.headers.get("Authorization") != "Bearer " + repo.token:
            if h.headers.get("Authorization"):
                h.error(401, "", "Invalid credentials in Authorization header", head)
            else:
                h.error(401, "RepoNotFound", "Repository not found", head)
            return None, None
        if repo is None:
            h.error(404, "RepoNotFound", "Repository not found", head)
            return None, None
        if repo.gated:
            h.error(403, "GatedRepo", "Access to model %s is restricted" % repo_id, head)
            return None, None
        commit = revision if revision in repo.refs.values() else repo.refs.get(revision)
        if commit is None:
            h.error(404, "RevisionNotFound", "Invalid rev id: " + revision, head)
            return None, None
        return repo, commit

    def _hub(self, h, head):
        path = urllib.parse.urlsplit(h.path).path
        if path.startswith("/api/models/"):
            parts = path[len("/api/models/"):].split("/")
            if len(parts) < 4 or parts[2] != "revision":
                return h.error(404, "", "Not found", head)
            repo, commit = self._find(h, parts[0] + "/" + parts[1], urllib.parse.unquote("/".join(parts[3:])), head)
            if repo is None:
                return
            body = json.dumps({"id": parts[0] + "/" + parts[1], "sha": commit,
                               "siblings": [{"rfilename": f} for f in repo.files]}).encode()
            return h.reply(200, [("Content-Type", "application/json")], body, head)
        parts = path.split("/")
        if len(parts) < 6 or parts[3] != "resolve":
            return h.error(404, "", "Not found", head)
        repo, commit = self._find(h, parts[1] + "/" + parts[2], urllib.parse.unquote(parts[4]), head)
        if repo is None:
            return
        file = urllib.parse.unquote("/".join(parts[5:]))
        if file not in repo.files:
            return h.error(404, "EntryNotFound", file + " does not exist", head)
        data = repo.files[file]
        common = [("X-Repo-Commit", commit)]
        if file in repo.lfs:
            sha = hashlib.sha256(data).hexdigest()
            size = self.huge_size.get(file, len(data))
            location = "%s/blobs/%s?file=%s&sig=x" % (self.cdn_url, sha, urllib.parse.quote(file))
            return h.reply(302, common + [("Location", location), ("X-Linked-Etag", '"%s"' % sha),
                                          ("X-Linked-Size", str(size)), ("ETag", '"%s"' % git_blob_sha1(b"pointer"))],
                           b"", head)
        h.send_response(200)
        for k, v in common + [("ETag", '"%s"' % git_blob_sha1(data)), ("Content-Length", str(len(data)))]:
            h.send_header(k, v)
        h.end_headers()
        if not head:
            h.wfile.write(data)

    def _cdn(self, h, head):
        url = urllib.parse.urlsplit(h.path)
        file = urllib.parse.parse_qs(url.query).get("file", [""])[0]
        data = None
        for repo in self.repos.values():
            if file in repo.files and "/blobs/" + hashlib.sha256(repo.files[file]).hexdigest() == url.path:
                data = repo.files[file]
        if data is None:
            return h.reply(404, [], b"no such blob", head)
        if file in self.corrupt:
            data = bytes(b ^ 0x5A for b in data[:16]) + data[16:]
        start, status, headers = 0, 200, []
        rng = h.headers.get("Range")
        if rng and file not in self.ignore_range:
            start = int(rng[len("bytes="):].split("-")[0])
            if start >= len(data):
                return h.reply(416, [("Content-Range", "bytes */%d" % len(data))], b"", head)
            status, headers = 206, [("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))]
        body = data[start:]
        h.send_response(status)
        for k, v in headers + [("Content-Length", str(len(body))), ("Accept-Ranges", "bytes")]:
            h.send_header(k, v)
        h.end_headers()
        if head:
            return
        with self.lock:
            cut = self.cut.get(file)
            left = self.cut_times.get(file)
            if cut is not None and left is not None:
                if left <= 0:
                    cut = None
                else:
                    self.cut_times[file] = left - 1
        if cut is None and file in self.hold:
            n, flag = self.hold[file]
            h.wfile.write(body[:n])
            h.wfile.flush()
            deadline = time.monotonic() + 60
            while not os.path.exists(flag) and time.monotonic() < deadline:
                time.sleep(0.01)
            h.wfile.write(body[n:])
            return
        if cut is None and file in self.throttle:
            for i in range(0, len(body), 32768):
                h.wfile.write(body[i:i + 32768])
                h.wfile.flush()
                time.sleep(self.throttle[file])
            return
        if cut is None:
            h.wfile.write(body)
            return
        h.wfile.write(body[:cut])
        h.wfile.flush()
        h.close_connection = True
        h.connection.shutdown(socket.SHUT_RDWR)
