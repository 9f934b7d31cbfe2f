"""Results, stream chunks and errors shared by the sync and async clients."""
from dataclasses import dataclass, field
from typing import List, Optional


class SandcapError(Exception):
    """A refusal from the daemon or the CLI: code, message, JSON path."""

    def __init__(self, code: str, message: str, path: Optional[str] = None, status: int = 0):
        super().__init__(f"{code}: {message}" + (f" (at {path})" if path else ""))
        self.code = code
        self.message = message
        self.path = path
        self.status = status


@dataclass
class Chunk:
    """Output of a running command, as it comes: stream is "stdout" or "stderr"."""

    stream: str
    data: bytes


@dataclass
class Result:
    """How a command ended, with all its output."""

    exit_code: int
    signal: Optional[int]
    limits_hit: List[str]
    duration_ms: int
    stdout_bytes: bytes = b""
    stderr_bytes: bytes = b""
    audit_path: Optional[str] = None
    extra: dict = field(default_factory=dict)

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8", "replace")

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def parse_ndjson_line(line: bytes):
    """One line of `sandcap exec --ndjson` (or the API's exec stream):
    a Chunk, a final dict, or raises SandcapError for an error line."""
    import base64
    import json

    obj = json.loads(line)
    if "error" in obj:
        e = obj["error"]
        raise SandcapError(e.get("code", "error"), e.get("message", ""), e.get("path"))
    if "stream" in obj:
        return Chunk(obj["stream"], base64.b64decode(obj["data"]))
    if "exit_code" in obj:
        return obj
    raise SandcapError("bad_stream", f"unexpected line {line[:100]!r}")


def result_from_final(final: dict, out: bytes, err: bytes, audit_path: Optional[str]) -> Result:
    known = {"exit_code", "signal", "limits_hit", "duration_ms"}
    return Result(
        exit_code=final["exit_code"],
        signal=final.get("signal"),
        limits_hit=list(final.get("limits_hit") or []),
        duration_ms=final.get("duration_ms") or 0,
        stdout_bytes=out,
        stderr_bytes=err,
        audit_path=audit_path,
        extra={k: v for k, v in final.items() if k not in known},
    )


class Outputs:
    """What an exec stream has brought so far, for Sandbox and AsyncSandbox."""

    def __init__(self):
        self.out: List[bytes] = []
        self.err: List[bytes] = []
        self.final: Optional[dict] = None

    def take(self, item) -> bool:
        """Keeps a Chunk's data (True: pass it on) or the final result line."""
        if isinstance(item, Chunk):
            (self.out if item.stream == "stdout" else self.err).append(item.data)
            return True
        self.final = item
        return False

    def result(self, audit_path: Optional[str]) -> Result:
        if self.final is None:
            raise SandcapError("exec_failed", "the command's stream ended without its result")
        return result_from_final(self.final, b"".join(self.out), b"".join(self.err), audit_path)


class SessionHandle:
    """What Sandbox and AsyncSandbox share: the session's record once started."""

    info: Optional[dict] = None

    @staticmethod
    def _check(policy, token):
        if (policy is None) == (token is None):
            raise ValueError("give a policy or a token")

    @property
    def id(self) -> str:
        if not self.info:
            raise SandcapError("not_started", "the sandbox is not started")
        return self.info.get("id") or self.info["name"]

    @property
    def audit_path(self) -> Optional[str]:
        return self.info.get("audit") if self.info else None
