#!/usr/bin/env python3
"""The five demo scenarios (demo/scenario-*.sh) through the Docker SDK for
Python, with sandcap-runc as the container runtime.

    docker-sdk.py BASE_URL DIR

BASE_URL is the daemon (unix://...), whose runtime `sandcap` runs
sandcap-runc with `--policy DIR/policy.json`; DIR holds the test's files
(docker-lib.sh's layout: exec/ is dockerd's exec root; no folder of the
scenarios' is named data*, which dockerd would take for a path in its
data root, DIR/data, and bind rslave). The image is sandcap-bb:1
(busybox, hog). Environment: SANDCAP (the CLI, for `sandcap audit
verify`), SANDCAP_RUNC, EGRESS ("ADDR PORT SUBNET NETWORK": a server on a
bridge's host side, the policy's one allowed host; PORT+1 is a server it
does not allow), AGENTS (examples/agents). Prints one line per check,
"PASS what" or "FAIL what", and exits 0 once every scenario has run.
"""
import glob
import json
import os
import re
import socket
import subprocess
import sys
import time

import docker

IMAGE = "sandcap-bb:1"


class Checks:
    def __init__(self):
        self.failed = 0

    def __call__(self, what, cond):
        print(("PASS " if cond else "FAIL ") + what, flush=True)
        self.failed += not cond


check = Checks()


class Agent:
    """A container held until its audit log is known: the command waits
    for /go/go, which appears once sandcap-runc's state named the log."""

    def __init__(self, client, d, script, **kw):
        self.go = os.path.join(d, "go-%d" % time.monotonic_ns())
        os.mkdir(self.go)
        vols = dict(kw.pop("volumes", {}))
        vols[self.go] = {"bind": "/go", "mode": "ro"}
        held = "while [ ! -e /go/go ]; do sleep 0.05; done; " + script
        self.c = client.containers.run(IMAGE, ["sh", "-c", held], runtime="sandcap",
                                       volumes=vols, detach=True, **kw)
        self.audit = self.audit_log(d)
        open(os.path.join(self.go, "go"), "w").close()

    def audit_log(self, d):
        """org.sandcap.audit of the container's state under sandcap-runc's
        --root (dockerd's exec root, runtime-NAME/moby)."""
        for _ in range(100):
            for root in glob.glob(os.path.join(d, "exec", "runtime-*", "moby")):
                r = subprocess.run([os.environ["SANDCAP_RUNC"], "--root", root, "state", self.c.id],
                                   capture_output=True, text=True)
                if r.returncode == 0:
                    return json.loads(r.stdout)["annotations"]["org.sandcap.audit"]
            time.sleep(0.1)
        raise RuntimeError("no state of %s under %s/exec" % (self.c.id, d))

    def wait(self):
        status = self.c.wait(timeout=60)["StatusCode"]
        self.out = self.c.logs().decode(errors="replace")
        self.c.reload()
        self.state = self.c.attrs["State"]
        self.records = []
        # The container's end seals its log (audit.seal): read it then.
        for _ in range(100):
            with open(self.audit) as f:
                self.records = [json.loads(line) for line in f if line.strip()]
            if self.records and self.records[-1].get("event") == "audit.seal":
                break
            time.sleep(0.05)
        return status

    def events(self, name, **match):
        return [r.get("data", {}) for r in self.records if r.get("event") == name
                and all(r.get("data", {}).get(k) == v for k, v in match.items())]


def normal(client, d):
    data, work = os.path.join(d, "in1"), os.path.join(d, "out1")
    os.makedirs(data)
    os.makedirs(work)
    with open(os.path.join(data, "input.txt"), "w") as f:
        f.write("".join("line %d\n" % i for i in range(5000)))
    os.chown(work, 4242, 4242)  # an owner of its own: the agent writes as it
    a = Agent(client, d, "id; echo \"lines: $(wc -l < /data/input.txt)\" > /work/report.txt",
              volumes={data: {"bind": "/data", "mode": "ro"}, work: {"bind": "/work", "mode": "rw"}},
              working_dir="/work", user="1000:1000", mem_limit="256m", nano_cpus=10**9, pids_limit=64)
    status = a.wait()
    report = os.path.join(work, "report.txt")
    check("1 normal: exit status 0", status == 0)
    check("1 normal: the agent ran as uid 1000 inside (logs: %r)" % a.out.strip(),
          a.out.startswith("uid=1000 gid=1000"))
    check("1 normal: the result written to the granted folder on the host",
          os.path.exists(report) and open(report).read() == "lines: 5000\n")
    check("1 normal: owned by the folder's owner (uid 4242)",
          os.path.exists(report) and os.stat(report).st_uid == 4242)
    check("1 normal: its audit log records the command and the end",
          a.events("proc.exec") != [] and a.events("sandbox.exit") != [])
    a.c.remove()


def limits(client, d):
    a = Agent(client, d, "exec hog mem", mem_limit="64m")
    status = a.wait()
    oom = a.events("limit.hit", limit="memory")
    check("2 limits: allocating without end is killed by SIGKILL (%d = 128+9)" % status, status == 137)
    check("2 limits: the cgroup reports the OOM kill (limit.hit memory: %s)"
          % (oom[0].get("detail") if oom else None), oom != [])
    check("2 limits: docker says so too (State.OOMKilled, from the shim's OOM event)",
          a.state["OOMKilled"] is True)
    peak = [r.get("memory_peak", 0) for r in a.events("sandbox.exit")]
    check("2 limits: peak memory %d MiB, at the 64 MiB limit" % (max(peak or [0]) >> 20),
          peak != [] and 0 < max(peak) <= 66 << 20)
    a.c.remove()

    a = Agent(client, d, "exec hog spin 3 3", nano_cpus=500000000)
    time.sleep(1.5)
    s = a.c.stats(stream=False)  # two samples a second apart
    c, p = s["cpu_stats"], s["precpu_stats"]
    ds = c["system_cpu_usage"] - p.get("system_cpu_usage", 0)
    cores = (c["cpu_usage"]["total_usage"] - p["cpu_usage"]["total_usage"]) / ds * c["online_cpus"]
    status = a.wait()
    ex = (a.events("sandbox.exit") or [{}])[-1]
    cpu, thr = ex.get("cpu_ns", 0) / 1e9, ex.get("throttled_ns", 0) / 1e9
    check("2 limits: three spinning threads use %.2f cores (docker stats), held to nano_cpus 0.5" % cores,
          0.05 <= cores <= 0.65)
    check("2 limits: CPU used %.2f s in 3 s: at most about half a core" % cpu, 0.3 <= cpu <= 1.9)
    check("2 limits: throttled %.2f s, reported (limit.hit cpu_throttled)" % thr,
          thr > 0 and a.events("limit.hit", limit="cpu_throttled") != [])
    check("2 limits: the spinner ended by itself", status == 0)
    a.c.remove()


def egress(client, d):
    addr, port, subnet, name = os.environ["EGRESS"].split()
    net = client.networks.create(name, driver="bridge", ipam=docker.types.IPAMConfig(
        pool_configs=[docker.types.IPAMPool(subnet=subnet, gateway=addr)]))
    try:
        for _ in range(100):  # the test's servers bind once the bridge is there
            try:
                socket.create_connection((addr, int(port)), 1).close()
                break
            except OSError:
                time.sleep(0.1)
        agent = (
            'try() { what=$1; shift; if out=$("$@" 2>&1); then echo "ALLOWED $what: $out";'
            ' else echo "REFUSED $what: $out"; fi; }\n'
            'try "GET allowed" wget -q -O - http://%(a)s:%(p)s/\n'
            'try "GET denied host" wget -q -O - http://evil.test:%(p)s/\n'
            'try "GET denied port" wget -q -O - http://%(a)s:%(q)d/\n'
            'try "direct TCP" nc %(a)s %(q)d </dev/null\n'
        ) % {"a": addr, "p": port, "q": int(port) + 1}
        a = Agent(client, d, agent, network=name)
        status = a.wait()
        lines = a.out.splitlines()
        failed = check.failed
        check("3 egress: the agent ran (exit %d)" % status, status == 0)
        check("3 egress: the allowed host answered through the proxy",
              "ALLOWED GET allowed: past-the-proxy" in lines)
        check("3 egress: a denied host refused",
              any(x.startswith("REFUSED GET denied host") for x in lines))
        check("3 egress: a port not allowed refused",
              any(x.startswith("REFUSED GET denied port") for x in lines))
        check("3 egress: a direct TCP connection refused",
              any(x.startswith("REFUSED direct TCP") for x in lines))
        check("3 egress: the log has the allowed request",
              a.events("net.request", host=addr) != [])
        check("3 egress: ... and the refusals",
              a.events("net.denied", host="evil.test") != []
              and a.events("net.denied", reason="direct-connect") != [])
        log = open(os.path.join(d, "srv.log")).read()
        ip4 = a.c.attrs["NetworkSettings"]["Networks"][name]["IPAddress"]
        check("3 egress: the server saw the allowed GET, from the container's address %s" % ip4,
              ("%s - " % ip4) in log and "GET / " in log)
        check("3 egress: ... once, and the other server nothing",
              log.count("GET") == 1 and "GET" not in open(os.path.join(d, "srv2.log")).read())
        if check.failed > failed:
            print("the egress agent said:\n" + a.out, file=sys.stderr)
        a.c.remove()
    finally:
        net.remove()


def filesystem(client, d):
    data, work, private = (os.path.join(d, x) for x in ("in4", "out4", "private4"))
    for x in (data, work, private):
        os.makedirs(x)
    with open(os.path.join(data, "input.txt"), "w") as f:
        f.write("the quick brown fox jumps over the lazy dog\n")
    secret = os.path.join(private, "secret.txt")
    with open(secret, "w") as f:
        f.write("host-secret-%d\n" % os.getpid())
    os.chmod(work, 0o777)
    a = Agent(client, d, "exec sh /agents/fs-agent.sh",
              volumes={data: {"bind": "/data", "mode": "ro"}, work: {"bind": "/work", "mode": "rw"},
                       os.environ["AGENTS"]: {"bind": "/agents", "mode": "ro"}},
              working_dir="/work", environment={"HOST_SECRET": secret})
    a.wait()
    out = a.out
    check("4 filesystem: the granted ro volume is read", "ALLOWED read granted /data/input.txt" in out)
    check("4 filesystem: ... and not writable", "REFUSED write read-only grant" in out)
    check("4 filesystem: the rw volume is written", "ALLOWED write granted /work/result.txt" in out
          and "words" in open(os.path.join(work, "result.txt")).read())
    check("4 filesystem: the ro input unchanged on the host",
          open(os.path.join(data, "input.txt")).read().startswith("the quick brown fox"))
    check("4 filesystem: a host file outside the volumes not visible",
          "REFUSED read host file" in out and "REFUSED read the host via /proc/1/root" in out)
    check("4 filesystem: /etc/shadow not visible", "REFUSED read /etc/shadow" in out)
    check("4 filesystem: nothing written outside", "REFUSED write outside the grants" in out
          and not os.path.exists("/usr/bin/evil"))
    check("4 filesystem: the symlink escape refused", "REFUSED escape with a symlink" in out)
    check("4 filesystem: the secret never appeared inside", "host-secret" not in out)
    a.c.remove()


def audit(client, d):
    a = Agent(client, d, "uname -a >/dev/null; ls / >/dev/null; exec hog mem", mem_limit="64m")
    status = a.wait()
    sandcap = os.environ["SANDCAP"]
    check("5 audit: the agent ran and was killed at its limit (%d)" % status, status == 137)
    check("5 audit: the log records the programs run and the limit hit",
          a.events("proc.exec") != [] and a.events("limit.hit", limit="memory") != [])
    ok = subprocess.run([sandcap, "audit", "verify", a.audit], capture_output=True, text=True)
    check("5 audit: the container's log verifies (%s)" % ok.stdout.strip()[:80], ok.returncode == 0)
    lines = open(a.audit).read().splitlines(keepends=True)
    # One record's pid changed, as demo/scenario-5 does: its line is caught.
    n = next(i for i, x in enumerate(lines) if i >= 2 and re.search(r'"pid":[0-9]+', x))
    edited = os.path.join(d, "edited.jsonl")
    with open(edited, "w") as f:
        f.writelines(lines[:n] + [re.sub(r'"pid":[0-9]+', '"pid":1', lines[n], 1)] + lines[n + 1:])
    bad = subprocess.run([sandcap, "audit", "verify", edited], capture_output=True, text=True)
    msg = (bad.stdout + bad.stderr).strip()
    check("5 audit: an edited copy fails, at the edited line (%s)" % msg[-60:],
          bad.returncode != 0 and ("line %d:" % (n + 1)) in msg)
    cut = os.path.join(d, "cut.jsonl")
    with open(cut, "w") as f:
        f.writelines(lines[:-2])
    bad = subprocess.run([sandcap, "audit", "verify", cut], capture_output=True, text=True)
    check("5 audit: a cut-off copy fails", bad.returncode != 0)
    a.c.remove()


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: docker-sdk.py BASE_URL DIR")
    client = docker.DockerClient(base_url=sys.argv[1])
    for scenario in (normal, limits, egress, filesystem, audit):
        scenario(client, sys.argv[2])
    client.close()


if __name__ == "__main__":
    main()
