"""Raw objects written as the consumer Lambda (lambdas/ingest/lake.py) writes them, into a bucket
of the moto server through boto3: gzip JSON lines of canonical events (HdfsEvent.to_json) under
raw/cluster=<c>/dt=<d>/hour=<HH>/<name>.jsonl.gz, partitioned by the event's NameNode timestamp;
an event without one goes with the largest timestamp of its message, or the message's
SentTimestamp when no event has one. The jobs get the lake as Glue does, `s3://<bucket>`."""

from __future__ import annotations

import gzip
import itertools
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from glue_jobs.storage import LakeStore, store_for
from hdfs_events.event import HdfsEvent
from hdfs_events.lake_layout import RAW_PREFIX

JAN_13_2015_MS = 1421107200000  # 2015-01-13T00:00:00Z, the day of the sample edit log
_BUCKETS = itertools.count(1)


def partition_of(ms: int) -> tuple[str, str]:
    t = datetime.fromtimestamp(ms / 1000, UTC)
    return t.strftime("%Y-%m-%d"), t.strftime("%H")


class RawLake:
    """A fresh bucket per lake (S3A caches a file system per bucket name across tests).
    `bucket`: an exact name instead, for a lake in the bucket a synthesized stack names."""

    def __init__(self, s3: Any, name: str = "lake", *, bucket: str | None = None) -> None:
        self.s3, self.bucket = s3, bucket or f"{name}-{next(_BUCKETS)}"
        s3.create_bucket(Bucket=self.bucket, CreateBucketConfiguration={
            "LocationConstraint": s3.meta.region_name})
        self.uri = f"s3://{self.bucket}"  # the job argument, as a Glue job run passes it
        self.store: LakeStore = store_for(self.uri, s3_client=s3)

    def spark_uri(self, key: str) -> str:
        """What Spark opens for a key of the lake (s3a://, as the jobs open it)."""
        return self.store.root_uri + key

    def read(self, key: str) -> bytes | None:
        return self.store.read_bytes(key)

    def keys(self, prefix: str) -> list[str]:
        return [o.key for o in self.store.list_objects(prefix)]

    def write_message(self, name: str, events: Sequence[HdfsEvent], *, sent_ms: int) -> list[str]:
        """One SQS message's events: one object per (dt, hour) they fall in, as the consumer
        splits a message whose events straddle an hour. Returns the keys written."""
        groups: dict[tuple[str, str, str], list[str]] = {}
        stamps = [e.timestamp for e in events if e.timestamp is not None]
        fallback = max(stamps) if stamps else sent_ms
        for e in events:
            dt, hour = partition_of(e.timestamp if e.timestamp is not None else fallback)
            groups.setdefault((e.cluster, dt, hour), []).append(e.to_json())
        return [self.write_lines(c, dt, hour, name, lines)
                for (c, dt, hour), lines in groups.items()]

    def write_lines(self, cluster: str, dt: str, hour: str, name: str,
                    lines: Iterable[str]) -> str:
        data = "".join(f"{line}\n" for line in lines).encode()
        return self.write_bytes(cluster, dt, hour, name, gzip.compress(data, mtime=0))

    def write_bytes(self, cluster: str, dt: str, hour: str, name: str, data: bytes) -> str:
        key = f"{RAW_PREFIX}cluster={cluster}/dt={dt}/hour={hour}/{name}.jsonl.gz"
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=data)
        return key
