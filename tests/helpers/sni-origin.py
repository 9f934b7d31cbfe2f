#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# sni-origin.py PORT CERT KEY LOG: a TLS origin on 127.0.0.1 that appends
# the server name of every ClientHello it receives to LOG (one line, "-"
# for none), before the handshake goes on: what really reached the origin.
# After the handshake it answers each line "N" with N bytes and "ok\n"
# with "ok\n" (a bulk transfer through the tunnel).
import socket
import ssl
import sys
import threading

port, cert, key, log = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
lock = threading.Lock()


def on_sni(sock, name, ctx):
    with lock, open(log, "a") as f:
        f.write((name or "-") + "\n")


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ctx.sni_callback = on_sni


def serve(conn):
    try:
        with ctx.wrap_socket(conn, server_side=True) as s, s.makefile("rwb") as f:
            for line in f:
                n = int(line) if line.strip().isdigit() else 0
                f.write(b"x" * n if n else line)
                f.flush()
    except (OSError, ValueError):
        pass


srv = socket.create_server(("127.0.0.1", port))
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
