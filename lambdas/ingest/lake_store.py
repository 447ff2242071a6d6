"""The lake bucket: raw objects and quarantine records written, raw objects read back, quarantine
records read and moved by a redrive."""

from __future__ import annotations

import gzip
import json
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice
from typing import Any

from botocore.exceptions import ClientError

from hdfs_events.event import HdfsEvent
from hdfs_events.validation import split_known_fields
from lambdas.ingest.clients import client

# Lake objects applying ranges fetches at once, ahead of the one it decodes: messages this
# invocation did not receive itself, ~10-60 KB each.
READ_CONCURRENCY = 8


class S3Lake:
    def __init__(self, bucket: str, s3: Any | None = None) -> None:
        self.bucket, self.s3 = bucket, s3 or client("s3")
        self._pool: ThreadPoolExecutor | None = None

    def put(self, key: str, body: bytes, content_type: str,
            metadata: Mapping[str, str] | None = None) -> None:
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType=content_type,
                           Metadata=dict(metadata or {}))

    def read(self, key: str) -> bytes | None:
        """The object's bytes; None when there is no such key."""
        try:
            return self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "NoSuchKey":
                return None
            raise

    def delete(self, key: str) -> None:
        self.s3.delete_object(Bucket=self.bucket, Key=key)

    def events_by_object(self, keys: Sequence[str]) -> Iterator[list[HdfsEvent]]:
        """The events of each raw lake object (gzip JSON lines), in `keys`' order, decoded as
        the caller takes them. Bodies are fetched READ_CONCURRENCY ahead of the caller, no more:
        a snapshot's range names a thousand objects and the Lambda holds a few at a time."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=READ_CONCURRENCY,
                                            thread_name_prefix="lake-get")
        pool = self._pool
        ahead: deque[Future[bytes]] = deque()
        pending = iter(keys)
        try:
            for key in islice(pending, READ_CONCURRENCY):
                ahead.append(pool.submit(self._body, key))
            while ahead:
                body = ahead.popleft().result()
                for key in islice(pending, 1):
                    ahead.append(pool.submit(self._body, key))
                # A line may end with a newer minor's fields: the index knows only its own.
                yield [HdfsEvent.from_dict(split_known_fields(json.loads(line))[0])
                       for line in gzip.decompress(body).splitlines() if line]
        finally:
            for future in ahead:  # the caller stopped early (its deadline): fetch no more
                future.cancel()

    def _body(self, key: str) -> bytes:
        return self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
