"""Two ways to reach sandboxes: the `sandcap serve` daemon's unix socket
(HTTP/1.1 + JSON, docs/api.md), or the `sandcap` CLI run directly."""
import http.client
import os
import shutil
import socket
import subprocess
from typing import Iterator, List, Optional, Union

from . import _protocol as proto
from ._types import SandcapError, parse_ndjson_line

DEFAULT_SOCKET = "/run/sandcap.sock"


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
            proto.raise_for(resp.status, data)
        if stream:
            return conn, resp
        data = resp.read()
        conn.close()
        return data

    def _call(self, req: proto.Request):
        return req.parse(self._request(req.method, req.path, req.body))

    def start(self, policy: Union[dict, str, None], token: Optional[str] = None) -> dict:
        return self._call(proto.start_request(policy, token))

    def stop(self, sid: str) -> dict:
        return self._call(proto.stop_request(sid))

    def list(self) -> List[dict]:
        return self._call(proto.list_request())

    def exec_stream(self, sid: str, argv, stdin=None, cwd=None, env=None) -> Iterator:
        req = proto.exec_request(sid, argv, stdin, cwd, env)
        conn, resp = self._request(req.method, req.path, req.body, stream=True)
        try:
            while True:
                line = resp.readline()
                if not line:
                    break
                if line.strip():
                    yield parse_ndjson_line(line)
        finally:
            conn.close()

    def put(self, sid: str, path: str, data: bytes) -> None:
        self._call(proto.put_request(sid, path, data))

    def get(self, sid: str, path: str) -> bytes:
        return self._call(proto.get_request(sid, path))

    def ls(self, sid: str, path: str) -> List[dict]:
        return self._call(proto.ls_request(sid, path))

    def report(self, sid: str, audit_path: Optional[str]) -> dict:
        return self._call(proto.report_request(sid))


class CliTransport:
    """Runs the `sandcap` CLI itself (no daemon): session start, exec, stop."""

    def __init__(self, sandcap: str):
        self.sandcap = sandcap

    def _run(self, cmd: proto.Command):
        p = subprocess.run([self.sandcap] + cmd.args, input=cmd.data, capture_output=True)
        if p.returncode != 0:
            raise proto.cli_failure(p.returncode, p.stderr)
        return cmd.parse(p.stdout)

    def start(self, policy: Union[dict, str, None], token: Optional[str] = None) -> dict:
        with proto.policy_file(policy, token) as name:
            return self._run(proto.start_command(name))

    def stop(self, sid: str) -> dict:
        return self._run(proto.stop_command(sid))

    def list(self) -> List[dict]:
        return self._run(proto.list_command())

    def exec_stream(self, sid: str, argv, stdin=None, cwd=None, env=None) -> Iterator:
        p = subprocess.Popen([self.sandcap] + proto.exec_args(sid, argv, stdin, cwd, env),
                             stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if stdin is not None:
            # fed by a thread: a command that prints before reading must not block us
            import threading

            data = proto.as_bytes(stdin)

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
            raise proto.exec_failure(err, p.returncode)

    def put(self, sid: str, path: str, data: bytes) -> None:
        self._run(proto.put_command(sid, path, data))

    def get(self, sid: str, path: str) -> bytes:
        return self._run(proto.get_command(sid, path))

    def ls(self, sid: str, path: str) -> List[dict]:
        return self._run(proto.ls_command(sid, path))

    def report(self, sid: str, audit_path: Optional[str]) -> dict:
        p = subprocess.run([self.sandcap] + proto.report_args(audit_path), capture_output=True)
        return proto.report_result(p.stdout, p.stderr)


def pick(socket_path: Optional[str] = None, sandcap: Optional[str] = None):
    """The daemon when its socket is there (argument, $SANDCAP_SOCKET, or
    /run/sandcap.sock), else the CLI (argument, $SANDCAP, or PATH)."""
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
