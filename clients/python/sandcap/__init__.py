"""Python client for sandcap sandboxes.

    from sandcap import Sandbox
    with Sandbox({"version": 1, "limits": {"memory": "256M"}}) as sb:
        r = sb.run(["python3", "-c", "print(6 * 7)"])
        print(r.exit_code, r.stdout, r.stderr, r.limits_hit, r.audit_path)

A Sandbox is one session: a sandbox that stays up while commands run in it
one after another. It talks to the `sandcap serve` daemon when one is
reachable, else runs the `sandcap` CLI itself. Standard library only.
"""
from typing import Iterator, List, Optional, Union

from ._protocol import as_bytes
from ._transport import CliTransport, DaemonTransport, pick
from ._types import Chunk, Outputs, Result, SandcapError, SessionHandle
from .aio import AsyncSandbox

__all__ = ["Sandbox", "AsyncSandbox", "Result", "Chunk", "SandcapError",
           "DaemonTransport", "CliTransport"]


class Sandbox(SessionHandle):
    """One sandbox. policy: a dict (the policy's JSON), a file name, or the
    name of a policy the daemon offers; or token= a capability token."""

    def __init__(self, policy: Union[dict, str, None] = None, *, token: Optional[str] = None,
                 socket_path: Optional[str] = None, sandcap: Optional[str] = None):
        self._check(policy, token)
        self._policy = policy
        self._token = token
        self._t = pick(socket_path, sandcap)
        self.info: Optional[dict] = None

    def start(self) -> "Sandbox":
        if self.info is None:
            self.info = self._t.start(self._policy, self._token)
        return self

    def stop(self) -> Optional[dict]:
        if self.info is None:
            return None
        sid, self.info = self.id, None
        return self._t.stop(sid)

    def __enter__(self) -> "Sandbox":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def stream(self, argv: List[str], *, stdin: Union[bytes, str, None] = None,
               cwd: Optional[str] = None, env: Optional[dict] = None) -> Iterator[Union[Chunk, Result]]:
        """Yields Chunk objects as the command writes, then its Result."""
        seen = Outputs()
        # read to the end of the stream (not only to the result line): a
        # connection closed early tells the daemon the caller went away
        for item in self._t.exec_stream(self.id, argv, stdin, cwd, env):
            if seen.take(item):
                yield item
        yield seen.result(self.audit_path)

    def run(self, argv: List[str], *, stdin: Union[bytes, str, None] = None,
            cwd: Optional[str] = None, env: Optional[dict] = None) -> Result:
        """Runs a command to its end: exit code, stdout, stderr, limits hit."""
        result = None
        for item in self.stream(argv, stdin=stdin, cwd=cwd, env=env):
            if isinstance(item, Result):
                result = item
        return result

    def write_file(self, path: str, data: Union[bytes, str]) -> None:
        self._t.put(self.id, path, as_bytes(data))

    def read_file(self, path: str) -> bytes:
        return self._t.get(self.id, path)

    def list_files(self, path: str = "/") -> List[dict]:
        return self._t.ls(self.id, path)

    def report(self) -> dict:
        """The audit log's report (`sandcap audit report --json`)."""
        return self._t.report(self.id, self.audit_path)
