"""DynamoDB failing the way it does under load, injected on a real boto3 client."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.awsrequest import AWSResponse


class _Body:
    """The raw body botocore reads a response from."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


class FailWrites:
    """Answers the first `times` BatchWriteItem calls holding one of `paths` with an error, as
    DynamoDB does under throttling (a hot partition). Registered first on the client's
    `before-send`, so botocore's retry handler sees the error as if it came over the wire (moto
    in-process applies the request anyway: only its response is lost, the harder case)."""

    THROTTLED = (400, "ProvisionedThroughputExceededException",
                 "The level of configured provisioned throughput for the table was exceeded")

    def __init__(self, ddb: Any, paths: Sequence[str], times: int) -> None:
        self.paths, self.left = set(paths), times
        self.failed = 0
        status, code, message = self.THROTTLED
        self.status = status
        self.body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}",
                                "message": message}).encode()
        self._lock = threading.Lock()
        self._ddb = ddb
        ddb.meta.events.register_first("before-send.dynamodb.BatchWriteItem", self)

    def __call__(self, request: Any, **_: Any) -> AWSResponse | None:
        written = {r["PutRequest"]["Item"]["path"]["S"]
                   for rs in json.loads(request.body)["RequestItems"].values() for r in rs}
        with self._lock:
            if not written & self.paths or self.left <= 0:
                return None
            self.left -= 1
            self.failed += 1
        return AWSResponse(request.url, self.status,
                           {"Content-Type": "application/x-amz-json-1.0"}, _Body(self.body))

    def lift(self) -> None:
        self._ddb.meta.events.unregister("before-send.dynamodb.BatchWriteItem", self)


@dataclass(frozen=True)
class CrashingClient:
    """A DynamoDB client factory (the image job's executors' `client`) whose clients raise
    after `calls` BatchWriteItem requests of a task, before sending the next (botocore does not
    retry a RuntimeError): a job killed part way."""

    calls: int
    make: Callable[[int], Any]  # (threads) -> the real client, glue_jobs.image_index's

    def __call__(self, threads: int) -> Any:
        client, left = self.make(threads), [self.calls]

        def crash(**_: Any) -> None:
            if left[0] == 0:
                raise RuntimeError("index write crashed")
            left[0] -= 1
        client.meta.events.register("before-send.dynamodb.BatchWriteItem", crash)
        return client
