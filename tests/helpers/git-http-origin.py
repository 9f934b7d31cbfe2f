#!/usr/bin/env python3
# A git smart-HTTP origin for tests: git http-backend behind a tiny HTTP
# server on host loopback, receive-pack enabled (so only the proxy can stop a
# push), every request line appended to LOG.
# Usage: git-http-origin.py PORT PROJECT-ROOT LOG
import http.server, subprocess, sys, os
root, log = sys.argv[2], sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    def handle_one(self):
        path, _, query = self.path.partition("?")
        open(log, "a").write("%s %s\n" % (self.command, self.path))
        n = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(n) if n else b""
        env = {"GIT_PROJECT_ROOT": root, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
               "QUERY_STRING": query, "REQUEST_METHOD": self.command, "REMOTE_USER": "test",
               "REMOTE_ADDR": "127.0.0.1", "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(n), "PATH": "/usr/bin:/bin"}
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status = 200
        hdrs = []
        for line in head.split(b"\r\n"):
            k, _, v = line.decode().partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                hdrs.append((k, v.strip()))
        self.send_response(status)
        for k, v in hdrs:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)
    do_GET = do_POST = handle_one
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
