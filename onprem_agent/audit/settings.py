"""The [audit] section of agent.toml: which audit log `hdfs-events-agent audit run` tails, what it
ships, and where it keeps its position.

    [audit]
    log_dir = "/var/log/hadoop/hdfs"      # required: where log4j's RFAAUDIT appender writes
    file = "hdfs-audit.log"               # the live file; log4j rotates it to .1, .2, ...
    bucket = "hdfs-events-prod-lake-..."  # required: the lake bucket (CDK output LakeBucket)
    host = ""                             # default: this host's FQDN (one tailer per NameNode)
    read_paths = ["/data/finance"]        # reads (open, listStatus, ...) shipped only under these
    time_format = "%Y-%m-%d %H:%M:%S,%f"  # strptime of the layout's %d{ISO8601}
    timezone = "UTC"                      # the NameNode JVM's zone (log4j writes no offset)
    flush_interval_s = 10                 # an object at least this often while lines arrive
    max_batch_lines = 20000               # and at most this many lines each
    poll_interval_ms = 500                # how often the live file is checked for new lines
    metrics_interval_s = 60               # CloudWatch figures this often; 0: none
    state_file = "/var/lib/hdfs-events/audit-position.json"   # required
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from hdfs_events.audit import DEFAULT_TIME_FORMAT, TimeFormat
from onprem_agent.agent_toml import Key, Section, Values
from onprem_agent.config import hdfs_path

_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,252}")


@dataclass(frozen=True, slots=True)
class AuditSettings:
    log_dir: Path
    file: str
    bucket: str
    host: str
    state_file: Path
    read_paths: tuple[str, ...] = ()
    time_format: TimeFormat = field(default_factory=TimeFormat)
    flush_interval_s: int = 10
    max_batch_lines: int = 20_000
    poll_interval_ms: int = 500
    metrics_interval_s: int = 60


def _file_name(name: str) -> str:
    if "/" in name:
        raise ValueError(f"{name!r} must be a file name in log_dir, not a path")
    return name


def _host(host: str) -> str:
    if not _HOST.fullmatch(host):
        # Part of every object key and record identity: one plain S3 key segment.
        raise ValueError(f"{host!r} is not a host name (letters, digits, '.', '-', '_')")
    return host


def _strptime_format(pattern: str) -> str:
    try:
        datetime.strptime(datetime(2001, 2, 3, 4, 5, 6, 7000).strftime(pattern), pattern)
    except ValueError as exc:
        raise ValueError(f"{pattern!r} is not a usable strptime format: {exc}") from None
    return pattern


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{name!r} is not an IANA time zone (e.g. UTC, Europe/Paris)") from None


def _audit(v: Values) -> AuditSettings:
    log_dir, state_file = v.path("log_dir"), v.path("state_file")
    assert log_dir is not None and state_file is not None  # required keys
    try:
        host = v["host"] or _host(socket.getfqdn())
    except ValueError as exc:
        raise v.error("host", str(exc)) from None
    return AuditSettings(
        log_dir=log_dir, file=v["file"], bucket=v["bucket"], host=host, state_file=state_file,
        read_paths=tuple(p.rstrip("/") or "/" for p in v["read_paths"]),
        time_format=TimeFormat(strptime=v["time_format"], zone=v["timezone"]),
        flush_interval_s=v["flush_interval_s"], max_batch_lines=v["max_batch_lines"],
        poll_interval_ms=v["poll_interval_ms"], metrics_interval_s=v["metrics_interval_s"])


AUDIT = Section("audit", {
    "log_dir": Key(str, required=True),  # relative: to the config file, as [checkpoint] path
    "file": Key(str, "hdfs-audit.log", parse=_file_name),
    "bucket": Key(str, required="the lake bucket: CDK output LakeBucket"),
    "host": Key(str, parse=_host),  # default: this host's FQDN (one tailer per NameNode)
    "read_paths": Key(list, (), parse=hdfs_path),
    "time_format": Key(str, DEFAULT_TIME_FORMAT, parse=_strptime_format),
    "timezone": Key(str, ZoneInfo("UTC"), parse=_zone),
    "flush_interval_s": Key(int, 10, low=1, high=3600),
    # 20,000 lines of ~250 bytes gzip to well under 1 MB: one PutObject, no multipart.
    "max_batch_lines": Key(int, 20_000, low=1, high=1_000_000),
    "poll_interval_ms": Key(int, 500, low=10, high=60_000),
    "metrics_interval_s": Key(int, 60, low=0, high=3600),
    "state_file": Key(str, required=True),
}, build=_audit, absent="required for `audit run` (log_dir, bucket and state_file at least)")
