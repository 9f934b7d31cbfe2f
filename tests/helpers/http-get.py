#!/usr/bin/env python3
"""http-get.py ADDR PORT: the body of GET / as a kubelet's HTTP probe sends
it (HTTP/1.0, no proxy), or "refused", or the error's name."""
import socket
import sys

try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), 3)
    s.sendall(b"GET / HTTP/1.0\r\nHost: pod\r\n\r\n")
    d = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        d += b
    print(d.split(b"\r\n\r\n", 1)[-1].decode().strip())
except ConnectionRefusedError:
    print("refused")
except OSError as e:
    print(type(e).__name__)
