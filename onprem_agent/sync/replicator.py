"""Runs the sync: windows of events planned (onprem_agent.sync.plan), their steps executed against
HDFS and S3, the replicated txid saved after each window; listings (first start, after a GAP)
reconciled whole. Nothing here reads a config file or starts a JVM: commands/sync.py builds the
parts and hands them in.

Execution rules (docs/sync.md):
- Phases in order (server-side copies, copies from HDFS, deletes, relists, metadata); within a
  phase, steps run `workers` at a time, each on its own key. That is the per-path lock: two
  steps of one window never touch one key at the same time, and windows run one after another.
- A step reconciles its key with HDFS as it is *now*: when its path holds no closed file (gone,
  open for write, a directory) it is carried to the next window (pending), whose events say
  where the file went or what replaced it.
- A listing, and a window's relists, are followed by the NameNode's txid when they ended
  (`current_txid`): renames up to it relist their destination (plan.py: a listing is not
  atomic).
- Only I/O failures (boto3/botocore errors, Java IOExceptions) and checksum mismatches are
  retried, with exponential backoff, `max_attempts` times; then the path is parked with the
  last reason, a SyncParkedPaths metric and an alert. Anything else is a poison path: parked at
  once, never retried. A parked path does not hold the window back; its next successful step
  unparks it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from hdfs_events.event import EventType, HdfsEvent
from onprem_agent.live.snapshot import NamespaceLister, walk
from onprem_agent.source import TxBatch
from onprem_agent.sync.hdfs_files import SUPPORTED_CHECKSUMS, FileGone, HdfsFiles
from onprem_agent.sync.plan import (
    FileState,
    Scope,
    Steps,
    bytes_to_copy,
    listed_files,
    plan_window,
    reconcile,
    resolve,
    under,
)
from onprem_agent.sync.replica import (
    ChecksumMismatch,
    Counters,
    S3Replica,
    Throttle,
    Yielding,
)
from onprem_agent.sync.settings import SyncSettings
from onprem_agent.sync.state import PENDING_COPY, PENDING_RELIST, SyncState

log = logging.getLogger(__name__)


class PoisonPath(Exception):
    """A path the sync cannot replicate whatever it retries (the message says why)."""


def transient_errors() -> tuple[type[BaseException], ...]:
    """What is retried: AWS and HDFS I/O failures and checksum mismatches."""
    from botocore.exceptions import BotoCoreError, ClientError

    errors: list[type[BaseException]] = [BotoCoreError, ClientError, ChecksumMismatch, OSError]
    try:
        import jpype

        if jpype.isJVMStarted():
            errors.append(jpype.JClass("java.io.IOException"))
    except ImportError:  # pragma: no cover - JPype is a dependency
        pass
    return tuple(errors)


@dataclass(slots=True)
class SyncStats:
    """Read by `sync status`'s lag figures and the metrics; written by the loop's thread."""

    windows: int = 0
    listings: int = 0
    replicated_txid: int | None = None
    oldest_unapplied_ms: int | None = None  # NameNode time of the oldest event not yet applied
    parked: set[str] = field(default_factory=set)
    window_bytes: int = 0  # what the running window's copies read (plan.bytes_to_copy)
    copied_before_window: int = 0  # the replica's byte count when the window started


@dataclass(frozen=True, slots=True)
class WindowFigures:
    """What one applied window tells the operator (CloudWatch: sync_metrics)."""

    txid: int
    lag_s: float | None  # now - NameNode time of the window's oldest event (None: a listing)
    bytes: int
    uploads: int
    parked: int
    s3_retries: int = 0  # requests botocore sent again (S3 SlowDown, other throttles, 5xx)


def progress_metrics(cluster: str, windows: Windows, now_s: float) -> list[dict[str, Any]]:
    """What the sync publishes every heartbeat, also while a long window runs: the lag in bytes
    (SyncBytesPending) and, when events wait, in seconds."""
    from hdfs_events import names
    from onprem_agent.opsmetrics import cloudwatch_datum

    data = [cloudwatch_datum(cluster, names.METRIC_SYNC_BYTES_PENDING, windows.bytes_pending(),
                             "Bytes")]
    oldest = windows.oldest_unapplied_ms()
    if oldest is not None:
        data.append(cloudwatch_datum(cluster, names.METRIC_SYNC_LAG_SECONDS,
                                     max(0.0, now_s - oldest / 1000), "Seconds"))
    return data


def sync_metrics(cluster: str, figures: WindowFigures) -> list[dict[str, Any]]:
    """The window's CloudWatch data (names in hdfs_events.names)."""
    from hdfs_events import names
    from onprem_agent.opsmetrics import cloudwatch_datum

    data = [cloudwatch_datum(cluster, names.METRIC_SYNC_BYTES, figures.bytes, "Bytes"),
            cloudwatch_datum(cluster, names.METRIC_SYNC_PARKED, figures.parked),
            cloudwatch_datum(cluster, names.METRIC_SYNC_S3_RETRIES, figures.s3_retries)]
    if figures.lag_s is not None:
        data.append(cloudwatch_datum(cluster, names.METRIC_SYNC_LAG_SECONDS, figures.lag_s,
                                     "Seconds"))
    return data


class WindowTurns:
    """Windows before long copies: a copy beside the windows reads its next chunk only while no
    window runs, or once the running one has had `share_s` to itself (a long copy is never
    starved by back-to-back windows). Measured in bench.sync (docs/sync.md "Measured"): with
    a 1 GB copy reading and sending beside them on 2 cores, every step of a window of small
    files waited for CPU behind it, its parts and moto's handling of them."""

    def __init__(self, share_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._share, self._clock = share_s, clock
        self._cond = threading.Condition()
        self._since: float | None = None

    @contextmanager
    def window(self) -> Iterator[None]:
        with self._cond:
            self._since = self._clock()
        try:
            yield
        finally:
            with self._cond:
                self._since = None
                self._cond.notify_all()

    def wait_turn(self) -> None:
        with self._cond:
            while self._since is not None:
                left = self._since + self._share - self._clock()
                if left <= 0:
                    return
                self._cond.wait(left)


class Replicator:
    def __init__(self, settings: SyncSettings, *, hdfs: HdfsFiles, lister: NamespaceLister,
                 replica: S3Replica, state: SyncState, current_txid: Callable[[], int],
                 on_park: Callable[[str, str], None] | None = None,
                 on_window: Callable[[WindowFigures], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep, backoff_s: float = 0.2) -> None:
        self.settings, self.hdfs, self.lister = settings, hdfs, lister
        self._current_txid = current_txid
        self.replica, self.state = replica, state
        self.scope = Scope.of(settings.paths, settings.ignore_patterns)
        self.throttle = Throttle(settings.bandwidth_bytes_s)
        self.turns = WindowTurns(settings.window_ms / 1000)
        self.stats = SyncStats()
        self._on_park, self._on_window = on_park, on_window
        self._sleep, self._backoff = sleep, backoff_s
        self._transient = transient_errors()
        status = state.status()
        self.stats.replicated_txid = status.txid
        self.stats.parked = {p.path for p in status.parked}
        self._pending: dict[str, str] = dict(status.pending)
        self._listed_through = status.listed_through
        self._gone: dict[str, str] = {}
        self._lock = threading.Lock()
        self._txid = status.txid or 0
        # Copies of long_copy_mb and more, running beside later windows (path -> thread); each
        # is pending in the state table until it ends, so a restart copies it again.
        self._beside: dict[str, threading.Thread] = {}
        self._gone_beside: set[str] = set()  # ended FileGone: pending for the next window
        self._in_window = False
        self._counted = Counters()  # the replica's counters when the last window ended

    @property
    def resume_after(self) -> int | None:
        return self.stats.replicated_txid

    def bytes_pending(self) -> int:
        """What the running window has still to copy (0 between windows)."""
        done = self.replica.counters.bytes - self.stats.copied_before_window
        return max(0, self.stats.window_bytes - done)

    # -- windows and listings -------------------------------------------------------------------
    def apply_window(self, events: Sequence[HdfsEvent], last_txid: int) -> Steps:
        relists = [p for p, k in self._pending.items() if k == PENDING_RELIST]
        self.await_copies_under([*(e.path for e in events),
                                 *(e.dst_path for e in events if e.dst_path), *relists])
        with self._lock:
            beside = set(self._beside)
        plan = plan_window(
            events, self.scope,
            pending_copies=[p for p, k in self._pending.items()
                            if k == PENDING_COPY and p not in beside],
            pending_relists=[p for p, k in self._pending.items() if k == PENDING_RELIST],
            listed_through=self._listed_through)
        steps = resolve(plan, self.replica.paths_under(plan.touched) if plan.touched else set())
        self._in_window = True
        try:
            with self.turns.window():
                self._run(steps, last_txid, plan.first_txid, oldest_ms=_oldest(events),
                          window_bytes=bytes_to_copy(events, self.scope))
        finally:
            self._in_window = False
        self.stats.windows += 1
        return steps

    def await_copies_under(self, paths: Iterable[str] | None = None) -> None:
        """Waits for the copies running beside the windows at or under any of `paths` (all of
        them: None). The per-path lock across windows: a later window's step on such a path
        (a rename moving its object, a delete, a new copy) runs after the copy, as if the copy
        had been its own earlier window."""
        roots = None if paths is None else list(paths)
        with self._lock:
            running = [(p, t) for p, t in self._beside.items()
                       if roots is None or any(under(p, r) for r in roots)]
        for _, thread in running:
            thread.join()

    def apply_listing(self, batch: TxBatch) -> Steps:
        """A SNAPSHOT batch (the covered namespace at txid T): copy what differs, delete what
        HDFS no longer has; pending paths are superseded by the listing."""
        self.await_copies_under()  # a listing supersedes every pending copy
        # Read once the listing has ended: every rename that may have moved a file across it
        # (from a directory not yet listed into one already listed) has a txid up to here.
        self._listed_through = self._current_txid()
        hdfs = listed_files(batch.events, self.scope)
        s3: dict[str, FileState] = {}
        for root in self.settings.paths:
            s3.update(self.replica.states_under(root))
        steps = reconcile(hdfs, s3).steps()  # an object at an ignored path is stale too
        self._run(steps, batch.txid, batch.txid, oldest_ms=None,
                  window_bytes=sum(hdfs[p].size for p in steps.copies if p in hdfs))
        self.stats.listings += 1
        return steps

    def _run(self, steps: Steps, txid: int, first_txid: int | None, *,
             oldest_ms: int | None, window_bytes: int) -> None:
        self._txid = txid
        self.stats.oldest_unapplied_ms = oldest_ms
        # Totals since the last window's end, not this one's start: a copy beside the windows
        # may end between two windows.
        before = self._counted
        started, started_at = time.monotonic(), time.time()
        self.stats.copied_before_window = self.replica.counters.bytes
        self.stats.window_bytes = window_bytes
        if steps.count:
            self.state.window_started(first_txid, txid, steps.count)
        self._gone = {}
        self._execute(steps)
        if steps.relists:
            # A relist is a listing too: a rename out of its root before the walk got there
            # (a txid up to here, in a later window) finds no key to move (plan.py).
            self._listed_through = self._current_txid()
        with self._lock:
            previous = self._pending
            self._pending = {**{p: PENDING_COPY for p in (*self._beside, *self._gone_beside)},
                             **self._gone}
            self._gone_beside.clear()
            if previous != self._pending:
                self.state.set_pending(self._pending, previous)
        done = self.replica.counters
        totals = {name: getattr(done, name) - getattr(before, name) for name in Counters.__slots__}
        self._counted = Counters()
        self._counted.add(done)
        self.state.save_txid(txid, totals, listed_through=self._listed_through)
        if steps.count:
            self.state.window_done()
        self.stats.replicated_txid = txid
        self.stats.oldest_unapplied_ms = None
        self.stats.window_bytes = 0
        # The lag's parts (docs/sync.md "Measured"): how long the window's events waited
        # before it ran, and how long it ran.
        waited = None if oldest_ms is None else started_at - oldest_ms / 1000
        log.info("replicated through txid %d in %.0f ms%s: %s", txid,
                 (time.monotonic() - started) * 1000,
                 "" if waited is None else f" (oldest event {waited * 1000:.0f} ms old at start)",
                 _describe(steps, totals))
        if self._on_window is not None:
            lag_s = None if oldest_ms is None else max(0.0, time.time() - oldest_ms / 1000)
            self._on_window(WindowFigures(txid=txid, lag_s=lag_s, bytes=totals["bytes"],
                                          uploads=totals["uploads"], parked=len(self.stats.parked),
                                          s3_retries=totals["retries"]))

    def _execute(self, steps: Steps) -> None:
        self._each([(dst, lambda s=src, d=dst: self._server_copy(s, d))
                    for src, dst in steps.server_copies])
        appends = set(steps.appends)
        self._each([(p, lambda p=p: self._copy(p, appended=p in appends))
                    for p in steps.copies])
        self._each([(p, lambda p=p: self.replica.delete(p)) for p in steps.deletes])
        for root in steps.relists:
            self._relist(root)
        self._each([(p, lambda p=p: self._metadata(p)) for p in steps.metadata])

    def _each(self, work: list[tuple[str, Callable[[], None]]]) -> None:
        if not work:
            return
        if len(work) == 1 or self.settings.workers == 1:
            for path, fn in work:
                self._attempt(path, fn)
            return
        with ThreadPoolExecutor(self.settings.workers, thread_name_prefix="sync") as pool:
            for f in [pool.submit(self._attempt, path, fn) for path, fn in work]:
                f.result()

    # -- one step, retried -------------------------------------------------------------------------
    def _attempt(self, path: str, fn: Callable[[], None]) -> bool:
        """True when the step ran; False when it is pending (FileGone) or parked."""
        attempts = self.settings.max_attempts
        for attempt in range(1, attempts + 1):
            try:
                fn()
            except FileGone:
                with self._lock:
                    self._gone[path] = PENDING_COPY
                return False
            except self._transient as exc:
                reason = f"{type(exc).__name__}: {exc}"
                if attempt == attempts:
                    self._park(path, reason, attempt)
                    return False
                log.warning("sync %s: attempt %d of %d failed: %s", path, attempt, attempts,
                            reason)
                self._sleep(min(self._backoff * 2 ** (attempt - 1), 30.0))
                continue
            except Exception as exc:  # a poison path: retrying cannot help
                self._park(path, f"{type(exc).__name__}: {exc}", attempt)
                return False
            if path in self.stats.parked:
                self.state.unpark(path)
                with self._lock:
                    self.stats.parked.discard(path)
            return True
        return False

    def _park(self, path: str, reason: str, attempts: int) -> None:
        log.error("sync %s: parked after %d attempt(s): %s", path, attempts, reason)
        self.state.park(path, reason, self._txid, attempts)
        with self._lock:
            self.stats.parked.add(path)
        if self._on_park is not None:
            self._on_park(path, reason)

    # -- the steps ------------------------------------------------------------------------------------
    def _closed_file(self, path: str) -> Any:
        """The file's status when it is a closed file; FileGone otherwise (the step is pending).

        Not a closed file is not "nothing to do": the file the window's event named may have
        been renamed away and another put in its place (a new file still open, a directory)
        before the step ran; the rename in a later window then moves the pending step to the
        file's new name. The same file appended again is pending until its CLOSE."""
        return self._closed(path, *self.hdfs.status_now(path))

    def _closed(self, path: str, entry: Any, closed: bool) -> Any:
        if entry is None:
            raise FileGone(path)
        if not self.hdfs.is_file(entry):
            raise FileGone(f"{path}: not a file now")
        if not closed:
            raise FileGone(f"{path}: open for write now")
        return entry

    def _copy(self, path: str, *, appended: bool = False, beside: bool = True,
              throttle: Throttle | None = None) -> None:
        """`appended`: the window only appended to the file (plan.py), so its object may hold
        the file's first bytes and only the rest need to be sent. `beside`: a window's copy of
        long_copy_mb or more runs beside the next windows (a listing's never does)."""
        entry = self._closed_file(path)
        long_copy = self.settings.long_copy_bytes
        if beside and self._in_window and long_copy and entry.size >= long_copy:
            self._copy_beside(path, appended)
            return
        throttle = throttle or self.throttle
        checksum = self.hdfs.checksum(path)
        if checksum.algorithm not in SUPPORTED_CHECKSUMS:
            raise PoisonPath(f"HDFS file checksum {checksum.algorithm}: set "
                             "dfs.checksum.combine.mode=COMPOSITE_CRC for the sync's client")
        if appended and self.replica.append(path, entry, self.hdfs, checksum, throttle):
            return
        self.replica.upload(path, entry, self.hdfs, checksum, throttle)

    def _copy_beside(self, path: str, appended: bool) -> None:
        """Starts the copy on a thread of its own and records the path pending (a restart
        copies it again); the window goes on without it."""
        yielding = Yielding(self.throttle, self.turns.wait_turn)

        def copy() -> None:
            started = time.monotonic()
            done = self._attempt(path, lambda: self._copy(path, appended=appended,
                                                          beside=False, throttle=yielding))
            log.info("copy of %s beside the windows %s in %.0f ms", path,
                     "done" if done else "not done", (time.monotonic() - started) * 1000)
            with self._lock:
                del self._beside[path]
                if not done and path not in self.stats.parked:
                    self._gone_beside.add(path)  # FileGone: the next window's pending copy
                else:
                    previous = self._pending
                    self._pending = {p: k for p, k in previous.items() if p != path}
                    if previous != self._pending:
                        self.state.set_pending(self._pending, previous)

        thread = threading.Thread(target=copy, name="sync-beside", daemon=True)
        with self._lock:
            self._beside[path] = thread
            previous = self._pending
            self._pending = {**previous, path: PENDING_COPY}
            self.state.set_pending(self._pending, previous)
        thread.start()

    def _server_copy(self, src: str, dst: str) -> None:
        if not self.replica.server_copy(src, dst, self._closed_file(dst)):
            self._copy(dst)

    def _metadata(self, path: str) -> None:
        entry, closed = self.hdfs.status_now(path)
        if entry is not None and not self.hdfs.is_file(entry):
            return  # a directory (a partition's chmod) or a symlink: no object holds it
        entry = self._closed(path, entry, closed)
        if not self.replica.update_metadata(path, entry, self.hdfs.checksum(path)):
            self._copy(path)

    def _relist(self, root: str) -> None:
        if self.hdfs.status(root) is None:
            with self._lock:
                self._gone[root] = PENDING_RELIST
            return
        hdfs = {e.path: FileState(size=e.size, mtime=e.mtime, owner=e.owner, group=e.group,
                                  perms=e.perms, replication=e.replication)
                for e in walk(self.lister, [root])
                if self.hdfs.is_file(e) and self.scope.covered.passes(e.path)}
        drift = reconcile(hdfs, self.replica.states_under(root))
        self._execute(drift.steps())


def _oldest(events: Iterable[HdfsEvent]) -> int | None:
    return next((e.timestamp for e in events if e.timestamp is not None), None)


def _describe(steps: Steps, totals: dict[str, int]) -> str:
    return (f"{totals['uploads']} upload(s), {totals['bytes']} bytes, "
            f"{totals['server_copies']} server-side copies, {totals['metadata_updates']} "
            f"metadata updates, {totals['deletes']} deletes, {len(steps.relists)} relists, "
            f"{totals['requests']} S3 requests")


class Windows:
    """Gathers the stream's batches into windows (window_ms, max_window_events) and hands them
    to the replicator; a SNAPSHOT batch ends the window and is reconciled whole; a GAP ends the
    window and is otherwise left to the SNAPSHOT that follows it (LiveSource's rule)."""

    def __init__(self, replicator: Replicator, settings: SyncSettings,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._r, self._settings, self._clock = replicator, settings, clock
        self._events: list[HdfsEvent] = []
        self._listing: list[HdfsEvent] | None = None  # the pieces of a listing so far
        self._last_txid: int | None = None
        self._opened: float | None = None
        # NameNode times (ms) of the oldest and newest gathered event that has one.
        self._span: tuple[int, int] | None = None

    def bytes_pending(self) -> int:
        """The lag in bytes: what the gathered events will copy and the running window still
        has to. Read by the heartbeat's thread: the list is only ever extended or replaced."""
        return bytes_to_copy(list(self._events), self._r.scope) + self._r.bytes_pending()

    def oldest_unapplied_ms(self) -> int | None:
        """NameNode time of the oldest event not yet applied (running window, else gathered)."""
        running = self._r.stats.oldest_unapplied_ms
        return running if running is not None else _oldest(list(self._events))

    def add(self, batch: TxBatch) -> None:
        kinds = {e.type for e in batch.events}
        if EventType.GAP in kinds:
            self.flush()
            return
        if (self._listing is not None or EventType.SNAPSHOT in kinds
                or (not batch.events and self._r.resume_after is None)):
            # A listing arrives in pieces (source.TxBatch.more); it is reconciled whole.
            if self._listing is None:
                self.flush()
                self._listing = []
            self._listing.extend(batch.events)
            if not batch.more:
                events, self._listing = self._listing, None
                self._r.apply_listing(TxBatch(txid=batch.txid, events=tuple(events)))
            return
        self._events.extend(batch.events)
        self._last_txid = batch.txid
        if self._opened is None:
            self._opened = self._clock()
        for t in (e.timestamp for e in batch.events if e.timestamp is not None):
            self._span = (t, t) if self._span is None else (min(self._span[0], t),
                                                            max(self._span[1], t))
        self.flush_if_due()

    def flush_if_due(self) -> None:
        """Due after window_ms here, or once the gathered events themselves span window_ms of
        NameNode time: the oldest has then waited that long already (events that came while
        the last window ran are read when it ends, and waiting window_ms more from then made
        a small file's lag two windows' run times plus window_ms while a long copy loaded the
        machine; bench.sync). Both clocks are compared only with themselves."""
        if self._last_txid is None:
            return
        assert self._opened is not None
        window_ms = self._settings.window_ms
        if (len(self._events) >= self._settings.max_window_events
                or (self._clock() - self._opened) * 1000 >= window_ms
                or (self._span is not None and self._span[1] - self._span[0] >= window_ms)):
            self.flush()

    def flush(self) -> None:
        if self._last_txid is None:
            return
        events, last = self._events, self._last_txid
        self._events, self._last_txid, self._opened, self._span = [], None, None, None
        self._r.apply_window(events, last)


def replicate(batches: Iterator[TxBatch], windows: Windows, stop: threading.Event) -> None:
    """Feeds the stream to the windows until `stop`; what was gathered is applied on the way
    out (SIGTERM), so a restart does not redo it."""
    for batch in batches:
        windows.add(batch)
        if stop.is_set():
            break
    windows.flush()
