"""Driver-side object I/O on the lake: listing raw objects, the compaction state, quarantine
copies, removing superseded runs. Spark reads and writes the data itself; this is the small rest.

Two stores behind one interface: the local file system (file:// URIs) and S3 through boto3 (on
Glue, and locally against the endpoint of AWS_ENDPOINT_URL). Keys are '/'-separated and relative
to the store's root URI, which is the URI Spark opens (s3a:// for a local run's s3://).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

from glue_jobs.runtime import spark_scheme


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    key: str  # relative to the store root
    size: int
    mtime_ms: int


class LakeStore(Protocol):
    root_uri: str  # with a trailing '/'; root_uri + key is what Spark opens

    def list_objects(self, prefix: str) -> Iterator[ObjectInfo]: ...
    def read_bytes(self, key: str) -> bytes | None: ...
    def write_bytes(self, key: str, data: bytes) -> None: ...
    def delete_prefix(self, prefix: str) -> int: ...


def store_for(uri: str, *, s3_client: Any = None) -> LakeStore:
    """The store of a lake URI: file:///path (or a bare path) or s3://bucket/prefix."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return LocalStore(Path(parsed.path if parsed.scheme else uri))
    if parsed.scheme in ("s3", "s3a"):
        if s3_client is None:
            import boto3  # only on Glue / with S3 URIs; local runs need no AWS library

            s3_client = boto3.client("s3")
        return S3Store(s3_client, parsed.netloc, parsed.path.lstrip("/"),
                       scheme=spark_scheme(parsed.scheme))
    raise ValueError(f"unsupported lake URI {uri!r}: use file:///path or s3://bucket/prefix")


class LocalStore:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.root_uri = self.root.as_uri().rstrip("/") + "/"

    def list_objects(self, prefix: str) -> Iterator[ObjectInfo]:
        base = self.root / prefix
        if not base.is_dir():
            return
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in sorted(filenames):
                full = Path(dirpath) / name
                st = full.stat()
                yield ObjectInfo(full.relative_to(self.root).as_posix(), st.st_size,
                                 st.st_mtime_ns // 1_000_000)

    def read_bytes(self, key: str) -> bytes | None:
        try:
            return (self.root / key).read_bytes()
        except FileNotFoundError:
            return None

    def write_bytes(self, key: str, data: bytes) -> None:
        """Atomic: a reader sees the old or the new content, never a half-written file."""
        target = self.root / key
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def delete_prefix(self, prefix: str) -> int:
        removed = 0
        base = self.root / prefix
        if not base.exists():
            return 0
        for dirpath, dirnames, filenames in os.walk(base, topdown=False):
            for name in filenames:
                (Path(dirpath) / name).unlink()
                removed += 1
            for name in dirnames:
                (Path(dirpath) / name).rmdir()
        base.rmdir()
        return removed


class S3Store:
    # S3 DeleteObjects takes at most 1000 keys per request.
    _DELETE_BATCH = 1000

    def __init__(self, client: Any, bucket: str, prefix: str, *, scheme: str = "s3") -> None:
        self.client, self.bucket = client, bucket
        self.prefix = prefix.rstrip("/") + "/" if prefix else ""
        self.root_uri = f"{scheme}://{bucket}/{self.prefix}"

    def list_objects(self, prefix: str) -> Iterator[ObjectInfo]:
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix + prefix)
        for page in pages:
            for obj in page.get("Contents", ()):
                yield ObjectInfo(obj["Key"][len(self.prefix):], obj["Size"],
                                 int(obj["LastModified"].timestamp() * 1000))

    def read_bytes(self, key: str) -> bytes | None:
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self.prefix + key)["Body"].read()
        except self.client.exceptions.NoSuchKey:
            return None

    def write_bytes(self, key: str, data: bytes) -> None:
        # A single PUT is atomic in S3: readers see the old or the new object.
        self.client.put_object(Bucket=self.bucket, Key=self.prefix + key, Body=data)

    def delete_prefix(self, prefix: str) -> int:
        keys = [self.prefix + o.key for o in self.list_objects(prefix)]
        for i in range(0, len(keys), self._DELETE_BATCH):
            batch = keys[i:i + self._DELETE_BATCH]
            self.client.delete_objects(Bucket=self.bucket, Delete={
                "Objects": [{"Key": k} for k in batch], "Quiet": True})
        return len(keys)
