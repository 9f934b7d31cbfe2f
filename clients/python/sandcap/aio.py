"""The asyncio variant: AsyncSandbox, the same surface with coroutines.

    async with AsyncSandbox(policy) as sb:
        r = await sb.run(["echo", "hi"])
        async for item in sb.stream(["sh", "-c", "echo a; sleep 1; echo b"]): ...

Against the daemon it speaks HTTP/1.1 on the socket with asyncio streams;
without one it runs the CLI with asyncio subprocesses.
"""
import asyncio
from typing import AsyncIterator, List, Optional, Union

from . import _protocol as proto
from ._transport import CliTransport, DaemonTransport, pick
from ._types import Outputs, Result, SandcapError, SessionHandle, parse_ndjson_line


async def _http(socket_path: str, method: str, path: str, body: Optional[bytes] = None):
    """Sends one request; returns (status, reader of the body's bytes)."""
    reader, writer = await asyncio.open_unix_connection(socket_path)
    head = f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    writer.write(head.encode() + b"\r\n" + (body or b""))
    await writer.drain()
    status_line = await reader.readline()
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        writer.close()
        raise SandcapError("bad_response", repr(status_line[:80]))
    status = int(parts[1])
    headers = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        k, _, v = line.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()

    async def body_chunks():
        try:
            if headers.get("transfer-encoding", "").lower() == "chunked":
                while True:
                    size = int((await reader.readline()).split(b";")[0], 16)
                    if size == 0:
                        await reader.readline()
                        return
                    yield await reader.readexactly(size)
                    await reader.readexactly(2)
            elif "content-length" in headers:
                yield await reader.readexactly(int(headers["content-length"]))
            else:
                yield await reader.read()
        finally:
            writer.close()

    return status, body_chunks()


async def _read_all(chunks) -> bytes:
    return b"".join([c async for c in chunks])


class _AsyncDaemon:
    def __init__(self, t: DaemonTransport):
        self.path = t.socket_path

    async def _call(self, req: proto.Request):
        status, chunks = await _http(self.path, req.method, req.path, req.body)
        data = await _read_all(chunks)
        if status >= 300:
            proto.raise_for(status, data)
        return req.parse(data)

    async def start(self, policy, token):
        return await self._call(proto.start_request(policy, token))

    async def stop(self, sid):
        return await self._call(proto.stop_request(sid))

    async def exec_stream(self, sid, argv, stdin, cwd, env):
        req = proto.exec_request(sid, argv, stdin, cwd, env)
        status, chunks = await _http(self.path, req.method, req.path, req.body)
        if status >= 300:
            proto.raise_for(status, await _read_all(chunks))
        buf = b""
        async for c in chunks:
            buf += c
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.strip():
                    yield parse_ndjson_line(line)

    async def put(self, sid, path, data):
        await self._call(proto.put_request(sid, path, data))

    async def get(self, sid, path):
        return await self._call(proto.get_request(sid, path))

    async def ls(self, sid, path):
        return await self._call(proto.ls_request(sid, path))

    async def report(self, sid, audit_path):
        return await self._call(proto.report_request(sid))


class _AsyncCli:
    def __init__(self, t: CliTransport):
        self.exe = t.sandcap

    async def _run(self, cmd: proto.Command):
        p = await asyncio.create_subprocess_exec(
            self.exe, *cmd.args,
            stdin=asyncio.subprocess.PIPE if cmd.data is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await p.communicate(cmd.data)
        if p.returncode != 0:
            raise proto.cli_failure(p.returncode, err)
        return cmd.parse(out)

    async def start(self, policy, token):
        with proto.policy_file(policy, token) as name:
            return await self._run(proto.start_command(name))

    async def stop(self, sid):
        return await self._run(proto.stop_command(sid))

    async def exec_stream(self, sid, argv, stdin, cwd, env):
        p = await asyncio.create_subprocess_exec(
            self.exe, *proto.exec_args(sid, argv, stdin, cwd, env),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)

        async def feed():
            try:
                p.stdin.write(proto.as_bytes(stdin))
                await p.stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                p.stdin.close()

        feeder = asyncio.ensure_future(feed()) if stdin is not None else None
        final = False
        async for line in p.stdout:
            if line.strip():
                item = parse_ndjson_line(line)
                final = final or isinstance(item, dict)
                yield item
        err = (await p.stderr.read()).decode("utf-8", "replace").strip()
        await p.wait()
        if feeder:
            await feeder
        if not final:
            raise proto.exec_failure(err, p.returncode)

    async def put(self, sid, path, data):
        await self._run(proto.put_command(sid, path, data))

    async def get(self, sid, path):
        return await self._run(proto.get_command(sid, path))

    async def ls(self, sid, path):
        return await self._run(proto.ls_command(sid, path))

    async def report(self, sid, audit_path):
        p = await asyncio.create_subprocess_exec(self.exe, *proto.report_args(audit_path),
                                                 stdout=asyncio.subprocess.PIPE,
                                                 stderr=asyncio.subprocess.PIPE)
        out, err = await p.communicate()
        return proto.report_result(out, err)


class AsyncSandbox(SessionHandle):
    """Sandbox with coroutines: `async with AsyncSandbox(policy) as sb`."""

    def __init__(self, policy: Union[dict, str, None] = None, *, token: Optional[str] = None,
                 socket_path: Optional[str] = None, sandcap: Optional[str] = None):
        self._check(policy, token)
        t = pick(socket_path, sandcap)
        self._t = _AsyncDaemon(t) if isinstance(t, DaemonTransport) else _AsyncCli(t)
        self._policy, self._token = policy, token
        self.info: Optional[dict] = None

    async def start(self) -> "AsyncSandbox":
        if self.info is None:
            self.info = await self._t.start(self._policy, self._token)
        return self

    async def stop(self) -> Optional[dict]:
        if self.info is None:
            return None
        sid, self.info = self.id, None
        return await self._t.stop(sid)

    async def __aenter__(self) -> "AsyncSandbox":
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    async def stream(self, argv: List[str], *, stdin=None, cwd=None, env=None) -> AsyncIterator:
        """Yields Chunk objects as the command writes, then its Result."""
        seen = Outputs()
        async for item in self._t.exec_stream(self.id, argv, stdin, cwd, env):
            if seen.take(item):
                yield item
        yield seen.result(self.audit_path)

    async def run(self, argv: List[str], *, stdin=None, cwd=None, env=None) -> Result:
        result = None
        async for item in self.stream(argv, stdin=stdin, cwd=cwd, env=env):
            if isinstance(item, Result):
                result = item
        return result

    async def write_file(self, path: str, data: Union[bytes, str]) -> None:
        await self._t.put(self.id, path, proto.as_bytes(data))

    async def read_file(self, path: str) -> bytes:
        return await self._t.get(self.id, path)

    async def list_files(self, path: str = "/") -> List[dict]:
        return await self._t.ls(self.id, path)

    async def report(self) -> dict:
        return await self._t.report(self.id, self.audit_path)
