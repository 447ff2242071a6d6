"""The live source: Hadoop's DFSInotifyEventInputStream read as an iterator of TxBatch, a drain
at a time (source.py's chunks).

- Freshness: `poll(timeout)` with a short timeout. Hadoop's timed poll backs off exponentially
  (10 ms, 20 ms, ...) but never past the timeout, so the timeout bounds the idle latency.
  hdfs-inotify-example's poll(60, SECONDS) idles up to ~20 s between checks.
- Throughput: after a batch arrives, the stream is drained with the non-blocking poll() (the
  NameNode hands out up to dfs.namenode.inotify.max.events.per.rpc events per RPC) and the
  drain is converted in one JVM call (onprem_agent.live.convert).
- Lag: getTxidsBehindEstimate() after every poll.
- The in-progress edit segment: each getEditsFromTxid call (one a poll that finds nothing
  read ahead) opens the NameNode's in-progress segment and reads it op by op from its first
  txid up to the one asked for (RedundantEditLogInputStream's skipUntil), and hands out at most
  dfs.namenode.inotify.max.events.per.rpc (1,000) events. A call therefore costs more the
  longer the segment has grown: ~0.8 us a txid on an idle NameNode (a 333,000-txid segment:
  ~140 ms a call at its start, ~400 ms near its end), and under load the reader falls behind a
  NameNode journalling 2,000 txids/s once calls take over ~500 ms (bench.chain_speed: 531 ms a
  call in the last quarter of a 120 s drive, the agent 13 s behind). An HA standby rolls the
  active's segment every dfs.ha.log-roll.period (120 s); a NameNode without one rolls at a
  checkpoint or at 500,000 txids. So every `roll_edits_every_txids` txids it reads, the agent
  rolls the edit log itself (ClientProtocol.rollEdits, what `hdfs dfsadmin -rollEdits` calls:
  HDFS superuser, which inotify needs anyway), bounding every call's reread. A failed roll is
  logged and tried again an interval later: reading goes on either way.
- Purged edits: poll() raises MissingEventsException(expected, actual) when the NameNode no
  longer has the txid we need (a checkpoint older than dfs.namenode.num.extra.edits.retained
  allows). Never skipped silently: the gap is reported (error log, InotifyGap metric, alert)
  and goes into the stream itself as one GAP record, key (cluster, expected, 0), path "/",
  gap_end_txid = the first available txid, timestamp = when the agent found it. Then the
  policy applies. `stop` and `fsimage` raise InotifyGapError once the pipeline has taken the
  GAP batch (the pipeline's shutdown sends it and closes its ranges at the gap's txid - 1);
  then `stop` exits non-zero, `fsimage` has the index repaired from the NameNode's image and
  ships on after it (agent.ship_repairing_gaps). `snapshot` takes the
  NameNode's current txid T, lists the covered directories, emits the namespace state as
  SNAPSHOT records at txid T, and reopens the stream after T: a change made while the listing
  ran has txid > T and is read afterwards, so nothing in between is missed.
- Snapshots of any size (snapshot.py): the records are yielded in pieces of one txid while the
  walk lists page by page; the pipeline saves no checkpoint at or past T before the last piece
  is acknowledged. A restart part way (a crash, SIGKILL, a lost lease) therefore starts over:
  the checkpoint is still below T (first start: none; a gap: the GAP's txid - 1, so the same
  GAP record first), and the new listing is taken at the current txid T' >= T. Chosen over
  resuming the walk after the last acknowledged path at T: a path listed again after a change
  would carry a key (T, index) SQS may already hold with another path, and the consumer's
  exactly-once keeps the first. With T' = T nothing changed, so the walk (a function of the
  namespace) gives every path its old index and the re-sent keys dedup; with T' > T the pieces
  at T were never named by a manifest (the range could not close at T), so the index never
  applies them, and the lake keeps them as the records of an abandoned listing (each key once).
  The pipeline never saves a checkpoint that rests on a GAP's txid (it saves expected - 1), so
  a restart before the snapshot is acknowledged, or after a `stop`, meets the same gap again
  and writes the same GAP key.
- NameNode restarts and failovers (reconnect.py): a failure worth waiting out (connection
  refused or reset, EOF, standby, still loading, safe mode) from a poll, from opening the
  stream or from a snapshot's listing does not end the iterator: the source waits (capped,
  jittered backoff), reopens the stream after the last txid it yielded (the pipeline holds
  everything up to it: nothing lost, nothing read twice) and goes on. `stats` says since when
  the NameNode is unavailable (the NameNodeUnavailable metric); every retry logs one line.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Protocol, TypeVar

from hdfs_events.event import EventType, HdfsEvent
from onprem_agent.live.reconnect import Backoff, Outage, is_retriable
from onprem_agent.live.snapshot import Snapshot
from onprem_agent.source import ReadChunk, TxBatch

log = logging.getLogger(__name__)


class InotifyStream(Protocol):
    """The methods of org.apache.hadoop.hdfs.DFSInotifyEventInputStream the loop uses."""

    def poll(self, *timeout: Any) -> Any: ...  # poll() or poll(time, TimeUnit): EventBatch|None

    def getTxidsBehindEstimate(self) -> int: ...


class BatchConverter(Protocol):
    def convert(self, batches: Sequence[Any]) -> list[TxBatch]: ...


@dataclass(frozen=True, slots=True)
class Gap:
    """Edits the NameNode purged before the agent read them: txids [expected, available)."""

    expected_txid: int
    available_txid: int

    def record(self, cluster: str, found_ms: int) -> HdfsEvent:
        """The GAP record of the contract: it takes the key of the first txid never read."""
        return HdfsEvent(cluster, self.expected_txid, 0, EventType.GAP, "/",
                         timestamp=found_ms, gap_end_txid=self.available_txid)

    def describe(self) -> str:
        return f"inotify gap: {self.details()}"

    def details(self) -> str:
        """What was lost, without the "inotify gap" an alert's subject already says."""
        return (f"needed txid {self.expected_txid} but the NameNode's first available txid is "
                f"{self.available_txid}; txids {self.expected_txid}..{self.available_txid - 1} "
                "were purged before they were read")


class InotifyGapError(RuntimeError):
    """Policies `stop` (the agent exits non-zero rather than skip purged edits) and `fsimage`
    (the index is repaired from the image, then the agent ships on): the term ends at the gap."""

    def __init__(self, gap: Gap, policy: str = "stop") -> None:
        super().__init__(f"{gap.describe()} (gap_policy = \"{policy}\")")
        self.gap, self.policy = gap, policy


@dataclass(slots=True)
class LiveStats:
    """Read by the metrics endpoint and `status`; written only by the loop's thread."""

    batches_read: int = 0
    events_read: int = 0
    last_txid: int | None = None
    txids_behind: int = 0
    last_event_ms: int | None = None  # NameNode timestamp of the newest event that has one
    gaps: list[Gap] = field(default_factory=list)
    snapshots: int = 0
    unavailable_since_s: float | None = None  # monotonic; None while the NameNode answers
    outages: int = 0  # spells of unavailability ridden through
    edit_log_rolls: int = 0  # segments the agent closed (see the module doc)

    @property
    def namenode_unavailable(self) -> bool:
        return self.unavailable_since_s is not None


_T = TypeVar("_T")


class _Stopped:
    """What a wait for the NameNode returns when the agent is told to stop meanwhile."""


class _SnapshotStopped(Exception):
    """Unwinds a snapshot's walk when the agent is told to stop while the NameNode is away."""


_STOPPED = _Stopped()


@dataclass(frozen=True, slots=True)
class StreamSource:
    """How the loop reaches the NameNode; HadoopClient in production, doubles in tests."""

    open_stream: Callable[[int], InotifyStream]  # events with txid > the argument
    current_txid: Callable[[], int]
    uri: str = "the NameNode"  # for log lines
    roll_edits: Callable[[], int] | None = None  # the new segment's first txid


def _missing_events_class() -> type[BaseException]:
    import jpype

    return jpype.JClass("org.apache.hadoop.hdfs.inotify.MissingEventsException")


def _milliseconds() -> Any:
    import jpype

    return jpype.JClass("java.util.concurrent.TimeUnit").MILLISECONDS


class LiveSource:
    """Iterates TxBatch objects after `start_txid` until `stop` is set (see module doc)."""

    def __init__(self, source: StreamSource, converter: BatchConverter, *, cluster: str,
                 start_txid: int | None, stop: threading.Event, gap_policy: str = "snapshot",
                 snapshot: Snapshot | None = None, on_gap: Callable[[Gap], None] | None = None,
                 poll_timeout_ms: int = 1000, max_batches_per_drain: int = 1000,
                 roll_edits_every_txids: int = 0,
                 stats: LiveStats | None = None, on_idle: Callable[[], None] | None = None,
                 backoff: Backoff | None = None,
                 before_reconnect: Callable[[], None] | None = None,
                 shipped: Callable[[], int | None] | None = None,
                 list_gap_at: int | None = None,
                 missing_events: type[BaseException] | None = None,
                 time_unit: Any = None,
                 clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        """before_reconnect: called before each attempt after a failure (the Kerberos re-login:
        an outage may outlive the ticket); shipped: the checkpoint, for the outage's log line;
        list_gap_at: the gap at this txid is listed whatever gap_policy says (the NameNode's
        image could not repair it)."""
        if (gap_policy == "snapshot" or list_gap_at is not None) and snapshot is None:
            raise ValueError("gap_policy 'snapshot' needs a snapshot function")
        self._source, self._converter, self._cluster = source, converter, cluster
        self._clock_ms, self._monotonic = clock_ms, monotonic
        self._start, self._stop = start_txid, stop
        self._policy, self._snapshot, self._on_gap = gap_policy, snapshot, on_gap
        self._timeout_ms, self._max_drain = poll_timeout_ms, max_batches_per_drain
        self.stats = stats or LiveStats()
        self._on_idle = on_idle
        self._backoff = backoff or Backoff()
        self._before_reconnect, self._shipped = before_reconnect, shipped
        self._list_gap_at = list_gap_at
        self._outage: Outage | None = None
        self._last: int | None = start_txid  # the last txid yielded: where a reopen resumes
        self._roll_every = roll_edits_every_txids if source.roll_edits is not None else 0
        self._rolled_at: int | None = None  # the txid read when the agent last rolled
        self._missing = missing_events or _missing_events_class()
        self._unit = time_unit if time_unit is not None else _milliseconds()

    def __iter__(self) -> Iterator[TxBatch]:
        """The batches one by one (the sync's replicator takes them so)."""
        return chain.from_iterable(self.chunks())

    def chunks(self) -> Iterator[list[TxBatch]]:
        """The batches a drain at a time (source.py's chunks, what the pipeline takes); a GAP
        and each snapshot piece are chunks of their own."""
        last = self._start
        if last is None and self._snapshot is not None:
            # First start: the namespace as it stands, then every change after it, as SSM's
            # first fetch does; downstream (the index, verify) then starts from the whole
            # namespace, not only from the changes made after the agent came up.
            log.info("no checkpoint: listing the covered namespace before reading the stream")
            last = yield from self._list_namespace()
        elif last is None:
            log.info("no checkpoint: reading from the NameNode's current txid")
            # Asked here rather than left to HdfsAdmin.getInotifyEventStream(): a stream
            # reopened after an outage must resume at this txid, not at a later current one.
            last = self._retrying(self._source.current_txid)
        if last is _STOPPED:
            return
        self._last = last
        stream: InotifyStream | None = None
        while not self._stop.is_set():
            if stream is None:
                stream = self._retrying(lambda: self._source.open_stream(self._last))
                if stream is _STOPPED:
                    return
            drained, gap, failed, read_at = self._drain(stream)
            if drained:
                batches = self._converter.convert(drained)
                for batch in batches:
                    self._count(batch)
                if batches:
                    self._last = batches[-1].txid
                    yield ReadChunk(batches, read_at)
                if self._roll_every:
                    self._roll_if_due()
            elif gap is None and not failed and self._on_idle is not None:
                self._on_idle()
            if failed:
                stream = None  # reopened after the last txid yielded, once the wait is over
                continue
            self._available()
            if gap is not None:
                last = yield from self._recover(gap)
                if last is _STOPPED:
                    return
                self._last, stream = last, None

    def _drain(self, stream: InotifyStream) -> tuple[list[Any], Gap | None, bool, float]:
        """A timed poll, then whatever is ready, up to the drain limit; a gap or an unavailable
        NameNode ends the drain (the batches read before it are still delivered). Also when the
        first batch arrived (ReadChunk.read_at; the timed poll may have waited for it)."""
        drained: list[Any] = []
        read_at = 0.0  # meaningless while nothing was drained
        try:
            batch = stream.poll(self._timeout_ms, self._unit)
            if batch is not None:
                read_at = self._monotonic()
            while batch is not None:
                drained.append(batch)
                if len(drained) >= self._max_drain:
                    break
                batch = stream.poll()
        except self._missing as exc:
            gap = Gap(int(exc.getExpectedTxid()), int(exc.getActualTxid()))  # type: ignore[attr-defined]
            return drained, gap, False, read_at
        except Exception as exc:  # JPype raises the Java exception; what is not retriable ends us
            if not self._unavailable(exc):
                raise
            return drained, None, True, read_at
        finally:
            self.stats.txids_behind = int(stream.getTxidsBehindEstimate())
        return drained, None, False, read_at

    def _roll_if_due(self) -> None:
        """Rolls the NameNode's edit log once `roll_every` txids were read since the last roll
        (or since the stream started: the segment before is of unknown length)."""
        last, rolled_at = self._last, self._rolled_at
        assert last is not None and self._source.roll_edits is not None
        if rolled_at is None:
            self._rolled_at = last
            return
        if last - rolled_at < self._roll_every:
            return
        self._rolled_at = last
        try:
            segment = self._source.roll_edits()
        except Exception as exc:  # JPype raises the Java exception
            from onprem_agent.live.hadoop import java_error_line  # hadoop.py imports us

            log.warning("could not roll the NameNode's edit log (inotify reads slow down as "
                        "its segment grows; trying again after %d txids): %s",
                        self._roll_every, java_error_line(exc))
            return
        self.stats.edit_log_rolls += 1
        log.debug("rolled the NameNode's edit log after txid %d: new segment from txid %d",
                  last, segment)

    # --- NameNode restarts (reconnect.py) --------------------------------------------------

    def _retrying(self, action: Callable[[], _T]) -> _T | _Stopped:
        """`action` until it succeeds, waiting out an unavailable NameNode; _STOPPED when
        `stop` is set meanwhile. A failure not worth retrying is raised."""
        while True:
            if self._outage is not None and not self._wait_before_retry():
                return _STOPPED
            try:
                return action()
            except Exception as exc:  # as in _drain
                if not self._unavailable(exc):
                    raise

    def _unavailable(self, exc: Exception) -> bool:
        if not is_retriable(exc):
            return False
        from onprem_agent.live.hadoop import java_error_line  # hadoop.py imports this module

        # NetUtils.wrapException ends every message with a link to Hadoop's wiki: not news in a
        # line that repeats every few seconds.
        error = java_error_line(exc).split("; For more details see:")[0]
        if self._outage is None:
            self._outage = Outage(started_s=self._monotonic(), error=error)
            self.stats.unavailable_since_s = self._outage.started_s
            self.stats.outages += 1
        else:
            self._outage.attempts += 1
            self._outage.error = error
        return True

    def _wait_before_retry(self) -> bool:
        """Logs the outage's line, waits, re-logs in; False when `stop` was set meanwhile."""
        assert self._outage is not None
        delay = self._backoff.delay(self._outage.attempts)
        log.warning("%s", self._outage.describe(
            self._source.uri, self._monotonic(), delay, self._last,
            self._shipped() if self._shipped is not None else None))
        if self._stop.wait(delay):
            return False
        if self._before_reconnect is not None:
            self._before_reconnect()
        return True

    def _available(self) -> None:
        outage, self._outage = self._outage, None
        if outage is None:
            return
        self.stats.unavailable_since_s = None
        log.warning("NameNode %s available again after %.0f s (%d failed attempts); reading "
                    "after txid %s", self._source.uri, self._monotonic() - outage.started_s,
                    outage.attempts, self._last)

    # --- gaps -----------------------------------------------------------------------------

    def _recover(self, gap: Gap) -> Iterator[list[TxBatch]]:
        self.stats.gaps.append(gap)
        listed = gap.expected_txid == self._list_gap_at
        policy = "snapshot" if listed else self._policy
        log.error("%s; gap_policy = %s%s", gap.describe(), self._policy,
                  ", listing it: the NameNode's image cannot repair it" if listed else "")
        found_ms = self._clock_ms()
        if self._on_gap is not None:
            self._on_gap(gap)
        gap_batch = TxBatch(txid=gap.expected_txid,
                            events=(gap.record(self._cluster, found_ms),))
        self._count(gap_batch, namenode_times=False)
        yield [gap_batch]
        if policy != "snapshot" or self._snapshot is None:
            raise InotifyGapError(gap, policy)
        return (yield from self._list_namespace())

    def _list_namespace(self) -> Iterator[list[TxBatch]]:
        """SNAPSHOT records of the covered namespace at T, piece by piece as the walk lists
        them; returns T, where the stream goes on (_STOPPED when stopped meanwhile)."""
        snapshot = self._snapshot
        assert snapshot is not None
        # Taken before the listing starts: whatever changes while it runs has a larger txid
        # and comes from the stream afterwards.
        txid = self._retrying(self._source.current_txid)
        if txid is _STOPPED:
            return _STOPPED
        started, records = time.monotonic(), 0
        # Pieces already yielded cannot be taken back, so an outage mid-walk is waited out at
        # the page being read and the walk goes on from there (each call below is retried):
        # what it lists afterwards shows the namespace at T or later, as any listing does.
        try:
            for piece in snapshot(int(txid), self._call):
                records += len(piece.events)
                self._count(piece, namenode_times=False)
                yield [piece]
        except _SnapshotStopped:
            return _STOPPED
        self.stats.snapshots += 1
        log.warning("snapshot of the covered namespace at txid %d: %d records in %.1f s; "
                    "resuming after txid %d", txid, records, time.monotonic() - started, txid)
        return int(txid)

    def _call(self, action: Callable[[], _T]) -> _T:
        """A NameNode call of the snapshot's walk: retried while the NameNode is unavailable."""
        result = self._retrying(action)
        if isinstance(result, _Stopped):
            raise _SnapshotStopped
        self._available()
        return result

    def _count(self, batch: TxBatch, *, namenode_times: bool = True) -> None:
        stats = self.stats
        stats.batches_read += 1
        stats.events_read += len(batch.events)
        stats.last_txid = batch.txid
        if not namenode_times:
            return  # GAP and SNAPSHOT times are the agent's clock: no measure of the lag
        for event in reversed(batch.events):
            if event.timestamp is not None:
                stats.last_event_ms = event.timestamp
                break
