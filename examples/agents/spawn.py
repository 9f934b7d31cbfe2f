#!/usr/bin/env python3
"""Ask the supervisor for a sub-agent with a narrower capability set.

Usage, inside a sandbox whose policy has "spawn":
    spawn.py [--policy JSON | --policy-file FILE] [--token TOKEN] [--stdin TEXT]
             [--] CMD [ARG]...
    spawn.py --get-token [--attenuate JSON]...

Sends one request over /run/sandcap/spawn.sock and prints the reply (one JSON
object). Exit status: the child's, 125 when the request was refused or failed.
--get-token prints this sandbox's own token; each --attenuate appends a caveat
to it here, without a key (HMAC-SHA256 keyed by the token's signature), and
--token hands such a token to the supervisor, which runs the child with it if
it extends the sandbox's token. Standard library only: no sandcap and no key
are needed inside.
"""
import base64
import hashlib
import hmac
import json
import socket
import sys

SOCKET = "/run/sandcap/spawn.sock"
MAX_REPLY = 1 << 20


def request(req, path=SOCKET):
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.connect(path)
        s.send(json.dumps(req).encode())
        data = s.recv(MAX_REPLY)
    if not data:
        raise ConnectionError("the supervisor closed the connection without a reply")
    return json.loads(data)


def spawn(argv, policy=None, stdin=None, token=None, path=SOCKET):
    req = {"argv": list(argv)}
    if policy is not None:
        req["policy"] = policy
    if stdin is not None:
        req["stdin"] = stdin
    if token is not None:
        req["token"] = token
    return request(req, path)


def get_token(path=SOCKET):
    reply = request({"get": "token"}, path)
    if not reply.get("ok"):
        raise ConnectionError(reply.get("error", "no token"))
    return reply["token"]


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def attenuate(token, policy):
    """Appends the caveat {"policy": policy}: sig' = HMAC(sig, caveat segment)."""
    head, sig = token.rsplit(".", 1)
    sig = base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4))
    seg = _b64(json.dumps({"policy": policy}, separators=(",", ":"), sort_keys=True).encode())
    new = hmac.new(sig, seg.encode(), hashlib.sha256).digest()
    return "%s.%s.%s" % (head, seg, _b64(new))


def main(args):
    policy, stdin, token, want_token, caveats = None, None, None, False, []
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--":
            break
        if opt == "--get-token":
            want_token = True
            continue
        if not args:
            sys.exit("spawn.py: %s needs a value" % opt)
        if opt == "--policy":
            policy = json.loads(args.pop(0))
        elif opt == "--policy-file":
            with open(args.pop(0)) as f:
                policy = json.load(f)
        elif opt == "--stdin":
            stdin = args.pop(0)
        elif opt == "--token":
            token = args.pop(0)
        elif opt == "--attenuate":
            caveats.append(json.loads(args.pop(0)))
        else:
            sys.exit("spawn.py: unknown option %s" % opt)
    if want_token:
        try:
            token = get_token()
        except OSError as e:
            print("spawn.py: %s: %s" % (SOCKET, e), file=sys.stderr)
            return 125
        for c in caveats:
            token = attenuate(token, c)
        print(token)
        return 0
    if not args:
        sys.exit(__doc__)
    try:
        reply = spawn(args, policy, stdin, token)
    except OSError as e:
        print("spawn.py: %s: %s" % (SOCKET, e), file=sys.stderr)
        return 125
    print(json.dumps(reply, sort_keys=True))
    return reply["status"] if reply.get("ok") else 125


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
