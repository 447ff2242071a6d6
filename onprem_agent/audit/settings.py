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
from onprem_agent.config import AgentConfig, ConfigError
from onprem_agent.live.settings import _bounded, _Section

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


def load_audit_settings(config: AgentConfig) -> AuditSettings:
    s = _Section(config, "audit")
    if not config.section("audit"):
        raise ConfigError(f"{config.path.name}: [audit]: required for `audit run` "
                          "(log_dir, bucket and state_file at least)")
    s.check_keys(("log_dir", "file", "bucket", "host", "read_paths", "time_format", "timezone",
                  "flush_interval_s", "max_batch_lines", "poll_interval_ms",
                  "metrics_interval_s", "state_file"))
    log_dir = _path(config, s, "log_dir")
    state_file = _path(config, s, "state_file")
    bucket = s.get("bucket", str, None)
    if bucket is None:
        raise s.error("bucket", "required (the lake bucket: CDK output LakeBucket)")
    name = s.get("file", str, "hdfs-audit.log")
    if "/" in name:
        raise s.error("file", f"{name!r} must be a file name in log_dir, not a path")
    host = s.get("host", str, None) or socket.getfqdn()
    if not _HOST.fullmatch(host):
        # Part of every object key and record identity: one plain S3 key segment.
        raise s.error("host", f"{host!r} is not a host name (letters, digits, '.', '-', '_')")
    read_paths = s.strings("read_paths", ())
    for p in read_paths:
        if not p.startswith("/"):
            raise s.error("read_paths", f"{p!r} is not an absolute HDFS path")
    return AuditSettings(
        log_dir=log_dir, file=name, bucket=bucket, host=host, state_file=state_file,
        read_paths=tuple(p.rstrip("/") or "/" for p in read_paths),
        time_format=_time_format(s),
        flush_interval_s=_bounded(s, "flush_interval_s", 10, 1, 3600),
        # 20,000 lines of ~250 bytes gzip to well under 1 MB: one PutObject, no multipart.
        max_batch_lines=_bounded(s, "max_batch_lines", 20_000, 1, 1_000_000),
        poll_interval_ms=_bounded(s, "poll_interval_ms", 500, 10, 60_000),
        metrics_interval_s=_bounded(s, "metrics_interval_s", 60, 0, 3600))


def _time_format(s: _Section) -> TimeFormat:
    pattern = s.get("time_format", str, DEFAULT_TIME_FORMAT)
    try:
        datetime.strptime(datetime(2001, 2, 3, 4, 5, 6, 7000).strftime(pattern), pattern)
    except ValueError as exc:
        raise s.error("time_format", f"{pattern!r} is not a usable strptime format: {exc}"
                      ) from None
    zone_name = s.get("timezone", str, "UTC")
    try:
        zone = ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError):
        raise s.error("timezone", f"{zone_name!r} is not an IANA time zone "
                      "(e.g. UTC, Europe/Paris)") from None
    return TimeFormat(strptime=pattern, zone=zone)


def _path(config: AgentConfig, s: _Section, key: str) -> Path:
    value = s.get(key, str, None)
    if value is None:
        raise s.error(key, "required")
    raw = Path(value).expanduser()
    # Relative to the config file, as [checkpoint] path is.
    return raw if raw.is_absolute() else config.path.parent / raw
