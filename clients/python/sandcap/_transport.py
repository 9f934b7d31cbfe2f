"""Two ways to reach sandboxes: the `sandcap serve` daemon's unix socket
(HTTP/1.1 + JSON, docs/api.md), or the `sandcap` CLI run directly."""
import base64
import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import urllib.parse
from typing import Iterator, List, Optional, Union

from ._types import Chunk, SandcapError, parse_ndjson_line

DEFAULT_SOCKET = "/run/sandcap/api.sock"


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: Optional[float] = None):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if self.timeout is not None:
            s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


def _raise_for(status: int, body: bytes):
    try:
        e = json.loads(body)["error"]
    except Exception:
        raise SandcapError("http_%d" % status, body[:200].decode("utf-8", "replace"), status=status)
    raise SandcapError(e.get("code", "error"), e.get("message", ""), e.get("path"), status)


def create_body(policy: Union[dict, str, None], token: Optional[str]) -> bytes:
    """The body of a create: a token, a policy's JSON (a dict, or read from a
    file), or the name of a policy the daemon offers."""
    if token is not None:
        return json.dumps({"token": token}).encode()
    if isinstance(policy, str) and os.path.isfile(policy):
        with open(policy) as f:
            policy = json.load(f)
    return json.dumps({"policy": policy}).encode()


def _exec_body(argv, stdin, cwd, env) -> bytes:
    body = {"argv": list(argv)}
    if stdin is not None:
        body["stdin"] = base64.b64encode(stdin.encode() if isinstance(stdin, str) else stdin).decode()
    if cwd is not None:
        body["cwd"] = cwd
    if env:
        body["env"] = dict(env)
    return json.dumps(body).encode()


class DaemonTransport:
    """Talks to `sandcap serve` over its unix socket."""

    def __init__(self, socket_path: str, timeout: Optional[float] = None):
        self.socket_path = socket_path
        self.timeout = timeout

    def _request(self, method: str, path: str, body: Optional[bytes] = None, stream=False):
        conn = _UnixHTTPConnection(self.socket_path, self.timeout)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        if resp.status >= 300:
            data = resp.read()
            conn.close()
            _raise_for(resp.status, data)
        if stream:
            return conn, resp
        data = resp.read()
        conn.close()
        return data

    def _json(self, method, path, body=None):
        return json.loads(self._request(method, path, body))

    def start(self, policy: Union[dict, str, None], token: Optional[str] = None) -> dict:
        return self._json("POST", "/v1/sessions", create_body(policy, token))

    def stop(self, sid: str) -> dict:
        return self._json("DELETE", "/v1/sessions/" + urllib.parse.quote(sid, safe=""))

    def list(self) -> List[dict]:
        return self._json("GET", "/v1/sessions")["sessions"]

    def exec_stream(self, sid: str, argv, stdin=None, cwd=None, env=None) -> Iterator:
        conn, resp = self._request(
            "POST", f"/v1/sessions/{urllib.parse.quote(sid, safe='')}/exec",
            _exec_body(argv, stdin, cwd, env), stream=True)
        try:
            while True:
                line = resp.readline()
                if not line:
                    break
                if line.strip():
                    yield parse_ndjson_line(line)
        finally:
            conn.close()

    def _files_path(self, sid, what, path):
        return "/v1/sessions/%s/%s?path=%s" % (
            urllib.parse.quote(sid, safe=""), what, urllib.parse.quote(path, safe=""))

    def put(self, sid: str, path: str, data: bytes) -> None:
        self._request("PUT", self._files_path(sid, "files", path), data)

    def get(self, sid: str, path: str) -> bytes:
        return self._request("GET", self._files_path(sid, "files", path))

    def ls(self, sid: str, path: str) -> List[dict]:
        return json.loads(self._request("GET", self._files_path(sid, "ls", path)))["entries"]

    def report(self, sid: str, audit_path: Optional[str]) -> dict:
        return self._json("GET", f"/v1/sessions/{urllib.parse.quote(sid, safe='')}/audit")["report"]


class CliTransport:
    """Runs the `sandcap` CLI itself (no daemon): session start, exec, stop."""

    def __init__(self, sandcap: str):
        self.sandcap = sandcap

    def _run(self, args, data: Optional[bytes] = None) -> bytes:
        p = subprocess.run([self.sandcap] + args, input=data, capture_output=True)
        if p.returncode != 0:
            msg = p.stderr.decode("utf-8", "replace").strip().splitlines()
            msg = msg[0] if msg else f"exit status {p.returncode}"
            if msg.startswith("sandcap: "):
                msg = msg[len("sandcap: "):]
            raise SandcapError("cli_failed", msg, status=p.returncode)
        return p.stdout

    def start(self, policy: Union[dict, str, None], token: Optional[str] = None) -> dict:
        if token is not None:
            raise SandcapError("unsupported", "tokens need the daemon (sandcap serve --token-key)")
        if isinstance(policy, dict):
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(policy, f)
                name = f.name
            try:
                info = json.loads(self._run(["session", "start", "--policy", name, "--json"]))
            finally:
                os.unlink(name)
        else:
            info = json.loads(self._run(["session", "start", "--policy", policy, "--json"]))
        info.setdefault("id", info.get("name"))
        return info

    def stop(self, sid: str) -> dict:
        return json.loads(self._run(["session", "stop", sid, "--json"]))

    def list(self) -> List[dict]:
        return json.loads(self._run(["session", "list", "--json"]))

    def exec_stream(self, sid: str, argv, stdin=None, cwd=None, env=None) -> Iterator:
        args = [self.sandcap, "exec", "--ndjson"]
        if stdin is not None:
            args.append("-i")
        if cwd is not None:
            args += ["--cwd", cwd]
        for k, v in (env or {}).items():
            args += ["--env", f"{k}={v}"]
        args += [sid, "--"] + list(argv)
        p = subprocess.Popen(args, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if stdin is not None:
            # fed by a thread: a command that prints before reading must not block us
            import threading

            data = stdin.encode() if isinstance(stdin, str) else stdin

            def feed():
                try:
                    p.stdin.write(data)
                except BrokenPipeError:
                    pass
                finally:
                    p.stdin.close()

            threading.Thread(target=feed, daemon=True).start()
        final = False
        try:
            for line in p.stdout:
                if line.strip():
                    item = parse_ndjson_line(line)
                    final = final or isinstance(item, dict)
                    yield item
        finally:
            p.stdout.close()
            err = p.stderr.read().decode("utf-8", "replace").strip()
            p.stderr.close()
            p.wait()
        if not final:
            raise SandcapError("exec_failed", err.removeprefix("sandcap: ") or f"exit status {p.returncode}")

    def put(self, sid: str, path: str, data: bytes) -> None:
        self._run(["session", "put", sid, path], data)

    def get(self, sid: str, path: str) -> bytes:
        return self._run(["session", "get", sid, path])

    def ls(self, sid: str, path: str) -> List[dict]:
        return json.loads(self._run(["session", "ls", sid, path, "--json"]))

    def report(self, sid: str, audit_path: Optional[str]) -> dict:
        p = subprocess.run([self.sandcap, "audit", "report", audit_path, "--json"], capture_output=True)
        try:
            return json.loads(p.stdout)
        except ValueError:
            raise SandcapError("cli_failed", p.stderr.decode("utf-8", "replace").strip())


def pick(socket_path: Optional[str] = None, sandcap: Optional[str] = None):
    """The daemon when its socket is there (argument, $SANDCAP_SOCKET, or
    /run/sandcap/api.sock), else the CLI (argument, $SANDCAP, or PATH)."""
    if socket_path is None and sandcap is None:
        socket_path = os.environ.get("SANDCAP_SOCKET")
        if socket_path is None and os.path.exists(DEFAULT_SOCKET):
            socket_path = DEFAULT_SOCKET
    if socket_path:
        return DaemonTransport(socket_path)
    exe = sandcap or os.environ.get("SANDCAP") or shutil.which("sandcap")
    if not exe:
        raise SandcapError("no_sandcap", "no daemon socket and no sandcap binary on PATH "
                           "(pass socket_path= or sandcap=, or set SANDCAP_SOCKET or SANDCAP)")
    return CliTransport(exe)
