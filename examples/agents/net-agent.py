#!/usr/bin/env python3
"""Egress scenario agent: calls an allowed API, a denied domain, the cloud
metadata address, tries a direct connection, and tries to exfiltrate more
than its budget. Prints one line per attempt."""
import os, socket, sys, urllib.request

base = sys.argv[1]          # e.g. http://api.allowed.test:PORT
denied = sys.argv[2]        # e.g. http://evil.test:PORT
port = int(sys.argv[3])     # origin port on the host

def attempt(what, fn):
    try:
        print("ALLOWED %s: %s" % (what, fn()))
    except Exception as e:
        print("REFUSED %s: %s" % (what, str(e)[:80]))

def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return "%d %s" % (r.status, r.read(60).decode(errors="replace").strip())

def post(url, n):
    req = urllib.request.Request(url, data=b"x" * n, method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return "%d, sent %d bytes" % (r.status, n)

attempt("GET allowed API " + base, lambda: get(base + "/data.json"))
attempt("GET denied domain " + denied, lambda: get(denied + "/"))
attempt("GET cloud metadata 169.254.169.254", lambda: get("http://169.254.169.254/latest/meta-data/"))
def direct(port):
    # the sandbox's lo may take the connection (transparent redirection):
    # what counts is whether the host's server answers
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    s.sendall(b"GET /data.json HTTP/1.0\r\n\r\n")
    data = s.recv(100)
    if not data:
        raise OSError("closed without an answer")
    return "answered %r" % data[:20]

attempt("direct TCP to host 127.0.0.1:%d (no proxy)" % port, lambda: direct(port))
attempt("exfiltrate 256 KiB to allowed API", lambda: post(base + "/upload", 256 << 10))
attempt("exfiltrate 2 MiB more (over the budget)", lambda: post(base + "/upload", 2 << 20))
