#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# tls-origin.py PORT CERT KEY LOG [GIT_ROOT [TOKEN]]: an HTTPS origin on
# 127.0.0.1 for the inspection tests. Every request is appended to LOG as one
# JSON line (method, path, headers, body length, the client's port: which
# connection it came on): what the origin really received. A path under
# /close/ is answered with "Connection: close". It answers {"ok": true, "path": PATH} (without the query) and
# never echoes a header, so a secret it receives cannot travel back. Under /git/ it serves the bare
# repositories in GIT_ROOT through git http-backend (CGI), and only to a
# request whose Authorization is "Bearer TOKEN".
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading

port, cert, key, log = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
git_root = sys.argv[5] if len(sys.argv) > 5 else None
token = sys.argv[6] if len(sys.argv) > 6 else None
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, body):
        line = {"method": self.command, "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body_len": len(body), "peer": self.client_address[1]}
        with lock, open(log, "a") as f:
            f.write(json.dumps(line) + "\n")

    def reply(self, status, body, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if self.path.startswith("/close/"):
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def git(self, body):
        if self.headers.get("Authorization") != "Bearer " + (token or ""):
            self.reply(401, b'{"error": "bad token"}')
            return
        path, _, query = self.path[len("/git"):].partition("?")
        env = {"GIT_PROJECT_ROOT": git_root, "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": path, "QUERY_STRING": query,
               "REQUEST_METHOD": self.command,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "PATH": os.environ["PATH"]}
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        out = subprocess.run(["git", "http-backend"], input=body, env=env,
                             capture_output=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(": ")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def handle_any(self):
        body = self.body()
        self.record(body)
        if git_root and self.path.startswith("/git/"):
            self.git(body)
            return
        self.reply(200, json.dumps({"ok": True, "path": self.path.split("?")[0]}).encode() + b"\n")

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = handle_any


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
