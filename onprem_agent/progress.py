"""Progress of a shipping run: one line refreshed in place on a terminal, log lines otherwise."""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass
from typing import TextIO

log = logging.getLogger("onprem_agent.progress")

_TTY_REFRESH_S = 0.5


@dataclass(frozen=True, slots=True)
class ProgressSnapshot:
    events_read: int
    events_filtered: int
    events_sent: int
    messages: int
    last_txid: int | None  # the newest txid read from the source
    checkpoint_txid: int | None
    elapsed_s: float
    manifests: int = 0  # manifests acknowledged by SQS (not counted in `messages`)


class ProgressReporter:
    """Turns snapshots into output no more often than its interval."""

    def __init__(self, stream: TextIO | None = None, *, interval_s: float = 10.0,
                 tty: bool | None = None, clock=time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval_s = _TTY_REFRESH_S if self.tty else interval_s
        self._clock = clock
        self._last_at: float | None = None
        self._last_sent = 0
        self._line_open = False

    def update(self, snap: ProgressSnapshot, *, force: bool = False) -> None:
        now = self._clock()
        if not force and self._last_at is not None and now - self._last_at < self.interval_s:
            return
        span = now - self._last_at if self._last_at is not None else snap.elapsed_s
        rate = (snap.events_sent - self._last_sent) / span if span > 0 else 0.0
        self._last_at, self._last_sent = now, snap.events_sent
        line = format_progress(snap, rate)
        if self.tty:
            self.stream.write("\r\x1b[2K" + line)
            self.stream.flush()
            self._line_open = True
        else:
            log.info("%s", line)

    def close(self, snap: ProgressSnapshot | None = None) -> None:
        if snap is not None:
            self.update(snap, force=True)
        if self.tty and self._line_open:
            self.stream.write("\n")
            self.stream.flush()
            self._line_open = False


def format_progress(snap: ProgressSnapshot, rate: float) -> str:
    return (f"events read {snap.events_read:,} (filtered out {snap.events_filtered:,}), "
            f"sent {snap.events_sent:,} in {snap.messages:,} messages; "
            f"txid {_txid(snap.last_txid)}, checkpoint {_txid(snap.checkpoint_txid)}; "
            f"{rate:,.0f} events/s")


def _txid(txid: int | None) -> str:
    return "-" if txid is None else str(txid)
