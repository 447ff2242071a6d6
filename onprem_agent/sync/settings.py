"""The [sync] section of agent.toml: what `hdfs-events-agent sync` replicates, and where.

    [sync]
    destination = "s3://bucket/prefix"   # required; keys are <prefix>/<HDFS path without "/">
    table = "hdfs-events-sync"           # required: the sync state table (CDK: storage stack)
    paths = ["/data/finance"]            # else [filter] cover_dirs, else ["/"]
    ignore_patterns = ["\\._COPYING_$"]  # else [filter] ignore_patterns + "\\._COPYING_$"
    preserve = ["owner", "group", "permissions", "replication", "mtime"]  # as object metadata
    workers = 4                          # steps of one phase run this many at a time
    part_size_mb = 8                     # multipart part size (S3: 5 MiB minimum, 10,000 parts)
    multipart_threshold_mb = 8           # smaller files: one PutObject
    bandwidth_mb_s = 0                   # read+write cap over all workers; 0 = none
    buffer_mb = 256                      # request bodies held in memory at once, all workers
                                         # together (>= part_size_mb, multipart_threshold_mb)
    window_ms = 1000                     # how long events gather before their steps run
    long_copy_mb = 64                    # a window's copy of a file this big or more runs
                                         # beside the next windows (0: never)
    max_window_events = 10000
    max_attempts = 5                     # per step, for AWS/HDFS I/O failures and checksum
                                         # mismatches; then the path is parked
    alert_topic_arn = ""                 # SNS topic for parked paths
    kms_key_id = "arn:aws:kms:eu-west-1:111122223333:key/..."  # objects SSE-KMS under it;
                                         # else the bucket's default encryption
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from onprem_agent.agent_toml import Key, Section, Values
from onprem_agent.config import FILTER, hdfs_path
from onprem_agent.filters import UPLOAD_IN_PROGRESS
from onprem_agent.live.settings import sns_topic_arn

PRESERVABLE = ("owner", "group", "permissions", "replication", "mtime")
MIB = 1024 * 1024
# S3's multipart limits: parts of 5 MiB at least (but the last) and 5 GiB at most.
_MIN_PART_MB, _MAX_PART_MB = 5, 5 * 1024
# A key's ARN, not an alias or a bare id: the on-prem principal's grant names it (IAM matches a
# key by its ARN; a policy cannot name a key through an alias).
_KMS_KEY_ARN = re.compile(r"arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]+")


@dataclass(frozen=True, slots=True)
class SyncSettings:
    bucket: str
    prefix: str  # "" or ends with "/"
    table: str
    paths: tuple[str, ...]
    ignore_patterns: tuple[str, ...]
    preserve: tuple[str, ...] = PRESERVABLE
    workers: int = 4
    part_size: int = 8 * MIB
    multipart_threshold: int = 8 * MIB
    bandwidth_bytes_s: int = 0
    buffer_bytes: int = 256 * MIB
    long_copy_bytes: int = 64 * MIB
    window_ms: int = 1000
    max_window_events: int = 10_000
    max_attempts: int = 5
    alert_topic_arn: str | None = None
    kms_key_id: str | None = None  # SSE-KMS key of the destination's objects (ARN)

    @property
    def destination(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


def _destination(uri: str) -> tuple[str, str]:
    """(bucket, prefix: "" or ending in "/")."""
    if not uri.startswith("s3://") or not uri[5:].split("/", 1)[0]:
        raise ValueError(f"must be s3://bucket/prefix, got {uri!r}")
    bucket, _, prefix = uri[5:].partition("/")
    prefix = prefix.strip("/")
    return bucket, prefix + "/" if prefix else ""


def _kms_key_arn(value: str) -> str:
    if not _KMS_KEY_ARN.fullmatch(value):
        raise ValueError("must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>), got "
                         f"{value!r}")
    return value


def _sync(v: Values) -> SyncSettings:
    part_mb, threshold_mb, buffer_mb = (v["part_size_mb"], v["multipart_threshold_mb"],
                                        v["buffer_mb"])
    if buffer_mb < max(part_mb, threshold_mb):
        # One part, or one file below the threshold (a single PutObject), is held whole.
        raise v.error("buffer_mb", f"must be at least part_size_mb ({part_mb}) and "
                      f"multipart_threshold_mb ({threshold_mb}), got {buffer_mb}")
    bucket, prefix = v["destination"]
    given = v.read(FILTER)
    return SyncSettings(
        bucket=bucket, prefix=prefix, table=v["table"],
        paths=v["paths"] if v["paths"] is not None else given.cover_dirs or ("/",),
        # An upload's temporary file is never copied (it may be partial, and its final name
        # follows), while the agent itself must ship its events: added to [filter]'s here.
        ignore_patterns=v["ignore_patterns"] if v["ignore_patterns"] is not None else tuple(
            dict.fromkeys((*given.ignore_patterns, UPLOAD_IN_PROGRESS))),
        preserve=v["preserve"], workers=v["workers"], part_size=part_mb * MIB,
        multipart_threshold=threshold_mb * MIB, bandwidth_bytes_s=v["bandwidth_mb_s"] * MIB,
        buffer_bytes=buffer_mb * MIB, long_copy_bytes=v["long_copy_mb"] * MIB,
        window_ms=v["window_ms"], max_window_events=v["max_window_events"],
        max_attempts=v["max_attempts"], alert_topic_arn=v["alert_topic_arn"],
        kms_key_id=v["kms_key_id"])


SYNC = Section("sync", {
    "destination": Key(str, required="s3://bucket/prefix", parse=_destination),
    "table": Key(str, required="the sync state table the CDK app creates"),
    "paths": Key(list, parse=hdfs_path),  # default: [filter] cover_dirs, else "/"
    "ignore_patterns": Key(list),  # default: [filter] ignore_patterns + UPLOAD_IN_PROGRESS
    "preserve": Key(list, PRESERVABLE, one_of=PRESERVABLE),
    "workers": Key(int, 4, low=1, high=64),
    "part_size_mb": Key(int, 8, low=_MIN_PART_MB, high=_MAX_PART_MB),
    "multipart_threshold_mb": Key(int, 8, low=0, high=_MAX_PART_MB),
    "bandwidth_mb_s": Key(int, 0, low=0, high=100_000),
    "buffer_mb": Key(int, 256, low=1, high=1024 * 1024),
    "long_copy_mb": Key(int, 64, low=0, high=5 * 1024 * 1024),
    "window_ms": Key(int, 1000, low=0, high=600_000),
    "max_window_events": Key(int, 10_000, low=1, high=1_000_000),
    "max_attempts": Key(int, 5, low=1, high=20),
    "alert_topic_arn": Key(str, parse=sns_topic_arn),
    "kms_key_id": Key(str, parse=_kms_key_arn),
}, build=_sync, absent="required for `sync` (destination and table at least)")
