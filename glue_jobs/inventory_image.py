"""An fsimage object in S3, read in byte ranges: the driver's small reads (header, summary,
NS_INFO, STRING_TABLE, INODE_REFERENCE) and the decode of one part per Spark task.

The driver never holds the image: it GETs the first 8 bytes (the magic), the end (the summary,
whose length is the last 4 bytes), NS_INFO, and the two small sections every task needs. Each
INODE and INODE_DIR part (a sub-section, or the whole section of an image saved without them)
is fetched by the Python task it is given (boto3, its own byte range, decompressed alone) and
decoded in the JVM task that receives its bytes: hdfsevents.glue.FsImageParts (glue_jobs/jvm,
the jobs' jar), the job's decoder, whose errors name the section and the image byte as
glue_jobs.fsimage_format's do. Every GET names the ETag the driver saw, so an object replaced
during the run fails the run (412) instead of mixing two images.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlparse

from pyspark.accumulators import Accumulator
from pyspark.sql import DataFrame

from glue_jobs.fsimage_format import (
    ImageSummary,
    NameSystem,
    Section,
    check_magic,
    part_data,
    read_name_system,
    read_referred_ids,
    read_summary_tail,
    summary_length,
)
from glue_jobs.runtime import AWS_RETRIES

# A summary lists each section in ~30 bytes: one GET of the last 4 KiB holds it and its length
# for an image of a hundred sections; a bigger summary costs a second GET.
_TAIL_GUESS = 4096

# Spark DDL of the decoded inodes (hdfsevents.glue.FsImageInodes' rows): absent fields read as
# protobuf's defaults (0), as Hadoop reads them; the kind by name; owner and group from
# STRING_TABLE; mode with the sticky bit; size the sum of the blocks' lengths; a striped
# (erasure-coded) file has replication 0 and its EC policy id; quotas as Java's long (-1: none).
INODE_DDL = ("id bigint, kind string, name string, mtime bigint, atime bigint, owner string, "
             "`group` string, mode int, replication int, preferred_block_size bigint, "
             "blocks int, size bigint, storage_policy_id int, erasure_coding_policy_id int, "
             "under_construction boolean, ns_quota bigint, ds_quota bigint, "
             "symlink_target string")
# One part of a section, fetched by a Python task, decoded by the JVM: header is an INODE
# part opening with the INodeSection header; base what an error position adds (part_data).
PART_DDL = "section string, base bigint, header boolean, data binary"


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


def part_bytes(layout: ImageLayout, tasks: Accumulator[int] | None = None) -> Rows:
    """The task function over parts: one PART_DDL row per part, its bytes GET with the ETag
    and decompressed alone (each sub-section is a stream of its own). The JVM decodes them
    (hdfsevents.glue.FsImageParts, glue_jobs/jvm). `tasks`: 1 is added per task run."""
    image, summary = layout.image, layout.summary

    def fetch(parts: Iterable[Part]) -> Iterator[tuple[Any, ...]]:
        if tasks is not None:
            tasks.add(1)
        client = s3_client()
        for part in parts:
            yield (part.section.name, summary.base(part.section), part.header,
                   _part(client, image, summary, part.section))
    return fetch


def string_table(layout: ImageLayout, client: Any) -> tuple[bytes, int]:
    """STRING_TABLE's bytes (users and groups, a few KiB) and its base, for the INODE tasks."""
    table = layout.summary.section("STRING_TABLE")
    return _part(client, layout.image, layout.summary, table), layout.summary.base(table)


def referred_ids(layout: ImageLayout, client: Any) -> bytes:
    """INODE_REFERENCE's referred inode ids in order, as little-endian int64s: a directory's
    reference child is a position in it. Read by the driver and handed to every INODE_DIR
    task: a reference is an inode renamed or deleted while a snapshot holds it, a small share
    of a namespace (8 bytes each)."""
    summary = layout.summary
    if not summary.has("INODE_REFERENCE"):
        return b""
    section = summary.section("INODE_REFERENCE")
    refs = read_referred_ids(_part(client, layout.image, summary, section),
                             base=summary.base(section))
    return struct.pack(f"<{len(refs)}Q", *refs)


def _jvm(frame: DataFrame) -> Any:
    return frame.sparkSession._jvm.hdfsevents.glue  # type: ignore[attr-defined]


def decoded_inodes(parts: DataFrame, strings: tuple[bytes, int]) -> DataFrame:
    """INODE parts (PART_DDL) -> one INODE_DDL row per inode."""
    jdf = _jvm(parts).FsImageParts.inodes(parts._jdf, strings[0], strings[1], INODE_DDL)
    return DataFrame(jdf, parts.sparkSession)


def decoded_directories(parts: DataFrame, inodes: Any, directories: Any) -> DataFrame:
    """INODE parts -> (id, name) of every directory; `inodes` and `directories` (the JVM's
    LongAccumulators) count what the decode read."""
    jdf = _jvm(parts).FsImageParts.directories(parts._jdf, inodes, directories)
    return DataFrame(jdf, parts.sparkSession)


def decoded_links(parts: DataFrame, referred: bytes) -> DataFrame:
    """INODE_DIR parts -> (child, parent) of every child listed, a reference child resolved to
    the inode it refers to through `referred` (referred_ids)."""
    return DataFrame(_jvm(parts).FsImageParts.links(parts._jdf, referred), parts.sparkSession)
