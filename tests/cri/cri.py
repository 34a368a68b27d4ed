#!/usr/bin/python3
"""A minimal CRI client for the tests: one runtime.v1 call per run, request JSON on stdin,
response JSON on stdout (proto field names). Errors: one line "cri METHOD: CODE: details" on
stderr, exit 1. ExecSync's stdout/stderr come back as text, not base64.

Usage: cri.py --socket PATH [--gen DIR] [--timeout S] METHOD
"""
import argparse
import importlib
import json
import os
import sys

import grpc
from google.protobuf import json_format

HERE = os.path.dirname(os.path.abspath(__file__))
SERVICE = "runtime.v1.RuntimeService"


def load_messages(gen_dir):
    """Compile cri.proto into gen_dir once (protoc from grpc_tools) and import it."""
    os.makedirs(gen_dir, exist_ok=True)
    target = os.path.join(gen_dir, "cri_pb2.py")
    src = os.path.join(HERE, "cri.proto")
    if not os.path.exists(target) or os.path.getmtime(target) < os.path.getmtime(src):
        from grpc_tools import protoc

        rc = protoc.main(["protoc", "-I" + HERE, "--python_out=" + gen_dir, src])
        if rc != 0:
            sys.exit("cri: protoc failed on %s" % src)
    sys.path.insert(0, gen_dir)
    return importlib.import_module("cri_pb2")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--gen", default=os.environ.get("HEZO_CRI_GEN", "/tmp/hezo-cri-gen"))
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("method")
    args = ap.parse_args()

    pb = load_messages(args.gen)
    req_t = getattr(pb, args.method + "Request", None)
    resp_t = getattr(pb, args.method + "Response", None)
    if req_t is None or resp_t is None:
        sys.exit("cri: unknown method %s" % args.method)
    text = sys.stdin.read() if not sys.stdin.isatty() else ""
    req = json_format.Parse(text or "{}", req_t())

    with grpc.insecure_channel("unix://" + args.socket) as ch:
        call = ch.unary_unary(
            "/%s/%s" % (SERVICE, args.method),
            request_serializer=req_t.SerializeToString,
            response_deserializer=resp_t.FromString,
        )
        try:
            resp = call(req, timeout=args.timeout)
        except grpc.RpcError as e:
            details = (e.details() or "").replace("\n", " ")
            print("cri %s: %s: %s" % (args.method, e.code().name, details), file=sys.stderr)
            return 1
    out = json_format.MessageToDict(resp, preserving_proto_field_name=True)
    if args.method == "ExecSync":
        out = {
            "stdout": resp.stdout.decode("utf-8", "replace"),
            "stderr": resp.stderr.decode("utf-8", "replace"),
            "exit_code": resp.exit_code,
        }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
