"""The DynamoDB double (tests/kit/memory_dynamodb.py) served over HTTP, so that processes side
by side share one set of tables, as the consumer's concurrent invocations share the index table
on AWS. It speaks DynamoDB's JSON 1.0 protocol (POST, `X-Amz-Target:
DynamoDB_20120810.<Operation>`, `application/x-amz-json-1.0`), so boto3 reaches it through
the standard `AWS_ENDPOINT_URL_DYNAMODB` and no product code knows it is there.

    python -m tests.kit.dynamodb_server --port 8000 [--latency-ms 5]

Each request waits `--latency-ms` before it is answered, in its own thread (one per
connection; HTTP/1.1 keep-alive, so botocore's pooled connections stay open): calls in flight
overlap as they do on DynamoDB, and only the answer itself is serialized (the double's lock).
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.kit.long_lived_heap import freeze_survivors
from tests.kit.memory_dynamodb import MemoryDynamoDB


class DynamoDBServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], latency_s: float = 0.0) -> None:
        super().__init__(address, _Exchange)
        self.latency_s = latency_s
        self.tables = MemoryDynamoDB()

    @property
    def endpoint(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


class _Exchange(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The reply in one segment, sent at once: http.server writes the headers and the body
    # apart, unbuffered, and on a kept-alive connection Nagle's algorithm then holds the body
    # until the client's delayed ACK (~40 ms a call, measured: 46-53 ms at no latency).
    wbufsize = 64 * 1024
    disable_nagle_algorithm = True
    server: DynamoDBServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        operation = self.headers.get("X-Amz-Target", "").rsplit(".", 1)[-1]
        if self.server.latency_s:
            time.sleep(self.server.latency_s)
        try:
            status, reply = self.server.tables.answer(operation, json.loads(body or b"{}"))
        except NotImplementedError as exc:
            # A 400 botocore raises as a ClientError naming what the double does not model.
            status, reply = 400, {"__type": "com.amazonaws.dynamodb.v20120810#NotModelled",
                                  "message": str(exc)}
        out = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(out)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: object) -> None:
        pass  # a line per request would cost the server more than the answer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.kit.dynamodb_server",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    args = parser.parse_args(argv)
    freeze_survivors()  # a million items: no collector pause a DynamoDB would not have
    with DynamoDBServer((args.host, args.port), args.latency_ms / 1000) as server:
        server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
