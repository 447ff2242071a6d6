"""The lake bucket: raw objects and quarantine records written, raw objects read back, quarantine
records read and moved by a redrive."""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError

from hdfs_events.event import HdfsEvent
from hdfs_events.validation import split_known_fields
from lambdas.ingest.clients import client

# Lake objects applying ranges reads at once: messages this invocation did not receive itself,
# ~10-60 KB each.
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

    def events(self, keys: Sequence[str]) -> list[HdfsEvent]:
        """The events of raw lake objects (gzip JSON lines), read READ_CONCURRENCY at a time."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=READ_CONCURRENCY,
                                            thread_name_prefix="lake-get")
        bodies = self._pool.map(
            lambda key: self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read(), keys)
        # A line may end with a newer minor's fields: the index knows only its own.
        return [HdfsEvent.from_dict(split_known_fields(json.loads(line))[0])
                for body in bodies for line in gzip.decompress(body).splitlines() if line]
