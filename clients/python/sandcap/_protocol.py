"""What the sync and the asyncio clients send and how they read the answers,
written once: the daemon's requests (docs/api.md) and the CLI's command
lines. The transports only move the bytes."""
import base64
import json
import os
import tempfile
import urllib.parse
from contextlib import contextmanager
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Union

from ._types import SandcapError


def as_bytes(data: Union[bytes, str]) -> bytes:
    return data.encode() if isinstance(data, str) else data


def _raw(data: bytes) -> bytes:
    return data


def _nothing(data: bytes) -> None:
    return None


def _field(key: str) -> Callable[[bytes], Any]:
    return lambda data: json.loads(data)[key]


def _session_info(data: bytes) -> dict:
    info = json.loads(data)
    info.setdefault("id", info.get("name"))
    return info


# --- the daemon ---

class Request(NamedTuple):
    """One call to the daemon: what is sent, and how the answer's body is read."""

    method: str
    path: str
    body: Optional[bytes] = None
    parse: Callable[[bytes], Any] = _raw


def raise_for(status: int, body: bytes):
    """The daemon's refusal (status 300 and up) as a SandcapError."""
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


def exec_body(argv, stdin, cwd, env) -> bytes:
    body = {"argv": list(argv)}
    if stdin is not None:
        body["stdin"] = base64.b64encode(as_bytes(stdin)).decode()
    if cwd is not None:
        body["cwd"] = cwd
    if env:
        body["env"] = dict(env)
    return json.dumps(body).encode()


def _session(sid: str, what: str = "") -> str:
    return "/v1/sessions/" + urllib.parse.quote(sid, safe="") + (what and "/" + what)


def _files(sid: str, what: str, path: str) -> str:
    return _session(sid, what) + "?path=" + urllib.parse.quote(path, safe="")


def start_request(policy, token) -> Request:
    return Request("POST", "/v1/sessions", create_body(policy, token), json.loads)


def stop_request(sid) -> Request:
    return Request("DELETE", _session(sid), parse=json.loads)


def list_request() -> Request:
    return Request("GET", "/v1/sessions", parse=_field("sessions"))


def exec_request(sid, argv, stdin, cwd, env) -> Request:
    """Its answer is a stream of NDJSON lines (parse_ndjson_line)."""
    return Request("POST", _session(sid, "exec"), exec_body(argv, stdin, cwd, env))


def put_request(sid, path, data: bytes) -> Request:
    return Request("PUT", _files(sid, "files", path), data, _nothing)


def get_request(sid, path) -> Request:
    return Request("GET", _files(sid, "files", path))


def ls_request(sid, path) -> Request:
    return Request("GET", _files(sid, "ls", path), parse=_field("entries"))


def report_request(sid) -> Request:
    return Request("GET", _session(sid, "audit"), parse=_field("report"))


# --- the CLI ---

class Command(NamedTuple):
    """One run of `sandcap`: its arguments, its standard input, how its
    standard output is read (a failed run is cli_failure())."""

    args: List[str]
    data: Optional[bytes] = None
    parse: Callable[[bytes], Any] = _raw


def cli_failure(returncode: int, stderr: bytes) -> SandcapError:
    """A run that failed: the first line it printed, or its exit status."""
    msg = (stderr.decode("utf-8", "replace").strip().splitlines() or [f"exit status {returncode}"])[0]
    return SandcapError("cli_failed", msg.removeprefix("sandcap: "), status=returncode)


@contextmanager
def policy_file(policy: Union[dict, str, None], token: Optional[str]) -> Iterator[str]:
    """The file `session start --policy` reads: a dict is written to a
    temporary one for the time of the start. Tokens need the daemon."""
    if token is not None:
        raise SandcapError("unsupported", "tokens need the daemon (sandcap serve --token-key)")
    if not isinstance(policy, dict):
        yield policy
        return
    fd, name = tempfile.mkstemp(suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(policy, f)
        yield name
    finally:
        os.unlink(name)


def start_command(policy_path: str) -> Command:
    return Command(["session", "start", "--policy", policy_path, "--json"], parse=_session_info)


def stop_command(sid) -> Command:
    return Command(["session", "stop", sid, "--json"], parse=json.loads)


def list_command() -> Command:
    return Command(["session", "list", "--json"], parse=json.loads)


def put_command(sid, path, data: bytes) -> Command:
    return Command(["session", "put", sid, path], data, _nothing)


def get_command(sid, path) -> Command:
    return Command(["session", "get", sid, path])


def ls_command(sid, path) -> Command:
    return Command(["session", "ls", sid, path, "--json"], parse=json.loads)


def exec_args(sid, argv, stdin, cwd, env) -> List[str]:
    """`sandcap exec --ndjson`'s arguments; with stdin its input is fed (-i)."""
    args = ["exec", "--ndjson"] + (["-i"] if stdin is not None else [])
    if cwd is not None:
        args += ["--cwd", cwd]
    for k, v in (env or {}).items():
        args += ["--env", f"{k}={v}"]
    return args + [sid, "--"] + list(argv)


def exec_failure(stderr: str, returncode: int) -> SandcapError:
    """An exec whose stream ended without its result line."""
    return SandcapError("exec_failed", stderr.removeprefix("sandcap: ") or f"exit status {returncode}")


def report_args(audit_path: Optional[str]) -> List[str]:
    return ["audit", "report", audit_path, "--json"]


def report_result(out: bytes, err: bytes) -> dict:
    """`audit report --json`'s output; what it said when there is none."""
    try:
        return json.loads(out)
    except ValueError:
        raise SandcapError("cli_failed", err.decode("utf-8", "replace").strip())
