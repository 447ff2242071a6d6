"""Audit lines to lake objects: which lines go (`is_shipped`), the object they make
(`build_object`, pure), and the loop that reads, writes and moves the position (`AuditShipper`).

One object holds the lines of one file from one offset: its key (host, file id, first offset) is
the same when a crash makes the agent read those lines again, so S3 keeps one copy; what was read
past the saved position is read again from it, a superset of the lost object's lines. Unshipped
lines (reads outside read_paths) still move the position.
"""

from __future__ import annotations

import gzip
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from hdfs_events.audit import MUTATING_COMMANDS, AuditRecord, LineSource, TimeFormat, parse_line
from hdfs_events.lake_layout import audit_object_key
from onprem_agent.audit.logfiles import AuditTailer, Chunk
from onprem_agent.audit.metrics import AuditCounters
from onprem_agent.audit.position import TailPosition, save_position
from onprem_agent.audit.settings import AuditSettings

log = logging.getLogger(__name__)

_MAX_BACKOFF_S = 60.0


def is_shipped(record: AuditRecord, read_paths: Iterable[str]) -> bool:
    """Every mutating command, every denial, every line that did not parse; a read only when it
    touches a path under one of read_paths (reads are most of an audit log's volume)."""
    if record.reason is not None or record.allowed is False or record.cmd in MUTATING_COMMANDS:
        return True
    return any(_under(path, prefix) for path in (record.src, record.dst) if path
               for prefix in read_paths)


def _under(path: str, prefix: str) -> bool:
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


@dataclass(frozen=True, slots=True)
class AuditObject:
    key: str | None  # None: no line of the chunk is shipped
    body: bytes
    records: tuple[AuditRecord, ...]  # the shipped ones
    end: TailPosition  # where the next object starts


def build_object(cluster: str, host: str, chunk: Chunk, *, read_paths: Iterable[str],
                 time_format: TimeFormat, now_ms: Callable[[], int]) -> AuditObject:
    prefixes = tuple(read_paths)
    parsed = [parse_line(text.decode("utf-8", "replace").rstrip("\r"), cluster,
                         LineSource(host, chunk.file_id, offset), time_format)
              for offset, text in chunk.lines]
    kept = tuple(r for r in parsed if is_shipped(r, prefixes))
    end = TailPosition(chunk.file_id, chunk.end)
    if not kept:
        return AuditObject(None, b"", (), end)
    # The hour of the chunk's first timed line: the same line opens the chunk when it is read
    # again, so the key is the same. A chunk of unreadable lines only falls back to the clock.
    first_time = next((r.time for r in parsed if r.time is not None), None)
    key = audit_object_key(cluster, now_ms() if first_time is None else first_time, host,
                           chunk.file_id, chunk.lines[0][0])
    text = "".join(json.dumps(r.to_json(), separators=(",", ":"), ensure_ascii=False) + "\n"
                   for r in kept)
    # mtime=0: the same lines give the same bytes, so a re-sent object is identical.
    return AuditObject(key, gzip.compress(text.encode(), compresslevel=6, mtime=0), kept, end)


class LakeWriter:
    """PutObject into the lake bucket (the principal may write its own cluster's prefix only)."""

    def __init__(self, bucket: str, client: Any) -> None:
        self.bucket, self._s3 = bucket, client

    def put(self, key: str, body: bytes) -> None:
        self._s3.put_object(Bucket=self.bucket, Key=key, Body=body,
                            ContentType="application/x-ndjson", ContentEncoding="gzip")


class AuditShipper:
    """Reads, batches and writes until `stop` is set; then writes what it holds and returns."""

    def __init__(self, cluster: str, settings: AuditSettings, tailer: AuditTailer,
                 writer: LakeWriter, counters: AuditCounters, stop: threading.Event, *,
                 clock: Callable[[], float] = time.time,
                 publish: Callable[[], None] = lambda: None) -> None:
        self.cluster, self.settings, self.tailer = cluster, settings, tailer
        self.writer, self.counters, self.stop = writer, counters, stop
        self._clock, self._publish = clock, publish
        self._pending: list[tuple[int, bytes]] = []
        self._pending_file: str | None = None
        self._pending_end = 0
        self._pending_since = 0.0
        self.objects_written = 0

    def run(self) -> None:
        s = self.settings
        while not self.stop.is_set():
            chunk = self.tailer.read(s.max_batch_lines - len(self._pending))
            if chunk is not None:
                if self._pending and chunk.file_id != self._pending_file:
                    self._flush()
                self._hold(chunk)
            full = len(self._pending) >= s.max_batch_lines
            due = self._pending and self._clock() - self._pending_since >= s.flush_interval_s
            if full or due:
                self._flush()
            self._publish()
            if chunk is None:
                self.stop.wait(s.poll_interval_ms / 1000)
        self._flush()

    def _hold(self, chunk: Chunk) -> None:
        if not self._pending:
            self._pending_since = self._clock()
        self._pending_file = chunk.file_id
        self._pending.extend(chunk.lines)
        self._pending_end = chunk.end

    def _flush(self) -> None:
        if not self._pending or self._pending_file is None:
            return
        chunk = Chunk(self._pending_file, self._pending, self._pending_end)
        obj = build_object(self.cluster, self.settings.host, chunk,
                           read_paths=self.settings.read_paths,
                           time_format=self.settings.time_format,
                           now_ms=lambda: int(self._clock() * 1000))
        if obj.key is not None:
            self._put(obj.key, obj.body)
            self.objects_written += 1
        # Only now: a crash before this line re-reads the lines into the same key.
        save_position(self.settings.state_file, obj.end)
        self.counters.count(obj.records)
        self._pending, self._pending_file = [], None

    def _put(self, key: str, body: bytes) -> None:
        """Retries a failed PutObject (after botocore's own retries) until it is written: the
        lines stay in the log file meanwhile, and the position does not move."""
        backoff = 1.0
        while True:
            try:
                self.writer.put(key, body)
                return
            except Exception as exc:  # botocore raises many types; the lines wait in the log
                log.warning("audit: PutObject %s failed (%s); again in %.0f s", key, exc, backoff)
                # Still publish: the growing AuditLagSeconds is what the audit-lag alarm sees.
                self._publish()
                if self.stop.wait(backoff):
                    raise
                backoff = min(backoff * 2, _MAX_BACKOFF_S)
