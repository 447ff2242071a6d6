"""The shipping pipeline every source uses: source -> path filter -> packer -> sender ->
manifests -> checkpoint.

A source is any iterator of chunks of TxBatch (txids increasing, source.py); the replay hands
the translated edit log, the live source the inotify stream, a drain at a time. The pipeline
takes each chunk in one step under its lock. The source may block for a long time (a quiet
cluster), so the pipeline does not rely on the next chunk to notice time passing: a background
flusher thread seals messages whose linger time is up, saves the checkpoint every
`[checkpoint] interval_ms`, and reports progress. The source thread and the flusher share the
packer under one lock and hand sealed messages to the sender inside it, which keeps each
group's messages in sealing order; only the source thread ever waits for sender capacity, so
the flusher never blocks behind backpressure.

A replay passes `linger_ms=[packing] replay_linger_ms` (default 2 s): history has no freshness
to protect, so messages fill at backfill rates, while a quiet group holds the checkpoint back by
seconds only.

Manifests (hdfs_events/manifest.py, onprem_agent/manifests.py). At every checkpoint interval
the flusher closes the txid range up to the tracker's safe txid and sends its manifest through
the same sender, in the cluster's manifest group. The checkpoint saved is the end of the last
range whose manifest SQS acknowledged, never the bare safe txid: a restart (or a standby)
resumes at a range boundary, and its first range starts there, so the consumer's chain of
ranges has no hole. Cost: at most one small message per interval, while txids advance.

Shutdown (the `stop` event, end of input, or a source error): seal what is open, wait for the
sender to get it acknowledged (up to `[sending] shutdown_timeout_ms`), then send the last
range's manifest and wait for it within what is left of that timeout (at the end of input, as
long as it takes), save the checkpoint. Whatever was not acknowledged stays above the
checkpoint and is re-sent on restart.

A GAP record (purged edits, see onprem_agent/live/stream.py) ships like any event, but the
checkpoint never rests on its txid E: while E is the safe txid, ranges close at E - 1, so the
checkpoint is saved as E - 1 until a later txid (the snapshot's) is acknowledged. A restart in
between, or after gap_policy = "stop", then meets the same gap and writes the same GAP key
instead of silently starting past it.

A snapshot (onprem_agent/live/snapshot.py) arrives as TxBatch pieces of one txid T with
`more` set on all but the last: each piece is packed as it comes (the sender's backpressure
paces the listing), and T is finished only with its last piece (CheckpointTracker), so no
range closes and no checkpoint is saved at or past T before every piece is acknowledged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain, islice
from operator import attrgetter, lt

from hdfs_events.event import EventType, HdfsEvent
from onprem_agent.checkpoint import CheckpointStore, CheckpointTracker
from onprem_agent.config import AgentConfig
from onprem_agent.filters import PathFilter
from onprem_agent.manifests import ManifestBuilder, manifest_message
from onprem_agent.packer import EventPacker, PackedMessage
from onprem_agent.progress import ProgressReporter, ProgressSnapshot
from onprem_agent.sender import PermanentSendError, Sender
from onprem_agent.source import CHUNK_BATCHES, Chunk, ReadChunk

log = logging.getLogger(__name__)

GAP = EventType.GAP
_batch_txid, _batch_more = attrgetter("txid"), attrgetter("more")
_batch_events, _event_type = attrgetter("events"), attrgetter("type")


@dataclass(frozen=True, slots=True)
class PipelineResult:
    events_read: int
    events_filtered: int  # dropped by the path filter (acknowledged for the checkpoint)
    events_sent: int  # acknowledged by SQS
    messages: int  # event messages acknowledged by SQS
    manifests: int  # manifests acknowledged by SQS
    batches: int  # TxBatches taken from the source
    checkpoint_txid: int | None
    billed_requests: int  # 64 KiB chunks of the messages packed
    flushed: bool  # every packed message was acknowledged before the run ended


class Pipeline:
    def __init__(self, config: AgentConfig, *, sender: Sender, checkpoint: CheckpointStore,
                 clock: Callable[[], float] = time.monotonic,
                 progress: ProgressReporter | None = None,
                 linger_ms: int | None = None) -> None:
        self.config = config
        self._sender, self._store, self._clock, self._progress = (
            sender, checkpoint, clock, progress)
        packing = config.packing
        self.packer = EventPacker(
            config.cluster, group_by=packing.group_by,
            max_message_bytes=packing.max_message_bytes,
            linger_s=(packing.linger_ms if linger_ms is None else linger_ms) / 1000,
            compress=packing.compress, compression_level=packing.compression_level)
        self._filter = PathFilter(config.filter.cover_dirs, config.filter.ignore_patterns)
        self.resume_after: int | None = checkpoint.load()
        self._tracker = CheckpointTracker(self.resume_after)
        self._manifests = ManifestBuilder(config.cluster, self.resume_after)
        self._saved = self.resume_after
        # The packer, the tracker and the counters. Acknowledgements arrive on sender threads
        # (or inside enqueue, for the no-op sender) and wait in a deque, which appends without
        # a lock; whoever holds the lock next applies them.
        self._lock = threading.Lock()
        self._acks: deque[PackedMessage] = deque()
        self._events_read = self._events_filtered = self._events_sent = 0
        self._messages = self._batches = self._manifests_acked = 0
        self._piece_txid: int | None = None  # the last snapshot piece's txid (progress)
        # The source thread's: the last txid taken (a txid at or below it is skipped unless
        # it is the open snapshot piece's, whose next piece is still to come).
        self._floor: int | None = self.resume_after
        self._open_piece: int | None = None
        self._gap_txid: int | None = None  # the last GAP record's txid (see the module doc)
        self._started = clock()
        self._background_error: BaseException | None = None

    # --- running ------------------------------------------------------------------------

    def run(self, chunks: Iterable[Chunk],
            stop: threading.Event | None = None) -> PipelineResult:
        """Ships the batches of `chunks` (source.py) until they end or `stop` is set; returns
        what was done.

        Raises what stopped it (a PermanentSendError, a source error, a CheckpointError) after
        saving the checkpoint of what was acknowledged.
        """
        stop = stop if stop is not None else threading.Event()
        done = threading.Event()
        self._sender.start(self._on_ack)
        flusher = threading.Thread(target=self._flush_loop, args=(done,), name="flusher",
                                   daemon=True)
        flusher.start()
        error: BaseException | None = None
        try:
            self._consume(chunks, stop)
        except BaseException as exc:  # re-raised below, after the checkpoint is safe
            error = exc
        flushed = False
        # At the end of the input wait as long as it takes; when told to stop or after an
        # error, only as long as configured, for the events and the last manifest together.
        wait = _ShutdownWait(self._sender, stop, self.config.sending.shutdown_timeout_ms / 1000,
                             unbounded=error is None and not stop.is_set())
        try:
            try:
                if not isinstance(error, PermanentSendError):
                    flushed = self._flush(wait)
            finally:
                done.set()
                flusher.join()
            if not isinstance(error, PermanentSendError):
                flushed = self._send_last_manifest(wait) and flushed
        except PermanentSendError as exc:
            error = error or exc
        finally:
            self._sender.close()
        try:
            self._save(send_manifests=False)
        except Exception as exc:
            error = error or exc
        error = error or self._background_error
        if self._progress is not None:
            self._progress.close(self.snapshot())
        if error is not None:
            raise error
        return self.result(flushed)

    def _consume(self, chunks: Iterable[Chunk], stop: threading.Event) -> None:
        kept_of = self._filter.kept_of
        packer, sender, tracker, clock = self.packer, self._sender, self._tracker, self._clock
        acquire, release, take = self._lock.acquire, self._lock.release, self._take
        acks, add, send = self._acks, packer.add, self._send
        next_deadline, expired, waiting = packer.next_deadline, packer.expired, sender.waiting
        wait_for_capacity, stopped = sender.wait_for_capacity, stop.is_set
        for whole in chunks:
            # Messages the chunk opens linger from when the source read it (ReadChunk).
            read_at = whole.read_at if isinstance(whole, ReadChunk) else None
            # A long chunk (a large drain) in steps: the flusher never waits long for the lock,
            # and the sender's capacity is looked at every step.
            for start in range(0, len(whole), CHUNK_BATCHES):
                chunk = (whole if len(whole) <= CHUNK_BATCHES
                         else whole[start:start + CHUNK_BATCHES])
                if stopped():
                    return
                if self._background_error is not None:
                    raise self._background_error
                wait_for_capacity(stop)
                acquire()
                try:
                    # A message the chunk opens keeps the txid finished before the chunk as
                    # its `after`: lower than the batch that opened it may have allowed, which
                    # only holds the checkpoint back by the rest of the chunk.
                    after = tracker.finished
                    events, finished = take(chunk, after)
                    kept = kept_of(events) if events else events
                    if kept:
                        now = clock()
                        sealed = add(kept, now if read_at is None else read_at, after)
                        if (read_at is not None and start + CHUNK_BATCHES >= len(whole)
                                and (due := next_deadline()) is not None and due <= now):
                            # The drain's last step, read a linger ago or more: what the drain
                            # opened is due now, not when the flusher next wakes (up to a
                            # linger later).
                            sealed += expired(now, waiting)
                        if sealed:  # one event in hundreds seals one
                            send(sealed)
                    # After the chunk's events were packed: a txid without events (a replay's
                    # last op, say), or all of whose events were filtered out, is finished
                    # with them.
                    tracker.finished = finished
                    if acks:
                        self._apply_acks()
                    # Counters of this thread alone: the flusher's progress line reads them.
                    self._events_read += len(events)
                    self._events_filtered += len(events) - len(kept)
                finally:
                    release()

    def _take(self, chunk: Chunk, finished: int | None) -> tuple[list[HdfsEvent], int | None]:
        """Under self._lock: the events of `chunk`'s batches past the checkpoint, and the txid
        finished after them (`finished`: the one before). Notes the batches taken, a GAP's txid
        and an open snapshot piece's."""
        floor, open_piece = self._floor, self._open_piece
        if open_piece is None and chunk:
            # The usual chunk, looked at in C loops (~0.1 us an event less than the walk below,
            # bench.ship): every txid above the last and done (no piece), no GAP record.
            txids = list(map(_batch_txid, chunk))
            if ((floor is None or txids[0] > floor) and not any(map(_batch_more, chunk))
                    and all(map(lt, txids, islice(txids, 1, None)))):
                events = list(chain.from_iterable(map(_batch_events, chunk)))
                if GAP not in map(_event_type, events):
                    self._floor = txids[-1]
                    self._batches += len(txids)
                    return events, txids[-1]
        events = []
        taken = 0
        for batch in chunk:
            txid = batch.txid
            if txid != open_piece and floor is not None and txid <= floor:
                continue  # at or below the checkpoint, or a source repeating itself
            floor = txid
            taken += 1
            if batch.events:
                events += batch.events
                if batch.events[0].type is GAP:
                    self._gap_txid = txid
            if batch.more:
                open_piece = self._piece_txid = txid
            else:
                open_piece = None
                finished = txid
        self._floor, self._open_piece = floor, open_piece
        self._batches += taken
        return events, finished

    def _flush(self, wait: _ShutdownWait) -> bool:
        with self._lock:
            self._send(self.packer.flush())
        flushed = wait.flush()
        if not flushed:
            log.warning("stopping with messages SQS has not acknowledged after %.0f s; the "
                        "checkpoint stays below them and they are sent again on restart",
                        wait.timeout_s)
        return flushed

    def _send_last_manifest(self, wait: _ShutdownWait) -> bool:
        """After the events were flushed and the flusher stopped: closes the range up to the
        safe txid and waits for its manifest. True when SQS acknowledged it."""
        # A range the flusher cut may still be outstanding: wait for it, then cut the last one.
        # Nothing else moves the safe txid any more, so the third round finds nothing to do.
        for _ in range(3):
            with self._lock:
                self._apply_acks()
                for message in self._due_manifests():
                    self._sender.enqueue(message)
                self._apply_acks()  # a sender that acknowledges at once (NoopSender) did
                if not self._manifests.outstanding:
                    return True
            if not wait.flush():
                log.warning("stopping before SQS acknowledged the last manifest; the "
                            "checkpoint stays at the end of the range before it")
                return False
        return False

    def _due_manifests(self) -> list[PackedMessage]:
        """Under self._lock: the manifests due at the tracker's safe txid, as messages."""
        safe = self._tracker.safe_txid(self.packer.open_afters())
        if safe is not None and safe == self._gap_txid:
            safe = safe - 1 if safe > 0 else None  # never close a range on a GAP's txid
        return [manifest_message(m) for m in self._manifests.due(safe)]

    def _send(self, messages: list[PackedMessage]) -> None:
        """Under self._lock: hands sealed event messages to the sender, in order."""
        tracker, enqueue = self._tracker, self._sender.enqueue
        for message in messages:
            tracker.sent(message.wire.dedup_id, message.after)  # before its acknowledgement
            enqueue(message)

    def _on_ack(self, message: PackedMessage) -> None:
        self._acks.append(message)

    def _apply_acks(self) -> None:
        """Under self._lock."""
        acks, tracker, manifests = self._acks, self._tracker, self._manifests
        while acks:
            message = acks.popleft()
            if message.manifest is not None:
                manifests.manifest_acknowledged(message.manifest)
                self._manifests_acked += 1
                continue
            dedup_id, txids = message.wire.dedup_id, message.txids
            tracker.acknowledged(dedup_id)
            manifests.acknowledged(dedup_id, txids[0], txids[-1], txids=txids)
            self._events_sent += message.wire.event_count
            self._messages += 1

    # --- the flusher thread ---------------------------------------------------------------

    def _flush_loop(self, done: threading.Event) -> None:
        interval = self.config.checkpoint.interval_ms / 1000
        next_save = self._clock() + interval
        try:
            while True:
                now = self._clock()
                with self._lock:
                    self._apply_acks()
                    deadline = self.packer.next_deadline()
                    # Under backpressure an early seal would not go out any sooner; letting
                    # the message grow instead keeps messages full when SQS is the bottleneck.
                    if deadline is not None and deadline <= now and self._sender.has_capacity():
                        self._send(self.packer.expired(now, self._sender.waiting))
                        deadline = self.packer.next_deadline()
                if now >= next_save:
                    self._save()
                    next_save = now + interval
                if self._progress is not None:
                    self._progress.update(self.snapshot())
                if deadline is not None and deadline <= now:
                    # Held back by backpressure, or behind its group's unacknowledged
                    # message: look again shortly.
                    deadline = now + 0.02
                if deadline is None:
                    # Nothing open: a message opened from now on is due at now + linger at the
                    # earliest. Looking again by then finds it before it is due, so it seals on
                    # time; sleeping the full 0.5 s let it linger up to 0.5 s past its deadline
                    # (measured: edit->sent p99 512 ms with a 200 ms linger, bench.freshness).
                    deadline = now + self.packer.linger_s
                wake = min(next_save, deadline)
                if done.wait(max(0.005, min(wake - self._clock(), 0.5))):
                    return
        except PermanentSendError:
            return  # the sender keeps the error; the source thread raises it
        except BaseException as exc:
            log.exception("pipeline background thread failed")
            self._background_error = exc

    def _save(self, *, send_manifests: bool = True) -> None:
        with self._lock:
            self._apply_acks()
            if send_manifests:
                for message in self._due_manifests():
                    self._sender.enqueue(message)
                self._apply_acks()  # a sender that acknowledges at once (NoopSender) did
            # The checkpoint rests on a range boundary only (see the module doc).
            txid = self._manifests.acknowledged_end
        if txid is not None and (self._saved is None or txid > self._saved):
            self._store.save(txid)
            self._saved = txid

    # --- reporting ------------------------------------------------------------------------

    def snapshot(self) -> ProgressSnapshot:
        with self._lock:
            self._apply_acks()
            return ProgressSnapshot(
                events_read=self._events_read, events_filtered=self._events_filtered,
                events_sent=self._events_sent, messages=self._messages,
                last_txid=_newest(self._piece_txid, self._tracker.finished),
                checkpoint_txid=self._saved,
                elapsed_s=self._clock() - self._started, manifests=self._manifests_acked)

    def result(self, flushed: bool) -> PipelineResult:
        with self._lock:
            self._apply_acks()
            return PipelineResult(
                events_read=self._events_read, events_filtered=self._events_filtered,
                events_sent=self._events_sent, messages=self._messages,
                manifests=self._manifests_acked, batches=self._batches, checkpoint_txid=self._saved,
                billed_requests=self.packer.stats.billed_requests, flushed=flushed)


def _newest(a: int | None, b: int | None) -> int | None:
    return a if b is None or (a is not None and a > b) else b


class _ShutdownWait:
    """Waits for the sender to get everything acknowledged: at the end of the input until
    done or `stop` is set, then (or at once, when stopping) until one deadline shared by the
    events and the last manifest."""

    def __init__(self, sender: Sender, stop: threading.Event, timeout_s: float, *,
                 unbounded: bool) -> None:
        self._sender, self._stop, self.timeout_s = sender, stop, timeout_s
        self._deadline = None if unbounded else time.monotonic() + timeout_s

    def flush(self) -> bool:
        if self._deadline is None:
            # A signal during this wait turns it into the bounded shutdown wait.
            while not self._stop.is_set():
                if self._sender.flush(0.5):
                    return True
            self._deadline = time.monotonic() + self.timeout_s
        return self._sender.flush(max(0.0, self._deadline - time.monotonic()))
