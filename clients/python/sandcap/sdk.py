"""An SDK in the shape of E2B's, over the `sandcap serve` daemon.

    from sandcap.sdk import Sandbox          # instead of: from e2b import Sandbox
    sb = Sandbox.create("agent", timeout=300, envs={"K": "V"}, metadata={"run": "7"})
    r = sb.commands.run("echo hi")           # r.stdout == "hi\\n"
    h = sb.commands.run("sleep 60", background=True); h.kill()
    sb.files.write("/work/a.txt", "x"); sb.files.read("/work/a.txt")
    sb.kill()

Every command and file operation runs inside the sandbox, behind its policy's
walls, and is recorded in its audit log. The calls and what differs from
E2B's: docs/api.md, "An SDK in E2B's shape". Standard library only.
"""
import base64
import http.client
import io
import json
import os
import socket
import threading
import urllib.parse
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import IO, Callable, Dict, Iterator, List, Optional, Union

from ._transport import DEFAULT_SOCKET, _UnixHTTPConnection
from ._types import SandcapError

DEFAULT_COMMAND_TIMEOUT = 60  # seconds, as E2B's
CHUNK = 1 << 16


class SandboxException(SandcapError):
    """Any error of the daemon or of a sandbox (code, message, path)."""


class NotFoundException(SandboxException):
    pass


class TimeoutException(SandboxException):
    pass


class InvalidArgumentException(SandboxException):
    pass


@dataclass
class CommandResult:
    stdout: str
    stderr: str
    exit_code: int
    error: Optional[str] = None
    limits_hit: List[str] = field(default_factory=list)


class CommandExitException(SandboxException):
    """A command that ended with a status other than 0 (as E2B raises it)."""

    def __init__(self, result: CommandResult):
        super().__init__("command_exit", "command exited with status %d" % result.exit_code)
        self.stdout, self.stderr = result.stdout, result.stderr
        self.exit_code, self.error = result.exit_code, result.error
        self.limits_hit = result.limits_hit


class FileType(str, Enum):
    FILE = "file"
    DIR = "dir"
    SYMLINK = "symlink"
    OTHER = "other"


@dataclass
class EntryInfo:
    name: str
    type: FileType
    path: str
    size: int
    mode: int
    permissions: str
    modified_time: datetime


class FilesystemEventType(str, Enum):
    CHMOD = "chmod"
    CREATE = "create"
    REMOVE = "remove"
    RENAME = "rename"
    WRITE = "write"


@dataclass
class FilesystemEvent:
    name: str  # relative to the directory watched
    type: FilesystemEventType


class WatchHandle:
    """A directory watched (files.watch_dir): events to on_event as they
    come, or collected for get_new_events(); stop() ends it."""

    def __init__(self, conn, resp, on_event=None, on_exit=None, timeout: float = 0):
        self._conn, self._resp = conn, resp
        self._on_event, self._on_exit = on_event, on_exit
        self._events: List[FilesystemEvent] = []
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        if timeout:
            t = threading.Timer(timeout, self.stop)
            t.daemon = True
            t.start()

    def _read(self):
        err = None
        try:
            for line in self._resp:
                o = json.loads(line) if line.strip() else {}
                if o.get("type") not in FilesystemEventType._value2member_map_:
                    continue  # "overflow": the kernel's queue lost some
                ev = FilesystemEvent(name=o["name"], type=FilesystemEventType(o["type"]))
                if self._on_event:
                    self._on_event(ev)
                else:
                    with self._lock:
                        self._events.append(ev)
        except (OSError, ValueError, http.client.HTTPException) as e:
            err = None if self._stopped else e
        finally:
            self._conn.close()
            if self._on_exit:
                self._on_exit(err)

    def get_new_events(self) -> List[FilesystemEvent]:
        with self._lock:
            out, self._events = self._events, []
        return out

    def stop(self) -> None:
        self._stopped = True
        try:
            self._conn.sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass


@dataclass
class WriteInfo:
    name: str
    type: FileType
    path: str


@dataclass
class ProcessInfo:
    pid: int
    tag: Optional[str]
    cmd: str
    args: List[str]
    envs: Dict[str, str]
    cwd: Optional[str]


@dataclass
class SandboxInfo:
    sandbox_id: str
    template_id: str
    name: str
    metadata: Dict[str, str]
    started_at: datetime
    end_at: Optional[datetime]
    state: str = "running"  # or "paused"


class WorkspaceConflictException(SandboxException):
    """An apply refused (nothing written): paths the host changed since the
    sandbox started (`sandcap workspace apply` exits 2); force=True writes over them."""

    def __init__(self, code, message, path=None, conflicts=None, result=None):
        super().__init__(code, message, path)
        self.conflicts: List[str] = conflicts or []
        self.result: dict = result or {}


def _error(status: int, body: bytes) -> SandboxException:
    o: dict = {}
    e: dict = {}
    try:
        o = json.loads(body)
        e = o["error"]
        code, msg, path = e.get("code", "error"), e.get("message", ""), e.get("path")
    except Exception:
        code, msg, path = "http_%d" % status, body.decode("utf-8", "replace"), None
    if code == "conflicts":
        return WorkspaceConflictException(code, msg, path, e.get("conflicts"), o.get("result"))
    cls = (NotFoundException if status == 404 else TimeoutException if status == 408
           else InvalidArgumentException if status == 400 else SandboxException)
    err = cls(code, msg, path)
    err.exit_code = e.get("exit_code") if isinstance(e, dict) else None  # apply's, as the CLI's
    return err


class _Api:
    def __init__(self, socket_path: Optional[str], request_timeout: Optional[float] = None):
        self.socket_path = socket_path or os.environ.get("SANDCAP_SOCKET") or DEFAULT_SOCKET
        self.timeout = request_timeout

    def open(self, method: str, path: str, body=None, headers=None, timeout=None):
        conn = _UnixHTTPConnection(self.socket_path, timeout if timeout is not None else self.timeout)
        hdrs = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        if resp.status >= 300:
            data = resp.read()
            conn.close()
            raise _error(resp.status, data)
        return conn, resp

    def call(self, method: str, path: str, body=None, headers=None):
        conn, resp = self.open(method, path, body, headers)
        try:
            data = resp.read()
        finally:
            conn.close()
        ctype = resp.getheader("Content-Type", "")
        return json.loads(data) if ctype.startswith("application/json") else data


def _q(_url: str, **params) -> str:
    params = {k: v for k, v in params.items() if v is not None}
    return _url + ("?" + urllib.parse.urlencode(params) if params else "")


def _entry(o: dict) -> EntryInfo:
    mode = o["mode"]
    perms = "".join(c if mode & (1 << (8 - i)) else "-" for i, c in enumerate("rwxrwxrwx"))
    return EntryInfo(name=o["name"], type=FileType(o["type"]), path=o["path"], size=o["size"],
                     mode=mode, permissions=perms,
                     modified_time=datetime.fromtimestamp(o["mtime"], timezone.utc))


@dataclass
class PtySize:
    rows: int
    cols: int


class CommandHandle:
    """A command running in the sandbox (background=True, connect(), a pty)."""

    def __init__(self, api: _Api, sid: str, conn, resp, pid: int,
                 on_stdout: Optional[Callable[[str], None]] = None,
                 on_stderr: Optional[Callable[[str], None]] = None,
                 on_pty: Optional[Callable[[bytes], None]] = None):
        self._api, self._sid, self._conn, self._resp = api, sid, conn, resp
        self.pid = pid
        self._out, self._err = [], []
        self._on_stdout, self._on_stderr, self._on_pty = on_stdout, on_stderr, on_pty
        self._final: Optional[dict] = None
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        try:
            for line in self._resp:
                if not line.strip():
                    continue
                o = json.loads(line)
                if o.get("stream") == "pty":  # bytes, as the terminal wrote them
                    if self._on_pty:
                        self._on_pty(base64.b64decode(o["data"]))
                elif "stream" in o:
                    text = base64.b64decode(o["data"]).decode("utf-8", "replace")
                    (self._out if o["stream"] == "stdout" else self._err).append(text)
                    cb = self._on_stdout if o["stream"] == "stdout" else self._on_stderr
                    if cb:
                        cb(text)
                elif "exit_code" in o or "error" in o:
                    self._final = o
        except (OSError, ValueError, http.client.HTTPException):
            pass
        finally:
            self._conn.close()

    @property
    def stdout(self) -> str:
        return "".join(self._out)

    @property
    def stderr(self) -> str:
        return "".join(self._err)

    @property
    def exit_code(self) -> Optional[int]:
        return self._final.get("exit_code") if self._final else None

    def disconnect(self) -> None:
        """Stops following it; the command goes on (connect() finds it again)."""
        try:
            self._conn.sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass

    def wait(self, on_stdout=None, on_stderr=None, on_pty=None) -> CommandResult:
        if on_stdout:
            self._on_stdout = on_stdout
        if on_stderr:
            self._on_stderr = on_stderr
        if on_pty:
            self._on_pty = on_pty
        self._thread.join()
        return _result(self._final, self.stdout, self.stderr)

    def kill(self) -> bool:
        return Commands(self._api, self._sid).kill(self.pid)

    def __iter__(self):
        self._thread.join()
        for s in self._out:
            yield (s, None)
        for s in self._err:
            yield (None, s)


def _result(final: Optional[dict], stdout: str, stderr: str) -> CommandResult:
    if final is None:
        raise SandboxException("disconnected", "the command's stream ended without its result")
    if "error" in final:
        e = final["error"]
        raise SandboxException(e.get("code", "error"), e.get("message", ""))
    hits = final.get("limits_hit", [])
    sig = final.get("signal")
    r = CommandResult(stdout=stdout, stderr=stderr, exit_code=final["exit_code"],
                      error=("signal: %d" % sig) if sig else None, limits_hit=hits)
    if "timeout" in hits:
        raise TimeoutException("timeout", "the command passed its timeout and was killed")
    if r.exit_code != 0:
        raise CommandExitException(r)
    return r


class Commands:
    def __init__(self, api: _Api, sid: str):
        self._api, self._sid = api, sid

    def _path(self, *rest) -> str:
        return "/".join(["/v1/sessions", self._sid, "commands"] + [str(x) for x in rest])

    def run(self, cmd: str, background: bool = False, envs: Optional[Dict[str, str]] = None,
            user: Optional[str] = None, cwd: Optional[str] = None,
            on_stdout: Optional[Callable[[str], None]] = None,
            on_stderr: Optional[Callable[[str], None]] = None, stdin: Optional[bool] = None,
            timeout: Optional[float] = DEFAULT_COMMAND_TIMEOUT,
            request_timeout: Optional[float] = None, tag: Optional[str] = None):
        """Runs cmd with /bin/sh -c. Foreground: its CommandResult (a status
        other than 0 raises CommandExitException). Background: a CommandHandle."""
        body = {"argv": ["/bin/sh", "-c", cmd], "background": bool(background),
                "timeout": timeout or 0}
        for k, v in (("envs", envs), ("user", user), ("cwd", cwd), ("stdin", stdin), ("tag", tag)):
            if v is not None:
                body[k] = v
        conn, resp = self._api.open("POST", self._path(), body, timeout=request_timeout)
        first = json.loads(resp.readline())
        h = CommandHandle(self._api, self._sid, conn, resp, first["pid"], on_stdout, on_stderr)
        return h if background else h.wait()

    def connect(self, pid: int, timeout: Optional[float] = None, on_stdout=None,
                on_stderr=None) -> CommandHandle:
        """Follows a running command again: what it wrote (its last 1 MiB) and on."""
        conn, resp = self._api.open("GET", self._path(pid), timeout=timeout)
        first = json.loads(resp.readline())
        return CommandHandle(self._api, self._sid, conn, resp, first["pid"], on_stdout, on_stderr)

    def list(self, request_timeout: Optional[float] = None) -> List[ProcessInfo]:
        out = []
        for o in self._api.call("GET", self._path())["commands"]:
            argv = o["argv"]
            out.append(ProcessInfo(pid=o["pid"], tag=o.get("tag"), cmd=argv[0], args=argv[1:],
                                   envs=o.get("envs") or {}, cwd=o.get("cwd")))
        return out

    def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """SIGKILL to its process group; False when there is no such command."""
        try:
            self._api.call("DELETE", self._path(pid))
            return True
        except NotFoundException:
            return False

    def send_stdin(self, pid: int, data: Union[str, bytes],
                   request_timeout: Optional[float] = None) -> None:
        if isinstance(data, str):
            data = data.encode()
        self._api.call("POST", self._path(pid, "stdin"), data)

    def close_stdin(self, pid: int, request_timeout: Optional[float] = None) -> None:
        self._api.call("POST", _q(self._path(pid, "stdin"), eof=1), b"")


# The shell of a pty: bash when the sandbox has it, as E2B's, else sh.
_PTY_SHELL = ["/bin/sh", "-c", "command -v bash >/dev/null && exec bash -i; exec sh -i"]


class Pty:
    """Interactive terminals: a shell on a pty inside the sandbox (the tty
    exec of `sandcap exec -t`), its output streamed as bytes."""

    def __init__(self, api: _Api, sid: str):
        self._api, self._sid = api, sid
        self._cmds = Commands(api, sid)

    def create(self, size: Optional[PtySize] = None,
               on_data: Optional[Callable[[bytes], None]] = None,
               envs: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
               user: Optional[str] = None, timeout: Optional[float] = DEFAULT_COMMAND_TIMEOUT,
               request_timeout: Optional[float] = None, cols: Optional[int] = None,
               rows: Optional[int] = None, cmd: Optional[List[str]] = None) -> CommandHandle:
        """A shell on a pty of size (or cols, rows; default 80x24); on_data
        gets what it writes. timeout (seconds, 0: none) kills it."""
        if size is None:
            size = PtySize(rows=rows or 24, cols=cols or 80)
        body = {"argv": cmd or _PTY_SHELL, "background": True, "timeout": timeout or 0,
                "pty": {"cols": size.cols, "rows": size.rows},
                "envs": dict({"TERM": "xterm-256color"}, **(envs or {}))}
        for k, v in (("user", user), ("cwd", cwd)):
            if v is not None:
                body[k] = v
        conn, resp = self._api.open("POST", self._cmds._path(), body, timeout=request_timeout)
        first = json.loads(resp.readline())
        return CommandHandle(self._api, self._sid, conn, resp, first["pid"], on_pty=on_data)

    def send_stdin(self, pid: int, data: Union[str, bytes],
                   request_timeout: Optional[float] = None) -> None:
        self._cmds.send_stdin(pid, data)

    def resize(self, pid: int, size: PtySize, request_timeout: Optional[float] = None) -> None:
        self._api.call("POST", self._cmds._path(pid, "resize"),
                       {"cols": size.cols, "rows": size.rows})

    def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        return self._cmds.kill(pid)


class Files:
    def __init__(self, api: _Api, sid: str):
        self._api, self._sid = api, sid
        self._base = "/v1/sessions/" + sid

    def read(self, path: str, format: str = "text", user: Optional[str] = None,
             request_timeout: Optional[float] = None):
        conn, resp = self._api.open("GET", _q(self._base + "/files", path=path),
                                    timeout=request_timeout)
        if format == "stream":
            def gen():
                try:
                    while True:
                        b = resp.read(CHUNK)
                        if not b:
                            return
                        yield b
                finally:
                    conn.close()
            return gen()
        try:
            data = resp.read()
        finally:
            conn.close()
        if format == "bytes":
            return bytearray(data)
        if format == "text":
            return data.decode("utf-8")
        raise InvalidArgumentException("bad_request", "format: text, bytes or stream")

    def write(self, path: str, data: Union[str, bytes, IO], user: Optional[str] = None,
              request_timeout: Optional[float] = None) -> WriteInfo:
        """Writes data (a string, bytes, or a file object read as it is sent)."""
        headers = {}
        if isinstance(data, str):
            data = data.encode()
        elif not isinstance(data, (bytes, bytearray)):
            try:  # a file: its length from where it stands, sent as read
                headers["Content-Length"] = str(os.fstat(data.fileno()).st_size - data.tell())
            except (OSError, AttributeError, io.UnsupportedOperation):
                data = data.read()
        conn, resp = self._api.open("PUT", _q(self._base + "/files", path=path), data, headers,
                                    timeout=request_timeout)
        try:
            resp.read()
        finally:
            conn.close()
        return WriteInfo(name=os.path.basename(path), type=FileType.FILE, path=path)

    def write_files(self, files: List[dict], user: Optional[str] = None,
                    request_timeout: Optional[float] = None) -> List[WriteInfo]:
        return [self.write(f["path"], f["data"], user, request_timeout) for f in files]

    def list(self, path: str, depth: Optional[int] = 1, user: Optional[str] = None,
             request_timeout: Optional[float] = None) -> List[EntryInfo]:
        o = self._api.call("GET", _q(self._base + "/ls", path=path, depth=depth or 1))
        return [_entry(e) for e in o["entries"]]

    def get_info(self, path: str, user: Optional[str] = None,
                 request_timeout: Optional[float] = None) -> EntryInfo:
        return _entry(self._api.call("GET", _q(self._base + "/stat", path=path)))

    def exists(self, path: str, user: Optional[str] = None,
               request_timeout: Optional[float] = None) -> bool:
        try:
            self.get_info(path)
            return True
        except NotFoundException:
            return False

    def make_dir(self, path: str, user: Optional[str] = None,
                 request_timeout: Optional[float] = None) -> bool:
        """True when it was made, False when it was there already."""
        return self._api.call("POST", _q(self._base + "/mkdir", path=path))["created"]

    def remove(self, path: str, user: Optional[str] = None,
               request_timeout: Optional[float] = None) -> None:
        self._api.call("DELETE", _q(self._base + "/files", path=path))

    def watch_dir(self, path: str, on_event: Optional[Callable[[FilesystemEvent], None]] = None,
                  on_exit: Optional[Callable[[Optional[Exception]], None]] = None,
                  recursive: bool = False, user: Optional[str] = None,
                  request_timeout: Optional[float] = None, timeout: float = 60) -> WatchHandle:
        """Changes in directory path (and below with recursive), by inotify
        inside the sandbox, from when this returns; timeout seconds (0: none)."""
        conn, resp = self._api.open("GET", _q(self._base + "/watch", path=path,
                                              recursive=1 if recursive else None),
                                    timeout=request_timeout)
        if conn.sock is not None:
            conn.sock.settimeout(None)  # events come when they come
        return WatchHandle(conn, resp, on_event, on_exit, timeout)

    def rename(self, old_path: str, new_path: str, user: Optional[str] = None,
               request_timeout: Optional[float] = None) -> EntryInfo:
        self._api.call("POST", _q(self._base + "/rename", path=old_path, to=new_path))
        return self.get_info(new_path)


@dataclass
class WorkspaceChange:
    op: str  # "A" added, "M" modified, "m" mode only, "D" deleted, "R" renamed
    path: str  # relative to the host folder
    type: str  # "file", "directory", "symlink", "FIFO"
    from_path: Optional[str] = None  # "R": the old path
    link: Optional[str] = None


@dataclass
class WorkspaceDiff:
    workspace: str
    grant: str  # the host folder
    changes: List[WorkspaceChange]
    patch: Optional[str] = None  # diff(patch=True): the text diff


class Workspace:
    """The copy-on-write grants of a sandbox (sandcap workspace, docs/api.md):
    while it runs and after it was killed. workspace=None: its only one."""

    def __init__(self, api: _Api, sid: str):
        self._api, self._base = api, "/v1/sessions/%s/workspace" % sid

    def list(self) -> List[dict]:
        return self._api.call("GET", self._base)["workspaces"]

    def diff(self, patch: bool = False, workspace: Optional[str] = None) -> WorkspaceDiff:
        o = self._api.call("GET", _q(self._base + "/diff", workspace=workspace,
                                     patch=1 if patch else None))
        ch = [WorkspaceChange(op=c["op"], path=c["path"], type=c["type"],
                              from_path=c.get("from"), link=c.get("link"))
              for c in o["changes"]]
        return WorkspaceDiff(o["workspace"], o["grant"], ch, o.get("patch"))

    def apply(self, force: bool = False, workspace: Optional[str] = None) -> dict:
        """Writes the changes into the host folder; WorkspaceConflictException
        when the host changed a path since the start (unless force)."""
        return self._api.call("POST", _q(self._base + "/apply", workspace=workspace,
                                         force=1 if force else None))

    def discard(self, workspace: Optional[str] = None) -> None:
        """Removes a stopped sandbox's kept workspace; the host folder stays as it is."""
        self._api.call("POST", _q(self._base + "/discard", workspace=workspace))


class _either:
    """A method callable on the class with an id (Sandbox.kill(id)) or on an instance."""

    def __init__(self, fn):
        self.fn = fn

    def __get__(self, obj, cls):
        if obj is not None:
            return lambda *a, **k: self.fn(cls, obj.sandbox_id, *a, _api=obj._api, **k)
        return lambda sandbox_id, *a, **k: self.fn(cls, sandbox_id, *a, **k)


def _info(o: dict) -> SandboxInfo:
    end = o.get("end_ms")
    return SandboxInfo(sandbox_id=o["id"], template_id=o["policy"], name=o["policy"],
                       metadata=o.get("metadata") or {},
                       started_at=datetime.fromtimestamp(o["created_ms"] / 1000, timezone.utc),
                       end_at=datetime.fromtimestamp(end / 1000, timezone.utc) if end else None,
                       state=o.get("state", "running"))


class Sandbox:
    """A sandbox held by the daemon: made by create(), found again by connect()."""

    def __init__(self, sandbox_id: str, _api: _Api, _record: Optional[dict] = None):
        self.sandbox_id = sandbox_id
        self._api = _api
        self._record = _record or {}
        self.commands = Commands(_api, sandbox_id)
        self.files = Files(_api, sandbox_id)
        self.pty = Pty(_api, sandbox_id)
        self.workspace = Workspace(_api, sandbox_id)

    @property
    def audit_path(self) -> Optional[str]:
        return self._record.get("audit")

    def get_host(self, port: int) -> str:
        """Where the host reaches port of the sandbox, "127.0.0.1:HOSTPORT": a
        port of the policy's net.serve, relayed from the host's loopback."""
        addr = (self._record.get("serve") or {}).get(str(int(port)))
        if addr is None:
            raise SandboxException("not_served",
                                   "port %d is not in the policy's net.serve" % int(port))
        return addr

    @classmethod
    def create(cls, template: Union[str, dict, None] = None, timeout: Optional[int] = None,
               metadata: Optional[Dict[str, str]] = None, envs: Optional[Dict[str, str]] = None,
               socket_path: Optional[str] = None, request_timeout: Optional[float] = None,
               token: Optional[str] = None, **_ignored) -> "Sandbox":
        """template: the name of a policy the daemon offers (or the policy's
        JSON, root only); timeout: seconds it lives (None: the policy's wall)."""
        api = _Api(socket_path, request_timeout)
        body: dict = {"token": token} if token else {"policy": template or "default"}
        for k, v in (("timeout", timeout), ("metadata", metadata), ("envs", envs)):
            if v is not None:
                body[k] = v
        o = api.call("POST", "/v1/sessions", body)
        return cls(o["id"], api, o)

    @classmethod
    def connect(cls, sandbox_id: str, socket_path: Optional[str] = None,
                request_timeout: Optional[float] = None, **_ignored) -> "Sandbox":
        """Finds it again; a paused one is resumed, as E2B's."""
        api = _Api(socket_path, request_timeout)
        o = api.call("GET", "/v1/sessions/" + sandbox_id)
        if o.get("state") == "paused":
            o = api.call("POST", "/v1/sessions/%s/resume" % sandbox_id)
        return cls(sandbox_id, api, o)

    @classmethod
    def resume(cls, sandbox_id: str, timeout: Optional[int] = None,
               socket_path: Optional[str] = None, request_timeout: Optional[float] = None,
               **_ignored) -> "Sandbox":
        """Thaws a paused sandbox (its clocks run on from where they stood);
        timeout: seconds it lives from now, as set_timeout."""
        api = _Api(socket_path, request_timeout)
        o = api.call("POST", "/v1/sessions/%s/resume" % sandbox_id)
        sb = cls(sandbox_id, api, o)
        if timeout is not None:
            sb.set_timeout(timeout)
        return sb

    def pause(self, request_timeout: Optional[float] = None) -> str:
        """Freezes every process of it (the cgroup freezer); its wall clock
        stops meanwhile. Commands and file operations wait for resume()."""
        self._api.call("POST", "/v1/sessions/%s/pause" % self.sandbox_id)
        return self.sandbox_id

    @staticmethod
    def list(socket_path: Optional[str] = None, query: Optional[dict] = None,
             **_ignored) -> List[SandboxInfo]:
        """The caller's sandboxes; query={"metadata": {...}} keeps those that match."""
        out = [_info(o) for o in _Api(socket_path).call("GET", "/v1/sessions")["sessions"]]
        want = (query or {}).get("metadata") or {}
        return [i for i in out if all(i.metadata.get(k) == v for k, v in want.items())]

    @_either
    def kill(cls, sandbox_id: str, _api: Optional[_Api] = None, socket_path=None, **_) -> bool:
        """Stops it (the log sealed); False when there was no such sandbox."""
        try:
            (_api or _Api(socket_path)).call("DELETE", "/v1/sessions/" + sandbox_id)
            return True
        except NotFoundException:
            return False

    @_either
    def set_timeout(cls, sandbox_id: str, timeout: int, _api: Optional[_Api] = None,
                    socket_path=None, **_) -> None:
        """It ends timeout seconds from now (within the policy's limits.wall)."""
        (_api or _Api(socket_path)).call("POST", "/v1/sessions/%s/timeout" % sandbox_id,
                                         {"timeout": int(timeout)})

    @_either
    def get_info(cls, sandbox_id: str, _api: Optional[_Api] = None, socket_path=None,
                 **_) -> SandboxInfo:
        return _info((_api or _Api(socket_path)).call("GET", "/v1/sessions/" + sandbox_id))

    def is_running(self, request_timeout: Optional[float] = None) -> bool:
        try:
            self._api.call("GET", "/v1/sessions/" + self.sandbox_id)
            return True
        except NotFoundException:
            return False

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.kill()


__all__ = ["Sandbox", "CommandResult", "CommandHandle", "Pty", "PtySize", "FilesystemEvent",
           "FilesystemEventType", "WatchHandle", "CommandExitException", "EntryInfo",
           "FileType", "WriteInfo", "ProcessInfo", "SandboxInfo", "SandboxException",
           "NotFoundException", "TimeoutException", "InvalidArgumentException", "Workspace",
           "WorkspaceChange", "WorkspaceDiff", "WorkspaceConflictException"]
