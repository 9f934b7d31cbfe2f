#!/usr/bin/env python3
"""A minimal CRI v1 client, as a kubelet speaks to a container runtime.

    cri-client.py SOCKET METHOD [REQUEST-JSON]

calls runtime.v1.RuntimeService/METHOD over the unix SOCKET with the
request given as JSON (the CRI's proto3 JSON names: podSandboxId, config,
...), and prints the response as JSON. ExecSync prints the command's
standard output and error as they are and exits with its exit code.

The messages are those of cri-v1-min.proto beside this file, compiled with
protoc into $CRI_PROTO_OUT (default: a directory of the system's temp dir)
on first use. A gRPC error prints its code and details and exits 2.
"""
import importlib
import os
import subprocess
import sys
import tempfile

import grpc
from google.protobuf import json_format

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = "cri-v1-min.proto"


def load_messages():
    out = os.environ.get("CRI_PROTO_OUT") or os.path.join(tempfile.gettempdir(), "sandcap-cri-proto")
    os.makedirs(out, exist_ok=True)
    mod = os.path.join(out, "cri_v1_min_pb2.py")
    if not os.path.exists(mod) or os.path.getmtime(mod) < os.path.getmtime(os.path.join(HERE, PROTO)):
        subprocess.run(["protoc", "-I", HERE, "--python_out", out, os.path.join(HERE, PROTO)], check=True)
    sys.path.insert(0, out)
    return importlib.import_module("cri_v1_min_pb2")


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: cri-client.py SOCKET METHOD [REQUEST-JSON]")
    sock, method = sys.argv[1], sys.argv[2]
    pb = load_messages()
    service = pb.DESCRIPTOR.services_by_name["RuntimeService"]
    m = service.methods_by_name.get(method)
    if m is None:
        sys.exit(f"cri-client.py: {method}: not a method of {PROTO} (one of {', '.join(service.methods_by_name)})")
    req_cls = getattr(pb, m.input_type.name)
    resp_cls = getattr(pb, m.output_type.name)
    req = req_cls()
    if len(sys.argv) == 4:
        try:
            json_format.Parse(sys.argv[3], req)
        except json_format.ParseError as e:
            sys.exit(f"cri-client.py: {method}: the request is not a {m.input_type.name}: {e}")
    with grpc.insecure_channel("unix://" + sock) as ch:
        call = ch.unary_unary(f"/{service.full_name}/{method}",
                              request_serializer=req_cls.SerializeToString,
                              response_deserializer=resp_cls.FromString)
        try:
            resp = call(req, timeout=60)
        except grpc.RpcError as e:
            print(f"cri-client.py: {method}: {e.code().name}: {e.details()}", file=sys.stderr)
            sys.exit(2)
    if method == "ExecSync":
        sys.stdout.buffer.write(resp.stdout)
        sys.stderr.buffer.write(resp.stderr)
        sys.exit(resp.exit_code)
    print(json_format.MessageToJson(resp, indent=None))


if __name__ == "__main__":
    main()
