#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs a command on a fresh 33x111 pty, as a person at a terminal would.

  pty-run.py [--signal NAME] [--resize-on-ready] [--timeout S] OUT INPUT CMD...

Once the command is up, INPUT (Python escapes such as \\x03 for Ctrl-C, ""
for none) is typed on the terminal and signal NAME (e.g. SIGINT) is sent to
the child. "Up" is 1 s after the start; with --resize-on-ready it is 0.5 s
after the command printed "ready" and the window was resized to 40x120
(SIGWINCH to the child). The child is killed after S seconds (default 20).
What the terminal showed goes to OUT; the child's exit status (128+N for a
signal) is printed.
"""
import argparse
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time


def winsize(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--signal", default="")
    ap.add_argument("--resize-on-ready", action="store_true")
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("out")
    ap.add_argument("input")
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    inp = a.input.encode().decode("unicode_escape").encode()
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(a.argv[0], a.argv)
    winsize(fd, 33, 111)
    buf, sent, t0 = b"", False, time.time()
    up = None if a.resize_on_ready else t0 + 1.0
    while True:
        if up is None and b"ready" in buf:
            winsize(fd, 40, 120)
            os.kill(pid, signal.SIGWINCH)
            up = time.time() + 0.5
        if up is not None and not sent and time.time() > up:
            if inp:
                os.write(fd, inp)
            if a.signal:
                os.kill(pid, getattr(signal, a.signal))
            sent = True
        r, _, _ = select.select([fd], [], [], 0.1)
        if fd in r:
            try:
                data = os.read(fd, 4096)
            except OSError:
                break
            if not data:
                break
            buf += data
        if time.time() - t0 > a.timeout:
            os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    with open(a.out, "wb") as f:
        f.write(buf)
    print(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    sys.exit(main())
