"""What a boto3 S3 client puts on the wire, counted and tampered with on its `before-send` event
(after botocore has signed the request and computed its checksums): every HTTP request is
seen, retries included."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

from botocore.awsrequest import AWSResponse

SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
             b"<Message>Please reduce your request rate.</Message></Error>")


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


class S3Wire:
    """Requests per operation (`requests`) and the bytes of their bodies (`sent`) from now on.

    `corrupt(op)` flips one byte of the next `op` request's body on its way, as a bad NIC or
    proxy would: the checksum headers still describe the bytes the client meant to send.
    `slow_down(op, times)` answers the next `times` `op` requests with 503 SlowDown, as S3 does
    to a prefix over its request rate, instead of sending them."""

    def __init__(self, client: Any) -> None:
        self.requests: Counter[str] = Counter()
        self.sent = 0
        self._corrupt: set[str] = set()
        self._slow: Counter[str] = Counter()
        self._lock = threading.Lock()
        client.meta.events.register_first("before-send.s3", self._before_send)

    def reset(self) -> None:
        with self._lock:
            self.requests, self.sent = Counter(), 0

    def corrupt(self, op: str) -> None:
        self._corrupt.add(op)

    def slow_down(self, op: str, times: int) -> None:
        self._slow[op] += times

    def _before_send(self, request: Any, event_name: str, **_: Any) -> AWSResponse | None:
        op = event_name.rsplit(".", 1)[-1]
        with self._lock:
            self.requests[op] += 1
            self.sent += int(request.headers.get("Content-Length", 0))
            if self._slow[op]:
                self._slow[op] -= 1
                return AWSResponse(request.url, 503, {"Content-Type": "application/xml"},
                                   _Body(SLOW_DOWN))
            if op in self._corrupt and request.body:
                self._corrupt.discard(op)
                body = request.body
                if not isinstance(body, bytes):  # a file-like body botocore reads from
                    position = body.tell()
                    body, _ = body.read(), body.seek(position)
                flipped = bytearray(body)
                flipped[len(flipped) // 2] ^= 0x01
                request.body = bytes(flipped)
        return None
