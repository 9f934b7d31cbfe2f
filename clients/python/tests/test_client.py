"""End-to-end tests of the Python client against real sandboxes.

SANDCAP_TEST_SOCKET: a running `sandcap serve` socket (daemon tests);
SANDCAP: the sandcap binary (CLI tests); SANDCAP_TEST_POLICY: a policy file
the daemon offers. Run: python3 -m unittest discover -s clients/python/tests
"""
import asyncio
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from sandcap import AsyncSandbox, Chunk, Result, SandcapError, Sandbox  # noqa: E402

SOCKET = os.environ.get("SANDCAP_TEST_SOCKET")
SANDCAP = os.environ.get("SANDCAP")
POLICY_FILE = os.environ.get("SANDCAP_TEST_POLICY")


def policy():
    with open(POLICY_FILE) as f:
        return json.load(f)


class Common:
    """The same checks through each way of reaching sandboxes."""

    def sandbox(self):
        raise NotImplementedError

    def test_run_python(self):
        with self.sandbox() as sb:
            r = sb.run(["python3", "-c", "import sys; print(6 * 7); print('e', file=sys.stderr); sys.exit(3)"])
            self.assertEqual(r.exit_code, 3)
            self.assertEqual(r.stdout, "42\n")
            self.assertEqual(r.stderr, "e\n")
            self.assertEqual(r.limits_hit, [])
            self.assertTrue(r.audit_path and os.path.exists(r.audit_path), r.audit_path)

    def test_state_persists_and_files(self):
        with self.sandbox() as sb:
            sb.write_file("/tmp/in.txt", b"\x00binary\xffdata")
            self.assertEqual(sb.read_file("/tmp/in.txt"), b"\x00binary\xffdata")
            r = sb.run(["sh", "-c", "wc -c < /tmp/in.txt; echo made > /tmp/out.txt"])
            self.assertEqual(r.stdout.strip(), "12")
            self.assertEqual(sb.read_file("/tmp/out.txt"), b"made\n")
            names = [e["name"] for e in sb.list_files("/tmp")]
            self.assertIn("in.txt", names)
            self.assertIn("out.txt", names)

    def test_stdin_env_cwd(self):
        with self.sandbox() as sb:
            r = sb.run(["sh", "-c", "cat; echo $FOO; pwd"], stdin="from stdin\n", env={"FOO": "bar"}, cwd="/tmp")
            self.assertEqual(r.stdout, "from stdin\nbar\n/tmp\n")

    def test_walls(self):
        with self.sandbox() as sb:
            r = sb.run(["sh", "-c", "cat /etc/shadow"])
            self.assertNotEqual(r.exit_code, 0)
            with self.assertRaises(SandcapError):
                sb.write_file("/usr/bin/planted", b"x")
            with self.assertRaises(SandcapError):
                sb.read_file("/nonexistent/file")

    def test_stream(self):
        with self.sandbox() as sb:
            items = list(sb.stream(["sh", "-c", "echo one; sleep 0.2; echo two >&2"]))
            chunks = [i for i in items if isinstance(i, Chunk)]
            self.assertIsInstance(items[-1], Result)
            self.assertEqual(b"".join(c.data for c in chunks if c.stream == "stdout"), b"one\n")
            self.assertEqual(b"".join(c.data for c in chunks if c.stream == "stderr"), b"two\n")

    def test_report(self):
        with self.sandbox() as sb:
            sb.run(["true"])
            rep = sb.report()
            self.assertEqual(rep["sandbox"], sb.info.get("sandbox") or rep["sandbox"])
            self.assertIn("log", rep)

    def test_async(self):
        async def go():
            async with self.async_sandbox() as sb:
                r = await sb.run(["sh", "-c", "cat; echo async"], stdin=b"x\n")
                self.assertEqual(r.stdout, "x\nasync\n")
                await sb.write_file("/tmp/a", "A")
                self.assertEqual(await sb.read_file("/tmp/a"), b"A")
                seen = [i async for i in sb.stream(["echo", "s"])]
                self.assertIsInstance(seen[-1], Result)
                self.assertEqual(seen[0].data, b"s\n")
                r1, r2 = await asyncio.gather(sb.run(["echo", "1"]), sb.run(["echo", "2"]))
                self.assertEqual((r1.stdout, r2.stdout), ("1\n", "2\n"))

        asyncio.run(go())


@unittest.skipUnless(SOCKET and POLICY_FILE, "needs SANDCAP_TEST_SOCKET and SANDCAP_TEST_POLICY")
class DaemonTests(Common, unittest.TestCase):
    def sandbox(self):
        return Sandbox(policy(), socket_path=SOCKET)

    def async_sandbox(self):
        return AsyncSandbox(policy(), socket_path=SOCKET)

    def test_errors_are_structured(self):
        with self.assertRaises(SandcapError) as cm:
            Sandbox({"version": 1, "fs": {"grants": [{"path": "/tmp", "mode": "rwx"}]}},
                    socket_path=SOCKET).start()
        self.assertEqual(cm.exception.code, "policy_invalid")
        self.assertEqual(cm.exception.path, "$.fs.grants[0].mode")


@unittest.skipUnless(SANDCAP and POLICY_FILE, "needs SANDCAP and SANDCAP_TEST_POLICY")
class CliTests(Common, unittest.TestCase):
    def sandbox(self):
        return Sandbox(POLICY_FILE, sandcap=SANDCAP)

    def async_sandbox(self):
        return AsyncSandbox(policy(), sandcap=SANDCAP)


if __name__ == "__main__":
    unittest.main()
