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

from onprem_agent.config import AgentConfig, ConfigError
from onprem_agent.filters import UPLOAD_IN_PROGRESS
from onprem_agent.live.settings import _arn, _bounded, _Section

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


def load_sync_settings(config: AgentConfig) -> SyncSettings:
    s = _Section(config, "sync")
    s.check_keys(("destination", "table", "paths", "ignore_patterns", "preserve", "workers",
                  "part_size_mb", "multipart_threshold_mb", "bandwidth_mb_s", "buffer_mb",
                  "long_copy_mb", "window_ms",
                  "max_window_events", "max_attempts", "alert_topic_arn", "kms_key_id"))
    destination = s.get("destination", str, None)
    if destination is None:
        raise s.error("destination", "required (s3://bucket/prefix)")
    if not destination.startswith("s3://") or not destination[5:].split("/", 1)[0]:
        raise s.error("destination", f"must be s3://bucket/prefix, got {destination!r}")
    bucket, _, prefix = destination[5:].partition("/")
    prefix = prefix.strip("/")
    table = s.get("table", str, None)
    if table is None:
        raise s.error("table", "required (the sync state table the CDK app creates)")
    paths = s.strings("paths", config.filter.cover_dirs or ("/",))
    for p in paths:
        if not p.startswith("/"):
            raise s.error("paths", f"{p!r} is not an absolute HDFS path")
    preserve = s.strings("preserve", PRESERVABLE)
    for p in preserve:
        if p not in PRESERVABLE:
            raise s.error("preserve", f"{p!r} is not one of {', '.join(PRESERVABLE)}")
    part_mb = _bounded(s, "part_size_mb", 8, _MIN_PART_MB, _MAX_PART_MB)
    threshold_mb = _bounded(s, "multipart_threshold_mb", 8, 0, _MAX_PART_MB)
    buffer_mb = _bounded(s, "buffer_mb", 256, 1, 1024 * 1024)
    if buffer_mb < max(part_mb, threshold_mb):
        # One part, or one file below the threshold (a single PutObject), is held whole.
        raise s.error("buffer_mb", f"must be at least part_size_mb ({part_mb}) and "
                      f"multipart_threshold_mb ({threshold_mb}), got {buffer_mb}")
    kms_key_id = s.get("kms_key_id", str, None)
    if kms_key_id is not None and not _KMS_KEY_ARN.fullmatch(kms_key_id):
        raise s.error("kms_key_id", "must be a KMS key ARN (arn:aws:kms:<region>:<account>:"
                      f"key/<id>), got {kms_key_id!r}")
    return SyncSettings(
        bucket=bucket, prefix=prefix + "/" if prefix else "", table=table, paths=paths,
        # An upload's temporary file is never copied (it may be partial, and its final name
        # follows), while the agent itself must ship its events: added to [filter]'s here.
        ignore_patterns=s.strings("ignore_patterns", tuple(dict.fromkeys(
            (*config.filter.ignore_patterns, UPLOAD_IN_PROGRESS)))),
        preserve=preserve, workers=_bounded(s, "workers", 4, 1, 64), part_size=part_mb * MIB,
        multipart_threshold=threshold_mb * MIB,
        bandwidth_bytes_s=_bounded(s, "bandwidth_mb_s", 0, 0, 100_000) * MIB,
        buffer_bytes=buffer_mb * MIB,
        long_copy_bytes=_bounded(s, "long_copy_mb", 64, 0, 5 * 1024 * 1024) * MIB,
        window_ms=_bounded(s, "window_ms", 1000, 0, 600_000),
        max_window_events=_bounded(s, "max_window_events", 10_000, 1, 1_000_000),
        max_attempts=_bounded(s, "max_attempts", 5, 1, 20),
        alert_topic_arn=_arn(s, "alert_topic_arn"), kms_key_id=kms_key_id)


def check_sync_config(config: AgentConfig) -> SyncSettings:
    """load_sync_settings, or a ConfigError naming the file when [sync] is absent."""
    if not config.section("sync"):
        raise ConfigError(f"{config.path.name}: [sync]: required for `sync` "
                          "(destination and table at least)")
    return load_sync_settings(config)
