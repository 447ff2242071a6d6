"""An fsimage object in S3, read in byte ranges: the driver's small reads (header, summary,
NS_INFO) and the decode of one part per Spark task.

The driver never holds the image: it GETs the first 8 bytes (the magic), the end (the summary,
whose length is the last 4 bytes) and NS_INFO. Each INODE and INODE_DIR part (a sub-section, or
the whole section of an image saved without them) is decoded by the task it is given, which
GETs its own byte range with boto3 and calls the reader of glue_jobs.fsimage_format /
fsimage_inodes on it. Every GET names the ETag the driver saw, so an object replaced during the
run fails the run (412) instead of mixing two images.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlparse

from pyspark.accumulators import Accumulator

from glue_jobs.fsimage_format import (
    ImageSummary,
    NameSystem,
    Section,
    check_magic,
    part_data,
    read_directory_entries,
    read_name_system,
    read_references,
    read_summary_tail,
    summary_length,
)
from glue_jobs.fsimage_inodes import read_inode_rows, read_string_table
from glue_jobs.runtime import AWS_RETRIES

# A summary lists each section in ~30 bytes: one GET of the last 4 KiB holds it and its length
# for an image of a hundred sections; a bigger summary costs a second GET.
_TAIL_GUESS = 4096

# Spark DDL of what the decode tasks emit (INODE: fsimage_inodes.InodeRow, field for field).
INODE_DDL = ("id bigint, kind string, name string, mtime bigint, atime bigint, owner string, "
             "`group` string, mode int, replication int, preferred_block_size bigint, "
             "blocks int, size bigint, storage_policy_id int, erasure_coding_policy_id int, "
             "under_construction boolean, ns_quota bigint, ds_quota bigint, "
             "symlink_target string")
# A directory's child: by inode id (child), or by position in INODE_REFERENCE (reference).
CHILD_DDL = "parent bigint, child bigint, reference int"
REFERENCE_DDL = "reference int, referred bigint"


@dataclass(frozen=True, slots=True)
class ImageObject:
    bucket: str
    key: str
    size: int
    etag: str
    last_modified: datetime

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


@dataclass(frozen=True, slots=True)
class ImageLayout:
    image: ImageObject
    summary: ImageSummary
    name_system: NameSystem


def s3_client() -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client("s3", config=Config(retries=AWS_RETRIES))


def image_object(uri: str, client: Any) -> ImageObject:
    parsed = urlparse(uri)
    if parsed.scheme not in ("s3", "s3a") or not parsed.netloc or not parsed.path.strip("/"):
        raise ValueError(f"--image must be s3://bucket/key, got {uri!r}")
    bucket, key = parsed.netloc, parsed.path.lstrip("/")
    head = client.head_object(Bucket=bucket, Key=key)
    return ImageObject(bucket, key, head["ContentLength"], head["ETag"], head["LastModified"])


def read_range(client: Any, image: ImageObject, start: int, length: int) -> bytes:
    """Bytes [start, start + length) of the image as the driver first saw it."""
    if length <= 0:
        return b""
    body = client.get_object(Bucket=image.bucket, Key=image.key, IfMatch=image.etag,
                             Range=f"bytes={start}-{start + length - 1}")["Body"]
    return body.read()


def read_layout(client: Any, image: ImageObject, *, tail_guess: int = _TAIL_GUESS
                ) -> ImageLayout:
    check_magic(read_range(client, image, 0, 8))
    tail = read_range(client, image, max(0, image.size - tail_guess), tail_guess)
    if len(tail) >= 4 and summary_length(tail) > len(tail) and summary_length(tail) <= image.size:
        need = summary_length(tail)
        tail = read_range(client, image, image.size - need, need)
    summary = read_summary_tail(tail, image.size)
    return ImageLayout(image, summary, read_name_system(
        _part(client, image, summary, summary.section("NS_INFO")),
        base=summary.base(summary.section("NS_INFO"))))


def _part(client: Any, image: ImageObject, summary: ImageSummary, section: Section) -> bytes:
    return part_data(read_range(client, image, section.offset, section.length), summary, section)


@dataclass(frozen=True, slots=True)
class Part:
    section: Section
    header: bool  # an INODE part that opens with the INodeSection header (the first)


def inode_parts(summary: ImageSummary) -> list[Part]:
    return [Part(s, i == 0) for i, s in enumerate(summary.parts("INODE"))]


def directory_parts(summary: ImageSummary) -> list[Part]:
    return [Part(s, False) for s in summary.parts("INODE_DIR")]


Rows = Callable[[Iterable[Part]], Iterator[tuple[Any, ...]]]


def inode_rows(layout: ImageLayout, tasks: Accumulator[int] | None = None) -> Rows:
    """The task function over INODE parts: each task also reads STRING_TABLE (users and groups,
    a few KiB) for itself, so nothing but the summary passes through the driver. `tasks`: 1 is
    added per task run."""
    image, summary = layout.image, layout.summary
    table = summary.section("STRING_TABLE")

    def decode(parts: Iterable[Part]) -> Iterator[tuple[Any, ...]]:
        if tasks is not None:
            tasks.add(1)
        client = s3_client()
        strings = read_string_table(_part(client, image, summary, table),
                                    base=summary.base(table))
        for part in parts:
            data = _part(client, image, summary, part.section)
            yield from read_inode_rows(data, strings, header=part.header,
                                       base=summary.base(part.section),
                                       section=part.section.name)
    return decode


def child_rows(layout: ImageLayout) -> Rows:
    """The task function over INODE_DIR parts: one row per (directory, child)."""
    image, summary = layout.image, layout.summary

    def decode(parts: Iterable[Part]) -> Iterator[tuple[Any, ...]]:
        client = s3_client()
        for part in parts:
            data = _part(client, image, summary, part.section)
            for entry in read_directory_entries(data, base=summary.base(part.section),
                                                section=part.section.name):
                for child in entry.children:
                    yield entry.parent, child, None
                for position in entry.reference_children:
                    yield entry.parent, None, position
    return decode


def reference_rows(layout: ImageLayout) -> Rows:
    """The task function over the INODE_REFERENCE section (one part: a reference is named by
    its position in the whole section)."""
    image, summary = layout.image, layout.summary

    def decode(parts: Iterable[Part]) -> Iterator[tuple[Any, ...]]:
        client = s3_client()
        for part in parts:
            data = _part(client, image, summary, part.section)
            for position, ref in enumerate(read_references(data,
                                                           base=summary.base(part.section))):
                yield position, ref.referred_id
    return decode


def reference_parts(summary: ImageSummary) -> list[Part]:
    return ([Part(summary.section("INODE_REFERENCE"), False)]
            if summary.has("INODE_REFERENCE") else [])
