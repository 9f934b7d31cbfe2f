#!/usr/bin/env python3
"""Ask the supervisor for a sub-agent with a narrower capability set.

Usage, inside a sandbox whose policy has "spawn":
    spawn.py [--policy JSON | --policy-file FILE] [--stdin TEXT] [--] CMD [ARG]...

Sends one request over /run/sandcap/spawn.sock and prints the reply (one JSON
object). Exit status: the child's, 125 when the request was refused or failed.
Standard library only: no sandcap and no key are needed inside.
"""
import json
import socket
import sys

SOCKET = "/run/sandcap/spawn.sock"
MAX_REPLY = 1 << 20


def spawn(argv, policy=None, stdin=None, path=SOCKET):
    req = {"argv": list(argv)}
    if policy is not None:
        req["policy"] = policy
    if stdin is not None:
        req["stdin"] = stdin
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.connect(path)
        s.send(json.dumps(req).encode())
        data = s.recv(MAX_REPLY)
    if not data:
        raise ConnectionError("the supervisor closed the connection without a reply")
    return json.loads(data)


def main(args):
    policy, stdin = None, None
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--":
            break
        if not args:
            sys.exit("spawn.py: %s needs a value" % opt)
        if opt == "--policy":
            policy = json.loads(args.pop(0))
        elif opt == "--policy-file":
            with open(args.pop(0)) as f:
                policy = json.load(f)
        elif opt == "--stdin":
            stdin = args.pop(0)
        else:
            sys.exit("spawn.py: unknown option %s" % opt)
    if not args:
        sys.exit(__doc__)
    try:
        reply = spawn(args, policy, stdin)
    except OSError as e:
        print("spawn.py: %s: %s" % (SOCKET, e), file=sys.stderr)
        return 125
    print(json.dumps(reply, sort_keys=True))
    return reply["status"] if reply.get("ok") else 125


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
