"""Calls the services with Python's `connectrpc` client (PyPI), as a backend in Python would.

Reads a JSON array of calls on stdin, each {"method": "pkg.Service/Method", "codec": "json" or
"proto", "request": object (json) or hex string (proto), "headers": {...}, "timeout_ms": n},
and prints one JSON line per call: {"ok": object or hex} or {"error": {"code", "message"}}.
The client's defaults are kept: requests are gzip-compressed.
"""

import json
import sys

from connectrpc.client import ConnectClientSync
from connectrpc.errors import ConnectError
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType


class JSONCodec:
    """proto3 JSON as Python objects: the test writes the JSON a generated message would."""

    def name(self):
        return "json"

    def encode(self, message):
        return json.dumps(message).encode()

    def decode(self, data, message_class):
        return json.loads(data) if data else {}


class RawProtoCodec:
    """Binary protobuf as bytes the test encoded."""

    def name(self):
        return "proto"

    def encode(self, message):
        return bytes(message)

    def decode(self, data, message_class):
        return bytes(data)


def main():
    url = sys.argv[1]
    calls = json.load(sys.stdin)
    clients = {
        "json": ConnectClientSync(url, codec=JSONCodec()),
        "proto": ConnectClientSync(url, codec=RawProtoCodec()),
    }
    for call in calls:
        service, name = call["method"].split("/")
        method = MethodInfo(
            name=name,
            service_name=service,
            input=dict if call["codec"] == "json" else bytes,
            output=dict if call["codec"] == "json" else bytes,
            idempotency_level=IdempotencyLevel.UNKNOWN,
            stream_type=StreamType.UNARY,
        )
        request = call["request"] if call["codec"] == "json" else bytes.fromhex(call["request"])
        try:
            response = clients[call["codec"]].execute_unary(
                request=request,
                method=method,
                headers=call.get("headers"),
                timeout_ms=call.get("timeout_ms"),
            )
            print(json.dumps({"ok": response if call["codec"] == "json" else response.hex()}, sort_keys=True))
        except ConnectError as error:
            print(json.dumps({"error": {"code": error.code.value, "message": error.message}}, sort_keys=True))
    for client in clients.values():
        client.close()


if __name__ == "__main__":
    main()
