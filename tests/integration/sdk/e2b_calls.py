"""E2B-shaped calls through the Python SDK (tests/integration/test-sdk.sh).
Usage: e2b_calls.py GRANT-DIR MARKER BIG-FILE. Prints "ok NAME" or
"not ok NAME: why" per check and a last line "RESULT {json}" for the host checks."""
import hashlib
import json
import os
import subprocess
import sys
import threading
import time

from sandcap.sdk import (CommandExitException, FilesystemEventType, FileType, NotFoundException,
                         PtySize, Sandbox, SandboxException, TimeoutException)

grant, marker, big = sys.argv[1], sys.argv[2], sys.argv[3]
failed = 0


def check(name, cond, why=""):
    global failed
    print(("ok " if cond else "not ok ") + name + ("" if cond else ": " + str(why)), flush=True)
    failed += not cond


def raises(fn, cls):
    try:
        fn()
    except cls as e:
        return e
    return None


sb = Sandbox.create("agent", timeout=120, envs={"SDK_ENV": "from-create"},
                    metadata={"client": "python", "marker": marker})
check("create: an id", sb.sandbox_id.startswith("api-"), sb.sandbox_id)
check("is_running", sb.is_running())
listed = [i for i in Sandbox.list() if i.sandbox_id == sb.sandbox_id]
check("list: it, with its metadata", len(listed) == 1 and listed[0].metadata["marker"] == marker,
      listed)
check("list filtered by metadata", [i.sandbox_id for i in Sandbox.list(
    query={"metadata": {"marker": marker}})] == [sb.sandbox_id])
out = subprocess.run([sys.executable, "-c", "import sys; from sandcap.sdk import Sandbox; "
                      "print(Sandbox.connect(sys.argv[1]).commands.run('echo connected').stdout, end='')",
                      sb.sandbox_id], capture_output=True, text=True)
check("connect from another process", out.stdout == "connected\n", out.stderr)

r = sb.commands.run("echo $SDK_ENV; echo err >&2")
check("run: stdout, stderr, exit_code", (r.stdout, r.stderr, r.exit_code) ==
      ("from-create\n", "err\n", 0), r)
e = raises(lambda: sb.commands.run("echo partial; exit 3"), CommandExitException)
check("a status other than 0 raises CommandExitException", e is not None and e.exit_code == 3
      and e.stdout == "partial\n", e)
r = sb.commands.run("echo $A; pwd", envs={"A": "b"}, cwd=grant)
check("run with envs and cwd", r.stdout == "b\n%s\n" % grant, r)
seen = []
sb.commands.run("echo one; echo two", on_stdout=seen.append)
check("on_stdout gets the output", "".join(seen) == "one\ntwo\n", seen)
t0 = time.time()
check("a per-call timeout raises TimeoutException",
      raises(lambda: sb.commands.run("sleep 30", timeout=1), TimeoutException) is not None)
check("... within 5 s", time.time() - t0 < 5, time.time() - t0)
e = raises(lambda: sb.commands.run("id", user="root"), SandboxException)
check("user root is refused", e is not None and e.code == "forbidden", e)

started = threading.Event()
h = sb.commands.run("echo started; sleep 300 # %s" % marker, background=True,
                    on_stdout=lambda s: started.set())
check("background: a handle with a pid", isinstance(h.pid, int) and h.pid > 0, h.pid)
check("its output streams while it runs", started.wait(10))
check("commands.list shows it", any(p.pid == h.pid and marker in " ".join(p.args)
                                   for p in sb.commands.list()), sb.commands.list())
check("commands.kill", sb.commands.kill(h.pid))
e = raises(h.wait, CommandExitException)
check("the killed command ends with 137", e is not None and e.exit_code == 137, e)
check("commands.list no longer shows it", all(p.pid != h.pid for p in sb.commands.list()))
check("kill of a command that ended: False", sb.commands.kill(h.pid) is False)

h2 = sb.commands.run("cat", background=True, stdin=True)
sb.commands.send_stdin(h2.pid, "hello stdin\n")
sb.commands.close_stdin(h2.pid)
check("send_stdin", h2.wait().stdout == "hello stdin\n")
h3 = sb.commands.run("echo one; sleep 1; echo two", background=True)
h3.disconnect()
h4 = sb.commands.connect(h3.pid)
check("connect(pid) re-attaches to its output", h4.wait().stdout == "one\ntwo\n", h4.stdout)

term = bytearray()
term_lock = threading.Condition()


def on_data(b):
    with term_lock:
        term.extend(b)
        term_lock.notify_all()


def until(text, secs=10):
    with term_lock:
        return term_lock.wait_for(lambda: text.encode() in term, secs)


pt = sb.pty.create(PtySize(rows=24, cols=80), on_data=on_data, envs={"PTY_ENV": "pty-env"},
                   cwd=grant)
check("pty.create: a handle with a pid", isinstance(pt.pid, int) and pt.pid > 0, pt.pid)
sb.pty.send_stdin(pt.pid, "stty size; tty; echo $TERM $PTY_ENV; pwd\n")
check("pty: its size, a tty inside, its envs and cwd", until("24 80") and until("/dev/pts/")
      and until("xterm-256color pty-env") and until(grant), bytes(term))
sb.pty.resize(pt.pid, PtySize(rows=30, cols=100))
sb.pty.send_stdin(pt.pid, "stty size\n")
check("pty.resize: the new size inside", until("30 100"), bytes(term))
sb.pty.send_stdin(pt.pid, "exit 3\n")
e = raises(pt.wait, CommandExitException)
check("pty: the shell's exit status", e is not None and e.exit_code == 3, e)
pt2 = sb.pty.create(cols=80, rows=24, on_data=on_data)
check("pty.kill", sb.pty.kill(pt2.pid))
e = raises(pt2.wait, CommandExitException)
check("the killed pty ends with 137", e is not None and e.exit_code == 137, e)
e = raises(lambda: sb.pty.resize(h2.pid, PtySize(rows=1, cols=1)), SandboxException)
check("resize of a command without a pty is refused", e is not None, e)

d = grant + "/python"
check("make_dir", sb.files.make_dir(d + "/sub") is True)
check("make_dir of one there: False", sb.files.make_dir(d + "/sub") is False)
w = sb.files.write(d + "/sub/a.txt", "hello")
check("write", w.path == d + "/sub/a.txt" and w.name == "a.txt", w)
sb.files.write_files([{"path": d + "/b.bin", "data": b"\x00\x01\x02"},
                      {"path": d + "/kept.txt", "data": "kept by python\n"}])
check("read text", sb.files.read(d + "/sub/a.txt") == "hello")
check("read bytes", sb.files.read(d + "/b.bin", format="bytes") == bytearray(b"\x00\x01\x02"))
check("read stream", b"".join(sb.files.read(d + "/sub/a.txt", format="stream")) == b"hello")
names = sorted(e.path[len(d) + 1:] for e in sb.files.list(d, depth=2))
check("list depth 2", names == ["b.bin", "kept.txt", "sub", "sub/a.txt"], names)
check("list depth 1", sorted(e.name for e in sb.files.list(d)) == ["b.bin", "kept.txt", "sub"])
info = sb.files.get_info(d + "/sub/a.txt")
check("get_info", (info.type, info.size, info.name) == (FileType.FILE, 5, "a.txt"), info)
check("exists", sb.files.exists(d + "/sub/a.txt") and not sb.files.exists(d + "/nope"))
moved = sb.files.rename(d + "/sub/a.txt", d + "/moved.txt")
check("rename", moved.path == d + "/moved.txt" and not sb.files.exists(d + "/sub/a.txt"))
sb.files.remove(d + "/sub")
check("remove a directory", not sb.files.exists(d + "/sub"))
e = raises(lambda: sb.files.write("/etc/sdk-denied", "x"), SandboxException)
check("a write outside the grants is denied", e is not None and e.code == "denied", e)
e = raises(lambda: sb.files.read("/etc/shadow"), SandboxException)
check("a read the walls refuse is refused", e is not None and e.code in ("denied", "no_such_path"), e)

with open(big, "rb") as f:
    sb.files.write(d + "/big.bin", f)
hsum = hashlib.sha256()
for chunk in sb.files.read(d + "/big.bin", format="stream"):
    hsum.update(chunk)
check("a 100 MB file written and read back as streams", sb.files.get_info(d + "/big.bin").size
      == os.path.getsize(big) and hsum.hexdigest() == hashlib.sha256(open(big, "rb").read()).hexdigest())
sb.files.remove(d + "/big.bin")

events, got = [], threading.Condition()


def on_event(ev):
    with got:
        events.append((ev.type.value, ev.name) if isinstance(ev.type, FilesystemEventType) else ev)
        got.notify_all()


want = [("create", "w1.txt"), ("create", "wd/w2.txt"), ("rename", "w1.txt"), ("create", "w3.txt"),
        ("remove", "wd/w2.txt"), ("chmod", "w3.txt")]
wh = sb.files.watch_dir(d, on_event, recursive=True)
sb.files.write(d + "/w1.txt", "x")
sb.commands.run("mkdir {0}/wd; sleep 0.3; echo y > {0}/wd/w2.txt; mv {0}/w1.txt {0}/w3.txt; "
                "rm {0}/wd/w2.txt; chmod 600 {0}/w3.txt".format(d))
with got:
    got.wait_for(lambda: all(w in events for w in want), 10)
check("watch_dir recursive: create, rename, remove, chmod, in a new subdirectory too",
      all(w in events for w in want), events)
wh.stop()
wh2 = sb.files.watch_dir(d)
sb.commands.run("echo z > {0}/wd/deep.txt; echo t > {0}/top.txt".format(d))
time.sleep(0.5)
names = [e.name for e in wh2.get_new_events()]
check("watch_dir: not below without recursive; get_new_events", "top.txt" in names
      and "wd/deep.txt" not in names, names)
wh2.stop()
check("watch_dir of no directory: NotFoundException",
      raises(lambda: sb.files.watch_dir(d + "/nope", on_event), NotFoundException) is not None)

sb.set_timeout(60)
end = Sandbox.get_info(sb.sandbox_id).end_at.timestamp()
check("set_timeout moves its end", abs(end - (time.time() + 60)) < 5, end - time.time())
e = raises(lambda: sb.set_timeout(100000), SandboxException)
check("a timeout past the policy's limits.wall is refused", e is not None, e)
tick = grant + "/python-tick"
ticker = sb.commands.run("while :; do date +%%s%%N > %s; sleep 0.05; done" % tick, background=True,
                         timeout=0)


def read_tick():
    try:
        return open(tick).read()
    except OSError:
        return ""


def ticks_move(secs=5.0):
    """Whether the ticker writes within secs (a loaded host may be slow)."""
    a, end = read_tick(), time.time() + secs
    while time.time() < end:
        time.sleep(0.05)
        if read_tick() != a:
            return True
    return False


check("a command runs (its ticks move)", ticks_move())
end0 = Sandbox.get_info(sb.sandbox_id).end_at.timestamp()
check("pause", sb.pause() == sb.sandbox_id)
check("paused: nothing runs (its ticks stand still)", not ticks_move(0.5))
check("get_info: state paused", sb.get_info().state == "paused")
e = raises(lambda: sb.commands.run("true"), SandboxException)
check("a command while paused is refused", e is not None, e)
e = raises(lambda: sb.files.read(grant + "/python/kept.txt"), SandboxException)
check("a file operation while paused is refused (paused)", e is not None and e.code == "paused", e)
time.sleep(1)
sb2 = Sandbox.resume(sb.sandbox_id)
check("Sandbox.resume: running again, its ticks move",
      sb2.get_info().state == "running" and ticks_move())
moved = Sandbox.get_info(sb.sandbox_id).end_at.timestamp() - end0
check("its end moved by the time paused (1.5 s and more)", 1.4 < moved < 10, moved)
sb.pause()
check("connect resumes a paused sandbox", Sandbox.connect(sb.sandbox_id).get_info().state
      == "running" and ticks_move())
sb.commands.kill(ticker.pid)
audit = sb.audit_path
print("RESULT " + json.dumps({"id": sb.sandbox_id, "audit": audit, "killed_pid": h.pid}), flush=True)
check("kill", sb.kill() is True)
check("is_running after kill: False", not sb.is_running())
check("kill again: False", Sandbox.kill(sb.sandbox_id) is False)
sys.exit(1 if failed else 0)
